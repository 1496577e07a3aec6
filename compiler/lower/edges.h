#pragma once
// How a kernel's input port gets its stream: the plan both fusion (to count on-chip bytes) and stream
// construction (to build it) follow.

#include "compiler/lower/kernel_graph.h"

namespace stc {

struct EdgePlan {
  enum Kind {
    kFifo,          ///< the producer's order: a plain FIFO
    kConverter,     ///< an on-chip converter from the producer's order
    kDma,           ///< a DMA read from HBM in the consumer's order (repeats read again, where a
                    ///< converter holding them would take more than half the on-chip budget)
    kDmaConverter,  ///< a DMA read of each element once in the consumer's order, then a converter that
                    ///< repeats them (the consumer re-reads data)
    kAdapter,       ///< the producer's order with another tile along the last dimension: an adapter packs
                    ///< `ratio` of the producer's tokens into one (or splits one into `ratio`)
  } kind = kFifo;
  int64_t ratio = 1;       ///< kAdapter: tokens of the narrow side per token of the wide side
  bool split = false;      ///< kAdapter: the producer's tokens are the wide ones
  StreamOrder source;      ///< the order the FIFO or converter receives
  ConverterPlan converter; ///< when there is a converter (buffer sizes at the symbols' maxima)
  int64_t fifoDepth = 2;   ///< depth of the FIFO into the consumer
  /// kConverter: depth of the FIFO into the converter. A joined stream's kept tokens (KernelPort::keepTokens)
  /// wait there, as the producer makes them, at most the tensor once: behind the converter a consumer
  /// re-reading its input (a row for every column tile, every key for every query) would count each repeat.
  int64_t feedDepth = 2;
};

/// The plan for `port`; onChip says whether the tensor's producer is a kernel of the same group.
EdgePlan planEdge(const KernelGraph& graph, const KernelPort& port, bool onChip, const CompileOptions& options);

/// The order with its repeat loops (those moving no data dimension) dropped: each element read once, in
/// the order the consumer first reads it. keepOuter keeps those outside the first loop that moves data
/// (the whole stream read again at each of their iterations).
StreamOrder withoutRepeats(const StreamOrder& order, bool keepOuter = false);

/// `order` with the loop splits of a converter plan applied (constant loops only; the same tokens).
StreamOrder splitLoops(StreamOrder order, const std::vector<LoopSplit>& splits);

/// The on-chip bytes an edge holds: its converter's ping-pong buffer and its FIFOs.
int64_t edgeBytes(const EdgePlan& plan, const KernelPort& port);

/// The order a kernel writes a tensor in.
const StreamOrder& producedOrder(const KernelGraph& graph, const std::string& tensor);

}  // namespace stc
