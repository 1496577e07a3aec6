// Intensity-aware unrolling. Every matmul starts at Tk = gcd(tile, K) MACs deep (Tn = gcd(tile, N)
// wide); then the budget goes where the layer waits: of every growth of one to four matmuls' Tk (to the
// next multiple of the start tile that divides K: 128 -> 224 for K = 896; of half of it in a matmul of
// more than one row: 128 -> 152 for K = 4,864) that fits
// the DSP budget and shortens the layer estimate (LayerEstimate: which matmuls run one after another and
// which side by side, and how long a stall pipeline holds its results, averaged over the symbols'
// samples), the one that saves the most cycles per DSP; when none that fits shortens the layer, one paid
// for by halving others where that does. Then the row blocks the layer's shared channels want are doubled,
// and the search runs again at those blocks, until none doubles (nine rounds at most); it starts from
// several blocks and keeps the best. chooseSchedules runs this at each lane II, keeps the best, then
// gives the ops the layer waits on a lane II of their own where the budget holds.
// The budget (unroll_budget of the platform's DSPs) covers every kernel: the DSPs of the others come
// off first, and when the matmuls at the stream tile are already over it, the tile whose halving slows
// its matmul least is halved until they fit. A symbolic K or N (ctx) takes the tile itself, padded
// (lower/kernels.h), and a symbolic K keeps it: every stream over that dimension must agree on the
// padding. Cycles of a matmul: max(batch * M * N/Tn * K/Tk, weight bytes streamed / (stripes * bytes per
// channel-cycle)), with stripes = the channels its weight tile needs per cycle, at most its cap
// (stripeCaps), and the weight streamed once per row (a GEMV) or once per row block (a prefill matmul,
// whose block is the smallest that keeps the stream within the iterations).
#include "compiler/dse/tiling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "compiler/dse/cost_model.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/lower/kernels.h"
#include "compiler/lower/streams.h"
#include "compiler/sizing/fifo_sizing.h"

namespace stc {

namespace {

double channelBytesPerCycle(const Platform& p) { return p.hbm.channelGbps * 1000.0 / p.kernelClockMhz; }

// A reduction tile a matmul should reach by doubling where K has it (128 MACs per output lane).
constexpr int64_t kReachTk = 128;

struct MatmulDims {
  double rows = 1;  // batch * M
  int64_t M = 0, K = 0, N = 0;
  bool kConstant = false;
  /// The search's tile of the matmul is its output tile, Tn, grown over N, while the reduction tile stays
  /// at tkFixed: K symbolic and N constant (P.V over ctx: K keeps the stream tile it is padded to), or K
  /// constant with few tiles that divide it (awkwardK).
  bool unrollsN = false;
  int64_t tkFixed = 1;
  int64_t tn = 1;  // the stream's output tile, or the pinned one
  int64_t tile = 1;  // the stream tile
  int weightBits = 0;
  bool fromHbm = false;
  std::string arithmetic;
  /// The reduction and output tiles at the search's tile t of this matmul (Tk, or Tn where unrollsN).
  int64_t tkAt(int64_t t) const { return unrollsN ? tkFixed : t; }
  int64_t tnAt(int64_t t) const { return unrollsN ? t : tn; }
};

bool isMatmul(const Op& op) {
  return op.op == "matmul" || op.op == "linear";
}

// The rows of a tensor: the product of every dimension but the last, symbols at their maxima.
double rowsOf(const TensorInfo& t, const Bindings& maxima) {
  double r = 1;
  for (size_t i = 0; i + 1 < t.shape.size(); ++i) r *= static_cast<double>(t.shape[i].eval(maxima));
  return r;
}

// The reduction tiles K grows through are multiples of `step`, its stream tile, or, in a matmul of more
// than one row, of half of it (whole int4 bytes still; chooseUnroll: grown).
int64_t growthStep(int64_t M, int64_t step) {
  return M > 1 && step >= 16 && step % 2 == 0 ? step / 2 : step;
}

MatmulDims dimsOf(const TypedGraph& g, const Op& op, const CompileOptions& o) {
  const TensorInfo& a = g.tensors.at(op.inputs[0]);
  const TensorInfo& w = g.tensors.at(op.inputs[1]);
  const TensorInfo& out = g.tensors.at(op.output);
  MatmulDims d;
  d.rows = rowsOf(out, o.maxima);
  d.M = out.shape.size() >= 2 ? out.shape[out.shape.size() - 2].eval(o.maxima) : 1;
  d.kConstant = a.shape.back().isConstant();
  d.K = a.shape.back().eval(o.maxima);
  d.N = out.shape.back().eval(o.maxima);
  d.tn = tileFor(out.shape.back(), o.tile);
  d.unrollsN = !d.kConstant && out.shape.back().isConstant();
  d.tile = d.tkFixed = o.tile;
  // Without quantisation the emitted kernels compute in f32 whatever the dtypes (dse/cost_model.cpp).
  d.arithmetic = o.quant != "w4a8" ? "f32" : w.dtype == "i4" && a.dtype == "i8" ? "w4a8" : a.dtype;
  d.fromHbm = w.role == TensorRole::kWeight || w.role == TensorRole::kInput;
  // Integer arithmetic over a constant K past kReachTk whose tiles (multiples of its stream tile that
  // divide it) jump more than 4 times past the largest up to kReachTk (1,376 = 32 * 43: 16, 32, then 688):
  // growing K's tile would take 21 times the DSPs in one step, so the search grows the output tile over N
  // instead, K at that largest tile. Not where tk is pinned, nor in f32 (5 DSPs a MAC: no budget to start
  // a tile that wide, which the search cannot halve).
  if (d.arithmetic != "f32" && d.kConstant && out.shape.back().isConstant() && d.K > kReachTk &&
      !o.pinnedTk.count(op.name)) {
    int64_t step = tileFor(a.shape.back(), o.tile), reach = step, next = d.K;
    for (int64_t g = step; g <= d.K; g += growthStep(d.M, step))
      if (d.K % g == 0 && g <= kReachTk)
        reach = g;
      else if (d.K % g == 0) {
        next = g;
        break;
      }
    if (reach < kReachTk && next > 4 * reach && d.N % (2 * d.tn) == 0) d.unrollsN = true, d.tkFixed = reach;
  }
  // The same in f32 over a weight from HBM where K's first tile past the stream tile is more than 4 times
  // it (K = 80 = 16 * 5: 16, then 80, 5 times the DSPs at 5 a MAC, which no budget takes): the output tile
  // grows, K's tile stays the stream tile (a SwiGLU MLP of width 80 stopped at Tk 16 with two thirds of
  // the DSPs unused, slower than at width 96).
  if (o.f32OutputTiles && d.arithmetic == "f32" && !d.unrollsN && d.kConstant &&
      out.shape.back().isConstant() && d.fromHbm && !o.pinnedTk.count(op.name) &&
      !o.pinnedTn.count(op.name)) {
    int64_t step = tileFor(a.shape.back(), o.tile), next = d.K;
    for (int64_t g = step + growthStep(d.M, step); g <= d.K; g += growthStep(d.M, step))
      if (d.K % g == 0) {
        next = g;
        break;
      }
    if (next > 4 * step && d.N % (2 * d.tn) == 0) d.unrollsN = true, d.tkFixed = step;
  }
  if (auto pin = o.pinnedTn.find(op.name); pin != o.pinnedTn.end() && !d.unrollsN) d.tn = pin->second;
  d.weightBits = dtypeBits(w.dtype);
  return d;
}

}  // namespace

namespace {

// The most channels one stream of `weight` may take: its cap, else max_stripe, else 8.
int stripeLimit(const CompileOptions& options, const std::string& weight) {
  auto cap = options.stripeCap.find(weight);
  return cap != options.stripeCap.end() ? cap->second : options.maxStripe > 0 ? options.maxStripe : 8;
}

}  // namespace

int stripesFor(int64_t tokenBytes, const Platform& platform, const CompileOptions& options, const std::string& weight) {
  int s = static_cast<int>(std::ceil(static_cast<double>(tokenBytes) / channelBytesPerCycle(platform) - 1e-9));
  return std::max(1, std::min(s, stripeLimit(options, weight)));
}

bool beatAligned(int64_t stripeBytes) {
  const int64_t beat = kDmaTokenBits / 8;
  return stripeBytes > 0 && (stripeBytes % beat == 0 || beat % stripeBytes == 0);
}

int wholeStripes(int64_t tokenBytes, const Platform& platform, const CompileOptions& options, const std::string& weight,
                 int64_t unitBytes) {
  const int s = stripesFor(tokenBytes, platform, options, weight), limit = stripeLimit(options, weight);
  const double need = static_cast<double>(tokenBytes) / channelBytesPerCycle(platform);
  const int64_t units = unitBytes > 0 && tokenBytes % unitBytes == 0 ? tokenBytes / unitBytes : tokenBytes;
  auto whole = [&](int n) { return units % n == 0; };
  auto fits = [&](int n) { return whole(n) && beatAligned(tokenBytes / n); };
  for (int n = s; n <= limit && n <= 1.25 * need; ++n)
    if (fits(n)) return n;
  for (int n = s; n >= 1; --n)
    if (fits(n)) return n;
  int n = s;  // no split of the token is beat-aligned: whole elements at least
  while (n > 1 && !whole(n)) --n;
  return n;
}

std::map<std::string, int> stripeCaps(const TypedGraph& graph, const Platform& platform, const CompileOptions& options) {
  std::map<std::string, int> stage;  // tensors: the stage in which they are made (0: from HBM)
  std::map<int, int> matmulsIn;
  std::vector<std::pair<std::string, int>> weights;  // weight, stage of its matmul
  auto rows = [&](const std::string& t) { return rowsOf(graph.tensors.at(t), options.maxima); };
  for (const Op& op : graph.graph->ops) {
    int s = 0;
    for (const auto& in : op.inputs) s = std::max(s, stage.count(in) ? stage.at(in) : 0);
    bool matmul = isMatmul(op);
    bool barrier = false;
    if (op.op == "layernorm" || op.op == "rmsnorm" || op.op == "softmax") barrier = rows(op.output) == 1;
    if (matmul) {
      // A prefill matmul's row blocks flow on to the next matmul as they come; a right side made on chip
      // (attention's keys) is held whole before the first row can use it, unless the rows need only the
      // keys made with them (causal: heldKeysOf).
      barrier = streamsInput(graph, op) || writesPanels(graph, op) ||
                (graph.tensors.at(op.inputs[1]).role == TensorRole::kIntermediate &&
                 heldKeysOf(graph, op) == Kernel::HeldKeys::kNone);
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
  double iterations = 0, hbm = 0, bytes = 0;
};

// Whether the options pin `op` to be written head by head: its output tile to the head size (headDimOf)
// and its row block to every row, its rows from HBM (chooseSchedules pins attention's projections so,
// and sets MatmulSchedule::byHeads where they hold).
bool headsPinned(const TypedGraph& graph, const Op& op, const CompileOptions& options) {
  int64_t D = headDimOf(graph, op);
  auto tn = options.pinnedTn.find(op.name);
  auto block = options.pinnedRowBlock.find(op.name);
  if (D == 0 || tn == options.pinnedTn.end() || tn->second != D || block == options.pinnedRowBlock.end())
    return false;
  const TensorInfo& out = graph.tensors.at(op.output);
  return block->second == 0 || block->second >= out.shape[out.shape.size() - 2].eval();
}

bool headsOuter(const TypedGraph& graph, std::string tensor, const CompileOptions& options);  // below

// The share of a causal attention's key tiles its triangular nest runs (lower/triangles.h): row r takes the
// keys up to its block of `block`, so over nb = rows / block blocks, (nb + 1) / (2 nb) of them.
double triangleShare(double rows, int64_t block) {
  double nb = std::max(1.0, std::floor(rows / static_cast<double>(std::max<int64_t>(block, 1))));
  return (nb + 1) / (2 * nb);
}

// That share for a product over held keys with keys tiled by `keyTile`, rows outer (the triangles'
// condition); 1 for any other, or with causal_triangles=off.
double causalShare(const TypedGraph& graph, const Op& op, int64_t keyTile, const CompileOptions& options) {
  if (!options.causalTriangles || heldKeysOf(graph, op) == Kernel::HeldKeys::kNone ||
      headsOuter(graph, op.inputs[0], options))
    return 1;
  const TensorInfo& out = graph.tensors.at(op.output);
  return triangleShare(static_cast<double>(out.shape[out.shape.size() - 2].eval(options.maxima)), keyTile);
}

MatmulCost costOf(const TypedGraph& graph, const Op& op, int64_t t, int64_t rowBlock,
                  const Platform& platform, const CompileOptions& options) {
  MatmulDims d = dimsOf(graph, op, options);
  MatmulCost c;
  const int64_t tk = d.tkAt(t), tn = d.tnAt(t);
  const bool keysAlongN = heldKeysOf(graph, op) == Kernel::HeldKeys::kAlongN;
  const double share = causalShare(graph, op, keysAlongN ? tn : tk, options);
  const double steps =
      d.rows * static_cast<double>((d.N + tn - 1) / tn) * static_cast<double>((d.K + tk - 1) / tk) * share;
  // An f32 accumulation adds once per kFloatAddLatency cycles (cost_model.cpp: output stationary; an
  // input-streaming matmul with enough tiles does better, which this estimate does not credit).
  c.iterations = d.arithmetic == "f32" ? steps * static_cast<double>(kFloatAddLatency) : steps;
  if (!d.fromHbm) return c;
  bool panels = writesPanels(graph, op), stationary = panels && rowBlock == 0;
  int64_t reuse = !panels ? 1 : stationary ? d.M : rowBlock;
  int64_t tileBytes = (tk * tn * d.weightBits + 7) / 8;
  c.bytes = steps * static_cast<double>(tileBytes) / static_cast<double>(reuse);
  int stripes = stationary                                          ? 1
                : options.alignedStripeEstimate && !d.unrollsN ? wholeStripes(tileBytes, platform, options, op.inputs[1],
                                                                              std::max(1, d.weightBits / 8))
                                                               : stripesFor(tileBytes, platform, options, op.inputs[1]);
  c.hbm = c.bytes / (stripes * channelBytesPerCycle(platform));
  // Written by heads (panels of a head, every row: chooseSchedules' pins), the rows from HBM are read
  // again for each column panel, on a DMA of their own beside the weight's.
  if (headsPinned(graph, op, options)) {
    const TensorInfo& a = graph.tensors.at(op.inputs[0]);
    double rowsBytes =
        d.rows * static_cast<double>(d.K) * dtypeBits(a.dtype) / 8 * static_cast<double>(d.N / tn);
    c.bytes += rowsBytes;
    c.hbm = std::max(c.hbm, rowsBytes / channelBytesPerCycle(platform));
  }
  return c;
}

}  // namespace

double matmulCycles(const TypedGraph& graph, const Op& op, int64_t tk, int64_t rowBlock,
                    const Platform& platform, const CompileOptions& options) {
  MatmulCost c = costOf(graph, op, tk, rowBlock, platform, options);
  return std::max(c.iterations, c.hbm);
}

int64_t nextRowBlock(int64_t M, int64_t b) {
  if (M % (2 * b) == 0) return 2 * b;
  for (int64_t next = 2 * b + 1; next <= 4 * b && next <= M; ++next)
    if (M % next == 0) return next;
  return 0;
}

int64_t chooseRowBlock(const TypedGraph& graph, const Op& op, int64_t tk, const Platform& platform,
                       const CompileOptions& options) {
  if (!writesPanels(graph, op)) return 0;
  int64_t M = dimsOf(graph, op, options).M;
  for (int64_t b = 1; b > 0 && b < M; b = nextRowBlock(M, b)) {
    MatmulCost c = costOf(graph, op, tk, b, platform, options);
    if (c.hbm <= c.iterations) return b;
  }
  return 0;
}

namespace {

// The kernels that are not matmuls (norms, softmax, activations) at these tiles, from a lowering and the
// cost model: their DSPs come out of the budget before any matmul unrolls, and their iterations are each
// op's cycles in the layer estimate.
struct OtherKernels {
  double dsp = 0;
  KernelGraph graph;
  std::vector<size_t> kernels;  // of graph: the ones not matmuls
  /// Each op's cycles with symbols bound so: its kernel's iterations, or for an op of several kernels
  /// that a row passes in turn (a norm's or softmax's statistics, then its apply, side by side on
  /// successive rows), the most iterations of any of them and a row of each other's (all of them for
  /// a single row). Over a symbol (a decode step's softmax over ctx, a row per head), the sum: its rows
  /// come as the projections make the heads, and each kernel holds a row's results in its pipeline until
  /// later rows come (LayerEstimate's `held`), so the kernels take turns.
  /// The causal softmax's kernels and the elementwise ops between it and the products over held keys
  /// making its scores, in a triangular nest: the share of their key tiles they run (causalShare).
  std::map<std::string, double> share;
  std::map<std::string, double> cycles(const TypedGraph& g, const Bindings& at) const {
    struct Own {
      double most = 0, rows = 0,
             mostRow = 0;  // the largest kernel's iterations and its row's; the sum of rows
      double sum = 0;
      bool symbolic = false;
    };
    std::map<std::string, Own> own;
    for (size_t i : kernels) {
      const Kernel* k = &graph.kernels[i];
      double iterations = 0, row = 0;
      Own& o = own[g.graph->ops[static_cast<size_t>(k->opIndex)].name];
      for (const KernelPhase& phase : k->phases) {
        double n = static_cast<double>(k->ii);
        for (const Expr& t : phase.trip) {
          n *= static_cast<double>(t.eval(at));
          o.symbolic = o.symbolic || !t.isConstant();
        }
        if (auto sh = share.find(g.graph->ops[static_cast<size_t>(k->opIndex)].name); sh != share.end())
          n *= sh->second;
        iterations += n;
        if (!phase.trip.empty())
          row += static_cast<double>(k->ii) * static_cast<double>(phase.trip.back().eval(at));
      }
      if (iterations > o.most) o.most = iterations, o.mostRow = row;
      o.rows += row;
      o.sum += iterations;
    }
    std::map<std::string, double> out;
    for (const auto& [op, o] : own) out[op] = o.symbolic ? o.sum : o.most + o.rows - o.mostRow;
    return out;
  }
  /// Each op's pipeline latency: its kernels' in series (a row op's statistics, then its apply).
  std::map<std::string, double> latencies(const TypedGraph& g) const {
    std::map<std::string, double> out;
    for (size_t i : kernels)
      out[g.graph->ops[static_cast<size_t>(graph.kernels[i].opIndex)].name] += static_cast<double>(graph.kernels[i].latency);
    return out;
  }
};

OtherKernels otherKernels(const TypedGraph& graph, const CompileOptions& options,
                          const Schedules& schedules) {
  OtherKernels o;
  o.graph = lowerToKernels(graph, options, schedules);
  costKernels(o.graph, options);
  for (size_t i = 0; i < o.graph.kernels.size(); ++i) {
    const Kernel& k = o.graph.kernels[i];
    if (k.op == "matmul" || k.op == "linear") {  // its epilogue, which the reduction tile leaves as it is
      o.dsp += static_cast<double>(k.dsp) - std::ceil(static_cast<double>(k.lanes) * dspPerMac(options.quant == "w4a8" ? k.arithmetic : "f32"));
      continue;
    }
    o.dsp += static_cast<double>(k.dsp);
    o.kernels.push_back(i);
  }
  for (const Op& op : graph.graph->ops) {  // back from each causal softmax through elementwise ops
    if (op.op != "softmax" || !isCausal(op)) continue;
    std::vector<std::string> chain{op.name};
    const Op* from = producerOf(graph, op.inputs[0]);
    while (from && elementwiseArity(from->op) > 0) {
      chain.push_back(from->name);
      from = producerOf(graph, from->inputs[0]);
    }
    if (!from || !isMatmul(*from)) continue;
    double s = causalShare(graph, *from, options.tile, options);
    if (s < 1)
      for (const std::string& name : chain) o.share[name] = s;
  }
  return o;
}

// The heads H of a tensor made head by head: a transpose or reshape of the output of a projection whose
// row block is pinned to 0 (every row) and output tile to a head (chooseSchedules pins attention's
// projections so), whose output then streams by heads (headDimOf); 0 for any other.
int64_t headsOf(const TypedGraph& graph, std::string tensor, const CompileOptions& options) {
  for (;;) {
    const Op* made = producerOf(graph, tensor);
    if (!made) return 0;
    if (made->op == "transpose" || made->op == "reshape") {
      tensor = made->inputs[0];
      continue;
    }
    if (!headsPinned(graph, *made, options)) return 0;
    return graph.tensors.at(made->output).shape.back().eval() / headDimOf(graph, *made);
  }
}

// Whether `tensor` streams heads outer: made by ops whose first inputs lead back to a tensor made head by
// head (headsOf), as attention's scores, softmax and P.V are when its queries are.
bool headsOuter(const TypedGraph& graph, std::string tensor, const CompileOptions& options) {
  for (;;) {
    if (headsOf(graph, tensor, options) > 0) return true;
    const Op* made = producerOf(graph, tensor);
    if (!made || made->inputs.empty() ||
        !(made->op == "transpose" || made->op == "reshape" || made->op == "softmax" ||
          elementwiseArity(made->op) > 0 || isMatmul(*made)))
      return false;
    if (isMatmul(*made) && graph.tensors.at(made->inputs[1]).role != TensorRole::kIntermediate) return false;
    tensor = made->inputs[0];
  }
}

// The unroll search's estimate of a graph's cycles, symbols at their maxima. Ops run in graph order, a
// tensor known by the cycle its first token comes and the cycle its last does. An input an op needs
// whole before its first output (a one-row matmul's input, re-read per column tile unless the matmul
// streams it; a right side made on chip; a one-row norm's or softmax's row, for its second pass; every
// row of a weight-stationary prefill matmul) holds the op until it ends; other inputs stream through, and
// the op ends no earlier than they do. An op takes its kernels' iterations; a matmul also ends no
// earlier than its weight's HBM cycles at its stripes, counted from the layer's start (its DMA reads
// ahead from the first cycle), nor earlier than its start plus the part of them not read ahead (an
// approximation of the sizer's prefetch FIFOs: the compiler's on-chip budget, shared among the weights
// by their bytes). The whole graph
// takes no fewer cycles than every byte read from HBM over all the channels. Unlike a matmul's own cycles,
// this sees which matmuls run one after another (a decode layer's q, o and MLP) and which side by side (its
// gate and up), so the budget goes to the matmuls the layer waits for.
class LayerEstimate {
 public:
  /// A matmul's cost by its slot: its place among the graph's matmuls in name order (the order of the
  /// tile and row block vectors the search passes).
  using Cost = std::function<MatmulCost(size_t slot, int64_t tk, int64_t rowBlock)>;
  LayerEstimate(const TypedGraph& graph, const CompileOptions& options, const Platform& platform,
                const std::vector<const Op*>& matmuls, const std::map<std::string, double>& otherCycles,
                const std::map<std::string, double>& otherLatency, Cost cost)
      : cost_(std::move(cost)), matmuls_(matmuls.size()) {
    bandwidth_ = platform.hbm.channels * channelBytesPerCycle(platform);
    prefetchBytes_ = static_cast<double>(options.onchipBudgetBytes);
    std::map<std::string, size_t> slots;
    for (size_t m = 0; m < matmuls.size(); ++m) slots[matmuls[m]->name] = m;
    std::map<std::string, size_t> made;  // a tensor's producing step, of those before
    for (const Op& op : graph.graph->ops) {
      Step step;
      step.matmul = isMatmul(op);
      step.panels = writesPanels(graph, op);
      if (step.matmul) step.slot = slots.at(op.name);
      auto rows = [&](const std::string& t) { return rowsOf(graph.tensors.at(t), options.maxima); };
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        bool whole = false;
        if (step.matmul) {
          bool gemv = rows(op.output) == 1 && graph.tensors.at(op.inputs[1]).role == TensorRole::kWeight;
          whole = i == 0 ? gemv && !streamsInput(graph, op)
                         : i == 1 && graph.tensors.at(op.inputs[i]).role == TensorRole::kIntermediate &&
                               heldKeysOf(graph, op) == Kernel::HeldKeys::kNone;
        } else if (op.op == "layernorm" || op.op == "rmsnorm" || op.op == "softmax") {
          whole = i == 0 && rows(op.output) == 1;
        }
        // Rows that come heads outer (attention's output, when its projections are written by heads) are
        // whole before a matmul over rows can start: the converter in front of it, after the reshape
        // merging the heads, holds them all.
        const Op* input = producerOf(graph, op.inputs[i]);
        if (step.matmul && i == 0 && input && input->op == "reshape" &&
            headsOuter(graph, op.inputs[0], options))
          whole = true;
        // A right side made head by head (attention's keys and values from projections written by heads:
        // headDimOf) is held a head at a time: the op starts once the first head is in.
        double part = 0;
        if (whole && i == 1)
          if (int64_t heads = headsOf(graph, op.inputs[1], options); heads > 0)
            whole = false, part = 1.0 / static_cast<double>(heads);
        auto from = made.find(op.inputs[i]);
        if (from != made.end()) {
          step.inputs.push_back({from->second, whole, i == 0, part});  // (else from HBM)
          // Rows a matmul made in column panels of its row blocks (through elementwise ops walking them):
          // complete a block at a time, all its panels, so a matmul over rows reading them starts no
          // earlier than the producer's first block is in. (Where it reads in larger blocks it waits longer,
          // which this leaves out; of a gated product, gate's blocks are the ones counted.)
          if (step.panels && i == 0) {
            size_t back = from->second;
            while (!steps_[back].matmul && steps_[back].through >= 0)
              back = static_cast<size_t>(steps_[back].through);
            if (steps_[back].matmul && steps_[back].panels) {
              step.inputs.back().blocksOf = static_cast<int>(steps_[back].slot);
              step.inputs.back().rows = static_cast<double>(rows(op.output));
            }
          }
        }
      }
      if (elementwiseArity(op.op) > 0 &&
          graph.tensors.at(op.inputs[0]).shape == graph.tensors.at(op.output).shape)
        if (auto from = made.find(op.inputs[0]); from != made.end())
          step.through = static_cast<int>(from->second);
      // The matmuls whose column panels this step's rows come in: its own, or those of every input of its
      // shape of an elementwise op (a gated MLP's product walks gate's panels and up's together).
      if (step.matmul && step.panels) {
        step.panelsOf.push_back(step.slot);
      } else if (elementwiseArity(op.op) > 0) {
        for (const std::string& input : op.inputs)
          if (auto from = made.find(input);
              from != made.end() && graph.tensors.at(input).shape == graph.tensors.at(op.output).shape)
            for (size_t slot : steps_[from->second].panelsOf) step.panelsOf.push_back(slot);
      }
      if (auto it = otherCycles.find(op.name); !step.matmul && it != otherCycles.end()) {
        step.own = it->second;
        // A stall pipeline holds its last `latency` cycles of results until later inputs push them out:
        // an op of fewer iterations than its latency (a decode step's softmax over 16 heads of 3 tokens)
        // gives its first output only when that part of its input has come.
        if (step.own > 0) step.held = std::min(1.0, otherLatency.at(op.name) / step.own);
      }
      made[op.output] = steps_.size();
      steps_.push_back(std::move(step));
    }
  }

  /// The estimate at these reduction tiles and row blocks, by slot.
  double cycles(const std::vector<int64_t>& tiles, const std::vector<int64_t>& blocks) {
    if (tiles.size() != matmuls_ || blocks.size() != matmuls_)
      throw std::logic_error("LayerEstimate: a tile and a row block for each matmul expected");
    costs_.resize(matmuls_);
    spans_.resize(steps_.size());
    double end = 0, totalBytes = 0;
    for (size_t m = 0; m < matmuls_; ++m) totalBytes += (costs_[m] = cost_(m, tiles[m], blocks[m])).bytes;
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& step = steps_[i];
      double own = step.own, weight = 0, ahead = 0;
      if (step.matmul) {
        const MatmulCost& c = costs_[step.slot];
        own = c.iterations;
        weight = c.hbm;
        // The part of its weight read ahead into on-chip FIFOs before the matmul starts: the on-chip
        // budget shared among the weights by their bytes.
        if (c.bytes > 0) ahead = c.hbm * std::min(1.0, prefetchBytes_ / totalBytes);
      }
      Span s;
      double streamedLast = 0;
      for (const Input& input : step.inputs) {
        bool whole = input.whole || (step.panels && input.first && blocks[step.slot] == 0);
        const Span& in = spans_[input.step];
        double held = input.part > 0 ? input.part : step.held;
        if (input.blocksOf >= 0) {
          int64_t block = blocks[static_cast<size_t>(input.blocksOf)];  // 0: every row
          held = std::max(held, block > 0 ? static_cast<double>(block) / input.rows : 1.0);
        }
        s.first = std::max(s.first, whole ? in.last : in.first + held * (in.last - in.first));
        if (!whole) streamedLast = std::max(streamedLast, in.last);
      }
      s.last = std::max({s.first + own, s.first + weight - ahead, streamedLast, weight});
      end = std::max(end, s.last);
      spans_[i] = s;
    }
    return std::max(end, totalBytes / bandwidth_);
  }

  /// The estimate's HBM bound at these tiles and row blocks: every weight byte over all the channels at once.
  double channelCycles(const std::vector<int64_t>& tiles, const std::vector<int64_t>& blocks) const {
    double totalBytes = 0;
    for (size_t m = 0; m < matmuls_; ++m) totalBytes += cost_(m, tiles[m], blocks[m]).bytes;
    return totalBytes / bandwidth_;
  }

  /// The matmuls whose row blocks make another's rows (its A, through elementwise ops walking the panels):
  /// (producer slot, consumer slot).
  std::vector<std::pair<size_t, size_t>> chainedBlocks() const {
    std::vector<std::pair<size_t, size_t>> out;
    for (const Step& step : steps_)
      if (step.matmul && step.panels)
        for (const Input& input : step.inputs)
          if (input.first)
            for (size_t producer : steps_[input.step].panelsOf) out.emplace_back(producer, step.slot);
    return out;
  }

 private:
  struct Span {
    double first = 0, last = 0;
  };
  struct Input {
    size_t step;  ///< the step making it
    bool whole;
    bool first = false;  ///< the op's first input (A of a matmul)
    double part = 0;     ///< held a part at a time (a head of H: 1 / H), else 0
    int blocksOf = -1;   ///< rows made in the row blocks of this matmul slot (a matmul's A), else -1
    double rows = 0;     ///< (then) the rows
  };
  struct Step {
    bool matmul = false,
         panels = false;        // panels: writesPanels (every row needed whole when weight-stationary)
    size_t slot = 0;            // a matmul's
    std::vector<Input> inputs;  // those made by earlier steps
    double own = 0, held = 0;   // an op not a matmul: its iterations, and the share of them it holds
    int through = -1;           // elementwise over its first input's shape, made by this step: walks its rows
    std::vector<size_t> panelsOf;  // the matmul slots whose column panels its rows come in
  };
  Cost cost_;
  double bandwidth_ = 1, prefetchBytes_ = 0;
  size_t matmuls_ = 0;
  std::vector<Step> steps_;
  std::vector<MatmulCost> costs_;
  std::vector<Span> spans_;
};

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

// The reduction tiles of the matmuls (the search's tile: MatmulDims::tkAt, tnAt) and, in `blocks`, their row
// blocks; `estimate` is the layer estimate there, `over` the DSPs over the budget. `start`: the row block the
// search starts from (below), -1 for every one; it returns the one kept.
std::map<std::string, int64_t> chooseUnroll(const TypedGraph& graph, const Platform& platform,
                                            const CompileOptions& options, double* estimate, double* over,
                                            std::map<std::string, int64_t>* blocks, int64_t* start) {
  // The search works on the matmuls by slot, their place in name order (LayerEstimate's): a design point
  // is a tile and a row block per slot.
  using Tiles = std::vector<int64_t>;
  std::map<std::string, std::tuple<const Op*, MatmulDims, int64_t>> byName;  // op, dims, first tile
  for (const Op& op : graph.graph->ops) {
    if (!isMatmul(op)) continue;
    MatmulDims d = dimsOf(graph, op, options);
    // A symbolic K: padded tiles of the stream tile, the search's tile then Tn (unrollsN).
    int64_t t = d.unrollsN ? d.tn : d.kConstant ? tileFor(Expr(d.K), options.tile) : options.tile;
    if (auto pin = options.pinnedTn.find(op.name); pin != options.pinnedTn.end()) {
      int64_t step = tileFor(graph.tensors.at(op.output).shape.back(), options.tile);
      if (!graph.tensors.at(op.output).shape.back().isConstant())
        throw pinError(options, op, "tn", pin->second, "N is symbolic: its tile is the stream tile");
      if (pin->second % step != 0 || d.N % pin->second != 0)
        throw pinError(options, op, "tn", pin->second,
                       "the output tile must be a multiple of " + std::to_string(step) + " that divides N (" +
                           std::to_string(d.N) + ")");
      if (d.unrollsN) t = pin->second;
    }
    if (auto pin = options.pinnedTk.find(op.name); pin != options.pinnedTk.end()) {
      if (d.kConstant ? d.K % pin->second != 0 : pin->second != options.tile)
        throw pinError(options, op, "tk", pin->second,
                       "the reduction tile must divide K (" +
                           (d.kConstant ? std::to_string(d.K)
                                        : "symbolic: the stream tile " + std::to_string(options.tile)) +
                           ")");
      if (!d.unrollsN) t = pin->second;  // (where the search's tile is Tn, tk.OP only checks)
    }
    byName[op.name] = {&op, d, t};
  }
  const size_t n = byName.size();
  std::vector<std::string> names;
  std::vector<const Op*> ops;
  std::vector<MatmulDims> dims;
  Tiles tk;
  for (const auto& [name, first] : byName) {
    names.push_back(name);
    ops.push_back(std::get<0>(first));
    dims.push_back(std::get<1>(first));
    tk.push_back(std::get<2>(first));
  }
  auto dspOf = [&](size_t i, int64_t t) {
    return static_cast<double>(dims[i].tkAt(t) * dims[i].tnAt(t)) * dspPerMac(dims[i].arithmetic);
  };
  // A tile the options fix: tk.OP, or tn.OP where the search's tile is Tn.
  auto pinned = [&](size_t i) {
    return (dims[i].unrollsN ? options.pinnedTn : options.pinnedTk).count(names[i]) > 0;
  };
  std::vector<std::map<int64_t, std::pair<MatmulCost, int64_t>>> memo(n);  // by tile: cost, row block
  auto costAt = [&](size_t i, int64_t t) -> const std::pair<MatmulCost, int64_t>& {
    auto it = memo[i].find(t);
    if (it != memo[i].end()) return it->second;
    int64_t block = rowBlockOf(graph, *ops[i], t, platform, options);
    return memo[i]
        .emplace(t, std::make_pair(costOf(graph, *ops[i], t, block, platform, options), block))
        .first->second;
  };
  auto cycles = [&](size_t i, int64_t t) {
    const MatmulCost& c = costAt(i, t).first;
    return std::max(c.iterations, c.hbm);
  };
  Schedules atStreamTile;
  for (size_t i = 0; i < n; ++i) atStreamTile[names[i]].tk = tk[i];
  OtherKernels other = otherKernels(graph, options, atStreamTile);
  double budget = options.unrollBudget * static_cast<double>(platform.kernelResources().dsp) - other.dsp;
  auto dspsOf = [&](const Tiles& tiles) {
    double dsp = 0;
    for (size_t i = 0; i < n; ++i) dsp += dspOf(i, tiles[i]);
    return dsp;
  };
  // Over the budget at the stream tile: halve the reduction tile that slows its matmul least (a constant
  // K only; a padded symbolic K keeps the tile its stream is padded to).
  while (dspsOf(tk) > budget) {
    size_t best = n;
    double bestCycles = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!dims[i].kConstant || dims[i].unrollsN || tk[i] % 2 != 0 || pinned(i)) continue;
      double c = cycles(i, tk[i] / 2);
      if (best == n || c < bestCycles) best = i, bestCycles = c;
    }
    if (best == n) break;
    tk[best] /= 2;
  }
  // Then unroll where the layer waits: of every doubling of one to four matmuls' tiles that fits
  // the budget and shortens the layer estimate, the one that saves the most cycles per DSP (two or three
  // at once where matmuls side by side, like gate and up, tie). When none does, a doubling that does not
  // fit, paid for by halving others, where that shortens the layer; budget that shortens nothing is left.
  // The estimate is the mean over the symbols' samples (sizing::symbolSamples: a decode layer at ctx 1,
  // 16, 17, 128 and its maximum), so a layer is unrolled for the contexts it runs at, not only the longest.
  std::vector<CompileOptions> at;
  for (const std::string& symbol : graph.symbols()) {
    auto m = options.maxima.find(symbol);
    std::vector<int64_t> samples =
        sizing::symbolSamples(m != options.maxima.end() ? m->second : 1, options.tile);
    if (at.size() < samples.size()) at.resize(samples.size(), options);
    for (size_t j = 0; j < at.size(); ++j) at[j].maxima[symbol] = samples[std::min(j, samples.size() - 1)];
  }
  if (at.empty()) at.push_back(options);
  std::vector<LayerEstimate> estimates;
  const std::map<std::string, double> latencies = other.latencies(graph);
  // A sample's costs by slot: the few (tile, row block) points the search prices, scanned in order.
  struct PricedAt {
    int64_t t, block;
    MatmulCost cost;
  };
  std::vector<std::vector<std::vector<PricedAt>>> sampleMemo(at.size(),
                                                             std::vector<std::vector<PricedAt>>(n));
  for (size_t j = 0; j < at.size(); ++j)
    estimates.emplace_back(
        graph, at[j], platform, ops, other.cycles(graph, at[j].maxima), latencies,
        [&, j](size_t slot, int64_t t, int64_t block) {
          std::vector<PricedAt>& priced = sampleMemo[j][slot];
          for (const PricedAt& p : priced)
            if (p.t == t && p.block == block) return p.cost;
          priced.push_back({t, block, costOf(graph, *ops[slot], t, block, platform, at[j])});
          return priced.back().cost;
        });
  // Memoised by the design point (each matmul's tile and block): the rounds and starts below price the
  // same points again.
  struct PointHash {
    size_t operator()(const std::vector<int64_t>& key) const {
      uint64_t h = 1469598103934665603ULL;  // FNV-1a over the values
      for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ULL;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::vector<int64_t>, double, PointHash> layerMemo;
  std::vector<int64_t> key;
  auto layerCyclesAt = [&](const Tiles& tiles, const Tiles& rows) {
    key.clear();
    for (size_t i = 0; i < n; ++i) {
      key.push_back(tiles[i]);
      key.push_back(rows[i]);
    }
    if (auto it = layerMemo.find(key); it != layerMemo.end()) return it->second;
    double sum = 0;
    for (LayerEstimate& e : estimates) sum += e.cycles(tiles, rows);
    return layerMemo[key] = sum / static_cast<double>(estimates.size());
  };
  // Row blocks a start sets or the layer estimate already doubled (finishBlocks, below): a later round prices
  // its tiles at them, not at each matmul's own smallest block. 0: none.
  Tiles floors(n, 0);
  auto blocksAt = [&](const Tiles& tiles) {
    Tiles rows(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t own = costAt(i, tiles[i]).second;
      rows[i] = own > 0 && floors[i] > 0 ? std::max(own, floors[i]) : own;
    }
    return rows;
  };
  auto layerCycles = [&](const Tiles& tiles) { return layerCyclesAt(tiles, blocksAt(tiles)); };
  // (Row blocks: finishBlocks, below.)
  const int64_t blockShare = options.onchipBudgetBytes / std::max<int64_t>(1, static_cast<int64_t>(n));
  auto blockBytes = [&](size_t i, int64_t b) {
    return 2 * b * (dims[i].K + dims[i].N) * (dims[i].arithmetic == "f32" ? 4 : 1);
  };
  // Matmuls whose panels make the next one's rows (an MLP's up and down projections, through the activation;
  // a gated MLP's gate and up both, through their product) share one row block, as the itensor rule wants
  // their stream orders chosen together: the converter between them holds the larger of two blocks, which
  // the smaller side never needs, and a chain in equal blocks re-reads all its weights equally often. A
  // 64-row GPT-2-small layer's MLP ran fc1 in blocks of 2 and fc2 in blocks of 8 (the estimate the same as
  // at 4 and 4): 64,952 cycles sized, 21.3% of its intermediate results kept whole; at 4 and 4, 61,308 and
  // 17.4%. `chainOf[i]`: the slots of i's chain, i alone where it has none.
  std::vector<std::vector<size_t>> chainOf(n);
  {
    std::vector<size_t> root(n);
    std::iota(root.begin(), root.end(), size_t{0});
    std::function<size_t(size_t)> find = [&](size_t i) { return root[i] == i ? i : root[i] = find(root[i]); };
    for (auto [producer, consumer] : estimates.front().chainedBlocks()) root[find(producer)] = find(consumer);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (find(i) == find(j)) chainOf[i].push_back(j);
  }
  auto chained = [&](size_t i) {  // in a chain whose blocks the search sets (none pinned, the same rows)
    if (chainOf[i].size() < 2) return false;
    for (size_t j : chainOf[i])
      if (options.pinnedRowBlock.count(names[j]) || dims[j].M != dims[i].M) return false;
    return true;
  };
  // The estimate's HBM bound, as the estimate is: the mean over the symbols' samples.
  auto channelCycles = [&](const Tiles& tiles, const Tiles& rows) {
    double sum = 0;
    for (const LayerEstimate& e : estimates) sum += e.channelCycles(tiles, rows);
    return sum / static_cast<double>(estimates.size());
  };
  // At the tiles found: each matmul's row block streams its weight no slower than its iterations, but the
  // layer's weights share the channels, and the layer takes no fewer cycles than all their bytes over all
  // of them (a 128-row attention's four projections in 2-row blocks: 136 MB, more cycles than any
  // projection's iterations). Of doubling one chosen row block (a chain's together, from the largest of its
  // blocks), the one that shortens the layer estimate most, while one does (pinned blocks and a row block
  // policy stay). The estimate does not price the block of A and of output a matmul keeps on chip (each
  // double-buffered), so a doubled block must stay within the matmul's share of the on-chip budget. Where
  // the estimate sits on its HBM bound (within kOnTheChannels), it prices the channels as one pool, which
  // they are not (each weight streams over its own stripes, and their traffic meets unevenly): there a
  // chain's doubling, which cuts the traffic of all its matmuls at once, is taken even where the estimate
  // rises by up to kChainSlack a doubling (its consumer's later start). A 128-row gated MLP layer
  // (`gqa_prefill.yaml`) in one block without it kept gate, up and down in 2-row blocks, its estimate 0.3%
  // under 4-row ones: 60,178 cycles sized, against 50,215. A chain whose blocks cannot be made equal (a
  // member weight-stationary, or the largest block over a member's share) doubles member by member.
  constexpr double kOnTheChannels = 0.01, kChainSlack = 0.02;
  auto finishBlocks = [&](const Tiles& tiles) {
    Tiles rows = blocksAt(tiles);
    std::vector<char> together(n, 0);  // in a chain of equal blocks, doubled as one
    for (size_t i = 0; i < n && options.rowBlockPolicy < 0; ++i) {
      if (!chained(i) || chainOf[i].front() != i) continue;
      int64_t b = 0;
      for (size_t j : chainOf[i]) b = std::max(b, rows[j]);
      bool blocked = true;
      for (size_t j : chainOf[i])
        blocked = blocked && rows[j] > 0 && !(blockShare > 0 && blockBytes(j, b) > blockShare);
      if (!blocked) continue;
      for (size_t j : chainOf[i]) rows[j] = b, together[j] = 1;
    }
    double now = layerCyclesAt(tiles, rows);
    while (options.rowBlockPolicy < 0) {
      size_t pick = n;
      double pickCycles = now * (1 - 1e-6);
      Tiles pickRows;
      const bool onTheChannels = channelCycles(tiles, rows) >= (1 - kOnTheChannels) * now;
      for (size_t i = 0; i < n; ++i) {
        int64_t M = dims[i].M, b = rows[i];
        int64_t next = b > 0 ? nextRowBlock(M, b) : 0;
        if (next <= 0 || next >= M || options.pinnedRowBlock.count(names[i])) continue;
        if (together[i] && chainOf[i].front() != i) continue;  // the chain's first slot doubles it
        Tiles trial = rows;
        bool fits = true;
        for (size_t j : together[i] ? chainOf[i] : std::vector<size_t>{i}) {
          fits = fits && !(blockShare > 0 && blockBytes(j, next) > blockShare);
          trial[j] = next;
        }
        if (!fits) continue;
        double c = layerCyclesAt(tiles, trial) * (together[i] && onTheChannels ? 1 - kChainSlack : 1);
        if (c < pickCycles) pick = i, pickCycles = c, pickRows = trial;
      }
      if (pick == n) break;
      rows = pickRows;
      now = layerCyclesAt(tiles, rows);
    }
    *estimate = now;
    *over = std::max(0.0, dspsOf(tiles) - budget);
    return rows;
  };
  // The next reduction tile of a matmul: the smallest multiple of its stream tile that divides K, above t
  // (K = 896 grows 128 -> 224 -> 448, not only by doubling; K = 1,720 = 8 * 5 * 43, whose stream tile is 8,
  // grows 8 -> 40 -> 344 where no tile between divides it); 0 where none is. A matmul of more than one
  // row grows by half its stream tile where that divides K (still whole int4 bytes): K = 4,864 = 256 * 19
  // takes 128 -> 152 -> 256, and a head of 80 16 -> 40 -> 80. The layer's matmuls then meet at one pace
  // where doubling overshoots: a 128-row Qwen2.5-0.5B layer's down projection at 152 and gate and up at 224,
  // 332,729 -> 274,423 cycles. Not a one-row matmul (a GEMV): one that streams its input (streamsInput)
  // takes it in its producer's tokens, which a tile that is not a multiple of them would hold whole (Gemma
  // 3 1B's decode MLP at 72: 12,258 -> 18,661 cycles a layer).
  // (A reduction tile is a multiple of `step`, K's stream tile, or of half of it, or below it; a symbolic
  // K keeps its tile, and a matmul that unrollsN grows its output tile the same way over N: P.V's 16 -> 32
  // -> 64.)
  auto stepOf = [&](const MatmulDims& d) {
    return d.unrollsN ? d.tn : d.kConstant ? tileFor(Expr(d.K), options.tile) : 0;
  };
  auto extentOf = [](const MatmulDims& d) { return d.unrollsN ? d.N : d.K; };
  auto grown = [&](size_t i, int64_t t) -> int64_t {
    const MatmulDims& d = dims[i];
    int64_t step = stepOf(d), extent = extentOf(d);
    if (step == 0) return 0;
    int64_t fine = d.unrollsN ? step : growthStep(d.M, step);
    for (int64_t g = std::max(step, (t / fine + 1) * fine); g <= extent && g <= kMaxTk; g += fine)
      if (extent % g == 0) return g;
    return 0;
  };
  // The reduction tile below t that an exchange pays with: half of t where that divides K and is a multiple
  // of the stream tile (or t is the stream tile or below), else the largest multiple of the stream tile
  // below t that divides K (304 = 16 * 19 of K = 4,864 goes to 256, not 152; 40 of K = 1,720 to 8); 0
  // where none is.
  auto shrunk = [&](size_t i, int64_t t) -> int64_t {
    const MatmulDims& d = dims[i];
    int64_t step = stepOf(d), extent = extentOf(d);
    if (step == 0 || (d.unrollsN && t <= step)) return 0;
    if (t % 2 == 0 && extent % (t / 2) == 0 && (t <= step || (t / 2) % step == 0)) return t / 2;
    for (int64_t g = (t - 1) / step * step; g >= step; g -= step)
      if (extent % g == 0) return g;
    return 0;
  };
  auto canDouble = [&](size_t i) {
    int64_t t = tk[i], g = grown(i, t);
    return g > 0 && !pinned(i) && cycles(i, g) < cycles(i, t);
  };
  // Four at once in a decode layer (kv_append, <= 10 matmuls): its q, k and v run side by side, and
  // attention needs all three (the token's own key and value), while o streams beside them. The exchanges
  // below, each group repaired by halving others, keep to three, but for the slowest four or more together
  // (slowest).
  bool appends = std::any_of(graph.graph->ops.begin(), graph.graph->ops.end(),
                             [](const Op& op) { return op.op == "kv_append"; });
  size_t maxGroup = appends && n <= 10 ? 4 : n <= 16 ? 3 : n <= 64 ? 2 : 1;
  using Group = std::vector<size_t>;
  // Every group of at most `most` growable matmuls, in a fixed order.
  auto groups = [&](const Group& growable, size_t most) {
    std::vector<Group> out;
    Group group;
    std::function<void(size_t)> visit = [&](size_t from) {
      if (!group.empty()) out.push_back(group);
      if (group.size() == most) return;
      for (size_t i = from; i < growable.size(); ++i) {
        group.push_back(growable[i]);
        visit(i + 1);
        group.pop_back();
      }
    };
    visit(0);
    return out;
  };
  auto doubled = [&](Tiles tiles, const Group& group) {
    for (size_t i : group) tiles[i] = grown(i, tiles[i]);
    return tiles;
  };
  // Groups larger than `most`: the slowest k growable matmuls, for each k above it. More than three
  // matmuls may have to grow together: a parallel block's q, k, v and MLP up projection all read the same
  // norm's rows and run side by side, and at one pace no group of three shortens the layer (a 96-row
  // block of 12 heads of 64, FFN 3,072, W4A8, stopped at 221,184 iterations each on 3,046 of its 6,126
  // DSPs: 229,039 cycles, against 93,700 for the serial block's tiles).
  auto slowest = [&](const Group& growable, size_t most) {
    Group bySlow = growable;
    std::stable_sort(bySlow.begin(), bySlow.end(),
                     [&](size_t a, size_t b) { return cycles(a, tk[a]) > cycles(b, tk[b]); });
    std::vector<Group> out;
    for (size_t k = most + 1; k <= bySlow.size(); ++k)
      out.emplace_back(bySlow.begin(), bySlow.begin() + static_cast<long>(k));
    return out;
  };
  auto grow = [&] {
    for (int exchanges = 0;;) {
      Group growable;
      for (size_t i = 0; i < n; ++i)
        if (canDouble(i)) growable.push_back(i);
      double now = layerCycles(tk), used = dspsOf(tk);
      Group bestGroup;
      double bestRate = 0;
      auto tryGroups = [&](const std::vector<Group>& candidates) {
        for (const Group& group : candidates) {
          Tiles trial = doubled(tk, group);
          double dsp = dspsOf(trial);
          if (dsp > budget) continue;
          double rate = (now - layerCycles(trial)) / (dsp - used);
          if (rate > bestRate * (1 + 1e-9)) bestRate = rate, bestGroup = group;
        }
      };
      tryGroups(groups(growable, maxGroup));
      if (bestGroup.empty()) tryGroups(slowest(growable, maxGroup));
      if (!bestGroup.empty()) {
        tk = doubled(tk, bestGroup);
        continue;
      }
      // No doubling that fits helps: try one that does not fit, paid for by halving other matmuls' tiles
      // (each time the one that lengthens the layer least per DSP freed), kept when the layer is shorter.
      if (exchanges++ == 16) return;
      Tiles best;
      double bestCycles = now * (1 - 1e-6);
      // (Groups of one beyond 16 matmuls: each trial repairs by as many estimates as there are matmuls.)
      std::vector<Group> trials;
      if (n <= 16) {
        trials = groups(growable, std::min<size_t>(maxGroup, 3));
        for (Group& group : slowest(growable, std::min<size_t>(maxGroup, 3)))
          trials.push_back(std::move(group));
      } else {
        for (size_t i : growable) trials.push_back({i});
      }
      for (const Group& group : trials) {
        Tiles trial = doubled(tk, group);
        while (dspsOf(trial) > budget) {
          size_t cut = n;
          double cutRate = 0, trialCycles = layerCycles(trial);
          int64_t cutTo = 0;
          for (size_t i = 0; i < n; ++i) {
            int64_t to = shrunk(i, trial[i]);
            if (to == 0 || pinned(i) || std::find(group.begin(), group.end(), i) != group.end()) continue;
            Tiles halved = trial;
            halved[i] = to;
            double rate = (layerCycles(halved) - trialCycles) / (dspOf(i, trial[i]) - dspOf(i, to));
            if (cut == n || rate < cutRate) cut = i, cutRate = rate, cutTo = to;
          }
          if (cut == n) break;
          trial[cut] = cutTo;
        }
        if (dspsOf(trial) > budget) continue;
        double c = layerCycles(trial);
        if (c < bestCycles) best = trial, bestCycles = c;
      }
      if (best.empty()) return;
      tk = best;
    }
  };
  // Grow the tiles with each matmul's own row block, then double the blocks the layer's shared channels
  // want; where that doubled any, the tiles that had stopped at the layer's HBM bytes may grow again (a
  // 96-row GPT-2 MLP: up's 1-row blocks read 4.7 MB, more cycles than its iterations at Tk 128; at 4-row
  // blocks Tk 256 pays, 2.1x fewer cycles). The rounds end where no block changes, or after nine.
  // Each start is a search of its own: from each matmul's own block, then from blocks of 2, 4 and 8 rows
  // wherever a matmul's own is smaller (matmuls side by side whose weights stream at the same pace, each
  // with tiles grown for its own block, leave no one doubling that shortens the layer: a 128-row layer of
  // 8 heads and 2 KV heads, W4A8, kept q, k, v and o in 1-row blocks, 82,221 cycles, against 52,956 in
  // 4-row blocks). The start whose design the layer estimate finds shortest wins, the first of equals.
  const Tiles initial = tk;
  Tiles bestTiles, bestRows;
  bool found = false;
  double bestEstimate = 0, bestOver = 0;
  int64_t bestStart = 0;
  // A caller that names the start (the one kept at the lane II's first search) runs that one alone, or the
  // first where it raises no block; its rounds run again at the caller's tiles, so the blocks may differ.
  std::vector<int64_t> starts =
      *start >= 0 ? std::vector<int64_t>{*start, 0} : std::vector<int64_t>{0, 2, 4, 8};
  for (int64_t from : starts) {
    if (*start >= 0 && found) break;
    if (from > 0 && options.rowBlockPolicy >= 0) continue;
    tk = initial;
    std::fill(floors.begin(), floors.end(), 0);
    bool raises = false;
    for (size_t i = 0; i < n; ++i) {
      int64_t M = dims[i].M, own = costAt(i, tk[i]).second;
      if (from == 0 || own <= 0 || own >= from || from >= M || M % from != 0 ||
          options.pinnedRowBlock.count(names[i]) || (blockShare > 0 && blockBytes(i, from) > blockShare))
        continue;
      floors[i] = from;
      raises = true;
    }
    if (from > 0 && !raises) continue;
    double startEstimate = 0, startOver = 0;
    for (int round = 0;; ++round) {
      grow();
      Tiles rows = finishBlocks(tk);
      startEstimate = *estimate, startOver = *over;
      if (round == 8 || rows == blocksAt(tk)) {
        if (!found || startEstimate < bestEstimate * (1 - 1e-9)) {
          bestTiles = tk, bestEstimate = startEstimate, bestRows = rows;
          bestOver = startOver, bestStart = from, found = true;
        }
        break;
      }
      floors = rows;
    }
  }
  *estimate = bestEstimate;
  *over = bestOver;
  *start = bestStart;
  std::map<std::string, int64_t> out;
  blocks->clear();
  for (size_t i = 0; i < bestTiles.size(); ++i) {
    out[names[i]] = bestTiles[i];
    (*blocks)[names[i]] = bestRows[i];
  }
  return out;
}

}  // namespace

std::string missingOp(const std::string& key, const Graph& graph) {
  size_t dot = key.find('.');
  if (dot == std::string::npos) return "";
  std::string kind = key.substr(0, dot), name = key.substr(dot + 1);
  if (kind != "tk" && kind != "tn" && kind != "row_block" && kind != "lane_ii") return "";
  bool matmulOnly = kind != "lane_ii";
  for (const Op& op : graph.ops)
    if (op.name == name && (!matmulOnly || op.op == "matmul" || op.op == "linear")) return "";
  return std::string("the graph has no ") + (matmulOnly ? "matmul" : "op") + " named '" + name + "'";
}

namespace {

Schedules searchSchedules(const TypedGraph& graph, const Platform& platform, CompileOptions& options,
                          double* overOut, double* estimateOut) {
  // Pins of ops the graph does not have: said at their line in a schedule file, else as the --set.
  std::vector<std::string> keys;
  for (const auto& [name, value] : options.pinnedTk) keys.push_back("tk." + name);
  for (const auto& [name, value] : options.pinnedTn) keys.push_back("tn." + name);
  for (const auto& [name, value] : options.pinnedRowBlock) keys.push_back("row_block." + name);
  for (const auto& [name, value] : options.laneIiOf) keys.push_back("lane_ii." + name);
  for (const std::string& key : keys) {
    std::string why = missingOp(key, *graph.graph);
    if (why.empty()) continue;
    auto origin = options.pinOrigin.find(key);
    if (origin != options.pinOrigin.end()) throw UserError(formatError(origin->second, why));
    throw UserError("stc compile: error: --set " + key + ": " + why);
  }
  // The lane II (lane_ii) when the options leave it to the search: of 1, 2, 4 and 8, the one whose unrolling
  // gives the shortest layer estimate (the first of equals) within the DSP budget (or, where pinned tiles
  // leave none within it, the least over). A longer II frees the DSPs of the f32 lanes
  // for the matmuls and lengthens the kernels that compute in them.
  auto unrollsN = [&](const std::string& name) {
    for (const Op& op : graph.graph->ops)
      if (op.name == name) return dimsOf(graph, op, options).unrollsN;
    return false;
  };
  std::map<std::string, int64_t> tiles;  // the search's tile of each matmul (MatmulDims::tkAt, tnAt)
  std::map<std::string, int64_t> blocks;  // and its row block
  double best = 0, bestOver = 0;
  int64_t start = 0;  // the row block the kept search started from: the lane IIs' trials below start there
  bool chosen = false, search = options.laneIi == 0;
  for (int64_t ii : options.laneIi > 0 ? std::vector<int64_t>{options.laneIi} : std::vector<int64_t>{1, 2, 4, 8}) {
    CompileOptions trial = options;
    trial.laneIi = ii;
    double estimate = 0, over = 0;
    std::map<std::string, int64_t> rows;
    int64_t from = -1;
    std::map<std::string, int64_t> tk = chooseUnroll(graph, platform, trial, &estimate, &over, &rows, &from);
    if (chosen && (over > bestOver || (over == bestOver && !(estimate < best * (1 - 1e-9))))) continue;
    tiles = tk, blocks = rows, best = estimate, bestOver = over, chosen = true, start = from;
    options.laneIi = ii;
  }
  // Then, at those tiles, the ops whose f32 lanes the layer waits on get an II of their own: of halving one
  // op's lane II, the one that shortens the layer estimate most, while the budget holds (a decode layer's
  // norms, one row each on the critical path, at 1 while its softmax shares at 2). `lane_ii.OP=N` pins one.
  if (search && bestOver == 0 && options.laneIi > 1) {
    CompileOptions at = options;
    for (const auto& [name, t] : tiles) (unrollsN(name) ? at.pinnedTn : at.pinnedTk)[name] = t;
    KernelGraph lowered = lowerToKernels(graph, at, {});
    std::vector<std::string> ops;  // ops of f32 lanes, in graph order
    for (const Kernel& k : lowered.kernels)
      if (k.op != kEpilogueOp && k.op != "matmul" && k.op != "linear" && !options.laneIiOf.count(k.opName) &&
          std::find(ops.begin(), ops.end(), k.opName) == ops.end())
        ops.push_back(k.opName);
    for (;;) {
      std::string pick;
      double pickEstimate = best * (1 - 1e-6);
      for (const std::string& op : ops) {
        int64_t ii = laneIiOf(at, op);
        if (ii == 1) continue;
        CompileOptions trial = at;
        trial.laneIiOf[op] = ii / 2;
        double estimate = 0, over = 0;
        std::map<std::string, int64_t> rows;
        int64_t from = start;
        chooseUnroll(graph, platform, trial, &estimate, &over, &rows, &from);
        if (over == 0 && estimate < pickEstimate) pick = op, pickEstimate = estimate;
      }
      if (pick.empty()) break;
      at.laneIiOf[pick] = laneIiOf(at, pick) / 2;
      best = pickEstimate;
    }
    if (at.laneIiOf != options.laneIiOf) {  // the row blocks at the ops' own lane IIs
      double estimate = 0, over = 0;
      int64_t from = start;
      chooseUnroll(graph, platform, at, &estimate, &over, &blocks, &from);
    }
    options.laneIiOf = at.laneIiOf;
  }
  Schedules schedules;
  for (const auto& [name, t] : tiles) {
    for (const Op& op : graph.graph->ops) {
      if (op.name != name) continue;
      MatmulDims d = dimsOf(graph, op, options);
      MatmulSchedule& s = schedules[name];
      s.tk = d.tkAt(t);
      s.rowBlock = blocks.at(name);
      if (d.tnAt(t) != tileFor(graph.tensors.at(op.output).shape.back(), options.tile)) s.tn = d.tnAt(t);
    }
  }
  *overOut = bestOver;
  *estimateOut = best;
  return schedules;
}

// Attention's projections written by heads buy on-chip memory (a head of K and V held, not the tensors)
// with cycles where the projections' panel passes and o_proj after them no longer overlap the attention:
// taken while the unroll search's estimate of that design is at most this ratio of the rows-outer one's.
constexpr double kHeadsEstimateRatio = 1.15;
// And only over this many rows or more: below, the attention is too short beside the projections for the
// heads' pipeline to fill (a BERT-base attention of 40 rows, 6 heads of 128: estimated 1.11x, sized 1.12x
// the cycles, and its values read ahead into a FIFO of 1.1 Mbit that the rows-outer design does not need).
constexpr int64_t kHeadsRows = 64;

// The schedules, the pins as given (chooseSchedules adds attention's projections), and in `estimate` the
// unroll search's estimate of the layer's cycles with them.
Schedules chooseSchedulesAsPinned(const TypedGraph& graph, const Platform& platform, CompileOptions& options,
                                  double* estimate, double* overOut = nullptr) {
  CompileOptions given = options;
  double over = 0;
  Schedules schedules = searchSchedules(graph, platform, options, &over, estimate);
  if (overOut) *overOut = over;
  // Over the DSP budget with f32 matmuls growing their output tiles (their reduction tiles stay at the
  // stream tile, where the search cannot halve them): searched again without, the design least over kept.
  if (over == 0 || !given.f32OutputTiles) return schedules;
  CompileOptions retry = given;
  retry.f32OutputTiles = false;
  bool widened = false;
  for (const Op& op : graph.graph->ops)
    if (isMatmul(op))
      widened = widened || dimsOf(graph, op, given).unrollsN != dimsOf(graph, op, retry).unrollsN;
  if (!widened) return schedules;
  double retryOver = 0, retryEstimate = 0;
  Schedules without = searchSchedules(graph, platform, retry, &retryOver, &retryEstimate);
  if (!(retryOver < over)) return schedules;
  options = retry;
  *estimate = retryEstimate;
  if (overOut) *overOut = retryOver;
  return without;
}

}  // namespace

Schedules chooseSchedules(const TypedGraph& graph, const Platform& platform, CompileOptions& options,
                          std::optional<HeadsAlternative>* alternative) {
  // Attention's projections of rows from HBM (headDimOf): weight-stationary, in column panels of a head,
  // so that each head's keys, values and queries are complete a panel pass after they start and the
  // converters in front of the scores hold a head instead of the tensor (the rows are read from HBM again
  // for each panel). Unless the settings pin the op's row block or output tile, or every matmul's row
  // block (row_block=N); only over kHeadsRows rows or more, and unless the unroll search's estimate of
  // that design is more than kHeadsEstimateRatio times the rows-outer one's. Kept out so but within
  // kHeadsMemoryRatio, it goes to `alternative` (compileGraph weighs its on-chip bytes).
  CompileOptions byHeads = options;
  std::vector<std::string> pinned;
  for (const Op& op : graph.graph->ops) {
    int64_t D = headDimOf(graph, op);
    if (options.rowBlockPolicy >= 0 || D == 0 || dimsOf(graph, op, options).M < kHeadsRows ||
        D % tileFor(graph.tensors.at(op.output).shape.back(), options.tile) != 0 ||
        options.pinnedTn.count(op.name) || options.pinnedRowBlock.count(op.name))
      continue;
    byHeads.pinnedTn[op.name] = D;
    byHeads.pinnedRowBlock[op.name] = 0;
    pinned.push_back(op.name);
  }
  // The schedules written by heads: those the options pin so (the settings', or the ones added here).
  auto mark = [&](Schedules schedules, const CompileOptions& pins) {
    for (const Op& op : graph.graph->ops)
      if (schedules.count(op.name) && headsPinned(graph, op, pins)) schedules[op.name].byHeads = true;
    return schedules;
  };
  double rowsEstimate = 0, headsEstimate = 0, rowsOver = 0, headsOver = 0;
  if (pinned.empty()) return mark(chooseSchedulesAsPinned(graph, platform, options, &rowsEstimate), options);
  Schedules heads =
      mark(chooseSchedulesAsPinned(graph, platform, byHeads, &headsEstimate, &headsOver), byHeads);
  CompileOptions byRows = options;
  Schedules rows = mark(chooseSchedulesAsPinned(graph, platform, byRows, &rowsEstimate, &rowsOver), byRows);
  for (const std::string& op : pinned) byHeads.pinnedTn.erase(op), byHeads.pinnedRowBlock.erase(op);
  if (headsOver > rowsOver ||
      headsEstimate > kHeadsEstimateRatio * rowsEstimate) {  // over the DSPs, or slower
    if (alternative && headsOver <= rowsOver && headsEstimate <= kHeadsMemoryRatio * rowsEstimate)
      *alternative = HeadsAlternative{heads, byHeads};
    options = byRows;
    return rows;
  }
  options = byHeads;
  return heads;
}

}  // namespace stc
