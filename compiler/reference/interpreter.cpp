// Reference interpreter. Plain loops over row-major tensors, one function per op family:
//   broadcast binary ops index each operand through its own strides (size-1 dims stride 0);
//   row ops (softmax, norms, reductions, rope) work on rows of the last dimension;
//   matmul loops batch, m, n, k with a shared 2-D right side or a batched one.
#include "compiler/reference/interpreter.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "compiler/frontend/shape_inference.h"
#include "compiler/reference/elementwise.h"

namespace stc {

int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Tensor::size() const { return elementCount(shape); }

std::vector<int64_t> bindShape(const std::vector<Expr>& shape, const Bindings& b) {
  std::vector<int64_t> out;
  for (const auto& d : shape) out.push_back(d.eval(b));
  return out;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    size_t o = i + out.size() - shape.size();
    strides[o] = shape[i] == 1 ? 0 : s;
    s *= shape[i];
  }
  return strides;
}

void forEachIndex(const std::vector<int64_t>& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0, n = elementCount(shape); flat < n; ++flat) {
    f(idx);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t offsetOf(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t s = 0;
  for (size_t d = 0; d < index.size(); ++d) s += index[d] * strides[d];
  return s;
}

namespace {

Tensor binary(const Tensor& a, const Tensor& b, const std::vector<int64_t>& outShape,
              const std::function<float(float, float)>& f) {
  Tensor out{outShape, {}};
  auto sa = broadcastStrides(a.shape, outShape), sb = broadcastStrides(b.shape, outShape);
  forEachIndex(outShape, [&](const std::vector<int64_t>& idx) {
    out.data.push_back(f(a.data[static_cast<size_t>(offsetOf(idx, sa))], b.data[static_cast<size_t>(offsetOf(idx, sb))]));
  });
  return out;
}

// Applies f to each row of the last dimension: f(row in, row out, row index).
Tensor rows(const Tensor& x, int64_t outLast, const std::function<void(const float*, float*, int64_t)>& f) {
  int64_t last = x.shape.back(), n = x.size() / std::max<int64_t>(last, 1);
  Tensor out{x.shape, std::vector<float>(static_cast<size_t>(n * outLast))};
  out.shape.back() = outLast;
  for (int64_t r = 0; r < n; ++r) f(&x.data[static_cast<size_t>(r * last)], &out.data[static_cast<size_t>(r * outLast)], r);
  return out;
}

Tensor matmul(const Op& op, const Tensor& a, const Tensor& w, const Tensor* bias, const std::vector<int64_t>& outShape) {
  bool tb = numberAttr(op, "transpose_b", 0) != 0;
  size_t rank = outShape.size();
  int64_t M = outShape[rank - 2], N = outShape[rank - 1], K = a.shape.back();
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < rank; ++i) batch *= outShape[i];
  bool shared = w.shape.size() == 2;
  Tensor out{outShape, std::vector<float>(static_cast<size_t>(batch * M * N), 0.0f)};
  for (int64_t b = 0; b < batch; ++b) {
    const float* A = &a.data[static_cast<size_t>(b * M * K)];
    const float* W = &w.data[static_cast<size_t>(shared ? 0 : b * K * N)];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = bias ? bias->data[static_cast<size_t>(n)] : 0.0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(A[m * K + k]) * W[tb ? n * K + k : k * N + n];
        out.data[static_cast<size_t>((b * M + m) * N + n)] = static_cast<float>(acc);
      }
  }
  return out;
}

}  // namespace

void forEachAppendSlot(const std::vector<int64_t>& shape, int64_t axis,
                       const std::function<void(int64_t, int64_t)>& f) {
  const int64_t H = shape[0], A = shape[1], B = shape[2], X = axis == 2 ? A : B;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t p = 0; p < X; ++p)
      f(axis == 2 ? (h * A + p) * B + B - 1 : (h * A + A - 1) * B + p, h * X + p);
}

std::map<std::string, Tensor> interpret(const Graph& graph, const std::map<std::string, Tensor>& values,
                                        const Bindings& bindings) {
  TypedGraph typed = inferShapes(graph);
  std::map<std::string, Tensor> env;
  for (const auto* list : {&graph.inputs, &graph.weights})
    for (const auto& t : *list) {
      auto it = values.find(t.name);
      if (it == values.end()) throw UserError(formatError(t.loc, "no value for '" + t.name + "'"));
      std::vector<int64_t> shape = bindShape(t.shape, bindings);
      Tensor v{shape, it->second.data};
      if (static_cast<int64_t>(v.data.size()) != v.size())
        throw UserError(formatError(t.loc, "the value of '" + t.name + "' has " + std::to_string(v.data.size()) +
                                               " elements, its shape " + shapeText(t.shape) + " needs " +
                                               std::to_string(v.size())));
      env[t.name] = v;
    }
  for (const Op& op : graph.ops) {
    std::vector<const Tensor*> in;
    for (const auto& name : op.inputs) in.push_back(&env.at(name));
    std::vector<int64_t> outShape = bindShape(typed.tensors.at(op.output).shape, bindings);
    const std::string& k = op.op;
    Tensor out;
    if (k == "matmul" || k == "linear") {
      out = matmul(op, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, outShape);
    } else if (elementwiseArity(k) == 2) {
      out = binary(*in[0], *in[1], outShape, [&](float a, float b) { return elementwiseValue(op, a, b); });
    } else if (elementwiseArity(k) == 1) {
      out = *in[0];
      for (float& x : out.data) x = elementwiseValue(op, x, 0.0f);
    } else if (k == "softmax" || k == "layernorm" || k == "rmsnorm") {
      const Tensor* scale = in.size() > 1 ? in[1] : nullptr;
      const Tensor* shift = in.size() > 2 ? in[2] : nullptr;
      double eps = numberAttr(op, "eps", k == "rmsnorm" ? 1e-6 : 1e-5);
      int64_t D = in[0]->shape.back();
      int64_t R = in[0]->shape.size() >= 2 ? in[0]->shape[in[0]->shape.size() - 2] : 1;
      out = rows(*in[0], D, [&](const float* x, float* y, int64_t r) {
        if (k == "softmax") {  // over the keys the row keeps (all but under a causal mask)
          int64_t L = keptKeys(op, r % R, R, D);
          float mx = *std::max_element(x, x + L);
          double sum = 0;
          for (int64_t i = 0; i < L; ++i) sum += std::exp(static_cast<double>(x[i] - mx));
          for (int64_t i = 0; i < D; ++i)
            y[i] = i < L ? static_cast<float>(std::exp(static_cast<double>(x[i] - mx)) / sum) : 0.0f;
          return;
        }
        double mean = 0, var = 0;
        if (k == "layernorm") {
          for (int64_t i = 0; i < D; ++i) mean += x[i];
          mean /= static_cast<double>(D);
        }
        for (int64_t i = 0; i < D; ++i) var += (x[i] - mean) * (x[i] - mean);
        double inv = 1.0 / std::sqrt(var / static_cast<double>(D) + eps);
        for (int64_t i = 0; i < D; ++i) {
          double v = (x[i] - mean) * inv;
          if (scale) v *= scale->data[static_cast<size_t>(i)];
          if (shift) v += shift->data[static_cast<size_t>(i)];
          y[i] = static_cast<float>(v);
        }
      });
    } else if (k == "rope") {
      int64_t D = in[0]->shape.back(), hd = ropeHeadDim(op, D), h = hd / 2;
      int64_t positions = in[0]->shape.size() >= 2 ? in[0]->shape[in[0]->shape.size() - 2] : 1;
      int64_t offset = Expr::parse(ropeOffset(op)).eval(bindings);
      const double theta = ropeTheta(op);
      out = rows(*in[0], D, [&](const float* x, float* y, int64_t r) {
        int64_t pos = offset + r % positions;
        for (int64_t b = 0; b + hd <= D; b += hd)
          for (int64_t i = 0; i < h; ++i) {
            double angle = static_cast<double>(pos) *
                           std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
            double c = std::cos(angle), s = std::sin(angle);
            y[b + i] = static_cast<float>(x[b + i] * c - x[b + i + h] * s);
            y[b + i + h] = static_cast<float>(x[b + i + h] * c + x[b + i] * s);
          }
      });
    } else if (k == "reduce_sum" || k == "reduce_max" || k == "reduce_mean") {
      int64_t D = in[0]->shape.back();
      out = rows(*in[0], 1, [&](const float* x, float* y, int64_t) {
        double acc = k == "reduce_max" ? -INFINITY : 0.0;
        for (int64_t i = 0; i < D; ++i) acc = k == "reduce_max" ? std::max<double>(acc, x[i]) : acc + x[i];
        y[0] = static_cast<float>(k == "reduce_mean" ? acc / static_cast<double>(D) : acc);
      });
    } else if (k == "reshape") {
      out = *in[0];
    } else if (k == "transpose" || k == "slice") {
      const Tensor& x = *in[0];
      auto perm = k == "transpose" ? std::get<std::vector<int64_t>>(op.attrs.at("perm")) : std::vector<int64_t>{};
      int64_t rank = static_cast<int64_t>(x.shape.size());
      int64_t axis = static_cast<int64_t>(numberAttr(op, "axis", -1));
      if (axis < 0) axis += rank;
      int64_t start = static_cast<int64_t>(numberAttr(op, "start", 0));
      std::vector<int64_t> strides(x.shape.size(), 1);
      for (size_t d = x.shape.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * x.shape[d + 1];
      out.shape = outShape;
      forEachIndex(outShape, [&](const std::vector<int64_t>& idx) {
        int64_t src = 0;
        for (size_t d = 0; d < idx.size(); ++d) {
          if (k == "transpose") src += idx[d] * strides[static_cast<size_t>(perm[d])];
          else src += (idx[d] + (static_cast<int64_t>(d) == axis ? start : 0)) * strides[d];
        }
        out.data.push_back(x.data[static_cast<size_t>(src)]);
      });
    } else if (k == "concat") {
      int64_t rank = static_cast<int64_t>(outShape.size());
      int64_t axis = static_cast<int64_t>(numberAttr(op, "axis", 0));
      if (axis < 0) axis += rank;
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= outShape[static_cast<size_t>(d)];
      out.shape = outShape;
      for (int64_t o = 0; o < outer; ++o)
        for (const Tensor* t : in) {
          int64_t chunk = t->size() / outer;
          out.data.insert(out.data.end(), t->data.begin() + o * chunk, t->data.begin() + (o + 1) * chunk);
        }
    } else if (k == "kv_append") {
      out = *in[0];
      forEachAppendSlot(outShape, kvAppendAxis(op), [&](int64_t c, int64_t n) {
        out.data[static_cast<size_t>(c)] = in[1]->data[static_cast<size_t>(n)];
      });
    } else if (k == "embedding") {
      const Tensor &ids = *in[0], &table = *in[1];
      int64_t D = table.shape.back(), V = table.shape.front();
      out.shape = outShape;
      for (float id : ids.data) {
        int64_t row = embeddingRow(id, V);
        out.data.insert(out.data.end(), table.data.begin() + row * D, table.data.begin() + (row + 1) * D);
      }
    } else {
      throw UserError(formatError(op.loc, "unsupported: the reference interpreter has no '" + k + "'"));
    }
    out.shape = outShape;
    env[op.output] = std::move(out);
  }
  return env;
}

}  // namespace stc
