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
//   rope              6 / 10                1 / 6                      80 / 300
//   row statistics    8 / 20 (*)            0.5 / 5                    60 / 300
//   row apply        12 / 30                1 / 8                     150 / 600
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
// finish is two conversions and a division (50). Copies move
// data only. DSPs and LUTs of those
// f32 steps are not counted yet: the W4A8 kernels keep the integer column, the matmul its MACs alone.
#include "compiler/dse/cost_model.h"

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
  static const std::map<std::string, LaneCost> table = {
      {"add", {2, 7, 0, 2, 40, 220}},          {"sub", {2, 7, 0, 2, 40, 220}},
      {"mul", {3, 4, 0.5, 3, 30, 120}},        {"div", {12, 30, 0, 0, 400, 800}},
      {"reciprocal", {12, 30, 0, 0, 400, 800}}, {"erf", {10, 20, 1, 7, 300, 700}},
      {"sqrt", {12, 16, 0, 0, 300, 600}},      {"pow", {22, 45, 1, 12, 500, 1200}},
      {"abs", {1, 1, 0, 0, 10, 40}},           {"max", {1, 2, 0, 0, 30, 80}},
      {"min", {1, 2, 0, 0, 30, 80}},
      {"exp", {10, 20, 1, 7, 300, 700}},       {"tanh", {10, 20, 1, 7, 300, 700}},
      {"gelu", {16, 35, 1, 10, 400, 900}},     {"silu", {16, 35, 1, 10, 400, 900}},
      {"relu", {1, 1, 0, 0, 10, 40}},          {"sigmoid", {12, 30, 1, 8, 350, 800}},
      {"rope", {6, 10, 1, 6, 80, 300}},        {"stats", {8, 20, 0.5, 5, 60, 300}},
      {"apply", {12, 30, 1, 8, 150, 600}},     {"reduce", {8, 20, 0.5, 5, 60, 300}},
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

}  // namespace

void costKernels(KernelGraph& graph, const std::string& quant) {
  for (Kernel& k : graph.kernels) {
    k.ii = 1;
    // Without quantisation every stream and operation of the emitted project is f32, whatever the
    // graph's dtypes (emit/task_bodies.h: EmitContext::dtype).
    const std::string arithmetic = quant == "w4a8" ? k.arithmetic : "f32";
    bool fp = isFloat(arithmetic);
    if (k.op == "matmul" || k.op == "linear") {
      int64_t levels = static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(std::max<int64_t>(k.lanes, 1)))));
      // The output stage: the W4A8 epilogue or requantisation; an f32 bias add where there is a bias (the
      // output phase's fourth port, or the second of an input-streaming matmul's).
      bool streaming = k.phases.size() == 2;
      bool bias = operandPorts(k) == (streaming ? 2u : 4u);
      k.latency = levels * (fp ? 7 : 1) + 6 + (fp ? (bias ? 7 : 0) : 19);
      if (fp) k.ii = floatAccumulationIi(k);
      k.dsp = static_cast<int64_t>(std::ceil(static_cast<double>(k.lanes) * dspPerMac(arithmetic)));
      k.lut = 600 + 25 * k.lanes;
      continue;
    }
    std::string lane = laneOp(k.op);
    LaneCost c = laneCost(lane);
    if (lane == "move") {  // copies, concat, gathers: data only
      k.latency = c.latencyInt;
      k.dsp = 0;
      k.lut = 600 + k.lanes * c.lutInt;
      continue;
    }
    bool integerSums = !fp && (lane == "reduce" || lane == "stats");
    if (integerSums) {  // a row's f32 finish: statistics (st_numeric.h), or a reduction's scale, mean and
                        // rounding
      bool softmax = lane == "stats" && k.op.rfind("softmax", 0) == 0;
      k.latency = c.latencyInt + (lane == "stats" ? 50 : k.op == "reduce_mean" ? 46 : 16);
      k.dsp = softmax ? 0 : static_cast<int64_t>(std::ceil(static_cast<double>(k.lanes) * c.dspInt));
      k.lut = 600 + k.lanes * (softmax ? kSoftmaxLaneLut : c.lutInt);
      continue;
    }
    k.latency = c.latencyFloat + (fp ? 0 : 16);
    if (lane == "rope") {
      // A row is whole before its first output (an element's partner is half a row away): the emitted
      // kernel writes each token a row's tokens after reading it (emit/task_bodies.cpp: rope).
      const Expr& tiles = k.phases[0].trip.back();
      if (tiles.isConstant()) k.latency += tiles.eval();
    }
    if (fp && (lane == "stats" || lane == "reduce")) {
      // f32 row sums: a token's values summed by a tree, then one recurrence (above); the finish divides.
      int64_t levels =
          static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(std::max<int64_t>(k.lanes, 1)))));
      k.ii = floatRowIi(k.op);
      k.latency = floatRowLatency(k.op, levels);
    }
    k.dsp = static_cast<int64_t>(std::ceil(static_cast<double>(k.lanes) * (fp ? c.dspFloat : c.dspInt)));
    k.lut = 600 + k.lanes * (fp ? c.lutFloat : c.lutInt);
  }
}

}  // namespace stc
