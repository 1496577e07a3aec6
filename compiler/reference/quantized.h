#pragma once
// W4A8: the quantisation scheme, its calibration, and the quantised reference interpreter, the bit-exact
// golden model of an emitted W4A8 project (README, "W4A8").
//
//   activations  int8, symmetric, one scale per tensor: real = scale * q. The scale is absmax / 127 over
//                the calibration run (the f32 reference on the sample inputs, every chained layer);
//                tensors that are the same data (reshape, transpose, slice, embedding rows, a layer's
//                output 0 and the next layer's input 0) share one scale.
//   weights      of a matmul (a 2-D graph weight as its right side): int4, symmetric, one scale per
//                output channel, absmax / 7. Other weights (norm scales, tables): int8 per tensor.
//   matmul       int8 x int4 (or int8 x int8) products summed in int32, in any order (exact); then the
//                epilogue q = st_q8(float(acc) * r[n] + c[n]) with r[n] = s_a * s_w[n] / s_out and
//                c[n] = bias[n] / s_out (f32, stored beside the packed weights); two int8 operands: one
//                constant r = s_a * s_b / s_out.
//   softmax      integer statistics: the row's largest q and a block floating point sum of a table of
//                exponentials, token by token in two lanes (softmaxTable, st_softmax_stats); then f32
//                as below.
//   masks        a softmax's input and the elementwise results on its way from the scores that hold a
//                mask's fill (-inf, the dtype's minimum, -1e4 beside scores of a few units), and tensors
//                holding -inf that only elementwise ops and softmaxes read: scaled by their other values,
//                and their -128 is the fill, -inf (QuantScale::masked, st_q8_masked); a row of masked
//                keys alone weighs them evenly, as torch weighs keys that tie at the dtype's minimum.
//   other ops    dequantise (float(q) * s, f32), compute in f32 exactly as the emitted kernel does
//                (the same operations in the same order), requantise: st_q8(y * (1 / s_out)).
//   rounding     st_q8 / st_q4 (compiler/emit/runtime/st_numeric.h): round half away from zero, then
//                saturate to [-128, 127] / [-8, 7]; NaN gives 0.

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/reference/interpreter.h"

namespace stc {

struct QuantScale {
  float scale = 1.0f;    ///< real = scale * q
  float inverse = 1.0f;  ///< 1 / scale, rounded to f32 once: requantisation multiplies by it
  /// A tensor whose -128 is a mask's fill, -inf, scaled by its other values (reference/quantized.cpp:
  /// calibrateMasks): a softmax's input or a tensor on the way to it, or one holding -inf.
  bool masked = false;
  /// Masked, and every fill it holds is -inf: a softmax row of its masked keys alone is NaN in f32 (torch's
  /// softmax of -inf keys only), which the quantised softmax gives as 0 (torch.nan_to_num's default), not
  /// as even weights (a row all filled with one finite value, which torch weighs evenly).
  bool nanRows = false;
};

/// The real value of int8 q of a tensor of scale s: scale * q, rounded once; -inf for a masked -128.
inline float dequantised(int q, const QuantScale& s) {
  return s.masked && q == -128 ? -std::numeric_limits<float>::infinity() : static_cast<float>(q) * s.scale;
}
/// f32 value v stored in a tensor of scale s: st_q8(v * inverse), or st_q8_masked for a masked tensor.
int8_t requantised(float v, const QuantScale& s);

struct QuantPlan {
  std::map<std::string, QuantScale> scales;  ///< every int8 tensor, by name
  std::set<std::string> int4;                ///< matmul weights stored as int4 per output channel
  std::set<std::string> ids;                 ///< inputs holding token ids (they stay f32)
  /// Elements per token of each softmax's .stats kernel, by op (1 where absent): its sum aligns a token's
  /// exponentials to the token's largest one.
  std::map<std::string, int64_t> softmaxTokens;
  /// The scale of an int8 tensor; throws for a tensor without one.
  const QuantScale& of(const std::string& tensor) const;
};

/// One layer's quantised weights.
struct QuantWeights {
  std::map<std::string, std::vector<int8_t>> values;    ///< int8 weights and int4 ones (-8..7), row-major
  std::map<std::string, std::vector<float>> epilogue;   ///< by matmul op with an int4 weight: [N][2] = r, c
};

/// The name of a matmul's epilogue tensor ([N, 2] f32: r, c per output channel).
inline std::string epilogueTensor(const std::string& op) { return op + ".epilogue"; }

/// Whether op is a matmul whose right side is a 2-D graph weight that only matmuls read as their right
/// side (int4 with an epilogue under W4A8; a weight another op reads too, like a tied embedding table,
/// stays int8).
inline bool hasInt4Weight(const Graph& graph, const Op& op) {
  auto isMatmul = [](const Op& o) { return (o.op == "matmul" || o.op == "linear") && o.inputs.size() >= 2; };
  if (!isMatmul(op)) return false;
  const std::string& w = op.inputs[1];
  for (const Op& other : graph.ops)
    for (size_t i = 0; i < other.inputs.size(); ++i)
      if (other.inputs[i] == w && !(i == 1 && isMatmul(other))) return false;
  for (const auto& decl : graph.weights)
    if (decl.name == w) return decl.shape.size() == 2;
  return false;
}

/// Scales from the f32 reference's tensors of every layer (`layers[i]` as interpret() returns them);
/// with chained, a layer's output 0 is the next one's input 0 and they share a scale.
QuantPlan calibrate(const Graph& graph, const std::vector<std::map<std::string, Tensor>>& layers, bool chained);

/// Quantises a layer's weights (f32 values by name) and computes the epilogues.
QuantWeights quantizeWeights(const Graph& graph, const QuantPlan& plan, const std::map<std::string, Tensor>& values);

/// st_q8(x * inverse) of each value: an input as the host quantises it.
std::vector<int8_t> quantizeValues(const std::vector<float>& x, const QuantScale& s);

/// W4A8 softmax's exponentials for an input of scale `scale` (st_softmax_stats), index q + 128 for q in
/// [-128, 127]: exp(scale * q) = mantissa * 2^(exponent - 31), exponent = ceil(q * scale / ln 2).
/// For a masked input, -128's mantissa is 0: a masked key adds nothing.
struct SoftmaxTable {
  std::array<uint32_t, 256> mantissa{};
  std::array<int32_t, 256> exponent{};
  bool masked = false;
};
SoftmaxTable softmaxTable(float scale, bool masked = false);

/// A W4A8 softmax row's statistics (the maximum and the sum of exp(x - max)) as its .stats kernel takes
/// them from D int8 scores q, T per token, of which the first `kept` count (a causal mask's row keeps a
/// prefix of its keys; the kernel still steps through the other tokens, which add nothing). With a masked
/// table, a row whose kept keys are all masked has the maximum -inf and the sum their count
/// (st_softmax_stats_masked).
void softmaxRowStats(const int8_t* q, int64_t D, int64_t T, const SoftmaxTable& table, float scale,
                     float* max, float* sum, int64_t kept = INT64_MAX);

/// Evaluates the graph as the emitted W4A8 kernels do: int8 inputs (token ids as f32 in `ids`), the
/// layer's quantised weights; returns every int8 tensor it computed by name.
std::map<std::string, std::vector<int8_t>> interpretQuantized(const Graph& graph, const QuantPlan& plan,
                                                              const QuantWeights& weights,
                                                              const std::map<std::string, std::vector<int8_t>>& inputs,
                                                              const std::map<std::string, Tensor>& ids,
                                                              const Bindings& bindings = {});

}  // namespace stc
