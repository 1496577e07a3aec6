// Edge plans: equal orders get a FIFO; different ones a converter (itensor rule of compiler/ir); HBM
// tensors are read by a DMA in the order the consumer wants, except when that order re-reads data (a
// repeat loop), where a DMA reads each byte once in canonical order and a converter re-streams it.
#include "compiler/lower/edges.h"

#include "compiler/lower/kernels.h"

namespace stc {

const StreamOrder& producedOrder(const KernelGraph& graph, const std::string& tensor) {
  if (auto it = graph.viewOrder.find(tensor); it != graph.viewOrder.end()) return it->second;
  const KernelGraph::PortRef& ref = graph.producer.at(tensor);
  return graph.kernels[static_cast<size_t>(ref.kernel)].phases[static_cast<size_t>(ref.phase)].ports[static_cast<size_t>(ref.port)].order;
}

EdgePlan planEdge(const KernelGraph& graph, const KernelPort& port, bool onChip, const CompileOptions& options) {
  EdgePlan plan;
  plan.fifoDepth = port.keepTokens > 0 ? port.keepTokens + 2 : 2;
  if (onChip) {
    plan.source = producedOrder(graph, port.tensor);
    plan.kind = plan.source == port.order ? EdgePlan::kFifo : EdgePlan::kConverter;
  } else if (port.order.repeats()) {
    plan.kind = EdgePlan::kDmaConverter;
    plan.source = canonicalOrder(graph.tensors.at(port.tensor), options.tile);
  } else {
    plan.kind = EdgePlan::kDma;
    plan.source = port.order;
  }
  if (plan.kind == EdgePlan::kConverter || plan.kind == EdgePlan::kDmaConverter)
    plan.converter = inferConverter(plan.source.bind(options.maxima), port.order.bind(options.maxima));
  return plan;
}

int64_t edgeBytes(const EdgePlan& plan, const KernelPort& port) {
  int64_t bytes = plan.fifoDepth * ((port.order.tokenBits() + 7) / 8);
  if (plan.kind == EdgePlan::kConverter || plan.kind == EdgePlan::kDmaConverter)
    bytes += plan.converter.bufferBytes + 2 * ((plan.source.tokenBits() + 7) / 8);
  return bytes;
}

}  // namespace stc
