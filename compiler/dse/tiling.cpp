// Intensity-aware unrolling. Every matmul starts at Tk = gcd(tile, K) MACs deep (Tn = gcd(tile, N)
// wide); then, repeatedly, the slowest matmul whose doubled Tk still divides K, still makes it faster
// (it may already be bound by the HBM bandwidth of its weight stream) and still fits the DSP budget
// doubles its Tk. The budget (unroll_budget of the platform's DSPs) covers every kernel: the DSPs of
// the others come off first, and when the matmuls at the stream tile are already over it, the tile whose
// halving slows its matmul least is halved until they fit. A symbolic K or N (ctx) takes the tile
// itself, padded (lower/kernels.h), and a symbolic K keeps it: every stream over that dimension must
// agree on the padding. Cycles of a matmul: max(batch * M * N/Tn * K/Tk, weight bytes streamed /
// (stripes * bytes per channel-cycle)), with stripes = the channels its weight tile needs per cycle, at
// most its cap (stripeCaps), and the weight streamed once per row (a GEMV) or once per row block (a
// prefill matmul, whose block is the smallest that keeps the stream within the iterations).
#include "compiler/dse/tiling.h"

#include <cmath>
#include <numeric>

#include "compiler/dse/cost_model.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/lower/kernels.h"

namespace stc {

namespace {

double channelBytesPerCycle(const Platform& p) { return p.hbm.channelGbps * 1000.0 / p.kernelClockMhz; }

struct MatmulDims {
  double rows = 1;  // batch * M
  int64_t M = 0, K = 0, N = 0;
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
  d.M = out.shape.size() >= 2 ? out.shape[out.shape.size() - 2].eval(o.maxima) : 1;
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
      // A prefill matmul's row blocks flow on to the next matmul as they come; a right side made on chip
      // (attention's keys) is held whole before the first row can use it.
      barrier = streamsInput(graph, op) || writesPanels(graph, op) ||
                graph.tensors.at(op.inputs[1]).role == TensorRole::kIntermediate;
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

namespace {

// Iterations of a matmul at reduction tile tk, and the cycles its right side takes from HBM (0 when on
// chip): each weight tile used by `reuse` rows in a row, over its stripes, or over one channel when the
// weight goes through a converter that holds it for every row (weight-stationary: one DMA, read once).
struct MatmulCost {
  double iterations = 0, hbm = 0;
};

MatmulCost costOf(const TypedGraph& graph, const Op& op, int64_t tk, int64_t rowBlock,
                  const Platform& platform, const CompileOptions& options) {
  MatmulDims d = dimsOf(graph, op, options);
  MatmulCost c;
  c.iterations =
      d.rows * static_cast<double>((d.N + d.tn - 1) / d.tn) * static_cast<double>((d.K + tk - 1) / tk);
  if (!d.fromHbm) return c;
  bool panels = writesPanels(graph, op), stationary = panels && rowBlock == 0;
  int64_t reuse = !panels ? 1 : stationary ? d.M : rowBlock;
  int64_t tileBytes = (tk * d.tn * d.weightBits + 7) / 8;
  double bytes = c.iterations * static_cast<double>(tileBytes) / static_cast<double>(reuse);
  int stripes = stationary ? 1 : stripesFor(tileBytes, platform, options, op.inputs[1]);
  c.hbm = bytes / (stripes * channelBytesPerCycle(platform));
  return c;
}

}  // namespace

double matmulCycles(const TypedGraph& graph, const Op& op, int64_t tk, int64_t rowBlock,
                    const Platform& platform, const CompileOptions& options) {
  MatmulCost c = costOf(graph, op, tk, rowBlock, platform, options);
  return std::max(c.iterations, c.hbm);
}

int64_t chooseRowBlock(const TypedGraph& graph, const Op& op, int64_t tk, const Platform& platform,
                       const CompileOptions& options) {
  if (!writesPanels(graph, op)) return 0;
  int64_t M = dimsOf(graph, op, options).M;
  for (int64_t b = 1; b < M && M % b == 0; b *= 2) {
    MatmulCost c = costOf(graph, op, tk, b, platform, options);
    if (c.hbm <= c.iterations) return b;
  }
  return 0;
}

namespace {

// DSPs of the kernels that are not matmuls (norms, softmax, activations) at these tiles, from the
// cost model: they come out of the budget before any matmul unrolls.
double otherDsps(const TypedGraph& graph, const CompileOptions& options, const Schedules& schedules) {
  KernelGraph kernels = lowerToKernels(graph, options, schedules);
  costKernels(kernels);
  double dsp = 0;
  for (const Kernel& k : kernels.kernels)
    if (k.op != "matmul" && k.op != "linear") dsp += static_cast<double>(k.dsp);
  return dsp;
}

}  // namespace

namespace {

// A pin the graph cannot take: at the schedule file's line when one set it, else at the op's.
UserError pinError(const CompileOptions& options, const Op& op, const std::string& knob, int64_t value,
                   const std::string& why) {
  std::string key = knob + "." + op.name;
  auto origin = options.pinOrigin.find(key);
  if (origin != options.pinOrigin.end())
    return UserError(formatError(origin->second, "field '" + knob + "': " + knob + " " +
                                                     std::to_string(value) + " for '" + op.name + "' (" +
                                                     op.loc.str() + "): " + why));
  return UserError(formatError(op.loc, "--set " + key + "=" + std::to_string(value) + ": " + why));
}

// The pinned row block (row_block.OP), checked against the rows, or the chosen one.
int64_t rowBlockOf(const TypedGraph& graph, const Op& op, int64_t tk, const Platform& platform,
                   const CompileOptions& options) {
  auto pin = options.pinnedRowBlock.find(op.name);
  int64_t M = dimsOf(graph, op, options).M;
  if (pin == options.pinnedRowBlock.end()) {
    if (options.rowBlockPolicy < 0) return chooseRowBlock(graph, op, tk, platform, options);
    int64_t block = std::gcd(options.rowBlockPolicy, M);
    return !writesPanels(graph, op) || options.rowBlockPolicy == 0 || block >= M ? 0 : block;
  }
  if (pin->second > 0 && (!writesPanels(graph, op) || M % pin->second != 0))
    throw pinError(options, op, "row_block", pin->second,
                   writesPanels(graph, op)
                       ? "the block must divide the " + std::to_string(M) + " rows"
                       : "only a matmul over a right side from HBM with several rows runs in row blocks");
  return pin->second >= M ? 0 : pin->second;
}

std::map<std::string, int64_t> chooseUnroll(const TypedGraph& graph, const Platform& platform,
                                            const CompileOptions& options) {
  std::map<std::string, int64_t> tk;
  std::map<std::string, const Op*> ops;
  std::map<std::string, MatmulDims> dims;
  for (const Op& op : graph.graph->ops) {
    if (op.op != "matmul" && op.op != "linear") continue;
    MatmulDims d = dimsOf(graph, op, options);
    tk[op.name] = d.kConstant ? tileFor(Expr(d.K), options.tile) : options.tile;  // a symbolic K: padded tiles
    if (auto pin = options.pinnedTk.find(op.name); pin != options.pinnedTk.end()) {
      if (d.kConstant ? d.K % pin->second != 0 : pin->second != options.tile)
        throw pinError(options, op, "tk", pin->second,
                       "the reduction tile must divide K (" +
                           (d.kConstant ? std::to_string(d.K)
                                        : "symbolic: the stream tile " + std::to_string(options.tile)) +
                           ")");
      tk[op.name] = pin->second;
    }
    ops[op.name] = &op;
    dims[op.name] = d;
  }
  auto dspOf = [&](const std::string& name, int64_t t) { return static_cast<double>(t * dims.at(name).tn) * dspPerMac(dims.at(name).arithmetic); };
  auto cycles = [&](const std::string& name, int64_t t) {
    const Op& op = *ops.at(name);
    return matmulCycles(graph, op, t, rowBlockOf(graph, op, t, platform, options), platform, options);
  };
  Schedules atStreamTile;
  for (const auto& [name, t] : tk) atStreamTile[name].tk = t;
  double budget = options.unrollBudget * static_cast<double>(platform.resources.dsp) -
                  otherDsps(graph, options, atStreamTile);
  double dspUsed = 0;
  for (const auto& [name, t] : tk) dspUsed += dspOf(name, t);
  // Over the budget at the stream tile: halve the reduction tile that slows its matmul least (a constant
  // K only; a padded symbolic K keeps the tile its stream is padded to).
  while (dspUsed > budget) {
    std::string best;
    double bestCycles = 0;
    for (const auto& [name, t] : tk) {
      if (!dims.at(name).kConstant || t == 1 || options.pinnedTk.count(name)) continue;
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
      if (!d.kConstant || d.K % (2 * t) != 0 || 2 * t > kMaxTk || options.pinnedTk.count(name)) continue;
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

}  // namespace

Schedules chooseSchedules(const TypedGraph& graph, const Platform& platform, const CompileOptions& options) {
  for (const auto* pins : {&options.pinnedTk, &options.pinnedRowBlock})
    for (const auto& [name, value] : *pins) {
      bool found = false;
      for (const Op& op : graph.graph->ops)
        found = found || (op.name == name && (op.op == "matmul" || op.op == "linear"));
      std::string key = std::string(pins == &options.pinnedTk ? "tk." : "row_block.") + name;
      auto origin = options.pinOrigin.find(key);
      if (!found && origin != options.pinOrigin.end())
        throw UserError(formatError(origin->second, "the graph has no matmul named '" + name + "'"));
      if (!found)
        throw UserError("stc compile: error: --set " + key + ": the graph has no matmul named '" + name +
                        "'");
    }
  Schedules schedules;
  for (const auto& [name, tk] : chooseUnroll(graph, platform, options)) {
    for (const Op& op : graph.graph->ops)
      if (op.name == name) schedules[name] = {tk, rowBlockOf(graph, op, tk, platform, options)};
  }
  return schedules;
}

}  // namespace stc
