// Cost model (see cost_model.h for sources). Per lane of an elementwise or row kernel:
//
//   op           latency int / float   DSP per lane int / float   LUT per lane int / float
//   add, sub          2 / 7                 0 / 2                      40 / 220
//   mul               3 / 4                 0.5 / 3                    30 / 120
//   div, reciprocal  12 / 30                0 / 0                     400 / 800
//   exp, tanh, erf   10 / 20                1 / 7                     300 / 700
//   gelu, silu       16 / 35                1 / 10                    400 / 900
//   sigmoid          12 / 30                1 / 8                     350 / 800
//   sqrt             12 / 16                0 / 0                     300 / 600
//   pow (exp of a product by a log)
//                    22 / 45                1 / 12                    500 / 1200
//   relu, abs         1 / 1                 0 / 0                      10 / 40
//   max, min          1 / 2                 0 / 0                      30 / 80
//   rope              6 / 10                (tallied, below)           80 / 300
//   row statistics    8 / 20 (*)            0.5 / 5                    60 / 300
//   row apply        12 / 30                (tallied, below)          150 / 600
//
// (*) f32 row statistics and reductions take their latency and II from their recurrence instead
// (floatRowLatency, floatRowIi).
//
// A matmul of Tk x Tn MACs per iteration: ceil(log2 Tk) adder-tree levels (1 cycle each for integers, 7
// for floats) plus 6 (multiply, accumulate, output) cycles, its DSPs from dspPerMac, 25 LUTs per MAC.
// Every kernel has 600 LUTs of control and ii 1 but where an f32 recurrence sets it (floatAccumulationIi,
// floatRowIi: a float addition takes 7 cycles at 4 ns, so a running f32 sum cannot take a value every
// cycle); concat and gathers move data only.
//
// Latencies follow the code stc emits (emit/task_bodies.cpp), not the graph's dtypes. Every op but the
// matmul's MACs and the W4A8 row sums computes in f32: under W4A8 (integer streams) it dequantises each
// input (int to float, a multiply) and requantises its output (a multiply, rounding), 16 cycles on top of
// the f32 op. A W4A8 matmul's output goes through its f32 epilogue (int to float, multiply, add,
// rounding: 19 cycles); an f32 matmul adds its bias (7). W4A8 row statistics and reductions sum integers
// (the integer column) and finish a row in f32: statistics (st_numeric.h: a 64-bit product, conversions,
// a division and multiplies: 50 cycles), a reduction's scale and rounding (16, a mean's division 30 more).
// W4A8 softmax statistics look each score's exponential up in two tables (a mantissa in [2^30, 2^31] and
// an exponent) and sum them in 64-bit block floating point (no DSP, kSoftmaxLaneLut LUTs a lane); their
// finish is two conversions and a division (50). Copies move data only.
//
// DSPs count those f32 steps too, as the emitted code has them (f32Operators): every multiplier and adder the
// unrolled lanes instantiate, at the DSP48E2 slices of the f32 cores Vitis HLS binds by default on
// UltraScale+ (kFaddDsp, kFmulDsp); a W4A8 lane's requantisation is a multiply, its dequantisations table
// lookups. The matmul's epilogue counts per output lane (Tn), or, in an epilogue kernel of its own, per
// output lane over the II of the matmul's output tokens; a row's finish once per kernel; at a lane II
// above 1 each kind of operator is shared (Operators). Rope's cos and sin count per table unit
// (ropeTableUnits), its rotations per lane.
#include "compiler/dse/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace stc {

double dspPerMac(const std::string& arithmetic) {
  if (arithmetic == "w4a8" || arithmetic == "i8" || arithmetic == "i4" || arithmetic == "u8") return 0.5;
  if (arithmetic == "i16" || arithmetic == "i32") return 1;
  if (arithmetic == "f16" || arithmetic == "bf16") return 2;
  return 5;
}

namespace {

struct LaneCost {
  int64_t latencyInt, latencyFloat;
  double dspInt, dspFloat;
  int64_t lutInt, lutFloat;
};

LaneCost laneCost(const std::string& op) {
  static const std::map<std::string, LaneCost> table = {{"add", {2, 7, 0, 2, 40, 220}},
                                                        {"sub", {2, 7, 0, 2, 40, 220}},
                                                        {"mul", {3, 4, 0.5, 3, 30, 120}},
                                                        {"div", {12, 30, 0, 0, 400, 800}},
                                                        {"reciprocal", {12, 30, 0, 0, 400, 800}},
                                                        {"erf", {10, 20, 1, 7, 300, 700}},
                                                        {"sqrt", {12, 16, 0, 0, 300, 600}},
                                                        {"pow", {22, 45, 1, 12, 500, 1200}},
                                                        {"abs", {1, 1, 0, 0, 10, 40}},
                                                        {"floor", {1, 2, 0, 0, 30, 120}},
                                                        {"ceil", {1, 2, 0, 0, 30, 120}},
                                                        {"round", {1, 2, 0, 0, 30, 120}},
                                                        {"sign", {1, 1, 0, 0, 10, 40}},
                                                        {"fmod", {16, 38, 0.5, 3, 450, 1000}},
                                                        {"max", {1, 2, 0, 0, 30, 80}},
                                                        {"min", {1, 2, 0, 0, 30, 80}},
                                                        {"greater", {1, 2, 0, 0, 30, 80}},
                                                        {"select", {1, 2, 0, 0, 30, 80}},
                                                        {"less", {1, 2, 0, 0, 30, 80}},
                                                        {"equal", {1, 2, 0, 0, 30, 80}},
                                                        {"greater_equal", {1, 2, 0, 0, 30, 80}},
                                                        {"less_equal", {1, 2, 0, 0, 30, 80}},
                                                        {"exp", {10, 20, 1, 7, 300, 700}},
                                                        {"tanh", {10, 20, 1, 7, 300, 700}},
                                                        {"log", {10, 20, 1, 7, 300, 700}},
                                                        {"sin", {10, 30, 1, 10, 300, 1500}},
                                                        {"cos", {10, 30, 1, 10, 300, 1500}},
                                                        {"softplus", {22, 45, 2, 14, 600, 1400}},
                                                        {"gelu", {16, 35, 1, 10, 400, 900}},
                                                        {"silu", {16, 35, 1, 10, 400, 900}},
                                                        {"relu", {1, 1, 0, 0, 10, 40}},
                                                        {"sigmoid", {12, 30, 1, 8, 350, 800}},
                                                        {"rope", {6, 10, 1, 6, 80, 300}},
                                                        {"stats", {8, 20, 0.5, 5, 60, 300}},
                                                        {"apply", {12, 30, 1, 8, 150, 600}},
                                                        {"reduce", {8, 20, 0.5, 5, 60, 300}},
                                                        {"move", {1, 1, 0, 0, 0, 0}}};
  auto it = table.find(op);
  return it == table.end() ? table.at("move") : it->second;
}

std::string laneOp(const std::string& op) {
  if (op.size() > 6 && op.compare(op.size() - 6, 6, ".stats") == 0) return "stats";
  if (op.size() > 6 && op.compare(op.size() - 6, 6, ".apply") == 0) return "apply";
  if (op.rfind("reduce_", 0) == 0) return "reduce";
  if (op == "concat" || op == "embedding" || op == "move" || op == "transpose" || op == "slice")
    return "move";
  return op;
}

// A W4A8 softmax statistics lane: two 256-entry tables (a 32-bit mantissa, a 16-bit exponent) folded into
// logic (about four LUTs a bit: 192), the exponent difference and a 32-bit barrel shift (about 100), and its
// share of the 64-bit adder tree and comparisons (about 100); no multiplier.
constexpr int64_t kSoftmaxLaneLut = 400;

// f32 operator latencies at 4 ns (the table's add and mul).
constexpr int64_t kFadd = kFloatAddLatency, kFmul = 4;

// The II of an f32 matmul: its accumulators' recurrence is one addition. Output stationary, each
// iteration adds into the same tile, so II = kFadd. Input streaming, consecutive iterations add into the
// accumulators of consecutive output tiles (phase 0's last loop), so a tile's recurrence has `tiles`
// iterations and II = ceil(kFadd / tiles) (the emitted loop declares that distance to HLS); a symbolic
// tile count is taken as 1.
int64_t floatAccumulationIi(const Kernel& k) {
  if (k.phases.size() != 2) return kFadd;
  const Expr& tiles = k.phases[0].trip.back();
  int64_t n = tiles.isConstant() ? std::max<int64_t>(tiles.eval({}), 1) : 1;
  return (kFadd + n - 1) / n;
}

// The II of an f32 row statistics or reduction kernel: the recurrence a token adds to. Sums: one addition
// (layernorm, rmsnorm, reduce_sum, reduce_mean); softmax: the running sum's rescale and addition (a
// multiply and an add; the running maximum, a comparison, and the exponentials of its differences are
// outside the recurrence); reduce_max: a comparison, one cycle.
int64_t floatRowIi(const std::string& op) {
  if (op == "reduce_max") return 1;
  if (op.rfind("softmax", 0) == 0) return kFmul + kFadd;
  return kFadd;
}

// The pipeline depth of an f32 row kernel with `levels` adder-tree levels over a token: reduce_max
// compares (a cycle a level and the running maximum); sums add a tree and the running sum, a mean or a
// norm's finish divides (30); layernorm subtracts the row's first value and squares, rmsnorm squares;
// softmax takes the token's maximum, the exponentials of the differences (20), their tree, and the
// running sum's rescale (an exponential, a multiply, an add).
int64_t floatRowLatency(const std::string& op, int64_t levels) {
  const int64_t exp = 20, div = 30;
  if (op == "reduce_max") return levels + 1;
  if (op == "reduce_sum") return levels * kFadd + kFadd;
  if (op == "reduce_mean") return levels * kFadd + kFadd + div;
  if (op.rfind("softmax", 0) == 0) return levels + kFadd + exp + levels * kFadd + exp + kFmul + kFadd;
  if (op.rfind("layernorm", 0) == 0) return kFadd + kFmul + levels * kFadd + kFadd + div;
  return kFmul + levels * kFadd + kFadd + div;  // rmsnorm
}

bool isFloat(const std::string& dtype) { return dtype == "f32" || dtype == "f16" || dtype == "bf16" || dtype == "f64"; }

// DSP48E2 slices of the f32 operator cores Vitis HLS binds by default on UltraScale+ (PG060, Floating-Point
// Operator v7.1, resource tables: a single-precision add or subtract in full DSP usage takes 2, a multiply in
// max usage 3); conversions, comparisons, divisions and square roots take none. A 64-bit integer product
// that keeps its low 64 bits: the 26 x 17 (unsigned) tiles of a DSP48E2's multiplier that reach them, 8.
// sin and cos: estimated as an exponential (a range reduction and a polynomial).
constexpr double kFaddDsp = 2, kFmulDsp = 3, kInt64MulDsp = 8, kTrigDsp = 7;

const KernelPort& outputOf(const KernelPhase& phase) {
  for (const KernelPort& p : phase.ports)
    if (p.out) return p;
  return phase.ports.back();
}

double inputsOf(const KernelPhase& phase) {
  double n = 0;
  for (const KernelPort& p : phase.ports) n += p.out ? 0 : 1;
  return n;
}

// The operators of a kernel's f32 steps, by kind: how many its unrolled lanes instantiate and the DSPs of
// each. HLS shares operators of one kind among the operations of a loop at II = N, so a kind takes
// ceil(count / N) of them (at least one: a row's single multiply is not divided).
struct Operators {
  std::vector<std::pair<double, double>> kinds;  // (count, DSPs each)
  void add(double count, double dsp) {
    if (count > 0 && dsp > 0) kinds.emplace_back(count, dsp);
  }
  double dsp(int64_t ii) const {
    double d = 0;
    for (const auto& [count, each] : kinds) d += std::ceil(count / static_cast<double>(ii)) * each;
    return d;
  }
};

// The f32 operators emit/task_bodies.cpp writes for a kernel, besides a matmul's MACs: its unrolled lanes'
// and a row's finish. Under W4A8 (`quant`) a lane requantises what it writes, a multiply, and looks its
// inputs' dequantised values up in tables (dequantTables), no DSP; its row sums square int8 values (two
// a DSP).
Operators f32Operators(const Kernel& k, const std::string& lane, const LaneCost& c, bool quant) {
  Operators o;
  const double requant = quant ? 1 : 0;
  const KernelPhase& last = k.phases.back();
  if (k.op == "matmul" || k.op == "linear") {  // per output lane: the epilogue (acc * scale + offset), a
                                               // rescale, or an f32 bias; none where it writes its
                                               // int32 sums to an epilogue kernel
    if (outputOf(last).order.dtype == "i32") return o;
    double tn = static_cast<double>(tokenElements(outputOf(last).order));
    bool bias = operandPorts(k) == (k.phases.size() == 2 ? 2u : 4u);
    o.add(quant ? tn : 0, kFmulDsp);
    o.add(bias ? tn : 0, kFaddDsp);
    return o;
  }
  if (lane == "move") {  // a W4A8 concat requantises each input into the output's scale
    if (quant && k.op == "concat")
      for (size_t i = 0; i + 1 < k.phases.size(); ++i) o.add(static_cast<double>(tokenElements(k.phases[i].ports[0].order)), kFmulDsp);
    return o;
  }
  double lanes = static_cast<double>(tokenElements(outputOf(k.phases[0]).order));
  if (lane == "stats" || lane == "reduce") {
    double inLanes = static_cast<double>(tokenElements(k.phases[0].ports[0].order));
    if (!quant) {
      o.add(inLanes, c.dspFloat);
      return o;
    }
    // Integer sums (squares for a norm), then the row's finish (st_numeric.h): layernorm two multiplies and
    // two 64-bit products, rmsnorm and softmax a multiply; a reduction its scale and the requantisation.
    bool norm = lane == "stats" && k.op.rfind("softmax", 0) != 0;
    o.add(norm ? inLanes * c.dspInt : 0, 1);
    bool layernorm = k.op.rfind("layernorm", 0) == 0;
    o.add(lane == "reduce" || layernorm ? 2 : 1, kFmulDsp);
    o.add(layernorm ? 2 : 0, kInt64MulDsp);
    return o;
  }
  if (lane == "apply") {
    // Per lane (rowApply): softmax exp(x - max) * inv; layernorm (x - mean) * inv; rmsnorm x * inv; a norm's
    // gain multiplies and its bias adds, each an input of its own. A norm's row adds its eps once.
    std::string base = k.op.substr(0, k.op.find('.'));
    double extra = inputsOf(k.phases[0]) - 2;
    bool softmax = base == "softmax";
    double adds = (softmax || base == "layernorm" ? 1 : 0) + (extra > 1 ? 1 : 0);
    o.add(lanes * adds + (softmax ? 0 : 1), kFaddDsp);
    o.add(lanes * (1 + (extra > 0 ? 1 : 0) + requant), kFmulDsp);
    o.add(softmax ? lanes : 0, laneCost("exp").dspFloat);
    return o;
  }
  if (lane == "rope") {
    // Per lane (rope): both rotations of the select (x * c -/+ y * s: two multiplies and an addition each)
    // and the requantisation. The row's table of cos and sin: tableUnits angles an iteration, each
    // pos * inv_freq[i] (a multiply; inv_freq a constant table) and its cos and sin.
    o.add(lanes * (4 + requant), kFmulDsp);
    o.add(lanes * 2, kFaddDsp);
    double units = static_cast<double>(std::max<int64_t>(k.tableUnits, 1));
    o.add(units, kFmulDsp);
    o.add(units * 2, kTrigDsp);
    return o;
  }
  // An elementwise op: the f32 op and the requantisation.
  o.add(lanes, c.dspFloat);
  o.add(lanes * requant, kFmulDsp);
  return o;
}

}  // namespace

bool lanesLookUp(const Kernel& k, const std::string& quant) {
  if (quant != "w4a8" || elementwiseArity(k.op) != 1 || k.phases.size() != 1) return false;
  if (k.op == "move" || k.op == "transpose" || k.op == "slice") return false;
  return inputsOf(k.phases[0]) == 1;
}

void costKernels(KernelGraph& graph, const CompileOptions& options) {
  const std::string& quant = options.quant;
  for (Kernel& k : graph.kernels) {
    k.ii = 1;
    const int64_t laneIi = std::max<int64_t>(laneIiOf(options, k.opName), 1);
    // Without quantisation every stream and operation of the emitted project is f32, whatever the
    // graph's dtypes (emit/task_bodies.h: EmitContext::dtype).
    const std::string arithmetic = quant == "w4a8" ? k.arithmetic : "f32";
    bool fp = isFloat(arithmetic), w4a8 = quant == "w4a8";
    if (k.op == "matmul" || k.op == "linear") {
      int64_t levels = static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(std::max<int64_t>(k.lanes, 1)))));
      // The output stage: the W4A8 epilogue or requantisation; an f32 bias add where there is a bias (the
      // output phase's fourth port, or the second of an input-streaming matmul's).
      bool streaming = k.phases.size() == 2;
      bool bias = operandPorts(k) == (streaming ? 2u : 4u);
      bool sums = outputOf(k.phases.back()).order.dtype == "i32";  // the epilogue in a kernel of its own
      k.latency = levels * (fp ? 7 : 1) + 6 + (fp ? (bias ? 7 : 0) : sums ? 0 : 19);
      if (fp) k.ii = floatAccumulationIi(k);
      k.dsp = static_cast<int64_t>(std::ceil(static_cast<double>(k.lanes) * dspPerMac(arithmetic) +
                                             f32Operators(k, "matmul", laneCost("move"), w4a8).dsp(1)));
      k.lut = 600 + 25 * k.lanes;
      continue;
    }
    if (k.op == kEpilogueOp) {  // a W4A8 matmul's epilogue apart (int to float, multiply, add, rounding)
      k.ii = std::max<int64_t>(k.shareIi, 1);
      k.latency = 19;
      Operators ops;
      ops.add(static_cast<double>(k.lanes), kFmulDsp);
      ops.add(static_cast<double>(k.lanes), kFaddDsp);
      k.dsp = static_cast<int64_t>(std::ceil(ops.dsp(k.ii)));
      k.lut = 600 + (k.lanes + k.ii - 1) / k.ii * (laneCost("mul").lutFloat + laneCost("add").lutFloat);
      continue;
    }
    std::string lane = laneOp(k.op);
    LaneCost c = laneCost(lane);
    if (lane == "move") {  // copies, concat, gathers: data only
      k.latency = c.latencyInt;
      k.dsp = static_cast<int64_t>(f32Operators(k, lane, c, w4a8).dsp(1));
      k.lut = 600 + k.lanes * c.lutInt;
      continue;
    }
    if (lanesLookUp(k, quant)) {  // a table a lane: a 256 x 8-bit function of 8 bits, about 5 LUTs an output bit
      k.latency = 2;
      k.dsp = 0;
      k.lut = 600 + k.lanes * 40;
      continue;
    }
    bool integerSums = !fp && (lane == "reduce" || lane == "stats");
    if (integerSums) {  // a row's f32 finish: statistics (st_numeric.h), or a reduction's scale, mean and
                        // rounding
      bool softmax = lane == "stats" && k.op.rfind("softmax", 0) == 0;
      k.latency = c.latencyInt + (lane == "stats" ? 50 : k.op == "reduce_mean" ? 46 : 16);
      Operators ops = f32Operators(k, lane, c, true);
      if (!ops.kinds.empty()) k.ii = laneIi;
      k.dsp = static_cast<int64_t>(std::ceil(ops.dsp(k.ii)));
      k.lut = 600 + k.lanes * (softmax ? kSoftmaxLaneLut : c.lutInt);
      continue;
    }
    k.latency = c.latencyFloat + (fp ? 0 : 16);
    Operators ops = f32Operators(k, lane, c, w4a8);
    if (!ops.kinds.empty()) k.ii = laneIi;  // kernels with no f32 operator to share keep II 1
    if (lane == "rope") {
      // A row is whole before its first output (an element's partner is half a row away): the emitted
      // kernel writes each token a row of iterations after reading it (emit/task_bodies.cpp: rope).
      const Expr& tiles = k.phases[0].trip.back();
      if (tiles.isConstant()) k.latency += tiles.eval() * k.ii;
    }
    if (fp && (lane == "stats" || lane == "reduce")) {
      // f32 row sums: a token's values summed by a tree, then one recurrence (above); the finish divides.
      int64_t levels =
          static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(std::max<int64_t>(k.lanes, 1)))));
      k.ii = std::max(floatRowIi(k.op), k.ii);
      k.latency = floatRowLatency(k.op, levels);
    }
    k.dsp = static_cast<int64_t>(std::ceil(ops.dsp(k.ii)));
    k.lut = 600 + k.lanes * (fp ? c.lutFloat : c.lutInt);
    if (w4a8)  // a dequantisation table a lane and int8 input: 32 output bits of 8 inputs, about 5 LUTs a bit
      for (const KernelPort& p : k.phases[0].ports)
        if (!p.out && p.order.dtype == "i8") k.lut += 160 * std::min(tokenElements(p.order), k.lanes);
  }
}

}  // namespace stc
