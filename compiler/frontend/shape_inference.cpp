// Shape inference. Each op's rule, with the graph's dims as expressions (a symbolic dim matches only the
// same expression):
//   matmul/linear  [..., M, K] x [..., K, N] -> [..., M, N]   (transpose_b: 1 takes the weight as [N, K];
//                  a 2-D right side is shared by every batch)
//   add sub mul div          numpy broadcasting              gelu silu exp tanh rope    shape of input 0
//   softmax layernorm rmsnorm  shape of input 0 (axis must be the last; the norms' scale and bias are [D])
//   transpose (perm)  permuted       reshape (shape)  same element count     concat (axis)  sizes added
//   slice (axis, start, end)  the axis cut to end - start
//   reduce_sum/max/mean (axis, keepdims=1)   embedding ids [S] x table [V, D] -> [S, D]
//   kv_append (axis)  cache [H, A, B] with room for one more position along axis 1 or 2, new [1, H * X]
//                  (X the cache's other dim) -> the cache's shape, its last position along axis the new row
#include "compiler/frontend/shape_inference.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "compiler/ir/itensor.h"

namespace stc {

std::string shapeText(const std::vector<Expr>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + shape[k].str();
  return s + "]";
}

std::set<std::string> TypedGraph::symbols() const {
  std::set<std::string> out;
  for (const auto& [name, t] : tensors)
    for (const auto& d : t.shape) out.insert(d.symbols().begin(), d.symbols().end());
  return out;
}

namespace {

int64_t intAttr(const Op& op, const char* key, int64_t fallback) {
  auto it = op.attrs.find(key);
  if (it == op.attrs.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  throw UserError(formatError(op.loc, "field '" + std::string(key) + "': op '" + op.name + "' expects an integer"));
}

std::vector<int64_t> listAttr(const Op& op, const char* key) {
  auto it = op.attrs.find(key);
  if (it == op.attrs.end())
    throw UserError(formatError(op.loc, "field '" + std::string(key) + "': op '" + op.name + "' (" + op.op +
                                            ") needs it"));
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  throw UserError(formatError(op.loc, "field '" + std::string(key) + "': op '" + op.name + "' expects a list of integers"));
}

bool isOne(const Expr& e) { return e.isConstant() && e.eval() == 1; }

// The dims' product when every dim is constant, else -1.
int64_t constantElements(const std::vector<Expr>& shape) {
  int64_t n = 1;
  for (const auto& d : shape) {
    if (!d.isConstant()) return -1;
    n = checkedMul(n, d.eval(), "the tensor " + shapeText(shape));
  }
  return n;
}

// Whether two shapes hold as many elements at every binding of their symbols. Without / or %, their
// products are polynomials in the m symbols of degree at most D (the symbols' occurrences in both): two
// that agree on a grid of D + 1 values per symbol are one polynomial, so they are compared there (modulo
// two primes), where the grid has at most 4096 points. With / or %, the symbolic dims must be the same
// ones, in any order, and the constant ones hold as many elements.
bool sameElements(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  std::set<std::string> symbols;
  int64_t degree = 0;
  bool divides = false;
  for (const auto* shape : {&a, &b})
    for (const Expr& d : *shape) {
      symbols.insert(d.symbols().begin(), d.symbols().end());
      const std::string& t = d.str();
      divides = divides || (!d.isConstant() && t.find_first_of("/%") != std::string::npos);
      for (size_t at = 0; at < t.size(); ++at)  // occurrences of a symbol: identifiers in the text
        if ((std::isalpha(static_cast<unsigned char>(t[at])) || t[at] == '_') &&
            (at == 0 || !(std::isalnum(static_cast<unsigned char>(t[at - 1])) || t[at - 1] == '_')))
          ++degree;
    }
  if (symbols.empty()) return constantElements(a) == constantElements(b);
  if (divides) {
    std::vector<std::string> x, y;
    std::vector<Expr> cx, cy;
    for (const Expr& d : a) (d.isConstant() ? cx.push_back(d) : x.push_back(d.str()));
    for (const Expr& d : b) (d.isConstant() ? cy.push_back(d) : y.push_back(d.str()));
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    return x == y && constantElements(cx) == constantElements(cy);
  }
  int64_t points = 1;
  for (size_t k = 0; k < symbols.size(); ++k) {
    points *= degree + 1;
    if (points > 4096) return false;
  }
  const std::vector<std::string> names(symbols.begin(), symbols.end());
  for (int64_t p = 0; p < points; ++p) {
    Bindings at;
    int64_t rest = p;
    for (const std::string& s : names) {
      at[s] = 2 + rest % (degree + 1);
      rest /= degree + 1;
    }
    for (int64_t modulus : {int64_t{1000000007}, int64_t{998244353}}) {
      auto product = [&](const std::vector<Expr>& shape) {
        int64_t acc = 1;
        for (const Expr& d : shape) acc = acc * (((d.eval(at) % modulus) + modulus) % modulus) % modulus;
        return acc;
      };
      if (product(a) != product(b)) return false;
    }
  }
  return true;
}

// The product of a shape's constant dims must stay below 2^40 elements.
void checkSize(const std::vector<Expr>& shape, const std::string& what) {
  int64_t n = 1;
  for (const auto& d : shape)
    if (d.isConstant()) n = checkedMul(n, d.eval(), what);
  if (n > kMaxNumber) throw UserError(what + " is too large (more than 2^40 elements)");
}

std::vector<Expr> inferOp(const Op& op, const std::vector<const TensorInfo*>& in) {
  auto bad = [&](const std::string& what) -> std::vector<Expr> {
    throw UserError(formatError(op.loc, "op '" + op.name + "' (" + op.op + "): " + what));
  };
  auto arity = [&](size_t lo, size_t hi) {
    if (in.size() < lo || in.size() > hi)
      bad("takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
          " inputs, got " + std::to_string(in.size()));
  };
  const std::string& k = op.op;
  if (k == "matmul" || k == "linear") {
    arity(2, 3);
    auto a = in[0]->shape, b = in[1]->shape;
    if (a.size() < 2 || b.size() < 2) return bad("needs operands of rank 2 or more, got " + shapeText(a) + " and " + shapeText(b));
    if (intAttr(op, "transpose_b", 0)) std::swap(b[b.size() - 1], b[b.size() - 2]);
    if (a.back() != b[b.size() - 2])
      return bad("inner dimensions differ: " + shapeText(in[0]->shape) + " x " + shapeText(in[1]->shape));
    if (b.size() > 2) {
      if (b.size() != a.size() || !std::equal(a.begin(), a.end() - 2, b.begin()))
        return bad("batch dimensions differ: " + shapeText(a) + " x " + shapeText(b));
    }
    std::vector<Expr> out(a.begin(), a.end() - 1);
    out.push_back(b.back());
    if (in.size() == 3 && (in[2]->shape.size() != 1 || in[2]->shape[0] != b.back()))
      return bad("bias must be [" + b.back().str() + "], got " + shapeText(in[2]->shape));
    return out;
  }
  if (elementwiseArity(k) == 2) {
    arity(2, 2);
    const auto &a = in[0]->shape, &b = in[1]->shape;
    size_t rank = std::max(a.size(), b.size());
    std::vector<Expr> out(rank, Expr(1));
    for (size_t i = 0; i < rank; ++i) {
      const Expr* x = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
      const Expr* y = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
      if (x && y && *x != *y && !isOne(*x) && !isOne(*y))
        return bad("shapes " + shapeText(a) + " and " + shapeText(b) + " do not broadcast");
      out[i] = (x && !isOne(*x)) ? *x : y ? *y : *x;
    }
    return out;
  }
  if (elementwiseArity(k) == 1 || k == "rope") {
    arity(1, 1);
    if (k == "rope" && op.attrs.count("theta")) {  // a number (not text) above 1
      double theta = numberAttr(op, "theta", 0.0);
      if (!(theta > 1) || !std::isfinite(theta)) bad("field 'theta': rope's base is a number above 1");
    }
    if (k == "rope" && op.attrs.count("head_dim")) {  // rotated in heads of head_dim, each in two halves
      double hd = numberAttr(op, "head_dim", 0.0);
      const Expr& width = in[0]->shape.back();
      if (!(hd >= 2) || hd != std::floor(hd) || static_cast<int64_t>(hd) % 2 != 0 ||
          (width.isConstant() && width.eval() % static_cast<int64_t>(hd) != 0)) {
        std::ostringstream got;
        got << hd;
        bad("field 'head_dim': rope's head_dim must be even and divide the last dimension (" + width.str() +
            "), got " + got.str());
      }
    }
    return in[0]->shape;
  }
  if (k == "softmax" || k == "layernorm" || k == "rmsnorm") {
    arity(1, 3);
    int64_t axis = intAttr(op, "axis", -1);
    int64_t rank = static_cast<int64_t>(in[0]->shape.size());
    if (axis != -1 && axis != rank - 1) bad("unsupported: only the last axis (got axis " + std::to_string(axis) + ")");
    if (auto c = op.attrs.find("causal"); c != op.attrs.end()) {
      const auto* text = std::get_if<std::string>(&c->second);
      const auto* number = std::get_if<int64_t>(&c->second);
      if (k != "softmax" || (text ? *text != "true" && *text != "false" : !number || (*number != 0 && *number != 1)))
        bad("field 'causal': a softmax's causal mask is 1 or true, 0 or false");
    }
    if (isCausal(op)) {
      if (rank < 2) bad("a causal softmax needs scores of rank 2 or more, got " + shapeText(in[0]->shape));
      const Expr &R = in[0]->shape[static_cast<size_t>(rank - 2)], &K = in[0]->shape.back();
      if (R.isConstant() && K.isConstant() && R.eval() > K.eval())
        bad("a causal softmax needs at least as many keys as rows, got " + shapeText(in[0]->shape));
    }
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i]->shape.size() != 1 || in[i]->shape[0] != in[0]->shape.back())
        bad("scale and bias must be [" + in[0]->shape.back().str() + "], got " + shapeText(in[i]->shape));
    return in[0]->shape;
  }
  if (k == "transpose") {
    arity(1, 1);
    auto perm = listAttr(op, "perm");
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != in[0]->shape.size())
        return bad("perm must be a permutation of 0.." + std::to_string(in[0]->shape.size() - 1));
    std::vector<Expr> out;
    for (int64_t p : perm) out.push_back(in[0]->shape[static_cast<size_t>(p)]);
    return out;
  }
  if (k == "reshape") {  // shape: the sizes, constants or expressions over symbols ([seq, 16, 64])
    arity(1, 1);
    std::vector<Expr> out;
    try {
      out = sizesOf(op, "shape");
    } catch (const UserError& e) {
      bad(e.what());
    }
    for (const Expr& d : out)
      if (d.isConstant() && d.eval() < 1) bad("reshape dims must be positive, got " + d.str());
    bool same = false;
    try {
      same = sameElements(in[0]->shape, out);
    } catch (const UserError& e) {
      bad(e.what());
    }
    if (!same) bad("cannot reshape " + shapeText(in[0]->shape) + " to " + shapeText(out));
    return out;
  }
  if (k == "slice") {  // axis, start, end: elements [start, end) of one axis
    arity(1, 1);
    int64_t rank = static_cast<int64_t>(in[0]->shape.size());
    int64_t axis = intAttr(op, "axis", -1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) bad("axis out of range");
    const Expr& size = in[0]->shape[static_cast<size_t>(axis)];
    if (!size.isConstant()) bad("unsupported: slicing a symbolic dimension");
    int64_t start = intAttr(op, "start", 0), end = intAttr(op, "end", size.eval());
    if (start < 0 || end > size.eval() || start >= end)
      bad("slice [" + std::to_string(start) + ", " + std::to_string(end) + ") is not inside dimension " + size.str());
    std::vector<Expr> out = in[0]->shape;
    out[static_cast<size_t>(axis)] = Expr(end - start);
    return out;
  }
  if (k == "concat") {
    if (in.empty()) bad("needs at least one input");
    int64_t rank = static_cast<int64_t>(in[0]->shape.size());
    int64_t axis = intAttr(op, "axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) bad("axis " + std::to_string(axis) + " out of range");
    std::vector<Expr> out = in[0]->shape;
    int64_t total = 0;
    for (const TensorInfo* t : in) {
      for (int64_t i = 0; i < rank; ++i)
        if (i != axis && (static_cast<int64_t>(t->shape.size()) != rank || t->shape[static_cast<size_t>(i)] != out[static_cast<size_t>(i)]))
          bad("inputs differ outside the concat axis: " + shapeText(in[0]->shape) + " and " + shapeText(t->shape));
      if (!t->shape[static_cast<size_t>(axis)].isConstant()) bad("unsupported: concat along a symbolic dimension");
      total += t->shape[static_cast<size_t>(axis)].eval();
    }
    out[static_cast<size_t>(axis)] = Expr(total);
    return out;
  }
  if (k == "kv_append") {
    arity(2, 2);
    const std::vector<Expr>& cache = in[0]->shape;
    int64_t axis = kvAppendAxis(op);
    if (cache.size() != 3) bad("the cache must be [heads, A, B], got " + shapeText(cache));
    if (axis != 1 && axis != 2) bad("axis " + std::to_string(axis) + " must be 1 or 2 (a cache position)");
    const Expr& other = cache[static_cast<size_t>(3 - axis)];
    if (!cache[0].isConstant() || !other.isConstant())
      bad("the cache's heads and its per-position dim must be constant, got " + shapeText(cache));
    int64_t row = cache[0].eval() * other.eval();
    const std::vector<Expr>& given = in[1]->shape;
    if (given.size() != 2 || given[0] != Expr(1) || given[1] != Expr(row))
      bad("the new row must be [1, " + std::to_string(row) + "] (heads times " + other.str() + "), got " +
          shapeText(in[1]->shape));
    return cache;
  }
  if (k == "reduce_sum" || k == "reduce_max" || k == "reduce_mean") {
    arity(1, 1);
    int64_t rank = static_cast<int64_t>(in[0]->shape.size());
    int64_t axis = intAttr(op, "axis", -1);
    if (axis != -1 && axis != rank - 1) bad("unsupported: only the last axis (got axis " + std::to_string(axis) + ")");
    std::vector<Expr> out = in[0]->shape;
    if (intAttr(op, "keepdims", 1)) out.back() = Expr(1);
    else out.pop_back();
    if (out.empty()) out.push_back(Expr(1));
    return out;
  }
  if (k == "embedding") {
    arity(2, 2);
    if (in[1]->shape.size() != 2) bad("the table must be [V, D], got " + shapeText(in[1]->shape));
    std::vector<Expr> out = in[0]->shape;
    out.push_back(in[1]->shape[1]);
    return out;
  }
  return bad("unsupported op");
}

}  // namespace

TypedGraph inferShapes(const Graph& graph) {
  verifyGraph(graph).throwIfAny();
  TypedGraph tg;
  tg.graph = &graph;
  for (const auto* list : {&graph.inputs, &graph.weights})
    for (const auto& t : *list) {
      if (t.shape.empty()) throw UserError(formatError(t.loc, "field 'shape': tensor '" + t.name + "' needs at least one dimension"));
      checkSize(t.shape, formatError(t.loc, "field 'shape': tensor '" + t.name + "' " + shapeText(t.shape)));
    }
  for (const auto& t : graph.inputs) tg.tensors[t.name] = {t.name, t.shape, t.dtype, TensorRole::kInput, -1, t.loc};
  for (const auto& t : graph.weights) tg.tensors[t.name] = {t.name, t.shape, t.dtype, TensorRole::kWeight, -1, t.loc};
  std::string errors;  // every op's problem, one per line
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const Op& op = graph.ops[i];
    std::vector<const TensorInfo*> in;
    bool ready = true;
    for (const auto& name : op.inputs) {
      auto it = tg.tensors.find(name);
      if (it == tg.tensors.end()) ready = false;  // an earlier op failed
      else in.push_back(&it->second);
    }
    if (!ready) continue;
    try {
      for (const TensorInfo* t : in)
        if (t->shape.empty()) throw UserError(formatError(op.loc, "op '" + op.name + "': input '" + t->name + "' has no dimensions"));
      std::vector<Expr> shape = inferOp(op, in);
      if (shape.empty())  // a scalar (a squeeze of [1]): a stream's tokens run along a last dimension
        throw UserError(formatError(
            op.loc, "op '" + op.name + "': its result has no dimensions (a scalar); keep a dimension of 1"));
      checkSize(shape, formatError(op.loc, "op '" + op.name + "': its result " + shapeText(shape)));
      // Activations keep the dtype of the first input that is not a weight (or of input 0); an embedding's
      // rows the table's, whatever integer type its ids have.
      std::string dtype = in.front()->dtype;
      for (const TensorInfo* t : in)
        if (t->role != TensorRole::kWeight) {
          dtype = t->dtype;
          break;
        }
      if (op.op == "embedding") dtype = in.at(1)->dtype;
      // A cache with the new row in its last position is still the cache in HBM, patched as it streams.
      TensorRole role = op.op == "kv_append" ? in.front()->role : TensorRole::kIntermediate;
      tg.tensors[op.output] = {op.output, shape, dtype, role, static_cast<int>(i), op.loc};
    } catch (const UserError& e) {
      errors += (errors.empty() ? "" : "\n") + std::string(e.what());
    }
  }
  if (!errors.empty()) throw UserError(errors);
  for (const auto& out : graph.outputs) tg.tensors[out].role = TensorRole::kOutput;
  return tg;
}

}  // namespace stc
