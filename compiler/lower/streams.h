#pragma once
// Stream construction: the kernel graph becomes a Network. One task per kernel; a FIFO where producer
// and consumer orders agree, a converter (two tasks and a region FIFO) where they differ, shared by the
// consumers that want the same order; DMA reads for inputs, weights and tensors of earlier groups, DMA
// writes for outputs and tensors later groups read; weights striped over HBM channels and narrow DMA
// streams widened to 512-bit tokens; channels balanced by the bytes they serve.

#include "compiler/dse/fusion.h"
#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"
#include "compiler/lower/kernel_graph.h"

namespace stc {

struct StreamCounts {
  int kernels = 0;
  int converters = 0;
  int dmas = 0;
  int adapters = 0;
  int64_t converterBytes = 0;
};

Network buildNetwork(const KernelGraph& graph, const FusionResult& fusion, const Platform& platform,
                     const CompileOptions& options, StreamCounts& counts);

}  // namespace stc
