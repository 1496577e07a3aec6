// Lowering ops to kernels. Stream orders (itensor types) per op, with T the token tile on the last
// dimension and rows the dims before it:
//   elementwise      one nest over the output's canonical order; a broadcast input is read through a map
//                    that drops its broadcast dims (those loops repeat it)
//   matmul           nest [batch.., M, N/Tn, K/Tk]: A as [1, Tk] tiles with the n loop repeating it (a row of
//                    A is reused for every output tile), W as [Tk, Tn] tiles, one output token per n;
//                    over W from HBM with several rows, [batch.., M/B, N/Tn, B, K/Tk] in row blocks of B
//   softmax, layernorm, rmsnorm   two kernels: `.stats` reads a row and writes one two-value token per row;
//   `.apply`
//                    reads the stats, the row again (its FIFO keeps a row) and the scale/bias, and writes
//   reduce_*         one token per row           concat   collects its inputs (one phase each), then streams
//   reshape          a view: its consumers read the base tensor's row-major stream
//   transpose, slice a copy kernel reading the input in the permuted (offset) order through a converter
//   embedding        a gather: a DMA read of the looked-up table rows
#include "compiler/lower/kernels.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include "compiler/lower/streams.h"
#include "compiler/reference/quantized.h"

namespace stc {

namespace {

Expr product(const std::vector<Expr>& v) {
  std::string text;
  bool constant = true;
  int64_t value = 1;
  for (const auto& e : v) {
    if (e.isConstant()) value *= e.eval();
    else constant = false;
    text += (text.empty() ? "" : "*") + ("(" + e.str() + ")");
  }
  return constant ? Expr(value) : Expr::parse(text);
}

}  // namespace

Expr tilesOf(const Expr& size, int64_t tile) {
  if (tile == 1) return size;
  if (size.isConstant()) return Expr(size.eval() / tile);
  return Expr::parse("(" + size.str() + " + " + std::to_string(tile - 1) + ")/" + std::to_string(tile));
}

int64_t tokenElements(const StreamOrder& order) {
  int64_t n = 1;
  for (int64_t e : order.element) n *= e;
  return n;
}

int64_t StreamOrder::tokenBits() const {
  int64_t n = dtypeBits(dtype);
  for (int64_t d : element) n *= d;
  return n;
}

Expr StreamOrder::tokens() const { return product(trips); }

bool StreamOrder::isSymbolic() const {
  for (const auto& t : trips)
    if (!t.isConstant()) return true;
  return false;
}

bool StreamOrder::repeats() const {
  for (int k = 0; k < map.numDims(); ++k) {
    if (trips[static_cast<size_t>(k)].isConstant() && trips[static_cast<size_t>(k)].eval() == 1) continue;
    bool used = false;
    for (const auto& r : map.results()) used = used || r.coeffs[static_cast<size_t>(k)] != 0;
    if (!used) return true;
  }
  return false;
}

ITensorType StreamOrder::bind(const Bindings& b) const {
  ITensorType t;
  t.elementShape = element;
  t.dtype = dtype;
  for (const auto& e : trips) t.tripcounts.push_back(e.eval(b));
  t.steps = steps;
  t.iterMap = map;
  return t;
}

int64_t tileFor(const Expr& last, int64_t tile) {
  if (!last.isConstant()) return tile;
  const int64_t n = last.eval(), g = std::gcd(tile, n);
  if (2 * g >= tile) return g;
  // An awkward width (2,667 = 3 * 7 * 127): its largest divisor up to the tile, even where the width is
  // (1,500: 12, not 15), so that a 4-bit weight's tile stays whole bytes wherever it was.
  for (int64_t d = tile; d > g; --d)
    if (n % d == 0 && (d % 2 == 0 || n % 2 != 0)) return d;
  return g;
}

bool reshapeStreams(const Expr& from, const Expr& to, int64_t tile) {
  const int64_t a = tileFor(from, tile), b = tileFor(to, tile);
  return a == b || (from.isConstant() && to.isConstant() && (a % b == 0 || b % a == 0));
}

StreamOrder canonicalOrder(const TensorInfo& t, int64_t tile) {
  StreamOrder o;
  size_t rank = t.shape.size();
  int64_t T = tileFor(t.shape.back(), tile);
  o.element.assign(rank, 1);
  o.element.back() = T;
  o.dtype = t.dtype;
  o.trips = t.shape;
  o.trips.back() = tilesOf(t.shape.back(), T);
  o.steps.assign(rank, 1);
  o.steps.back() = T;
  std::vector<int> dims(rank);
  std::iota(dims.begin(), dims.end(), 0);
  o.map = AffineMap::permutation(static_cast<int>(rank), dims);
  return o;
}

std::vector<int> loopDims(const StreamOrder& o, const TensorInfo& t) {
  size_t r = t.shape.size();
  if (o.map.numDims() != static_cast<int>(r) || o.map.numResults() != static_cast<int>(r) || o.trips.size() != r ||
      o.element.size() != r)
    return {};
  std::vector<int> dims(r, -1);
  for (size_t d = 0; d < r; ++d) {
    const AffineExpr& e = o.map.results()[d];
    if (e.constant != 0) return {};
    int loop = -1;
    for (size_t k = 0; k < r; ++k) {
      if (e.coeffs[k] == 0) continue;
      if (loop >= 0 || e.coeffs[k] != 1) return {};
      loop = static_cast<int>(k);
    }
    if (loop < 0 || dims[static_cast<size_t>(loop)] >= 0) return {};
    dims[static_cast<size_t>(loop)] = static_cast<int>(d);
    size_t l = static_cast<size_t>(loop);
    if (o.steps[l] != o.element[d] || o.trips[l] != tilesOf(t.shape[d], o.element[d])) return {};
    if (o.element[d] != 1 && l + 1 != r) return {};
  }
  return dims;
}

StreamOrder layoutOrder(const TensorInfo& t, const std::vector<int>& dims, int64_t tile) {
  StreamOrder canonical = canonicalOrder(t, tile), o = canonical;
  size_t r = t.shape.size();
  std::vector<AffineExpr> results(r, AffineExpr{std::vector<int64_t>(r, 0), 0});
  for (size_t l = 0; l < r; ++l) {
    size_t d = static_cast<size_t>(dims[l]);
    o.trips[l] = canonical.trips[d];
    o.steps[l] = canonical.steps[d];
    results[d].coeffs[l] = 1;
  }
  o.map = AffineMap(static_cast<int>(r), results);
  return o;
}

const Op* producerOf(const TypedGraph& g, const std::string& tensor) {
  for (const Op& op : g.graph->ops)
    if (op.output == tensor) return &op;
  return nullptr;
}

namespace {

// How a tensor made on chip arrives at its readers: spread over a long-running producer (an
// output-stationary GEMV writes an output tile every K/Tk iterations), or all at once near the end of
// its producer (an input-streaming GEMV, a prefill matmul's column panels, a row op's second pass, a
// copy through a converter).
enum class Arrival { kFromHbm, kSpread, kAtOnce };

bool oneRow(const TensorInfo& t) {
  for (size_t i = 0; i + 1 < t.shape.size(); ++i)
    if (!t.shape[i].isConstant() || t.shape[i].eval() != 1) return false;
  return true;
}

bool isMatmul(const Op& op) { return op.op == "matmul" || op.op == "linear"; }

Arrival arrivalOf(const TypedGraph& g, const std::string& tensor) {
  const Op* op = producerOf(g, tensor);
  if (!op) return Arrival::kFromHbm;
  if (op->op == "reshape") return arrivalOf(g, op->inputs[0]);
  if (isMatmul(*op)) return writesPanels(g, *op) || streamsInput(g, *op) ? Arrival::kAtOnce : Arrival::kSpread;
  if (elementwiseArity(op->op) == 0) return Arrival::kAtOnce;
  Arrival a = Arrival::kFromHbm;
  for (const auto& input : op->inputs) {
    Arrival i = arrivalOf(g, input);
    if (i == Arrival::kAtOnce) return i;
    if (i == Arrival::kSpread) a = i;
  }
  return a;
}

}  // namespace

bool writesPanels(const TypedGraph& g, const Op& op) {
  if (!isMatmul(op)) return false;
  const TensorInfo& out = g.tensors.at(op.output);
  const Expr& M = out.shape[out.shape.size() - 2];
  return M.isConstant() && M.eval() > 1 && g.tensors.at(op.inputs[1]).role != TensorRole::kIntermediate;
}

bool streamsInput(const TypedGraph& g, const Op& op) {
  if (!isMatmul(op) || !oneRow(g.tensors.at(op.output)) || g.tensors.at(op.inputs[1]).role != TensorRole::kWeight)
    return false;
  return arrivalOf(g, op.inputs[0]) == Arrival::kSpread;
}

int64_t headDimOf(const TypedGraph& g, const Op& op) {
  if (!writesPanels(g, op) || g.tensors.at(op.inputs[0]).role != TensorRole::kInput) return 0;
  const TensorInfo& outT = g.tensors.at(op.output);
  if (outT.role != TensorRole::kIntermediate) return 0;
  const Op* view = nullptr;
  for (const Op& o : g.graph->ops)
    if (std::count(o.inputs.begin(), o.inputs.end(), op.output)) {
      if (view || o.op != "reshape") return 0;
      view = &o;
    }
  if (!view || g.tensors.at(view->output).role != TensorRole::kIntermediate) return 0;
  const std::vector<Expr>& vs = g.tensors.at(view->output).shape;
  size_t r = outT.shape.size();
  if (vs.size() != r + 1 || !vs[r].isConstant() || !vs[r - 1].isConstant() ||
      !outT.shape[r - 1].isConstant() || vs[r - 1].eval() * vs[r].eval() != outT.shape[r - 1].eval())
    return 0;
  for (size_t d = 0; d + 1 < r; ++d)
    if (vs[d] != outT.shape[d]) return 0;
  bool read = false;
  for (const Op& o : g.graph->ops) {
    if (!std::count(o.inputs.begin(), o.inputs.end(), view->output)) continue;
    if (o.op != "transpose") return 0;
    auto perm = std::get<std::vector<int64_t>>(o.attrs.at("perm"));
    auto at = [&](int64_t dim) { return std::find(perm.begin(), perm.end(), dim) - perm.begin(); };
    if (at(static_cast<int64_t>(r) - 1) > at(static_cast<int64_t>(r) - 2)) return 0;  // rows before heads
    read = true;
  }
  return read ? vs[r].eval() : 0;
}

size_t heldKeyDim(const StreamOrder& right) {
  size_t r = right.element.size();
  const auto& c = right.map.results()[r - 2].coeffs;
  bool moves = std::any_of(c.begin(), c.end(), [](int64_t v) { return v != 0; });
  return moves ? r - 2 : r - 1;
}

Kernel::HeldKeys heldKeysOf(const TypedGraph& g, const Op& op) {
  using HeldKeys = Kernel::HeldKeys;
  if (!isMatmul(op)) return HeldKeys::kNone;
  const TensorInfo &a = g.tensors.at(op.inputs[0]), &w = g.tensors.at(op.inputs[1]), &outT = g.tensors.at(op.output);
  size_t rank = outT.shape.size();
  if (w.role != TensorRole::kIntermediate || w.shape.size() != rank || a.shape.size() != rank ||
      std::any_of(w.shape.begin(), w.shape.end(), [](const Expr& d) { return !d.isConstant(); }))
    return HeldKeys::kNone;
  const Expr &M = outT.shape[rank - 2], &N = outT.shape.back(), &K = a.shape.back();
  if (!M.isConstant()) return HeldKeys::kNone;
  // Keys and values from HBM (a graph input viewed as heads) need no buffer: the key of row r is no
  // nearer than the last, and their tiles stream from HBM as an unmasked product's do.
  std::string base = op.inputs[1];
  for (const Op* p = producerOf(g, base); p && (p->op == "reshape" || p->op == "transpose");
       p = producerOf(g, base))
    base = p->inputs[0];
  if (!producerOf(g, base)) return HeldKeys::kNone;
  if (const Op* p = producerOf(g, op.inputs[0]); p && isCausal(*p) && K == M) return HeldKeys::kAlongK;
  if (N != M) return HeldKeys::kNone;
  const auto& outputs = g.graph->outputs;
  for (std::string t = op.output;;) {
    if (std::find(outputs.begin(), outputs.end(), t) != outputs.end()) return HeldKeys::kNone;
    const Op* reader = nullptr;
    for (const Op& o : g.graph->ops)
      if (std::count(o.inputs.begin(), o.inputs.end(), t)) {
        if (reader) return HeldKeys::kNone;
        reader = &o;
      }
    if (!reader) return HeldKeys::kNone;
    if (reader->op == "softmax") return isCausal(*reader) && reader->inputs[0] == t ? HeldKeys::kAlongN : HeldKeys::kNone;
    const auto &from = g.tensors.at(t).shape, &to = g.tensors.at(reader->output).shape;
    // Elementwise ops, and views that keep every row's keys where they were (OPT's [b * h, R, K] viewed
    // as [b, h, R, K] for its mask, and back).
    bool view = reader->op == "reshape" && keepsRows(from, to);
    if (!view && (elementwiseArity(reader->op) == 0 || to != from)) return HeldKeys::kNone;
    t = reader->output;
  }
}

int64_t copiesGroup(const TypedGraph& g, const std::string& tensor, size_t dim) {
  // The dim is followed back as a digit of the flat index: `span` values `inner` elements apart. A reshape
  // keeps it; a transpose moves the dim holding it; at the add, its low part must be the copied dim.
  auto dimsOf = [&](const std::string& t) {
    std::vector<int64_t> d;
    for (const Expr& e : g.tensors.at(t).shape) d.push_back(e.isConstant() ? e.eval() : 0);
    return d;
  };
  auto strides = [](const std::vector<int64_t>& d) {
    std::vector<int64_t> s(d.size(), 1);
    for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
    return s;
  };
  std::vector<int64_t> shape = dimsOf(tensor);
  if (dim >= shape.size() || shape[dim] < 2 || std::count(shape.begin(), shape.end(), 0)) return 1;
  int64_t inner = strides(shape)[dim], span = shape[dim];
  for (std::string t = tensor;;) {
    const Op* p = producerOf(g, t);
    if (!p || p->inputs.empty()) return 1;
    std::vector<int64_t> out = dimsOf(t), in = dimsOf(p->inputs[0]);
    if (std::count(in.begin(), in.end(), 0)) return 1;
    std::vector<int64_t> so = strides(out);
    if (p->op == "transpose") {
      // The digit a digit of one dim j of the output (its values there a sub-digit dividing the dim), which
      // is the input's perm[j].
      auto perm = std::get<std::vector<int64_t>>(p->attrs.at("perm"));
      size_t j = 0;
      while (j < out.size() && !(inner % so[j] == 0 && (so[j] * out[j]) % (inner * span) == 0)) ++j;
      if (j == out.size()) return 1;
      inner = strides(in)[static_cast<size_t>(perm.at(j))] * (inner / so[j]);
    } else if (p->op == "add" && p->inputs.size() == 2 && knownZeros(*g.graph, p->inputs[1])) {
      if (in.size() != out.size()) return 1;
      size_t copied = out.size();  // the one dim the zeros broadcast the input over
      for (size_t i = 0; i < out.size(); ++i)
        if (in[i] != out[i]) {
          if (in[i] != 1 || copied != out.size()) return 1;
          copied = i;
        }
      return copied < out.size() && so[copied] == inner && span % out[copied] == 0 ? out[copied] : 1;
    } else if (p->op != "reshape") {
      return 1;
    }
    t = p->inputs[0];
  }
}

namespace {

class Lowering {
 public:
  Lowering(const TypedGraph& g, const CompileOptions& o, const Schedules& schedules)
      : g_(g), opt_(o), schedules_(schedules) {
    kg_.tensors = g.tensors;
    for (const auto& t : g.graph->inputs) kg_.inputs.push_back(t.name);
    for (const auto& t : g.graph->weights) kg_.weights.push_back(t.name);
    kg_.outputs = g.graph->outputs;
  }

  KernelGraph run() {
    for (const Op& op : g_.graph->ops) lower(op);
    for (const std::string& out :
         kg_.outputs)  // a view as a graph output: a stream its base's producer writes
      if (auto v = views_.find(out); v != views_.end() && !kg_.producer.count(out) && !ownStream(out))
        throw UserError(formatError(info(out).loc, "unsupported: graph output '" + out +
                                                       "' is a reshape of '" + v->second.base +
                                                       "', which no op computes"));
    markJoins();
    return std::move(kg_);
  }

 private:
  [[noreturn]] void unsupported(const Op& op, const std::string& what) {
    throw UserError(formatError(op.loc, "unsupported: op '" + op.name + "' (" + op.op + "): " + what));
  }
  const TensorInfo& info(const std::string& name) const { return kg_.tensors.at(name); }
  const StreamOrder& producedOrderOf(const std::string& tensor) const {
    const KernelGraph::PortRef& ref = kg_.producer.at(tensor);
    return kg_.kernels[static_cast<size_t>(ref.kernel)].phases[static_cast<size_t>(ref.phase)].ports[static_cast<size_t>(ref.port)].order;
  }
  // The order `tensor` streams in as made: its producer's port's, or a reshape view's canonical order when
  // its base streams row-major. None for a tensor from HBM (a DMA reads it in any order).
  std::optional<StreamOrder> producedOrder(const std::string& tensor) const {
    if (auto own = kg_.viewOrder.find(tensor); own != kg_.viewOrder.end()) return own->second;
    if (auto v = views_.find(tensor); v != views_.end()) {
      auto base = producedOrder(v->second.base);
      if (base && *base != canonicalOrder(info(v->second.base), base->element.back()))
        return headsOrder(*base, info(tensor));
      if (!base || *base != canonicalOrder(info(v->second.base), opt_.tile)) return std::nullopt;
      return canonicalOrder(info(tensor), opt_.tile);
    }
    if (!kg_.producer.count(tensor)) return std::nullopt;
    return producedOrderOf(tensor);
  }
  // The dims (loopDims) of the order `tensor` is made in, when that order is row-major over another
  // permutation of its dims with the last one innermost and canonically tiled (a transpose's that kept
  // its producer's order): an op that may walk the rows in any order (a row op, an elementwise op, a
  // batched matmul's (batch.., m) loops) adopts it, and no converter reorders the tensor. Empty otherwise.
  std::vector<int> rowLayoutOf(const std::string& tensor) const {
    auto o = producedOrder(tensor);
    if (!o) return {};
    std::vector<int> dims = loopDims(*o, info(tensor));
    if (dims.empty() || dims.back() != static_cast<int>(dims.size()) - 1 || std::is_sorted(dims.begin(), dims.end()) ||
        *o != layoutOrder(info(tensor), dims, opt_.tile))
      return {};
    return dims;
  }
  // A reshape view must keep its base's row-major token sequence up to an adapter (reshapeStreams), and
  // may not change a symbolic last dimension, whose tiles are padded.
  void checkReshapeTiles(const std::string& name) const {
    const std::string& baseName = views_.at(name).base;
    const int64_t vt = canonicalOrder(info(name), opt_.tile).element.back(),
                  bt = canonicalOrder(info(baseName), opt_.tile).element.back();
    const Expr &last = info(name).shape.back(), &baseLast = info(baseName).shape.back();
    if (vt != bt && !reshapeStreams(baseLast, last, opt_.tile))
      throw UserError(formatError(info(name).loc, "unsupported: the reshape producing '" + name +
                                                      "' changes the stream's tile (" + std::to_string(bt) +
                                                      " to " + std::to_string(vt) + " elements)"));
    if ((!last.isConstant() || !baseLast.isConstant()) && last != baseLast && vt > 1)
      throw UserError(formatError(info(name).loc, "unsupported: the reshape producing '" + name +
                                                      "' changes a symbolic last dimension (" +
                                                      baseLast.str() + " to " + last.str() +
                                                      "), whose tiles are padded"));
  }
  // A reshape view as a stream of its own, which its base's producer writes in the view's canonical order
  // (through an adapter where their tiles differ: streams.cpp), when its base is made on chip row-major at
  // a tile that one of the view's divides. False for a base from HBM (a DMA reads the view itself).
  bool ownStream(const std::string& name) {
    checkReshapeTiles(name);
    const std::string& baseName = views_.at(name).base;
    auto prod = kg_.producer.find(baseName);
    if (prod == kg_.producer.end()) return false;
    StreamOrder canonical = canonicalOrder(info(name), opt_.tile);
    const StreamOrder& made = producedOrderOf(baseName);
    std::optional<StreamOrder> heads;
    if (made != canonicalOrder(info(baseName), made.element.back())) {
      heads = headsOrder(made, info(name));
      if (!heads && info(name).role == TensorRole::kOutput)
        heads = mergedOrder(made, info(baseName), info(name));
    }
    if (heads) {
      kg_.producer[name] = prod->second;
      kg_.viewOrder[name] = *heads;
      return true;
    }
    const int64_t mt = made.element.back(), vt = canonical.element.back();
    bool adapts = mt == vt || (info(name).shape.back().isConstant() &&
                               info(baseName).shape.back().isConstant() && (mt % vt == 0 || vt % mt == 0));
    if (made != canonicalOrder(info(baseName), mt) || !adapts)
      throw UserError(formatError(info(name).loc, "unsupported: the reshape producing '" + name +
                                                      "' reads a tensor not produced in row-major order"));
    kg_.producer[name] = prod->second;
    kg_.viewOrder[name] = canonical;
    return true;
  }
  // The order of a view [.., M, H, D] of a base [.., M, H * D] made in column panels of one head, panels
  // outer (a weight-stationary matmul's, writtenByHeads): the panel loop becomes the head loop, and the
  // head's one panel a loop of one trip innermost. None for any other base order or reshape.
  std::optional<StreamOrder> headsOrder(const StreamOrder& made, const TensorInfo& view) const {
    size_t r = made.element.size(), loops = made.trips.size();
    if (view.shape.size() != r + 1 || r < 2 || !view.shape[r].isConstant() || !view.shape[r - 1].isConstant())
      return std::nullopt;
    int64_t H = view.shape[r - 1].eval(), D = view.shape[r].eval();
    const AffineExpr& last = made.map.results().back();
    int pn = -1;
    for (size_t l = 0; l < loops; ++l)
      if (last.coeffs[l] != 0) {
        if (pn >= 0 || last.coeffs[l] != 1) return std::nullopt;
        pn = static_cast<int>(l);
      }
    if (pn < 0 || last.constant != 0 || made.element.back() != D ||
        made.steps[static_cast<size_t>(pn)] != D || made.trips[static_cast<size_t>(pn)] != Expr(H))
      return std::nullopt;
    for (size_t d = 0; d + 1 < r; ++d)
      if (made.element[d] != 1 || made.map.results()[d].coeffs[static_cast<size_t>(pn)] != 0 ||
          view.shape[d] != info(viewBaseOf(view.name)).shape[d])
        return std::nullopt;
    StreamOrder o;
    o.dtype = made.dtype;
    o.element.assign(r + 1, 1);
    o.element.back() = D;
    o.trips = made.trips;
    o.steps = made.steps;
    o.steps[static_cast<size_t>(pn)] = 1;
    o.trips.push_back(Expr(1));
    o.steps.push_back(D);
    std::vector<AffineExpr> results;
    for (size_t d = 0; d + 1 < r; ++d) {
      AffineExpr e = made.map.results()[d];
      e.coeffs.push_back(0);
      results.push_back(e);
    }
    AffineExpr h{std::vector<int64_t>(loops + 1, 0), 0}, inHead{std::vector<int64_t>(loops + 1, 0), 0};
    h.coeffs[static_cast<size_t>(pn)] = 1;
    inHead.coeffs[loops] = 1;
    results.push_back(h);
    results.push_back(inHead);
    o.map = AffineMap(static_cast<int>(loops + 1), results);
    return o;
  }
  // The order of a view [.., H * D] of a base [.., H, D] made in `made` (a transpose that kept its
  // producer's order: heads outer, say): the base's token at (.., h, d) is the view's at (.., h * D + d).
  // None where a token spans more than one value of H or runs past D.
  std::optional<StreamOrder> mergedOrder(const StreamOrder& made, const TensorInfo& base,
                                         const TensorInfo& view) const {
    const size_t r = made.element.size();
    if (r < 2 || view.shape.size() + 1 != r || base.shape.size() != r || !view.shape.back().isConstant())
      return std::nullopt;
    if (!base.shape[r - 1].isConstant() || !base.shape[r - 2].isConstant()) return std::nullopt;
    const int64_t D = base.shape[r - 1].eval();
    if (made.element[r - 2] != 1 || D % made.element[r - 1] != 0 ||
        view.shape.back().eval() != base.shape[r - 2].eval() * D)
      return std::nullopt;
    for (size_t d = 0; d + 2 < r; ++d)
      if (view.shape[d] != base.shape[d]) return std::nullopt;
    StreamOrder o = made;
    o.element.erase(o.element.end() - 2);
    std::vector<AffineExpr> results(made.map.results().begin(), made.map.results().end() - 2);
    AffineExpr last = made.map.results()[r - 1];
    const AffineExpr& head = made.map.results()[r - 2];
    for (size_t k = 0; k < last.coeffs.size(); ++k) last.coeffs[k] += head.coeffs[k] * D;
    last.constant += head.constant * D;
    results.push_back(last);
    o.map = AffineMap(made.map.numDims(), results);
    return o;
  }
  // Whether `tensor`, made in `made`, may leave the chip in that order: a graph output that nothing reads,
  // or an intermediate read by nothing but reshapes into such outputs, each of whose orders follows
  // (mergedOrder); a token is a run of its last dim. The DMA writing them puts each token at its row-major
  // address, so no converter waits for the whole tensor to reorder it.
  bool leavesInOrder(const std::string& tensor, const StreamOrder& made) const {
    if (!std::all_of(made.element.begin(), made.element.end() - 1, [](int64_t e) { return e == 1; }) ||
        made == canonicalOrder(info(tensor), made.element.back()))
      return false;
    // In whole 512-bit beats (dmaWholeBeats), as the canonical order is written: a head's run shorter than a
    // beat would be written element by element, slower than the bytes on its channel the HBM model counts.
    bool any = info(tensor).role == TensorRole::kOutput;
    if (any && !dmaWholeBeats(info(tensor), made)) return false;
    for (const Op& o : g_.graph->ops) {
      if (std::find(o.inputs.begin(), o.inputs.end(), tensor) == o.inputs.end()) continue;
      const std::string& view = o.output;
      if (o.op != "reshape" || info(view).role != TensorRole::kOutput) return false;
      std::optional<StreamOrder> merged = mergedOrder(made, info(tensor), info(view));
      if (!merged || !dmaWholeBeats(info(view), *merged)) return false;
      for (const Op& reader : g_.graph->ops)
        if (std::find(reader.inputs.begin(), reader.inputs.end(), view) != reader.inputs.end()) return false;
      any = true;
    }
    return any;
  }
  const std::string& viewBaseOf(const std::string& view) const { return views_.at(view).base; }
  // Whether `base` is made head by head (headsOrder) for a reshape reading it.
  bool madeByHeads(const std::string& base) const {
    auto prod = kg_.producer.find(base);
    if (prod == kg_.producer.end()) return false;
    const StreamOrder& made = producedOrderOf(base);
    if (made == canonicalOrder(info(base), made.element.back())) return false;
    return std::any_of(g_.graph->ops.begin(), g_.graph->ops.end(), [&](const Op& o) {
      return o.op == "reshape" && o.inputs[0] == base && headsOrder(made, info(o.output));
    });
  }
  // Whether `tensor` may stream in an order other than its canonical one: an intermediate result that no
  // reshape reads (a view streams its base row-major).
  bool mayReorder(const std::string& tensor) const {
    if (info(tensor).role != TensorRole::kIntermediate) return false;
    return std::none_of(g_.graph->ops.begin(), g_.graph->ops.end(),
                        [&](const Op& o) { return o.op == "reshape" && o.inputs[0] == tensor; });
  }
  // Column panels handed on as made. A matmul over rows writes its output in column panels of its row
  // blocks (writesPanels); where the one op reading it is elementwise of its shape and adopts them
  // (adoptsPanels), the matmul writes them under the output's own name, the op walks them in that order too,
  // and the one converter in front of the op's readers replaces two (panels to rows, then rows to a reader's
  // order): a 64-row MLP's up projection in blocks of 4 rows and its activation hand the down projection a
  // block in its order through 24.6 KB instead of twice that; a gated MLP's gate and up both go to the
  // product in their panels. The panels `op` writes its output in, as its row block (0: every row) and output
  // tile, where it may hand them on so: a matmul writing panels, not by heads, at the stream tile, its output
  // free to stream in any order (mayReorder).
  std::optional<std::pair<int64_t, int64_t>> panelsOf(const Op& op) const {
    if (!writesPanels(g_, op) || !mayReorder(op.output)) return std::nullopt;
    MatmulSchedule schedule;
    if (auto it = schedules_.find(op.name); it != schedules_.end()) schedule = it->second;
    const TensorInfo& outT = info(op.output);
    int64_t tile = canonicalOrder(outT, opt_.tile).element.back();
    if (schedule.byHeads || (schedule.tn > 0 && schedule.tn != tile)) return std::nullopt;
    int64_t M = outT.shape[outT.shape.size() - 2].eval();
    return std::make_pair(schedule.rowBlock > 0 && schedule.rowBlock < M ? schedule.rowBlock : 0, tile);
  }
  // The panels `tensor` streams in when its producer hands them on (panelsOf, or an op that adopts them).
  std::optional<std::pair<int64_t, int64_t>> panelsStream(const std::string& tensor) const {
    const Op* made = producerOf(g_, tensor);
    if (!made) return std::nullopt;
    if (isMatmul(*made)) return panelsOf(*made);
    if (!adoptsPanels(*made)) return std::nullopt;
    for (const std::string& input : made->inputs)
      if (info(input).shape == info(tensor).shape) return panelsStream(input);
    return std::nullopt;
  }
  // Whether elementwise `op` walks its inputs' panels: every input of its output's shape comes in the same
  // panels (panelsStream) and is read by it alone, through one port (the others are smaller: broadcast),
  // and its result may stream in any order.
  bool adoptsPanels(const Op& op) const {
    if (op.op == "rope" || elementwiseArity(op.op) == 0 || !mayReorder(op.output)) return false;
    std::optional<std::pair<int64_t, int64_t>> panels;
    for (const std::string& input : op.inputs) {
      if (info(input).shape != info(op.output).shape) continue;
      std::optional<std::pair<int64_t, int64_t>> in = panelsStream(input);
      if (onlyReader(input) != &op || !in || (panels && *panels != *in)) return false;
      panels = in;
    }
    return panels.has_value();
  }
  // The op reading `tensor` when exactly one port reads it, else null.
  const Op* onlyReader(const std::string& tensor) const {
    const Op* reader = nullptr;
    for (const Op& o : g_.graph->ops)
      for (const std::string& input : o.inputs)
        if (input == tensor) {
          if (reader) return nullptr;
          reader = &o;
        }
    return reader;
  }

  // A port reading `tensor` in `order` (over the tensor's own dims); views resolve to their base.
  KernelPort in(const std::string& tensor, StreamOrder order, int level = -2) {
    std::string name = tensor;
    while (views_.count(name)) {
      const View& v = views_.at(name);
      {
        // A reshape keeps the row-major token sequence when both sides have the same tile: its canonical
        // order is its base's. Read in another order, or at another tile, the view is a stream of its own,
        // which its base's producer writes in the view's canonical order (a converter then reorders it;
        // an adapter between the producer and the view's stream splits or packs the tokens: streams.cpp).
        StreamOrder canonical = canonicalOrder(info(name), opt_.tile);
        StreamOrder base = canonicalOrder(info(v.base), opt_.tile);
        bool retile = canonical.element.back() != base.element.back();
        checkReshapeTiles(name);
        if (order != canonical || retile || madeByHeads(v.base)) {
          ownStream(name);
          break;
        }
        order = base;
      }
      order.dtype = info(v.base).dtype;
      name = v.base;
    }
    KernelPort p;
    p.tensor = name;
    p.order = order;
    p.level = level;
    auto role = info(name).role;
    p.weight = role == TensorRole::kWeight || role == TensorRole::kInput;  // KV caches stripe like weights
    return p;
  }
  KernelPort out(const std::string& tensor, StreamOrder order, int level = -2) {
    KernelPort p;
    p.tensor = tensor;
    p.order = std::move(order);
    p.out = true;
    p.level = level;
    return p;
  }
  // A join (a kernel reading two streams made on chip, like a residual add) waits on its slower input
  // while the faster one piles up; the paths between a fork and a join may hold whole rows (converters),
  // so a joined stream may keep all its tokens until FIFO sizing trims it (at most the tensor once, in
  // front of its converter: edges.cpp). It must where its producer is linked to another joined stream's
  // by kernels and streams other than the join, in any direction: a fork upstream of both (ln1 to the
  // projections whose results meet in the scores) or another join reading both (an add and a concat of
  // the same two streams). Streams linked through nothing else (each from its own DMA reads, as the
  // projections of an attention read x) fill only as the join reads them. Row ops' apply kernels keep
  // exactly a row instead (lowerRowOp).
  // The token's own row (kv_append) is kept whole instead: a head's slice a token, so its producer never
  // waits on the attention, and the attention's other input is no join for it. Nor are the scores' keys
  // held causally and made in the order the scores read them (heldInStep): the key of row r's index comes
  // with row r, in step with it.
  void markJoins() {
    size_t n = kg_.kernels.size();
    std::vector<std::vector<size_t>> linked(n);  // kernels a stream made on chip joins, either way
    for (size_t k = 0; k < n; ++k)
      for (const auto& ph : kg_.kernels[k].phases)
        for (const auto& p : ph.ports)
          if (auto prod = kg_.producer.find(p.tensor); !p.out && prod != kg_.producer.end()) {
            size_t from = static_cast<size_t>(prod->second.kernel);
            linked[k].push_back(from);
            linked[from].push_back(k);
          }
    for (size_t k = 0; k < n; ++k) {
      Kernel& kern = kg_.kernels[k];
      if (kern.op.size() > 6 && kern.op.compare(kern.op.size() - 6, 6, ".apply") == 0) continue;
      std::vector<KernelPort*> joined;
      for (size_t ph = 0; ph < kern.phases.size(); ++ph)
        for (size_t i = 0; i < kern.phases[ph].ports.size(); ++i) {
          KernelPort& p = kern.phases[ph].ports[i];
          if (p.out || !kg_.producer.count(p.tensor)) continue;
          if (ph == 0 && static_cast<int>(i) == kern.appendPort)
            p.keepTokens = std::max(p.keepTokens, p.order.tokens().eval(opt_.maxima));
          else if (!(ph == 0 && i == 1 && heldInStep(kern)))
            joined.push_back(&p);
        }
      if (joined.size() < 2) continue;
      // The kernels each joined stream's producer reaches without passing through this join.
      std::vector<int> part(n, -1);
      for (size_t j = 0; j < joined.size(); ++j) {
        size_t start = static_cast<size_t>(kg_.producer.at(joined[j]->tensor).kernel);
        if (part[start] >= 0) continue;
        std::vector<size_t> todo{start};
        part[start] = static_cast<int>(j);
        while (!todo.empty()) {
          size_t at = todo.back();
          todo.pop_back();
          for (size_t next : linked[at])
            if (next != k && part[next] < 0) {
              part[next] = static_cast<int>(j);
              todo.push_back(next);
            }
        }
      }
      for (size_t j = 0; j < joined.size(); ++j) {
        int mine = part[static_cast<size_t>(kg_.producer.at(joined[j]->tensor).kernel)];
        bool coupled = false;
        for (size_t o = 0; o < joined.size() && !coupled; ++o)
          coupled = o != j && part[static_cast<size_t>(kg_.producer.at(joined[o]->tensor).kernel)] == mine;
        if (coupled) {
          joined[j]->keepTokens = std::max(joined[j]->keepTokens, joined[j]->order.tokens().eval(opt_.maxima));
          joined[j]->joinKeep = true;
        }
      }
    }
  }

  // Whether kernel k's held right side comes in step with its rows: the scores' keys (Kernel::heldKeys),
  // made walking its (batch.., key) dims in the order k reads them, its other dim innermost, so that no
  // converter in between holds more than a key, and made as q is, by a projection of the same rows. (P.V's
  // values are made with K, ahead of P, which waits on the scores' row and the softmax's two passes: V is
  // a join's stream.)
  bool heldInStep(const Kernel& k) const {
    if (k.heldKeys != Kernel::HeldKeys::kAlongN) return false;
    const KernelPort& held = k.phases[0].ports[1];
    auto made = producedOrder(held.tensor);
    if (!made) return false;
    std::vector<int> dims = loopDims(*made, info(held.tensor));
    if (dims.empty()) return false;
    std::vector<int> reads(held.order.map.numDims(), -1), other;
    for (size_t d = 0; d < held.order.map.results().size(); ++d) {
      const auto& c = held.order.map.results()[d].coeffs;
      auto at = std::find(c.begin(), c.end(), 1);
      if (at == c.end()) other.push_back(static_cast<int>(d));
      else reads[static_cast<size_t>(at - c.begin())] = static_cast<int>(d);
    }
    if (other.size() != 1 || dims.back() != other[0]) return false;
    dims.pop_back();
    return dims == reads;
  }

  void add(Kernel k) {
    for (size_t ph = 0; ph < k.phases.size(); ++ph)
      for (size_t p = 0; p < k.phases[ph].ports.size(); ++p)
        if (k.phases[ph].ports[p].out)
          kg_.producer[k.phases[ph].ports[p].tensor] = {static_cast<int>(kg_.kernels.size()), static_cast<int>(ph),
                                                        static_cast<int>(p)};
    kg_.kernels.push_back(std::move(k));
  }
  Kernel kernel(const Op& op, const std::string& suffix = "") {
    Kernel k;
    k.name = op.name + suffix;
    k.op = op.op + suffix;
    k.opName = op.name;
    k.opIndex = static_cast<int>(&op - g_.graph->ops.data());
    k.loc = op.loc;
    k.arithmetic = info(op.output).dtype;
    return k;
  }

  // The order in which an elementwise kernel over `outOrder` (walking the output's dims in any order) reads
  // input `t` (numpy broadcasting).
  StreamOrder broadcastOrder(const TensorInfo& t, const TensorInfo& outT, const StreamOrder& outOrder) {
    StreamOrder o;
    size_t rank = t.shape.size(), outRank = outT.shape.size(), shift = outRank - rank;
    o.dtype = t.dtype;
    o.trips = outOrder.trips;
    o.steps = outOrder.steps;
    o.element.assign(rank, 1);
    std::vector<AffineExpr> results;
    const int loops = outOrder.map.numDims();  // (a matmul's column panels: one more than the rank)
    for (size_t i = 0; i < rank; ++i) {
      AffineExpr e{std::vector<int64_t>(static_cast<size_t>(loops), 0), 0};
      bool broadcast = t.shape[i].isConstant() && t.shape[i].eval() == 1 &&
                       !(outT.shape[i + shift].isConstant() && outT.shape[i + shift].eval() == 1);
      if (!broadcast) {
        e = outOrder.map.results()[i + shift];
        o.element[i] = outOrder.element[i + shift];
      }
      results.push_back(e);
    }
    o.map = AffineMap(loops, results);
    return o;
  }

  void lower(const Op& op) {
    const TensorInfo& outT = info(op.output);
    const std::string& k = op.op;
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (appends_.count(op.inputs[i]) && !(isMatmul(op) && i == 1))
        unsupported(op, "the cache '" + op.inputs[i] + "' (kv_append) can only be a matmul's right side");
    if (k == "kv_append") {  // applied by the matmul reading it (lowerMatmul)
      if (info(op.inputs[0]).role != TensorRole::kInput)
        unsupported(op, "the cache '" + op.inputs[0] + "' must be a graph input (a KV cache in HBM)");
      if (info(op.output).role == TensorRole::kOutput)
        unsupported(op, "its result '" + op.output + "' cannot be a graph output (it is the cache, patched as it streams)");
      appends_[op.output] = &op;
      return;
    }
    if (k == "reshape") {  // a view of a view is a view of the first base: the same row-major stream
      View v;
      v.base = op.inputs[0];
      while (views_.count(v.base)) v.base = views_.at(v.base).base;
      views_[op.output] = v;
      kg_.viewOf[op.output] = v.base;
      return;
    }
    if (k == "transpose" || k == "slice") return lowerRelayout(op);
    if (k == "matmul" || k == "linear") return lowerMatmul(op);
    if (k == "softmax" || k == "layernorm" || k == "rmsnorm") return lowerRowOp(op);
    if (k == "reduce_sum" || k == "reduce_max" || k == "reduce_mean") return lowerReduce(op);
    if (k == "concat") return lowerConcat(op);
    if (k == "embedding") {
      // The lookup is a DMA that reads the ids from HBM before the rows they name: ids an op computes (OPT's
      // and RoBERTa's positions from the mask) would be read before they are written, in the same kernel
      // invocation, so the network would not be the design (its simulation fetched rows at no ids at all).
      // A view of an input (input_ids.view(-1, S)) is the input's data.
      std::string ids = op.inputs[0];
      while (views_.count(ids)) ids = views_.at(ids).base;
      if (TensorRole role = info(ids).role; role != TensorRole::kInput && role != TensorRole::kWeight)
        throw UserError(formatError(op.loc, "unsupported: the embedding lookup '" + op.name + "' at ids '" +
                                                op.inputs[0] +
                                                "' that the graph computes (a lookup reads its ids from HBM: "
                                                "give them as an input)"));
      Kernel kern = kernel(op);
      kern.gather = true;
      kern.gatherTable = op.inputs[1];
      int64_t rows = product(info(op.inputs[0]).shape).eval(opt_.maxima);
      kern.gatherBytes = rows * outT.shape.back().eval() * std::max(1, dtypeBits(outT.dtype) / 8);
      StreamOrder o = canonicalOrder(outT, opt_.tile);
      kern.phases.push_back({o.trips, {out(op.output, o)}});
      add(std::move(kern));
      return;
    }
    // Elementwise (graph.h: elementwiseArity) and rope.
    Kernel kern = kernel(op);
    StreamOrder o = canonicalOrder(outT, opt_.tile);
    // The rows in the order of the first input of the output's shape, when that is another row order.
    if (op.op != "rope" && mayReorder(op.output))
      for (const auto& name : op.inputs)
        if (info(name).shape == outT.shape) {
          if (std::vector<int> dims = rowLayoutOf(name); !dims.empty()) {
            o = layoutOrder(outT, dims, opt_.tile);
          } else if (adoptsPanels(op)) {  // its inputs' column panels, all in the same order
            o = producedOrderOf(name);
            o.dtype = outT.dtype;
            for (const auto& other : op.inputs) {
              StreamOrder same = info(other).shape == outT.shape ? producedOrderOf(other) : o;
              same.dtype = o.dtype;
              if (same != o) throw std::logic_error("lowering: '" + op.name + "' reads panels in two orders");
            }
          }
          break;
        }
    KernelPhase ph{o.trips, {}};
    for (const auto& name : op.inputs) ph.ports.push_back(in(name, broadcastOrder(info(name), outT, o)));
    ph.ports.push_back(out(op.output, o));
    kern.phases.push_back(ph);
    kern.lanes = o.element.back();
    if (op.op == "rope" && o.trips.back().isConstant() && info(op.inputs[0]).shape.back().isConstant())
      kern.tableUnits = ropeTableUnits(ropeHeadDim(op, info(op.inputs[0]).shape.back().eval()), o.trips.back().eval());
    add(std::move(kern));
  }

  // Loop order: (batch.., m, n, k) reads a row of A once per output tile (the row sits in a converter)
  // and streams W once per row. With several rows and W in HBM, the schedule's row block B gives
  // (batch.., block, n, row, k): W streams once per block, a column panel held while the block's B rows
  // use it, A's block is held while the panels pass, and the output comes a block at a time, column
  // panel by column panel. A block of every row is (batch.., n, m, k): W read once.
  void lowerMatmul(const Op& op) {
    const TensorInfo& a = info(op.inputs[0]);
    const TensorInfo& w = info(op.inputs[1]);
    const TensorInfo& outT = info(op.output);
    bool transposeB = op.attrs.count("transpose_b") && std::get<int64_t>(op.attrs.at("transpose_b")) != 0;
    size_t rank = outT.shape.size();
    size_t batch = rank - 2;
    Expr K = a.shape.back(), M = outT.shape[rank - 2];
    StreamOrder canonical = canonicalOrder(outT, opt_.tile);
    int64_t Tk = tileFor(K, opt_.tile);
    MatmulSchedule schedule;
    if (auto it = schedules_.find(op.name); it != schedules_.end()) schedule = it->second;
    if (schedule.tk > 0) Tk = schedule.tk;
    // The output tile: the stream's, or a wider one (a multiple of it that divides N) whose tokens a split
    // adapter or the panels' converter gives their readers at the stream tile.
    StreamOrder wide = canonical;
    if (schedule.tn > 0 && schedule.tn != canonical.element.back()) {
      const Expr& N = outT.shape.back();
      if (!N.isConstant() || schedule.tn % canonical.element.back() != 0 || N.eval() % schedule.tn != 0)
        unsupported(op, "an output tile of " + std::to_string(schedule.tn) + " must be a multiple of " +
                            std::to_string(canonical.element.back()) + " that divides N (" + N.str() + ")");
      wide.element.back() = wide.steps.back() = schedule.tn;
      wide.trips.back() = Expr(N.eval() / schedule.tn);
    }
    int64_t Tn = wide.element.back();
    bool nOuter = writesPanels(g_, op);
    bool kOuter = streamsInput(g_, op);
    int64_t block = nOuter && schedule.rowBlock > 0 && schedule.rowBlock < M.eval() ? schedule.rowBlock : 0;
    if (block > 0 && M.eval() % block != 0)
      unsupported(op,
                  "a row block of " + std::to_string(block) + " does not divide its " + M.str() + " rows");
    // Written head by head (MatmulSchedule::byHeads): the column panels go to their readers as made,
    // through the reshape into heads (headsOrder).
    bool byHeads = schedule.byHeads;
    if (byHeads && (block != 0 || Tn != headDimOf(g_, op)))
      unsupported(op,
                  "written head by head, it needs every row in one block, its rows from HBM and an output "
                  "tile of a head (" +
                      std::to_string(headDimOf(g_, op)) + ")");
    auto append = appends_.find(op.inputs[1]);
    size_t pb = batch;  // the block loop, when blocked
    size_t pm = nOuter ? batch + 1 : batch, pn = nOuter ? batch : batch + 1, pk = batch + 2;
    if (kOuter) pn = batch + 2, pk = batch + 1;
    if (block > 0) pn = batch + 1, pm = batch + 2, pk = batch + 3;
    // The loop of each batch dim. A batched product over a right side made on chip whose A comes in
    // another order of (batch.., m) (rowLayoutOf: a transposed view of heads, rows outer) walks them in
    // that order, and its output streams in it.
    std::vector<size_t> batchLoop(batch);
    std::iota(batchLoop.begin(), batchLoop.end(), size_t{0});
    if (batch > 0 && !nOuter && !kOuter && append == appends_.end() && wide == canonical && a.shape.size() == rank &&
        w.role == TensorRole::kIntermediate && mayReorder(op.output))
      if (std::vector<int> dims = rowLayoutOf(op.inputs[0]); !dims.empty()) {
        for (size_t l = 0; l + 1 < rank; ++l) {
          if (static_cast<size_t>(dims[l]) == rank - 2) pm = l;
          else batchLoop[static_cast<size_t>(dims[l])] = l;
        }
        wide = layoutOrder(outT, dims, opt_.tile);
      }
    std::vector<Expr> trip(batch + (block > 0 ? 4 : 3), Expr(1));
    for (size_t i = 0; i < batch; ++i) trip[batchLoop[i]] = outT.shape[i];
    std::vector<int64_t> steps(trip.size(), 1);
    trip[pm] = block > 0 ? Expr(block) : M;
    trip[pn] = wide.trips.back();
    trip[pk] = tilesOf(K, Tk);
    steps[pn] = Tn;
    steps[pk] = Tk;
    if (block > 0) {
      trip[pb] = Expr(M.eval() / block);
      steps[pb] = block;
    }
    auto unit = [](size_t dims, size_t dim) {
      AffineExpr e{std::vector<int64_t>(dims, 0), 0};
      e.coeffs[dim] = 1;
      return e;
    };
    auto row = [&](size_t dims) {  // the row: the block's first row plus the row within it
      AffineExpr e = unit(dims, pm);
      if (block > 0) e.coeffs[pb] = 1;
      return e;
    };
    size_t nd = trip.size();
    auto order = [&](const std::string& dtype, std::vector<int64_t> element, std::vector<AffineExpr> results, size_t loops) {
      StreamOrder o;
      o.dtype = dtype;
      o.element = std::move(element);
      o.trips.assign(trip.begin(), trip.begin() + static_cast<std::ptrdiff_t>(loops));
      o.steps.assign(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(loops));
      o.map = AffineMap(static_cast<int>(loops), std::move(results));
      return o;
    };
    // A [batch.., M, K]: [1, Tk] tiles.
    std::vector<AffineExpr> ar;
    size_t aDims = kOuter ? batch + 2 : nd;  // k-outer: one A tile per k iteration
    for (size_t i = 0; i < batch; ++i) ar.push_back(unit(aDims, batchLoop[i]));
    ar.push_back(row(aDims));
    ar.push_back(unit(aDims, pk));
    std::vector<int64_t> ae(a.shape.size(), 1);
    ae.back() = Tk;
    // W [batch.., K, N], a shared [K, N], or [N, K] with transpose_b: [Tk, Tn] tiles; held causally
    // (Kernel::heldKeys): one key's row a (batch.., m) iteration, the key the row's index.
    Kernel::HeldKeys held = nOuter || kOuter || append != appends_.end() ? Kernel::HeldKeys::kNone
                                                                          : heldKeysOf(g_, op);
    std::vector<AffineExpr> wr;
    std::vector<int64_t> we(w.shape.size(), 1);
    size_t wLoops = nd;
    int wLevel = -2;
    size_t keyDim = (held == Kernel::HeldKeys::kAlongN) != transposeB ? rank - 1 : rank - 2;  // when held
    if (held != Kernel::HeldKeys::kNone) {
      wLoops = batch + 1;  // the (batch.., m) loops, in whichever order they run
      wLevel = static_cast<int>(batch);
      for (size_t i = 0; i < batch; ++i) wr.push_back(unit(wLoops, batchLoop[i]));
      for (size_t d = batch; d < rank; ++d) {
        wr.push_back(d == keyDim ? unit(wLoops, pm) : AffineExpr{std::vector<int64_t>(wLoops, 0), 0});
        if (d != keyDim) we[d] = w.shape[d].eval();
      }
    } else {
      if (w.shape.size() > 2)
        for (size_t i = 0; i < batch; ++i) wr.push_back(unit(nd, batchLoop[i]));
      wr.push_back(unit(nd, transposeB ? pn : pk));
      wr.push_back(unit(nd, transposeB ? pk : pn));
      we[w.shape.size() - 2] = transposeB ? Tn : Tk;
      we[w.shape.size() - 1] = transposeB ? Tk : Tn;
    }
    Kernel kern = kernel(op);
    kern.heldKeys = held;
    if (held != Kernel::HeldKeys::kNone) {
      int64_t other = w.shape[keyDim == rank - 1 ? rank - 2 : rank - 1].eval();
      kern.bufferBanks = other * std::min(held == Kernel::HeldKeys::kAlongN ? Tn : Tk, w.shape[keyDim].eval());
      for (size_t d = 0; d < batch && kern.heldGroup == 1; ++d)
        if (int64_t group = copiesGroup(g_, op.inputs[1], d); group > 1) {
          kern.heldGroup = group;
          kern.heldGroupDim = static_cast<int>(d);
        }
      // Heads outside the rows (attention written head by head): a head's rows are all done before the
      // next head's first, and row r reads keys 0 .. r, stored at its own and earlier rows of the same
      // head, so the buffer holds one head's keys, each head's overwriting the last's (the index of the
      // head dim divided by its extent: 0), copies of a head included.
      std::vector<size_t> heads;
      for (size_t d = 0; d < batch; ++d)
        if (w.shape[d].eval() > 1) heads.push_back(d);
      if (heads.size() == 1 && batchLoop[heads[0]] < pm) {
        kern.heldGroup = w.shape[heads[0]].eval();
        kern.heldGroupDim = static_cast<int>(heads[0]);
      }
      kern.bufferBytes = (product(w.shape).eval() / kern.heldGroup * dtypeBits(w.dtype) + 7) / 8;
    }
    const std::string& right = append == appends_.end() ? op.inputs[1] : append->second->inputs[0];
    KernelPhase ph{trip, {in(op.inputs[0], order(a.dtype, ae, ar, aDims), kOuter ? static_cast<int>(pk) : -2),
                          in(right, order(w.dtype, we, wr, wLoops), wLevel)}};
    ph.ports.back().restream = block > 0;
    // Made head by head, the matmul's rows from HBM are read again for each column panel, not held whole.
    ph.ports.front().restream = byHeads;
    size_t outLoops = nd - 1;                       // every loop but k
    int outLevel = static_cast<int>(outLoops) - 1;  // one output tile per (batch.., [block,] m, n)
    if (kOuter) {
      // Input streaming: phase 0 accumulates every output tile as A arrives, phase 1 writes them (with the
      // epilogue or bias) in canonical order, one per iteration.
      kern.phases.push_back(ph);
      ph = KernelPhase{wide.trips, {}};
      outLevel = -2;
      for (size_t i = 0; i < batch + 2; ++i) steps[i] = i == batch + 1 ? Tn : 1;
      for (size_t i = 0; i < batch + 2; ++i) trip[i] = wide.trips[i];
      pn = batch + 1;
    }
    KernelPort epiPort;      // the W4A8 epilogue's port, when a kernel of its own applies it
    int64_t shareIi = 0;
    if (opt_.quant == "w4a8" && w.dtype == "i4") {  // an int4 weight (pipeline.cpp, quantize)
      // W4A8 epilogue [N, 2] f32 (reference/quantized.h): each output channel's requantisation
      // multiplier and offset, the bias folded in; a [Tn, 2] tile per output token.
      std::string epi = epilogueTensor(op.name);
      kg_.tensors[epi] = TensorInfo{epi, {outT.shape.back(), Expr(2)}, "f32", TensorRole::kWeight, -1, op.loc};
      kg_.weights.push_back(epi);
      AffineExpr whole{std::vector<int64_t>(outLoops, 0), 0};
      KernelPort p = in(epi, order("f32", {Tn, 2}, {unit(outLoops, pn), whole}, outLoops), outLevel);
      // 8 bytes per output channel, read beside the weight all along: striped like it (an LM head's
      // [50304, 2] is 1.6% of its bytes, all on one channel unstriped: half as much again as a weight stripe).
      p.weight = true;
      p.restream = block > 0;
      // An output-stationary matmul finishes an output token every K / Tk iterations: a kernel of its own
      // applies the epilogue at that II (at most Tn), sharing its f32 multipliers and adders over it
      // (kEpilogueOp). Input streaming finishes every token at once, at the end: its epilogue stays inline.
      if (!kOuter && trip[pk].isConstant()) shareIi = std::min(Tn, trip[pk].eval());
      if (shareIi > 1) epiPort = p;
      else ph.ports.push_back(p);
    } else if (op.inputs.size() == 3) {  // bias [N]: a tile per output token
      ph.ports.push_back(
          in(op.inputs[2], order(info(op.inputs[2]).dtype, {Tn}, {unit(outLoops, pn)}, outLoops), outLevel));
      ph.ports.back().restream = block > 0;
    }
    // A tensor of the output's shape under another name (its panels, its wide tokens, its int32 sums).
    auto likeOutput = [&](const std::string& name, const std::string& dtype) {
      TensorInfo t = outT;
      t.name = name;
      t.dtype = dtype;
      kg_.tensors[name] = t;
      return name;
    };
    // A move kernel giving the output in canonical order from `from` (the panels, or the split wide tokens).
    auto moveInto = [&](const std::string& suffix, const std::string& from, int64_t lanes) {
      Kernel copy = kernel(op, suffix);
      copy.op = "move";
      copy.phases.push_back({canonical.trips, {in(from, canonical), out(op.output, canonical)}});
      copy.lanes = lanes;
      add(std::move(copy));
    };
    KernelPort outP;
    bool direct = false;  // panels out under the output's own name: no copy into rows
    // Wide output tokens that a reshape reads: the reshape needs its base in row-major tokens of the stream
    // tile, so the matmul writes `.wide` and a move kernel gives the output at the stream tile (the split
    // between them an adapter).
    bool splitAfter = !nOuter && wide.element.back() != canonical.element.back() &&
                      std::any_of(g_.graph->ops.begin(), g_.graph->ops.end(), [&](const Op& o) {
                        return o.op == "reshape" && o.inputs[0] == op.output;
                      });
    if (splitAfter) {
      outP = out(likeOutput(op.output + ".wide", outT.dtype), wide, outLevel);
    } else if (!nOuter) {
      outP = out(op.output, wide, outLevel);
    } else {  // panels out: read head by head through the reshape (headsOrder), by the elementwise op
              // that adopts them, or by a copy kernel reading them row-major (through a converter) for
              // consumers
      std::vector<AffineExpr> orr;
      for (size_t i = 0; i < batch; ++i) orr.push_back(unit(outLoops, i));
      orr.push_back(row(outLoops));
      orr.push_back(unit(outLoops, pn));
      // (adoptsPanels asks panelsOf of this op's output, which holds the output tile to the stream's.)
      const Op* reader = onlyReader(op.output);
      direct = byHeads || (reader && info(reader->output).shape == outT.shape && adoptsPanels(*reader));
      outP = out(direct ? op.output : likeOutput(op.output + ".panels", outT.dtype),
                 order(outT.dtype, wide.element, orr, outLoops), outLevel);
    }
    KernelPort accP = outP;  // with the epilogue apart: the int32 sums, in the order of the output
    if (shareIi > 1) {
      accP.tensor = likeOutput(outP.tensor + ".acc", "i32");
      accP.order.dtype = "i32";
    }
    ph.ports.push_back(accP);
    if (append != appends_.end()) {
      // The token's own row [1, H * X], a head's X values per iteration of the head loop (loop 0), put
      // into the right side's tiles where they cross the cache's last position.
      const Op& ap = *append->second;
      if (batch != 1 || kOuter) unsupported(op, "a right side from kv_append needs one batch loop, over heads");
      int axis = static_cast<int>(kvAppendAxis(ap));
      int64_t X = w.shape[static_cast<size_t>(3 - axis)].eval();
      StreamOrder row;
      row.dtype = info(ap.inputs[1]).dtype;
      row.element = {1, X};
      row.trips = {Expr(1), trip[0]};  // (row, head): the producer's row loop is shared, its tile loop split
      row.steps = {1, X};                // per head, so a converter holds one head's slice, not the row
      row.map = AffineMap(2, {AffineExpr{{1, 0}, 0}, AffineExpr{{0, 1}, 0}});
      kern.appendPort = static_cast<int>(ph.ports.size());
      kern.appendAxis = axis;
      ph.ports.push_back(in(ap.inputs[1], row, 0));
    }
    kern.phases.push_back(ph);
    kern.lanes = Tk * Tn;
    kern.arithmetic = w.dtype == "i4" && a.dtype == "i8" ? "w4a8" : a.dtype;
    add(std::move(kern));
    if (shareIi > 1) {  // the epilogue: a token of sums and a [Tn, 2] tile in, the output token out
      Kernel e = kernel(op, ".epi");
      e.op = kEpilogueOp;
      KernelPort sums = accP;
      sums.out = false;
      e.phases.push_back({std::vector<Expr>(trip.begin(), trip.begin() + static_cast<std::ptrdiff_t>(outLoops)),
                          {sums, epiPort, outP}});
      e.lanes = Tn;
      e.arithmetic = "f32";
      e.shareIi = shareIi;
      add(std::move(e));
    }
    if (splitAfter) moveInto(".split", op.output + ".wide", canonical.element.back());
    if (nOuter && !direct) moveInto(".rows", op.output + ".panels", canonical.element.back());
  }

  // Stats stream of a row op reading its rows in `xo`: one token per row, two f32 values (softmax: max and
  // sum of exponentials; layernorm: mean and variance; rmsnorm: mean square).
  StreamOrder rowStatsOrder(const StreamOrder& xo) {
    StreamOrder o = xo;
    o.dtype = "f32";
    o.element.assign(o.element.size(), 1);
    o.element.back() = 2;
    o.trips.back() = Expr(1);
    o.steps.back() = 2;
    return o;
  }

  // Rows in canonical order, or in the order their producer makes them (rowLayoutOf), the output in it too.
  void lowerRowOp(const Op& op) {
    const TensorInfo& x = info(op.inputs[0]);
    StreamOrder xo = canonicalOrder(x, opt_.tile), oo = canonicalOrder(info(op.output), opt_.tile);
    if (std::vector<int> dims = rowLayoutOf(op.inputs[0]); !dims.empty() && mayReorder(op.output)) {
      xo = layoutOrder(x, dims, opt_.tile);
      oo = layoutOrder(info(op.output), dims, opt_.tile);
    }
    int rowLevel = static_cast<int>(x.shape.size()) - 2;  // -1 for a single row
    std::string stats = op.output + ".stats";
    TensorInfo st{stats, x.shape, "f32", TensorRole::kIntermediate, -1, op.loc};
    st.shape.back() = Expr(2);
    kg_.tensors[stats] = st;
    StreamOrder so = rowStatsOrder(xo);
    Kernel s = kernel(op, ".stats");
    s.phases.push_back({xo.trips, {in(op.inputs[0], xo), out(stats, so, rowLevel)}});
    s.lanes = xo.element.back();
    add(std::move(s));
    Kernel a = kernel(op, ".apply");
    KernelPhase ph{xo.trips, {}};
    ph.ports.push_back(in(stats, so, rowLevel));
    KernelPort row = in(op.inputs[0], xo);
    // A row, plus what the stats kernel reads of the next row while its result for this one is in flight
    // (its latency, at most 64 cycles in the cost model).
    int64_t rowTokens = xo.trips.back().eval(opt_.maxima);
    row.keepTokens = rowTokens + std::max<int64_t>(rowTokens, 64);
    ph.ports.push_back(row);
    for (size_t i = 1; i < op.inputs.size(); ++i)
      ph.ports.push_back(in(op.inputs[i], broadcastOrder(info(op.inputs[i]), x, xo)));
    ph.ports.push_back(out(op.output, oo));
    a.phases.push_back(ph);
    a.lanes = xo.element.back();
    add(std::move(a));
  }

  void lowerReduce(const Op& op) {
    const TensorInfo& x = info(op.inputs[0]);
    StreamOrder xo = canonicalOrder(x, opt_.tile);
    Kernel k = kernel(op);
    StreamOrder o = canonicalOrder(info(op.output), 1);
    k.phases.push_back({xo.trips, {in(op.inputs[0], xo), out(op.output, o, static_cast<int>(x.shape.size()) - 2)}});
    k.lanes = xo.element.back();
    add(std::move(k));
  }

  // Transpose and slice: a copy kernel writing the output row-major, reading the input in the order that
  // gives (for a slice, the part it keeps; a converter in front holds what the order needs). A transpose of
  // a tensor made row-major over some order of its dims copies it in that order instead, its output in the
  // same loops (the dims permuted; the token on whichever dim it was), unless that order is not the
  // output's canonical one and the output must stream canonically (mayReorder): its readers, a batched
  // matmul or a row op, adopt the order or reorder it as they would have the input.
  void lowerRelayout(const Op& op) {
    const TensorInfo& outT = info(op.output);
    const TensorInfo& inT = info(op.inputs[0]);
    StreamOrder o = canonicalOrder(outT, opt_.tile);
    StreamOrder src = o;
    src.dtype = inT.dtype;
    auto produced = op.op == "transpose" ? producedOrder(op.inputs[0]) : std::nullopt;
    if (produced && !loopDims(*produced, inT).empty()) {
      auto perm = std::get<std::vector<int64_t>>(op.attrs.at("perm"));
      StreamOrder kept = *produced;
      std::vector<AffineExpr> results;
      for (size_t i = 0; i < perm.size(); ++i) {
        results.push_back(produced->map.results()[static_cast<size_t>(perm[i])]);
        kept.element[i] = produced->element[static_cast<size_t>(perm[i])];
      }
      kept.map = AffineMap(produced->map.numDims(), results);
      kept.dtype = outT.dtype;
      if (kept == o || mayReorder(op.output) || leavesInOrder(op.output, kept)) {
        Kernel k = kernel(op);
        k.phases.push_back({produced->trips, {in(op.inputs[0], *produced), out(op.output, kept)}});
        k.lanes = tokenElements(kept);
        add(std::move(k));
        return;
      }
    }
    if (op.op == "transpose") {  // output dim i is input dim perm[i]
      auto perm = std::get<std::vector<int64_t>>(op.attrs.at("perm"));
      std::vector<AffineExpr> results(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        src.element[static_cast<size_t>(perm[i])] = o.element[i];
        results[static_cast<size_t>(perm[i])] = o.map.results()[i];
      }
      src.map = AffineMap(o.map.numDims(), results);
    } else {  // slice: the same dims, offset along the axis
      int64_t rank = static_cast<int64_t>(inT.shape.size());
      int64_t axis = op.attrs.count("axis") ? std::get<int64_t>(op.attrs.at("axis")) : -1;
      if (axis < 0) axis += rank;
      std::vector<AffineExpr> results = o.map.results();
      results[static_cast<size_t>(axis)].constant += op.attrs.count("start") ? std::get<int64_t>(op.attrs.at("start")) : 0;
      src.map = AffineMap(o.map.numDims(), results);
    }
    Kernel k = kernel(op);
    k.phases.push_back({o.trips, {in(op.inputs[0], src), out(op.output, o)}});
    k.lanes = o.element.back();
    add(std::move(k));
  }

  void lowerConcat(const Op& op) {
    Kernel k = kernel(op);
    for (const auto& name : op.inputs) {
      StreamOrder o = canonicalOrder(info(name), opt_.tile);
      k.phases.push_back({o.trips, {in(name, o)}});
    }
    const TensorInfo& outT = info(op.output);
    StreamOrder o = canonicalOrder(outT, opt_.tile);
    k.phases.push_back({o.trips, {out(op.output, o)}});
    int64_t elements = 1;
    for (const auto& d : outT.shape) elements *= d.eval(opt_.maxima);
    k.bufferBytes = (elements * dtypeBits(outT.dtype) + 7) / 8;
    k.lanes = o.element.back();
    add(std::move(k));
  }

  struct View {  // a reshape: the same row-major stream under another shape
    std::string base;
  };
  const TypedGraph& g_;
  const CompileOptions& opt_;
  const Schedules& schedules_;
  KernelGraph kg_;
  std::map<std::string, View> views_;
  std::map<std::string, const Op*> appends_;  ///< kv_append outputs, applied by the matmul reading them
};

}  // namespace

KernelGraph lowerToKernels(const TypedGraph& graph, const CompileOptions& options,
                           const Schedules& schedules) {
  return Lowering(graph, options, schedules).run();
}

}  // namespace stc
