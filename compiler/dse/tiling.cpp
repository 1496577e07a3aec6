// Intensity-aware unrolling. Every matmul starts at Tk = gcd(tile, K) MACs deep (Tn = gcd(tile, N)
// wide); then, repeatedly, the slowest matmul whose doubled Tk still divides K, still makes it faster
// (it may already be bound by the HBM bandwidth of its weight stream) and still fits the DSP budget
// doubles its Tk. The budget (unroll_budget of the platform's DSPs) covers every kernel: the DSPs of
// the others come off first, and when the matmuls at the stream tile are already over it, the tile whose
// halving slows its matmul least is halved until they fit. A symbolic K or N (ctx) takes the tile
// itself, padded (lower/kernels.h), and a symbolic K keeps it: every stream over that dimension must
// agree on the padding. Cycles of a matmul: max(batch * M * N/Tn * K/Tk, weight bytes / (stripes * bytes per
// channel-cycle)), with stripes = the channels its weight tile needs per cycle, at most its cap (stripeCaps).
#include "compiler/dse/tiling.h"

#include <cmath>

#include "compiler/dse/cost_model.h"
#include "compiler/lower/kernels.h"

namespace stc {

namespace {

double channelBytesPerCycle(const Platform& p) { return p.hbm.channelGbps * 1000.0 / p.kernelClockMhz; }

struct MatmulDims {
  double rows = 1;  // batch * M
  int64_t K = 0, N = 0;
  bool kConstant = false;
  int64_t tn = 1;
  int weightBits = 0;
  bool fromHbm = false;
  std::string arithmetic;
};

MatmulDims dimsOf(const TypedGraph& g, const Op& op, const CompileOptions& o) {
  const TensorInfo& a = g.tensors.at(op.inputs[0]);
  const TensorInfo& w = g.tensors.at(op.inputs[1]);
  const TensorInfo& out = g.tensors.at(op.output);
  MatmulDims d;
  for (size_t i = 0; i + 1 < out.shape.size(); ++i) d.rows *= static_cast<double>(out.shape[i].eval(o.maxima));
  d.kConstant = a.shape.back().isConstant();
  d.K = a.shape.back().eval(o.maxima);
  d.N = out.shape.back().eval(o.maxima);
  d.tn = tileFor(out.shape.back(), o.tile);
  d.weightBits = dtypeBits(w.dtype);
  d.fromHbm = w.role == TensorRole::kWeight || w.role == TensorRole::kInput;
  d.arithmetic = w.dtype == "i4" && a.dtype == "i8" ? "w4a8" : a.dtype;
  return d;
}

}  // namespace

int stripesFor(int64_t tokenBytes, const Platform& platform, const CompileOptions& options, const std::string& weight) {
  int s = static_cast<int>(std::ceil(static_cast<double>(tokenBytes) / channelBytesPerCycle(platform) - 1e-9));
  auto cap = options.stripeCap.find(weight);
  int limit = cap != options.stripeCap.end() ? cap->second : options.maxStripe > 0 ? options.maxStripe : 8;
  return std::max(1, std::min(s, limit));
}

std::map<std::string, int> stripeCaps(const TypedGraph& graph, const Platform& platform, const CompileOptions& options) {
  std::map<std::string, int> stage;  // tensors: the stage in which they are made (0: from HBM)
  std::map<int, int> matmulsIn;
  std::vector<std::pair<std::string, int>> weights;  // weight, stage of its matmul
  auto rows = [&](const std::string& t) {
    double r = 1;
    const TensorInfo& info = graph.tensors.at(t);
    for (size_t i = 0; i + 1 < info.shape.size(); ++i) r *= static_cast<double>(info.shape[i].eval(options.maxima));
    return r;
  };
  for (const Op& op : graph.graph->ops) {
    int s = 0;
    for (const auto& in : op.inputs) s = std::max(s, stage.count(in) ? stage.at(in) : 0);
    bool matmul = op.op == "matmul" || op.op == "linear";
    bool barrier = false;
    if (op.op == "layernorm" || op.op == "rmsnorm" || op.op == "softmax") barrier = rows(op.output) == 1;
    if (matmul) {
      barrier = streamsInput(graph, op) || writesPanels(graph, op);
      if (graph.tensors.at(op.inputs[1]).role == TensorRole::kWeight) {
        weights.emplace_back(op.inputs[1], s);
        ++matmulsIn[s];
      }
    }
    stage[op.output] = s + (barrier ? 1 : 0);
  }
  std::map<std::string, int> caps;
  for (const auto& [weight, s] : weights) {
    int cap = options.maxStripe > 0 ? options.maxStripe : std::max(1, platform.hbm.channels / matmulsIn.at(s));
    auto it = caps.find(weight);
    caps[weight] = it == caps.end() ? cap : std::min(it->second, cap);
  }
  return caps;
}

double matmulCycles(const TypedGraph& graph, const Op& op, int64_t tk, const Platform& platform,
                    const CompileOptions& options) {
  MatmulDims d = dimsOf(graph, op, options);
  double iterations = d.rows * static_cast<double>((d.N + d.tn - 1) / d.tn) * static_cast<double>((d.K + tk - 1) / tk);
  if (!d.fromHbm) return iterations;
  int64_t tileBytes = (tk * d.tn * d.weightBits + 7) / 8;
  double bytes = iterations * static_cast<double>(tileBytes);
  int stripes = stripesFor(tileBytes, platform, options, op.inputs[1]);
  return std::max(iterations, bytes / (stripes * channelBytesPerCycle(platform)));
}

namespace {

// DSPs of the kernels that are not matmuls (norms, softmax, activations) at these tiles, from the
// cost model: they come out of the budget before any matmul unrolls.
double otherDsps(const TypedGraph& graph, const CompileOptions& options, const std::map<std::string, int64_t>& tk) {
  KernelGraph kernels = lowerToKernels(graph, options, tk);
  costKernels(kernels);
  double dsp = 0;
  for (const Kernel& k : kernels.kernels)
    if (k.op != "matmul" && k.op != "linear") dsp += static_cast<double>(k.dsp);
  return dsp;
}

}  // namespace

std::map<std::string, int64_t> chooseUnroll(const TypedGraph& graph, const Platform& platform,
                                            const CompileOptions& options) {
  std::map<std::string, int64_t> tk;
  std::map<std::string, const Op*> ops;
  std::map<std::string, MatmulDims> dims;
  for (const Op& op : graph.graph->ops) {
    if (op.op != "matmul" && op.op != "linear") continue;
    MatmulDims d = dimsOf(graph, op, options);
    tk[op.name] = d.kConstant ? tileFor(Expr(d.K), options.tile) : options.tile;  // a symbolic K: padded tiles
    ops[op.name] = &op;
    dims[op.name] = d;
  }
  auto dspOf = [&](const std::string& name, int64_t t) { return static_cast<double>(t * dims.at(name).tn) * dspPerMac(dims.at(name).arithmetic); };
  auto cycles = [&](const std::string& name, int64_t t) { return matmulCycles(graph, *ops.at(name), t, platform, options); };
  double budget = options.unrollBudget * static_cast<double>(platform.resources.dsp) - otherDsps(graph, options, tk);
  double dspUsed = 0;
  for (const auto& [name, t] : tk) dspUsed += dspOf(name, t);
  // Over the budget at the stream tile: halve the reduction tile that slows its matmul least (a constant
  // K only; a padded symbolic K keeps the tile its stream is padded to).
  while (dspUsed > budget) {
    std::string best;
    double bestCycles = 0;
    for (const auto& [name, t] : tk) {
      if (!dims.at(name).kConstant || t == 1) continue;
      double c = cycles(name, t / 2);
      if (best.empty() || c < bestCycles) best = name, bestCycles = c;
    }
    if (best.empty()) break;
    dspUsed -= dspOf(best, tk[best]) / 2;
    tk[best] /= 2;
  }
  // Then double the slowest matmul's tile while that makes it faster and the budget holds it.
  for (;;) {
    std::string best;
    double bestCycles = -1;
    for (const auto& [name, t] : tk) {
      const MatmulDims& d = dims.at(name);
      if (!d.kConstant || d.K % (2 * t) != 0) continue;
      double now = cycles(name, t), next = cycles(name, 2 * t);
      if (next >= now || dspUsed + dspOf(name, t) > budget) continue;
      if (now > bestCycles) {
        bestCycles = now;
        best = name;
      }
    }
    if (best.empty()) return tk;
    dspUsed += dspOf(best, tk[best]);
    tk[best] *= 2;
  }
}

}  // namespace stc
