#pragma once
// Fusion: the paper's greedy topological grouping of kernels under an on-chip memory budget. Edges
// between groups go through HBM.

#include <vector>

#include "compiler/lower/kernel_graph.h"

namespace stc {

struct FusionResult {
  std::vector<int> group;            ///< per kernel
  std::vector<int64_t> groupBytes;   ///< on-chip bytes per group
  int64_t fusedBytes = 0;            ///< all groups
  int64_t intermediateBytes = 0;     ///< of which on the streams from one kernel to another in its group
                                     ///< (the intermediate results; the rest holds inputs and weights)
};

/// Groups kernels in topological order while a group's on-chip bytes stay within budgetBytes. Throws
/// UserError naming a kernel that alone needs more than the budget.
FusionResult fuseKernels(const KernelGraph& graph, int64_t budgetBytes, const CompileOptions& options);

/// The on-chip bytes of every intermediate tensor kept whole (the unfused baseline of the paper); a
/// matmul's panels and the rows copied from them count once.
int64_t unfusedBytes(const KernelGraph& graph, const CompileOptions& options);

}  // namespace stc
