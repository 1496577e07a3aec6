#pragma once
// The masked half of a causal attention, skipped: its products over held keys (Kernel::heldKeys), and the
// kernels and converter sides the scores and probabilities stream through between them, run for row r
// only the key tiles up to the block of G keys that holds key r (a triangular nest, network files'
// trips over loop indices), instead of every key with the keys past r weighed 0.

#include "compiler/ir/network.h"
#include "compiler/lower/kernel_graph.h"
#include "compiler/lower/streams.h"

namespace stc {

/// What triangulateCausal did: the tasks it made triangular and the key block G, or why it left a causal
/// attention whole (empty when it found none).
struct TriangleReport {
  std::vector<std::string> tasks;
  int64_t keyBlock = 0;
  std::string skipped;
};

/// Makes each rows-outer causal attention over held keys triangular, in the network (a phase's row loop
/// and those outside it run outside the pipeline, its key loop takes the keys up to the row's block of
/// G keys: trip "(iP / G + 1) * (G / t)" for t keys an iteration), in its kernels' phases and in its
/// converters' orders, which the emitter loops over. G is the widest key tile of the chain, so that a
/// converter's two sides agree on a row's keys. An attention whose scores or probabilities reach
/// anything else (a DMA, an adapter, a kernel that is not elementwise, a converter whose shared loops
/// hold the key loop), whose rows are not outermost, or whose row count is not a constant multiple of G
/// stays as it was.
TriangleReport triangulateCausal(Network& net, KernelGraph& kernels, NetworkRoles& roles);

}  // namespace stc
