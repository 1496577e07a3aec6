// Greedy fusion. Walk the kernels in topological order; a kernel joins the open group when the group's
// on-chip bytes plus its own stay within the budget, where its own are its internal buffer and, per
// input, the edge's FIFO and converter buffer (a producer in the open group feeds it on chip; any other
// tensor comes from HBM). Otherwise it opens the next group. A joined stream's FIFO counts at its bound,
// the whole tensor, unless CompileOptions::joinsAtBounds is off (then at its least depth: the caller
// sizes the design and weighs its memory at the sized depths).
#include "compiler/dse/fusion.h"

#include <set>

#include "compiler/lower/edges.h"

namespace stc {

namespace {

// A kernel's on-chip bytes, and in `intermediate` those on the streams from kernels of its group.
int64_t kernelBytes(const KernelGraph& g, size_t k, const std::vector<int>& group, int open,
                    const CompileOptions& options, int64_t& intermediate) {
  const Kernel& kern = g.kernels[k];
  int64_t bytes = kern.bufferBytes;
  intermediate = kern.bufferBytes;
  for (const auto& ph : kern.phases)
    for (const auto& p : ph.ports) {
      if (p.out) continue;
      auto it = g.producer.find(p.tensor);
      bool onChip = it != g.producer.end() && group[static_cast<size_t>(it->second.kernel)] == open;
      EdgePlan plan;
      if (p.joinKeep && !options.joinsAtBounds) {
        KernelPort trimmed = p;
        trimmed.keepTokens = 0;
        plan = planEdge(g, trimmed, onChip, options);
      } else {
        plan = planEdge(g, p, onChip, options);
      }
      int64_t edge = edgeBytes(plan, p);
      bytes += edge;
      if (onChip) intermediate += edge;
    }
  return bytes;
}

}  // namespace

FusionResult fuseKernels(const KernelGraph& graph, int64_t budgetBytes, const CompileOptions& options) {
  FusionResult r;
  r.group.assign(graph.kernels.size(), -1);
  int open = 0;
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    if (r.groupBytes.empty()) r.groupBytes.push_back(0);
    int64_t intermediate = 0;
    int64_t bytes = kernelBytes(graph, k, r.group, open, options, intermediate);
    if (r.groupBytes[static_cast<size_t>(open)] > 0 && r.groupBytes[static_cast<size_t>(open)] + bytes > budgetBytes) {
      ++open;
      r.groupBytes.push_back(0);
      bytes = kernelBytes(graph, k, r.group, open, options, intermediate);
    }
    if (bytes > budgetBytes)
      throw UserError(formatError(graph.kernels[k].loc, "the on-chip budget of " + std::to_string(budgetBytes) +
                                                            " bytes is too small for kernel '" + graph.kernels[k].name +
                                                            "', which needs " + std::to_string(bytes) +
                                                            " bytes (raise --set onchip_budget_bytes)"));
    r.group[k] = open;
    r.groupBytes[static_cast<size_t>(open)] += bytes;
    r.intermediateBytes += intermediate;
  }
  for (int64_t b : r.groupBytes) r.fusedBytes += b;
  return r;
}

int64_t unfusedBytes(const KernelGraph& graph, const CompileOptions& options) {
  int64_t bytes = 0;
  std::set<std::string> sums;  // a matmul's int32 sums on their way to its epilogue kernel: inside the op
  for (const Kernel& k : graph.kernels)
    if (k.op == kEpilogueOp) sums.insert(k.phases[0].ports[0].tensor);
  for (const auto& [name, t] : graph.tensors) {
    const std::string panels = ".panels";  // the same values as the rows copied from them
    bool isPanels =
        name.size() > panels.size() && name.compare(name.size() - panels.size(), panels.size(), panels) == 0;
    if (t.role != TensorRole::kIntermediate || graph.viewOf.count(name) || isPanels || sums.count(name)) continue;
    int64_t elements = 1;
    for (const auto& d : t.shape) elements *= d.eval(options.maxima);
    bytes += (elements * dtypeBits(t.dtype) + 7) / 8;
  }
  return bytes;
}

}  // namespace stc
