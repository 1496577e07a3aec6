// Edge plans: equal orders get a FIFO; different ones a converter (itensor rule of compiler/ir); HBM
// tensors are read by a DMA in the order the consumer wants, except when that order re-reads data (a
// repeat loop), where a DMA reads each byte once in that order without its repeat loops and a converter
// repeats it: a weight that a prefill matmul reuses for every row is then held a column panel at a time.
// A port marked restream (a weight streamed once per row block) keeps the repeat loops outside its
// first data loop: the DMA reads it again for each block, and the converter holds a panel.
#include "compiler/lower/edges.h"

#include <algorithm>

#include "compiler/lower/kernels.h"

namespace stc {

const StreamOrder& producedOrder(const KernelGraph& graph, const std::string& tensor) {
  if (auto it = graph.viewOrder.find(tensor); it != graph.viewOrder.end()) return it->second;
  const KernelGraph::PortRef& ref = graph.producer.at(tensor);
  return graph.kernels[static_cast<size_t>(ref.kernel)].phases[static_cast<size_t>(ref.phase)].ports[static_cast<size_t>(ref.port)].order;
}

StreamOrder withoutRepeats(const StreamOrder& order, bool keepOuter) {
  StreamOrder o = order;
  o.trips.clear();
  o.steps.clear();
  std::vector<size_t> kept;
  bool data = false;  // a loop moving data seen
  for (int k = 0; k < order.map.numDims(); ++k) {
    bool moves = false;
    for (const auto& r : order.map.results()) moves = moves || r.coeffs[static_cast<size_t>(k)] != 0;
    data = data || moves;
    if (!moves && !(keepOuter && !data)) continue;
    kept.push_back(static_cast<size_t>(k));
    o.trips.push_back(order.trips[static_cast<size_t>(k)]);
    o.steps.push_back(order.steps[static_cast<size_t>(k)]);
  }
  if (kept.empty()) {  // a single element (a scalar broadcast everywhere): one loop of one iteration
    o.trips.push_back(Expr(1));
    o.steps.push_back(1);
  }
  std::vector<AffineExpr> results;
  for (const auto& r : order.map.results()) {
    AffineExpr e{std::vector<int64_t>(o.trips.size(), 0), r.constant};
    for (size_t i = 0; i < kept.size(); ++i) e.coeffs[i] = r.coeffs[kept[i]];
    results.push_back(e);
  }
  o.map = AffineMap(static_cast<int>(o.trips.size()), results);
  return o;
}

StreamOrder splitLoops(StreamOrder order, const std::vector<LoopSplit>& splits) {
  for (const LoopSplit& s : splits) {
    auto k = static_cast<size_t>(s.loop);
    int64_t inner = order.trips[k].eval() / s.outer;
    order.trips[k] = Expr(s.outer);
    order.trips.insert(order.trips.begin() + static_cast<std::ptrdiff_t>(k + 1), Expr(inner));
    splitLoopIndexing(order.steps, order.map, s, inner);
  }
  return order;
}

namespace {

// Whether `wide` is `narrow` with `ratio` of its tokens joined along the last dimension: the same loops
// but the innermost, which walks the last dimension contiguously and runs `ratio` times fewer iterations.
bool joinsTokens(const StreamOrder& narrow, const StreamOrder& wide, int64_t& ratio) {
  size_t n = narrow.trips.size(), d = narrow.element.size();
  if (n == 0 || d == 0 || narrow.dtype != wide.dtype || n != wide.trips.size() || d != wide.element.size() ||
      narrow.map != wide.map || narrow.element.back() == 0 || wide.element.back() % narrow.element.back() != 0)
    return false;
  ratio = wide.element.back() / narrow.element.back();
  if (ratio < 2 || !narrow.trips.back().isConstant() || !wide.trips.back().isConstant() ||
      narrow.trips.back().eval() != ratio * wide.trips.back().eval() || narrow.steps.back() != narrow.element.back() ||
      wide.steps.back() != wide.element.back())
    return false;
  for (size_t i = 0; i + 1 < n; ++i)
    if (narrow.trips[i] != wide.trips[i] || narrow.steps[i] != wide.steps[i]) return false;
  for (size_t i = 0; i + 1 < d; ++i)
    if (narrow.element[i] != wide.element[i]) return false;
  const auto& last = narrow.map.results().back();  // the innermost loop walks the last dimension only
  for (const auto& r : narrow.map.results())
    if (&r != &last && r.coeffs[n - 1] != 0) return false;
  return last.coeffs[n - 1] == 1;
}

}  // namespace

EdgePlan planEdge(const KernelGraph& graph, const KernelPort& port, bool onChip, const CompileOptions& options) {
  EdgePlan plan;
  // A stream read from HBM comes when its consumer asks for it, so only one made on chip piles up.
  plan.fifoDepth = onChip && port.keepTokens > 0 ? port.keepTokens + 2 : 2;
  if (onChip) {
    plan.source = producedOrder(graph, port.tensor);
    plan.kind = plan.source == port.order ? EdgePlan::kFifo : EdgePlan::kConverter;
    if (plan.kind == EdgePlan::kConverter && joinsTokens(plan.source, port.order, plan.ratio)) plan.kind = EdgePlan::kAdapter;
    else if (plan.kind == EdgePlan::kConverter && joinsTokens(port.order, plan.source, plan.ratio)) {
      plan.kind = EdgePlan::kAdapter;
      plan.split = true;
    }
  } else {  // from HBM: a converter repeats what the DMA reads once, when something repeats
    StreamOrder once = port.order.repeats() ? withoutRepeats(port.order, port.restream) : port.order;
    plan.kind = once != port.order ? EdgePlan::kDmaConverter : EdgePlan::kDma;
    plan.source = std::move(once);
  }
  if (plan.kind == EdgePlan::kConverter || plan.kind == EdgePlan::kDmaConverter) {
    // At the symbols' maxima rounded up to whole stream tiles: a side that walks a symbolic axis in tiles
    // covers its last tile whole (the padding read, never used), so the buffer holds that tile too.
    Bindings padded = options.maxima;
    for (auto& [symbol, maximum] : padded)
      maximum = (maximum + options.tile - 1) / options.tile * options.tile;
    plan.converter = inferConverter(plan.source.bind(padded), port.order.bind(padded), true);
  }
  // A join's kept tokens wait in front of the stream's converter (the join's own: streams.cpp), where
  // the stream forks; none where the converter holds the whole tensor (one region), which takes every
  // token its producer makes before its reader starts. A row op's kept row stays behind it.
  if (plan.kind == EdgePlan::kConverter && port.joinKeep) {
    if (plan.converter.regions > 1 && plan.fifoDepth > 2) {
      int64_t bits = port.order.tokenBits(), sourceBits = std::max<int64_t>(1, plan.source.tokenBits());
      int64_t kept = std::min(plan.source.tokens().eval(options.maxima),
                              (port.keepTokens * bits + sourceBits - 1) / sourceBits);
      plan.feedDepth = kept + 2;
    }
    plan.fifoDepth = 2;
  }
  // Repeats whose buffer would take more than half the on-chip budget (a long prompt's activations
  // re-read for every column panel) are read from HBM again each time instead: more HBM traffic, which
  // the HBM model times, for a buffer no design could hold.
  if (plan.kind == EdgePlan::kDmaConverter && 2 * plan.converter.storedBytes() > options.onchipBudgetBytes) {
    plan.kind = EdgePlan::kDma;
    plan.source = port.order;
    plan.converter = ConverterPlan();
  }
  return plan;
}

int64_t edgeBytes(const EdgePlan& plan, const KernelPort& port) {
  int64_t bytes = plan.fifoDepth * ((port.order.tokenBits() + 7) / 8);
  if (plan.kind == EdgePlan::kAdapter) bytes += 2 * ((plan.source.tokenBits() + 7) / 8);
  if (plan.kind == EdgePlan::kConverter || plan.kind == EdgePlan::kDmaConverter)
    bytes += plan.converter.storedBytes() + plan.feedDepth * ((plan.source.tokenBits() + 7) / 8);
  return bytes;
}

}  // namespace stc
