// ONNX import, the only file that includes ONNX.
//
//   ModelProto --shape inference--> values with shapes (dims or named symbols)
//     initializers and Constant nodes: constant tensors; a node whose inputs are all constant is folded
//     (Shape of a known shape, Gather, Unsqueeze, Squeeze, Concat, Reshape, Cast, Not, ConstantOfShape,
//     Equal, Where, Expand, Range, Slice, Split, Trilu, arithmetic) and stays a constant; shape arguments
//     folded so are handed back to shape inference as initializers, and the import runs again
//     (foldShapeArguments); between rounds an If whose condition folded is inlined, and torch's Loop for a
//     repeat_interleave of one constant count becomes Unsqueeze, Expand and Reshape
//     the rest: dynamic nodes; decomposed patterns are recognised first:
//       LayerNorm  ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul scale, Add bias
//       RMSNorm    Pow 2, ReduceMean, Add eps, Sqrt, (Div 1 /) , Mul x, Mul scale
//       GELU       Div sqrt2, Erf, Add 1, Mul x, Mul 0.5 | x^3 (Pow 3 or Mul x Mul x x), Mul, Add x, Mul, Tanh,
//                  Add 1, Mul (0.5)x
//       SiLU       Sigmoid, Mul x
//       causal mask  Where or Add of a constant of -inf (<= -1e4) past each row, before a Softmax
//     then each maps to a graph op (MatMul, Gemm, the elementwise ops, Softmax, Transpose, Reshape, Gather
//     as an embedding, Identity, ...); constants they read become weights, their values (as f32) kept in
//     graph.values unless the file does not hold them (external data, an unread dtype); last, copies of
//     KV heads (repeat_kv, repeat_interleave) become grouped-query attention.
#include "compiler/frontend/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/itensor.h"
#include "compiler/ir/yaml_io.h"

namespace stc {

namespace {

constexpr int kMinOpset = 13, kMaxOpset = 17;
constexpr int64_t kMaxFoldedValues = int64_t{1} << 28;  // 2 GiB of doubles (Importer::checkFoldedSize)

struct Const {
  std::vector<int64_t> dims;
  std::vector<double> v;
  bool known = true;  // false when v is a stand-in of zeros: the file does not hold the values here
  int64_t count() const {
    int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
};

std::string dtypeOf(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return "f32";
    case onnx::TensorProto::FLOAT16: return "f16";
    case onnx::TensorProto::BFLOAT16: return "bf16";
    case onnx::TensorProto::INT8: return "i8";
    case onnx::TensorProto::INT16: return "i16";
    case onnx::TensorProto::INT32: return "i32";
    case onnx::TensorProto::INT64: return "i64";
    case onnx::TensorProto::BOOL: return "i1";
    default: return "f32";
  }
}

// IEEE 754 half-precision bits as a number.
double halfToDouble(uint16_t h) {
  int exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
  double magnitude = exponent == 0    ? std::ldexp(fraction, -24)  // subnormal
                     : exponent == 31 ? (fraction ? NAN : INFINITY)
                                      : std::ldexp(fraction + 1024, exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

// bfloat16 bits: the high half of an f32.
double bfloat16ToDouble(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

Const fromTensor(const onnx::TensorProto& t) {
  Const c;
  for (auto d : t.dims()) c.dims.push_back(d);
  int64_t n = c.count();
  const std::string& raw = t.raw_data();
  auto cast = [](auto x) { return static_cast<double>(x); };
  // raw_data holds the values little-endian, which memcpy reads as is on the little-endian hosts we run on.
  auto fromRaw = [&](auto sample, auto convert) {
    using T = decltype(sample);
    for (int64_t i = 0; i < n && static_cast<size_t>(i + 1) * sizeof(T) <= raw.size(); ++i) {
      T x;
      std::memcpy(&x, raw.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
      c.v.push_back(convert(x));
    }
  };
  // Types narrower than 32 bits sit one to an element of int32_data (16-bit floats as their bits).
  auto from16 = [&](double (*convert)(uint16_t)) {
    if (!raw.empty()) fromRaw(uint16_t{}, convert);
    else for (auto x : t.int32_data()) c.v.push_back(convert(static_cast<uint16_t>(x)));
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    c.v.assign(static_cast<size_t>(n), 0.0);  // shapes are all this front end needs from such a file
    c.known = false;
    return c;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (!raw.empty()) fromRaw(float{}, cast);
      else for (float x : t.float_data()) c.v.push_back(x);
      break;
    case onnx::TensorProto::DOUBLE:
      if (!raw.empty()) fromRaw(double{}, cast);
      else for (double x : t.double_data()) c.v.push_back(x);
      break;
    case onnx::TensorProto::FLOAT16: from16(halfToDouble); break;
    case onnx::TensorProto::BFLOAT16: from16(bfloat16ToDouble); break;
    case onnx::TensorProto::INT64:
      if (!raw.empty()) fromRaw(int64_t{}, cast);
      else for (auto x : t.int64_data()) c.v.push_back(static_cast<double>(x));
      break;
    case onnx::TensorProto::UINT64:
      if (!raw.empty()) fromRaw(uint64_t{}, cast);
      else for (auto x : t.uint64_data()) c.v.push_back(static_cast<double>(x));
      break;
    case onnx::TensorProto::UINT32:
      if (!raw.empty()) fromRaw(uint32_t{}, cast);
      else for (auto x : t.uint64_data()) c.v.push_back(static_cast<double>(x));
      break;
    case onnx::TensorProto::INT32:
      if (!raw.empty()) fromRaw(int32_t{}, cast);
      else for (auto x : t.int32_data()) c.v.push_back(x);
      break;
    case onnx::TensorProto::INT16:
      if (!raw.empty()) fromRaw(int16_t{}, cast);
      else for (auto x : t.int32_data()) c.v.push_back(x);
      break;
    case onnx::TensorProto::UINT16:
      if (!raw.empty()) fromRaw(uint16_t{}, cast);
      else for (auto x : t.int32_data()) c.v.push_back(x);
      break;
    case onnx::TensorProto::INT8:
      if (!raw.empty()) fromRaw(int8_t{}, cast);
      else for (auto x : t.int32_data()) c.v.push_back(x);
      break;
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::UINT8:
      if (!raw.empty()) fromRaw(uint8_t{}, cast);
      else for (auto x : t.int32_data()) c.v.push_back(x);
      break;
    default:  // strings, complex numbers, 8-bit floats
      c.v.assign(static_cast<size_t>(n), 0.0);
      c.known = false;
  }
  if (static_cast<int64_t>(c.v.size()) != n) {  // a tensor whose data is short of its dims
    c.v.resize(static_cast<size_t>(n), 0.0);
    c.known = false;
  }
  return c;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// A folded constant of more than kMaxFoldedValues values where its inputs hold fewer: a mask, a table or
// positions made from sizes that large stop the import by name (the node's, where visitOrRecord lists it),
// rather than the host's memory (Importer::checkFoldedSize). The count in double: dims may overflow int64.
void checkFoldedCount(const std::string& shape, double count, double largestInput = 0) {
  if (count <= static_cast<double>(kMaxFoldedValues) || count <= largestInput) return;
  std::ostringstream values;
  values << std::setprecision(3) << count;
  throw UserError("a constant " + shape + " of " + values.str() + " values, more than the " +
                  std::to_string(kMaxFoldedValues) +
                  " the import folds (an input's axis that large, or a dynamic axis fixed that large)");
}
void checkFoldedCount(const std::vector<int64_t>& dims, double largestInput = 0) {
  double count = 1;
  for (int64_t d : dims) count *= static_cast<double>(d);
  checkFoldedCount(dimsText(dims), count, largestInput);
}

// Running sums of a table along `axis` (ONNX CumSum: exclusive leaves each element out of its own sum,
// reverse sums from the end); false for an axis the table does not have.
bool cumsumConst(const Const& x, int64_t axis, bool exclusive, bool reverse, Const& out) {
  int64_t rank = static_cast<int64_t>(x.dims.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || static_cast<int64_t>(x.v.size()) != x.count()) return false;
  int64_t size = x.dims[static_cast<size_t>(axis)], outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= x.dims[static_cast<size_t>(a)];
  for (int64_t a = axis + 1; a < rank; ++a) inner *= x.dims[static_cast<size_t>(a)];
  out = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < size; ++k) {
        int64_t j = reverse ? size - 1 - k : k;
        size_t at = static_cast<size_t>((o * size + j) * inner + i);
        double v = x.v[at];
        if (exclusive) out.v[at] = sum;
        sum += v;
        if (!exclusive) out.v[at] = sum;
      }
    }
  return true;
}

// ONNX GatherElements of tables: out[p] = data[p with p[axis] = indices[p]] (a negative index counts from
// the end); false where the ranks differ, an index falls outside, or another axis of indices is longer.
bool gatherElementsConst(const Const& data, const Const& indices, int64_t axis, Const& out) {
  size_t rank = data.dims.size();
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (indices.dims.size() != rank || axis < 0 || axis >= static_cast<int64_t>(rank) ||
      static_cast<int64_t>(data.v.size()) != data.count() ||
      static_cast<int64_t>(indices.v.size()) != indices.count())
    return false;
  for (size_t a = 0; a < rank; ++a)
    if (static_cast<int64_t>(a) != axis && indices.dims[a] > data.dims[a]) return false;
  out = Const{indices.dims, {}};
  out.v.reserve(indices.v.size());
  std::vector<int64_t> at(rank, 0);
  for (size_t flat = 0; flat < indices.v.size(); ++flat) {
    int64_t i = static_cast<int64_t>(indices.v[flat]), size = data.dims[static_cast<size_t>(axis)];
    if (i < 0) i += size;
    if (i < 0 || i >= size) return false;
    int64_t src = 0;
    for (size_t a = 0; a < rank; ++a)
      src = src * data.dims[a] + (static_cast<int64_t>(a) == axis ? i : at[a]);
    out.v.push_back(data.v[static_cast<size_t>(src)]);
    for (size_t a = rank; a-- > 0;)  // the next position, row-major
      if (++at[a] < indices.dims[a])
        break;
      else
        at[a] = 0;
  }
  return true;
}

// Combines an update into an element as ScatterND's and ScatterElements' `reduction` says (none
// replaces); false for a reduction ONNX does not define.
bool scatterInto(double& into, double update, const std::string& reduction) {
  if (reduction == "none")
    into = update;
  else if (reduction == "add")
    into += update;
  else if (reduction == "mul")
    into *= update;
  else if (reduction == "max")
    into = std::max(into, update);
  else if (reduction == "min")
    into = std::min(into, update);
  else
    return false;
  return true;
}

// ONNX ScatterND of tables (a mask written by slice assignment, BLOOM's `mask[:, past:] = ...`): each
// index tuple of `indices`' last axis names a slice of `data` that the matching block of `updates`
// replaces or is combined into; false when an index falls outside data or the shapes do not agree.
bool scatterNDConst(const Const& data, const Const& indices, const Const& updates,
                    const std::string& reduction, Const& out) {
  if (indices.dims.empty() || static_cast<int64_t>(data.v.size()) != data.count() ||
      static_cast<int64_t>(indices.v.size()) != indices.count() ||
      static_cast<int64_t>(updates.v.size()) != updates.count())
    return false;
  size_t depth = static_cast<size_t>(indices.dims.back()), lead = indices.dims.size() - 1;
  if (depth > data.dims.size()) return false;
  // The updates' dims: the indices' but the last, then the data's past the indexed axes.
  std::vector<int64_t> expected(indices.dims.begin(), indices.dims.end() - 1);
  expected.insert(expected.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(depth), data.dims.end());
  if (updates.dims != expected) return false;
  int64_t slice = 1, tuples = 1;
  for (size_t a = depth; a < data.dims.size(); ++a) slice *= data.dims[a];
  for (size_t a = 0; a < lead; ++a) tuples *= indices.dims[a];
  out = data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = 0;
    for (size_t a = 0; a < depth; ++a) {
      int64_t i = static_cast<int64_t>(indices.v[static_cast<size_t>(t) * depth + a]), size = data.dims[a];
      if (i < 0) i += size;
      if (i < 0 || i >= size) return false;
      at = at * size + i;
    }
    for (int64_t e = 0; e < slice; ++e)
      if (!scatterInto(out.v[static_cast<size_t>(at * slice + e)],
                       updates.v[static_cast<size_t>(t * slice + e)], reduction))
        return false;
  }
  return true;
}

// ONNX ScatterElements of tables: element e of `updates` goes to data at e's own position with its
// `axis` coordinate replaced by indices[e]; false when an index falls outside data or shapes disagree.
bool scatterElementsConst(const Const& data, const Const& indices, const Const& updates, int64_t axis,
                          const std::string& reduction, Const& out) {
  int64_t rank = static_cast<int64_t>(data.dims.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || indices.dims != updates.dims ||
      static_cast<int64_t>(indices.dims.size()) != rank ||
      static_cast<int64_t>(data.v.size()) != data.count() ||
      static_cast<int64_t>(indices.v.size()) != indices.count() ||
      static_cast<int64_t>(updates.v.size()) != updates.count())
    return false;
  out = data;
  for (int64_t flat = 0; flat < indices.count(); ++flat) {
    int64_t rem = flat, at = 0, stride = 1;
    for (int64_t a = rank; a-- > 0;) {
      int64_t i = rem % indices.dims[static_cast<size_t>(a)], size = data.dims[static_cast<size_t>(a)];
      rem /= indices.dims[static_cast<size_t>(a)];
      if (a == axis) {
        i = static_cast<int64_t>(indices.v[static_cast<size_t>(flat)]);
        if (i < 0) i += size;
      }
      if (i < 0 || i >= size) return false;
      at += i * stride;
      stride *= size;
    }
    if (!scatterInto(out.v[static_cast<size_t>(at)], updates.v[static_cast<size_t>(flat)], reduction))
      return false;
  }
  return true;
}

// The numpy broadcast of shapes a and b; none when they do not broadcast.
std::optional<std::vector<int64_t>> broadcastDims(const std::vector<int64_t>& a,
                                                  const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Trilu's mask of a [rows, cols] matrix: 1 where the upper (j - i >= k) or lower (j - i <= k) triangle
// keeps the value, 0 elsewhere.
Const triangle(int64_t rows, int64_t cols, int64_t k, bool upper) {
  Const kept;
  kept.dims = {rows, cols};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) kept.v.push_back((upper ? j - i >= k : j - i <= k) ? 1.0 : 0.0);
  return kept;
}

// A matrix whose product picks values: S [n, sources.size()], 1 at [sources[j]][j], so that column j
// copies value sources[j] (torch.flip, a Pad of edge, reflect or wrap).
Const selection(int64_t n, const std::vector<int64_t>& sources) {
  Const pick;
  pick.dims = {n, static_cast<int64_t>(sources.size())};
  pick.v.assign(static_cast<size_t>(n) * sources.size(), 0.0);
  for (size_t j = 0; j < sources.size(); ++j)
    pick.v[static_cast<size_t>(sources[j]) * sources.size() + j] = 1.0;
  return pick;
}

// The permutation that swaps `axis` with the last of `rank` axes: an op over the last axis applied along
// another between two transposes by it (its own inverse).
std::vector<int64_t> swapWithLast(int64_t rank, int64_t axis) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::swap(perm[static_cast<size_t>(axis)], perm.back());
  return perm;
}

// Numpy broadcasting of two constants through f; a UserError when their shapes do not broadcast.
Const broadcast(const Const& a, const Const& b, const std::function<double(double, double)>& f) {
  std::optional<std::vector<int64_t>> dims = broadcastDims(a.dims, b.dims);
  if (!dims)
    throw UserError("constants of shapes " + dimsText(a.dims) + " and " + dimsText(b.dims) +
                    " do not broadcast");
  checkFoldedCount(*dims, static_cast<double>(std::max(a.v.size(), b.v.size())));
  size_t rank = dims->size();
  Const out;
  out.known = a.known && b.known;
  out.dims = *dims;
  auto dimAt = [&](const Const& c, size_t i) {
    return i < rank - c.dims.size() ? int64_t{1} : c.dims[i - (rank - c.dims.size())];
  };
  int64_t n = out.count();
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t ia = 0, ib = 0, sa = 1, sb = 1, rem = flat;
    for (size_t i = rank; i-- > 0;) {
      int64_t idx = rem % out.dims[i];
      rem /= out.dims[i];
      int64_t da = dimAt(a, i), db = dimAt(b, i);
      ia += (da == 1 ? 0 : idx) * sa;
      ib += (db == 1 ? 0 : idx) * sb;
      sa *= da;
      sb *= db;
    }
    out.v.push_back(f(a.v.empty() ? 0 : a.v[static_cast<size_t>(ia)], b.v.empty() ? 0 : b.v[static_cast<size_t>(ib)]));
  }
  return out;
}

// Whether every row of c (along its last axis: a softmax's keys) has an entry for which pred holds.
bool everyRowHas(const Const& c, const std::function<bool(double)>& pred) {
  int64_t row = c.dims.empty() ? 1 : c.dims.back();
  for (int64_t start = 0; row > 0 && start < c.count(); start += row)
    if (std::none_of(c.v.begin() + start, c.v.begin() + start + row, pred)) return false;
  return true;
}

// x with its axes permuted (perm empty: reversed); false when x's values are not all there.
bool transposeConst(const Const& x, std::vector<int64_t> perm, Const& out) {
  size_t rank = x.dims.size();
  if (perm.empty())
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != rank || static_cast<int64_t>(x.v.size()) != x.count()) return false;
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.dims[d];
  out.dims.clear();
  std::vector<char> seen(rank, 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]++) return false;
    out.dims.push_back(x.dims[static_cast<size_t>(p)]);
  }
  out.known = x.known;
  out.v.clear();
  for (int64_t flat = 0; flat < out.count(); ++flat) {
    int64_t rem = flat, src = 0;
    for (size_t d = rank; d-- > 0;) {
      src += rem % out.dims[d] * strides[static_cast<size_t>(perm[d])];
      rem /= out.dims[d];
    }
    out.v.push_back(x.v[static_cast<size_t>(src)]);
  }
  return true;
}

// ONNX MatMul of two constants (numpy's matmul: a 1-D operand promoted to a matrix and its unit dim
// dropped again, the batch dims broadcast); false when the dims do not agree or values are missing.
bool matmulConst(const Const& a, const Const& b, Const& out) {
  if (a.dims.empty() || b.dims.empty() || static_cast<int64_t>(a.v.size()) != a.count() ||
      static_cast<int64_t>(b.v.size()) != b.count())
    return false;
  std::vector<int64_t> ad = a.dims, bd = b.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
  if (bd[bd.size() - 2] != K) return false;
  // The batch dims broadcast as an elementwise op's.
  std::vector<int64_t> ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  auto dimAt = [&](const std::vector<int64_t>& d, size_t i) {
    return i < rank - d.size() ? int64_t{1} : d[i - (rank - d.size())];
  };
  out = Const{};
  out.known = a.known && b.known;
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = dimAt(ab, i), y = dimAt(bb, i);
    if (x != y && x != 1 && y != 1) return false;
    out.dims.push_back(x == 1 ? y : x);
  }
  for (int64_t flat = 0; flat < out.count(); ++flat) {
    int64_t rem = flat, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t i = rank; i-- > 0;) {
      int64_t idx = rem % out.dims[i];
      rem /= out.dims[i];
      ia += (dimAt(ab, i) == 1 ? 0 : idx) * sa;
      ib += (dimAt(bb, i) == 1 ? 0 : idx) * sb;
      sa *= dimAt(ab, i);
      sb *= dimAt(bb, i);
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc +=
              a.v[static_cast<size_t>((ia * M + m) * K + k)] * b.v[static_cast<size_t>((ib * K + k) * N + j)];
        out.v.push_back(acc);
      }
  }
  if (a.dims.size() > 1) out.dims.push_back(M);
  if (b.dims.size() > 1) out.dims.push_back(N);
  return true;
}

int64_t intAttr(const onnx::NodeProto& n, const char* name, int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

// A float element type: float32, double, float16 or bfloat16.
bool isFloatType(int64_t type) {
  return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE ||
         type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::BFLOAT16;
}

std::string stringAttr(const onnx::NodeProto& n, const char* name, const std::string& fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.s();
  return fallback;
}

double floatAttr(const onnx::NodeProto& n, const char* name, double fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return static_cast<double>(a.f());
  return fallback;
}

std::vector<int64_t> intsAttr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

std::string symbolName(const std::string& param) {
  std::string s;
  for (char c : param) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "d_" + s;
  return s;
}

class Importer {
 public:
  /// torchRepeats: torch's repeat_interleave Loops whose ONNX result is not torch's shape are imported at
  /// torch's (see importOnnx).
  Importer(std::string path, std::map<std::string, int64_t> dims, bool torchRepeats = false)
      : path_(std::move(path)), dims_(std::move(dims)), torchRepeats_(torchRepeats) {}

  Graph run() {
    load();
    // A shape folded in one round can make another computable (an export with dynamic axes computes a
    // reshape's target from the shape of another computed reshape): rounds until none folds more.
    for (int round = 0; round < 16; ++round) {
      for (const auto& t : model_.graph().initializer()) consts_[t.name()] = fromTensor(t);
      collectModelValues();
      if (!foldShapeArguments()) break;
    }
    for (const auto& t : model_.graph().initializer()) consts_[t.name()] = fromTensor(t);
    for (const auto& in : model_.graph().input())
      if (!consts_.count(in.name())) {
        graph_.inputs.push_back({in.name(), shapeOf(in.name()), dtypeOf(in.type().tensor_type().elem_type()), loc()});
      }
    collectModelValues();
    for (const auto& node : model_.graph().node()) visitOrRecord(node);
    if (!unsupported_.empty()) throw unsupportedError();
    bypassFloatCasts();
    dropNeutralOperands();
    dropEmptyOperands();
    recognisePatterns();
    mergeViews();
    for (size_t i = 0; i < dyn_.size(); ++i)
      if (!dyn_[i].dead) emit(dyn_[i]);
    if (!unsupported_.empty()) throw unsupportedError();
    foldInterleavedKvHeads();
    shareRepeatedKvHeads();
    foldBroadcastBatches();
    sliceThroughConcats();
    for (const auto& out : model_.graph().output()) graph_.outputs.push_back(resolve(out.name()));
    noteOffRepeats();
    graph_.name = model_.graph().name().empty() ? "onnx_model" : symbolName(model_.graph().name());
    graph_.loc = loc();
    return std::move(graph_);
  }

  /// The model's dynamic axes left symbolic (none bound by `dims`), after load.
  const std::set<std::string>& freeAxes() const { return freeAxes_; }
  /// What each repeat_interleave Loop the import rewrote whose ONNX result is not torch's shape made,
  /// against torch's result (none: empty).
  std::vector<std::string> offRepeats() const {
    std::vector<std::string> notes;
    for (const OffRepeat& r : offRepeats_) notes.push_back(r.note);
    return notes;
  }

  /// Whether an import at two sizes of each free axis tells where its size went: the sizes computed from
  /// shapes over the free axes reach the data as the targets of reshapes and expands (input 1 of Reshape or
  /// Expand), whose entries the two imports show, or through masks built from them by a form that is the
  /// same at every size (a causal one the import folds into the softmax): every constant such a mask reads
  /// is neutral (0, 1, -1, a fill at or below -1e4, infinities, booleans: no window or offset of a size
  /// its own, which two short lengths could not tell from a causal mask), and a buffer it slices is split
  /// at the diagonal alone (nanoGPT's tril of ones; `bounds` then holds its positions for the axis it is
  /// sliced to, the longest length the model takes); arithmetic of shape scalars (x.size(1) * heads) is
  /// shown by the imports where it meets the data as a target, and may reach it no other way where it
  /// compares, clamps, divides or offsets a size. Positions from the length (an arange into a table, a rope
  /// cache sliced) are refused here or by the imports' weights. Conservative: false for a model with an If,
  /// Loop or Scan (but torch's Loop for a repeat_interleave, which the imports rewrite), a squeeze() of every
  /// unit axis over a free one, or an output computed from shapes alone.
  /// Refused, `why` names the node that broke a rule, and the rule.
  bool sizesGeneralize(std::map<std::string, int64_t>& bounds, std::string& why) const {
    bounds.clear();
    why.clear();
    std::set<std::string> data, sized;  // values computed from the inputs' data; from their sizes
    std::set<std::string> decided;      // sizes compared, clamped, divided or offset by a constant
    std::set<std::string> thresholded;  // of them, those through a comparison, a clamp or a division
    std::set<std::string> aranges, angles, tables;  // positions from a length; times frequencies; cos, sin
    std::set<std::string> initializers;
    for (const auto& t : model_.graph().initializer()) initializers.insert(t.name());
    for (const auto& in : model_.graph().input())
      if (!initializers.count(in.name())) data.insert(in.name());
    auto symbolicShape = [&](const std::string& v) {
      try {
        for (const Expr& e : shapeOf(v))
          if (!e.isConstant()) return true;
        return false;
      } catch (const UserError&) {
        return true;  // unknown: perhaps over a free axis
      }
    };
    auto neutral = [](double v) { return v == 0 || v == 1 || v == -1 || v <= -1e4 || std::isinf(v); };
    // A buffer whose every [R, K] matrix holds one value on and below the diagonal and one above.
    auto splitAtDiagonal = [](const Const& c) {
      size_t rank = c.dims.size();
      if (!c.known || rank < 2) return false;
      int64_t R = c.dims[rank - 2], K = c.dims[rank - 1];
      if (R < 1 || K < 1) return false;
      for (int64_t at = 0; at < c.count(); at += R * K) {
        double below = c.v[static_cast<size_t>(at)], above = K > 1 ? c.v[static_cast<size_t>(at + 1)] : 0;
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < K; ++j)
            if (c.v[static_cast<size_t>(at + i * K + j)] != (j <= i ? below : above)) return false;
      }
      return true;
    };
    // The operands that plumb shapes: axes, indices into a shape, slice bounds, targets.
    auto plumbing = [](const std::string& op, int i) {
      static const std::map<std::string, std::set<int>> positions = {
          {"Unsqueeze", {1}},       {"Squeeze", {1}},   {"Gather", {1}},    {"Slice", {1, 2, 3, 4}},
          {"Reshape", {1}},         {"Expand", {1}},    {"Tile", {1}},      {"Split", {1}},
          {"ConstantOfShape", {0}}, {"ReduceSum", {1}}, {"ReduceMax", {1}}, {"ReduceMin", {1}},
          {"ReduceMean", {1}}};
      auto it = positions.find(op);
      return it != positions.end() && it->second.count(i) > 0;
    };
    // Shape scalars: integer or boolean vectors of at most 8 known elements (x.size(1) * heads, n > 1).
    auto scalars = [&](const std::string& v) {
      if (v.empty() || !(integerValue(v) || elemTypeOf(v) == onnx::TensorProto::BOOL) || !hasConcreteShape(v))
        return false;
      int64_t count = 1;
      for (const Expr& e : shapeOf(v)) count *= e.eval();
      return count <= 8;
    };
    // torch's repeat_interleave over a tensor whose size its tracer lost: a Loop whose sequence only a
    // ConcatFromSequence reads, which each import at a fixed size rewrites as one repeat, or refuses
    // (rewriteRepeatInterleaveLoops); the two imports then show where its sizes go.
    // Its readers counted as rewriteRepeatInterleaveLoops counts them: in subgraphs too.
    std::map<std::string, std::vector<std::string>> readBy;  // a value -> the op types of its readers
    std::function<void(const onnx::GraphProto&)> readers = [&](const onnx::GraphProto& g) {
      for (const auto& n : g.node()) {
        for (const auto& in : n.input()) readBy[in].push_back(n.op_type());
        for (const auto& a : n.attribute())
          if (a.has_g()) readers(a.g());
      }
    };
    readers(model_.graph());
    for (const auto& o : model_.graph().output()) readBy[o.name()].push_back("");
    for (const auto& n : model_.graph().node()) {
      // Why the node stops the axes staying symbolic, naming it as the unsupported list does.
      auto refuse = [&](const std::string& reason) {
        why = n.name() + " (" + n.op_type() + ") " + reason;
        return false;
      };
      const bool repeatLoop = n.op_type() == "Loop" && n.output_size() == 1 &&
                              readBy[n.output(0)] == std::vector<std::string>{"ConcatFromSequence"};
      for (const auto& at : n.attribute())
        if ((at.has_g() || at.graphs_size() > 0) && !repeatLoop)
          return refuse("holds a subgraph, which the import follows at one size only");
      bool readsData = false, readsSizes = false;
      std::vector<std::string> inputs(n.input().begin(), n.input().end());
      if (repeatLoop)  // (its body reads the slices of the tensor by name)
        for (const auto& at : n.attribute())
          if (at.has_g()) {
            std::set<std::string> inner;
            for (const auto& i : at.g().input()) inner.insert(i.name());
            for (const auto& b : at.g().node()) {
              for (const auto& in : b.input())
                if (!inner.count(in)) inputs.push_back(in);
              inner.insert(b.output().begin(), b.output().end());
            }
          }
      for (const auto& in : inputs) {
        readsData = readsData || data.count(in) > 0;
        readsSizes = readsSizes || sized.count(in) > 0;
      }
      const std::string& op = n.op_type();
      // Rotary tables from positions: an arange of a length times constant frequencies, through cos and
      // sin, multiplied with the data. At every length the same rotation of position p, which the imports
      // show as the same rope op; as weights (a table not rope's) the two imports differ and are refused.
      // Positions, angles and tables may not reach anything else (a comparison would make a mask of them,
      // a Concat could put other values among the positions). A cached table sliced to the length or
      // gathered at the positions is not taken: the imports see its first rows alone (a table of grouped
      // positions past row 16, Self-Extend's, is rope's at two short lengths).
      auto among = [&](const std::set<std::string>& set) {
        return std::any_of(n.input().begin(), n.input().end(),
                           [&](const std::string& in) { return set.count(in) > 0; });
      };
      static const std::set<std::string> carry = {"Cast",   "Unsqueeze", "Squeeze",  "Reshape", "Transpose",
                                                  "Expand", "Concat",    "Identity", "Slice",   "Split"};
      auto onlyOf = [&](std::initializer_list<const std::set<std::string>*> sets, bool constants) {
        for (int i = 0; i < n.input_size(); ++i) {
          const std::string& in = n.input(i);
          bool ok = in.empty() || plumbing(op, i) || (constants && consts_.count(in) > 0);
          for (const auto* set : sets) ok = ok || set->count(in) > 0;
          if (!ok) return false;
        }
        return true;
      };
      auto mark = [&](std::set<std::string>& set) { set.insert(n.output().begin(), n.output().end()); };
      if (op == "Range" && readsSizes && !readsData) mark(aranges);  // (sized as well, below)
      if (among(aranges) && carry.count(op) && onlyOf({&aranges}, false)) mark(aranges);
      if (among(aranges) && !readsData && (op == "Mul" || op == "Div" || op == "MatMul" || op == "Einsum") &&
          onlyOf({&aranges}, true)) {
        mark(angles);
        continue;
      }
      const bool shapeOnly = op == "Shape" || op == "Size";  // (of a table: sizes, as of any value)
      if (among(angles) && !shapeOnly) {
        if (carry.count(op) && onlyOf({&angles}, false))
          mark(angles);
        else if ((op == "Cos" || op == "Sin") && n.input_size() == 1)
          mark(tables);
        else
          return refuse(
              "takes rotary angles from the length (positions times frequencies) elsewhere than into cos or "
              "sin");
        continue;
      }
      if (among(tables) && !shapeOnly) {
        if (carry.count(op) && onlyOf({&tables}, false))
          mark(tables);
        else if (op == "Mul" && readsData && onlyOf({&tables, &data}, true))
          mark(data);
        else if ((op == "Mul" || op == "Neg" || op == "Add" || op == "Sub") && !readsData &&
                 onlyOf({&tables}, true))
          mark(tables);
        else
          return refuse(
              "takes a rotary table of the length's positions elsewhere than into a product with the data");
        continue;
      }
      bool target = readsSizes && (op == "Reshape" || op == "Expand") && n.input_size() == 2 &&
                    data.count(n.input(0)) && sized.count(n.input(1));
      // Arithmetic of shape scalars, whose results the imports show where they meet the data.
      bool arithmetic = std::all_of(n.output().begin(), n.output().end(), scalars) &&
                        std::all_of(n.input().begin(), n.input().end(), [&](const std::string& in) {
                          return in.empty() || consts_.count(in) || scalars(in);
                        });
      // Such arithmetic decides something from a size where it compares, clamps, divides or offsets it by
      // a constant other than 0 or +-1 (n - 16 as a window's edge, clamp(n, max=16), n > 1): two lengths
      // cannot tell that from a size; it may only reach the data as a target, which the imports show.
      static const std::set<std::string> decisions = {
          "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal", "Where", "Min", "Max", "Clip", "Mod",
          "Div", "Not", "And", "Or", "Xor", "Abs", "Neg", "Sign", "Floor", "Ceil",
          // (over a shape vector: its constants and sizes folded)
          "ReduceMin", "ReduceMax", "ReduceSum", "ReduceProd", "ReduceMean", "ReduceL1", "ReduceL2",
          "ReduceSumSquare"};
      bool readsDecided = std::any_of(n.input().begin(), n.input().end(),
                                      [&](const std::string& in) { return decided.count(in) > 0; });
      if (readsSizes && arithmetic) {
        bool offset = decisions.count(op) > 0 || readsDecided;
        for (int i = 0; i < n.input_size(); ++i)
          if (auto c = consts_.find(n.input(i));
              c != consts_.end() && !sized.count(n.input(i)) && op != "Concat" && !plumbing(op, i))
            offset = offset || !std::all_of(c->second.v.begin(), c->second.v.end(), neutral);
        if (offset) decided.insert(n.output().begin(), n.output().end());
        static const std::set<std::string> thresholds = {"Less",
                                                         "Greater",
                                                         "LessOrEqual",
                                                         "GreaterOrEqual",
                                                         "Min",
                                                         "Max",
                                                         "Clip",
                                                         "Mod",
                                                         "Div",
                                                         "Abs",
                                                         "Sign",
                                                         "Floor",
                                                         "Ceil",
                                                         "ReduceMin",
                                                         "ReduceMax",
                                                         "ReduceSum",
                                                         "ReduceProd",
                                                         "ReduceMean",
                                                         "ReduceL1",
                                                         "ReduceL2",
                                                         "ReduceSumSquare"};
        bool negativeTest =
            op == "Equal" && std::any_of(n.input().begin(), n.input().end(), [&](const std::string& in) {
              auto c = consts_.find(in);
              return c != consts_.end() && !c->second.v.empty() &&
                     std::all_of(c->second.v.begin(), c->second.v.end(), [](double v) { return v < 0; });
            });
        if (thresholds.count(op) || (op == "Equal" && !negativeTest) ||
            std::any_of(n.input().begin(), n.input().end(),
                        [&](const std::string& in) { return thresholded.count(in) > 0; }))
          thresholded.insert(n.output().begin(), n.output().end());
      } else if (readsDecided && !target) {
        // Or as another node's shape argument (a slice's bounds, a ConstantOfShape's shape: torch.empty of
        // (b, s * heads, s) for baddbmm, MPT's mask[-s:, -s:]) where it is an exact multiple of the sizes:
        // no threshold, no / or %, and no constant term (s - 16 as a window's edge is refused).
        for (int i = 0; i < n.input_size(); ++i)
          if (decided.count(n.input(i)) &&
              (!plumbing(op, i) || thresholded.count(n.input(i)) || !homogeneousSizes(n.input(i))))
            return refuse(
                "takes '" + n.input(i) +
                "', a size compared, clamped, divided or offset by a constant, where only a shape argument "
                "that is an exact multiple of the sizes may go");
      }
      // A target decided from a size must be known exactly and whole (n * heads), not through / or %: a
      // ceil-division or a clamp would look like a size or a constant at two lengths. Where the import does
      // not know it (sizes past a reshape shape inference could not follow), it must come of no threshold:
      // no comparison but with a negative constant (expand's Equal(s, -1)), no clamp, min, max, division.
      if (target && decided.count(n.input(1))) {
        auto exact = shapeSizes_.find(n.input(1));
        if (exact == shapeSizes_.end()
                ? thresholded.count(n.input(1)) > 0
                : std::any_of(exact->second.begin(), exact->second.end(),
                              [](const Expr& e) { return e.str().find_first_of("/%") != std::string::npos; }))
          return refuse(
              "shapes the data to '" + n.input(1) +
              "', a size through a comparison, clamp or division, which two lengths cannot tell from a size");
      }
      // A Squeeze of every axis of length 1 drops a free axis where its length is 1, and not at two others.
      if (op == "Squeeze" && (n.input_size() < 2 || n.input(1).empty()) && symbolicShape(n.input(0)))
        return refuse("squeezes every axis of length 1, which drops a free axis where its length is 1");
      if (readsSizes && !target && !arithmetic) {  // a mask built from the sizes, or what reads it
        // A mask may read the length itself (arange(s), arange(s) < s) but not a scalar made of sizes
        // (i - batch * batch < j: a window past every length the imports take), but as a shape argument.
        for (int i = 0; i < n.input_size(); ++i)
          if (const std::string& in = n.input(i); sized.count(in) && scalars(in) && !plumbing(op, i)) {
            auto exact = shapeSizes_.find(in);
            if (exact == shapeSizes_.end() ||
                !std::all_of(exact->second.begin(), exact->second.end(),
                             [&](const Expr& e) { return e.isConstant() || freeAxes_.count(e.str()) > 0; }))
              return refuse("builds a mask from '" + in +
                            "', a scalar made of sizes rather than a length itself");
          }
        for (int i = 0; i < n.input_size(); ++i) {
          auto c = consts_.find(n.input(i));
          if (c == consts_.end() || sized.count(n.input(i)) || plumbing(op, i)) continue;
          const Const& value = c->second;
          bool shapeVector = op == "Concat" && value.dims.size() <= 1 && value.v.size() <= 8;
          if (op == "Slice" && i == 0) {
            // The axis whose length the slice takes: its end a free axis' size as it is (bias[:, :, :T, :T]).
            auto ends = n.input_size() > 2 ? shapeSizes_.find(n.input(2)) : shapeSizes_.end();
            if (!splitAtDiagonal(value) || ends == shapeSizes_.end() || ends->second.size() != 1 ||
                !freeAxes_.count(ends->second[0].str()))
              return refuse(
                  "slices the constant '" + n.input(0) +
                  "' by the length, and it is no mask buffer split at the diagonal (a table the imports "
                  "would see the first rows of only)");
            int64_t positions = std::min(value.dims[value.dims.size() - 2], value.dims.back());
            auto [at, fresh] = bounds.emplace(ends->second[0].str(), positions);
            if (!fresh) at->second = std::min(at->second, positions);
          } else if (!shapeVector &&
                     (!value.known || !std::all_of(value.v.begin(), value.v.end(), neutral))) {
            return refuse("combines what it builds from the sizes with the constant '" + n.input(i) +
                          "', not 0, 1, -1 or a large negative fill");
          }
        }
        for (const auto& at : n.attribute()) {
          const std::vector<double> fill =
              op == "ConstantOfShape" && at.name() == "value" ? fromTensor(at.t()).v : std::vector<double>{};
          if (!std::all_of(fill.begin(), fill.end(), neutral) ||
              (op == "EyeLike" && at.name() == "k" && !neutral(static_cast<double>(at.i()))))
            return refuse(
                "fills what it builds from the sizes with a value not 0, 1, -1 or a large negative");
        }
      }
      // (A constant size of a symbolic shape, x.size(-1), is neither: checked as any constant is.)
      bool folded = std::all_of(n.output().begin(), n.output().end(),
                                [&](const std::string& o) { return consts_.count(o) > 0; });
      bool ofSizes = ((op == "Shape" || op == "Size") && n.input_size() == 1 && symbolicShape(n.input(0))) ||
                     (readsSizes && !readsData);
      if (!folded && (ofSizes || readsData || target))
        (ofSizes ? sized : data).insert(n.output().begin(), n.output().end());
    }
    for (const auto& out : model_.graph().output())
      if (sized.count(out.name())) {
        why = "the graph's output '" + out.name() + "' is computed from shapes alone";
        return false;
      }
    return true;
  }

 private:
  struct Dyn {
    const onnx::NodeProto* node;
    std::string op;  // after pattern recognition: a graph op name, or the ONNX op type
    std::vector<std::string> inputs;
    std::string output;
    std::map<std::string, AttrValue> attrs;
    bool dead = false;
  };

  SourceLoc loc() const { return SourceLoc{path_, 0, 0}; }

  // Every unsupported node by name and op type; where shape arithmetic over a dynamic axis is among them,
  // how to fix the axis at import.
  // In a model with no dynamic axis left, a size is symbolic only past a node that makes one unknown
  // (NonZero, a Loop): the shape arithmetic over symbolic sizes that comes after refused nodes is listed
  // apart, as what they hold up.
  UserError unsupportedError() const {
    std::vector<std::string> causes, after;
    auto symbolicWhy = [](const std::string& u) {  // (the reason, past the node's name)
      size_t why = u.find(" (");
      return why != std::string::npos && u.find("symbolic", why) != std::string::npos;
    };
    std::set<std::string> past;  // the nodes that come after refused ones
    if (freeAxes_.empty()) {
      std::map<std::string, std::vector<const onnx::NodeProto*>> readers;
      std::map<std::string, const onnx::NodeProto*> byName;
      for (const auto& n : model_.graph().node()) {
        byName[nodeName(n)] = &n;
        for (const auto& i : n.input()) readers[i].push_back(&n);
      }
      std::vector<const onnx::NodeProto*> todo;
      for (const auto& u : unsupported_)
        if (!symbolicWhy(u))
          if (auto it = byName.find(u.substr(0, u.find(" ("))); it != byName.end())
            todo.push_back(it->second);
      std::set<const onnx::NodeProto*> seen;
      while (!todo.empty()) {
        const onnx::NodeProto* n = todo.back();
        todo.pop_back();
        for (const auto& o : n->output())
          for (const onnx::NodeProto* r : readers[o])
            if (seen.insert(r).second) {
              past.insert(nodeName(*r));
              todo.push_back(r);
            }
      }
    }
    for (const auto& u : unsupported_)
      (symbolicWhy(u) && past.count(u.substr(0, u.find(" ("))) ? after : causes).push_back(u);
    std::string msg = path_ + ": error: unsupported: " + std::to_string(causes.size()) + " node(s):";
    bool symbolic = false;
    for (const auto& u : causes) {
      msg += "\n  " + u;
      symbolic = symbolic || symbolicWhy(u);
    }
    if (!after.empty()) {
      msg +=
          "\nand " + std::to_string(after.size()) + " node(s) after them, over the sizes they leave unknown:";
      for (const auto& u : after) msg += "\n  " + u;
    }
    if (symbolic && !freeAxes_.empty()) {
      std::string fix;
      for (const std::string& a : freeAxes_) fix += (fix.empty() ? "" : " ") + std::string("--set dim.") + a + "=N";
      msg += "\n(the shape arithmetic over the model's dynamic axes folds once they are fixed at import: " +
             fix + "; --bind NAME=N also fixes an axis where the import needs it)";
    }
    return UserError(msg);
  }

  void load() {
    std::string bytes = readTextFile(path_);  // a regular file of at most 1 GiB
    if (!model_.ParseFromString(bytes) || !model_.has_graph())
      throw UserError(path_ + ": error: not an ONNX model (the file does not parse as an ONNX ModelProto)");
    int opset = -1;
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
    if (opset < kMinOpset || opset > kMaxOpset)
      throw UserError(path_ + ": error: opset " + std::to_string(opset) + " is outside the supported range " +
                      std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + " (export with opset_version=" +
                      std::to_string(kMaxOpset) + ")");
    verifyNodes(model_.graph(), opset);
    std::set<std::string> initializers;  // (listed among the inputs by models of IR version 3)
    for (const auto& t : model_.graph().initializer()) initializers.insert(t.name());
    for (const auto& v : model_.graph().input()) {  // an axis of 0 (or less) leaves nothing to stream
      if (initializers.count(v.name()) || !v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
        continue;
      const auto& dims = v.type().tensor_type().shape().dim();
      for (int d = 0; d < dims.size(); ++d)
        if (dims[d].has_dim_value() && dims[d].dim_value() < 1)
          throw UserError(path_ + ": error: input '" + v.name() + "' has dimension " + std::to_string(d) +
                          " of size " + std::to_string(dims[d].dim_value()) +
                          " (every dimension must be 1 or more)");
    }
    fixDynamicAxes();
    inferShapes();
  }

  // A tensor held in the file whose values are not as many as its dims take (a weight of [1000000, 64, 16]
  // holding 4,096 values was imported as 10^9 stand-in zeros, for minutes): the file is malformed.
  void verifyData(const onnx::TensorProto& t, const std::string& what) const {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return;
    double take = 1;
    for (auto d : t.dims()) take *= static_cast<double>(d);
    size_t bytes = 0, listed = 0;  // an element's bytes in raw_data, and the values of its typed list
    switch (t.data_type()) {
      case onnx::TensorProto::FLOAT:
        bytes = 4, listed = static_cast<size_t>(t.float_data_size());
        break;
      case onnx::TensorProto::DOUBLE:
        bytes = 8, listed = static_cast<size_t>(t.double_data_size());
        break;
      case onnx::TensorProto::INT64:
        bytes = 8, listed = static_cast<size_t>(t.int64_data_size());
        break;
      case onnx::TensorProto::UINT64:
        bytes = 8, listed = static_cast<size_t>(t.uint64_data_size());
        break;
      case onnx::TensorProto::UINT32:
        bytes = 4, listed = static_cast<size_t>(t.uint64_data_size());
        break;
      case onnx::TensorProto::INT32:
        bytes = 4, listed = static_cast<size_t>(t.int32_data_size());
        break;
      case onnx::TensorProto::FLOAT16:
      case onnx::TensorProto::BFLOAT16:
      case onnx::TensorProto::INT16:
      case onnx::TensorProto::UINT16:
        bytes = 2, listed = static_cast<size_t>(t.int32_data_size());
        break;
      case onnx::TensorProto::INT8:
      case onnx::TensorProto::UINT8:
      case onnx::TensorProto::BOOL:
        bytes = 1, listed = static_cast<size_t>(t.int32_data_size());
        break;
      default:
        return;  // strings, complex numbers, 8-bit floats: left unknown (fromTensor)
    }
    double held = t.has_raw_data() && !t.raw_data().empty()
                      ? static_cast<double>(t.raw_data().size()) / static_cast<double>(bytes)
                      : static_cast<double>(listed);
    if (held == take) return;
    std::ostringstream text;
    text << std::setprecision(12) << what << " holds " << held << " values where its dims "
         << dimsText({t.dims().begin(), t.dims().end()}) << " take " << take;
    throw UserError(path_ + ": error: " + text.str() + " (a malformed file)");
  }

  // Every node of a known op against its schema at the model's opset (its inputs' and outputs' counts, its
  // attributes' names and types), subgraphs and their initializers included: a node short of an input
  // stops here, by name, not in a pass that reads the input it lacks. Ops ONNX does not define are left to
  // the list of unsupported; a node of another domain (an op of the same name that the importer would read
  // as ONNX's) is refused here.
  void verifyNodes(const onnx::GraphProto& graph, int opset) const {
    for (const auto& t : graph.initializer()) verifyData(t, "initializer '" + t.name() + "'");
    for (const auto& n : graph.node()) {
      auto invalid = [&](const std::string& why) {
        return UserError(path_ + ": error: node '" + nodeName(n) + "' (" + n.op_type() +
                         ") is not valid ONNX: " + why);
      };
      if (!n.domain().empty() && n.domain() != "ai.onnx")
        throw UserError(path_ + ": error: node '" + nodeName(n) + "' (" + n.op_type() +
                        ") is of the domain '" + n.domain() +
                        "', not ONNX's (stc imports the default domain's ops only)");
      if (n.output_size() == 0) throw invalid("it has no output");
      if (const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "")) {
        // An empty list attribute (torch writes ReduceMax's axes as [] for every axis) is valid ONNX, which
        // the checker of ONNX 1.12 takes for a missing field: checked without them.
        onnx::NodeProto checked = n;
        checked.clear_attribute();
        for (const auto& a : n.attribute()) {
          bool list = a.type() == onnx::AttributeProto::INTS || a.type() == onnx::AttributeProto::FLOATS ||
                      a.type() == onnx::AttributeProto::STRINGS;
          if (!list || a.ints_size() + a.floats_size() + a.strings_size() > 0) *checked.add_attribute() = a;
        }
        try {
          schema->Verify(checked);
        } catch (const std::exception& e) {
          std::string why = e.what();
          if (auto cut = why.find("\n\n==>"); cut != std::string::npos) why.erase(cut);  // the node dumped
          throw invalid(why);
        }
      }
      for (const auto& a : n.attribute()) {
        if (a.has_t()) verifyData(a.t(), "node '" + nodeName(n) + "' (" + n.op_type() + ")'s " + a.name());
        if (a.has_g()) verifyNodes(a.g(), opset);
        for (const auto& g : a.graphs()) verifyNodes(g, opset);
      }
    }
  }

  // The dynamic axes (dim_params) the caller binds become fixed sizes before shape inference, so that the
  // shape arithmetic an export computes from them (Shape, Gather, Concat, a mask sliced to the sequence)
  // folds to constants as in a static export.
  void fixDynamicAxes() {
    std::set<std::string> axes, used;  // the inputs' axes (an output's follow from them)
    auto fix = [&](onnx::ValueInfoProto& v, bool input) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (!d.has_dim_param()) continue;
        std::string name = symbolName(d.dim_param());
        if (input) axes.insert(name);
        auto it = dims_.find(name);
        if (it == dims_.end()) {
          if (input) freeAxes_.insert(name);
          continue;
        }
        used.insert(name);
        d.set_dim_value(it->second);
      }
    };
    for (const auto& v : model_.graph().output()) declaredOutputs_.push_back(v.type());
    for (auto& v : *model_.mutable_graph()->mutable_input()) fix(v, true);
    for (auto& v : *model_.mutable_graph()->mutable_output()) fix(v, false);
    if (dims_.empty()) return;
    model_.mutable_graph()->clear_value_info();  // inferred again from the fixed inputs
    for (const auto& [name, value] : dims_) {
      if (used.count(name)) continue;
      std::string list;
      for (const std::string& a : axes) list += (list.empty() ? "" : ", ") + a;
      throw UserError(path_ + ": error: field 'dim." + name + "': the model has no dynamic axis '" + name + "' (" +
                      (list.empty() ? std::string("it has none") : "its dynamic axes: " + list) + ")");
    }
  }

  void inferShapes() {
    for (int round = 0;; ++round) {
      try {
        onnx::shape_inference::InferShapes(model_);
      } catch (const std::exception& e) {
        std::string off;  // (a Loop rewritten the round before whose shape is not torch's)
        for (const OffRepeat& r : offRepeats_) off += "; " + r.note;
        throw UserError(path_ + ": error: ONNX shape inference failed: " + e.what() + off +
                        declaredOutputsOff());
      }
      types_.clear();
      auto record = [&](const onnx::ValueInfoProto& v) { types_[v.name()] = &v.type(); };
      for (const auto& v : model_.graph().input()) record(v);
      for (const auto& v : model_.graph().value_info()) record(v);
      for (const auto& v : model_.graph().output()) record(v);
      bool added = completeEinsumShapes();
      if (round == 4 || !(completeReshapeShapes() || added)) return;
    }
  }

  // Where shape inference fails only on the shapes the model declares for its outputs (an export's
  // dynamic_axes giving an output an input's axis name, though it is one longer: BERT's pooled row joined
  // to the sequence), which output and dimension, as a clause to add to the error; else empty.
  std::string declaredOutputsOff() const {
    onnx::ModelProto bare = model_;
    for (auto& o : *bare.mutable_graph()->mutable_output())
      if (o.type().has_tensor_type()) o.mutable_type()->mutable_tensor_type()->clear_shape();
    bare.mutable_graph()->clear_value_info();
    try {
      onnx::shape_inference::InferShapes(bare);
    } catch (const std::exception&) {
      return "";
    }
    // A declared dimension's size: its value, or the value its dynamic axis is fixed at (0: free).
    auto sizeOf = [&](const onnx::TensorShapeProto::Dimension& d) -> int64_t {
      if (d.has_dim_value()) return d.dim_value();
      auto it = d.has_dim_param() ? dims_.find(symbolName(d.dim_param())) : dims_.end();
      return it == dims_.end() ? 0 : it->second;
    };
    auto text = [&](const onnx::TensorShapeProto& s) {
      std::string t;
      for (const auto& d : s.dim()) {
        int64_t size = sizeOf(d);
        t += (t.empty() ? "" : ", ") + (size > 0            ? std::to_string(size)
                                        : d.has_dim_param() ? d.dim_param()
                                                            : "?");
      }
      return "[" + t + "]";
    };
    const int outputs = std::min(bare.graph().output_size(), static_cast<int>(declaredOutputs_.size()));
    for (int i = 0; i < outputs; ++i) {
      if (!declaredOutputs_[static_cast<size_t>(i)].has_tensor_type()) continue;
      const auto& declared = declaredOutputs_[static_cast<size_t>(i)].tensor_type();
      const auto& inferred = bare.graph().output(i).type().tensor_type();
      if (!declared.has_shape() || !inferred.has_shape() ||
          declared.shape().dim_size() != inferred.shape().dim_size())
        continue;
      for (int d = 0; d < declared.shape().dim_size(); ++d) {
        const auto &a = declared.shape().dim(d), &b = inferred.shape().dim(d);
        const int64_t size = sizeOf(a);
        if (size <= 0 || !b.has_dim_value() || size == b.dim_value()) continue;
        const std::string name = bare.graph().output(i).name();
        std::string off = "; the model declares its output '" + name + "' as " + text(declared.shape()) +
                          " where its graph computes " + text(inferred.shape()) + ": dimension " +
                          std::to_string(d) + " is " + std::to_string(b.dim_value()) + ", not " +
                          std::to_string(size);
        if (!a.has_dim_value())
          off += " (its dynamic axis '" + symbolName(a.dim_param()) + "', fixed at import at " +
                 std::to_string(size) +
                 "): an export's dynamic_axes named that output axis after an input's, which it is not";
        return off;
      }
    }
    return "";
  }

  // An Einsum's equation, spaces removed.
  static std::string einsumEquation(const onnx::NodeProto& n) {
    std::string eq;
    for (const auto& at : n.attribute())
      if (at.name() == "equation")
        for (char ch : at.s())
          if (ch != ' ') eq += ch;
    return eq;
  }
  // The operand and the result of an Einsum of one operand, `A->C`, spaces removed; false for another
  // form (an ellipsis, an implicit result, two operands).
  static bool einsumOneTerm(const onnx::NodeProto& n, std::string& a, std::string& c) {
    const std::string eq = einsumEquation(n);
    size_t arrow = eq.find("->");
    if (n.input_size() != 1 || arrow == std::string::npos || eq.find_first_of(".,") != std::string::npos)
      return false;
    a = eq.substr(0, arrow), c = eq.substr(arrow + 2);
    return true;
  }
  // The two operands and the result of an Einsum's equation, spaces removed; false for another form (one
  // operand, an implicit result). An ellipsis (`... i d, ... j d -> ... i j`) stands for the dims of its
  // operand the letters leave, named by capitals the equation does not use, aligned at the right across
  // operands as numpy broadcasts them; false where an operand's rank is not known.
  bool einsumTerms(const onnx::NodeProto& n, std::string& a, std::string& b, std::string& c) const {
    const std::string eq = einsumEquation(n);
    size_t arrow = eq.find("->"), comma = eq.find(',');
    if (n.input_size() != 2 || arrow == std::string::npos || comma == std::string::npos || comma > arrow)
      return false;
    a = eq.substr(0, comma), b = eq.substr(comma + 1, arrow - comma - 1), c = eq.substr(arrow + 2);
    if (eq.find("...") == std::string::npos) return true;
    auto rankOf = [&](const std::string& v) -> int64_t {
      if (auto k = consts_.find(v); k != consts_.end()) return static_cast<int64_t>(k->second.dims.size());
      std::vector<int64_t> dims;
      int type = 0;
      if (knownDims(v, dims, type)) return static_cast<int64_t>(dims.size());
      try {  // (a dim of unknown size throws: the rank alone is wanted)
        if (hasShape(v)) return static_cast<int64_t>(shapeOf(v).size());
      } catch (const UserError&) {
      }
      return -1;
    };
    std::string* terms[2] = {&a, &b};
    int64_t spans[2] = {0, 0}, most = 0;
    for (int i = 0; i < 2; ++i) {
      size_t at = terms[i]->find("...");
      if (at == std::string::npos) continue;
      int64_t rank = rankOf(n.input(i)), letters = static_cast<int64_t>(terms[i]->size()) - 3;
      if (rank < letters || terms[i]->find("...", at + 3) != std::string::npos) return false;
      spans[i] = rank - letters;
      most = std::max(most, spans[i]);
    }
    std::string names;
    for (char ch = 'Z'; ch >= 'A' && static_cast<int64_t>(names.size()) < most; --ch)
      if (eq.find(ch) == std::string::npos) names.insert(names.begin(), ch);
    if (static_cast<int64_t>(names.size()) < most) return false;
    for (int i = 0; i < 2; ++i)
      if (size_t at = terms[i]->find("..."); at != std::string::npos)
        terms[i]->replace(at, 3, names.substr(static_cast<size_t>(most - spans[i])));
    if (size_t at = c.find("..."); at != std::string::npos) c.replace(at, 3, names);
    return a.find('.') == std::string::npos && b.find('.') == std::string::npos &&
           c.find('.') == std::string::npos;
  }

  // ONNX's shape inference gives an Einsum's result its rank alone: its sizes from the operands' (each
  // index's extent), as value_info for the next round of inference. False when it added none.
  bool completeEinsumShapes() {
    bool added = false;
    for (const auto& n : model_.graph().node()) {
      std::string a, b, c;
      if (n.op_type() != "Einsum" || hasConcreteShape(n.output(0))) continue;
      std::vector<std::pair<std::string, std::string>> terms;  // (indices, value) of each operand
      if (einsumOneTerm(n, a, c))
        terms = {{a, n.input(0)}};
      else if (einsumTerms(n, a, b, c))
        terms = {{a, n.input(0)}, {b, n.input(1)}};
      else
        continue;
      std::map<char, int64_t> extent;
      bool ok = true;
      int elemType = onnx::TensorProto::FLOAT;
      for (const auto& [term, value] : terms) {
        std::vector<int64_t> dims;
        ok = ok && knownDims(value, dims, elemType) && dims.size() == term.size();
        for (size_t i = 0; ok && i < term.size(); ++i) {
          ok = !extent.count(term[i]) || extent[term[i]] == dims[i];
          extent[term[i]] = dims[i];
        }
      }
      for (char ch : c) ok = ok && extent.count(ch);
      if (!ok) continue;
      std::vector<Expr> shape;
      for (char ch : c) shape.emplace_back(extent.at(ch));
      setValueShape(n.output(0), elemType, shape);
      added = true;
    }
    return added;
  }
  // A view's target over the free axes as sizes: each entry a positive constant or a free axis, a 0 the
  // input's size there, and one -1 the constant the input's other sizes leave (the same at two lengths of
  // every free axis); none where it is not such.
  std::optional<std::vector<Expr>> viewTarget(const std::string& input, std::vector<Expr> target) const {
    std::vector<Expr> in;
    try {
      in = shapeOf(input);
    } catch (const UserError&) {
    }
    auto sizeOrAxis = [&](const Expr& e) {
      return e.isConstant() ? e.eval() > 0 : freeAxes_.count(e.str()) > 0;
    };
    int inferred = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      const Expr& e = target[i];
      if (e.isConstant() && e.eval() == 0 && i < in.size())
        target[i] = in[i];
      else if (e.isConstant() && e.eval() == -1 && inferred < 0)
        inferred = static_cast<int>(i);
      if (static_cast<int>(i) != inferred && !sizeOrAxis(target[i])) return std::nullopt;
    }
    if (inferred < 0) return target;
    // (an input's size ONNX named, unk__0, is neither)
    if (in.empty() || !std::all_of(in.begin(), in.end(), sizeOrAxis)) return std::nullopt;
    std::optional<int64_t> size;
    for (int64_t at : {11, 13}) {
      Bindings b;
      for (const std::string& axis : freeAxes_) b[axis] = at;
      int64_t whole = 1, known = 1;
      for (const Expr& e : in) whole *= e.eval(b);
      for (size_t i = 0; i < target.size(); ++i)
        if (static_cast<int>(i) != inferred) known *= target[i].eval(b);
      if (known <= 0 || whole % known != 0 || (size && *size != whole / known)) return std::nullopt;
      size = whole / known;
    }
    target[static_cast<size_t>(inferred)] = Expr(*size);
    return target;
  }

  // Gives `name` the element type and shape (sizes, or free axes as dim_params) in the model's value_info,
  // for ONNX's shape inference to start from.
  void setValueShape(const std::string& name, int32_t elem, const std::vector<Expr>& shape) {
    onnx::ValueInfoProto* v = nullptr;
    for (auto& info : *model_.mutable_graph()->mutable_value_info())
      if (info.name() == name) v = &info;
    if (!v) {
      v = model_.mutable_graph()->add_value_info();
      v->set_name(name);
    }
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    t->mutable_shape()->clear_dim();
    for (const Expr& e : shape) {
      if (e.isConstant())
        t->mutable_shape()->add_dim()->set_dim_value(e.eval());
      else
        t->mutable_shape()->add_dim()->set_dim_param(e.str());
    }
  }

  // The values of reshapeShapes_ shape inference left without every size: those sizes.
  bool completeReshapeShapes() {
    bool added = false;
    for (const auto& [output, target] : reshapeShapes_) {
      // (read off the type: shapeOf throws at a dimension of unknown size, which is what is looked for)
      if (auto type = types_.find(output); type != types_.end() && type->second->tensor_type().has_shape()) {
        const auto& dims = type->second->tensor_type().shape().dim();
        if (static_cast<size_t>(dims.size()) == target.second.size() &&
            std::all_of(dims.begin(), dims.end(),
                        [](const auto& d) { return d.has_dim_value() || d.has_dim_param(); }))
          continue;
      }
      int32_t elem = elemTypeOf(target.first);
      if (elem == onnx::TensorProto::UNDEFINED) continue;
      setValueShape(output, elem, target.second);
      added = true;
    }
    return added;
  }
  // The sizes of a value shape inference typed, an initializer or a Constant node's tensor; false when
  // unknown. elemType: its element type, where known.
  bool knownDims(const std::string& name, std::vector<int64_t>& dims, int& elemType) const {
    auto fromTensor = [&](const onnx::TensorProto& t) {
      dims.assign(t.dims().begin(), t.dims().end());
      elemType = t.data_type();
      return true;
    };
    for (const auto& t : model_.graph().initializer())
      if (t.name() == name) return fromTensor(t);
    for (const auto& node : model_.graph().node())
      if (node.op_type() == "Constant" && node.output_size() == 1 && node.output(0) == name)
        for (const auto& at : node.attribute())
          if (at.name() == "value") return fromTensor(at.t());
    if (!hasConcreteShape(name)) return false;
    for (const auto& d : shapeOf(name)) dims.push_back(d.eval());
    auto it = types_.find(name);
    if (it != types_.end() && it->second->has_tensor_type()) elemType = it->second->tensor_type().elem_type();
    return true;
  }

  // Shape arguments computed by other nodes (a torch export computes a view's or an expand's target from
  // shapes and constants): folded in a first pass, then handed to ONNX's shape inference as initializers,
  // which it reads where it cannot evaluate the nodes, so that the shapes after them are known. The next
  // pass starts afresh on the rewritten model. False when nothing was rewritten.
  bool foldShapeArguments() {
    for (const auto& node : model_.graph().node()) visitOrRecord(node);
    // (A Gather's indices too: position ids computed from shapes, arange(seq), give the lookup its shape.)
    static const std::map<std::string, std::vector<int>> shapeArguments = {
        {"Reshape", {1}},    {"Expand", {1}},  {"ConstantOfShape", {0}}, {"Tile", {1}},
        {"Unsqueeze", {1}},  {"Squeeze", {1}}, {"Slice", {1, 2, 3, 4}},  {"Split", {1}},
        {"Trilu", {1}},      {"Gather", {1}},  {"Pad", {1, 3}},  // (not its value, of the data's type)
        {"Range", {0, 1, 2}}};  // (arange(seq) of a table computed in forward: its length, for what follows)
    std::set<std::string> initializers, taken = graphNames();
    for (const auto& t : model_.graph().initializer()) initializers.insert(t.name());
    std::map<std::pair<std::string, int>, std::string> folded;  // a computed shape argument and the type
                                                                // folded to -> its initializer
    bool rewritten = false;
    // A view's target over the free axes, known exactly ([1, seq, 5, 8] from k.size()), gives its output
    // that shape, where ONNX's inference knows only the rank (q.size(-2) after the view then folds too).
    for (const auto& node : model_.graph().node()) {
      auto sizes = node.op_type() == "Reshape" && node.input_size() == 2 ? shapeSizes_.find(node.input(1))
                                                                         : shapeSizes_.end();
      if (sizes == shapeSizes_.end() || reshapeShapes_.count(node.output(0))) continue;
      std::optional<std::vector<Expr>> target = viewTarget(node.input(0), sizes->second);
      if (!target) continue;
      reshapeShapes_[node.output(0)] = {node.input(0), *target};
      rewritten = true;
    }
    // So does a constant table sliced from 0 to a free axis' size along one axis, at lengths up to the
    // table's: a mask buffer (nanoGPT's bias[:, :, :T, :T], whose length the symbolic import keeps as the
    // axis' maximum: importOnnx's bounds). A rope cache sliced so (cos_cached[:, :, :seq]) gets its
    // shape here too, and is refused later by the rules of sizesGeneralize.
    for (const auto& node : model_.graph().node()) {
      if (node.op_type() != "Slice" || node.input_size() < 4 || reshapeShapes_.count(node.output(0)) ||
          !consts_.count(node.input(0)))
        continue;
      auto starts = consts_.find(node.input(1)), axes = consts_.find(node.input(3));
      auto ends = shapeSizes_.find(node.input(2));
      const Const& table = consts_.at(node.input(0));
      if (starts == consts_.end() || axes == consts_.end() || ends == shapeSizes_.end() ||
          starts->second.v != std::vector<double>{0} || axes->second.v.size() != 1 ||
          ends->second.size() != 1 || !freeAxes_.count(ends->second[0].str()) ||
          (node.input_size() > 4 && !node.input(4).empty() &&
           (!consts_.count(node.input(4)) || consts_.at(node.input(4)).v != std::vector<double>{1})))
        continue;
      int64_t axis = static_cast<int64_t>(axes->second.v[0]), rank = static_cast<int64_t>(table.dims.size());
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) continue;
      std::vector<Expr> shape;
      for (int64_t d = 0; d < rank; ++d)
        shape.push_back(d == axis ? ends->second[0] : Expr(table.dims[static_cast<size_t>(d)]));
      reshapeShapes_[node.output(0)] = {node.input(0), shape};
      rewritten = true;
    }
    for (auto& node : *model_.mutable_graph()->mutable_node()) {
      auto args = shapeArguments.find(node.op_type());
      if (args == shapeArguments.end()) continue;
      for (int i : args->second) {
        if (node.input_size() <= i || node.input(i).empty() || initializers.count(node.input(i))) continue;
        auto c = consts_.find(node.input(i));
        if (c == consts_.end() || !c->second.known) continue;
        // Range's operands keep their type (a float arange), and are folded only where it is known and
        // one a Range takes; every other shape argument is int64. (Keyed by type too: a value read as
        // both gets an initializer of each.)
        int elem = onnx::TensorProto::INT64;
        if (node.op_type() == "Range") {
          auto type = types_.find(node.input(i));
          elem = type != types_.end() && type->second->has_tensor_type()
                     ? type->second->tensor_type().elem_type()
                     : onnx::TensorProto::UNDEFINED;
          if (elem != onnx::TensorProto::FLOAT && elem != onnx::TensorProto::DOUBLE &&
              elem != onnx::TensorProto::INT32 && elem != onnx::TensorProto::INT64)
            continue;
        }
        auto [at, fresh] = folded.emplace(std::make_pair(node.input(i), elem), "");
        std::string& name = at->second;
        if (fresh) {  // a name no value of the model has (it may hold one called so already)
          name = unusedName(node.input(i) + "__folded", taken);
          onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
          t->set_name(name);
          t->set_data_type(elem);
          for (auto d : c->second.dims) t->add_dims(d);
          for (double v : c->second.v) {
            if (elem == onnx::TensorProto::FLOAT)
              t->add_float_data(static_cast<float>(v));
            else if (elem == onnx::TensorProto::DOUBLE)
              t->add_double_data(v);
            else if (elem == onnx::TensorProto::INT32)
              t->add_int32_data(static_cast<int32_t>(v));
            else  // Slice's "to the end" is INT64_MAX, which a double rounds up
              t->add_int64_data(v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v));
          }
        }
        node.set_input(i, name);
        rewritten = true;
      }
    }
    rewritten = inlineFoldedIfs() || rewritten;
    rewritten = rewriteRepeatInterleaveLoops() || rewritten;
    rewritten = reshapeSplitRepeatsAsTorch() || rewritten;
    consts_.clear();
    symbolicShapes_.clear();
    shapeSizes_.clear();
    dyn_.clear();
    producer_.clear();
    unsupported_.clear();
    if (!rewritten) return false;
    model_.mutable_graph()->clear_value_info();
    inferShapes();
    return true;
  }

  // Every value name of the graph: its inputs, outputs, value_info, initializers and nodes' operands.
  std::set<std::string> graphNames() const {
    std::set<std::string> names;
    for (const auto& v : model_.graph().input()) names.insert(v.name());
    for (const auto& v : model_.graph().output()) names.insert(v.name());
    for (const auto& v : model_.graph().value_info()) names.insert(v.name());
    for (const auto& t : model_.graph().initializer()) names.insert(t.name());
    for (const auto& n : model_.graph().node()) {
      names.insert(n.input().begin(), n.input().end());
      names.insert(n.output().begin(), n.output().end());
    }
    return names;
  }
  // `base`, or base2, base3, ...: the first not in `taken`, which it joins.
  static std::string unusedName(const std::string& base, std::set<std::string>& taken) {
    std::string name = base;
    for (int n = 2; taken.count(name); ++n) name = base + std::to_string(n);
    taken.insert(name);
    return name;
  }

  // torch's repeat_interleave where its tracer does not know a size (symbolic_opset13: a table computed
  // in forward from arange(s), or keys over a dynamic sequence): x split into slices of 1 along `axis`
  // (SplitToSequence), a Loop that unsqueezes each slice after the axis, expands it to its repeat count
  // and reshapes it into a sequence, and the sequence concatenated along the axis (ConcatFromSequence).
  struct RepeatLoop {
    const onnx::NodeProto *concat, *loop;
    std::string x;
    int64_t axis, repeats;
    std::vector<int64_t> dims, shape;  // x's, and the concatenation's
  };
  // A value's constant, where its values are known.
  const Const* knownConst(const std::string& v) const {
    auto it = consts_.find(v);
    return it != consts_.end() && it->second.known ? &it->second : nullptr;
  }
  // The node of op type `op` that makes v (`made`: valueMakers), or null.
  static const onnx::NodeProto* madeBy(const std::map<std::string, const onnx::NodeProto*>& made,
                                       const std::string& v, const char* op) {
    auto it = made.find(v);
    return it != made.end() && it->second->op_type() == op ? it->second : nullptr;
  }
  // How many nodes read each value, in subgraphs too, and graph outputs.
  std::map<std::string, int> readCounts() const {
    std::map<std::string, int> reads;
    std::function<void(const onnx::GraphProto&)> count = [&](const onnx::GraphProto& g) {
      for (const auto& n : g.node()) {
        for (const auto& i : n.input()) ++reads[i];
        for (const auto& a : n.attribute())
          if (a.has_g()) count(a.g());
      }
    };
    count(model_.graph());
    for (const auto& o : model_.graph().output()) ++reads[o.name()];
    return reads;
  }
  static bool arity(const onnx::NodeProto* n, int inputs, int outputs = 1) {
    return n && n->input_size() == inputs && n->output_size() == outputs;
  }
  // The Loop a ConcatFromSequence joins, where it is that template with every slice's count the same
  // constant r and x's shape known (`made`: each value's node, `readers`: how many nodes and graph
  // outputs read each value).
  std::optional<RepeatLoop> matchRepeatInterleave(const onnx::NodeProto& c,
                                                  const std::map<std::string, const onnx::NodeProto*>& made,
                                                  const std::map<std::string, int>& readers) const {
    auto allEqual = [](const Const& k, double value) {
      return std::all_of(k.v.begin(), k.v.end(), [&](double x) { return x == value; });
    };
    auto maker = [&](const std::string& v, const char* op) { return madeBy(made, v, op); };
    if (!arity(&c, 1) || intAttr(c, "new_axis", 0) != 0) return std::nullopt;
    const onnx::NodeProto* loop = maker(c.input(0), "Loop");
    // The Loop's sequence is read by this concatenation alone (it goes with it).
    if (!arity(loop, 3) || readers.at(c.input(0)) != 1 || !arity(maker(loop->input(2), "SequenceEmpty"), 0))
      return std::nullopt;
    const onnx::GraphProto* body = nullptr;
    for (const auto& a : loop->attribute())
      if (a.name() == "body" && a.has_g()) body = &a.g();
    const Const *cond = knownConst(loop->input(1)), *trips = knownConst(loop->input(0));
    if (!body || body->input_size() != 3 || body->output_size() != 2 || !cond || cond->v.size() != 1 ||
        cond->v[0] == 0 || !trips || trips->v.size() != 1)
      return std::nullopt;
    // The body, from the sequence it inserts into back to the slices and counts it takes.
    std::map<std::string, const onnx::NodeProto*> inBody;
    for (const auto& n : body->node())
      for (const auto& o : n.output()) inBody[o] = &n;
    auto step = [&](const std::string& v, const char* op, int inputs) -> const onnx::NodeProto* {
      auto it = inBody.find(v);
      return it != inBody.end() && it->second->op_type() == op && arity(it->second, inputs) ? it->second
                                                                                            : nullptr;
    };
    auto bodyConst = [&](const std::string& v) -> std::optional<Const> {
      auto it = inBody.find(v);
      if (it == inBody.end() || it->second->op_type() != "Constant") return std::nullopt;
      for (const auto& a : it->second->attribute())
        if (a.name() == "value" && a.has_t()) return fromTensor(a.t());
      return std::nullopt;
    };
    const std::string iter = body->input(0).name(), carried = body->input(2).name();
    // It runs on: the condition it passes on is the one it was given (true), cast or not.
    const onnx::NodeProto* goOn = step(body->output(0).name(), "Cast", 1);
    if (!goOn) goOn = step(body->output(0).name(), "Identity", 1);
    if (!goOn || (goOn->input(0) != loop->input(1) && goOn->input(0) != body->input(1).name()))
      return std::nullopt;
    const onnx::NodeProto* insert = step(body->output(1).name(), "SequenceInsert", 2);
    const onnx::NodeProto* reshape =
        insert && insert->input(0) == carried ? step(insert->input(1), "Reshape", 2) : nullptr;
    const onnx::NodeProto* expand = reshape ? step(reshape->input(0), "Expand", 2) : nullptr;
    const onnx::NodeProto* unsqueeze = expand ? step(expand->input(0), "Unsqueeze", 2) : nullptr;
    const onnx::NodeProto* slice = unsqueeze ? step(unsqueeze->input(0), "SequenceAt", 2) : nullptr;
    // The counts: the Where sets their -1 entries to 1 (its condition the counts equal to a ConstantOfShape
    // of ones times -1, its other branch that ConstantOfShape).
    const onnx::NodeProto* where = expand ? step(expand->input(1), "Where", 3) : nullptr;
    const onnx::NodeProto* counts = where ? step(where->input(2), "Concat", 3) : nullptr;
    const onnx::NodeProto* count = counts ? step(counts->input(1), "SequenceAt", 2) : nullptr;
    const onnx::NodeProto* equal = where ? step(where->input(0), "Equal", 2) : nullptr;
    const onnx::NodeProto* ones = where ? step(where->input(1), "ConstantOfShape", 1) : nullptr;
    const onnx::NodeProto* minus = equal ? step(equal->input(1), "Mul", 2) : nullptr;
    std::optional<Const> minusOne = minus ? bodyConst(minus->input(1)) : std::nullopt;
    bool ofOnes = false;
    if (ones)
      for (const auto& a : ones->attribute())
        if (a.name() == "value" && a.has_t()) {
          Const v = fromTensor(a.t());
          ofOnes = v.v.size() == 1 && v.v[0] == 1;
        }
    if (!slice || !count || !ofOnes || equal->input(0) != counts->output(0) ||
        minus->input(0) != ones->output(0) || !minusOne || minusOne->v.size() != 1 || minusOne->v[0] != -1 ||
        slice->input(1) != iter || count->input(1) != iter || inBody.count(slice->input(0)) ||
        inBody.count(count->input(0)))
      return std::nullopt;
    const onnx::NodeProto *splitX = maker(slice->input(0), "SplitToSequence"),
                          *splitR = maker(count->input(0), "SplitToSequence");
    if (!arity(splitX, 2) || !arity(splitR, 2) || intAttr(*splitR, "axis", 0) != 0 ||
        intAttr(*splitX, "keepdims", 1) != 1 || !hasConcreteShape(splitX->input(0)))
      return std::nullopt;
    RepeatLoop f{&c, loop, splitX->input(0), intAttr(*splitX, "axis", 0), 0, {}, {}};
    for (const Expr& d : shapeOf(f.x)) f.dims.push_back(d.eval());
    const int64_t rank = static_cast<int64_t>(f.dims.size());
    int64_t catAxis = intAttr(c, "axis", 0);
    if (f.axis < 0) f.axis += rank;
    if (catAxis < 0) catAxis += rank;  // (the pieces have x's rank: checked below)
    if (f.axis < 0 || f.axis >= rank || catAxis != f.axis) return std::nullopt;
    const int64_t n = f.dims[static_cast<size_t>(f.axis)];
    // Slices of one along the axis, a count for each, every count the same r; the Loop runs over them all.
    const Const *sizes = knownConst(splitX->input(1)), *countSizes = knownConst(splitR->input(1)),
                *reps = knownConst(splitR->input(0));
    if (!sizes || !countSizes || !reps || static_cast<int64_t>(sizes->v.size()) != n ||
        !allEqual(*sizes, 1.0) || static_cast<int64_t>(countSizes->v.size()) != n ||
        !allEqual(*countSizes, 1.0) || static_cast<int64_t>(reps->v.size()) != n || n == 0 ||
        reps->v[0] < 1 || !allEqual(*reps, reps->v[0]) || trips->v[0] != static_cast<double>(n))
      return std::nullopt;
    f.repeats = static_cast<int64_t>(reps->v[0]);
    // Each slice [..., 1, ...] unsqueezed after the axis, expanded to [..., 1, r, ...] (the counts' other
    // entries -1, which the Where makes 1, or 1, or the size), reshaped as ONNX reshapes (a 0 keeps the
    // expanded tensor's size at its place: torch's [0, 0, -1, 0] makes [b, s, 1, r, d] [b, s, d, r]) to
    // pieces of x's rank whose sizes before the axis are x's; concatenated along the axis, their elements
    // are in the order of x unsqueezed, expanded and reshaped once, to the pieces' shape n times longer
    // on the axis.
    std::optional<Const> axes = bodyConst(unsqueeze->input(1)), before = bodyConst(counts->input(0)),
                         after = bodyConst(counts->input(2)), target = bodyConst(reshape->input(1));
    if (!axes || axes->v.size() != 1 || !before || !after || !target ||
        static_cast<int64_t>(before->v.size()) != f.axis + 1 ||
        static_cast<int64_t>(after->v.size()) != rank - f.axis - 1 ||
        static_cast<int64_t>(target->v.size()) != rank || intAttr(*reshape, "allowzero", 0) != 0)
      return std::nullopt;
    int64_t at = static_cast<int64_t>(axes->v[0]);
    if (at < 0) at += rank + 1;
    if (at != f.axis + 1) return std::nullopt;
    std::vector<int64_t> expanded = f.dims;  // a slice unsqueezed and expanded
    expanded[static_cast<size_t>(f.axis)] = 1;
    expanded.insert(expanded.begin() + f.axis + 1, f.repeats);
    for (int64_t j = 0; j <= f.axis; ++j) {
      double e = before->v[static_cast<size_t>(j)];
      if (e != -1 && e != 1 && (j == f.axis || e != static_cast<double>(f.dims[static_cast<size_t>(j)])))
        return std::nullopt;
    }
    for (int64_t j = f.axis + 1; j < rank; ++j) {
      double e = after->v[static_cast<size_t>(j - f.axis - 1)];
      if (e != -1 && e != 1 && e != static_cast<double>(f.dims[static_cast<size_t>(j)])) return std::nullopt;
    }
    f.shape.assign(static_cast<size_t>(rank), 1);
    int64_t total = 1, sized = 1;
    for (int64_t d : expanded) total *= d;
    int inferred = -1;
    for (size_t j = 0; j < f.shape.size(); ++j) {
      double e = target->v[j];
      if (e == -1 && inferred < 0)
        inferred = static_cast<int>(j);
      else if (e == 0)  // (j < rank < expanded's rank)
        f.shape[j] = expanded[j];
      else if (e >= 1)
        f.shape[j] = static_cast<int64_t>(e);
      else
        return std::nullopt;
      if (static_cast<int>(j) != inferred) sized *= f.shape[j];
    }
    if (inferred >= 0) {
      if (sized <= 0 || total % sized != 0) return std::nullopt;
      f.shape[static_cast<size_t>(inferred)] = total / sized;
    } else if (sized != total) {
      return std::nullopt;
    }
    for (int64_t j = 0; j < f.axis; ++j)
      if (f.shape[static_cast<size_t>(j)] != f.dims[static_cast<size_t>(j)]) return std::nullopt;
    f.shape[static_cast<size_t>(f.axis)] *= n;
    return f;
  }

  // The Loops matchRepeatInterleave finds rewritten as Unsqueeze, Expand to r along the new axis and
  // Reshape: what repeat_kv's expand-and-reshape writes, which the import knows for data and folds for
  // tables. The nodes that built the sequences go too where nothing else reads them. False when there
  // was none.
  bool rewriteRepeatInterleaveLoops() {
    const std::map<std::string, const onnx::NodeProto*> made = valueMakers();
    const std::map<std::string, int> readers = readCounts();
    std::vector<RepeatLoop> found;
    for (const onnx::NodeProto& c : model_.graph().node())
      if (c.op_type() == "ConcatFromSequence")
        if (std::optional<RepeatLoop> f = matchRepeatInterleave(c, made, readers))
          found.push_back(std::move(*f));
    if (found.empty()) return false;
    std::set<std::string> taken = graphNames();
    std::set<const onnx::NodeProto*> dropped;
    std::map<const onnx::NodeProto*, std::vector<onnx::NodeProto>> replacing;
    auto initializer = [&](const std::string& base, const std::vector<int64_t>& values) {
      std::string name = unusedName(base, taken);
      onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(static_cast<int64_t>(values.size()));
      for (int64_t v : values) t->add_int64_data(v);
      return name;
    };
    for (const RepeatLoop& f : found) {
      const std::string out = f.concat->output(0);
      std::vector<int64_t> ones(f.dims.size() + 1, 1);
      ones[static_cast<size_t>(f.axis + 1)] = f.repeats;
      auto node = [&](const char* op, const std::vector<std::string>& inputs, const std::string& output) {
        onnx::NodeProto n;
        n.set_op_type(op);
        n.set_name(nodeName(*f.concat) + "_as_" + op);
        for (const auto& i : inputs) n.add_input(i);
        n.add_output(output);
        return n;
      };
      std::string unsqueezed = unusedName(out + "__unsqueezed", taken),
                  expanded = unusedName(out + "__expanded", taken);
      replacing[f.concat] = {node("Unsqueeze", {f.x, initializer(out + "__axes", {f.axis + 1})}, unsqueezed),
                             node("Expand", {unsqueezed, initializer(out + "__repeats", ones)}, expanded),
                             node("Reshape", {expanded, initializer(out + "__shape", f.shape)}, out)};
      dropped.insert(f.loop);
      std::vector<int64_t> meant = f.dims;
      meant[static_cast<size_t>(f.axis)] *= f.repeats;
      // Its values are torch's, in torch's order (the pieces reshaped once each): at torch's shape, the
      // reshape gives torch's result.
      if (torchRepeats_) replacing[f.concat].back().set_input(1, initializer(out + "__meant", meant));
      if (f.shape != meant)
        offRepeats_.push_back({out,
                               "torch's repeat_interleave Loop at '" + nodeName(*f.concat) + "' makes " +
                                   dimsText(f.shape) + " where torch's own result is " + dimsText(meant) +
                                   " (its slices reshaped with a 0 that keeps an expanded size)",
                               {}});
    }
    // The sequences' makers, where only the Loops dropped read them (a Loop's body reads them by name).
    std::set<std::string> read;
    std::function<void(const onnx::GraphProto&)> reads = [&](const onnx::GraphProto& g) {
      for (const auto& n : g.node()) {
        if (dropped.count(&n) || replacing.count(&n)) continue;
        read.insert(n.input().begin(), n.input().end());
        for (const auto& a : n.attribute())
          if (a.has_g()) reads(a.g());
      }
    };
    reads(model_.graph());
    for (const auto& o : model_.graph().output()) read.insert(o.name());
    for (const auto& n : model_.graph().node())
      if ((n.op_type() == "SplitToSequence" || n.op_type() == "SequenceEmpty") && n.output_size() == 1 &&
          !read.count(n.output(0)))
        dropped.insert(&n);
    std::vector<onnx::NodeProto> nodes;
    for (const onnx::NodeProto& n : model_.graph().node()) {
      if (auto r = replacing.find(&n); r != replacing.end())
        for (auto& m : r->second) nodes.push_back(std::move(m));
      else if (!dropped.count(&n))
        nodes.push_back(n);
    }
    model_.mutable_graph()->clear_node();
    for (auto& n : nodes) *model_.mutable_graph()->add_node() = std::move(n);
    return true;
  }

  // torch's repeat_interleave of one constant count along an axis whose size its tracer knows, past a size
  // it does not (symbolic_opset11: keys after a rotary computed in forward): x split into slices of 1
  // along the axis, each unsqueezed after it, expanded to r there, reshaped to x's sizes with -1 on the
  // axis and 0 for each size it lost, and the pieces concatenated along the axis. ONNX's 0 keeps the
  // expanded tensor's size at its place, which after the axis is r or the size before: [b, 1, r, s, d]
  // reshaped to [b, -1, 0, 0] is [b, d, r, s] where torch meant [b, r, s, d] (or no shape at all, where
  // the sizes ONNX keeps do not divide the tensor). Each such reshape is noted (offRepeats_); with
  // torchRepeats_, its target becomes torch's. True when a target changed.
  bool reshapeSplitRepeatsAsTorch() {
    const std::map<std::string, const onnx::NodeProto*> made = valueMakers();
    auto maker = [&](const std::string& v, const char* op) { return madeBy(made, v, op); };
    std::map<std::string, std::vector<const onnx::NodeProto*>> readers;  // in the graph itself
    std::map<std::string, int> reads = readCounts();  // by nodes anywhere (subgraphs too) and graph outputs
    for (const auto& n : model_.graph().node())
      for (const auto& i : n.input()) readers[i].push_back(&n);
    std::set<std::string> taken = graphNames();
    bool rewritten = false;
    for (onnx::NodeProto& r : *model_.mutable_graph()->mutable_node()) {
      if (r.op_type() != "Reshape" || r.input_size() != 2 || intAttr(r, "allowzero", 0) != 0) continue;
      const onnx::NodeProto* e = maker(r.input(0), "Expand");
      const onnx::NodeProto* u = e && e->input_size() == 2 ? maker(e->input(0), "Unsqueeze") : nullptr;
      const onnx::NodeProto* s = u ? maker(u->input(0), "Split") : nullptr;
      const Const *target = knownConst(r.input(1)), *to = e ? knownConst(e->input(1)) : nullptr;
      if (!s || !target || !to || !hasConcreteShape(u->input(0))) continue;
      std::vector<int64_t> x;  // the slice's dims
      for (const Expr& d : shapeOf(u->input(0))) x.push_back(d.eval());
      const int64_t rank = static_cast<int64_t>(x.size());
      int64_t axis = intAttr(*s, "axis", 0);
      if (axis < 0) axis += rank;
      std::vector<int64_t> axes = intsAttr(*u, "axes");  // (opset 13 on: an input)
      if (const Const* a = u->input_size() == 2 ? knownConst(u->input(1)) : nullptr)
        axes.assign(a->v.begin(), a->v.end());
      if (axis < 0 || axis >= rank || x[static_cast<size_t>(axis)] != 1 || axes.size() != 1 ||
          (axes[0] < 0 ? axes[0] + rank + 1 : axes[0]) != axis + 1 ||
          static_cast<int64_t>(target->v.size()) != rank || target->v[static_cast<size_t>(axis)] != -1 ||
          static_cast<int64_t>(to->v.size()) != rank + 1)
        continue;
      // Read by a concatenation along the axis alone, as torch writes it.
      auto rd = readers.find(r.output(0));
      if (rd == readers.end() || rd->second.size() != 1 || reads[r.output(0)] != 1 ||
          rd->second[0]->op_type() != "Concat")
        continue;
      int64_t catAxis = intAttr(*rd->second[0], "axis", 0);
      if ((catAxis < 0 ? catAxis + rank : catAxis) != axis) continue;
      std::vector<int64_t> expanded = x;  // unsqueezed, then broadcast with the Expand's target
      expanded.insert(expanded.begin() + axis + 1, 1);
      bool ok = true;
      for (size_t j = 0; j < expanded.size(); ++j) {
        auto t = static_cast<int64_t>(to->v[j]);
        if (t < 1 || (t != 1 && expanded[j] != 1 && t != expanded[j])) ok = false;
        if (expanded[j] == 1) expanded[j] = t;
      }
      for (size_t j = 0; j < target->v.size(); ++j)
        if (target->v[j] < -1 || (target->v[j] == -1 && j != static_cast<size_t>(axis))) ok = false;
      if (!ok) continue;
      int64_t total = 1;
      for (int64_t d : expanded) total *= d;
      // The shape each reading makes: a 0 keeps the size of the expanded tensor (ONNX) or of the slice
      // (torch) at its place; -1 takes the rest. None where the sizes kept do not divide the tensor.
      auto shapeReading = [&](const std::vector<int64_t>& kept) -> std::optional<std::vector<int64_t>> {
        std::vector<int64_t> shape(static_cast<size_t>(rank));
        int64_t sized = 1;
        for (size_t j = 0; j < shape.size(); ++j) {
          double v = target->v[j];
          shape[j] = v == 0 ? kept[j] : static_cast<int64_t>(v);
          if (v != -1) sized *= shape[j];
        }
        if (sized <= 0 || total % sized != 0) return std::nullopt;
        shape[static_cast<size_t>(axis)] = total / sized;
        return shape;
      };
      const std::optional<std::vector<int64_t>> onnxShape = shapeReading(expanded), meant = shapeReading(x);
      if (!meant || onnxShape == meant) continue;
      if (torchRepeats_) {
        std::string name = unusedName(r.output(0) + "__meant", taken);
        onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(rank);
        for (int64_t v : *meant) t->add_int64_data(v);
        r.set_input(1, name);
        rewritten = true;
      }
      // Noted once for the concatenation, at the shape its pieces make together.
      const onnx::NodeProto& cat = *rd->second[0];
      std::vector<int64_t> joined = *meant;
      joined[static_cast<size_t>(axis)] *= cat.input_size();
      std::string made = "no shape (the sizes its 0s keep do not divide a slice)";
      if (onnxShape) {
        std::vector<int64_t> joinedOnnx = *onnxShape;
        joinedOnnx[static_cast<size_t>(axis)] *= cat.input_size();
        made = dimsText(joinedOnnx);
      }
      auto noted = std::find_if(offRepeats_.begin(), offRepeats_.end(),
                                [&](const OffRepeat& o) { return o.value == cat.output(0); });
      if (noted == offRepeats_.end())
        noted = offRepeats_.insert(offRepeats_.end(),
                                   {cat.output(0),
                                    "torch's repeat_interleave at '" + nodeName(cat) +
                                        "' (a Split's slices expanded and reshaped) makes " + made +
                                        " where torch's own result is " + dimsText(joined) +
                                        " (its slices reshaped with a 0 that keeps an expanded size)",
                                    {}});
      // (A reshape ONNX gives no shape is where shape inference stops: the error names it.)
      if (std::find(noted->pieces.begin(), noted->pieces.end(), r.output(0)) == noted->pieces.end())
        noted->pieces.push_back(r.output(0));
    }
    return rewritten;
  }

  // An If whose condition folded (an export with a dynamic axis asks whether a dimension is 1 before it
  // squeezes it: Hugging Face's rotary cos.squeeze(1)): the branch taken goes in its place, its nodes and
  // initializers, and an Identity per output. A value the branch makes or holds under a name the graph
  // already has (a subgraph may shadow one) takes a name of its own. False when there was none.
  bool inlineFoldedIfs() {
    std::set<std::string> taken = graphNames();
    bool inlined = false;
    std::vector<onnx::NodeProto> nodes;
    for (const onnx::NodeProto& n : model_.graph().node()) {
      auto c = n.op_type() == "If" && n.input_size() == 1 ? consts_.find(n.input(0)) : consts_.end();
      const onnx::GraphProto* branch = nullptr;
      if (c != consts_.end() && c->second.known && c->second.v.size() == 1)
        for (const auto& a : n.attribute())
          if (a.name() == (c->second.v[0] != 0 ? "then_branch" : "else_branch") && a.has_g()) branch = &a.g();
      if (!branch || branch->output_size() != n.output_size()) {
        nodes.push_back(n);
        continue;
      }
      std::map<std::string, std::string> renamed;
      auto own = [&](const std::string& name) -> std::string {
        if (name.empty() || taken.insert(name).second) return name;
        return renamed[name] = unusedName(name + "__branch", taken);
      };
      auto use = [&](const std::string& name) {
        auto it = renamed.find(name);
        return it == renamed.end() ? name : it->second;
      };
      for (const auto& t : branch->initializer()) {
        onnx::TensorProto copy = t;
        copy.set_name(own(t.name()));
        *model_.mutable_graph()->add_initializer() = std::move(copy);
      }
      for (const onnx::NodeProto& b : branch->node()) {
        onnx::NodeProto copy = b;
        for (int i = 0; i < copy.input_size(); ++i) copy.set_input(i, use(copy.input(i)));
        for (int i = 0; i < copy.output_size(); ++i) copy.set_output(i, own(copy.output(i)));
        nodes.push_back(std::move(copy));
      }
      for (int o = 0; o < n.output_size(); ++o) {
        onnx::NodeProto id;
        id.set_op_type("Identity");
        id.set_name(n.name() + "_taken_" + std::to_string(o));
        id.add_input(use(branch->output(o).name()));
        id.add_output(n.output(o));
        nodes.push_back(id);
      }
      inlined = true;
    }
    if (!inlined) return false;
    model_.mutable_graph()->clear_node();
    for (auto& n : nodes) *model_.mutable_graph()->add_node() = std::move(n);
    return true;
  }

  // A repeat_interleave Loop whose shape is not torch's holds torch's values in torch's order: a reshape
  // to a constant shape (repeat_kv's, right after) reads what torch's did. Anything else that reads it by
  // its shape, or a graph output, makes the model compute what ONNX defines and not what torch did: said
  // in a note (Graph::notes), since the model imports.
  void noteOffRepeats() {
    if (torchRepeats_) {
      for (const OffRepeat& r : offRepeats_)
        graph_.notes.push_back(path_ + ": " + r.note +
                               ", and the model does not hold together at that shape: imported at torch's "
                               "(the values torch computes)");
      return;
    }
    for (const OffRepeat& r : offRepeats_) {
      std::string reader;
      for (const auto& o : model_.graph().output())
        if (o.name() == r.value) reader = "the graph's output '" + o.name() + "'";
      for (const auto& n : model_.graph().node()) {
        if (!reader.empty()) break;
        if (std::find(n.input().begin(), n.input().end(), r.value) == n.input().end()) continue;
        auto target =
            n.op_type() == "Reshape" && n.input_size() == 2 ? consts_.find(n.input(1)) : consts_.end();
        bool flat =
            target != consts_.end() && target->second.known && n.input(0) == r.value &&
            std::none_of(target->second.v.begin(), target->second.v.end(), [](double v) { return v == 0; });
        if (!flat) reader = "'" + nodeName(n) + "'";
      }
      if (!reader.empty())
        graph_.notes.push_back(
            path_ + ": " + r.note + ", and " + reader +
            " reads it by that shape: the model computes what ONNX defines, not what torch did");
    }
  }

  // The node of the model's graph that makes each value.
  std::map<std::string, const onnx::NodeProto*> valueMakers() const {
    std::map<std::string, const onnx::NodeProto*> made;
    for (const auto& n : model_.graph().node())
      for (const auto& o : n.output()) made[o] = &n;
    return made;
  }
  // Whether `value` is among what node reads, itself or through the nodes that make its inputs.
  bool dependsOn(const onnx::NodeProto& node, const std::string& value) const {
    const std::map<std::string, const onnx::NodeProto*> made = valueMakers();
    std::set<std::string> seen;
    std::vector<std::string> todo(node.input().begin(), node.input().end());
    while (!todo.empty()) {
      std::string v = todo.back();
      todo.pop_back();
      if (v == value) return true;
      if (!seen.insert(v).second) continue;
      if (auto it = made.find(v); it != made.end())
        todo.insert(todo.end(), it->second->input().begin(), it->second->input().end());
    }
    return false;
  }
  bool hasShape(const std::string& name) const {
    auto it = types_.find(name);
    return consts_.count(name) || (it != types_.end() && it->second->tensor_type().has_shape());
  }
  // Where ONNX shape inference stopped on the way to `name`: the first node back along values without a
  // shape whose inputs all have one (a slice of a mask buffer shorter than a fixed axis gives operands that
  // do not broadcast), with its inputs' shapes; empty when no node makes `name`.
  std::string whereShapesStop(std::string name) const {
    for (int step = 0; step < model_.graph().node_size(); ++step) {
      const onnx::NodeProto* node = nullptr;
      for (const auto& n : model_.graph().node())
        if (std::find(n.output().begin(), n.output().end(), name) != n.output().end()) node = &n;
      if (!node) return "";
      std::string shapeless, shapes;
      std::vector<std::vector<Expr>> known;  // the shapes of the inputs that have one
      for (const auto& in : node->input()) {
        if (in.empty()) continue;
        std::string text = "?";
        if (hasShape(in)) {
          try {
            std::string dims;
            known.push_back(shapeOf(in));
            for (const Expr& d : known.back()) dims += (dims.empty() ? "" : ", ") + d.str();
            text = "[" + dims + "]";
          } catch (const UserError&) {  // a dimension of unknown size
            text = "[?]";
          }
        } else if (shapeless.empty()) {
          shapeless = in;
        }
        shapes += (shapes.empty() ? "" : ", ") + text;
      }
      if (!shapeless.empty()) {
        name = shapeless;
        continue;
      }
      std::string why =
          "shapes that do not broadcast, or a fixed axis beyond what the model's own tensors hold";
      // A product whose operands do not meet (an export's reshape that put the wrong axis last).
      if (node->op_type() == "MatMul" && known.size() == 2 && known[0].size() >= 2 && known[1].size() >= 2) {
        const Expr &k = known[0].back(), &rows = known[1][known[1].size() - 2];
        if (k.isConstant() && rows.isConstant() && k.eval() != rows.eval())
          why = "the left operand's last dimension, " + k.str() + ", is not the right one's second last, " +
                rows.str();
      }
      std::string off;
      for (const OffRepeat& r : offRepeats_)
        if (dependsOn(*node, r.value) ||
            std::any_of(r.pieces.begin(), r.pieces.end(),
                        [&](const std::string& p) { return dependsOn(*node, p); }))
          off += "; " + r.note;
      return ": shape inference gives none to node '" + node->name() + "' (" + node->op_type() +
             "), whose inputs are " + shapes + " (" + why + ")" + off;
    }
    return "";
  }

  // Shape of a value: inferred dims, a named symbol for a dim_param; UserError when unknown.
  std::vector<Expr> shapeOf(const std::string& name) const {
    if (auto c = consts_.find(name); c != consts_.end()) {  // a constant's own dims, known where inference's are not
      std::vector<Expr> shape;
      for (auto d : c->second.dims) shape.push_back(Expr(d));
      return shape;
    }
    if (!hasShape(name))
      throw UserError(path_ + ": error: value '" + name + "' has no inferred shape" + whereShapesStop(name));
    std::vector<Expr> shape;
    for (const auto& d : types_.at(name)->tensor_type().shape().dim()) {
      if (d.has_dim_value()) shape.push_back(Expr(d.dim_value()));
      else if (d.has_dim_param()) shape.push_back(Expr::parse(symbolName(d.dim_param())));
      else throw UserError(path_ + ": error: value '" + name + "' has a dimension of unknown size");
    }
    return shape;
  }
  // The element type shape inference gave a value (UNDEFINED when it typed none).
  int32_t elemTypeOf(const std::string& name) const {
    auto it = types_.find(name);
    return it != types_.end() && it->second->has_tensor_type() ? it->second->tensor_type().elem_type()
                                                               : onnx::TensorProto::UNDEFINED;
  }
  // Whether shape inference typed the value as an integer tensor (shape arithmetic: int64).
  bool integerValue(const std::string& name) const {
    switch (elemTypeOf(name)) {
      case onnx::TensorProto::INT64: case onnx::TensorProto::INT32: case onnx::TensorProto::INT16:
      case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: case onnx::TensorProto::UINT16:
      case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64:
        return true;
      default:
        return false;
    }
  }
  bool hasConcreteShape(const std::string& name) const {
    try {
      for (const auto& d : shapeOf(name))
        if (!d.isConstant()) return false;
      return true;
    } catch (const UserError&) {
      return false;
    }
  }

  std::string nodeName(const onnx::NodeProto& n) const {
    return !n.name().empty()     ? n.name()
           : n.output_size() > 0 ? n.output(0)
                                 : "(a " + n.op_type() + " of no output)";
  }

  // visit, with a node whose inputs have no known shape listed among the unsupported ones.
  void visitOrRecord(const onnx::NodeProto& n) {
    try {
      visit(n);
    } catch (const UserError& e) {
      std::string why = e.what(), prefix = path_ + ": error: ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      unsupported_.push_back(nodeName(n) + " (" + n.op_type() + "): " + why);
    }
  }

  void visit(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (op == "Constant") {
      for (const auto& a : n.attribute()) {
        if (a.name() == "value") consts_[n.output(0)] = fromTensor(a.t());
        else if (a.name() == "value_float") consts_[n.output(0)] = {{}, {a.f()}};
        else if (a.name() == "value_int") consts_[n.output(0)] = {{}, {static_cast<double>(a.i())}};
        else if (a.name() == "value_ints") {
          Const c{{a.ints_size()}, {}};
          for (auto x : a.ints()) c.v.push_back(static_cast<double>(x));
          consts_[n.output(0)] = c;
        }
      }
      return;
    }
    bool allConst = true;
    for (const auto& in : n.input())
      if (!in.empty() && !consts_.count(in)) allConst = false;
    if (op == "Shape" && n.input_size() == 1 && hasShape(n.input(0))) {
      // A constant where every size is; over a symbolic dimension its sizes kept (shapeSizes_), for a Gather
      // of a constant one (x.size(-1)) to fold.
      try {
        std::vector<Expr> sizes = shapeOf(n.input(0));
        int64_t rank = static_cast<int64_t>(sizes.size()), start = intAttr(n, "start", 0),
                end = intAttr(n, "end", rank);
        auto clamp = [&](int64_t x) { return std::max<int64_t>(0, std::min(x < 0 ? x + rank : x, rank)); };
        sizes = std::vector<Expr>(sizes.begin() + clamp(start),
                                  sizes.begin() + std::max(clamp(start), clamp(end)));
        const std::vector<int64_t> dims = {static_cast<int64_t>(sizes.size())};
        if (keepSizes(n.output(0), sizes, &dims)) return;
      } catch (const UserError&) {  // a dimension of unknown size
      }
    }
    if (op == "EyeLike" && n.input_size() == 1 &&
        (consts_.count(n.input(0)) || hasConcreteShape(n.input(0)))) {
      // Ones on the diagonal k of a matrix of the input's shape (torch.eye in a mask): its values unread.
      std::vector<int64_t> dims =
          consts_.count(n.input(0)) ? consts_.at(n.input(0)).dims : std::vector<int64_t>{};
      if (!consts_.count(n.input(0)))
        for (const auto& e : shapeOf(n.input(0))) dims.push_back(e.eval());
      if (dims.size() == 2) {
        checkFoldedCount(dims);
        Const eye{dims, std::vector<double>(static_cast<size_t>(dims[0] * dims[1]), 0.0)};
        for (int64_t i = 0, k = intAttr(n, "k", 0); i < dims[0]; ++i)
          if (i + k >= 0 && i + k < dims[1]) eye.v[static_cast<size_t>(i * dims[1] + i + k)] = 1;
        consts_[n.output(0)] = eye;
        return;
      }
    }
    if (op == "Gather" && n.input_size() == 2 && shapeSizes_.count(n.input(0)) && consts_.count(n.input(1)) &&
        intAttr(n, "axis", 0) == 0) {
      // Sizes of a symbolic shape at constant indices: a constant where every one taken is.
      const std::vector<Expr>& sizes = shapeSizes_.at(n.input(0));
      const Const& at = consts_.at(n.input(1));
      std::vector<Expr> taken;
      for (double v : at.v) {
        int64_t i = static_cast<int64_t>(v) + (v < 0 ? static_cast<int64_t>(sizes.size()) : 0);
        if (i >= 0 && i < static_cast<int64_t>(sizes.size())) taken.push_back(sizes[static_cast<size_t>(i)]);
      }
      if (at.known && at.dims.size() <= 1 && taken.size() == at.v.size() &&
          keepSizes(n.output(0), taken, &at.dims))
        return;
    }
    if (op == "Slice" && shapeSizes_.count(n.input(0)) && sliceOfSizes(n)) return;
    if ((op == "Unsqueeze" || op == "Squeeze" || op == "Cast" || op == "Identity") && n.input_size() >= 1 &&
        shapeSizes_.count(n.input(0)))  // (a size as a scalar or a one-element vector: the same size)
      shapeSizes_[n.output(0)] = shapeSizes_.at(n.input(0));
    if (op == "Concat" && std::all_of(n.input().begin(), n.input().end(), [&](const std::string& in) {
          return shapeSizes_.count(in) || (consts_.count(in) && consts_.at(in).dims.size() == 1);
        })) {
      std::vector<Expr> joined;
      for (const auto& in : n.input())
        if (shapeSizes_.count(in)) {
          joined.insert(joined.end(), shapeSizes_.at(in).begin(), shapeSizes_.at(in).end());
        } else {
          for (double v : consts_.at(in).v) joined.push_back(Expr(static_cast<int64_t>(v)));
        }
      shapeSizes_[n.output(0)] = joined;
    }
    if (exactSizes(n)) return;
    if (allConst) checkFoldedSize(n);
    if (allConst && fold(n)) return;
    if (op == "Split" || op == "Slice" ||
        (op == "Gather" && n.input_size() == 2 && !consts_.count(n.input(0)) &&
         !symbolicShapes_.count(n.input(0)) && consts_.count(n.input(1)))) {
      sliceNodes(n);
      return;
    }
    Dyn d;
    d.node = &n;
    d.op = op;
    for (const auto& in : n.input()) d.inputs.push_back(in);
    d.output = n.output(0);
    static const std::set<std::string> mapped = {"MatMul",
                                                 "Gemm",
                                                 "Add",
                                                 "Sub",
                                                 "Mul",
                                                 "Div",
                                                 "Pow",
                                                 "Sqrt",
                                                 "Reciprocal",
                                                 "ReduceMean",
                                                 "ReduceSum",
                                                 "ReduceMax",
                                                 "ReduceMin",
                                                 "ReduceL2",
                                                 "ReduceSumSquare",
                                                 "ReduceL1",
                                                 "ReduceLogSumExp",
                                                 "Softmax",
                                                 "Transpose",
                                                 "Reshape",
                                                 "Tanh",
                                                 "Exp",
                                                 "Erf",
                                                 "Sigmoid",
                                                 "Relu",
                                                 "Gather",
                                                 "Identity",
                                                 "LayerNormalization",
                                                 "Where",
                                                 "Cast",
                                                 "Neg",
                                                 "Unsqueeze",
                                                 "Squeeze",
                                                 "Expand",
                                                 "Concat",
                                                 "Abs",
                                                 "Max",
                                                 "Min",
                                                 "Greater",
                                                 "Less",
                                                 "Equal",
                                                 "GreaterOrEqual",
                                                 "LessOrEqual",
                                                 "Not",
                                                 "And",
                                                 "Or",
                                                 "Xor",
                                                 "IsNaN",
                                                 "CumSum",
                                                 "IsInf",
                                                 "Trilu",
                                                 "Clip",
                                                 "Einsum",
                                                 "Tile",
                                                 "Pad",
                                                 "ScatterND",
                                                 "ScatterElements",
                                                 "GatherElements",
                                                 "Log",
                                                 "Sin",
                                                 "Cos",
                                                 "Softplus",
                                                 "LeakyRelu",
                                                 "HardSigmoid",
                                                 "HardSwish",
                                                 "Flatten",
                                                 "Elu",
                                                 "Selu",
                                                 "Celu",
                                                 "PRelu",
                                                 "Sign",
                                                 "Floor",
                                                 "Ceil",
                                                 "Round",
                                                 "Mod",
                                                 "LogSoftmax"};
    // Shape arithmetic that could not be folded: a Shape of a value with a symbolic dimension, and what is
    // computed from it, named as such (the dynamic reshapes and masks it feeds need constant shapes).
    bool fromShape = op == "Shape", data = false;  // data: reads a stream (not a constant, not a shape)
    for (const auto& in : n.input()) {
      fromShape = fromShape || symbolicShapes_.count(in) > 0;
      data = data || (op != "Shape" && !in.empty() && !consts_.count(in) && !symbolicShapes_.count(in));
    }
    if (fromShape) {
      static const std::set<std::string> shaping = {"Reshape", "Expand", "Tile", "Slice", "Split", "Squeeze", "Unsqueeze"};
      if (!data) for (const auto& out : n.output()) symbolicShapes_.insert(out);
      unsupported_.push_back(nodeName(n) + " (" + op +
                             (op == "Shape"           ? " of a value with a symbolic dimension"
                              : !data                 ? " of a symbolic shape"
                              : shaping.count(op) > 0 ? " to a shape computed from a symbolic dimension"
                                                      : " with an operand computed from a symbolic dimension") +
                             ")");
      return;
    }
    if (!mapped.count(op) || (op != "Identity" && n.output_size() != 1))
      unsupported_.push_back(nodeName(n) + " (" + op + ")");
    producer_[d.output] = dyn_.size();
    dyn_.push_back(d);
  }

  // Whether the import knows `value`'s sizes exactly, each a constant or a sum of products of the free
  // axes with no constant term and no / or % (6 * seq, -seq, seq - seq; not seq - 16).
  bool homogeneousSizes(const std::string& value) const {
    auto exact = shapeSizes_.find(value);
    if (exact == shapeSizes_.end()) return consts_.count(value) > 0;
    for (const Expr& e : exact->second) {
      if (e.isConstant()) continue;
      Bindings zero;
      for (const std::string& symbol : e.symbols()) zero[symbol] = 0;
      if (e.str().find_first_of("/%") != std::string::npos || e.eval(zero) != 0) return false;
    }
    return true;
  }

  // A Slice of a symbolic shape's sizes at constant starts, ends and steps (x.size(-2) as torch 1.13 writes
  // it: Shape, Slice [-2:-1], Squeeze): the sizes taken kept, or folded where all are constants (true).
  bool sliceOfSizes(const onnx::NodeProto& n) {
    auto ints = [&](int input, const char* attr) -> std::optional<std::vector<int64_t>> {
      if (n.input_size() == 1) return intsAttr(n, attr);  // opset 1 to 9: attributes
      if (n.input_size() <= input || n.input(input).empty()) return std::vector<int64_t>{};
      auto c = consts_.find(n.input(input));
      if (c == consts_.end() || !c->second.known) return std::nullopt;
      std::vector<int64_t> v;
      for (double x : c->second.v)
        v.push_back(x < -9e18 ? INT64_MIN / 2 : x > 9e18 ? INT64_MAX / 2 : static_cast<int64_t>(x));
      return v;
    };
    auto starts = ints(1, "starts"), ends = ints(2, "ends"), axes = ints(3, "axes"), steps = ints(4, "steps");
    if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 || axes->size() > 1 ||
        (!axes->empty() && axes->front() != 0 && axes->front() != -1) || steps->size() > 1 ||
        (!steps->empty() && steps->front() == 0))
      return false;
    const std::vector<Expr>& sizes = shapeSizes_.at(n.input(0));
    const int64_t count = static_cast<int64_t>(sizes.size()), step = steps->empty() ? 1 : steps->front();
    auto clamp = [&](int64_t x, int64_t low, int64_t high) {
      return std::max(low, std::min(x < 0 ? x + count : x, high));
    };
    // ONNX's bounds: [0, count] for a positive step, [-1, count - 1] for a negative one.
    int64_t from = step > 0 ? clamp(starts->front(), 0, count) : clamp(starts->front(), 0, count - 1),
            to = step > 0 ? clamp(ends->front(), 0, count) : clamp(ends->front(), -1, count - 1);
    std::vector<Expr> taken;
    for (int64_t i = from; step > 0 ? i < to : i > to; i += step)
      taken.push_back(sizes[static_cast<size_t>(i)]);
    const std::vector<int64_t> dims = {static_cast<int64_t>(taken.size())};
    return keepSizes(n.output(0), taken, &dims);
  }

  // The sizes (or constants, up to 8) a value holds exactly, from shapeSizes_ or consts_.
  bool knownSizes(const std::string& v, std::vector<Expr>& out) const {
    if (auto it = shapeSizes_.find(v); it != shapeSizes_.end()) {
      out = it->second;
      return true;
    }
    auto c = consts_.find(v);
    if (c == consts_.end() || !c->second.known || c->second.dims.size() > 1 || c->second.v.size() > 8)
      return false;
    out.clear();
    for (double x : c->second.v) {
      if (x != std::floor(x) || std::fabs(x) > 1e15) return false;
      out.push_back(Expr(static_cast<int64_t>(x)));
    }
    return true;
  }
  // The arithmetic torch writes over sizes, kept exact over a symbolic one: expand's target,
  // Where(Equal(s, -1), 1, s) (a size is never negative), n * heads, (n + 15) / 16. A result of constants
  // alone is a constant (true where it folded).
  bool exactSizes(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    static const std::set<std::string> ops = {"Reshape", "Equal", "Where", "Add", "Sub", "Mul", "Div", "Mod"};
    const bool negated = op == "Neg" && n.input_size() == 1 && shapeSizes_.count(n.input(0));  // x[-s:]
    if (!negated && (!ops.count(op) || n.output_size() != 1 || n.input_size() < 2)) return false;
    bool symbolic = false;
    std::vector<std::vector<Expr>> in;
    for (const auto& v : n.input()) {
      in.emplace_back();
      if (v.empty() || !knownSizes(v, in.back())) return false;
      symbolic = symbolic || shapeSizes_.count(v) > 0;
    }
    if (!symbolic) return false;
    std::vector<Expr> out;
    if (negated) {
      for (const Expr& e : in[0]) out.push_back(Expr::parse("-(" + e.str() + ")"));
    } else if (op == "Reshape") {  // a vector of sizes viewed as itself
      if (!hasConcreteShape(n.output(0)) || shapeOf(n.output(0)).size() > 1) return false;
      out = in[0];
    } else {
      size_t len = 1;
      for (const auto& v : in) len = std::max(len, v.size());
      for (const auto& v : in)
        if (v.size() != len && v.size() != 1) return false;
      auto at = [&](size_t k, size_t i) { return in[k].size() == 1 ? in[k][0] : in[k][i]; };
      for (size_t i = 0; i < len; ++i) {
        if (op == "Where") {
          if (!at(0, i).isConstant()) return false;
          out.push_back(at(0, i).eval() != 0 ? at(1, i) : at(2, i));
          continue;
        }
        const Expr &a = at(0, i), &b = at(1, i);
        if (op == "Equal") {
          if (a.isConstant() && b.isConstant())
            out.push_back(Expr(a.eval() == b.eval()));
          else if ((a.isConstant() && a.eval() < 0) || (b.isConstant() && b.eval() < 0))
            out.push_back(Expr(0));
          else if (a == b)
            out.push_back(Expr(1));
          else
            return false;
          continue;
        }
        if (a.isConstant() && b.isConstant()) {
          int64_t x = a.eval(), y = b.eval();
          if ((op == "Div" || op == "Mod") && y == 0) return false;
          out.push_back(Expr(op == "Add"   ? x + y
                             : op == "Sub" ? x - y
                             : op == "Mul" ? x * y
                             : op == "Div" ? x / y
                                           : x % y));
        } else {
          const char* sign = op == "Add"   ? "+"
                             : op == "Sub" ? "-"
                             : op == "Mul" ? "*"
                             : op == "Div" ? "/"
                                           : "%";
          out.push_back(Expr::parse("(" + a.str() + ")" + sign + "(" + b.str() + ")"));
        }
      }
    }
    std::vector<int64_t> dims;
    if (hasConcreteShape(n.output(0)))
      for (const Expr& d : shapeOf(n.output(0))) dims.push_back(d.eval());
    return keepSizes(n.output(0), out, hasConcreteShape(n.output(0)) ? &dims : nullptr);
  }
  // The sizes a node computed, as a constant of `dims` where every one is constant (true), else kept in
  // shapeSizes_ (none where dims does not hold them).
  bool keepSizes(const std::string& value, const std::vector<Expr>& sizes, const std::vector<int64_t>* dims) {
    if (dims && std::all_of(sizes.begin(), sizes.end(), [](const Expr& e) { return e.isConstant(); })) {
      Const c{*dims, {}};
      for (const Expr& e : sizes) c.v.push_back(static_cast<double>(e.eval()));
      if (c.count() != static_cast<int64_t>(c.v.size())) return false;
      consts_[value] = c;
      return true;
    }
    shapeSizes_[value] = sizes;
    return false;
  }

  // A constant sliced along any axes, by steps of either sign (a negative one walks back: torch.flip, and
  // F.pad's amounts reversed into ONNX's order).
  Const sliceConst(const onnx::NodeProto& n) {
    const Const& data = consts_.at(n.input(0));
    size_t rank = data.dims.size();
    std::vector<int64_t> begin(rank, 0), end = data.dims, step(rank, 1);
    auto list = [&](int i) -> std::vector<int64_t> {
      std::vector<int64_t> v;
      if (n.input_size() > i && !n.input(i).empty())
        for (double x : consts_.at(n.input(i)).v) v.push_back(x < -9e18 ? INT64_MIN / 2 : x > 9e18 ? INT64_MAX / 2 : static_cast<int64_t>(x));
      return v;
    };
    std::vector<int64_t> starts = list(1), ends = list(2), axes = list(3), steps = list(4);
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
      if (a < 0) a += static_cast<int64_t>(rank);
      if (a < 0 || a >= static_cast<int64_t>(rank)) throw UserError(path_ + ": error: Slice '" + nodeName(n) + "': axis out of range");
      int64_t size = data.dims[static_cast<size_t>(a)], st = i < steps.size() ? steps[i] : 1;
      if (st == 0) throw UserError(path_ + ": error: Slice '" + nodeName(n) + "': a step of 0");
      // ONNX: with a positive step, start and end clamp to [0, size]; with a negative one to [0, size - 1]
      // and [-1, size - 1].
      auto clamp = [&](int64_t x, int64_t lo, int64_t hi) {
        return std::max(lo, std::min(x < 0 ? x + size : x, hi));
      };
      bool back = st < 0;
      begin[static_cast<size_t>(a)] = back ? clamp(starts[i], 0, size - 1) : clamp(starts[i], 0, size);
      int64_t e = i < ends.size() ? ends[i] : (back ? INT64_MIN / 2 : size);
      end[static_cast<size_t>(a)] = back ? (e < -size ? -1 : clamp(e, -1, size - 1)) : clamp(e, 0, size);
      step[static_cast<size_t>(a)] = st;
    }
    Const out;
    for (size_t a = 0; a < rank; ++a) {
      int64_t span = step[a] > 0 ? end[a] - begin[a] : begin[a] - end[a],
              by = step[a] > 0 ? step[a] : -step[a];
      out.dims.push_back(std::max<int64_t>(0, (span + by - 1) / by));
    }
    std::vector<int64_t> idx(rank, 0);
    for (int64_t flat = 0; flat < out.count(); ++flat) {
      int64_t src = 0;
      for (size_t a = 0; a < rank; ++a) src = src * data.dims[a] + begin[a] + idx[a] * step[a];
      out.v.push_back(data.v.at(static_cast<size_t>(src)));
      for (size_t a = rank; a-- > 0;) {
        if (++idx[a] < out.dims[a]) break;
        idx[a] = 0;
      }
    }
    return out;
  }

  // Split, Slice and Gather at constant indices of a stream: one `slice` (axis, start, end) per output; a
  // step above 1 and a gathered scalar index add views (`reshape`). Several axes, negative steps and
  // indices that are not a run are unsupported.
  void sliceNodes(const onnx::NodeProto& n) {
    std::vector<Expr> shape = shapeOf(n.input(0));
    int64_t rank = static_cast<int64_t>(shape.size());
    auto constInput = [&](int i) -> const Const* {
      if (n.input_size() <= i || n.input(i).empty()) return nullptr;
      auto it = consts_.find(n.input(i));
      return it == consts_.end() ? nullptr : &it->second;
    };
    auto push = [&](const std::string& op, const std::string& input, const std::string& output,
                    std::map<std::string, AttrValue> attrs) {
      Dyn d;
      d.node = &n;
      d.op = op;
      d.inputs = {input};
      d.output = output;
      d.attrs = std::move(attrs);
      producer_[output] = dyn_.size();
      dyn_.push_back(d);
    };
    auto add = [&](const std::string& output, int64_t axis, int64_t start, int64_t end) {
      push("slice", n.input(0), output, {{"axis", axis}, {"start", start}, {"end", end}});
    };
    if (n.op_type() == "Split") {
      int64_t axis = intAttr(n, "axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank || !shape[static_cast<size_t>(axis)].isConstant()) {
        unsupported_.push_back(nodeName(n) + " (Split of a symbolic dimension)");
        return;
      }
      int64_t size = shape[static_cast<size_t>(axis)].eval(), start = 0;
      std::vector<int64_t> parts;
      if (const Const* c = constInput(1)) for (double x : c->v) parts.push_back(static_cast<int64_t>(x));
      else if (auto a = intsAttr(n, "split"); !a.empty()) parts = a;
      else parts.assign(static_cast<size_t>(n.output_size()), size / std::max(1, n.output_size()));
      for (int i = 0; i < n.output_size() && i < static_cast<int>(parts.size()); ++i) {
        add(n.output(i), axis, start, start + parts[static_cast<size_t>(i)]);
        start += parts[static_cast<size_t>(i)];
      }
      return;
    }
    // Gather at constant indices that are a run: a slice (a scalar index drops the axis, a view).
    if (n.op_type() == "Gather") {
      const Const& idx = consts_.at(n.input(1));
      int64_t axis = intAttr(n, "axis", 0);
      if (axis < 0) axis += rank;
      bool run = idx.known && idx.dims.size() <= 1 && !idx.v.empty() && axis >= 0 && axis < rank &&
                 shape[static_cast<size_t>(axis)].isConstant();
      int64_t size = run ? shape[static_cast<size_t>(axis)].eval() : 0, first = 0;
      for (size_t i = 0; run && i < idx.v.size(); ++i) {
        int64_t k = static_cast<int64_t>(idx.v[i]);
        if (k < 0) k += size;
        if (i == 0) first = k;
        run = k == first + static_cast<int64_t>(i) && k >= 0 && k < size;
      }
      if (!run && idx.known && idx.dims.size() == 1 && !idx.v.empty() && axis >= 0 && axis < rank &&
          shape[static_cast<size_t>(axis)].isConstant()) {
        // Indices of one axis in several runs (index_select of heads at arange(h) // rep, grouped-query
        // attention's K and V): a slice per run, concatenated along the axis.
        size = shape[static_cast<size_t>(axis)].eval();
        std::vector<std::pair<int64_t, int64_t>> runs;  // [start, end)
        for (double v : idx.v) {
          int64_t k = static_cast<int64_t>(v);
          if (k < 0) k += size;
          if (k < 0 || k >= size) {
            unsupported_.push_back(nodeName(n) + " (Gather of a stream at an index outside its axis)");
            return;
          }
          if (!runs.empty() && runs.back().second == k)
            ++runs.back().second;
          else
            runs.push_back({k, k + 1});
        }
        Dyn both;
        both.node = &n;
        both.op = "concat";
        both.output = n.output(0);
        both.attrs = {{"axis", axis}};
        for (size_t r = 0; r < runs.size(); ++r) {
          both.inputs.push_back(madeValue(n.output(0) + "__run" + std::to_string(r)));
          add(both.inputs.back(), axis, runs[r].first, runs[r].second);
        }
        producer_[both.output] = dyn_.size();
        dyn_.push_back(both);
        return;
      }
      if (!run) {
        // A run of one axis but for a symbolic extent: fixing the axis at import (--bind seq=N) takes it.
        bool symbolic = idx.known && idx.dims.size() <= 1 && !idx.v.empty() && axis >= 0 && axis < rank &&
                        !shape[static_cast<size_t>(axis)].isConstant();
        unsupported_.push_back(
            nodeName(n) + (symbolic ? " (Gather of a stream along a symbolic dimension)"
                                    : " (Gather of a stream at indices that are not a run of one axis)"));
        return;
      }
      int64_t end = first + static_cast<int64_t>(idx.v.size());
      if (!idx.dims.empty()) return add(n.output(0), axis, first, end);
      if (!hasConcreteShape(n.output(0))) {
        unsupported_.push_back(nodeName(n) + " (Gather of one index from a symbolic shape)");
        return;
      }
      std::vector<int64_t> dropped;
      for (const Expr& e : shapeOf(n.output(0))) dropped.push_back(e.eval());
      std::string taken = madeValue(n.output(0) + "__taken");
      add(taken, axis, first, end);
      return push("reshape", taken, n.output(0), {{"shape", dropped}});
    }
    const Const *starts = constInput(1), *ends = constInput(2), *axes = constInput(3), *steps = constInput(4);
    // Each of starts, ends, axes and steps a constant of one value (axes and steps may be left out).
    auto given = [&](int i) { return n.input_size() > i && !n.input(i).empty(); };
    if (!starts || !ends || starts->v.size() != 1 || ends->v.size() != 1 ||
        (given(3) && (!axes || axes->v.size() != 1)) ||
        (given(4) && (!steps || steps->v.size() != 1 || !(steps->v[0] >= 1 || steps->v[0] <= -1)))) {
      unsupported_.push_back(nodeName(n) +
                             " (Slice other than one axis with constant starts, ends and a non-zero step)");
      return;
    }
    int64_t axis = axes ? static_cast<int64_t>(axes->v[0]) : 0;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || !shape[static_cast<size_t>(axis)].isConstant()) {
      unsupported_.push_back(nodeName(n) + " (Slice of a symbolic dimension)");
      return;
    }
    int64_t size = shape[static_cast<size_t>(axis)].eval();
    if (steps &&
        steps->v[0] <= -1) {  // walking back (torch.flip): along the last axis, a product by a selection
      if (axis != rank - 1 || size > 2048 || rank < 2) {
        unsupported_.push_back(nodeName(n) +
                               " (Slice with a negative step along another axis than the last, " +
                               "along more than 2048 values, or of rank 1)");
        return;
      }
      // ONNX: start in [0, size - 1], end in [-1, size - 1]; elements start, start + step, .. above end.
      auto at = [&](double x, int64_t low) {
        int64_t v = x < -1e15 ? -size - 1 : x > 1e15 ? size : static_cast<int64_t>(x);
        if (v < 0) v += size;
        return std::max<int64_t>(low, std::min(v, size - 1));
      };
      int64_t first = at(starts->v[0], 0), last = at(ends->v[0], -1);
      int64_t step = static_cast<int64_t>(std::max(steps->v[0], -static_cast<double>(size)));
      std::vector<int64_t> taken;
      for (int64_t i = first; i > last; i += step) taken.push_back(i);
      if (taken.empty()) {
        unsupported_.push_back(nodeName(n) + " (Slice that takes nothing)");
        return;
      }
      std::string table = madeValue(n.output(0) + "__reversed");
      consts_[table] = selection(size, taken);
      push("MatMul", n.input(0), n.output(0), {});
      dyn_.back().inputs.push_back(table);
      return;
    }
    auto clamp = [&](double x) {
      int64_t v = x < -1e15 ? 0 : x > 1e15 ? size : static_cast<int64_t>(x);
      if (v < 0) v += size;
      return std::max<int64_t>(0, std::min(v, size));
    };
    int64_t start = clamp(starts->v[0]), end = clamp(ends->v[0]);
    int64_t step = steps ? static_cast<int64_t>(std::min(steps->v[0], static_cast<double>(size))) : 1;
    if (step == 1 || end - start <= 1) return add(n.output(0), axis, start, end);
    if (end - start <= step) return add(n.output(0), axis, start, start + 1);  // one element
    // x[..., start:end:step] as views and slices of step 1: the axis cut to a multiple of the step, split
    // into (size / step, step), the one column `start % step` taken, the rows from start / step, merged.
    // Where that cut would pass the axis's end (x[..., ::2] of an odd axis), the last element is sliced
    // alone and concatenated after the others.
    if (!hasConcreteShape(n.input(0))) {
      unsupported_.push_back(nodeName(n) + " (Slice with a step, of a value with a symbolic dimension)");
      return;
    }
    int64_t length = (end - start + step - 1) / step, cut = (start / step + length) * step;
    std::string result = n.output(0), last;
    if (cut > size) {
      --length;
      cut -= step;
      last = madeValue(n.output(0) + "__step_last");
      add(last, axis, start + length * step, start + length * step + 1);
      result = madeValue(n.output(0) + "__step_first");
    }
    std::vector<int64_t> dims;
    for (const Expr& e : shape) dims.push_back(e.eval());
    std::string at = n.input(0), base = n.output(0) + "__step";
    auto view = [&](std::vector<int64_t> to, const std::string& output) {
      push("reshape", at, output, {{"shape", to}});
      at = output;
    };
    auto take = [&](int64_t along, int64_t from, int64_t to, const std::string& output) {
      push("slice", at, output, {{"axis", along}, {"start", from}, {"end", to}});
      at = output;
    };
    if (cut < size) take(axis, 0, cut, madeValue(base + "_cut"));
    std::vector<int64_t> split = dims;
    split[static_cast<size_t>(axis)] = cut / step;
    split.insert(split.begin() + axis + 1, step);
    view(split, madeValue(base + "_split"));
    take(axis + 1, start % step, start % step + 1, madeValue(base + "_column"));
    if (start / step > 0) take(axis, start / step, start / step + length, madeValue(base + "_rows"));
    dims[static_cast<size_t>(axis)] = length;
    view(dims, result);
    if (last.empty()) return;
    Dyn both;
    both.node = &n;
    both.op = "concat";
    both.inputs = {result, last};
    both.output = n.output(0);
    both.attrs = {{"axis", axis}};
    producer_[both.output] = dyn_.size();
    dyn_.push_back(both);
  }

  // A node of constants is computed here, a double a value. One of the ops that make values from sizes (a
  // mask, a table, positions) whose output, by ONNX's shapes, holds more than kMaxFoldedValues and more than
  // any of its inputs stops the import by name: an input's axis of 2^32 made a Range of 2^32 positions, a
  // value at a time, for minutes, where a causal mask of 16,384 positions squared or a rotary table of 8 M
  // positions of 32 is the most a model needs. (A Range is checked by its own count, in fold; a join or a
  // cast of weights makes no more than it reads; broadcasts check themselves, in broadcast.)
  void checkFoldedSize(const onnx::NodeProto& n) const {  // (the node named where visitOrRecord lists it)
    static const std::set<std::string> making = {"ConstantOfShape", "Expand", "EyeLike", "Tile",
                                                 "MatMul",          "Trilu",  "Where",   "Gather",
                                                 "GatherElements",  "Einsum"};
    if (!making.count(n.op_type())) return;
    double largest = 0;
    for (const auto& in : n.input())
      if (!in.empty()) largest = std::max(largest, static_cast<double>(consts_.at(in).v.size()));
    for (const auto& name : n.output()) {
      if (!hasConcreteShape(name)) continue;
      double count = 1;
      for (const Expr& d : shapeOf(name)) count *= static_cast<double>(d.eval());
      checkFoldedCount(shapeText(shapeOf(name)), count, largest);
    }
  }

  // Folds a node of constant inputs; false when this front end cannot evaluate it.
  bool fold(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (n.input_size() == 0 || n.output_size() == 0) return false;
    auto in = [&](int i) -> const Const& { return consts_.at(n.input(i)); };
    Const out;
    using F = std::function<double(double, double)>;
    static const std::map<std::string, F> binary = {
        {"Add", [](double a, double b) { return a + b; }},     {"Sub", [](double a, double b) { return a - b; }},
        {"Mul", [](double a, double b) { return a * b; }},     {"Div", [](double a, double b) { return b == 0 ? 0 : a / b; }},
        {"Pow", [](double a, double b) { return std::pow(a, b); }}, {"Equal", [](double a, double b) { return a == b ? 1.0 : 0.0; }},
        {"Less", [](double a, double b) { return a < b ? 1.0 : 0.0; }}, {"Greater", [](double a, double b) { return a > b ? 1.0 : 0.0; }},
        {"LessOrEqual", [](double a, double b) { return a <= b ? 1.0 : 0.0; }},
        {"GreaterOrEqual", [](double a, double b) { return a >= b ? 1.0 : 0.0; }},
        {"And", [](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; }},
        {"Or", [](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; }},
        {"Xor", [](double a, double b) { return (a != 0) != (b != 0) ? 1.0 : 0.0; }},
        {"Max", [](double a, double b) { return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b); }},
        {"Min", [](double a, double b) { return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b); }}};
    if (op == "Div" && integerValue(n.output(0)))  // integer division truncates (chunk's ceil division)
      out = broadcast(in(0), in(1), [](double a, double b) { return b == 0 ? 0 : std::trunc(a / b); });
    else if (op == "Mod" && n.input_size() == 2)  // fmod 0: the divisor's sign (Python's %), 1: C's fmod
      out = broadcast(in(0), in(1), [fmod = intAttr(n, "fmod", 0) != 0](double a, double b) {
        return b == 0 ? 0 : fmod ? std::fmod(a, b) : a - b * std::floor(a / b);
      });
    else if (op == "Clip") {  // clamp of an index table (relative positions): bounds as inputs, or attributes
      out = in(0);
      double lo = floatAttr(n, "min", -std::numeric_limits<double>::infinity()),
             hi = floatAttr(n, "max", std::numeric_limits<double>::infinity());
      if (n.input_size() > 1 && !n.input(1).empty() && !in(1).v.empty()) lo = in(1).v[0];
      if (n.input_size() > 2 && !n.input(2).empty() && !in(2).v.empty()) hi = in(2).v[0];
      for (double& x : out.v) x = std::isnan(x) ? x : std::min(std::max(x, lo), hi);
    } else if (op == "Round" || op == "Relu") {
      out = in(0);
      for (double& x : out.v) x = op == "Round" ? std::nearbyint(x) : x < 0 ? 0 : x;  // Round: half to even
    } else if (auto it = binary.find(op); it != binary.end() && n.input_size() == 2)
      out = broadcast(in(0), in(1), it->second);
    else if (op == "IsNaN" || op == "IsInf") {  // a mask cleaned with nan_to_num
      out = in(0);
      bool negative = intAttr(n, "detect_negative", 1) != 0, positive = intAttr(n, "detect_positive", 1) != 0;
      for (double& x : out.v)
        x = op == "IsNaN" ? (std::isnan(x) ? 1 : 0) : (std::isinf(x) && (x < 0 ? negative : positive)) ? 1 : 0;
    } else if (op == "Sin" || op == "Cos" || op == "Exp" || op == "Log" || op == "Tanh" || op == "Erf" ||
               op == "Sigmoid" || op == "Abs" || op == "Floor" || op == "Ceil" || op == "Sign") {
      // a rope table built in forward; DeBERTa's log buckets of relative positions (sign, log, ceil)
      out = in(0);
      for (double& x : out.v)
        x = op == "Sign"    ? (x > 0   ? 1.0
                               : x < 0 ? -1.0
                                       : x)
            : op == "Sin"   ? std::sin(x)
            : op == "Cos"   ? std::cos(x)
            : op == "Exp"   ? std::exp(x)
            : op == "Log"   ? std::log(x)
            : op == "Tanh"  ? std::tanh(x)
            : op == "Erf"   ? std::erf(x)
            : op == "Abs"   ? std::fabs(x)
            : op == "Floor" ? std::floor(x)
            : op == "Ceil"  ? std::ceil(x)
                            : 1 / (1 + std::exp(-x));
    } else if (op == "Sqrt" || op == "Neg" || op == "Reciprocal" || op == "Cast" || op == "Identity" ||
               op == "Not") {
      out = in(0);
      int64_t to = op == "Cast" ? intAttr(n, "to", onnx::TensorProto::FLOAT) : int64_t{onnx::TensorProto::FLOAT};
      bool toBool = to == onnx::TensorProto::BOOL;
      bool toInteger = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32 || to == onnx::TensorProto::INT16 ||
                       to == onnx::TensorProto::INT8 || to == onnx::TensorProto::UINT8;
      for (double& x : out.v)
        x = op == "Sqrt"         ? std::sqrt(x)
            : op == "Neg"        ? -x
            : op == "Reciprocal" ? 1 / x
            : op == "Not"        ? (x == 0 ? 1 : 0)
            : toBool             ? (x != 0 ? 1 : 0)
            : toInteger          ? std::trunc(x)
                                 : x;
    } else if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Expand" ||
               op == "ConstantOfShape") {
      std::vector<int64_t> dims;
      if (hasConcreteShape(n.output(0))) {
        for (const auto& d : shapeOf(n.output(0))) dims.push_back(d.eval());
      } else if (!foldedDims(n, dims)) {
        return false;
      }
      for (int64_t d : dims)
        if (d < 0 && op == "ConstantOfShape")
          throw UserError(path_ + ": error: " + op + " '" + nodeName(n) + "' makes a dimension of " +
                          std::to_string(d));
      checkFoldedCount(dims, static_cast<double>(in(0).v.size()));
      if (op == "Expand") out = broadcast(in(0), Const{dims, std::vector<double>(static_cast<size_t>(Const{dims, {}}.count()), 0)}, [](double a, double) { return a; });
      else if (op == "ConstantOfShape") {
        double value = 0;
        for (const auto& a : n.attribute())
          if (a.name() == "value") value = fromTensor(a.t()).v.empty() ? 0 : fromTensor(a.t()).v[0];
        out.dims = dims;
        out.v.assign(static_cast<size_t>(out.count()), value);
      } else {
        out = in(0);
        out.dims = dims;
      }
    } else if (op == "Tile" && n.input_size() == 2 && in(1).v.size() == in(0).dims.size() &&
               static_cast<int64_t>(in(0).v.size()) == in(0).count()) {
      // Of a table (position ids repeated per batch: arange(s).unsqueeze(0).repeat(b, 1))
      const Const& x = in(0);
      out.dims = x.dims;
      for (size_t a = 0; a < x.dims.size(); ++a) {
        double r = in(1).v[a];
        if (!(r >= 0) || r > 1024) return false;
        out.dims[a] *= static_cast<int64_t>(r);
      }
      if (out.count() > (int64_t{1} << 24)) return false;
      for (int64_t flat = 0; flat < out.count(); ++flat) {
        int64_t from = 0, stride = 1, rem = flat;
        for (size_t a = out.dims.size(); a-- > 0;) {
          from += rem % out.dims[a] % x.dims[a] * stride;
          rem /= out.dims[a];
          stride *= x.dims[a];
        }
        out.v.push_back(x.v[static_cast<size_t>(from)]);
      }
    } else if (op == "Gather" && n.input_size() == 2 && !in(0).dims.empty()) {
      // Along `axis` of a table of any rank (T5's relative-position bias: a [buckets, heads] table at
      // constant buckets); an index outside the axis is not folded.
      const Const& x = in(0);
      int64_t rank = static_cast<int64_t>(x.dims.size()), axis = intAttr(n, "axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank || static_cast<int64_t>(x.v.size()) != x.count()) return false;
      int64_t size = x.dims[static_cast<size_t>(axis)], outer = 1, inner = 1;
      for (int64_t a = 0; a < axis; ++a) outer *= x.dims[static_cast<size_t>(a)];
      for (int64_t a = axis + 1; a < rank; ++a) inner *= x.dims[static_cast<size_t>(a)];
      out.dims.assign(x.dims.begin(), x.dims.begin() + axis);
      out.dims.insert(out.dims.end(), in(1).dims.begin(), in(1).dims.end());
      out.dims.insert(out.dims.end(), x.dims.begin() + axis + 1, x.dims.end());
      for (int64_t o = 0; o < outer; ++o)
        for (double i : in(1).v) {
          int64_t k = static_cast<int64_t>(i);
          if (k < 0) k += size;
          if (k < 0 || k >= size) return false;
          auto from = x.v.begin() + (o * size + k) * inner;
          out.v.insert(out.v.end(), from, from + inner);
        }
    } else if (op == "Concat" && in(0).dims.size() <= 1) {
      for (int i = 0; i < n.input_size(); ++i) out.v.insert(out.v.end(), in(i).v.begin(), in(i).v.end());
      out.dims = {static_cast<int64_t>(out.v.size())};
    } else if (op == "Concat") {  // of tables along any axis (a rope table's two halves)
      int64_t rank = static_cast<int64_t>(in(0).dims.size()), axis = intAttr(n, "axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return false;
      out.dims = in(0).dims;
      out.dims[static_cast<size_t>(axis)] = 0;
      int64_t outer = 1;
      for (int64_t a = 0; a < axis; ++a) outer *= in(0).dims[static_cast<size_t>(a)];
      for (int i = 0; i < n.input_size(); ++i) {
        if (static_cast<int64_t>(in(i).dims.size()) != rank || in(i).count() != static_cast<int64_t>(in(i).v.size()))
          return false;
        for (int64_t a = 0; a < rank; ++a)
          if (a != axis && in(i).dims[static_cast<size_t>(a)] != in(0).dims[static_cast<size_t>(a)]) return false;
        out.dims[static_cast<size_t>(axis)] += in(i).dims[static_cast<size_t>(axis)];
      }
      for (int64_t o = 0; o < outer; ++o)
        for (int i = 0; i < n.input_size(); ++i) {
          int64_t block = in(i).count() / std::max<int64_t>(1, outer);
          out.v.insert(out.v.end(), in(i).v.begin() + o * block, in(i).v.begin() + (o + 1) * block);
        }
    } else if (op == "Einsum") {
      // Of tables (torch.outer of positions and frequencies), or of one table (a transpose, a diagonal, a
      // sum over an index: `ij->ji`, `ii->i`, `ij->i`).
      std::string a, b, c;
      const bool one = n.input_size() == 1;
      if (one ? !einsumOneTerm(n, a, c) : !einsumTerms(n, a, b, c)) return false;
      if (a.size() != in(0).dims.size() || (!one && b.size() != in(1).dims.size())) return false;
      std::vector<std::pair<std::string, int>> terms = {{a, 0}};
      if (!one) terms.emplace_back(b, 1);
      std::string letters;
      std::map<char, int64_t> extent;
      for (const auto& [term, k] : terms)
        for (size_t i = 0; i < term.size(); ++i) {
          int64_t e = in(k).dims[i];
          if (extent.count(term[i]) && extent[term[i]] != e) return false;
          if (!extent.count(term[i])) letters += term[i];
          extent[term[i]] = e;
        }
      for (char ch : c) {
        if (!extent.count(ch)) return false;
        out.dims.push_back(extent[ch]);
      }
      out.v.assign(static_cast<size_t>(out.count()), 0.0);
      auto offset = [&](const std::string& term, const std::vector<int64_t>& dims, const std::map<char, int64_t>& at) {
        int64_t o = 0;
        for (size_t i = 0; i < term.size(); ++i) o = o * dims[i] + at.at(term[i]);
        return static_cast<size_t>(o);
      };
      std::map<char, int64_t> at;
      for (char ch : letters) at[ch] = 0;
      bool empty = std::any_of(extent.begin(), extent.end(), [](const auto& e) { return e.second == 0; });
      for (bool more = !empty; more;) {  // every assignment of the indices
        out.v[offset(c, out.dims, at)] +=
            in(0).v[offset(a, in(0).dims, at)] * (one ? 1.0 : in(1).v[offset(b, in(1).dims, at)]);
        more = false;
        for (size_t i = letters.size(); i-- > 0;) {
          if (++at[letters[i]] < extent[letters[i]]) {
            more = true;
            break;
          }
          at[letters[i]] = 0;
        }
      }
    } else if (op == "Where") {
      Const t = broadcast(in(0), in(1), [](double c, double a) { return c != 0 ? a : NAN; });
      out = broadcast(t, in(2), [](double a, double b) { return std::isnan(a) ? b : a; });
    } else if (op == "Split") {  // each output a slice of the constant along the axis
      const Const& x = in(0);
      int64_t rank = static_cast<int64_t>(x.dims.size()), axis = intAttr(n, "axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return false;
      std::vector<int64_t> parts;
      if (n.input_size() > 1 && !n.input(1).empty()) for (double p : in(1).v) parts.push_back(static_cast<int64_t>(p));
      else if (auto a = intsAttr(n, "split"); !a.empty()) parts = a;
      else if (n.output_size() > 0) parts.assign(static_cast<size_t>(n.output_size()), x.dims[static_cast<size_t>(axis)] / n.output_size());
      if (n.output_size() == 0 || static_cast<int>(parts.size()) != n.output_size()) return false;
      int64_t outer = 1, inner = 1, start = 0, size = x.dims[static_cast<size_t>(axis)];
      for (int64_t a = 0; a < axis; ++a) outer *= x.dims[static_cast<size_t>(a)];
      for (int64_t a = axis + 1; a < rank; ++a) inner *= x.dims[static_cast<size_t>(a)];
      std::vector<Const> folded;
      for (int i = 0; i < n.output_size(); ++i) {
        Const part;
        part.known = x.known;
        part.dims = x.dims;
        part.dims[static_cast<size_t>(axis)] = parts[static_cast<size_t>(i)];
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = start; k < start + parts[static_cast<size_t>(i)] && k < size; ++k)
            for (int64_t e = 0; e < inner; ++e) part.v.push_back(x.v.at(static_cast<size_t>((o * size + k) * inner + e)));
        if (static_cast<int64_t>(part.v.size()) != part.count()) return false;  // nothing folded
        start += parts[static_cast<size_t>(i)];
        folded.push_back(part);
      }
      for (int i = 0; i < n.output_size(); ++i) consts_[n.output(i)] = folded[static_cast<size_t>(i)];
      return true;
    } else if (op == "Slice") {
      out = sliceConst(n);
    } else if (op == "Trilu") {  // keeps the upper (upper=1) or lower triangle of the last two dims
      out = in(0);
      size_t r = out.dims.size();
      if (r < 2) return false;
      int64_t k = n.input_size() > 1 && !n.input(1).empty() ? static_cast<int64_t>(in(1).v.at(0)) : 0;
      bool upper = intAttr(n, "upper", 1) != 0;
      out = broadcast(out, triangle(out.dims[r - 2], out.dims[r - 1], k, upper),
                      [](double x, double keep) { return keep != 0 ? x : 0.0; });
    } else if (op == "Transpose") {  // of a table (a rope table's frequencies against positions)
      if (!transposeConst(in(0), intsAttr(n, "perm"), out)) return false;
    } else if (op == "MatMul") {  // of tables (inv_freq @ position_ids, as Hugging Face's rotary writes it)
      if (n.input_size() != 2 || n.input(1).empty() || !matmulConst(in(0), in(1), out)) return false;
    } else if (op == "Range") {  // ONNX's count: max(ceil((limit - start) / delta), 0)
      if (n.input_size() != 3 || in(0).v.size() != 1 || in(1).v.size() != 1 || in(2).v.size() != 1)
        return false;
      double start = in(0).v[0], limit = in(1).v[0], delta = in(2).v[0];
      double count = std::max(std::ceil((limit - start) / delta), 0.0);
      if (delta == 0 || !std::isfinite(count)) {
        std::ostringstream range;
        range << "a range from " << start << " to " << limit << " by " << delta << " has no finite count";
        throw UserError(path_ + ": error: " + range.str());
      }
      checkFoldedCount("[" + std::to_string(static_cast<int64_t>(std::min(count, 9e18))) + "]", count);
      for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
        out.v.push_back(start + static_cast<double>(i) * delta);
      out.dims = {static_cast<int64_t>(out.v.size())};
    } else if (reductions().count(op)) {  // of a table (the element count of a shape, for var's n - 1)
      if (!reduceConst(n, in(0), out)) return false;
    } else if (op == "NonZero" && n.input_size() == 1 && in(0).known &&  // (not of stand-in zeros: its count)
               static_cast<int64_t>(in(0).v.size()) == in(0).count()) {
      // The coordinates of a table's nonzero elements, [rank, count] (mask.nonzero(), index_put_ at them).
      const Const& x = in(0);
      std::vector<std::vector<double>> at(x.dims.size());
      for (int64_t flat = 0; flat < x.count(); ++flat) {
        if (x.v[static_cast<size_t>(flat)] == 0) continue;
        for (size_t a = x.dims.size(), rem = static_cast<size_t>(flat); a-- > 0;) {
          at[a].push_back(static_cast<double>(rem % static_cast<size_t>(x.dims[a])));
          rem /= static_cast<size_t>(x.dims[a]);
        }
      }
      out.dims = {static_cast<int64_t>(x.dims.size()), 0};
      for (const auto& coordinates : at) {
        out.v.insert(out.v.end(), coordinates.begin(), coordinates.end());
        out.dims[1] = static_cast<int64_t>(coordinates.size());
      }
    } else if (op == "ScatterND") {  // of tables (a mask written by slice assignment)
      if (n.input_size() != 3 ||
          !scatterNDConst(in(0), in(1), in(2), stringAttr(n, "reduction", "none"), out))
        return false;
    } else if (op == "ScatterElements" || op == "Scatter") {
      if (n.input_size() != 3 || !scatterElementsConst(in(0), in(1), in(2), intAttr(n, "axis", 0),
                                                       stringAttr(n, "reduction", "none"), out))
        return false;
    } else if (op == "GatherElements") {  // of tables (GPT-J's sin/cos rows at repeated position ids)
      if (n.input_size() != 2 || !gatherElementsConst(in(0), in(1), intAttr(n, "axis", 0), out)) return false;
    } else if (op == "CumSum") {  // of a table (OPT's positions: cumsum of a mask of ones)
      if (n.input_size() != 2 || in(1).v.size() != 1 ||
          !cumsumConst(in(0), static_cast<int64_t>(in(1).v[0]), intAttr(n, "exclusive", 0) != 0,
                       intAttr(n, "reverse", 0) != 0, out))
        return false;
    } else {
      return false;
    }
    for (const auto& i : n.input())
      if (!i.empty() && !consts_.at(i).known) out.known = false;
    consts_[n.output(0)] = out;
    return true;
  }

  static const std::set<std::string>& reductions() {
    static const std::set<std::string> ops = {"ReduceSum",  "ReduceMean", "ReduceMax",      "ReduceMin",
                                              "ReduceProd", "ReduceL2",   "ReduceSumSquare"};
    return ops;
  }
  // A reduction of a table over its `axes` (an attribute, or ReduceSum's input 1; none: every axis, or
  // none with noop_with_empty_axes), keepdims as ONNX defines them.
  bool reduceConst(const onnx::NodeProto& n, const Const& x, Const& out) const {
    int64_t rank = static_cast<int64_t>(x.dims.size());
    if (static_cast<int64_t>(x.v.size()) != x.count()) return false;
    std::vector<int64_t> axes = reductionAxes(n);
    if (axes.empty() && intAttr(n, "noop_with_empty_axes", 0)) {
      out = x;
      return true;
    }
    std::vector<char> reduced(static_cast<size_t>(rank), axes.empty() ? 1 : 0);
    for (int64_t a : axes) {
      if (a < 0) a += rank;
      if (a < 0 || a >= rank || reduced[static_cast<size_t>(a)]) return false;
      reduced[static_cast<size_t>(a)] = 1;
    }
    bool keep = intAttr(n, "keepdims", 1) != 0;
    std::vector<int64_t> kept;  // the output's dims with every axis kept (a reduced one of size 1)
    out.dims.clear();
    for (int64_t a = 0; a < rank; ++a) {
      bool r = reduced[static_cast<size_t>(a)];
      kept.push_back(r ? 1 : x.dims[static_cast<size_t>(a)]);
      if (!r || keep) out.dims.push_back(r ? 1 : x.dims[static_cast<size_t>(a)]);
    }
    const std::string& op = n.op_type();
    int64_t size = 1, count = x.count();
    for (int64_t d : kept) size *= d;
    double start = op == "ReduceProd" ? 1 : op == "ReduceMax" ? -INFINITY : op == "ReduceMin" ? INFINITY : 0;
    out.v.assign(static_cast<size_t>(size), start);
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t rem = flat, at = 0, stride = 1;
      for (int64_t a = rank; a-- > 0;) {
        int64_t i = rem % x.dims[static_cast<size_t>(a)];
        rem /= x.dims[static_cast<size_t>(a)];
        at += (reduced[static_cast<size_t>(a)] ? 0 : i) * stride;
        stride *= kept[static_cast<size_t>(a)];
      }
      double& y = out.v[static_cast<size_t>(at)];
      double v = x.v[static_cast<size_t>(flat)];
      y = op == "ReduceProd"                            ? y * v
          : op == "ReduceMax"                           ? std::max(y, v)
          : op == "ReduceMin"                           ? std::min(y, v)
          : op == "ReduceL2" || op == "ReduceSumSquare" ? y + v * v
                                                        : y + v;
    }
    if (op == "ReduceL2")
      for (double& y : out.v) y = std::sqrt(y);
    if (op == "ReduceMean")
      for (double& y : out.v) y /= static_cast<double>(count / std::max<int64_t>(size, 1));
    return true;
  }

  // The dims of a shape-changing node's output computed from its constant inputs, for when ONNX's shape
  // inference gave none (a target shape computed by other nodes); false when they cannot be.
  bool foldedDims(const onnx::NodeProto& n, std::vector<int64_t>& dims) {
    const std::string& op = n.op_type();
    const Const& x = consts_.at(n.input(0));
    auto ints = [&](int i) {
      std::vector<int64_t> v;
      if (n.input_size() > i && !n.input(i).empty())
        for (double d : consts_.at(n.input(i)).v) v.push_back(static_cast<int64_t>(d));
      return v;
    };
    if (op == "ConstantOfShape") {
      dims = ints(0);
    } else if (op == "Expand") {  // numpy broadcasting of the input's dims and the target's
      std::vector<int64_t> target = ints(1);
      size_t rank = std::max(target.size(), x.dims.size());
      dims.assign(rank, 1);
      for (size_t i = 0; i < rank; ++i) {
        int64_t a = i < rank - x.dims.size() ? 1 : x.dims[i - (rank - x.dims.size())];
        int64_t b = i < rank - target.size() ? 1 : target[i - (rank - target.size())];
        if (a != b && a != 1 && b != 1) return false;
        dims[i] = std::max(a, b);
      }
    } else if (op == "Reshape") {  // 0 copies the input's dim (allowzero 0), -1 takes what is left
      dims = ints(1);
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == 0 && !intAttr(n, "allowzero", 0)) {
          if (i >= x.dims.size()) return false;
          dims[i] = x.dims[i];
        }
        if (dims[i] == -1) infer = static_cast<int64_t>(i);
        else known *= dims[i];
      }
      if (infer >= 0) {
        if (known == 0 || x.count() % known) return false;
        dims[static_cast<size_t>(infer)] = x.count() / known;
      }
    } else {  // Unsqueeze, Squeeze: axes from the input (opset 13) or the attribute
      std::vector<int64_t> axes = n.input_size() > 1 ? ints(1) : intsAttr(n, "axes");
      dims = x.dims;
      if (op == "Squeeze") {
        std::vector<int64_t> kept;
        int64_t rank = static_cast<int64_t>(dims.size());
        for (int64_t i = 0; i < rank; ++i) {
          bool drop = axes.empty() ? dims[static_cast<size_t>(i)] == 1
                                   : std::count_if(axes.begin(), axes.end(), [&](int64_t a) { return (a < 0 ? a + rank : a) == i; }) > 0;
          if (!drop) kept.push_back(dims[static_cast<size_t>(i)]);
        }
        dims = kept;
      } else {
        int64_t rank = static_cast<int64_t>(dims.size() + axes.size());
        for (auto& a : axes) a = a < 0 ? a + rank : a;
        std::sort(axes.begin(), axes.end());
        for (int64_t a : axes) {
          if (a < 0 || a > static_cast<int64_t>(dims.size())) return false;
          dims.insert(dims.begin() + a, 1);
        }
      }
    }
    for (int64_t d : dims)
      if (d < 0) return false;
    return true;
  }

  // --- patterns ---
  Dyn* producer(const std::string& value) {
    auto it = producer_.find(value);
    return it == producer_.end() ? nullptr : &dyn_[it->second];
  }
  std::vector<Dyn*> consumers(const std::string& value) {
    std::vector<Dyn*> out;
    for (auto& d : dyn_)
      for (const auto& in : d.inputs)
        if (in == value && !d.dead) out.push_back(&d);
    return out;
  }
  bool isConst(const std::string& v, double value, double tol = 1e-3) const {
    auto it = consts_.find(v);
    return it != consts_.end() && it->second.count() == 1 && std::fabs(it->second.v[0] - value) <= tol * std::max(1.0, std::fabs(value));
  }
  // The other input of a binary node, given one.
  static std::string other(const Dyn& d, const std::string& one) { return d.inputs[0] == one ? d.inputs[1] : d.inputs[0]; }
  Dyn* soleConsumer(const std::string& v, const char* op) {
    auto c = consumers(v);
    return c.size() == 1 && c[0]->op == op ? c[0] : nullptr;
  }
  // Whether every node of a pattern but `last` is read by nodes of the pattern alone, and is no model output:
  // then the pattern's one op stands for all of them. (Torch merges equal nodes: a 0.5 * x or an inner sum
  // the model uses again elsewhere is one node with readers outside.)
  bool selfContained(const std::vector<Dyn*>& nodes, const Dyn* last) {
    for (const Dyn* n : nodes) {
      if (n == last) continue;
      if (isModelOutput(n->output)) return false;
      for (const Dyn* c : consumers(n->output))
        if (std::find(nodes.begin(), nodes.end(), c) == nodes.end()) return false;
    }
    return true;
  }
  void replace(std::vector<Dyn*> nodes, Dyn* last, const std::string& op, std::vector<std::string> inputs) {
    for (Dyn* n : nodes) n->dead = true;
    last->dead = false;
    last->op = op;
    last->inputs = std::move(inputs);
    last->attrs.clear();
  }

  // Node d read through: gone, its readers read its first input, and its value resolves to it (alias_).
  void readThrough(Dyn& d) {
    for (auto& c : dyn_)
      for (auto& in : c.inputs)
        if (in == d.output && &c != &d) in = d.inputs[0];
    d.dead = true;
    alias_[d.output] = d.inputs[0];
  }
  // Casts of a stream between float types that the design does not round (Identity, .to(torch.float32),
  // Hugging Face's RMSNorm casting to float32 and back to its input's dtype) read through, so that the
  // patterns around them are seen whole (the norm was 6 ops apart: qwen2_block.onnx compiled to 47 kernels,
  // now 37). Kept: a cast that is a model output, and the float32 stream cast to 16 bits that emit refuses.
  void bypassFloatCasts() {
    for (auto& d : dyn_) {
      if (d.dead || (d.op != "Cast" && d.op != "Identity") || consts_.count(d.inputs[0]) ||
          isModelOutput(d.output))
        continue;
      if (d.op == "Cast" && (!isFloatType(intAttr(*d.node, "to", onnx::TensorProto::FLOAT)) ||
                             roundsFloatStream(d) || !isFloatType(elemTypeOf(d.inputs[0]))))
        continue;
      readThrough(d);
    }
  }
  // An addition of zeros or a multiplication by ones, of the stream's own shape or one it broadcasts into,
  // reads through: GPT-NeoX's and Bloom's torch.baddbmm(zeros, q, k^T, beta=1, alpha) exports its
  // zeros as a constant [b * h, R, K] added to the scores, which would be read from HBM as a weight and
  // would hide a causal mask after it.
  void dropNeutralOperands() {
    for (auto& d : dyn_) {
      if (d.dead || d.inputs.size() != 2 || isModelOutput(d.output)) continue;
      bool add = d.op == "Add" || d.op == "Sub", mul = d.op == "Mul" || d.op == "Div";
      if (!add && !mul) continue;
      bool commutes = d.op == "Add" || d.op == "Mul";
      for (size_t c : {size_t{1}, size_t{0}}) {
        if (c == 0 && !commutes) break;
        const std::string &constant = d.inputs[c], &stream = d.inputs[1 - c];
        auto k = consts_.find(constant);
        if (k == consts_.end() || consts_.count(stream) || !k->second.known || k->second.v.empty() ||
            !std::all_of(k->second.v.begin(), k->second.v.end(),
                         [&](double v) { return v == (add ? 0 : 1); }) ||
            !isFloatType(elemTypeOf(stream)) || !hasConcreteShape(stream) || !hasConcreteShape(d.output) ||
            shapeOf(stream) != shapeOf(d.output))
          continue;
        d.inputs = {stream};
        readThrough(d);
        break;
      }
    }
  }
  // A view of a view is one view of the first's input, and none where it gives the input's shape back
  // (OPT views its scores as [b, h, R, K] for the mask and back as [b * h, R, K]: with the mask gone into
  // the causal softmax, the two views meet). A view of a stream made in another order than its tensor's
  // costs a converter that holds it whole, so two that cancel cost two for nothing.
  void mergeViews() {
    for (auto& d : dyn_) {
      if (d.dead || d.op != "Reshape" || d.inputs.empty()) continue;
      Dyn* p = producer(d.inputs[0]);
      if (!p || p->dead || p->op != "Reshape" || p->inputs.empty() || consts_.count(p->inputs[0]) ||
          consumers(p->output).size() != 1 || isModelOutput(p->output))
        continue;
      d.inputs[0] = p->inputs[0];
      p->dead = true;
      if (isModelOutput(d.output) || !hasConcreteShape(d.inputs[0]) || !hasConcreteShape(d.output) ||
          shapeOf(d.inputs[0]) != shapeOf(d.output))
        continue;
      readThrough(d);
    }
  }
  // A zero-size operand of a Concat adds nothing (x[..., rot:] where the rotary covers the whole head:
  // Qwen-1's, GPT-NeoX's or StableLM's partial rotary at a fraction of 1.0): dropped, one operand left
  // read through, and a zero-size value nothing reads any more (that slice) goes too.
  void dropEmptyOperands() {
    auto empty = [&](const std::string& v) {  // (no shape known, or a dim of unknown size: not empty)
      try {
        if (!hasShape(v)) return false;
        std::vector<Expr> shape = shapeOf(v);
        return std::any_of(shape.begin(), shape.end(),
                           [](const Expr& e) { return e.isConstant() && e.eval() == 0; });
      } catch (const UserError&) {
        return false;
      }
    };
    for (auto& d : dyn_) {
      if (d.dead || d.op != "Concat" || consts_.count(d.output) ||
          std::all_of(d.inputs.begin(), d.inputs.end(), empty))
        continue;
      std::vector<std::string> kept;
      for (const std::string& in : d.inputs)
        if (!empty(in)) kept.push_back(in);
      if (kept.size() == 1 && consts_.count(kept[0])) continue;  // (a constant aliased would go undeclared)
      d.inputs = std::move(kept);
      if (d.inputs.size() == 1) d.op = "Identity";
    }
    // Readers before the values they read (the nodes are in topological order): a chain of zero-size
    // values (a slice, then a cast) goes whole.
    for (auto d = dyn_.rbegin(); d != dyn_.rend(); ++d)
      if (!d->dead && empty(d->output) && !isModelOutput(d->output) && consumers(d->output).empty())
        d->dead = true;
  }
  // A Cast of a float32 stream to 16 bits in a float32 model: the design computes in f32 and would not
  // round it (refused when emitted).
  bool roundsFloatStream(const Dyn& d) const {
    int64_t to = intAttr(*d.node, "to", onnx::TensorProto::FLOAT);
    if (to != onnx::TensorProto::FLOAT16 && to != onnx::TensorProto::BFLOAT16) return false;
    int32_t fromType = elemTypeOf(d.inputs[0]);
    for (const auto& in : model_.graph().input())
      if (in.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16 ||
          in.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16)
        return false;  // a 16-bit model rounds everywhere
    return fromType == onnx::TensorProto::FLOAT || fromType == onnx::TensorProto::DOUBLE;
  }

  void recognisePatterns() {
    for (auto& d : dyn_) {
      if (d.dead) continue;
      if (d.op == "Erf") geluErf(d);
      else if (d.op == "Tanh") geluTanh(d);
      else if (d.op == "Sqrt") norm(d);
      else if (d.op == "Sigmoid") silu(d);
      else if (d.op == "Concat") rope(d);
      else if (d.op == "Softmax") causalMask(d);
      else if (d.op == "LayerNormalization") {
        int64_t axis = intAttr(*d.node, "axis", -1), rank = static_cast<int64_t>(shapeOf(d.inputs[0]).size());
        if (axis != -1 && axis != rank - 1)  // over the axes from `axis` on: several, not the last alone
          unsupported_.push_back(nodeName(*d.node) + " (LayerNormalization over the axes from " +
                                 std::to_string(axis) + ", not the last alone)");
        d.op = "layernorm";
        d.inputs.resize(std::min<size_t>(d.inputs.size(), 3));
        d.attrs.clear();
        for (const auto& a : d.node->attribute())
          if (a.name() == "epsilon") d.attrs["eps"] = static_cast<double>(a.f());
      }
    }
  }
  // 0.5 * x as one Mul of x by the constant 0.5 (either way round), or null.
  Dyn* halfOf(const std::string& v, const std::string& x) {
    Dyn* h = producer(v);
    if (!h || h->op != "Mul" || h->inputs.size() != 2) return nullptr;
    bool half = (h->inputs[0] == x && isConst(h->inputs[1], 0.5)) ||
                (h->inputs[1] == x && isConst(h->inputs[0], 0.5));
    return half ? h : nullptr;
  }
  // The products that make 0.5 * x * s of s = 1 + erf(..) or 1 + tanh(..): by x then by 0.5, by 0.5 then by
  // x, or by 0.5 * x computed apart (with it, unless read elsewhere: then it stays an op). The nodes, the
  // last one last; empty when they are not those (3 * x * s is no GELU).
  std::vector<Dyn*> halfXProducts(const Dyn& s, const std::string& x) {
    Dyn* m1 = soleConsumer(s.output, "Mul");
    if (!m1) return {};
    std::string by = other(*m1, s.output);
    if (Dyn* h = halfOf(by, x))
      return consumers(h->output).size() == 1 ? std::vector<Dyn*>{h, m1} : std::vector<Dyn*>{m1};
    bool byX = by == x;
    if (!byX && !isConst(by, 0.5)) return {};
    Dyn* m2 = soleConsumer(m1->output, "Mul");
    if (!m2) return {};
    std::string then = other(*m2, m1->output);
    if (byX ? !isConst(then, 0.5) : then != x) return {};
    return {m1, m2};
  }
  // x/sqrt2 -> Erf -> +1 -> then 0.5 * x times it (halfXProducts)
  void geluErf(Dyn& erf) {
    Dyn* div = producer(erf.inputs[0]);
    if (!div || div->op != "Div" || !isConst(div->inputs[1], std::sqrt(2.0))) return;
    std::string x = div->inputs[0];
    Dyn* add = soleConsumer(erf.output, "Add");
    if (!add || !isConst(other(*add, erf.output), 1.0)) return;
    std::vector<Dyn*> nodes = halfXProducts(*add, x);
    if (nodes.empty()) return;
    Dyn* last = nodes.back();
    nodes.insert(nodes.end(), {div, &erf, add});
    if (!selfContained(nodes, last)) return;
    replace(nodes, last, "gelu", {x});
  }
  // 0.5x * (1 + tanh(c * (x + 0.044715 x^3))), c = sqrt(2 / pi)
  void geluTanh(Dyn& tanh) {
    Dyn* scale = producer(tanh.inputs[0]);
    if (!scale || scale->op != "Mul") return;
    bool cFirst = consts_.count(scale->inputs[0]) > 0;
    if (!isConst(scale->inputs[cFirst ? 0 : 1], std::sqrt(2.0 / M_PI))) return;
    Dyn* sum = producer(scale->inputs[cFirst ? 1 : 0]);
    if (!sum || sum->op != "Add") return;
    Dyn* cubeScaled = producer(sum->inputs[1]);
    std::string x = sum->inputs[0];
    if (!cubeScaled || cubeScaled->op != "Mul") {
      cubeScaled = producer(sum->inputs[0]);
      x = sum->inputs[1];
    }
    if (!cubeScaled || cubeScaled->op != "Mul") return;
    // x^3 as Pow(x, 3), or as Mul(x, Mul(x, x)), times 0.044715.
    bool kFirst = consts_.count(cubeScaled->inputs[0]) > 0;
    if (!isConst(cubeScaled->inputs[kFirst ? 0 : 1], 0.044715)) return;
    Dyn* cube = producer(cubeScaled->inputs[kFirst ? 1 : 0]);
    if (!cube) return;
    std::vector<Dyn*> nodes = {scale, sum, cubeScaled, cube, &tanh};
    if (cube->op == "Pow") {
      if (cube->inputs[0] != x || !isConst(cube->inputs[1], 3.0)) return;
    } else if (cube->op == "Mul" && (cube->inputs[0] == x || cube->inputs[1] == x)) {
      Dyn* square = producer(other(*cube, x));
      if (!square || square->op != "Mul" || square->inputs[0] != x || square->inputs[1] != x) return;
      nodes.push_back(square);
    } else {
      return;
    }
    Dyn* add = soleConsumer(tanh.output, "Add");
    if (!add || !isConst(other(*add, tanh.output), 1.0)) return;
    std::vector<Dyn*> products = halfXProducts(*add, x);
    if (products.empty()) return;
    Dyn* last = products.back();
    nodes.push_back(add);
    nodes.insert(nodes.end(), products.begin(), products.end());
    if (!selfContained(nodes, last)) return;
    replace(nodes, last, "gelu", {x});
    last->attrs["approximate"] = std::string("tanh");
  }
  // A reduction's axes: its attribute, or its constant input 1 (ReduceSum's); empty when neither.
  std::vector<int64_t> reductionAxes(const onnx::NodeProto& n) const {
    std::vector<int64_t> axes = intsAttr(n, "axes");
    if (axes.empty() && n.input_size() > 1 && consts_.count(n.input(1)))
      for (double a : consts_.at(n.input(1)).v) axes.push_back(static_cast<int64_t>(a));
    return axes;
  }
  // Whether a reduction is over its input's last axis alone, the axis kept (a norm's statistics).
  bool overLastAxisKept(const Dyn& r) const {
    std::vector<int64_t> axes = reductionAxes(*r.node);
    int64_t rank = static_cast<int64_t>(shapeOf(r.inputs[0]).size());
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1) && intAttr(*r.node, "keepdims", 1) == 1;
  }
  // LayerNorm and RMSNorm, found from their Sqrt.
  void norm(Dyn& sqrt) {
    // The epsilon added to the mean, or none (an epsilon of 0, its addition read through:
    // dropNeutralOperands).
    Dyn* add = producer(sqrt.inputs[0]);
    if (!add || (add->op != "Add" && add->op != "ReduceMean")) return;
    Dyn* mean2 = add->op == "ReduceMean"
                     ? add
                     : producer(consts_.count(add->inputs[0]) ? add->inputs[1] : add->inputs[0]);
    if (add == mean2) add = nullptr;
    if (!mean2 || mean2->op != "ReduceMean" || !overLastAxisKept(*mean2)) return;
    if (add) {  // an epsilon, one constant (a tensor added there, or a constant per row, is no norm's)
      auto eps = consts_.find(other(*add, mean2->output));
      if (eps == consts_.end() || !eps->second.known || eps->second.v.size() != 1) return;
    }
    Dyn* pow = producer(mean2->inputs[0]);  // the square: Pow(c, 2), or Mul(c, c) (x * x, var's export)
    if (!pow || !((pow->op == "Pow" && isConst(pow->inputs[1], 2.0)) ||
                  (pow->op == "Mul" && pow->inputs.size() == 2 && pow->inputs[0] == pow->inputs[1])))
      return;
    Dyn* center = producer(pow->inputs[0]);
    bool layer = center && center->op == "Sub";
    std::vector<Dyn*> nodes = {mean2, pow, &sqrt};
    if (add) nodes.push_back(add);
    std::string x = layer ? center->inputs[0] : pow->inputs[0];
    if (layer) {
      Dyn* mean1 = producer(center->inputs[1]);
      if (!mean1 || mean1->op != "ReduceMean" || mean1->inputs[0] != x || !overLastAxisKept(*mean1)) return;
      nodes.push_back(center);
      nodes.push_back(mean1);
    }
    // Normalised: Div(centered or x, sqrt), or Mul(x, Div(1, sqrt)) / Mul(x, Reciprocal(sqrt)); the
    // numerator the statistics were taken of (w * (y * rsqrt(mean(x^2) + eps)) is no norm of y). A layer
    // norm's numerator may be centred by a mean of its own, the same mean of x taken again (x.mean() and
    // x.var() export one each).
    const std::string numerator = layer ? center->output : x;
    auto twinCenter = [&](const std::string& t) -> Dyn* {
      Dyn* sub = layer ? producer(t) : nullptr;
      if (!sub || sub == center || sub->op != "Sub" || sub->inputs[0] != x) return nullptr;
      Dyn* mean = producer(sub->inputs[1]);
      return mean && mean->op == "ReduceMean" && mean->inputs[0] == x && overLastAxisKept(*mean) ? sub
                                                                                                 : nullptr;
    };
    auto isNumerator = [&](const std::string& t) { return t == numerator || twinCenter(t) != nullptr; };
    Dyn* normed = nullptr;
    std::string took;  // the numerator the norm divides
    for (Dyn* c : consumers(sqrt.output)) {
      if (c->op == "Div" && c->inputs[1] == sqrt.output && isNumerator(c->inputs[0])) {
        normed = c;
        took = c->inputs[0];
      }
      if ((c->op == "Div" && isConst(c->inputs[0], 1.0)) || c->op == "Reciprocal") {
        Dyn* product = soleConsumer(c->output, "Mul");
        if (!product || !isNumerator(other(*product, c->output))) continue;
        nodes.push_back(c);
        normed = product;
        took = other(*product, c->output);
      }
    }
    if (!normed) return;
    if (Dyn* twin = twinCenter(took)) {
      nodes.push_back(twin);
      nodes.push_back(producer(twin->inputs[1]));
    }
    nodes.push_back(normed);
    // Statistics read elsewhere too (a mean and std that de-normalise later, v + eps reused) keep the ops;
    // checked before the scale's weights are made (the scale and bias below are sole readers).
    if (!selfContained(nodes, normed)) return;
    // The norm's scale and bias are [D]: a constant [1, 1, D] is one, read as [D]; any other (Cohere's
    // per-head [heads, head_dim] over q viewed as heads), a multiply by a tensor made in the graph, or none
    // at all (LayerNorm(elementwise_affine=False), as encoders and norms before a fused scale write it) is
    // a norm of scale 1 and no bias, any multiply kept after it.
    std::vector<int64_t> xs = constantDims(x);
    const int64_t width = xs.empty() ? 0 : xs.back();
    Dyn* scale = soleConsumer(normed->output, "Mul");
    std::string gain = scale && consts_.count(other(*scale, normed->output))
                           ? rowVector(other(*scale, normed->output), width, scale->output + "_scale")
                           : "";
    Dyn* last = normed;
    if (!gain.empty()) {
      nodes.push_back(scale);
      last = scale;
    } else if (width > 0) {
      std::string ones = freeOfModel(normed->output + "_unit_scale");
      consts_[ones] = Const{{width}, std::vector<double>(static_cast<size_t>(width), 1.0)};
      gain = weightFrom(ones, ones);
    } else {
      return;
    }
    std::vector<std::string> inputs = {x, gain};
    if (layer) {  // a bias after the scale, or after the norm of unit scale (its ones read through)
      Dyn* bias = soleConsumer(last->output, "Add");
      std::string shift = bias && consts_.count(other(*bias, last->output))
                              ? rowVector(other(*bias, last->output), width, bias->output + "_bias")
                              : "";
      if (!shift.empty()) {
        nodes.push_back(bias);
        inputs.push_back(shift);
        last = bias;
      }
    }
    if (!selfContained(nodes, last)) return;  // (a model output within: a later pattern node reads it)
    std::string eps = add ? other(*add, mean2->output) : "";
    replace(nodes, last, layer ? "layernorm" : "rmsnorm", inputs);
    last->attrs["eps"] = add ? consts_.at(eps).v[0] : 0.0;
  }
  // Rotary embedding with rotate_half: x * cos + concat(-x[h:], x[:h]) * sin, cos and sin constant.
  void rope(Dyn& cat) {
    if (cat.inputs.size() != 2) return;
    Dyn* neg = producer(cat.inputs[0]);
    Dyn* low = producer(cat.inputs[1]);
    if (!neg || neg->op != "Neg" || !low || low->op != "slice") return;
    Dyn* high = producer(neg->inputs[0]);
    if (!high || high->op != "slice" || high->inputs[0] != low->inputs[0]) return;
    std::string x = low->inputs[0];
    Dyn* sinMul = soleConsumer(cat.output, "Mul");
    if (!sinMul || !consts_.count(other(*sinMul, cat.output))) return;
    Dyn* sum = soleConsumer(sinMul->output, "Add");
    if (!sum) return;
    Dyn* cosMul = producer(other(*sum, sinMul->output));
    if (!cosMul || cosMul->op != "Mul" || cosMul->inputs.size() != 2 ||
        (cosMul->inputs[0] != x && cosMul->inputs[1] != x) || other(*cosMul, x) == x ||
        !consts_.count(other(*cosMul, x)))
      return;
    // What the rope replaces is read by nothing else.
    if (consumers(cosMul->output).size() != 1 || consumers(neg->output).size() != 1) return;
    double theta = 0;
    if (!rotaryTables(x, *low, *high, intAttr(*cat.node, "axis", 0), consts_.at(other(*cosMul, x)),
                      consts_.at(other(*sinMul, cat.output)), theta))
      return;  // other halves or other tables: the ops stay as written
    std::vector<Dyn*> nodes = {neg, &cat, sinMul, cosMul, sum};
    // The slices go too when nothing else reads them.
    if (consumers(low->output).size() == 1) nodes.push_back(low);
    if (consumers(high->output).size() == 1) nodes.push_back(high);
    replace(nodes, sum, "rope", {x});
    if (theta != 10000) sum->attrs["theta"] = theta;
  }

  // Whether `low` and `high` are the first and second halves of x's last axis (concatenated along it again,
  // `catAxis`), and cos and sin the tables
  // rope computes for x [.., P, D] (graph.h): cos and sin of pos * theta^(-2 (i mod D/2) / D) at row pos of
  // the second-to-last axis, the same for every other index. theta, the base, is read off the tables (at
  // position 1, rounded to four significant digits: 10000, 500000 and 1e6 are bases models use) and then
  // checked at every entry, within what computing the angle in f32 misses by (4e-7 of it).
  bool rotaryTables(const std::string& x, const Dyn& low, const Dyn& high, int64_t catAxis, const Const& cos,
                    const Const& sin, double& theta) {
    if (!hasConcreteShape(x)) return false;
    std::vector<int64_t> dims;
    for (const Expr& e : shapeOf(x)) dims.push_back(e.eval());
    int64_t rank = static_cast<int64_t>(dims.size());
    if (rank < 1) return false;
    int64_t D = dims.back(), P = rank >= 2 ? dims[static_cast<size_t>(rank - 2)] : 1, h = D / 2;
    auto half = [&](const Dyn& s, int64_t start, int64_t end) {
      auto attr = [&](const char* key) {
        auto it = s.attrs.find(key);
        const int64_t* v = it == s.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
        return v ? *v : INT64_MIN;
      };
      return (attr("axis") == -1 || attr("axis") == rank - 1) && attr("start") == start && attr("end") == end;
    };
    if (D % 2 != 0 || h == 0 || !half(low, 0, h) || !half(high, h, D) ||
        (catAxis != -1 && catAxis != rank - 1))
      return false;
    // Each table [.., P or 1, D] broadcast against x, 1 along every axis before those two.
    auto rowStride = [&](const Const& t) -> int64_t {
      size_t r = t.dims.size();
      if (!t.known || static_cast<int64_t>(t.v.size()) != t.count() || r < 1 || t.dims[r - 1] != D ||
          static_cast<int64_t>(r) > rank)
        return -1;
      for (size_t a = 0; a + 2 < r; ++a)
        if (t.dims[a] != 1) return -1;
      if (r < 2 || t.dims[r - 2] == 1) return P == 1 ? 0 : -1;
      return t.dims[r - 2] == P ? D : -1;
    };
    int64_t cs = rowStride(cos), ss = rowStride(sin);
    if (cs < 0 || ss < 0) return false;
    theta = 10000;
    if (P >= 2 && h >= 2) {
      double angle = std::atan2(sin.v[static_cast<size_t>(ss + 1)], cos.v[static_cast<size_t>(cs + 1)]);
      if (!(angle > 0)) return false;
      double fitted = std::exp(-static_cast<double>(h) * std::log(angle));
      if (!std::isfinite(fitted) || !(fitted > 1)) return false;
      double unit = std::pow(10.0, std::floor(std::log10(fitted)) - 3);
      theta = std::round(fitted / unit) * unit;
    }
    for (int64_t pos = 0; pos < P; ++pos)
      for (int64_t i = 0; i < D; ++i) {
        double angle = static_cast<double>(pos) *
                       std::pow(theta, -2.0 * static_cast<double>(i % h) / static_cast<double>(D));
        double tol = 1e-5 + 4e-7 * angle;
        if (!(std::fabs(cos.v[static_cast<size_t>(pos * cs + i)] - std::cos(angle)) <= tol) ||
            !(std::fabs(sin.v[static_cast<size_t>(pos * ss + i)] - std::sin(angle)) <= tol))
          return false;
      }
    return true;
  }

  // Where(mask, stream, c) or Where(mask, c, stream) with a constant mask and c: the stream, and the constant
  // that adding to it selects c (0 where the stream is selected), where c is negligible before a softmax
  // (below); false for any other Where.
  // `softmax`, when given, is the Where's reader: under a causal softmax a row keeps only the keys the
  // causal mask leaves it.
  bool whereAsBias(const Dyn& where, std::string& stream, Const& bias, double scaledBy = 1,
                   const Dyn* softmax = nullptr) const {
    if (where.op != "Where" || where.inputs.size() != 3 || !consts_.count(where.inputs[0]) ||
        consts_.count(where.inputs[1]) == consts_.count(where.inputs[2]))
      return false;
    bool streamWhenTrue = !consts_.count(where.inputs[1]);
    stream = where.inputs[streamWhenTrue ? 1 : 2];
    // Adding the constant where it is selected stands for the select only where that constant is -inf or
    // at most -1e4 (once scaled by what the scores are scaled by after it), whatever the stream holds
    // (before a softmax: a weight of 0 or about 0); masked_fill with 0 or any other value sets those
    // scores, and is a select on data.
    // And only where each row (along the last axis, the softmax's) keeps a score: a row all masked is the
    // constant alone, which a softmax weighs evenly (torch's left-padded rows), where the scores plus it
    // would weigh as the scores do.
    bool negligible = true;
    Const masked;  // 1 where the constant is selected
    try {
      const Const &cond = consts_.at(where.inputs[0]),
                  &value = consts_.at(where.inputs[streamWhenTrue ? 2 : 1]);
      if (!cond.known || !value.known) return false;  // held outside the file: a select of what emit reads
      bias = broadcast(cond, value, [&](double c, double y) {
        if ((c != 0) == streamWhenTrue) return 0.0;
        negligible = negligible && y * scaledBy <= -1e4;
        return y;
      });
      masked =
          broadcast(cond, value, [&](double c, double) { return (c != 0) == streamWhenTrue ? 0.0 : 1.0; });
    } catch (const UserError&) {  // not a bias: the Where is a select on data (emit)
      return false;
    }
    if (softmax && softmax->attrs.count("causal")) {  // the keys it drops count as masked
      if (!hasConcreteShape(softmax->inputs[0]) || shapeOf(softmax->inputs[0]).size() < 2) return false;
      std::vector<Expr> scores = shapeOf(softmax->inputs[0]);
      int64_t R = scores[scores.size() - 2].eval(), K = scores.back().eval();
      Op causal;
      causal.op = "softmax";
      causal.attrs = softmax->attrs;
      Const dropped;
      dropped.dims = {R, K};
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < K; ++j) dropped.v.push_back(j < keptKeys(causal, i, R, K) ? 0.0 : 1.0);
      try {
        masked = broadcast(masked, dropped, [](double m, double d) { return d != 0 ? 1.0 : m; });
      } catch (const UserError&) {
        return false;
      }
    }
    return negligible && everyRowHas(masked, [](double x) { return x == 0; }) &&
           fillStandsApart(stream, masked, bias, scaledBy);
  }

  // Whether a fill (`bias` where `masked` is 1) weighs ~0 before a softmax beside the rest of its row, as
  // the causal softmax or an added bias that stands for it would weigh it. Walking from the stream back to
  // the scores' product (MatMul, Gemm, Einsum; or a Tanh, bounded) through casts, positive scalings,
  // reshapes, constants added and constants selected, each key is valued as the softmax sees it
  // (`scaledBy`: the scaling after the fill): the constant an inner select put there plus those added after
  // it, else the sum of the constants added.
  // A finite fill: each row must keep a key, not filled, above -1e3 (scores with a padding mask added,
  // (1 - m) * min, or filled, masked_fill(pad, min), then a causal fill of min, have rows whose every kept
  // key holds about min, which torch weighs evenly with the filled ones), and every filled key must be at
  // most 1e3 before the fill is added (a select of 1e5 there would outweigh -1e4). Anything else upstream (a
  // bias of data, an attention mask as a model input, whose values are unknown; a select on data) never
  // stands apart. A fill of -inf stands apart from any finite value: only a constant of +inf or NaN met on
  // the way (-inf + inf is NaN) keeps it from doing so.
  bool fillStandsApart(const std::string& stream, const Const& masked, const Const& bias,
                       double scaledBy) const {
    const bool infinite =
        std::all_of(bias.v.begin(), bias.v.end(), [](double x) { return x == 0 || std::isinf(x); });
    auto unbounded = [](const Const& c) {
      return std::any_of(c.v.begin(), c.v.end(), [](double x) { return std::isnan(x) || x == HUGE_VAL; });
    };
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    // The constants broadcast together hold at most 2^25 keys (a padding mask of [8, 1, 1, 4096] under a
    // causal softmax would take 8 x 4096 x 4096): past that the fill stays a select.
    auto grown = [](const Const& a, const Const& b, const std::function<double(double, double)>& f) {
      int64_t count = 1;
      for (int64_t dim : broadcastDims(a.dims, b.dims).value_or(std::vector<int64_t>{}))
        if ((count *= dim) > (int64_t{1} << 25)) throw UserError("too many keys");
      return broadcast(a, b, f);
    };
    Const filled = masked, added = masked, selected = masked;  // in the fill's shape, broadcast as they grow
    std::fill(added.v.begin(), added.v.end(), 0.0);
    std::fill(selected.v.begin(), selected.v.end(), kNone);
    auto keep = [](double x, double) { return x; };
    double scale = scaledBy;
    bool reshaped = false;  // a constant met past a reshape no longer lines up with the fill's keys
    std::string v = stream;
    try {
      for (int steps = 0;; ++steps) {
        if (steps == 64) return false;
        auto it = producer_.find(v);
        if (it == producer_.end()) break;  // the model's input: the scores as given
        const Dyn& d = dyn_[it->second];
        auto constant = [&](size_t i) { return i < d.inputs.size() && consts_.count(d.inputs[i]) > 0; };
        if (d.op == "MatMul" || d.op == "Gemm" || d.op == "Einsum" || d.op == "Tanh") break;
        bool binary = d.inputs.size() == 2 && constant(0) != constant(1);
        size_t c = binary && constant(0) ? 0 : 1;  // the constant of a binary op, the stream the other
        bool commutes = d.op == "Mul" || d.op == "Add";
        bool where = d.op == "Where" && d.inputs.size() == 3 && constant(0) && constant(1) != constant(2);
        if (infinite) {  // only a constant of +inf or NaN upstream matters
          if (d.op == "Cast" || d.op == "Identity" || d.op == "Reshape" || d.op == "Transpose" ||
              d.op == "Expand" || d.op == "Squeeze" || d.op == "Unsqueeze" || d.op == "Flatten") {
            if (d.inputs.empty() || constant(0)) return true;
            v = d.inputs[0];
          } else if ((d.op == "Mul" || d.op == "Div") && binary && (commutes || c == 1)) {
            const Const& k = consts_.at(d.inputs[c]);
            if (k.known &&
                std::any_of(k.v.begin(), k.v.end(), [](double x) { return !(x > 0) || std::isinf(x); }))
              return false;  // -inf turned, or made NaN (a constant held outside the file: a weight, finite)
            v = d.inputs[1 - c];
          } else if ((d.op == "Add" || d.op == "Sub") && binary && (commutes || c == 1)) {
            const Const& k = consts_.at(d.inputs[c]);
            const double raised = d.op == "Sub" ? -HUGE_VAL : HUGE_VAL;  // +inf once added
            if (k.known &&
                std::any_of(k.v.begin(), k.v.end(), [&](double x) { return std::isnan(x) || x == raised; }))
              return false;
            v = d.inputs[1 - c];
          } else if (where) {
            bool streamWhenTrue = !constant(1);
            const Const& value = consts_.at(d.inputs[streamWhenTrue ? 2 : 1]);
            if (value.known && unbounded(value)) return false;
            v = d.inputs[streamWhenTrue ? 1 : 2];
          } else {  // the scores' product, or data: finite wherever its constants are
            for (size_t i = 0; i < d.inputs.size(); ++i)
              if (constant(i) && consts_.at(d.inputs[i]).known && unbounded(consts_.at(d.inputs[i])))
                return false;
            return true;
          }
          continue;
        }
        if (d.op == "Cast" || d.op == "Identity") {
          v = d.inputs[0];
        } else if (!reshaped && rowsKept(d) && relaid(d, {&filled, &added, &selected})) {
          v = d.inputs[0];
        } else if ((d.op == "Reshape" || d.op == "Transpose" || d.op == "Expand" || d.op == "Squeeze" ||
                    d.op == "Unsqueeze" || d.op == "Flatten") &&
                   !d.inputs.empty() && !constant(0)) {
          reshaped = true;
          v = d.inputs[0];
        } else if ((d.op == "Mul" || d.op == "Div") && binary && (commutes || c == 1)) {
          const Const& k = consts_.at(d.inputs[c]);
          if (!k.known || k.v.size() != 1 || !(k.v[0] >= 1e-3 && k.v[0] <= 1e3)) return false;
          scale *= d.op == "Mul" ? k.v[0] : 1 / k.v[0];
          v = d.inputs[1 - c];
        } else if ((d.op == "Add" || d.op == "Sub") && binary && (commutes || c == 1) && !reshaped) {
          const Const& k = consts_.at(d.inputs[c]);
          if (!k.known) return false;
          double sign = d.op == "Sub" ? -1 : 1;
          added = grown(added, k, [&](double a, double y) { return a + sign * y * scale; });
          filled = grown(filled, added, keep);
          selected = grown(selected, added, keep);
          v = d.inputs[1 - c];
        } else if (where && !reshaped) {
          bool streamWhenTrue = !constant(1);
          const Const &cond = consts_.at(d.inputs[0]), &value = consts_.at(d.inputs[streamWhenTrue ? 2 : 1]);
          if (!cond.known || !value.known) return false;
          // The constant it puts, plus those added between it and the fill.
          Const put = grown(cond, value, [&](double k, double y) {
            return (k != 0) == streamWhenTrue ? kNone : y * scale;
          });
          put = grown(put, added, [](double p, double a) { return std::isnan(p) ? p : p + a; });
          // The select nearest the fill decides a key: one further upstream is overwritten there.
          selected = grown(selected, put, [](double s, double p) { return std::isnan(s) ? p : s; });
          filled = grown(filled, selected, keep);
          added = grown(added, selected, keep);
          v = d.inputs[streamWhenTrue ? 1 : 2];
        } else {
          return false;
        }
      }
      if (infinite) return true;
      Const value = grown(added, selected, [](double a, double s) { return std::isnan(s) ? a : s; });
      // 1 for a kept key above -1e3, -1 for a filled key above 1e3 (or NaN), 0 otherwise.
      Const apart = grown(filled, value, [](double f, double x) {
        return f == 0 ? (x > -1e3 ? 1.0 : 0.0) : (x <= 1e3 ? 0.0 : -1.0);
      });
      return std::none_of(apart.v.begin(), apart.v.end(), [](double x) { return x < 0; }) &&
             everyRowHas(apart, [](double x) { return x > 0; });
    } catch (const UserError&) {
      return false;
    }
  }
  // Whether d is a view of a stream that keeps the last two dims, [.., R, K] (Bloom's scores [b * h, R, K]
  // viewed as [b, h, R, K]), both shapes concrete: every (row, key) stays where it was, in the same order.
  bool rowsKept(const Dyn& d) const {
    static const std::set<std::string> views = {"Reshape", "Squeeze", "Unsqueeze", "Flatten"};
    return views.count(d.op) && !d.inputs.empty() && !consts_.count(d.inputs[0]) &&
           hasConcreteShape(d.inputs[0]) && hasConcreteShape(d.output) &&
           keepsRows(shapeOf(d.inputs[0]), shapeOf(d.output));
  }
  // Values in the shape of view d's output (broadcastable to it), each laid out again in the shape of its
  // input, so that constants met upstream of the view line up with them; false (nothing changed) where one
  // is wider than the output (the fill broadcast the stream). Values that vary along the last two dims
  // alone (a causal mask [R, K]) keep their values, their leading dims 1 in the input's rank; others are
  // broadcast to the output's shape and relabelled, up to 2^22 values each (past that, false).
  bool relaid(const Dyn& d, std::initializer_list<Const*> values) const {
    Const out, in;
    for (const Expr& e : shapeOf(d.output)) out.dims.push_back(e.eval());
    for (const Expr& e : shapeOf(d.inputs[0])) in.dims.push_back(e.eval());
    if (in.count() != out.count()) return false;
    bool rowsOnly = true;
    for (const Const* x : values) {
      std::optional<std::vector<int64_t>> dims = broadcastDims(x->dims, out.dims);
      if (!dims || *dims != out.dims) return false;
      for (size_t a = 0; a + 2 < x->dims.size(); ++a) rowsOnly = rowsOnly && x->dims[a] == 1;
    }
    if (rowsOnly) {
      for (Const* x : values) {
        std::vector<int64_t> dims(in.dims.size() - 2, 1);
        dims.push_back(x->dims.size() >= 2 ? x->dims[x->dims.size() - 2] : 1);
        dims.push_back(x->dims.empty() ? 1 : x->dims.back());
        x->dims = dims;
      }
      return true;
    }
    if (out.count() > (int64_t{1} << 22)) return false;
    out.v.assign(static_cast<size_t>(out.count()), 0.0);
    std::vector<Const> laid;
    for (const Const* x : values) {
      laid.push_back(broadcast(*x, out, [](double a, double) { return a; }));
      laid.back().dims = in.dims;
    }
    size_t i = 0;
    for (Const* x : values) *x = std::move(laid[i++]);
    return true;
  }

  bool isModelOutput(const std::string& value) const {
    for (const auto& out : model_.graph().output())
      if (out.name() == value) return true;
    return false;
  }

  // A causal mask before a softmax over the last axis: masked_fill (Where(mask, c, scores) or
  // Where(mask, scores, c)) or scores + mask, whose constant is -inf (or at most -1e4) exactly where a key is
  // past its row (key > row + K - R of scores [.., R, K], the same for every head) and keeps the rest. It
  // becomes the softmax's `causal` attribute: no mask read from HBM, no addition, and the masked keys weigh
  // exactly 0.
  // The mask may also come before a scaling by a positive constant (GPT-J masks, then divides by
  // sqrt(head_dim)): the scaled mask must still be at most -1e4, and the scaling then reads the scores.
  // Casts to a float type (T5's scores.float()) may come between too.
  void causalMask(Dyn& softmax) {
    auto sole = [&](const Dyn* d) {
      return d && !d->dead && consumers(d->output).size() == 1 && !isModelOutput(d->output);
    };
    // reader->inputs[slot] is the masked scores: the softmax's, or a cast's or a scaling's in between.
    Dyn* reader = &softmax;
    size_t slot = 0;
    Dyn* m = producer(softmax.inputs[0]);
    auto castsToFloat = [&](const Dyn* d) {  // T5's scores.float() before its softmax
      return d->op == "Identity" ||
             (d->op == "Cast" && (intAttr(*d->node, "to", 0) == onnx::TensorProto::FLOAT ||
                                  intAttr(*d->node, "to", 0) == onnx::TensorProto::DOUBLE));
    };
    // A Reshape that keeps the last two dims, [.., R, K] (OPT adds its mask to [b, h, R, K], then views the
    // sum as [b * h, R, K] for the softmax), keeps every row's keys where they were (rowsKept).
    auto rowView = [&](const Dyn* d) { return d->op == "Reshape" && rowsKept(*d); };
    auto skipCasts = [&] {
      while (sole(m) && (castsToFloat(m) || rowView(m)) && !m->inputs.empty() &&
             !consts_.count(m->inputs[0])) {
        reader = m;
        slot = 0;
        m = producer(m->inputs[0]);
      }
    };
    skipCasts();
    // A clamp at the lowest float after the mask (Hugging Face's Llama before 4.31 and OPT:
    // torch.max(scores + mask, finfo.min)) changes no score the causal softmax keeps (finite, above it)
    // and none it drops (weighed 0 with the clamp too): it goes with the mask.
    Dyn* clamp = nullptr;
    Dyn* clampReader = reader;
    size_t clampSlot = slot, clamped = 0;
    if (sole(m) && m->op == "Max" && m->inputs.size() == 2) {
      for (size_t i : {size_t{0}, size_t{1}}) {
        auto c = consts_.find(m->inputs[1 - i]);
        // (a constant of more dims than the scores would broadcast them: the clamp is no identity then)
        if (c == consts_.end() || !c->second.known || c->second.v.size() != 1 ||
            !(c->second.v[0] <= static_cast<double>(std::numeric_limits<float>::lowest())) ||
            consts_.count(m->inputs[i]) || !hasConcreteShape(m->inputs[i]) || !hasConcreteShape(m->output) ||
            shapeOf(m->inputs[i]) != shapeOf(m->output))
          continue;
        clamp = m;
        clamped = i;
        reader = m;
        slot = i;
        m = producer(m->inputs[i]);
        skipCasts();
        break;
      }
    }
    double factor = 1;
    if (sole(m) && (m->op == "Mul" || m->op == "Div") && m->inputs.size() == 2) {
      for (size_t i : {size_t{0}, size_t{1}}) {
        auto c = consts_.find(m->inputs[1 - i]);
        if ((m->op == "Div" && i != 0) || c == consts_.end() || !c->second.known || c->second.v.size() != 1 ||
            !(c->second.v[0] > 0) || consts_.count(m->inputs[i]))
          continue;
        reader = m;
        slot = i;
        factor = m->op == "Div" ? 1 / c->second.v[0] : c->second.v[0];
        m = producer(m->inputs[i]);
        skipCasts();
        break;
      }
    }
    if (!sole(m) || !hasConcreteShape(softmax.inputs[0])) return;
    std::vector<int64_t> scores;
    for (const auto& d : shapeOf(softmax.inputs[0])) scores.push_back(d.eval());
    int64_t rank = static_cast<int64_t>(scores.size()), axis = intAttr(*softmax.node, "axis", -1);
    if (rank < 2 || (axis != -1 && axis != rank - 1)) return;
    std::string stream;
    Const bias;
    if (whereAsBias(*m, stream, bias, factor)) {
    } else if (m->op == "Add" && m->inputs.size() == 2 &&
               consts_.count(m->inputs[0]) != consts_.count(m->inputs[1])) {
      bool first = consts_.count(m->inputs[0]) > 0;
      stream = m->inputs[first ? 1 : 0];
      bias = consts_.at(m->inputs[first ? 0 : 1]);
      Const masked = bias;
      for (double& x : masked.v) x = x != 0 ? 1.0 : 0.0;
      if (!bias.known || !fillStandsApart(stream, masked, bias, factor)) return;
    } else {
      return;
    }
    if (!hasConcreteShape(stream) || shapeOf(stream) != shapeOf(m->output)) return;  // the mask broadcasts it
    int64_t R = scores[static_cast<size_t>(rank - 2)], K = scores.back();
    size_t b = bias.dims.size();
    if (R > K) return;  // rows before the first key masked whole: a causal softmax keeps the diagonal
    // One [R, K] triangle, or one per batch (Hugging Face's mask expanded to [batch, 1, R, K]), all alike.
    if (!bias.known || b < 2 || bias.dims[b - 2] != R || bias.dims[b - 1] != K || bias.count() % (R * K) != 0)
      return;
    for (int64_t at = 0; at < bias.count(); at += R * K)
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < K; ++j) {
          double v = bias.v[static_cast<size_t>(at + i * K + j)] * factor;
          if (j <= i + K - R ? v != 0 : !(v <= -1e4)) return;
        }
    m->dead = true;
    reader->inputs[slot] = stream;
    if (clamp) {  // its reader reads what it did
      clamp->dead = true;
      clampReader->inputs[clampSlot] = clamp->inputs[clamped];
    }
    softmax.attrs["causal"] = int64_t{1};
  }

  void silu(Dyn& sig) {
    Dyn* mul = soleConsumer(sig.output, "Mul");
    if (!mul || other(*mul, sig.output) != sig.inputs[0]) return;
    replace({&sig, mul}, mul, "silu", {sig.inputs[0]});
  }

  // --- emission ---
  std::map<std::string, std::string> alias_;
  std::string resolve(const std::string& v) const {
    auto it = alias_.find(v);
    return it == alias_.end() ? v : resolve(it->second);
  }
  // A constant read by an op becomes a weight (named after the constant, or `fallback` for scalars), its
  // values, when known, as f32 in graph.values. The weight keeps the constant's shape and layout (a Gemm's
  // transB stays an attribute), so the values are the constant's, in order.
  // A constant as a norm's [D] scale or bias: as it is when [D] (or D unknown), [1, .., 1, D] read as [D];
  // "" for any other shape.
  std::string rowVector(const std::string& value, int64_t width, const std::string& fallback) {
    const Const& c = consts_.at(value);
    if (c.dims.empty() || (width > 0 && c.dims.back() != width)) return "";
    for (size_t i = 0; i + 1 < c.dims.size(); ++i)
      if (c.dims[i] != 1) return "";
    if (c.dims.size() == 1) return weightFrom(value, fallback);
    std::string name = freeOfModel((value.empty() ? fallback : value) + "_row");
    Const row = c;
    row.dims = {c.dims.back()};
    consts_[name] = row;
    return weightFrom(name, name);
  }

  std::string weightFrom(const std::string& value, const std::string& fallback) {
    if (declared_.count(value)) return value;
    const Const& c = consts_.at(value);
    std::string name = value.empty() ? freeOfModel(fallback) : value;
    std::vector<Expr> shape;
    for (auto d : c.dims) shape.push_back(Expr(d));
    if (shape.empty()) shape.push_back(Expr(1));
    graph_.weights.push_back({name, shape, "f32", loc()});
    if (c.known && static_cast<int64_t>(c.v.size()) == c.count())
      graph_.values[name] = std::vector<float>(c.v.begin(), c.v.end());
    declared_.insert(name);
    return name;
  }
  std::string operand(const std::string& v, const std::string& user) {
    if (consts_.count(v)) return weightFrom(v, user + "_const");
    return resolve(v);
  }
  // A Where whose only reader is a softmax (its selected constants -inf or at most -1e4: whereAsBias).
  bool masksBeforeSoftmax(const Dyn& where) {
    auto readers = consumers(where.output);
    if (readers.size() != 1 || readers[0]->op != "Softmax" || isModelOutput(where.output)) return false;
    // Over the last axis, along which the rows are checked (one over another axis is a select).
    if (!hasShape(where.output)) return false;
    int64_t axis = intAttr(*readers[0]->node, "axis", -1),
            rank = static_cast<int64_t>(shapeOf(where.output).size());
    return axis == -1 || axis == rank - 1;
  }

  void emit(Dyn& d) {
    const onnx::NodeProto& n = *d.node;
    std::string name = nodeName(n);
    Op op;
    op.name = uniqueOpName(symbolName(name));
    op.output = d.output;
    op.loc = loc();
    std::string whereStream;
    Const whereBias;
    static const std::map<std::string, std::string> direct = {
        {"MatMul", "matmul"},   {"Add", "add"},
        {"Sub", "sub"},         {"Mul", "mul"},
        {"Div", "div"},         {"Tanh", "tanh"},
        {"Exp", "exp"},         {"gelu", "gelu"},
        {"silu", "silu"},       {"Relu", "relu"},
        {"Sigmoid", "sigmoid"}, {"layernorm", "layernorm"},
        {"rmsnorm", "rmsnorm"}, {"Erf", "erf"},
        {"Sqrt", "sqrt"},       {"Reciprocal", "reciprocal"},
        {"Abs", "abs"},         {"Max", "max"},
        {"Min", "min"},         {"Pow", "pow"},
        {"Log", "log"},         {"Softplus", "softplus"},
        {"Floor", "floor"},     {"Ceil", "ceil"},
        {"Round", "round"},     {"Sign", "sign"},
        {"Sin", "sin"},         {"Cos", "cos"}};
    if (d.op == "Cast" && !consts_.count(d.inputs[0])) {
      int64_t to = intAttr(n, "to", onnx::TensorProto::FLOAT);
      if (to == onnx::TensorProto::BOOL) {  // 1 where x is not 0 (NaN too), as torch's bool(): (x == 0) == 0
        std::string zero = scalarWeight(op.name + "_zero", 0.0);
        std::string isZero = auxOp("equal", op.name + "_is_zero", {operand(d.inputs[0], op.name), zero}, d.output + "_is_zero");
        op.op = "equal";
        op.inputs = {isZero, zero};
        graph_.ops.push_back(op);
        return;
      }
      int from = elemTypeOf(d.inputs[0]);
      bool floatSource = from == onnx::TensorProto::UNDEFINED || isFloatType(from);
      if (floatSource && (to == onnx::TensorProto::INT32 || to == onnx::TensorProto::INT64)) {
        towardZero(op, operand(d.inputs[0], op.name), d.output);  // torch's .long(), ONNX's Cast
        graph_.ops.push_back(op);
        return;
      }
      if (!isFloatType(to) && floatSource) {  // a narrower or unsigned integer would wrap what int64 holds
        unsupported_.push_back(name +
                               " (Cast of a float stream to an integer type other than int32 and int64)");
        return;
      }
      // The design computes in f32 (or W4A8): a float32 stream of a float32 model rounded to 16 bits and back
      // (autocast emulated, h.to(torch.bfloat16)) would be the identity here, up to 1.4e-3 from torch's
      // result. An integer or bool stream (a mask) casts exactly; a 16-bit model's every op rounds, so its
      // downcasts after a norm computed in f32 are no different from the rest.
      if (roundsFloatStream(d)) {
        unsupported_.push_back(name + " (Cast of a stream to " +
                               (to == onnx::TensorProto::FLOAT16 ? "float16" : "bfloat16") +
                               ": the design computes in f32 and would not round it)");
        return;
      }
    }
    if (d.op == "Identity" || d.op == "Cast") {
      alias_[d.output] = d.inputs[0];
      return;
    }
    static const std::map<std::string, size_t> arity = {
        {"Where", 3},          {"Greater", 2},     {"Less", 2}, {"Equal", 2},
        {"GreaterOrEqual", 2}, {"LessOrEqual", 2}, {"Tile", 2}, {"Not", 1},
        {"Einsum", 2},         {"And", 2},         {"Or", 2},   {"Xor", 2}};
    if (auto a = arity.find(d.op);
        a != arity.end() &&
        ((d.inputs.size() != a->second && !(d.op == "Einsum" && d.inputs.size() == 1)) ||
         std::any_of(d.inputs.begin(), d.inputs.end(), [](const std::string& in) { return in.empty(); }))) {
      unsupported_.push_back(name + " (" + d.op + " of " + std::to_string(d.inputs.size()) + " inputs)");
      return;
    }
    if (d.op == "Div" && d.inputs.size() == 2 && integerValue(d.output)) {  // of integers: toward zero (ONNX)
      std::string x = operand(d.inputs[0], op.name), y = operand(d.inputs[1], op.name);
      towardZero(op, auxOp("div", op.name + "_quotient", {x, y}, d.output + "_quotient"), d.output);
      graph_.ops.push_back(op);
      return;
    }
    const bool byVector = d.op == "MatMul" && d.inputs.size() == 2 && consts_.count(d.inputs[1]) &&
                          consts_.at(d.inputs[1]).dims.size() == 1 && !constantDims(d.output).empty();
    if (auto it = direct.find(d.op); it != direct.end() && !byVector) {
      op.op = it->second;
      op.attrs = d.attrs;  // what pattern recognition found (gelu's approximation, a norm's eps)
      std::vector<std::string> values = d.inputs;
      std::vector<int64_t> batched;  // the dims a stream operand is viewed as (alignMatmulRanks)
      size_t view = op.op == "matmul" && values.size() == 2 ? alignMatmulRanks(d, values, batched) : 2;
      for (const auto& in : values)
        if (!in.empty()) op.inputs.push_back(operand(in, op.name));
      if (view < 2)
        op.inputs[view] = auxOp("reshape", op.name + "_batched", {op.inputs[view]},
                                d.output + "_batched" + std::to_string(view), {{"shape", batched}});
    } else if (d.op == "Mod" && d.inputs.size() == 2) {  // of floats: C's fmod (ONNX asks fmod=1 for them)
      std::string x = operand(d.inputs[0], op.name), y = operand(d.inputs[1], op.name);
      if (intAttr(n, "fmod", 0) == 0) {
        // Of integers (torch's % of ints): the divisor's sign, x - floor(x / y) y (exact for integers below
        // 2^24: a quotient that is not whole is rounded less than 1/|y| away).
        std::string quotient = auxOp("div", op.name + "_quotient", {x, y}, d.output + "_quotient");
        std::string whole = auxOp("floor", op.name + "_floor", {quotient}, d.output + "_floor");
        op.op = "sub";
        op.inputs = {x, auxOp("mul", op.name + "_taken", {whole, y}, d.output + "_taken")};
      } else {
        op.op = "fmod";
        op.inputs = {x, y};
      }
    } else if (d.op == "Gemm") {  // alpha * A B + beta * C: alpha and beta folded into B and C, constants
      if (intAttr(n, "transA", 0)) {
        unsupported_.push_back(name + " (Gemm with transA)");
        return;
      }
      // A constant times a factor, under a name of its own; empty when the value is not a known constant.
      auto scaled = [&](const std::string& value, double factor) -> std::string {
        if (factor == 1) return value;
        auto c = consts_.find(value);
        if (c == consts_.end() || !c->second.known) return "";
        Const k = c->second;
        for (double& v : k.v) v *= factor;
        std::string folded = freeOfModel(value + "_scaled");
        consts_[folded] = k;
        return folded;
      };
      double alpha = floatAttr(n, "alpha", 1.0), beta = floatAttr(n, "beta", 1.0);
      std::string b = scaled(d.inputs[1], alpha);
      bool biased = d.inputs.size() > 2 && !d.inputs[2].empty() && beta != 0;
      std::string c = biased ? scaled(d.inputs[2], beta) : "";
      if (b.empty() || (biased && c.empty())) {
        unsupported_.push_back(name + " (Gemm with alpha or beta other than 1 on a stream)");
        return;
      }
      op.op = "matmul";
      op.inputs = {operand(d.inputs[0], op.name), operand(b, op.name)};
      if (intAttr(n, "transB", 0)) op.attrs["transpose_b"] = int64_t{1};
      if (biased) op.inputs.push_back(operand(c, op.name));
    } else if (byVector) {
      // By a vector (attention pooling's scores, x @ w with w [K]): numpy's rule sums x * w over K. (A
      // [K, 1] column's product reshaped to drop its 1 would narrow the whole graph's tile to 1.)
      std::string terms =
          auxOp("mul", op.name + "_terms", {operand(d.inputs[0], op.name), operand(d.inputs[1], op.name)},
                d.output + "_terms");
      op.op = "reduce_sum";
      op.inputs = {terms};
      op.attrs = {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}};
    } else if (d.op == "reshape") {  // a view a slice's steps or a gathered index made (sliceNodes)
      op.op = "reshape";
      op.inputs = {operand(d.inputs[0], op.name)};
      op.attrs = d.attrs;
    } else if (d.op == "concat") {  // a stepped slice's last element, or a Gather's runs (sliceNodes)
      op.op = "concat";
      for (const auto& in : d.inputs) op.inputs.push_back(operand(in, op.name));
      op.attrs = d.attrs;
    } else if (d.op == "slice") {
      op.op = "slice";
      op.inputs = {operand(d.inputs[0], op.name)};
      op.attrs = d.attrs;
    } else if (d.op == "rope") {
      op.op = "rope";
      op.inputs = {operand(d.inputs[0], op.name)};
      op.attrs = d.attrs;        // theta, when the tables' base is not 10000
    } else if (d.op == "Neg") {  // -x as x * -1
      std::string minusOne = freeOfModel(d.output + "_minus_one");
      consts_[minusOne] = Const{{}, {-1.0}};
      op.op = "mul";
      op.inputs = {operand(d.inputs[0], op.name), weightFrom(minusOne, minusOne)};
    } else if (d.op == "Unsqueeze" || d.op == "Squeeze") {
      op.op = "reshape";
      op.inputs = {operand(d.inputs[0], op.name)};
      if (!hasConcreteShape(d.output)) {
        unsupported_.push_back(name + " (" + d.op + " of a symbolic shape)");
        return;
      }
      std::vector<int64_t> shape;
      for (const auto& e : shapeOf(d.output)) shape.push_back(e.eval());
      op.attrs["shape"] = shape;
    } else if (d.op == "Expand") {  // broadcast: x + zeros of the dims the (constant) target shape grows
      if (!consts_.count(d.inputs[1])) {
        unsupported_.push_back(name + " (Expand to a shape computed at run time)");
        return;
      }
      std::vector<Expr> from = shapeOf(d.inputs[0]);
      const Const& target = consts_.at(d.inputs[1]);
      Const zeros;
      size_t rank = std::max(from.size(), target.v.size());
      for (size_t i = 0; i < rank; ++i) {
        int64_t want = i < rank - target.v.size() ? 1 : static_cast<int64_t>(target.v[i - (rank - target.v.size())]);
        bool fromOne = i < rank - from.size() || (from[i - (rank - from.size())].isConstant() && from[i - (rank - from.size())].eval() == 1);
        zeros.dims.push_back(fromOne && want > 1 ? want : 1);
      }
      zeros.v.assign(static_cast<size_t>(zeros.count()), 0.0);
      std::string zerosName = freeOfModel(d.output + "_zeros");
      consts_[zerosName] = zeros;
      op.op = "add";
      op.inputs = {operand(d.inputs[0], op.name), weightFrom(zerosName, zerosName)};
    } else if (d.op == "Concat") {
      op.op = "concat";
      for (const auto& in : d.inputs) op.inputs.push_back(operand(in, op.name));
      op.attrs["axis"] = intAttr(n, "axis", 0);
    } else if (d.op == "ReduceMean" || d.op == "ReduceSum" || d.op == "ReduceMax" || d.op == "ReduceMin" ||
               d.op == "ReduceL2" || d.op == "ReduceSumSquare" || d.op == "ReduceL1" ||
               d.op == "ReduceLogSumExp") {
      std::vector<int64_t> axes = reductionAxes(n);
      int64_t rank = static_cast<int64_t>(shapeOf(d.inputs[0]).size());
      if (d.inputs.size() > 1 && !d.inputs[1].empty() && !consts_.count(d.inputs[1])) {
        unsupported_.push_back(name + " (" + d.op + " over axes computed at run time)");
        return;
      }
      if (axes.empty() && !intAttr(n, "noop_with_empty_axes", 0))  // every axis
        for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
      for (int64_t& a : axes) a = a < 0 ? a + rank : a;
      std::sort(axes.begin(), axes.end());
      bool several = axes.size() > 1;
      // Over another axis (a mean over the rows) or several (x.mean(dim=(-2, -1))): the reduced axes moved
      // last by a transpose, several merged into one by a view, then the reduction over the last.
      bool moved = several || (axes.size() == 1 && axes[0] != rank - 1);
      // A log-sum-exp computes with the axis kept (its maximum subtracted and added back), then views
      // the result as the node's shape where the node drops it.
      const bool lse = d.op == "ReduceLogSumExp", viewed = moved || (lse && intAttr(n, "keepdims", 1) == 0);
      if (axes.empty() || axes.front() < 0 || axes.back() >= rank ||
          (viewed && !hasConcreteShape(d.output)) ||
          std::adjacent_find(axes.begin(), axes.end()) != axes.end() ||
          (several && constantDims(d.inputs[0]).empty())) {
        unsupported_.push_back(name + " (" + d.op +
                               " over axes it cannot resolve, or of a shape not known at import)");
        return;
      }
      std::string source = operand(d.inputs[0], op.name);
      if (moved) {
        std::vector<int64_t> perm;
        for (int64_t a = 0; a < rank; ++a)
          if (!std::binary_search(axes.begin(), axes.end(), a)) perm.push_back(a);
        size_t kept = perm.size();
        perm.insert(perm.end(), axes.begin(), axes.end());
        if (!std::is_sorted(perm.begin(), perm.end()))
          source =
              auxOp("transpose", op.name + "_axis_last", {source}, d.output + "_axis_last", {{"perm", perm}});
        if (several) {
          std::vector<int64_t> dims = constantDims(d.inputs[0]), merged;
          int64_t product = 1;
          for (size_t i = 0; i < perm.size(); ++i)
            if (i < kept)
              merged.push_back(dims[static_cast<size_t>(perm[i])]);
            else
              product *= dims[static_cast<size_t>(perm[i])];
          merged.push_back(product);
          source = auxOp("reshape", op.name + "_axes_merged", {source}, d.output + "_axes_merged",
                         {{"shape", merged}});
        }
      }
      std::map<std::string, AttrValue> attrs = {
          {"axis", int64_t{-1}}, {"keepdims", viewed ? int64_t{1} : intAttr(n, "keepdims", 1)}};
      // The last step is the node's op; after a moved axis, a view to the node's shape follows it.
      auto finish = [&](const std::string& kind, std::vector<std::string> inputs,
                        std::map<std::string, AttrValue> at) {
        if (!viewed) {
          op.op = kind;
          op.inputs = std::move(inputs);
          op.attrs = std::move(at);
          return;
        }
        op.op = "reshape";
        op.inputs = {
            auxOp(kind, op.name + "_" + kind, std::move(inputs), d.output + "_" + kind, std::move(at))};
        op.attrs["shape"] = constantDims(d.output);
      };
      if (d.op == "ReduceL2" ||
          d.op == "ReduceSumSquare") {  // (sqrt of) the sum of the squares: x.norm(dim=-1)
        std::string squares = auxOp("pow", op.name + "_squares",
                                    {source, scalarWeight(op.name + "_two", 2.0)}, d.output + "_squares");
        if (d.op == "ReduceL2")
          finish("sqrt", {auxOp("reduce_sum", op.name + "_sum", {squares}, d.output + "_sum", attrs)}, {});
        else
          finish("reduce_sum", {squares}, attrs);
      } else if (d.op == "ReduceMin") {  // -max(-x): x.amin(dim=-1), x.min(dim=-1).values
        auto minusOne = [&](const std::string& suffix) {
          std::string name = freeOfModel(d.output + suffix);
          consts_[name] = Const{{}, {-1.0}};
          return weightFrom(name, name);
        };
        std::string negated =
            auxOp("mul", op.name + "_negated", {source, minusOne("_negate")}, d.output + "_negated");
        std::string m = auxOp("reduce_max", op.name + "_max", {negated}, d.output + "_max", attrs);
        finish("mul", {m, minusOne("_minus_one")}, {});
      } else if (d.op == "ReduceL1") {  // the sum of the magnitudes: x.norm(p=1, dim=-1)
        finish("reduce_sum", {auxOp("abs", op.name + "_abs", {source}, d.output + "_abs")}, attrs);
      } else if (lse) {  // m + log(sum(exp(x - m))), m the maximum: torch.logsumexp, finite where exp is not
        std::string m = auxOp("reduce_max", op.name + "_max", {source}, d.output + "_max", attrs);
        std::string e = auxOp("exp", op.name + "_exp",
                              {auxOp("sub", op.name + "_shifted", {source, m}, d.output + "_shifted")},
                              d.output + "_exp");
        std::string l =
            auxOp("log", op.name + "_log",
                  {auxOp("reduce_sum", op.name + "_sum", {e}, d.output + "_sum", attrs)}, d.output + "_log");
        finish("add", {l, m}, {});
      } else {
        finish(d.op == "ReduceMean"  ? "reduce_mean"
               : d.op == "ReduceSum" ? "reduce_sum"
                                     : "reduce_max",
               {source}, attrs);
      }
    } else if (d.op == "Softmax") {
      op.op = "softmax";
      op.inputs = {operand(d.inputs[0], op.name)};
      int64_t rank = static_cast<int64_t>(shapeOf(d.output).size()), axis = intAttr(n, "axis", -1);
      if (axis < 0) axis += rank;
      op.attrs["axis"] = int64_t{-1};
      if (d.attrs.count("causal")) op.attrs["causal"] = d.attrs.at("causal");
      if (axis >= 0 && axis < rank - 1) {
        // Over another axis (softmax(dim=-2)): that axis swapped with the last by a transpose, the softmax
        // over the last, and the same swap back (opset 13 on: one axis, not the flattened ones after it).
        alongAxis(op, d.output, rank, axis, "softmax", "_softmax", {op.inputs[0]}, op.attrs);
      }
    } else if (d.op == "Transpose") {
      op.op = "transpose";
      op.inputs = {operand(d.inputs[0], op.name)};
      std::vector<int64_t> perm = intsAttr(n, "perm");
      if (perm.empty())  // ONNX's default: the axes reversed
        for (size_t i = shapeOf(d.inputs[0]).size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
      op.attrs["perm"] = perm;
    } else if (d.op == "Reshape") {
      op.op = "reshape";
      op.inputs = {operand(d.inputs[0], op.name)};
      std::vector<int64_t> shape;
      for (const auto& e : shapeOf(d.output)) {
        if (!e.isConstant()) {
          unsupported_.push_back(name + " (Reshape to a symbolic shape)");
          return;
        }
        shape.push_back(e.eval());
      }
      op.attrs["shape"] = shape;
    } else if (d.op == "Gather" && consts_.count(d.inputs[0])) {
      // Rows of a table at indices of data; a table of more dims, [V, a, b..], as the rows of [V, a * b..]
      // viewed back (ChatGLM's rope cache [max, rot / 2, 2] at position ids).
      const Const& table = consts_.at(d.inputs[0]);
      int64_t rank = static_cast<int64_t>(table.dims.size()), axis = intAttr(n, "axis", 0);
      if (axis < 0) axis += rank;
      if (rank < 2 || axis != 0 || (rank > 2 && !hasConcreteShape(d.inputs[1]))) {
        unsupported_.push_back(name + " (Gather of a table of rank " + std::to_string(rank) + " along axis " +
                               std::to_string(axis) + " at indices computed at run time" +
                               (rank > 2 && axis == 0 ? ", of a symbolic shape" : "") + ")");
        return;
      }
      op.op = "embedding";
      std::string rows = d.inputs[0];
      if (rank > 2) {
        Const flat = table;
        flat.dims = {table.dims[0], table.count() / std::max<int64_t>(table.dims[0], 1)};
        rows = freeOfModel(d.inputs[0] + "_rows");
        consts_[rows] = flat;
        std::vector<int64_t> shape;
        for (const Expr& e : shapeOf(d.inputs[1])) shape.push_back(e.eval());
        shape.insert(shape.end(), table.dims.begin() + 1, table.dims.end());
        std::string looked =
            auxOp("embedding", op.name + "_rows", {operand(d.inputs[1], op.name), weightFrom(rows, rows)},
                  d.output + "_rows");
        op.op = "reshape";
        op.inputs = {looked};
        op.attrs["shape"] = shape;
        graph_.ops.push_back(op);
        return;
      }
      op.inputs = {operand(d.inputs[1], op.name), operand(rows, op.name)};
    } else if (d.op == "Where" && masksBeforeSoftmax(d) &&
               whereAsBias(d, whereStream, whereBias, 1, consumers(d.output)[0])) {
      // A mask before a softmax (masked_fill with -inf or a large negative number that is not causal, a
      // padding mask): adding the constant where the stream is not selected gives those keys a weight of 0
      // (-inf) or about 0, as the select does.
      std::string bname = freeOfModel(d.output + "_mask");
      consts_[bname] = whereBias;
      op.op = "add";
      op.inputs = {operand(whereStream, op.name), weightFrom(bname, bname)};
    } else if (d.op == "Where") {
      // A select on data, as a + (b - a) would round: select(a, c) + select(b, c == 0), with c 1 where
      // the condition holds and 0 elsewhere (a comparison's output) and select(x, m) x where m is not 0,
      // else 0: exact, whatever the branch not taken holds (a product by 0 would make its inf NaN).
      std::string c = operand(d.inputs[0], op.name), a = selectOperand(d.inputs[1], op.name),
                  b = selectOperand(d.inputs[2], op.name);
      if (a.empty() || b.empty()) {
        unsupported_.push_back(name + " (Where selecting a constant NaN)");
        return;
      }
      std::string taken = auxOp("select", op.name + "_taken", {a, c}, d.output + "_taken");
      std::string otherwise = auxOp("equal", op.name + "_otherwise", {c, scalarWeight(op.name + "_zero", 0.0)},
                                    d.output + "_otherwise");
      std::string left = auxOp("select", op.name + "_left", {b, otherwise}, d.output + "_left");
      op.op = "add";
      op.inputs = {taken, left};
    } else if (auto cmp = comparisons().find(d.op); cmp != comparisons().end()) {
      op.op = cmp->second;  // 1 where it holds, 0 elsewhere (false for NaN, as torch's)
      op.inputs = {operand(d.inputs[0], op.name), operand(d.inputs[1], op.name)};
    } else if (d.op == "Not") {  // of a comparison's 0 and 1
      op.op = "equal";
      op.inputs = {operand(d.inputs[0], op.name), scalarWeight(op.name + "_zero", 0.0)};
    } else if (d.op == "And" || d.op == "Or" || d.op == "Xor") {
      // Of booleans, which are 0 and 1 here (comparisons, Not, casts to bool, constants): And the lesser, Or
      // the greater, Xor 1 where they differ.
      std::string a = operand(d.inputs[0], op.name), b = operand(d.inputs[1], op.name);
      if (d.op == "Xor") {
        op.op = "equal";
        op.inputs = {auxOp("equal", op.name + "_same", {a, b}, d.output + "_same"),
                     scalarWeight(op.name + "_zero", 0.0)};
      } else {
        op.op = d.op == "And" ? "min" : "max";
        op.inputs = {a, b};
      }
    } else if (d.op == "Trilu") {  // of a stream: a select of it by the triangle's constant mask
      std::string x = operand(d.inputs[0], op.name);
      bool kGiven = d.inputs.size() > 1 && !d.inputs[1].empty();
      if (!hasConcreteShape(d.inputs[0]) || shapeOf(d.inputs[0]).size() < 2 ||
          (kGiven && (!consts_.count(d.inputs[1]) || consts_.at(d.inputs[1]).v.size() != 1))) {
        unsupported_.push_back(name + " (Trilu of a symbolic shape or by a diagonal computed at run time)");
        return;
      }
      std::vector<Expr> shape = shapeOf(d.inputs[0]);
      int64_t rows = shape[shape.size() - 2].eval(), cols = shape.back().eval();
      int64_t k = kGiven ? static_cast<int64_t>(consts_.at(d.inputs[1]).v[0]) : 0;
      bool upper = intAttr(n, "upper", 1) != 0;
      try {
        checkFoldedCount({rows, cols});
      } catch (const UserError& e) {
        unsupported_.push_back(name + " (Trilu of a stream, whose triangle would be " + e.what() + ")");
        return;
      }
      std::string mask = freeOfModel(d.output + "_triangle");
      consts_[mask] = triangle(rows, cols, k, upper);
      op.op = "select";
      op.inputs = {x, weightFrom(mask, mask)};
    } else if (d.op == "CumSum") {
      // Of a stream along its last axis: x @ U, U[i][j] 1 where x_i enters sum j. Along another axis (a
      // running sum over the sequence), that axis swapped with the last before and after.
      std::vector<Expr> shape = hasConcreteShape(d.inputs[0]) ? shapeOf(d.inputs[0]) : std::vector<Expr>{};
      const int64_t rank = static_cast<int64_t>(shape.size());
      std::optional<int64_t> axis;  // unset: not a constant of one value
      if (d.inputs.size() == 2 && consts_.count(d.inputs[1]) && consts_.at(d.inputs[1]).v.size() == 1)
        axis = static_cast<int64_t>(consts_.at(d.inputs[1]).v[0]);
      if (axis && *axis < 0) *axis += rank;
      if (rank < 2 || !axis || *axis < 0 || *axis >= rank) {
        unsupported_.push_back(name +
                               " (CumSum of a stream along an axis computed at run time or out of range, " +
                               "or of a shape symbolic or of rank 1)");
        return;
      }
      int64_t size = shape[static_cast<size_t>(*axis)].eval();
      if (size > 2048) {
        unsupported_.push_back(name + " (CumSum of a stream along more than 2048 values)");
        return;
      }
      // x_i enters sum j where j - i >= 0 (exclusive: >= 1); reverse: j - i <= 0 (exclusive: <= -1).
      bool exclusive = intAttr(n, "exclusive", 0) != 0, reverse = intAttr(n, "reverse", 0) != 0;
      std::string table = freeOfModel(d.output + "_sums");
      consts_[table] = triangle(size, size, exclusive ? (reverse ? -1 : 1) : 0, !reverse);
      std::string x = operand(d.inputs[0], op.name);
      if (*axis == rank - 1) {
        op.op = "matmul";
        op.inputs = {x, weightFrom(table, table)};
      } else {
        alongAxis(op, d.output, rank, *axis, "matmul", "_summed", {x, weightFrom(table, table)}, {});
      }
    } else if (d.op == "IsNaN") {  // x == x fails for NaN alone (torch.nan_to_num, torch.isnan)
      std::string x = operand(d.inputs[0], op.name);
      op.op = "equal";
      op.inputs = {auxOp("equal", op.name + "_self", {x, x}, d.output + "_self"),
                   scalarWeight(op.name + "_zero", 0.0)};
    } else if (d.op == "IsInf") {  // |x| == inf, or x == -inf or +inf alone where one sign is not detected
      bool negative = intAttr(n, "detect_negative", 1) != 0, positive = intAttr(n, "detect_positive", 1) != 0;
      const double inf = std::numeric_limits<double>::infinity();
      std::string x = operand(d.inputs[0], op.name);
      if (negative == positive) {  // both: |x| == inf; neither: |x| < -1, 0 everywhere
        op.op = negative ? "equal" : "less";
        op.inputs = {auxOp("abs", op.name + "_abs", {x}, d.output + "_abs"),
                     scalarWeight(op.name + "_inf", negative ? inf : -1.0)};
      } else {
        op.op = "equal";
        op.inputs = {x, scalarWeight(op.name + "_inf", negative ? -inf : inf)};
      }
    } else if (d.op == "LeakyRelu") {  // max(x, alpha x) for 0 <= alpha <= 1, min(x, alpha x) above
      double alpha = floatAttr(n, "alpha", 0.01);
      std::string x = operand(d.inputs[0], op.name);
      op.op = alpha <= 1 ? "max" : "min";
      op.inputs = {x, auxOp("mul", op.name + "_slope", {x, scalarWeight(op.name + "_alpha", alpha)},
                            d.output + "_slope")};
    } else if (d.op == "HardSigmoid" || d.op == "HardSwish") {
      // max(0, min(1, alpha x + beta)) (HardSwish: alpha 1/6, beta 1/2, then times x), as ONNX defines them
      bool swish = d.op == "HardSwish";
      double alpha = swish ? 1.0 / 6 : floatAttr(n, "alpha", 0.2),
             beta = swish ? 0.5 : floatAttr(n, "beta", 0.5);
      std::string x = operand(d.inputs[0], op.name);
      std::string line = auxOp("add", op.name + "_line",
                               {auxOp("mul", op.name + "_scaled",
                                      {x, scalarWeight(op.name + "_alpha", alpha)}, d.output + "_scaled"),
                                scalarWeight(op.name + "_beta", beta)},
                               d.output + "_line");
      std::string below = auxOp("min", op.name + "_below_one", {line, scalarWeight(op.name + "_one", 1.0)},
                                d.output + "_below_one");
      if (swish) {
        op.op = "mul";
        op.inputs = {x, auxOp("max", op.name + "_gate", {below, scalarWeight(op.name + "_zero", 0.0)},
                              d.output + "_gate")};
      } else {
        op.op = "max";
        op.inputs = {below, scalarWeight(op.name + "_zero", 0.0)};
      }
    } else if (d.op == "Elu" || d.op == "Selu" || d.op == "Celu") {
      // max(x, 0) + alpha (exp(min(x, 0) / c) - 1), c = alpha for Celu, else 1; Selu times gamma. Both
      // terms are exact where the other is 0 (exp(0) - 1 = 0), so this is ONNX's x > 0 ? x : ...
      double alpha = floatAttr(n, "alpha", d.op == "Selu" ? 1.67326319217681884765625 : 1.0);
      double gamma = d.op == "Selu" ? floatAttr(n, "gamma", 1.05070102214813232421875) : 1.0;
      std::string x = operand(d.inputs[0], op.name), zero = scalarWeight(op.name + "_zero", 0.0);
      std::string neg = auxOp("min", op.name + "_neg", {x, zero}, d.output + "_neg");
      if (d.op == "Celu")
        neg = auxOp("mul", op.name + "_scaled", {neg, scalarWeight(op.name + "_inv_alpha", 1.0 / alpha)},
                    d.output + "_scaled");
      std::string expm1 = auxOp(
          "sub", op.name + "_expm1",
          {auxOp("exp", op.name + "_exp", {neg}, d.output + "_exp"), scalarWeight(op.name + "_one", 1.0)},
          d.output + "_expm1");
      std::string tail = auxOp("mul", op.name + "_tail", {expm1, scalarWeight(op.name + "_alpha", alpha)},
                               d.output + "_tail");
      std::string pos = auxOp("max", op.name + "_pos", {x, zero}, d.output + "_pos");
      op.op = "add";
      op.inputs = {pos, tail};
      if (gamma != 1.0) {
        op.op = "mul";
        op.inputs = {auxOp("add", op.name + "_elu", {pos, tail}, d.output + "_elu"),
                     scalarWeight(op.name + "_gamma", gamma)};
      }
    } else if (d.op == "PRelu") {  // max(x, 0) + slope min(x, 0), the slope broadcast (a learned weight)
      std::string x = operand(d.inputs[0], op.name), slope = operand(d.inputs[1], op.name);
      std::string zero = scalarWeight(op.name + "_zero", 0.0);
      op.op = "add";
      op.inputs = {
          auxOp("max", op.name + "_pos", {x, zero}, d.output + "_pos"),
          auxOp("mul", op.name + "_tail",
                {auxOp("min", op.name + "_neg", {x, zero}, d.output + "_neg"), slope}, d.output + "_tail")};
    } else if (d.op == "LogSoftmax") {
      // (x - m) - log(sum(exp(x - m))), m the row's maximum: as torch's log_softmax computes it, finite
      // where softmax's log would underflow to -inf.
      // Over another axis (log_softmax(dim=1)): that axis swapped with the last by a transpose, as for
      // Softmax, and swapped back after.
      int64_t rank = static_cast<int64_t>(shapeOf(d.output).size()), axis = intAttr(n, "axis", -1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) {
        unsupported_.push_back(name + " (LogSoftmax over axis " + std::to_string(intAttr(n, "axis", -1)) +
                               " of a rank-" + std::to_string(rank) + " value)");
        return;
      }
      std::vector<int64_t> swap = swapWithLast(rank, axis);
      std::map<std::string, AttrValue> row = {{"axis", int64_t{-1}}, {"keepdims", int64_t{1}}};
      std::string x = operand(d.inputs[0], op.name);
      if (axis != rank - 1)
        x = auxOp("transpose", op.name + "_axis_last", {x}, d.output + "_axis_last", {{"perm", swap}});
      std::string shifted = auxOp("sub", op.name + "_shifted",
                                  {x, auxOp("reduce_max", op.name + "_max", {x}, d.output + "_max", row)},
                                  d.output + "_shifted");
      std::string sum =
          auxOp("reduce_sum", op.name + "_sum",
                {auxOp("exp", op.name + "_exp", {shifted}, d.output + "_exp")}, d.output + "_sum", row);
      op.op = "sub";
      op.inputs = {shifted, auxOp("log", op.name + "_log", {sum}, d.output + "_log")};
      if (axis != rank - 1) {
        std::string last = auxOp("sub", op.name + "_last", op.inputs, d.output + "_last");
        op.op = "transpose";
        op.inputs = {last};
        op.attrs = {{"perm", swap}};
      }
    } else if (d.op == "Flatten") {  // a view: [prod(dims before axis), prod(dims from it)]
      if (!hasConcreteShape(d.output)) {
        unsupported_.push_back(name + " (Flatten of a symbolic shape)");
        return;
      }
      op.op = "reshape";
      op.inputs = {operand(d.inputs[0], op.name)};
      op.attrs["shape"] = constantDims(d.output);
    } else if (d.op == "Clip") {  // max(x, min), then min(.., max), each bound a constant when given
      std::string x = operand(d.inputs[0], op.name);
      std::vector<std::pair<std::string, std::string>> bounds;  // graph op, bound
      for (int i : {1, 2}) {
        if (static_cast<int>(d.inputs.size()) <= i || d.inputs[static_cast<size_t>(i)].empty()) continue;
        if (!consts_.count(d.inputs[static_cast<size_t>(i)])) {
          unsupported_.push_back(name + " (Clip to a bound computed at run time)");
          return;
        }
        bounds.push_back({i == 1 ? "max" : "min", operand(d.inputs[static_cast<size_t>(i)], op.name)});
      }
      if (bounds.empty()) {
        alias_[d.output] = d.inputs[0];
        return;
      }
      if (bounds.size() == 2) x = auxOp("max", op.name + "_low", {x, bounds[0].second}, d.output + "_low");
      op.op = bounds.back().first;
      op.inputs = {x, bounds.back().second};
    } else if (d.op == "Tile") {  // copies side by side: a concat of the input with itself per repeated axis
      if (!consts_.count(d.inputs[1])) {
        unsupported_.push_back(name + " (Tile by repeats computed at run time)");
        return;
      }
      std::vector<double> repeats = consts_.at(d.inputs[1]).v;
      for (double r : repeats)
        if (!(r >= 1 && r <= 1024) || r != std::floor(r)) {
          unsupported_.push_back(name + " (Tile by " + std::to_string(static_cast<long long>(r)) +
                                 " copies; 1 to 1024 are taken)");
          return;
        }
      std::string x = operand(d.inputs[0], op.name);
      std::vector<std::pair<int64_t, int64_t>> axes;  // axis, copies
      for (size_t a = 0; a < repeats.size(); ++a)
        if (repeats[a] > 1) axes.push_back({static_cast<int64_t>(a), static_cast<int64_t>(repeats[a])});
      if (axes.empty()) {
        alias_[d.output] = d.inputs[0];
        return;
      }
      for (size_t i = 0; i + 1 < axes.size(); ++i)
        x = auxOp("concat", op.name + "_axis" + std::to_string(axes[i].first),
                  std::vector<std::string>(static_cast<size_t>(axes[i].second), x),
                  d.output + "_axis" + std::to_string(axes[i].first), {{"axis", axes[i].first}});
      op.op = "concat";
      op.inputs.assign(static_cast<size_t>(axes.back().second), x);
      op.attrs["axis"] = axes.back().first;
    } else if (d.op == "GatherElements") {
      if (!gatherElements(d, op)) return;
    } else if (d.op == "Pad") {
      if (!pad(d, op)) return;
    } else if (d.op == "ScatterND" || d.op == "ScatterElements") {
      if (!scatter(d, op)) return;
    } else if (d.op == "Einsum") {
      if (einsumBroadcasts(*d.node)) {
        unsupported_.push_back(name +
                               " (Einsum whose operands give an index different extents: an ellipsis "
                               "broadcast, 1 against more; expand the operand first)");
        return;
      }
      if (!einsum(d, op)) {
        unsupported_.push_back(name + " (Einsum other than a product over one index, as a matmul computes)");
        return;
      }
    } else {
      unsupported_.push_back(name + " (" + d.op + ")");
      return;
    }
    graph_.ops.push_back(op);
  }

  // --- grouped-query attention ---
  // Hugging Face's repeat_kv copies each of kv KV heads rep times before attention reads them:
  //   x[:, :, None].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d)
  // (imported as a reshape, an add of zeros and a reshape). The heads of one group are adjacent, so the
  // attention's other operand [b, kv * rep, M, K] is read as [b, kv, rep * M, K], multiplied by the KV head
  // itself (through the same transpose, for K), and the product read back as [b, kv * rep, M, N]: one K and
  // one V stream per group, and no copies. Not where a product would hold its keys (heldCausally): causal
  // self-attention keeps the copies.
  std::vector<int64_t> constantDims(const std::string& value) const {
    if (auto it = madeShapes_.find(value); it != madeShapes_.end()) return it->second;
    std::vector<int64_t> dims;
    try {
      for (const auto& d : shapeOf(value)) {
        if (!d.isConstant()) return {};
        dims.push_back(d.eval());
      }
    } catch (const UserError&) {
      return {};
    }
    return dims;
  }
  Op* producerOp(const std::string& tensor) {
    for (auto& op : graph_.ops)
      if (op.output == tensor) return &op;
    return nullptr;
  }
  std::vector<size_t> consumerOps(const std::string& tensor) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < graph_.ops.size(); ++i)
      for (const auto& in : graph_.ops[i].inputs)
        if (in == tensor) {
          out.push_back(i);
          break;
        }
    return out;
  }
  // Whether attention product `mm` is one the lowering holds its keys in (lower/kernels.cpp: heldKeysOf,
  // the same tests in the same order, but for its keys from HBM: the copies read here come from an add,
  // made on chip): P.V reading a causal softmax of as many keys as rows, or scores of
  // as many keys as rows reaching a causal softmax through elementwise ops and views that keep each row's
  // keys, each read once. Repeated heads read by such a product stay copies: the copies' products stream
  // rows through the attention, each key as its row is made, and hold a KV head once for its copies
  // (Kernel::heldGroup), where the grouped rows (a group's query heads outer, rows inside) wait for every
  // query row; the 128-row export of 4 query heads over 2 KV heads (gqa_attention_seq.onnx) takes 6,692
  // cycles under W4A8 with the copies against 12,846 grouped.
  bool heldCausally(const Op& mm) {
    std::vector<int64_t> o = constantDims(mm.output), a = constantDims(mm.inputs[0]);
    if (o.size() < 2 || a.size() != o.size()) return false;
    if (const Op* p = producerOp(mm.inputs[0]); p && isCausal(*p) && a.back() == o[o.size() - 2]) return true;
    if (o.back() != o[o.size() - 2]) return false;
    for (std::string t = mm.output;;) {
      auto readers = consumerOps(t);
      if (readers.size() != 1 || isModelOutput(t)) return false;
      const Op& r = graph_.ops[readers[0]];
      if (r.op == "softmax") return isCausal(r) && r.inputs[0] == t;
      std::vector<int64_t> from = constantDims(t), to = constantDims(r.output);
      bool view = r.op == "reshape" && keepsRows({from.begin(), from.end()}, {to.begin(), to.end()});
      if (!view && (elementwiseArity(r.op) == 0 || from != to)) return false;
      t = r.output;
    }
  }
  // `base`, or base_2, base_3, ...: the first name no op of the graph has yet, taken.
  static const std::map<std::string, std::string>& comparisons() {
    static const std::map<std::string, std::string> m = {{"Greater", "greater"}, {"Less", "less"}, {"Equal", "equal"},
                                                         {"GreaterOrEqual", "greater_equal"}, {"LessOrEqual", "less_equal"}};
    return m;
  }
  // An op of the graph that one ONNX node becomes beside its last (a select's products, a bound, an
  // einsum's transposes): its output.
  std::string auxOp(const std::string& kind, const std::string& name, std::vector<std::string> inputs,
                    const std::string& output, std::map<std::string, AttrValue> attrs = {}) {
    Op op;
    op.name = uniqueOpName(name);
    op.op = kind;
    op.inputs = std::move(inputs);
    op.output = madeValue(output);
    op.attrs = std::move(attrs);
    op.loc = loc();
    graph_.ops.push_back(op);
    return op.output;
  }
  // A select's operand: empty for a constant holding NaN (refused), else the operand. An infinite constant
  // stays infinite, as torch's: the select takes it exactly (not by a product, which would make inf * 0
  // NaN), and a nanoGPT causal fill of -inf followed by an added padding mask of the dtype's minimum must
  // leave the future keys at -inf, not at -FLT_MAX + min (-inf only where both masks meet), which a
  // softmax would weigh evenly with the padded ones.
  std::string selectOperand(const std::string& v, const std::string& user) {
    auto c = consts_.find(v);
    if (c != consts_.end() &&
        std::any_of(c->second.v.begin(), c->second.v.end(), [](double x) { return std::isnan(x); }))
      return "";
    return operand(v, user);
  }
  // A MatMul whose operands' batch dims broadcast by rank alone ([1, 2, 4, 64] x [2, 64, 64], as numpy
  // and ONNX allow): the operand of lower rank, batched too, takes leading dims of 1 (a constant laid out
  // so, a stream viewed so), where the other's extra leading dims are all 1. A rank-2 right side is a
  // weight every batch shares, as the matmul op takes it.
  // Of `values` (the node's operands): a constant operand renamed to the constant laid out so; for a stream,
  // its index (with `dims`, its view), 2 when none is.
  size_t alignMatmulRanks(const Dyn& d, std::vector<std::string>& values, std::vector<int64_t>& dims) {
    // A constant whose batch dims broadcast against the other operand's (a per-head table [h, k, n] against
    // [b, h, m, k], [1, h, k, n] at batch 2, learned queries not repeated per batch): laid out at the
    // result's batch dims, a copy where it broadcasts, when the other operand needs none.
    for (size_t side : {size_t{0}, size_t{1}}) {
      auto c = consts_.find(values[side]);
      if (c == consts_.end() || !hasConcreteShape(d.inputs[1 - side])) continue;
      std::vector<int64_t> own = c->second.dims, other;
      for (const Expr& e : shapeOf(d.inputs[1 - side])) other.push_back(e.eval());
      if (own.size() < 3 || other.size() < 3) continue;  // a matrix is a weight every batch shares
      std::optional<std::vector<int64_t>> batch =
          broadcastDims({own.begin(), own.end() - 2}, {other.begin(), other.end() - 2});
      if (!batch) continue;
      std::vector<int64_t> target = *batch;
      target.insert(target.end(), own.end() - 2, own.end());
      size_t rank = target.size();
      bool otherWhole = other.size() == rank && std::equal(other.begin(), other.end() - 2, target.begin());
      // A right side whose 1s are its last batch dims ([1, k, n] at [b, m, k], [kv, 1, k, n] at [kv, rep, s,
      // k]) folds those batches into rows and stays shared (foldBroadcastBatches): no copy.
      bool foldsIntoRows = side == 1 && own.size() == rank, broadcasting = false;
      for (size_t i = 0; foldsIntoRows && i + 2 < rank; ++i) {
        broadcasting = broadcasting || own[i] != target[i];
        foldsIntoRows = !broadcasting || own[i] == 1;
      }
      if (!otherWhole || target == own || foldsIntoRows || Const{target, {}}.count() > (int64_t{1} << 24))
        continue;
      Const zeros{target, std::vector<double>(static_cast<size_t>(Const{target, {}}.count()), 0.0)};
      Const k = broadcast(c->second, zeros, [](double v, double) { return v; });
      values[side] = freeOfModel(values[side] + "_batched");
      consts_[values[side]] = k;
      return 2;
    }
    std::vector<Expr> a = shapeOf(d.inputs[0]), b = shapeOf(d.inputs[1]);
    if (a.size() == b.size() || b.size() == 2 || a.size() < 2 || b.size() < 2) return 2;
    size_t shorter = a.size() < b.size() ? 0 : 1;
    const std::vector<Expr>& longShape = shorter == 0 ? b : a;
    size_t extra = longShape.size() - (shorter == 0 ? a : b).size();
    for (size_t i = 0; i < extra; ++i)
      if (!longShape[i].isConstant() || longShape[i].eval() != 1)
        return 2;  // a true broadcast: left to the checks
    const std::string value = values[shorter];
    if (auto c = consts_.find(value); c != consts_.end()) {
      Const k = c->second;
      k.dims.insert(k.dims.begin(), extra, 1);
      values[shorter] = freeOfModel(value + "_batched");
      consts_[values[shorter]] = k;
      return 2;
    }
    dims = constantDims(value);
    if (dims.empty()) return 2;
    dims.insert(dims.begin(), extra, 1);
    return shorter;
  }
  // `op` as `kind` over the last axis of its inputs, applied along `axis` of inputs[0] instead: that axis
  // swapped with the last by a transpose before (`_axis_last`), `kind` (`suffix`) on the rest of `inputs`
  // as they are, and the same swap back as `op` itself (helpers named after `output`).
  void alongAxis(Op& op, const std::string& output, int64_t rank, int64_t axis, const std::string& kind,
                 const std::string& suffix, std::vector<std::string> inputs,
                 std::map<std::string, AttrValue> attrs) {
    std::vector<int64_t> swap = swapWithLast(rank, axis);
    inputs[0] =
        auxOp("transpose", op.name + "_axis_last", {inputs[0]}, output + "_axis_last", {{"perm", swap}});
    op.op = "transpose";
    op.inputs = {auxOp(kind, op.name + suffix, std::move(inputs), output + suffix, std::move(attrs))};
    op.attrs = {{"perm", swap}};
  }
  // `op` as x rounded toward zero, sign(x) * floor(|x|) (its helpers named after `output`).
  void towardZero(Op& op, const std::string& x, const std::string& output) {
    op.op = "mul";
    op.inputs = {auxOp("sign", op.name + "_sign", {x}, output + "_sign"),
                 auxOp("floor", op.name + "_floor", {auxOp("abs", op.name + "_abs", {x}, output + "_abs")},
                       output + "_floor")};
  }

  // GatherElements of a stream along its last axis at constant indices (DeBERTa's c2p and p2c attention:
  // torch.gather of the relative-position scores at clamp(i - j + span)): each value a copy of one of its
  // row's, so a product by a selection. Where every row takes the same columns (over the leading dims
  // too), one selection [K, J]; where the columns vary by row alone, a selection per row, S [R, K, J],
  // against the stream viewed [B, R, K] (B the leading dims' product) and walked [R, B, K], then back. At
  // most 2^22 values of selections; indices that vary along a leading dim are refused.
  bool gatherElements(const Dyn& d, Op& op) {
    auto refuse = [&](const std::string& why) {
      unsupported_.push_back(nodeName(*d.node) + " (GatherElements " + why + ")");
      return false;
    };
    if (!consts_.count(d.inputs[1])) return refuse("at indices computed at run time");
    std::vector<int64_t> dims = constantDims(d.inputs[0]);
    if (dims.size() < 2) return refuse("of a stream whose shape is not known at import, or of rank 1");
    const Const& idx = consts_.at(d.inputs[1]);
    const int64_t rank = static_cast<int64_t>(dims.size());
    int64_t axis = intAttr(*d.node, "axis", 0);
    if (axis < 0) axis += rank;
    if (axis != rank - 1) return refuse("along another axis than the last");
    if (static_cast<int64_t>(idx.dims.size()) != rank || static_cast<int64_t>(idx.v.size()) != idx.count())
      return refuse("at indices of another rank");
    for (int64_t a = 0; a + 1 < rank; ++a)
      if (idx.dims[static_cast<size_t>(a)] != dims[static_cast<size_t>(a)])
        return refuse("at indices shaped otherwise than the stream along its other axes");
    const int64_t K = dims.back(), J = idx.dims.back(), R = dims[static_cast<size_t>(rank - 2)];
    const int64_t rows = idx.count() / J, B = rows / R;
    std::vector<int64_t> at(static_cast<size_t>(idx.count()));
    for (size_t i = 0; i < at.size(); ++i) {
      auto v = static_cast<int64_t>(idx.v[i]);
      if (v < 0) v += K;
      if (v < 0 || v >= K) return refuse("at an index outside the axis");
      at[i] = v;
    }
    auto sameRows = [&](int64_t stride, int64_t count) {  // rows r and r + stride agree, for `count` rows
      for (int64_t r = 0; r + stride < count; ++r)
        for (int64_t j = 0; j < J; ++j)
          if (at[static_cast<size_t>(r * J + j)] != at[static_cast<size_t>((r + stride) * J + j)])
            return false;
      return true;
    };
    if (!sameRows(R, rows)) return refuse("at indices that vary along a leading axis");
    const bool perRow = !sameRows(1, R);
    if ((perRow ? R : 1) * K * J > (int64_t{1} << 22))
      return refuse("whose selections would pass 2^22 values");
    std::string table = freeOfModel(d.output + "_gathered");
    Const pick;
    pick.dims = perRow ? std::vector<int64_t>{R, K, J} : std::vector<int64_t>{K, J};
    pick.v.assign(static_cast<size_t>((perRow ? R : 1) * K * J), 0.0);
    for (int64_t r = 0; r < (perRow ? R : 1); ++r)
      for (int64_t j = 0; j < J; ++j)
        pick.v[static_cast<size_t>((r * K + at[static_cast<size_t>(r * J + j)]) * J + j)] = 1.0;
    consts_[table] = pick;
    std::string x = operand(d.inputs[0], op.name);
    if (!perRow) {
      op.op = "matmul";
      op.inputs = {x, weightFrom(table, table)};
      return true;
    }
    const std::vector<int64_t> swap{1, 0, 2};
    std::string rowsOf = auxOp("reshape", op.name + "_rows", {x}, d.output + "_rows",
                               {{"shape", std::vector<int64_t>{B, R, K}}});
    std::string byRow =
        auxOp("transpose", op.name + "_by_row", {rowsOf}, d.output + "_by_row", {{"perm", swap}});
    std::string picked =
        auxOp("matmul", op.name + "_pick", {byRow, weightFrom(table, table)}, d.output + "_picked");
    std::string back = auxOp("transpose", op.name + "_back", {picked}, d.output + "_back", {{"perm", swap}});
    op.op = "reshape";
    op.inputs = {back};
    op.attrs["shape"] = std::vector<int64_t>(idx.dims.begin(), idx.dims.end());
    return true;
  }

  // Pad in mode edge (torch's replicate), reflect or wrap (circular) along the last axis alone, by amounts
  // of at most 2,048 values in all: each value a copy of one of the input's, so a product by a
  // selection(n, sources) of n + before + after columns.
  bool padFromItsValues(const Dyn& d, Op& op, const std::string& mode, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& axes, const std::vector<double>& pads,
                        const std::function<bool(const std::string&)>& refuse) {
    int64_t last = static_cast<int64_t>(dims.size()) - 1, before = 0, after = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      auto b = static_cast<int64_t>(pads[i]), a = static_cast<int64_t>(pads[i + axes.size()]);
      if ((b != 0 || a != 0) && axes[i] != last)
        return refuse("in mode '" + mode + "' along another axis than the last");
      if (axes[i] == last) before = b, after = a;
    }
    if (dims.size() < 2) return refuse("in mode '" + mode + "' of a stream of rank 1");
    int64_t n = dims.back(), width = n + before + after;
    if (before == 0 && after == 0) {  // no padding: the same tensor
      op.op = "reshape";
      op.inputs = {operand(d.inputs[0], op.name)};
      op.attrs["shape"] = dims;
      return true;
    }
    if (before < 0 || after < 0 || width > 2048 || (mode == "reflect" && (before >= n || after >= n)))
      return refuse("in mode '" + mode +
                    "' by amounts it cannot take (negative, past the axis, or over 2048)");
    std::vector<int64_t> sources;
    for (int64_t j = 0; j < width; ++j) {
      int64_t i = j - before;
      if (mode == "edge")
        i = std::max<int64_t>(0, std::min(n - 1, i));
      else if (mode == "reflect")
        i = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
      else
        i = ((i % n) + n) % n;
      sources.push_back(i);
    }
    std::string table = freeOfModel(d.output + "_padded");
    consts_[table] = selection(n, sources);
    op.op = "matmul";
    op.inputs = {operand(d.inputs[0], op.name), weightFrom(table, table)};
    return true;
  }

  // ONNX Pad; its other modes are padFromItsValues'. In constant mode (F.pad, nn.ZeroPad2d; RWKV's token
  // shift pads the sequence by one before and cuts one after): per padded axis, a slice where a side is
  // negative (it removes), then a concat of blocks of the pad value (weights) before and after. The last
  // step is `op`; false (noted) when refused.
  bool pad(const Dyn& d, Op& op) {
    const std::string name = nodeName(*d.node);
    auto refuse = [&](const std::string& why) {
      unsupported_.push_back(name + " (Pad " + why + ")");
      return false;
    };
    const std::string mode = stringAttr(*d.node, "mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
      return refuse("in mode '" + mode + "'");
    std::vector<int64_t> dims = constantDims(d.inputs[0]);
    if (dims.empty()) return refuse("of a tensor whose shape is not known at import");
    const size_t rank = dims.size();
    auto constant = [&](size_t i) { return i < d.inputs.size() && !d.inputs[i].empty(); };
    if (!consts_.count(d.inputs[1]) || (constant(2) && !consts_.count(d.inputs[2])) ||
        (constant(3) && !consts_.count(d.inputs[3])))
      return refuse("by amounts or a value computed at run time");
    std::vector<int64_t> axes;
    if (constant(3)) {
      for (double a : consts_.at(d.inputs[3]).v)
        axes.push_back(static_cast<int64_t>(a) < 0 ? static_cast<int64_t>(a) + static_cast<int64_t>(rank)
                                                   : static_cast<int64_t>(a));
    } else {
      for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
    }
    const std::vector<double>& pads = consts_.at(d.inputs[1]).v;
    double value = constant(2) ? consts_.at(d.inputs[2]).v.at(0) : 0.0;
    if (pads.size() != 2 * axes.size())
      return refuse("with " + std::to_string(pads.size()) + " amounts for " + std::to_string(axes.size()) +
                    " axes");
    if (mode != "constant") return padFromItsValues(d, op, mode, dims, axes, pads, refuse);
    struct Step {
      int64_t axis, before, after;
    };
    std::vector<Step> steps;
    for (size_t i = 0; i < axes.size(); ++i) {
      auto before = static_cast<int64_t>(pads[i]), after = static_cast<int64_t>(pads[i + axes.size()]);
      if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(rank)) return refuse("of an axis out of range");
      int64_t& dim = dims[static_cast<size_t>(axes[i])];
      if (dim + before + after <= 0 || -before >= dim || -after >= dim)
        return refuse("removing the whole axis");
      if (before != 0 || after != 0) steps.push_back({axes[i], before, after});
    }
    std::string x = operand(d.inputs[0], op.name);
    if (steps.empty()) {
      op.op = "reshape";  // no padding: the same tensor
      op.inputs = {x};
      op.attrs["shape"] = dims;
      return true;
    }
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& st = steps[i];
      const std::string tag = "_axis" + std::to_string(st.axis);
      bool last = i + 1 == steps.size();
      int64_t& dim = dims[static_cast<size_t>(st.axis)];
      if (st.before < 0 || st.after < 0) {
        int64_t start = std::max<int64_t>(0, -st.before), end = dim - std::max<int64_t>(0, -st.after);
        std::map<std::string, AttrValue> at = {{"axis", st.axis}, {"start", start}, {"end", end}};
        dim = end - start;
        if (last && st.before <= 0 && st.after <= 0) {
          op.op = "slice";
          op.inputs = {x};
          op.attrs = at;
          return true;
        }
        x = auxOp("slice", op.name + tag + "_cut", {x}, d.output + tag + "_cut", at);
      }
      std::vector<std::string> parts;
      auto block = [&](int64_t n, const char* side) {
        Const c;
        c.dims = dims;
        c.dims[static_cast<size_t>(st.axis)] = n;
        c.v.assign(static_cast<size_t>(c.count()), value);
        std::string w = freeOfModel(d.output + tag + side);
        consts_[w] = c;
        parts.push_back(weightFrom(w, w));
      };
      if (st.before > 0) block(st.before, "_before");
      parts.push_back(x);
      if (st.after > 0) block(st.after, "_after");
      dim += std::max<int64_t>(0, st.before) + std::max<int64_t>(0, st.after);
      if (parts.size() == 1) continue;  // only cut along this axis: the slice above is the step
      if (last) {
        op.op = "concat";
        op.inputs = parts;
        op.attrs["axis"] = st.axis;
        return true;
      }
      x = auxOp("concat", op.name + tag, parts, d.output + tag, {{"axis", st.axis}});
    }
    return true;
  }
  // The box ScatterND's index tuples (of `depth` coordinates each) fill, one update each in the box's
  // row-major order: lo and hi per indexed axis; false for any other indices.
  static bool scatterNDBox(const Const& idx, const std::vector<int64_t>& dims, size_t depth,
                           std::vector<int64_t>& lo, std::vector<int64_t>& hi) {
    if (depth == 0 || depth > dims.size() || idx.v.size() % depth || idx.v.empty()) return false;
    size_t tuples = idx.v.size() / depth;
    lo.assign(depth, INT64_MAX);
    hi.assign(depth, INT64_MIN);
    std::vector<int64_t> at(idx.v.size());
    for (size_t i = 0; i < idx.v.size(); ++i) {
      int64_t size = dims[i % depth], k = static_cast<int64_t>(idx.v[i]);
      if (k < 0) k += size;
      if (k < 0 || k >= size) return false;
      at[i] = k;
      lo[i % depth] = std::min(lo[i % depth], k);
      hi[i % depth] = std::max(hi[i % depth], k + 1);
    }
    int64_t boxTuples = 1;
    for (size_t a = 0; a < depth; ++a) boxTuples *= hi[a] - lo[a];
    if (boxTuples != static_cast<int64_t>(tuples)) return false;
    for (size_t t = 0; t < tuples; ++t) {  // tuple t is lo + t unravelled over the box
      int64_t rem = static_cast<int64_t>(t);
      for (size_t a = depth; a-- > 0;) {
        if (at[t * depth + a] != lo[a] + rem % (hi[a] - lo[a])) return false;
        rem /= hi[a] - lo[a];
      }
    }
    return true;
  }
  // The box ScatterElements' indices fill: each update's own position but along `axis`, where the index
  // is a run from the first (start + the position); false for any other indices.
  static bool scatterElementsBox(const Const& idx, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& updates, int64_t axis, std::vector<int64_t>& lo,
                                 std::vector<int64_t>& hi) {
    int64_t rank = static_cast<int64_t>(dims.size());
    if (axis < 0 || axis >= rank || idx.dims != updates || static_cast<int64_t>(updates.size()) != rank ||
        static_cast<int64_t>(idx.v.size()) != idx.count() || idx.v.empty())
      return false;
    int64_t size = dims[static_cast<size_t>(axis)], length = updates[static_cast<size_t>(axis)], inner = 1;
    for (int64_t a = axis + 1; a < rank; ++a) inner *= updates[static_cast<size_t>(a)];
    auto normal = [&](double v) {
      return static_cast<int64_t>(v) < 0 ? static_cast<int64_t>(v) + size : static_cast<int64_t>(v);
    };
    int64_t start = normal(idx.v[0]);
    if (start < 0 || start + length > size) return false;
    for (int64_t flat = 0; flat < idx.count(); ++flat)
      if (normal(idx.v[static_cast<size_t>(flat)]) != start + (flat / inner) % length) return false;
    lo.assign(static_cast<size_t>(rank), 0);
    hi = updates;
    for (int64_t a = 0; a < rank; ++a)
      if (updates[static_cast<size_t>(a)] > dims[static_cast<size_t>(a)]) return false;
    lo[static_cast<size_t>(axis)] = start;
    hi[static_cast<size_t>(axis)] = start + length;
    return true;
  }
  // ScatterND of a stream (Meta llama's KV cache written in place, cache_k[:b, start:start + s] = xk, and
  // read back), or ScatterElements (index_copy_ at cache positions): constant indices that name a box of
  // the data in its own order, one update each (no reduction). The result is the updates viewed as the
  // box, surrounded axis by axis, the last axis innermost, by the data's parts outside it (constant
  // blocks, or slices of a data stream), concatenated; a read of the box alone reads the updates
  // themselves (sliceThroughConcats).
  bool scatter(const Dyn& d, Op& op) {
    const std::string name = nodeName(*d.node);
    auto refuse = [&](const std::string& why) {
      unsupported_.push_back(name + " (" + d.op + " " + why + ")");
      return false;
    };
    if (stringAttr(*d.node, "reduction", "none") != "none") return refuse("of a stream with a reduction");
    if (d.inputs.size() != 3 || !consts_.count(d.inputs[1]) || !consts_.at(d.inputs[1]).known)
      return refuse("at indices computed at run time");
    std::vector<int64_t> dims = constantDims(d.inputs[0]);
    const Const& idx = consts_.at(d.inputs[1]);
    if (dims.empty()) return refuse("into a tensor whose shape is not known at import");
    size_t depth = 0;
    std::vector<int64_t> lo, hi;  // the box on the first `depth` axes
    if (d.op == "ScatterND") {
      depth = idx.dims.empty() ? 0 : static_cast<size_t>(idx.dims.back());
      if (!scatterNDBox(idx, dims, depth, lo, hi))
        return refuse("of a stream at indices that are not a box of the data in its order");
    } else {  // ScatterElements (index_copy_ at positions arange(s) + start): a run along its axis
      depth = dims.size();
      int64_t axis = intAttr(*d.node, "axis", 0);
      if (axis < 0) axis += static_cast<int64_t>(depth);
      std::vector<int64_t> updates = constantDims(d.inputs[2]);
      if (!scatterElementsBox(idx, dims, updates, axis, lo, hi))
        return refuse("of a stream at indices that are not a run along its axis");
    }
    std::vector<int64_t> box = dims;  // the updates' extent: the box on the indexed axes, the data's after
    for (size_t a = 0; a < depth; ++a) box[a] = hi[a] - lo[a];
    std::string x = operand(d.inputs[2], op.name);
    if (constantDims(d.inputs[2]) != box) {
      x = auxOp("reshape", op.name + "_box", {x}, d.output + "_box", {{"shape", box}});
      madeShapes_[x] = box;
    }
    const bool constant = consts_.count(d.inputs[0]) > 0;
    std::vector<int64_t> current = box;  // x's extent as the axes are filled in, the last first
    // The data outside x on `axis`, from `from` to `to`.
    auto block = [&](size_t axis, int64_t from, int64_t to, const char* side) {
      std::vector<int64_t> bdims = current, start(dims.size(), 0);
      bdims[axis] = to - from;
      for (size_t a = 0; a < depth; ++a) start[a] = a == axis ? from : current[a] == dims[a] ? 0 : lo[a];
      std::string tag = "_axis" + std::to_string(axis) + side;
      if (constant) {
        const Const& data = consts_.at(d.inputs[0]);
        Const c{bdims, {}};
        c.known = data.known;
        for (int64_t flat = 0; flat < c.count(); ++flat) {
          int64_t rem = flat, src = 0, stride = 1;
          for (size_t a = dims.size(); a-- > 0;) {
            src += (start[a] + rem % bdims[a]) * stride;
            rem /= bdims[a];
            stride *= dims[a];
          }
          c.v.push_back(data.v.at(static_cast<size_t>(src)));
        }
        std::string w = freeOfModel(d.output + tag);
        consts_[w] = c;
        return weightFrom(w, w);
      }
      std::string part = resolve(d.inputs[0]);
      std::vector<int64_t> partDims = dims;
      for (size_t a = 0; a < depth; ++a) {
        if (start[a] == 0 && bdims[a] == dims[a]) continue;
        partDims[a] = bdims[a];
        part = auxOp("slice", op.name + tag, {part}, d.output + tag,
                     {{"axis", static_cast<int64_t>(a)}, {"start", start[a]}, {"end", start[a] + bdims[a]}});
        madeShapes_[part] = partDims;
      }
      return part;
    };
    size_t outermost = depth;  // the first axis x does not fill: the last concatenation
    for (size_t a = 0; a < depth && outermost == depth; ++a)
      if (box[a] != dims[a]) outermost = a;
    if (outermost == depth) {  // the updates fill the data: the data is not read
      op.op = "reshape";
      op.inputs = {x};
      op.attrs["shape"] = dims;
      return true;
    }
    for (size_t a = depth; a-- > outermost;) {
      if (box[a] == dims[a]) continue;
      std::vector<std::string> parts;
      if (lo[a] > 0) parts.push_back(block(a, 0, lo[a], "_before"));
      parts.push_back(x);
      if (hi[a] < dims[a]) parts.push_back(block(a, hi[a], dims[a], "_after"));
      current[a] = dims[a];
      if (a == outermost) {
        op.op = "concat";
        op.inputs = parts;
        op.attrs["axis"] = static_cast<int64_t>(a);
        return true;
      }
      x = auxOp("concat", op.name + "_axis" + std::to_string(a), parts,
                d.output + "_axis" + std::to_string(a), {{"axis", static_cast<int64_t>(a)}});
      madeShapes_[x] = current;
    }
    return true;
  }
  std::string scalarWeight(const std::string& base, double value) {
    std::string name = freeOfModel(base);
    consts_[name] = Const{{}, {value}};
    return weightFrom(name, name);
  }
  // An Einsum of two operands that is one batched product: one index summed (in both operands, not in the
  // result), the result's other indices each in one or both operands. The operands and the result are
  // transposed where their index order is not the product's: [batch.., M, K] x [batch.., K, N] ->
  // [batch.., M, N], or, with a right side of [K, N] alone, [M.., K] x [K, N] -> [M.., N] (what torch
  // exports for the same product written with @ and transpose).
  // An einsum by a constant whose kept or summed indices are several, or whose kept are none (JAX's
  // BTD,NDH->BTNH, a projection to heads, and BTNH,NHD->BTD back; bsd,d->bs, scores by a vector): the
  // constant laid out [K1 * K2 .., N1 * N2 ..] (1 column where none), the stream's summed dims last and
  // merged, a matmul, and the product reshaped to the kept indices, then transposed to the result's order.
  bool einsumByConstant(Dyn& d, Op& op, const std::string& A, const std::string& B, const std::string& C,
                        const std::string& ms, const std::string& k, const std::string& n) {
    const Const& w = consts_.at(d.inputs[1]);
    std::vector<int64_t> a = constantDims(d.inputs[0]);
    if (a.size() != A.size() || w.dims.size() != B.size() || static_cast<int64_t>(w.v.size()) != w.count() ||
        (n.empty() && k.size() != 1))
      return false;
    auto dimOf = [&](char ch) { return w.dims[B.find(ch)]; };
    std::string wantA = ms + k;
    std::vector<int64_t> perm, kept;
    for (char ch : wantA) perm.push_back(static_cast<int64_t>(A.find(ch)));
    for (char ch : ms) kept.push_back(a[A.find(ch)]);
    std::string x = operand(d.inputs[0], op.name);
    if (A != wantA) x = auxOp("transpose", op.name + "_a", {x}, d.output + "_a", {{"perm", perm}});
    // The last step: `kind` of `input` as the einsum's own op where it leaves the indices in C's order
    // (`order`), else made apart (of `shape`) and transposed to C's order.
    auto finish = [&](const std::string& kind, std::string input, std::map<std::string, AttrValue> attrs,
                      const std::string& order, const std::string& suffix,
                      const std::vector<int64_t>& shape) {
      if (order != C) {
        input = auxOp(kind, op.name + suffix, {input}, d.output + suffix, attrs);
        madeShapes_[input] = shape;
        std::vector<int64_t> toC;
        for (char ch : C) toC.push_back(static_cast<int64_t>(order.find(ch)));
        attrs = {{"perm", toC}};
      }
      op.op = order != C ? "transpose" : kind;
      op.inputs = {input};
      op.attrs = std::move(attrs);
      return true;
    };
    if (n.empty()) {  // by a vector: x * w summed over K (a product's column of 1 would narrow the graph's
                      // tile)
      std::string terms =
          auxOp("mul", op.name + "_terms", {x, weightFrom(d.inputs[1], d.inputs[1])}, d.output + "_terms");
      return finish("reduce_sum", terms, {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}}, ms, "_sum", kept);
    }
    std::vector<int64_t> stride(B.size(), 1);
    for (size_t i = B.size() - 1; i > 0; --i) stride[i - 1] = stride[i] * w.dims[i];
    int64_t K = 1, columns = 1;
    for (char ch : k) K *= dimOf(ch);
    for (char ch : n) columns *= dimOf(ch);
    auto offset = [&](const std::string& letters,
                      int64_t index) {  // index walks letters' dims, the last fastest
      int64_t flat = 0;
      for (size_t i = letters.size(); i-- > 0;) {
        int64_t extent = dimOf(letters[i]);
        flat += (index % extent) * stride[B.find(letters[i])];
        index /= extent;
      }
      return flat;
    };
    Const laid{{K, columns}, {}};
    for (int64_t kk = 0; kk < K; ++kk)
      for (int64_t c = 0; c < columns; ++c)
        laid.v.push_back(w.v[static_cast<size_t>(offset(k, kk) + offset(n, c))]);
    std::string name = freeOfModel(d.inputs[1] + "_laid");
    consts_[name] = laid;
    std::vector<int64_t> product = kept;
    product.push_back(columns);
    for (char ch : n) kept.push_back(dimOf(ch));
    if (k.size() > 1) {  // the summed dims, last, as one
      std::vector<int64_t> merged(product.begin(), product.end() - 1);
      merged.push_back(K);
      x = auxOp("reshape", op.name + "_summed", {x}, d.output + "_summed", {{"shape", merged}});
      madeShapes_[x] = merged;
    }
    std::string made =
        auxOp("matmul", op.name + "_product", {x, weightFrom(name, name)}, d.output + "_product");
    madeShapes_[made] = product;
    return finish("reshape", made, {{"shape", kept}}, ms + n, "_kept", kept);
  }

  // An Einsum of one operand that only reorders its indices (XLNet's ijbn->bnij): a transpose.
  bool einsumPermutes(Dyn& d, Op& op) {
    std::string A, C;
    if (!einsumOneTerm(*d.node, A, C) || A.size() != C.size() || A.empty()) return false;
    std::vector<int64_t> perm;
    for (char ch : C) {
      if (!std::isalpha(static_cast<unsigned char>(ch)) || std::count(A.begin(), A.end(), ch) != 1 ||
          std::count(C.begin(), C.end(), ch) != 1)
        return false;
      perm.push_back(static_cast<int64_t>(A.find(ch)));
    }
    op.op = "transpose";
    op.inputs = {operand(d.inputs[0], op.name)};
    op.attrs["perm"] = perm;
    return true;
  }

  // Whether an index of both operands of Einsum `n` has extent 1 in one and more in the other: numpy
  // broadcasts an ellipsis so (`... i d, ... j d` over [1, h, s, d] and [b, h, s, d]), a matmul does not.
  bool einsumBroadcasts(const onnx::NodeProto& n) const {
    std::string terms[3];
    if (!einsumTerms(n, terms[0], terms[1], terms[2])) return false;
    std::vector<int64_t> dims[2];
    for (int i = 0; i < 2; ++i) {
      int type = 0;
      if (!knownDims(n.input(i), dims[i], type) || dims[i].size() != terms[i].size()) return false;
    }
    for (size_t i = 0; i < terms[0].size(); ++i)
      if (size_t j = terms[1].find(terms[0][i]); j != std::string::npos && dims[0][i] != dims[1][j])
        return true;
    return false;
  }

  bool einsum(Dyn& d, Op& op) {
    std::string A, B, C;
    if (d.inputs.size() == 1) return einsumPermutes(d, op);
    if (!einsumTerms(*d.node, A, B, C)) return false;
    auto has = [](const std::string& s, char ch) { return s.find(ch) != std::string::npos; };
    for (const std::string* t : {&A, &B, &C})
      for (char ch : *t)
        if (std::count(t->begin(), t->end(), ch) != 1 || !std::isalpha(static_cast<unsigned char>(ch))) return false;
    std::string batch, ms, k, n;  // in C's order (k: A's)
    for (char ch : C) {
      if (has(A, ch) && has(B, ch)) batch += ch;
      else if (has(A, ch)) ms += ch;
      else if (has(B, ch)) n += ch;
      else return false;
    }
    for (char ch : A)
      if (!has(C, ch)) {
        if (!has(B, ch)) return false;  // summed over one operand alone
        k += ch;
      }
    for (char ch : B)
      if (!has(C, ch) && !has(A, ch)) return false;
    if (!k.empty() && (k.size() > 1 || n.size() != 1) && batch.empty() && !ms.empty() &&
        consts_.count(d.inputs[1]))
      return einsumByConstant(d, op, A, B, C, ms, k, n);
    if (k.size() != 1 || n.size() != 1 || ms.empty()) return false;
    std::string wantA = batch + ms + k, wantB = batch + k + n, result = batch + ms + n;
    if (A.size() != wantA.size() || B.size() != wantB.size()) return false;
    // Batch indices and several kept of A (Transformer-XL's ibnd,jnd->ijbn): A's kept merged into one row
    // dim of the batched product, [batch.., M1 * M2 .., K], and the product's rows split again.
    std::vector<int64_t> dimsA, merged, split;
    if (!batch.empty() && ms.size() > 1) {
      dimsA = constantDims(d.inputs[0]);
      std::vector<int64_t> dimsB = constantDims(d.inputs[1]);
      if (dimsA.size() != A.size() || dimsB.size() != B.size()) return false;
      int64_t rows = 1;
      for (char ch : batch) merged.push_back(dimsA[A.find(ch)]);
      for (char ch : ms) rows *= dimsA[A.find(ch)];
      split = merged;
      merged.push_back(rows);
      merged.push_back(dimsA[A.find(k[0])]);
      for (char ch : ms) split.push_back(dimsA[A.find(ch)]);
      split.push_back(dimsB[B.find(n[0])]);
    }
    auto permTo = [](const std::string& from, const std::string& to) {  // transpose perm: to[i] = from[perm[i]]
      std::vector<int64_t> perm;
      for (char ch : to) perm.push_back(static_cast<int64_t>(from.find(ch)));
      return perm;
    };
    auto arrange = [&](const std::string& input, const std::string& from, const std::string& to,
                       const std::string& suffix) {
      std::string v = operand(input, op.name);
      if (from == to) return v;
      return auxOp("transpose", op.name + suffix, {v}, d.output + suffix, {{"perm", permTo(from, to)}});
    };
    std::string a = arrange(d.inputs[0], A, wantA, "_a"), b = arrange(d.inputs[1], B, wantB, "_b");
    if (!merged.empty()) {
      a = auxOp("reshape", op.name + "_rows", {a}, d.output + "_rows", {{"shape", merged}});
      madeShapes_[a] = merged;
      std::vector<int64_t> productShape(merged.begin(), merged.end() - 1);
      productShape.push_back(split.back());
      std::string product = auxOp("matmul", op.name + "_product", {a, b}, d.output + "_product");
      madeShapes_[product] = productShape;
      if (result == C) {
        op.op = "reshape";
        op.inputs = {product};
        op.attrs["shape"] = split;
        return true;
      }
      std::string kept =
          auxOp("reshape", op.name + "_kept", {product}, d.output + "_kept", {{"shape", split}});
      madeShapes_[kept] = split;
      op.op = "transpose";
      op.inputs = {kept};
      op.attrs["perm"] = permTo(result, C);
      return true;
    }
    if (result == C) {
      op.op = "matmul";
      op.inputs = {a, b};
    } else {  // the product, then the result's order
      std::string product = auxOp("matmul", op.name + "_product", {a, b}, d.output + "_product");
      op.op = "transpose";
      op.inputs = {product};
      op.attrs["perm"] = permTo(result, C);
    }
    return true;
  }

  // Every value name of the model as it stands (a round of folding adds initializers); none made yet.
  void collectModelValues() {
    modelValues_.clear();
    madeValues_.clear();
    for (const auto& node : model_.graph().node()) {
      modelValues_.insert(node.input().begin(), node.input().end());
      modelValues_.insert(node.output().begin(), node.output().end());
    }
    for (const auto& list : {model_.graph().input(), model_.graph().output()})
      for (const auto& v : list) modelValues_.insert(v.name());
    for (const auto& t : model_.graph().initializer()) modelValues_.insert(t.name());
  }
  // A name for a value the importer makes: `base`, or base_2, base_3 .. where the model or the importer
  // already has a value of that name.
  std::string madeValue(const std::string& base) {
    std::string name = base;
    for (int k = 2; modelValues_.count(name) || declared_.count(name) || consts_.count(name) ||
                    !madeValues_.insert(name).second;
         ++k)
      name = base + "_" + std::to_string(k);
    return name;
  }
  // The same for a constant the importer may make again for another reader (one value of one name):
  // the model's names and the values made are avoided, not the constants made before.
  std::string freeOfModel(const std::string& base) const {
    std::string name = base;
    for (int k = 2; modelValues_.count(name) || madeValues_.count(name); ++k)
      name = base + "_" + std::to_string(k);
    return name;
  }
  std::string uniqueOpName(const std::string& base) {
    std::string name = base;
    for (int k = 2; !opNames_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }
  Op reshapeOp(const std::string& name, const std::string& input, const std::string& output, std::vector<int64_t> shape) {
    Op op;
    op.name = uniqueOpName(name);
    op.op = "reshape";
    op.inputs = {input};
    op.output = output;
    op.attrs["shape"] = std::move(shape);
    op.loc = loc();
    return op;
  }
  // repeat_interleave(rep, dim=1) of [b, kv, s, d], as torch exports it: a Split of the heads, each one
  // unsqueezed, expanded rep times and reshaped, then a Concat. It is repeat_kv's order (each head rep times
  // in turn), so it is written as repeat_kv's one unsqueeze, expand and reshape, which
  // shareRepeatedKvHeads then takes away.
  void foldInterleavedKvHeads() {
    for (size_t c = 0; c < graph_.ops.size(); ++c) {
      Op& cat = graph_.ops[c];
      if (cat.op != "concat" || cat.inputs.size() < 2) continue;
      std::vector<int64_t> out = constantDims(cat.output);
      int64_t axis = static_cast<int64_t>(numberAttr(cat, "axis", 0));
      if (out.size() != 4 || (axis != 1 && axis != -3)) continue;
      std::string heads, zeros;
      std::vector<std::string> chain;  // every tensor of the per-head copies
      int64_t kv = static_cast<int64_t>(cat.inputs.size()), rep = out[1] / kv;
      bool ok = out[1] % kv == 0;
      for (int64_t i = 0; ok && i < kv; ++i) {
        Op* reshape = producerOp(cat.inputs[static_cast<size_t>(i)]);
        Op* expand = reshape && reshape->op == "reshape" ? producerOp(reshape->inputs[0]) : nullptr;
        Op* unsqueeze = expand && expand->op == "add" && knownZeros(graph_, expand->inputs[1])
                            ? producerOp(expand->inputs[0])
                            : nullptr;
        Op* slice = unsqueeze && unsqueeze->op == "reshape" ? producerOp(unsqueeze->inputs[0]) : nullptr;
        if (!slice || slice->op != "slice" || numberAttr(*slice, "start", -1) != i || numberAttr(*slice, "end", -1) != i + 1 ||
            (numberAttr(*slice, "axis", 0) != 1 && numberAttr(*slice, "axis", 0) != -3) || (i > 0 && slice->inputs[0] != heads)) {
          ok = false;
          break;
        }
        heads = slice->inputs[0];
        std::vector<int64_t> x = constantDims(heads);
        ok = x.size() == 4 && x[1] == kv && constantDims(unsqueeze->output) == std::vector<int64_t>{x[0], 1, 1, x[2], x[3]} &&
             constantDims(expand->output) == std::vector<int64_t>{x[0], 1, rep, x[2], x[3]} &&
             constantDims(reshape->output) == std::vector<int64_t>{x[0], rep, x[2], x[3]} &&
             constantDims(expand->inputs[1]) == std::vector<int64_t>{1, 1, rep, 1, 1};
        if (i == 0) zeros = expand->inputs[1];
        for (const Op* op : {reshape, expand, unsqueeze, slice}) chain.push_back(op->output);
      }
      if (!ok) continue;
      for (const auto& t : chain)  // the copies are read only along the chain
        if (consumerOps(t).size() != 1 || isModelOutput(t)) ok = false;
      if (!ok) continue;
      std::vector<int64_t> x = constantDims(heads);
      std::string one = madeValue(heads + "_unsqueezed"), repeated = madeValue(heads + "_repeated");
      madeShapes_[one] = {x[0], kv, 1, x[2], x[3]};
      madeShapes_[repeated] = {x[0], kv, rep, x[2], x[3]};
      Op add;
      add.name = uniqueOpName(cat.name + "_expand");
      add.op = "add";
      add.inputs = {one, zeros};
      add.output = repeated;
      add.loc = loc();
      std::vector<Op> replacement = {reshapeOp(cat.name + "_unsqueeze", heads, one, madeShapes_[one]), add,
                                     reshapeOp(cat.name + "_reshape", repeated, cat.output, out)};
      std::set<std::string> dead(chain.begin(), chain.end());
      dead.insert(cat.output);
      std::vector<Op> ops;
      for (size_t i = 0; i < graph_.ops.size(); ++i) {
        if (i == c) ops.insert(ops.end(), replacement.begin(), replacement.end());
        else if (!dead.count(graph_.ops[i].output)) ops.push_back(graph_.ops[i]);
      }
      graph_.ops = std::move(ops);
      dropUnread();
      c = SIZE_MAX;  // the list changed: look again from its start (the increment wraps to 0)
    }
  }

  // Weights no op reads any more (the zeros of copies taken away).
  void dropUnread() {
    std::set<std::string> read;
    for (const auto& op : graph_.ops) read.insert(op.inputs.begin(), op.inputs.end());
    for (const auto& w : graph_.weights)
      if (!read.count(w.name)) graph_.values.erase(w.name);
    graph_.weights.erase(std::remove_if(graph_.weights.begin(), graph_.weights.end(),
                                        [&](const TensorDecl& w) { return !read.count(w.name); }),
                         graph_.weights.end());
  }

  void shareRepeatedKvHeads() {
    for (size_t r = 0; r < graph_.ops.size(); ++r) {
      Op& repeat = graph_.ops[r];
      if (repeat.op != "reshape") continue;
      Op* expand = producerOp(repeat.inputs[0]);
      if (!expand || expand->op != "add" || !knownZeros(graph_, expand->inputs[1])) continue;
      Op* unsqueeze = producerOp(expand->inputs[0]);
      if (!unsqueeze || unsqueeze->op != "reshape") continue;
      std::string heads = unsqueeze->inputs[0];
      std::vector<int64_t> x = constantDims(heads), u = constantDims(unsqueeze->output),
                           e = constantDims(expand->output), y = constantDims(repeat.output);
      if (x.size() != 4 || u != std::vector<int64_t>{x[0], x[1], 1, x[2], x[3]} ||
          e != std::vector<int64_t>{x[0], x[1], e.size() == 5 ? e[2] : 0, x[2], x[3]} ||
          y != std::vector<int64_t>{x[0], x[1] * e[2], x[2], x[3]})
        continue;
      int64_t kv = x[1], rep = e[2];
      bool onlyChain = consumerOps(expand->output).size() == 1 && consumerOps(unsqueeze->output).size() == 1;
      for (const auto& t : {repeat.output, expand->output, unsqueeze->output}) onlyChain = onlyChain && !isModelOutput(t);
      if (!onlyChain) continue;
      // Every reader must be an attention product taking the copies as its right side: directly (V) or
      // through a transpose of the last two dims (K).
      std::vector<std::pair<size_t, size_t>> uses;  // (matmul, transpose or SIZE_MAX)
      bool ok = true;
      for (size_t c : consumerOps(repeat.output)) {
        const Op& op = graph_.ops[c];
        if (op.op == "matmul" && op.inputs.size() == 2 && op.inputs[1] == repeat.output && op.inputs[0] != repeat.output) {
          uses.push_back({c, SIZE_MAX});
        } else if (op.op == "transpose" && std::get<std::vector<int64_t>>(op.attrs.at("perm")) == std::vector<int64_t>{0, 1, 3, 2}) {
          auto readers = consumerOps(op.output);
          if (readers.size() != 1 || graph_.ops[readers[0]].op != "matmul" || graph_.ops[readers[0]].inputs.size() != 2 ||
              graph_.ops[readers[0]].inputs[1] != op.output)
            ok = false;
          else uses.push_back({readers[0], c});
        } else {
          ok = false;
        }
      }
      for (const auto& [m, t] : uses) {  // the other operand has the copies' heads, for the groups to be views
        std::vector<int64_t> a = constantDims(graph_.ops[m].inputs[0]);
        if (a.size() != 4 || a[1] != kv * rep || constantDims(graph_.ops[m].output).size() != 4) ok = false;
        if (t != SIZE_MAX && isModelOutput(graph_.ops[t].output)) ok = false;
        if (heldCausally(graph_.ops[m])) ok = false;  // its products hold their keys: the copies stay
      }
      if (!ok || uses.empty()) continue;
      std::map<size_t, std::vector<Op>> before, after;  // ops to insert around each product
      for (const auto& [m, t] : uses) {
        Op& mm = graph_.ops[m];
        std::vector<int64_t> a = constantDims(mm.inputs[0]), o = constantDims(mm.output);
        std::string grouped = madeValue(mm.inputs[0] + "_per_kv_head"),
                    product = madeValue(mm.output + "_per_kv_head");
        before[m].push_back(reshapeOp(mm.name + "_group_rows", mm.inputs[0], grouped, {a[0], kv, rep * a[2], a[3]}));
        after[m].push_back(reshapeOp(mm.name + "_heads", product, mm.output, o));
        madeShapes_[grouped] = {a[0], kv, rep * a[2], a[3]};
        madeShapes_[product] = {o[0], kv, rep * o[2], o[3]};
        if (t != SIZE_MAX) {  // the transpose reads the KV heads themselves
          graph_.ops[t].inputs[0] = heads;
          madeShapes_[graph_.ops[t].output] = {x[0], x[1], x[3], x[2]};
        }
        mm.inputs = {grouped, t != SIZE_MAX ? graph_.ops[t].output : heads};
        mm.output = product;
      }
      spliceAround(before, after, {repeat.output, expand->output, unsqueeze->output});
      dropUnread();
      r = SIZE_MAX;  // the list changed: look again from its start (the increment wraps to 0)
    }
  }

  // MatMul broadcasts its batch dims (numpy rules); the graph's matmul takes equal ones. Multi-query
  // attention written without an expand (q [b, h, s, d] @ k.transpose(-2, -1) of k [b, 1, s, d]), or
  // grouped heads as [b, kv, rep, s, d] against [b, kv, 1, s, d], broadcasts the right side over the
  // batch dims just before the rows: those fold into the rows, as repeat_kv's copies do above. The left
  // side [.., p, q, M, K] is read as [.., 1, 1, p * q * M, K] (a view: the dims are adjacent), multiplied by
  // the right side itself, and the product read back: one K and one V stream, no copies. A right side
  // broadcast anywhere else keeps the compiler's error.
  void foldBroadcastBatches() {
    std::map<size_t, std::vector<Op>> before, after;
    for (size_t m = 0; m < graph_.ops.size(); ++m) {
      Op& mm = graph_.ops[m];
      if (mm.op != "matmul" || mm.inputs.size() != 2 || mm.attrs.count("transpose_b")) continue;
      std::vector<int64_t> a = constantDims(mm.inputs[0]), b = constantDims(mm.inputs[1]),
                           o = constantDims(mm.output);
      if (a.size() < 3 || b.size() < 3 || b.size() > a.size() || o.size() != a.size()) continue;
      b.insert(b.begin(), a.size() - b.size(), 1);  // numpy: missing leading dims are 1
      size_t n = a.size() - 2, j = n;
      while (j > 0 && b[j - 1] == 1) --j;  // b's batch dims [j, n) are 1
      bool prefix = std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(j), b.begin());
      int64_t folded = 1;
      for (size_t i = j; i < n; ++i) folded *= a[i];
      if (!prefix || folded == 1) continue;
      std::vector<int64_t> grouped(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)), product = grouped;
      grouped.insert(grouped.end(), {folded * a[n], a[n + 1]});
      product.insert(product.end(), {folded * a[n], o.back()});
      std::string rows = madeValue(mm.inputs[0] + "_rows"), made = madeValue(mm.output + "_rows");
      madeShapes_[rows] = grouped;
      madeShapes_[made] = product;
      before[m].push_back(reshapeOp(mm.name + "_fold_batch", mm.inputs[0], rows, grouped));
      after[m].push_back(reshapeOp(mm.name + "_unfold_batch", made, mm.output, o));
      if (constantDims(mm.inputs[1]).size() != b.size()) {  // the right side's missing dims, as 1s
        std::string full = madeValue(mm.inputs[1] + "_batched");
        madeShapes_[full] = b;
        before[m].push_back(reshapeOp(mm.name + "_batch_right", mm.inputs[1], full, b));
        mm.inputs[1] = full;
      }
      mm.inputs[0] = rows;
      mm.output = made;
    }
    if (!before.empty()) spliceAround(before, after, {});
  }

  // A slice of a concatenation along the same axis that reads one of its parts, or a run of whole parts,
  // reads those (a KV cache written in place by ScatterND and read back where it was written reads the
  // new keys themselves); a slice of exactly one part is that part. Then the concatenations (and what
  // only they read) that nothing reads any more are dropped, with their constant blocks.
  void sliceThroughConcats() {
    auto integer = [](const Op& op, const char* key) {
      return static_cast<int64_t>(numberAttr(op, key, -1));
    };
    std::set<std::string> bypassed, renamed, outputs;  // outputs: the model's, and what they stand for
    for (const auto& out : model_.graph().output()) outputs.insert({out.name(), resolve(out.name())});
    for (bool changed = true; changed;) {
      changed = false;
      std::map<std::string, size_t> made;
      for (size_t i = 0; i < graph_.ops.size(); ++i) made[graph_.ops[i].output] = i;
      for (Op& sl : graph_.ops) {
        if (sl.op != "slice" || renamed.count(sl.output)) continue;
        auto it = made.find(sl.inputs.at(0));
        if (it == made.end() || graph_.ops[it->second].op != "concat") continue;
        const Op cat = graph_.ops[it->second];
        int64_t axis = integer(sl, "axis"), start = integer(sl, "start"), end = integer(sl, "end");
        if (axis < 0 || integer(cat, "axis") != axis) continue;
        std::vector<std::string> run;  // the parts the slice reads, and where the first begins
        int64_t offset = 0, first = 0;
        bool whole = true;
        for (const std::string& part : cat.inputs) {
          std::vector<int64_t> dims = constantDims(part);
          if (dims.size() <= static_cast<size_t>(axis)) {
            run.clear();
            break;
          }
          int64_t next = offset + dims[static_cast<size_t>(axis)];
          if (next > start && offset < end) {
            if (run.empty()) first = offset;
            run.push_back(part);
            whole = whole && start <= offset && next <= end;
          }
          offset = next;
        }
        if (run.empty() || (run.size() > 1 && !whole)) continue;
        bypassed.insert(cat.output);
        changed = true;
        if (run.size() > 1) {
          sl.op = "concat";
          sl.inputs = run;
          sl.attrs = {{"axis", axis}};
        } else if (whole && !outputs.count(sl.output) && !declared_.count(run[0])) {
          renamed.insert(sl.output);
          alias_[sl.output] = run[0];
          for (Op& reader : graph_.ops)
            for (std::string& in : reader.inputs)
              if (in == sl.output) in = run[0];
        } else {
          sl.inputs[0] = run[0];
          sl.attrs["start"] = start - first;
          sl.attrs["end"] = end - first;
        }
      }
    }
    // Drop the bypassed concatenations nothing reads, and the ops made for them alone.
    std::set<std::string> dead;
    for (std::set<std::string> candidates = bypassed; !candidates.empty();) {
      std::set<std::string> next;
      for (const Op& op : graph_.ops) {
        if (!candidates.count(op.output) || dead.count(op.output) || outputs.count(op.output)) continue;
        bool read = false;
        for (const Op& reader : graph_.ops)
          if (!dead.count(reader.output) && !renamed.count(reader.output))
            read = read || std::count(reader.inputs.begin(), reader.inputs.end(), op.output) > 0;
        if (read) continue;
        dead.insert(op.output);
        next.insert(op.inputs.begin(), op.inputs.end());
      }
      candidates = std::move(next);
    }
    dead.insert(renamed.begin(), renamed.end());
    if (dead.empty()) return;
    std::map<size_t, std::vector<Op>> none;
    spliceAround(none, none, dead);
    dropUnread();
  }

  // Rebuilds the op list with before[i] inserted ahead of op i and after[i] behind it, leaving out the
  // ops whose output is in `dead`.
  void spliceAround(std::map<size_t, std::vector<Op>>& before, std::map<size_t, std::vector<Op>>& after,
                    const std::set<std::string>& dead) {
    std::vector<Op> ops;
    for (size_t i = 0; i < graph_.ops.size(); ++i) {
      if (dead.count(graph_.ops[i].output)) continue;
      for (auto& op : before[i]) ops.push_back(std::move(op));
      ops.push_back(std::move(graph_.ops[i]));
      for (auto& op : after[i]) ops.push_back(std::move(op));
    }
    graph_.ops = std::move(ops);
  }

  std::string path_;
  std::map<std::string, int64_t> dims_;  // dynamic axes fixed at import
  std::set<std::string> freeAxes_;       // dynamic axes left symbolic
  std::vector<onnx::TypeProto> declaredOutputs_;  // the outputs' types as the file declares them
  // repeat_interleave Loops rewritten (rewriteRepeatInterleaveLoops) whose ONNX result is not torch's shape:
  // what each makes and what it meant, for the error where shapes stop meeting after them.
  struct OffRepeat {
    std::string value, note;  // the concatenation's output, and what it makes against torch's result
    std::vector<std::string> pieces;  // the reshapes it joins, where they are nodes of the graph
  };
  std::vector<OffRepeat> offRepeats_;
  bool torchRepeats_ = false;
  onnx::ModelProto model_;
  std::map<std::string, const onnx::TypeProto*> types_;
  std::map<std::string, Const> consts_;
  std::set<std::string> symbolicShapes_;
  std::map<std::string, std::vector<Expr>> shapeSizes_;     // a Shape over a symbolic dimension: its sizes
  // A Reshape whose target the shape arithmetic gives exactly, each entry a positive constant or a free
  // axis, or a table sliced to a free axis: its output -> (its input, that shape), for shape inference to
  // carry on past it.
  std::map<std::string, std::pair<std::string, std::vector<Expr>>> reshapeShapes_;
  std::map<std::string, std::vector<int64_t>> madeShapes_;  // tensors the importer adds, which ONNX does not have  // values computed from a Shape that could not be folded
  std::vector<Dyn> dyn_;
  std::map<std::string, size_t> producer_;
  std::vector<std::string> unsupported_;
  std::set<std::string> declared_, opNames_;
  std::set<std::string> modelValues_, madeValues_;  // every value name of the model; those made (madeValue)
  Graph graph_;
};

}  // namespace

namespace {

// The graph imported at two sizes of each free axis (`sizes`: axis -> the two), as one graph over the axes
// as symbols: the two must be alike but where an input's dimension or a reshape's target entry is c times
// one axis' size, or two axes', in each (that entry becomes the expression: seq, 2*seq, batch*seq), and the
// shapes of the graph so made, at each size, must be those of the import at that size. Empty with `why`
// set where they are not.
std::optional<Graph> overAxes(const Graph& a, const Graph& b,
                              const std::map<std::string, std::pair<int64_t, int64_t>>& sizes,
                              std::string& why) {
  auto axisOf = [&](int64_t x, int64_t y) -> std::string {
    for (const auto& [axis, pair] : sizes)
      if (pair == std::make_pair(x, y)) return axis;
    return "";
  };
  // A size that is c times one axis, or two, in both (heads of a group merged with the rows, the batch
  // with the heads), as text.
  auto sizeOf = [&](int64_t x, int64_t y) -> std::string {
    auto times = [&](int64_t p, int64_t q, const std::string& axes) -> std::string {
      if (x <= 0 || x % p != 0 || y % q != 0 || x / p != y / q) return "";
      return x / p == 1 ? axes : std::to_string(x / p) + "*" + axes;
    };
    for (const auto& [axis, pair] : sizes)
      if (std::string t = times(pair.first, pair.second, axis); !t.empty()) return t;
    for (auto a = sizes.begin(); a != sizes.end(); ++a)
      for (auto b = a; b != sizes.end(); ++b) {
        std::string t = times(a->second.first * b->second.first, a->second.second * b->second.second,
                              a->first + "*" + b->first);
        if (!t.empty()) return t;
      }
    return "";
  };
  // Notes alike but for the shapes they quote ([1, 11, 32, 4]: a repeat_interleave Loop's at each size).
  auto withoutNumbers = [](const std::vector<std::string>& notes) {
    std::vector<std::string> out;
    for (const std::string& note : notes) {
      std::string t;
      bool inShape = false;
      for (char c : note) {
        inShape = c == '[' || (inShape && c != ']');
        if (!inShape || !std::isdigit(static_cast<unsigned char>(c)))
          t += c;
        else if (t.back() != '#')
          t += '#';
      }
      out.push_back(t);
    }
    return out;
  };
  if (a.name != b.name || a.inputs.size() != b.inputs.size() || !(a.weights == b.weights) ||
      a.values != b.values || a.ops.size() != b.ops.size() || a.outputs != b.outputs ||
      withoutNumbers(a.notes) != withoutNumbers(b.notes)) {
    why = "the imports differ in their weights or ops";
    for (size_t i = 0; i < std::min(a.weights.size(), b.weights.size()); ++i)
      if (!(a.weights[i] == b.weights[i]))
        why = "weight '" + a.weights[i].name + "' is " + shapeText(a.weights[i].shape) + " in one and " +
              shapeText(b.weights[i].shape) + " in the other";
    return std::nullopt;
  }
  Graph g = a;
  for (size_t i = 0; i < g.notes.size(); ++i)
    if (a.notes[i] != b.notes[i])
      g.notes[i] += " (its shapes as imported at the first of two sizes of each axis)";
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const TensorDecl &x = a.inputs[i], &y = b.inputs[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape.size() != y.shape.size()) {
      why = "input '" + x.name + "' differs";
      return std::nullopt;
    }
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (x.shape[d] == y.shape[d]) continue;
      std::string axis = x.shape[d].isConstant() && y.shape[d].isConstant()
                             ? axisOf(x.shape[d].eval(), y.shape[d].eval())
                             : "";
      if (axis.empty()) {
        why = "input '" + x.name + "' is " + shapeText(x.shape) + " in one and " + shapeText(y.shape) +
              " in the other";
        return std::nullopt;
      }
      g.inputs[i].shape[d] = Expr::parse(axis);
    }
  }
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    if (x.name != y.name || x.op != y.op || x.inputs != y.inputs || x.output != y.output ||
        x.attrs.size() != y.attrs.size()) {
      why = "op '" + x.name + "' (" + x.op + ") differs";
      return std::nullopt;
    }
    for (const auto& [key, value] : x.attrs) {
      auto other = y.attrs.find(key);
      if (other != y.attrs.end() && other->second == value) continue;
      const auto* u = std::get_if<std::vector<int64_t>>(&value);
      const auto* v = other == y.attrs.end() ? nullptr : std::get_if<std::vector<int64_t>>(&other->second);
      bool sized = x.op == "reshape" && key == "shape" && u && v && u->size() == v->size();
      std::vector<Expr> shape;
      for (size_t d = 0; sized && d < u->size(); ++d) {
        shape.push_back(Expr((*u)[d]));
        if ((*u)[d] == (*v)[d]) continue;
        std::string size = sizeOf((*u)[d], (*v)[d]);
        sized = !size.empty();
        if (sized) shape.back() = Expr::parse(size);
      }
      if (!sized) {
        why = "op '" + x.name + "' (" + x.op + ") has field '" + key + "' of another value at each size";
        return std::nullopt;
      }
      g.ops[i].attrs[key] = sizesAttr(shape);
    }
  }
  try {  // the shapes at each size are the imports'
    TypedGraph ta = inferShapes(a), tb = inferShapes(b), tg = inferShapes(g);
    Bindings at, bt;
    for (const auto& [axis, pair] : sizes) {
      at[axis] = pair.first;
      bt[axis] = pair.second;
    }
    for (const auto& [name, info] : tg.tensors)
      for (const auto& [sized, bindings] : {std::make_pair(&ta, &at), std::make_pair(&tb, &bt)}) {
        auto it = sized->tensors.find(name);
        bool same = it != sized->tensors.end() && it->second.shape.size() == info.shape.size();
        for (size_t d = 0; same && d < info.shape.size(); ++d)
          same = info.shape[d].eval(*bindings) == it->second.shape[d].eval(*bindings);
        if (!same) {
          why = "'" + name + "' would be " + shapeText(info.shape) +
                ", not the shape of the import at each size";
          return std::nullopt;
        }
      }
  } catch (const UserError& e) {
    why = e.what();
    return std::nullopt;
  }
  return g;
}

// An import at `dims`; where it stops after rewriting a repeat_interleave Loop whose ONNX result is not
// torch's shape (torch 1.13 reshapes its slices with a 0 that keeps an expanded size), the model as torch
// meant it, when that holds together: the ONNX model computes nothing there (its shapes stop meeting), and
// the Loop's values are torch's, in torch's order. `plain` is the first import's.
Graph importHoldingTogether(Importer& plain, const std::string& path,
                            const std::map<std::string, int64_t>& dims) {
  try {
    return plain.run();
  } catch (const UserError& e) {
    // Only where the error names an off Loop (shape inference, or the node whose shapes do not meet reads
    // its value): elsewhere the model stops for reasons of its own.
    const std::string what = e.what();
    const std::vector<std::string> off = plain.offRepeats();
    if (std::none_of(off.begin(), off.end(),
                     [&](const std::string& note) { return what.find(note) != std::string::npos; }))
      throw;
    std::exception_ptr first = std::current_exception();
    try {
      return Importer(path, dims, true).run();
    } catch (...) {
      std::rethrow_exception(first);
    }
  }
}

Graph importHoldingTogether(const std::string& path, const std::map<std::string, int64_t>& dims) {
  Importer plain(path, dims);
  return importHoldingTogether(plain, path, dims);
}

}  // namespace

Graph importOnnx(const std::string& path, const std::map<std::string, int64_t>& dims, bool overFreeAxes) {
  Importer plain(path, dims);
  try {
    return importHoldingTogether(plain, path, dims);
  } catch (const UserError& refusal) {
    std::map<std::string, int64_t> bounds;  // an axis -> the positions of a mask buffer sliced to it
    std::string rule;                       // the rule sizesGeneralize found broken, and where
    if (!overFreeAxes || plain.freeAxes().empty() || plain.freeAxes().size() > 6) throw;
    if (!plain.sizesGeneralize(bounds, rule))
      throw UserError(std::string(refusal.what()) + "\n(the dynamic axes cannot stay symbolic: " + rule +
                      ")");
    // Each free axis at two sizes no other axis takes, primes unlikely to be any other size of the model
    // (from 5 for an axis a mask buffer bounds: nanoGPT's may hold 16 positions).
    static const int64_t kPrimes[] = {5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};
    std::map<std::string, std::pair<int64_t, int64_t>> sizes;
    std::map<std::string, int64_t> first = dims, second = dims;
    std::vector<std::string> axes;  // those a buffer bounds first, at the smallest primes
    for (const std::string& axis : plain.freeAxes())
      if (bounds.count(axis)) axes.push_back(axis);
    for (const std::string& axis : plain.freeAxes())
      if (!bounds.count(axis)) axes.push_back(axis);
    size_t k = bounds.empty() ? 2 : 0;
    for (const std::string& axis : axes) {
      sizes[axis] = {kPrimes[k], kPrimes[k + 1]};
      first[axis] = kPrimes[k];
      second[axis] = kPrimes[k + 1];
      k += 2;
    }
    std::optional<Graph> g;
    std::string why;
    try {
      g = overAxes(importHoldingTogether(path, first), importHoldingTogether(path, second), sizes, why);
    } catch (const UserError&) {
      throw refusal;  // (fixing the axes, the user sees why the import stops)
    }
    if (!g)
      throw UserError(std::string(refusal.what()) +
                      "\n(imported at two sizes of each dynamic axis to keep it symbolic, " + why + ")");
    std::string text, fix;
    for (const auto& [axis, pair] : sizes) {
      text += (text.empty() ? "" : ", ") + axis + " (imported at " + std::to_string(pair.first) + " and " +
              std::to_string(pair.second) + ")";
      fix += (fix.empty() ? "" : " ") + std::string("--set dim.") + axis + "=N";
    }
    g->notes.push_back(path + ": the shape arithmetic over " + text +
                       " reaches the data only as reshape and expand targets and masks of one form at every "
                       "size: the graph keeps the " +
                       (sizes.size() > 1 ? "axes symbols" : "axis a symbol") +
                       ", bound where the network runs (" + fix + " compiles a design for one size)");
    for (const auto& [axis, positions] : bounds) {
      g->maxima[axis] = positions;
      g->notes.back() += "; its mask buffer holds " + std::to_string(positions) + " positions, the longest " +
                         axis + " the model takes (max_" + axis + ")";
    }
    return *g;
  }
}

}  // namespace stc
