// The W4A8 reference. Every f32 step mirrors the statement the emitter writes for the kernel (compiler/
// emit/task_bodies.cpp), in the same order and precision; the integer steps are exact in any order.
#include "compiler/reference/quantized.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "compiler/emit/runtime/st_numeric.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/reference/elementwise.h"

namespace stc {

namespace {

bool isCopy(const std::string& k) { return k == "reshape" || k == "transpose" || k == "slice"; }

// Tensors that are the same values: one scale each class.
class Classes {
 public:
  std::string find(const std::string& x) {
    auto it = parent_.find(x);
    if (it == parent_.end() || it->second == x) return x;
    return it->second = find(it->second);
  }
  void join(const std::string& a, const std::string& b) {
    std::string ra = find(a), rb = find(b);
    if (ra != rb) parent_[std::max(ra, rb)] = std::min(ra, rb);
  }

 private:
  std::map<std::string, std::string> parent_;
};

QuantScale scaleFor(double absmax) {
  QuantScale s;
  s.scale = absmax > 0 && std::isfinite(absmax) ? static_cast<float>(absmax / 127.0) : 1.0f;
  s.inverse = 1.0f / s.scale;
  return s;
}

struct QValue {
  std::vector<int64_t> shape;
  std::vector<int8_t> q;
  QuantScale s;
  float at(int64_t i) const { return dequantised(q[static_cast<size_t>(i)], s); }
};

// A mask's fill: a value at least kFill times the range of the others below zero (-inf, the dtype's
// minimum, -1e4 beside scores of a few units), which st_q8_masked stores as -128. The range is first
// sought among the keys within kNegligible of their row's largest (a weight of e^-20 of it).
constexpr double kNegligible = 20, kFill = 100;

enum class Key : uint8_t { kKept, kFill, kPast };  // kPast: past a causal row's keys, which it ignores

// The keys of a softmax's input x (rows of its last dimension) that a mask's fill set, or none where no
// value is a fill or where the fill cannot be stored as -128: every key left out of the range is a fill
// at the final range, and a row of fills alone (which the quantised softmax weighs evenly) ties in f32,
// as scores plus the dtype's minimum or -inf do (scores plus -1e4 do not: torch weighs them as scores).
std::vector<Key> maskedKeys(const Tensor& x, const Op& softmax) {
  const size_t rank = x.shape.size(),
               D = rank ? static_cast<size_t>(std::max<int64_t>(x.shape.back(), 1)) : 1;
  const int64_t R = rank >= 2 ? std::max<int64_t>(x.shape[rank - 2], 1) : 1;
  const size_t rows = x.data.size() / D;
  std::vector<Key> keys(x.data.size(), Key::kKept);
  std::vector<size_t> end(rows), order(rows);
  std::vector<double> largest(rows, -INFINITY), seed(rows, 0);
  std::vector<bool> ties(rows, true), whole(rows, false);
  for (size_t r = 0; r < rows; ++r) {
    order[r] = r;
    end[r] = static_cast<size_t>(keptKeys(softmax, static_cast<int64_t>(r) % R, R, static_cast<int64_t>(D)));
    end[r] = std::min(std::max<size_t>(end[r], 1), D);
    for (size_t i = end[r]; i < D; ++i) keys[r * D + i] = Key::kPast;
    const float* v = &x.data[r * D];
    for (size_t i = 0; i < end[r]; ++i) {
      largest[r] = std::max(largest[r], static_cast<double>(v[i]));
      ties[r] = ties[r] && v[i] == v[0];
    }
    for (size_t i = 0; i < end[r]; ++i)
      if (v[i] >= largest[r] - kNegligible) seed[r] = std::max(seed[r], std::fabs(static_cast<double>(v[i])));
  }
  // Rows in the order of their largest: a row whose largest is a fill beside the rows before it is filled
  // whole.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return largest[a] > largest[b]; });
  double range = 0;
  for (size_t r : order) {
    whole[r] = range > 0 && largest[r] < -kFill * range;
    if (!whole[r]) range = std::max(range, seed[r]);
  }
  for (double before = -1; range != before;) {  // widened by every key that is not a fill at the range
    before = range;
    for (size_t r = 0; r < rows; ++r)
      for (size_t i = 0; i < end[r] && !whole[r]; ++i) {
        const double v = x.data[r * D + i];
        if (v >= -kFill * range) range = std::max(range, std::fabs(v));
      }
  }
  bool fill = false;
  for (size_t r = 0; r < rows; ++r) {
    if (whole[r] && (!ties[r] || !(largest[r] < -kFill * range))) return {};
    for (size_t i = 0; i < end[r]; ++i) {
      const bool filled = whole[r] || x.data[r * D + i] < -kFill * range;
      keys[r * D + i] = filled ? Key::kFill : Key::kKept;
      fill = fill || filled;
    }
  }
  return fill ? keys : std::vector<Key>{};
}

// Who makes and reads each tensor, and which tensors may be masked at all: those with a scale of their
// own (no copy shares it), not a graph input or output (the host quantises those with st_q8). A mask
// chain may also pass a reshape (a view keeps the elements' order): `viewed` holds the tensors of a class
// that is one op's result and reshapes of it alone, none a graph input or output, masked together or not
// (every op result that is `own` is `viewed` too: its class is itself).
struct Uses {
  std::map<std::string, const Op*> producer;
  std::map<std::string, std::vector<const Op*>> readers;
  std::set<std::string> own, viewed;
  std::map<std::string, std::vector<std::string>> classOf;  // class -> its tensors

  Uses(const Graph& graph, Classes& same) {
    std::map<std::string, int> members, views;
    std::set<std::string> ends, badClass;
    for (const auto& t : graph.inputs) ends.insert(t.name);
    ends.insert(graph.outputs.begin(), graph.outputs.end());
    for (const Op& op : graph.ops) {
      producer[op.output] = &op;
      for (const std::string& in : op.inputs) readers[in].push_back(&op);
      const std::string c = same.find(op.output);
      ++members[c];
      if (op.op == "reshape") ++views[c];
      classOf[c].push_back(op.output);
      if (ends.count(op.output)) badClass.insert(c);
    }
    for (const auto& t : graph.inputs) ++members[same.find(t.name)];
    for (const auto& t : graph.weights) ++members[same.find(t.name)];
    for (const Op& op : graph.ops) {
      const std::string c = same.find(op.output);
      if (!ends.count(op.output) && members[c] == 1) own.insert(op.output);
      if (!badClass.count(c) && members[c] == views[c] + 1 &&
          static_cast<int>(classOf[c].size()) == members[c])
        viewed.insert(op.output);
    }
    for (const auto& t : graph.weights)
      if (members[same.find(t.name)] == 1) own.insert(t.name);
  }
  // Whether only elementwise ops and softmaxes read t (each reads a masked -128 as -inf).
  bool readElementwise(const std::string& t) {
    for (const Op* r : readers[t])
      if (elementwiseArity(r->op) == 0 && r->op != "softmax") return false;
    return true;
  }
};

// The softmax inputs and, back from each, the elementwise chain that brings a matmul's products to it
// (the scores, scaled, a mask added or selected): each elementwise result on it with the softmax whose
// rows it follows. Only the chain's own elementwise ops and its softmax read a tensor of the chain, so
// that a masked key is masked for every reader; one that leads to two softmax inputs is on neither.
std::map<std::string, const Op*> maskChains(const Graph& graph, Uses& uses) {
  auto link = [](const Op& op) { return elementwiseArity(op.op) > 0 || op.op == "reshape"; };
  std::set<std::string> products;
  for (const Op& op : graph.ops) {
    bool product = op.op == "matmul" || op.op == "linear";
    for (const std::string& in : op.inputs) product = product || (link(op) && products.count(in));
    if (product) products.insert(op.output);
  }
  std::map<std::string, std::set<const Op*>> reach;  // tensor -> the softmaxes it reaches back from
  for (const Op& op : graph.ops) {
    if (op.op != "softmax") continue;
    std::vector<std::string> todo = {op.inputs[0]};
    while (!todo.empty()) {
      std::string t = todo.back();
      todo.pop_back();
      if (!products.count(t) || !uses.viewed.count(t) || !reach[t].insert(&op).second) continue;
      const Op* p = uses.producer[t];
      if (p && link(*p)) todo.insert(todo.end(), p->inputs.begin(), p->inputs.end());
    }
  }
  std::map<std::string, const Op*> chain;
  for (const auto& [t, ops] : reach) {  // an elementwise op's result or its view (a matmul's holds no fill)
    const Op* p = uses.producer[t];
    std::set<std::string> inputs;
    for (const Op* op : ops) inputs.insert(op->inputs[0]);
    if (inputs.size() == 1 && p && link(*p)) chain[t] = *ops.begin();
  }
  for (bool changed = true; changed;) {  // drop the tensors a reader off their chain reads, back to the ends
    changed = false;
    for (auto it = chain.begin(); it != chain.end();) {
      bool off = false;
      for (const Op* r : uses.readers[it->first]) {
        auto on = chain.find(r->output);
        off = off || !((r->op == "softmax" && r->inputs[0] == it->second->inputs[0]) ||
                       (link(*r) && on != chain.end() && on->second->inputs[0] == it->second->inputs[0]));
      }
      changed = changed || off;
      it = off ? chain.erase(it) : std::next(it);
    }
  }
  return chain;
}

// Masked scales (QuantScale::masked: -128 is -inf, and st_q8_masked stores only a fill as -128):
// - a tensor holding -inf that only elementwise ops and softmaxes read (a mask constant of -inf, a
//   where of -inf): its scale from its finite values (from 1.0 before, a coarse step for them);
// - the mask chains (maskChains): each elementwise result that holds a fill at the keys a fill set
//   (maskedKeys), scaled by its values at the other keys, where that makes the scale smaller. (The
//   scores before the mask is added hold values at the masked keys, unused, that their computation in
//   int8 may push past the range: they keep their scales.)
void calibrateMasks(const Graph& graph, const std::vector<std::map<std::string, Tensor>>& layers,
                    Classes& same, std::map<std::string, double>& absmax, QuantPlan& plan) {
  Uses uses(graph, same);
  std::map<std::string, double> finite;
  std::set<std::string> infinite;
  for (const auto& env : layers)
    for (const auto& [t, x] : env) {
      if (!uses.own.count(t) || plan.int4.count(t) || plan.ids.count(t)) continue;
      double& m = finite[t];
      for (float v : x.data)
        if (std::isfinite(v))
          m = std::max(m, std::fabs(static_cast<double>(v)));
        else if (v < 0)
          infinite.insert(t);
    }
  for (const std::string& t : infinite)
    if (uses.readElementwise(t)) {
      plan.scales[t] = scaleFor(finite[t]);
      plan.scales[t].masked = true;
    }
  std::map<std::string, const Op*> chain = maskChains(graph, uses);
  std::map<std::string, double> keptRange, lowest;
  std::set<std::string> finiteFill;  // chain tensors with a finite fill (the dtype's minimum, -1e4)
  for (const auto& env : layers) {
    std::map<std::string, std::vector<Key>> keys;  // by softmax input
    for (const auto& [t, softmax] : chain) {
      const std::string& x = softmax->inputs[0];
      auto tv = env.find(t), xv = env.find(x);
      if (tv == env.end() || xv == env.end()) continue;
      if (!keys.count(x)) keys[x] = maskedKeys(xv->second, *softmax);
      const std::vector<Key>& key = keys[x];
      const std::vector<float>& v = tv->second.data;
      // Elementwise results and their views: the softmax input's elements in its order, where as many.
      const bool aligned = !key.empty() && v.size() == xv->second.data.size();
      double& range = keptRange[t];
      for (size_t i = 0; i < v.size(); ++i) {
        const Key k = aligned ? key[i] : Key::kKept;
        if (k == Key::kKept) range = std::max(range, std::fabs(static_cast<double>(v[i])));
        if (k == Key::kFill) {
          lowest[t] = std::min(lowest[t], static_cast<double>(v[i]));
          if (std::isfinite(v[i])) finiteFill.insert(t);
        }
      }
    }
  }
  // One scale a class (a result and its views, all on the chain, or one tensor).
  std::map<std::string, double> classRange, classLowest;
  for (const auto& [t, range] : keptRange) {
    const std::string c = same.find(t);
    classRange[c] = std::max(classRange[c], range);
    classLowest[c] = std::min(classLowest[c], lowest[t]);
  }
  for (const auto& [c, range] : classRange) {
    const std::vector<std::string>& members = uses.classOf.at(c);  // chain tensors are op results
    bool whole =
        std::all_of(members.begin(), members.end(), [&](const std::string& t) { return keptRange.count(t); });
    if (!whole || !(classLowest[c] < -kFill * range && range < absmax[c])) continue;
    bool nanRows = std::none_of(members.begin(), members.end(),
                                [&](const std::string& t) { return finiteFill.count(t); });
    for (const std::string& t : members) {
      plan.scales[t] = scaleFor(range);
      plan.scales[t].masked = true;
      plan.scales[t].nanRows = nanRows;
    }
  }
}

}  // namespace

const QuantScale& QuantPlan::of(const std::string& tensor) const {
  auto it = scales.find(tensor);
  if (it == scales.end()) throw UserError("internal: tensor '" + tensor + "' has no int8 scale");
  return it->second;
}

QuantPlan calibrate(const Graph& graph, const std::vector<std::map<std::string, Tensor>>& layers, bool chained) {
  QuantPlan plan;
  Classes same;
  for (const Op& op : graph.ops) {
    if (hasInt4Weight(graph, op)) plan.int4.insert(op.inputs[1]);
    if (isCopy(op.op)) same.join(op.output, op.inputs[0]);
    if (op.op == "kv_append") {  // the cache and the row it takes share a scale: the kernel copies int8 values
      same.join(op.output, op.inputs[0]);
      same.join(op.output, op.inputs[1]);
    }
    if (op.op == "embedding") {
      same.join(op.output, op.inputs[1]);
      plan.ids.insert(op.inputs[0]);
    }
  }
  if (chained && !graph.inputs.empty() && !graph.outputs.empty()) same.join(graph.inputs[0].name, graph.outputs[0]);
  std::map<std::string, double> absmax;
  for (const auto& env : layers)
    for (const auto& [name, t] : env) {
      if (plan.int4.count(name) || plan.ids.count(name)) continue;
      double& m = absmax[same.find(name)];
      for (float v : t.data) m = std::max(m, std::fabs(static_cast<double>(v)));
    }
  for (const auto& env : layers)
    for (const auto& [name, t] : env)
      if (!plan.int4.count(name) && !plan.ids.count(name)) plan.scales[name] = scaleFor(absmax[same.find(name)]);
  calibrateMasks(graph, layers, same, absmax, plan);
  return plan;
}

int8_t requantised(float v, const QuantScale& s) {
  return s.masked ? st_q8_masked(v * s.inverse) : st_q8(v * s.inverse);
}

std::vector<int8_t> quantizeValues(const std::vector<float>& x, const QuantScale& s) {
  std::vector<int8_t> q(x.size());
  for (size_t i = 0; i < x.size(); ++i) q[i] = st_q8(x[i] * s.inverse);
  return q;
}

QuantWeights quantizeWeights(const Graph& graph, const QuantPlan& plan, const std::map<std::string, Tensor>& values) {
  QuantWeights out;
  for (const auto& w : graph.weights) {
    const Tensor& t = values.at(w.name);
    if (!plan.int4.count(w.name)) out.values[w.name] = quantizeValues(t.data, plan.of(w.name));
  }
  for (const Op& op : graph.ops) {
    if (!hasInt4Weight(graph, op)) continue;
    const Tensor& w = values.at(op.inputs[1]);
    bool tb = numberAttr(op, "transpose_b", 0) != 0;
    int64_t rows = w.shape[0], cols = w.shape[1];
    int64_t K = tb ? cols : rows, N = tb ? rows : cols;
    auto at = [&](int64_t k, int64_t n) { return w.data[static_cast<size_t>(tb ? n * K + k : k * N + n)]; };
    std::vector<int8_t> q(static_cast<size_t>(K * N));
    std::vector<float> epi(static_cast<size_t>(2 * N));
    const Tensor* bias = op.inputs.size() > 2 ? &values.at(op.inputs[2]) : nullptr;
    const QuantScale &sa = plan.of(op.inputs[0]), &so = plan.of(op.output);
    for (int64_t n = 0; n < N; ++n) {
      double absmax = 0;
      for (int64_t k = 0; k < K; ++k) absmax = std::max(absmax, std::fabs(static_cast<double>(at(k, n))));
      float sw = absmax > 0 && std::isfinite(absmax) ? static_cast<float>(absmax / 7.0) : 1.0f;
      float inv = 1.0f / sw;
      for (int64_t k = 0; k < K; ++k)
        q[static_cast<size_t>(tb ? n * K + k : k * N + n)] = static_cast<int8_t>(st_q4(at(k, n) * inv));
      epi[static_cast<size_t>(2 * n)] = static_cast<float>(static_cast<double>(sa.scale) * sw / so.scale);
      epi[static_cast<size_t>(2 * n + 1)] = bias ? static_cast<float>(bias->data[static_cast<size_t>(n)] / static_cast<double>(so.scale)) : 0.0f;
    }
    out.values[op.inputs[1]] = std::move(q);
    out.epilogue[op.name] = std::move(epi);
  }
  return out;
}

SoftmaxTable softmaxTable(float scale, bool masked) {
  SoftmaxTable t;
  t.masked = masked;
  const double c = static_cast<double>(scale) / std::log(2.0), limit = 1 << 28;
  for (int q = -128; q <= 127; ++q) {
    const double y = std::min(std::max(c * q, -limit), limit), e = std::ceil(y);
    const size_t i = static_cast<size_t>(q + 128);
    t.exponent[i] = static_cast<int32_t>(e);
    t.mantissa[i] = static_cast<uint32_t>(std::llround(std::exp2(y - e + 31)));  // in [2^30, 2^31]
  }
  if (masked) t.mantissa[0] = 0;
  return t;
}

void softmaxRowStats(const int8_t* q, int64_t D, int64_t T, const SoftmaxTable& table, float scale,
                     float* max, float* sum, int64_t kept) {
  int laneE[2] = {st_exp_empty, st_exp_empty}, qmax = -128;
  long maskedCount = 0;
  st_u64 laneS[2] = {0, 0};
  for (int64_t first = 0, j = 0; first < D; first += T, ++j) {  // tokens past the kept keys add nothing
    const int64_t end = std::min(std::min(D, kept), first + T);
    int qt = -128;
    for (int64_t i = first; i < end; ++i) qt = std::max<int>(qt, q[i]);
    const int et = table.exponent[static_cast<size_t>(qt + 128)];
    st_u64 st = 0;
    for (int64_t i = first; i < end; ++i) {
      const size_t t = static_cast<size_t>(q[i] + 128);
      st += st_shr(table.mantissa[t], et - table.exponent[t]);
      maskedCount += q[i] == -128;
    }
    st_expsum_add(laneE[j % 2], laneS[j % 2], et, st);
    qmax = std::max(qmax, qt);
  }
  st_expsum_add(laneE[0], laneS[0], laneE[1], laneS[1]);
  const st_u64 mmax = table.mantissa[static_cast<size_t>(qmax + 128)];
  if (table.masked)
    st_softmax_stats_masked(laneS[0], mmax, qmax, maskedCount, scale, max, sum);
  else
    st_softmax_stats(laneS[0], mmax, qmax, scale, max, sum);
}

std::map<std::string, std::vector<int8_t>> interpretQuantized(const Graph& graph, const QuantPlan& plan,
                                                              const QuantWeights& weights,
                                                              const std::map<std::string, std::vector<int8_t>>& inputs,
                                                              const std::map<std::string, Tensor>& ids,
                                                              const Bindings& bindings) {
  TypedGraph typed = inferShapes(graph);
  std::map<std::string, QValue> env;
  auto shapeOf = [&](const std::string& name) { return bindShape(typed.tensors.at(name).shape, bindings); };
  for (const auto& t : graph.inputs) {
    if (plan.ids.count(t.name)) continue;
    env[t.name] = {shapeOf(t.name), inputs.at(t.name), plan.of(t.name)};
  }
  for (const auto& t : graph.weights) env[t.name] = {shapeOf(t.name), weights.values.at(t.name), plan.int4.count(t.name) ? QuantScale{} : plan.of(t.name)};
  std::map<std::string, SoftmaxTable> tables;  // by softmax input
  for (const Op& op : graph.ops) {
    const std::string& k = op.op;
    std::vector<int64_t> shape = shapeOf(op.output);
    QValue out{shape, std::vector<int8_t>(static_cast<size_t>(elementCount(shape))), plan.of(op.output)};
    auto in = [&](size_t i) -> const QValue& { return env.at(op.inputs[i]); };
    const int64_t D = shape.empty() ? 1 : shape.back();
    const int64_t rowsN = elementCount(shape) / std::max<int64_t>(D, 1);
    if (k == "matmul" || k == "linear") {
      const QValue &a = in(0), &w = in(1);
      bool tb = numberAttr(op, "transpose_b", 0) != 0, int4 = plan.int4.count(op.inputs[1]) > 0;
      size_t rank = shape.size();
      int64_t M = shape[rank - 2], N = shape[rank - 1], K = a.shape.back(), batch = elementCount(shape) / (M * N);
      bool shared = w.shape.size() == 2;
      const std::vector<float>* epi = int4 ? &weights.epilogue.at(op.name) : nullptr;
      float r = static_cast<float>(static_cast<double>(a.s.scale) * w.s.scale / out.s.scale);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            int32_t acc = 0;
            for (int64_t kk = 0; kk < K; ++kk) {
              int64_t wi = (shared ? 0 : b * K * N) + (tb ? n * K + kk : kk * N + n);
              acc += static_cast<int32_t>(a.q[static_cast<size_t>((b * M + m) * K + kk)]) * w.q[static_cast<size_t>(wi)];
            }
            float y = epi ? static_cast<float>(acc) * (*epi)[static_cast<size_t>(2 * n)] + (*epi)[static_cast<size_t>(2 * n + 1)]
                          : static_cast<float>(acc) * r;
            out.q[static_cast<size_t>((b * M + m) * N + n)] = st_q8(y);
          }
    } else if (elementwiseArity(k) > 0) {
      std::vector<std::vector<int64_t>> st;
      for (size_t i = 0; i < op.inputs.size(); ++i) st.push_back(broadcastStrides(in(i).shape, shape));
      int64_t flat = 0;
      forEachIndex(shape, [&](const std::vector<int64_t>& idx) {
        float x = in(0).at(offsetOf(idx, st[0]));
        float b = op.inputs.size() > 1 ? in(1).at(offsetOf(idx, st[1])) : 0.0f;
        out.q[static_cast<size_t>(flat++)] = requantised(elementwiseValue(op, x, b), out.s);
      });
    } else if (k == "softmax" || k == "layernorm" || k == "rmsnorm") {
      const QValue& x = in(0);
      const QValue* scale = op.inputs.size() > 1 ? &in(1) : nullptr;
      const QValue* shift = op.inputs.size() > 2 ? &in(2) : nullptr;
      const float eps = static_cast<float>(numberAttr(op, "eps", k == "rmsnorm" ? 1e-6 : 1e-5));
      const int64_t rowsR = x.shape.size() >= 2 ? x.shape[x.shape.size() - 2] : 1;
      for (int64_t row = 0; row < rowsN; ++row) {
        const int64_t base = row * D;
        float st0 = 0, st1 = 0;
        if (k == "softmax") {  // the .stats kernel
          const SoftmaxTable& table =
              tables.try_emplace(op.inputs[0], softmaxTable(x.s.scale, x.s.masked)).first->second;
          auto token = plan.softmaxTokens.find(op.name);
          softmaxRowStats(&x.q[static_cast<size_t>(base)], D,
                          token == plan.softmaxTokens.end() ? 1 : token->second, table, x.s.scale, &st0,
                          &st1, keptKeys(op, row % rowsR, rowsR, D));
        } else {  // integer sums of the int8 values and their squares (st_numeric.h)
          int64_t s1 = 0, s2 = 0;
          for (int64_t i = 0; i < D; ++i) {
            const int64_t q = x.q[static_cast<size_t>(base + i)];
            s1 += q;
            s2 += q * q;
          }
          if (k == "layernorm")
            st_layernorm_stats(s1, s2, static_cast<long>(D), x.s.scale, &st0, &st1);
          else
            st0 = st_rmsnorm_stats(s2, static_cast<long>(D), x.s.scale);
        }
        // The .apply kernel.
        const float inv = k == "softmax" ? 1.0f / st1 : 1.0f / std::sqrt((k == "layernorm" ? st1 : st0) + eps);
        for (int64_t i = 0; i < D; ++i) {
          float xv = x.at(base + i), v;
          if (k == "softmax") {
            // A row of masked keys alone (st_softmax_stats_masked) weighs them evenly, or is 0 where its
            // fills are -inf (NaN in f32: QuantScale::nanRows).
            const bool alone = x.s.masked && st0 == -std::numeric_limits<float>::infinity();
            const float even = x.s.nanRows ? 0.0f : inv;
            v = i < keptKeys(op, row % rowsR, rowsR, D) ? (alone ? even : std::exp(xv - st0) * inv) : 0.0f;
          } else {
            v = k == "layernorm" ? (xv - st0) * inv : xv * inv;
            if (scale) v = v * scale->at(i);
            if (shift) v = v + shift->at(i);
          }
          out.q[static_cast<size_t>(base + i)] = st_q8(v * out.s.inverse);
        }
      }
    } else if (k == "rope") {
      const QValue& x = in(0);
      const int64_t hd = ropeHeadDim(op, D), h = hd / 2;
      int64_t positions = x.shape.size() >= 2 ? x.shape[x.shape.size() - 2] : 1;
      const int64_t offset = Expr::parse(ropeOffset(op)).eval(bindings);
      const float Df = static_cast<float>(hd), theta = static_cast<float>(ropeTheta(op));
      for (int64_t row = 0; row < rowsN; ++row) {
        const int pos = static_cast<int>(offset + row % positions);
        for (int64_t j = 0; j < D; ++j) {  // as the emitted kernel computes it (emit/task_bodies.cpp: rope)
          const int64_t jj = j % hd;
          const int i = static_cast<int>(jj % h);
          const float angle = pos * std::pow(theta, -2.0f * i / Df);
          const float c = std::cos(angle), s = std::sin(angle);
          float a = x.at(row * D + j);
          float y = jj < h ? a * c - x.at(row * D + j + h) * s : a * c + x.at(row * D + j - h) * s;
          out.q[static_cast<size_t>(row * D + j)] = st_q8(y * out.s.inverse);
        }
      }
    } else if (k == "reduce_sum" || k == "reduce_max" || k == "reduce_mean") {
      const QValue& x = in(0);
      int64_t R = x.shape.back(), n = elementCount(x.shape) / std::max<int64_t>(R, 1);
      for (int64_t row = 0; row < n; ++row) {
        // In integers, as the kernel accumulates: the int8 sum or maximum, then the scale.
        int64_t acc = k == "reduce_max" ? -128 : 0;
        for (int64_t i = 0; i < R; ++i) {
          const int64_t q = x.q[static_cast<size_t>(row * R + i)];
          acc = k == "reduce_max" ? (q > acc ? q : acc) : acc + q;
        }
        float y = static_cast<float>(acc) * x.s.scale;
        if (k == "reduce_mean") y = y / static_cast<float>(R);
        out.q[static_cast<size_t>(row)] = st_q8(y * out.s.inverse);
      }
    } else if (k == "reshape") {
      out.q = in(0).q;
    } else if (k == "transpose" || k == "slice") {
      const QValue& x = in(0);
      auto perm = k == "transpose" ? std::get<std::vector<int64_t>>(op.attrs.at("perm")) : std::vector<int64_t>{};
      int64_t rank = static_cast<int64_t>(x.shape.size());
      int64_t axis = static_cast<int64_t>(numberAttr(op, "axis", -1));
      if (axis < 0) axis += rank;
      int64_t start = static_cast<int64_t>(numberAttr(op, "start", 0));
      std::vector<int64_t> st(x.shape.size(), 1);
      for (size_t d = x.shape.size() - 1; d-- > 0;) st[d] = st[d + 1] * x.shape[d + 1];
      int64_t flat = 0;
      forEachIndex(shape, [&](const std::vector<int64_t>& idx) {
        int64_t src = 0;
        for (size_t d = 0; d < idx.size(); ++d)
          src += k == "transpose" ? idx[d] * st[static_cast<size_t>(perm[d])]
                                  : (idx[d] + (static_cast<int64_t>(d) == axis ? start : 0)) * st[d];
        out.q[static_cast<size_t>(flat++)] = x.q[static_cast<size_t>(src)];
      });
    } else if (k == "concat") {
      int64_t rank = static_cast<int64_t>(shape.size());
      int64_t axis = static_cast<int64_t>(numberAttr(op, "axis", 0));
      if (axis < 0) axis += rank;
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
      size_t pos = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < op.inputs.size(); ++i) {
          const QValue& t = in(i);
          const float m = static_cast<float>(static_cast<double>(t.s.scale) / out.s.scale);
          int64_t chunk = elementCount(t.shape) / outer;
          for (int64_t e = 0; e < chunk; ++e) out.q[pos++] = st_q8(static_cast<float>(t.q[static_cast<size_t>(o * chunk + e)]) * m);
        }
    } else if (k == "kv_append") {  // the cache, its last position the new row (requantised where scales differ)
      const QValue &cache = in(0), &row = in(1);
      const float mc = static_cast<float>(static_cast<double>(cache.s.scale) / out.s.scale),
                  mn = static_cast<float>(static_cast<double>(row.s.scale) / out.s.scale);
      for (size_t i = 0; i < out.q.size(); ++i) out.q[i] = st_q8(static_cast<float>(cache.q[i]) * mc);
      forEachAppendSlot(shape, kvAppendAxis(op), [&](int64_t c, int64_t n) {
        out.q[static_cast<size_t>(c)] = st_q8(static_cast<float>(row.q[static_cast<size_t>(n)]) * mn);
      });
    } else if (k == "embedding") {
      const Tensor& idv = ids.at(op.inputs[0]);
      const QValue& table = in(1);
      int64_t V = table.shape.front(), Dt = table.shape.back();
      size_t pos = 0;
      for (float id : idv.data) {
        int64_t row = embeddingRow(id, V);
        for (int64_t e = 0; e < Dt; ++e) out.q[pos++] = table.q[static_cast<size_t>(row * Dt + e)];
      }
    } else {
      throw UserError(formatError(op.loc, "unsupported: the W4A8 reference has no '" + k + "'"));
    }
    env[op.output] = std::move(out);
  }
  std::map<std::string, std::vector<int8_t>> result;
  for (auto& [name, v] : env) result[name] = std::move(v.q);
  return result;
}

}  // namespace stc
