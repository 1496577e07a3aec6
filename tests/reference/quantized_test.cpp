// The W4A8 scheme against values worked out by hand: rounding and saturation, int4 packing, calibration
// (which tensors share a scale), and the quantised reference's matmul epilogue and elementwise ops.
#include "compiler/reference/quantized.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "compiler/emit/runtime/st_numeric.h"
#include "compiler/ir/yaml_io.h"

namespace stc {
namespace {

TEST(W4A8, RoundsHalfAwayFromZeroThenSaturates) {
  EXPECT_EQ(st_q8(2.5f), 3);
  EXPECT_EQ(st_q8(-2.5f), -3);
  EXPECT_EQ(st_q8(2.49f), 2);
  EXPECT_EQ(st_q8(-0.49f), 0);
  EXPECT_EQ(st_q8(126.5f), 127);
  EXPECT_EQ(st_q8(127.5f), 127);
  EXPECT_EQ(st_q8(-127.5f), -128);
  EXPECT_EQ(st_q8(-128.5f), -128);
  EXPECT_EQ(st_q8(1e30f), 127);
  EXPECT_EQ(st_q8(-std::numeric_limits<float>::infinity()), -128);
  EXPECT_EQ(st_q8(std::numeric_limits<float>::quiet_NaN()), 0);
  EXPECT_EQ(st_q4(0.5f), 1);
  EXPECT_EQ(st_q4(-0.5f), -1);
  EXPECT_EQ(st_q4(6.5f), 7);
  EXPECT_EQ(st_q4(7.5f), 7);
  EXPECT_EQ(st_q4(-7.5f), -8);
  EXPECT_EQ(st_q4(-8.5f), -8);
  EXPECT_EQ(st_q4(100.0f), 7);
}

TEST(W4A8, Int4PackingRoundTripsEveryValueAtEitherNibble) {
  st_u8 bytes[2] = {0, 0};
  st_set_w4(bytes, 0, 1);
  st_set_w4(bytes, 1, -1);
  EXPECT_EQ(bytes[0], 0xF1);  // element 0 in the low nibble, -1 = 0xF in the high one
  st_set_w4(bytes, 2, -8);
  st_set_w4(bytes, 3, 7);
  EXPECT_EQ(bytes[1], 0x78);
  for (int a = -8; a <= 7; ++a)
    for (int b = -8; b <= 7; ++b) {
      st_u8 pair[1] = {0xA5};  // whatever was there is replaced
      st_set_w4(pair, 0, a);
      st_set_w4(pair, 1, b);
      EXPECT_EQ(st_w4(pair, 0), a);
      EXPECT_EQ(st_w4(pair, 1), b);
    }
}

Graph linear() {
  return parseGraph(
      "graph: t\ninputs: [{name: a, shape: [1, 2]}]\nweights: [{name: w, shape: [2, 2]}, {name: b, shape: [2]}]\n"
      "ops:\n  - {name: m, op: linear, inputs: [a, w, b], output: y}\noutputs: [y]\n",
      "t.yaml");
}

// a = [1, -0.25], w = [[0.5, 0.25], [-0.375, 0.15]], b = [0.1, 0]: y = [0.69375, 0.2125] in f32.
struct LinearCase {
  Graph g = linear();
  std::map<std::string, Tensor> values = {
      {"a", {{1, 2}, {1.0f, -0.25f}}}, {"w", {{2, 2}, {0.5f, 0.25f, -0.375f, 0.15f}}}, {"b", {{2}, {0.1f, 0.0f}}}};
  QuantPlan plan = calibrate(g, {interpret(g, values)}, false);
};

TEST(W4A8, MatmulAccumulatesInIntegersAndRequantisesPerChannel) {
  LinearCase c;
  EXPECT_FLOAT_EQ(c.plan.of("a").scale, 1.0f / 127);
  EXPECT_FLOAT_EQ(c.plan.of("y").scale, 0.69375f / 127);
  EXPECT_TRUE(c.plan.int4.count("w"));
  QuantWeights qw = quantizeWeights(c.g, c.plan, c.values);
  // Per output channel: column 0 has absmax 0.5 (scale 0.5/7): 0.5 -> 7, -0.375 -> -5.25 -> -5; column 1
  // absmax 0.25: 0.25 -> 7, 0.15 -> 4.2 -> 4.
  EXPECT_EQ(qw.values.at("w"), (std::vector<int8_t>{7, 7, -5, 4}));
  // r[n] = s_a * s_w[n] / s_y, c[n] = b[n] / s_y.
  const std::vector<float>& epi = qw.epilogue.at("m");
  EXPECT_NEAR(epi[0], (0.5 / 7) / 0.69375, 1e-6);
  EXPECT_NEAR(epi[1], 0.1 * 127 / 0.69375, 1e-4);
  EXPECT_NEAR(epi[2], (0.25 / 7) / 0.69375, 1e-6);
  EXPECT_EQ(epi[3], 0.0f);
  // a -> [127, -31.75 -> -32]; acc = [127*7 + 32*5, 127*7 - 32*4] = [1049, 761];
  // y = [1049 * 0.10296 + 18.306, 761 * 0.05148] = [126.31, 39.18] -> [126, 39].
  std::vector<int8_t> qa = quantizeValues(c.values.at("a").data, c.plan.of("a"));
  EXPECT_EQ(qa, (std::vector<int8_t>{127, -32}));
  auto q = interpretQuantized(c.g, c.plan, qw, {{"a", qa}}, {});
  EXPECT_EQ(q.at("y"), (std::vector<int8_t>{126, 39}));
}

TEST(W4A8, AnAccumulatorBeyondInt8Saturates) {
  LinearCase c;
  c.plan.scales["y"] = {1.0f / 1270, 1270.0f};  // ten times finer than the data needs
  QuantWeights qw = quantizeWeights(c.g, c.plan, c.values);
  // y = [1049 * 0.714 + 127, 761 * 0.357] = [876, 272]: both past 127.
  EXPECT_EQ(interpretQuantized(c.g, c.plan, qw, {{"a", {127, -32}}}, {}).at("y"), (std::vector<int8_t>{127, 127}));
  // Negated: [-749 + 127, -272] -> both past -128.
  EXPECT_EQ(interpretQuantized(c.g, c.plan, qw, {{"a", {-127, 32}}}, {}).at("y"), (std::vector<int8_t>{-128, -128}));
}

TEST(W4A8, ElementwiseOpsDequantiseComputeAndRequantise) {
  Graph g = parseGraph(
      "graph: t\ninputs: [{name: x, shape: [2]}]\nweights: [{name: r, shape: [2]}]\n"
      "ops:\n  - {name: s, op: add, inputs: [x, r], output: y}\noutputs: [y]\n",
      "t.yaml");
  std::map<std::string, Tensor> v = {{"x", {{2}, {1.0f, -0.3f}}}, {"r", {{2}, {0.2f, 0.5f}}}};
  QuantPlan plan = calibrate(g, {interpret(g, v)}, false);
  QuantWeights qw = quantizeWeights(g, plan, v);
  // r (scale 0.5/127): 0.2 -> 50.8 -> 51, 0.5 -> 127. x (1/127): 1 -> 127, -0.3 -> -38.1 -> -38.
  EXPECT_EQ(qw.values.at("r"), (std::vector<int8_t>{51, 127}));
  std::vector<int8_t> qx = quantizeValues(v.at("x").data, plan.of("x"));
  EXPECT_EQ(qx, (std::vector<int8_t>{127, -38}));
  // y scale 1.2/127: (1 + 0.200787) * 105.83 = 127.08 -> 127; (-0.299213 + 0.5) * 105.83 = 21.25 -> 21.
  EXPECT_EQ(interpretQuantized(g, plan, qw, {{"x", qx}}, {}).at("y"), (std::vector<int8_t>{127, 21}));
}

TEST(W4A8, CopiesAndChainedLayersShareOneScale) {
  Graph g = parseGraph(
      "graph: t\ninputs: [{name: x, shape: [2, 2]}]\nweights: [{name: r, shape: [2]}]\n"
      "ops:\n  - {name: t, op: transpose, inputs: [x], output: xt, perm: [1, 0]}\n"
      "  - {name: s, op: mul, inputs: [xt, r], output: y}\noutputs: [y]\n",
      "t.yaml");
  std::map<std::string, Tensor> v = {{"x", {{2, 2}, {1, 2, 3, 4}}}, {"r", {{2}, {10, 10}}}};
  auto env = interpret(g, v);
  QuantPlan alone = calibrate(g, {env}, false);
  EXPECT_FLOAT_EQ(alone.of("xt").scale, alone.of("x").scale);
  EXPECT_FLOAT_EQ(alone.of("x").scale, 4.0f / 127);
  EXPECT_FLOAT_EQ(alone.of("y").scale, 40.0f / 127);
  // Chained, input 0 takes output 0's range (the next layer reads it as it is).
  QuantPlan chained = calibrate(g, {env}, true);
  EXPECT_FLOAT_EQ(chained.of("x").scale, chained.of("y").scale);
  EXPECT_FLOAT_EQ(chained.of("x").scale, 40.0f / 127);
}

// Softmax's exponential table against exp() itself: exp(scale * q) = mantissa * 2^(exponent - 31), the
// mantissa in [2^30, 2^31] and the exponent ceil(q * scale / ln 2), at a small, a typical and a huge
// scale (one dominated by a -10000 mask).
TEST(W4A8, SoftmaxTableHoldsEachExponentialAsMantissaAndExponent) {
  for (float scale : {0.001f, 0.0561784394f, 78.7500381f}) {
    SoftmaxTable t = softmaxTable(scale);
    for (int q = -128; q <= 127; ++q) {
      size_t i = static_cast<size_t>(q + 128);
      EXPECT_GE(t.mantissa[i], 1u << 30) << q;
      EXPECT_LE(t.mantissa[i], 1u << 31) << q;
      double log2exp = static_cast<double>(scale) * q / std::log(2.0);
      EXPECT_EQ(t.exponent[i], static_cast<int32_t>(std::ceil(log2exp))) << q;
      // log2 of mantissa * 2^(exponent - 31) equals q * scale / ln 2 to the mantissa's 31 bits.
      EXPECT_NEAR(std::log2(t.mantissa[i]) + t.exponent[i] - 31, log2exp,
                  1e-9 * std::max(1.0, std::fabs(log2exp)))
          << q;
    }
  }
}

// A row's statistics: the maximum is scale * qmax; the sum of exp(x - max) matches a double-precision sum
// to within the bits alignment drops (a few units of 2^-31 per token), for every token width; rows whose
// scores sit far below the scale's range (a mask set the scale) count their ties exactly.
TEST(W4A8, SoftmaxRowStatisticsMatchADoubleSumAtAnyTokenWidth) {
  const float scale = 0.0561784394f;
  SoftmaxTable t = softmaxTable(scale);
  std::vector<int8_t> q = {10, -3, 127, 0, 5, -128, 90, 90, 64, -20, 33};
  double want = 0;
  for (int v : q) want += std::exp(static_cast<double>(scale) * (v - 127));
  for (int64_t T : {1, 2, 4, 5, 16}) {
    float max = 0, sum = 0;
    softmaxRowStats(q.data(), static_cast<int64_t>(q.size()), T, t, scale, &max, &sum);
    EXPECT_EQ(max, 127.0f * scale) << T;
    EXPECT_NEAR(sum, want, want * 1e-7) << T;
  }
  // Alignment drops bits, so the token width decides the last bits of the sum: that is why the reference
  // takes each kernel's width (QuantPlan::softmaxTokens). Some row of random scores shows it.
  bool differs = false;
  uint32_t seed = 12345;
  for (int trial = 0; trial < 200 && !differs; ++trial) {
    std::vector<int8_t> r(48);
    for (int8_t& v : r) v = static_cast<int8_t>((seed = seed * 1103515245u + 12345u) >> 24);
    float m1 = 0, s1 = 0, m16 = 0, s16 = 0;
    softmaxRowStats(r.data(), 48, 1, t, scale, &m1, &s1);
    softmaxRowStats(r.data(), 48, 16, t, scale, &m16, &s16);
    EXPECT_EQ(m1, m16);
    differs = s1 != s16;
  }
  EXPECT_TRUE(differs);
  const float masked = 78.7500381f;  // -10000 / 127: the real scores all quantise to 0 or -1
  SoftmaxTable m = softmaxTable(masked);
  std::vector<int8_t> row = {0, 0, -128, 0, -1, -128, 0};
  float max = 1, sum = 0;
  softmaxRowStats(row.data(), 7, 4, m, masked, &max, &sum);
  EXPECT_EQ(max, 0.0f);
  EXPECT_EQ(sum, 4.0f);  // the four zeros; exp(-78.75) is below the 31-bit mantissa's last bit
}

// Requantisation into a masked tensor: -128 only for a mask's fill, 100 times the range (12,700 steps) or
// more below zero; any other value saturates to -127; the rest is st_q8.
TEST(W4A8, AMaskedTensorKeepsMinus128ForTheFill) {
  EXPECT_EQ(st_q8_masked(-std::numeric_limits<float>::infinity()), -128);
  EXPECT_EQ(st_q8_masked(-3.4e38f), -128);
  EXPECT_EQ(st_q8_masked(-12700.0f), -128);
  EXPECT_EQ(st_q8_masked(-12699.0f), -127);
  EXPECT_EQ(st_q8_masked(-128.0f), -127);
  EXPECT_EQ(st_q8_masked(-126.5f), -127);
  EXPECT_EQ(st_q8_masked(-2.5f), -3);
  EXPECT_EQ(st_q8_masked(200.0f), 127);
  EXPECT_EQ(st_q8_masked(std::numeric_limits<float>::quiet_NaN()), 0);
  QuantScale masked{0.5f, 2.0f, true}, plain{0.5f, 2.0f, false};
  EXPECT_EQ(dequantised(-128, masked), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(dequantised(-128, plain), -64.0f);
  EXPECT_EQ(dequantised(-127, masked), -63.5f);
  EXPECT_EQ(requantised(-1e30f, masked), -128);
  EXPECT_EQ(requantised(-1e30f, plain), -128);
  EXPECT_EQ(requantised(-300.0f, masked), -127);  // -600 steps: past the range, not a fill
}

// A masked table's -128 adds nothing: the sum is the unmasked keys' alone, at every token width, the
// maximum their largest; a row whose kept keys are all masked has the maximum -inf and the sum their
// count (the causal prefix's: 3 of 4 here). Without masked keys, the masked table gives the same bits.
TEST(W4A8, MaskedKeysAddNothingToASoftmaxRow) {
  const float scale = 0.05f;
  SoftmaxTable masked = softmaxTable(scale, true), plain = softmaxTable(scale);
  EXPECT_EQ(masked.mantissa[0], 0u);
  EXPECT_GE(plain.mantissa[0], 1u << 30);
  std::vector<int8_t> row = {10, -128, 20, -128, -128, 0};
  const double want = std::exp(0.05 * (10 - 20)) + 1.0 + std::exp(0.05 * (0 - 20));
  for (int64_t T : {1, 2, 3, 6}) {
    float max = 0, sum = 0;
    softmaxRowStats(row.data(), 6, T, masked, scale, &max, &sum);
    EXPECT_EQ(max, 20.0f * scale) << T;
    EXPECT_NEAR(sum, want, want * 1e-7) << T;
  }
  std::vector<int8_t> none = {-128, -128, -128, -128};
  float max = 0, sum = 0;
  softmaxRowStats(none.data(), 4, 2, masked, scale, &max, &sum, 3);
  EXPECT_EQ(max, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(sum, 3.0f);
  std::vector<int8_t> kept = {5, -127, 33, 0, 2, -90};
  float m1 = 0, s1 = 0, m2 = 0, s2 = 0;
  softmaxRowStats(kept.data(), 6, 2, masked, scale, &m1, &s1);
  softmaxRowStats(kept.data(), 6, 2, plain, scale, &m2, &s2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(s1, s2);
}

// Scores s = a k of 3 rows of 4 keys (row 0 [0.5, -0.25, 1, 0.75], row 1 [0.25, 0.5, -2, 0.1], row 2
// [1.5, -0.75, 3, 2.25]) and a mask m added, x = s + m: the tests below add their softmax.
constexpr const char* kMaskedScores =
    "graph: t\ninputs: [{name: a, shape: [3, 2]}]\n"
    "weights: [{name: k, shape: [2, 4]}, {name: m, shape: [3, 4]}]\n"
    "ops:\n  - {name: mm, op: matmul, inputs: [a, k], output: s}\n"
    "  - {name: mask, op: add, inputs: [s, m], output: x}\n";

std::map<std::string, Tensor> maskedScoresValues(std::vector<float> mask) {
  return {{"a", {{3, 2}, {1, 0, 0, 1, 3, 0}}},
          {"k", {{2, 4}, {0.5f, -0.25f, 1.0f, 0.75f, 0.25f, 0.5f, -2.0f, 0.1f}}},
          {"m", {{3, 4}, std::move(mask)}}};
}

// Scores with a padding mask of the dtype's minimum added, softmax after: the sum calibrates on the kept
// keys alone (its scale 2 / 127, not 3.4e38 / 127) and is masked; the matmul's scores keep the range of
// all their values (3, at a masked key). The quantised softmax then weighs the kept keys as f32 does, to
// a few steps of the probabilities' scale, the masked keys 0, and the row masked whole evenly (torch:
// the minimum plus each score rounds to the minimum, a tie). With the fill setting the scale, every
// score was 0: row 0 weighed its two keys 0.5 each.
TEST(W4A8, APaddingMaskDoesNotSetTheScoresScale) {
  Graph g = parseGraph(
      std::string(kMaskedScores) + "  - {name: sm, op: softmax, inputs: [x], output: p}\noutputs: [p]\n",
      "t.yaml");
  const float low = std::numeric_limits<float>::lowest();
  std::map<std::string, Tensor> v = maskedScoresValues({0, 0, low, low, 0, 0, 0, low, low, low, low, low});
  QuantPlan plan = calibrate(g, {interpret(g, v)}, false);
  EXPECT_TRUE(plan.of("x").masked);
  EXPECT_FLOAT_EQ(plan.of("x").scale, 2.0f / 127);
  EXPECT_FALSE(plan.of("s").masked);
  EXPECT_FLOAT_EQ(plan.of("s").scale, 3.0f / 127);
  EXPECT_FALSE(plan.of("p").masked);
  QuantWeights qw = quantizeWeights(g, plan, v);
  auto q = interpretQuantized(g, plan, qw, {{"a", quantizeValues(v.at("a").data, plan.of("a"))}}, {});
  const std::vector<int8_t>& x = q.at("x");
  EXPECT_EQ(std::vector<int8_t>(x.begin() + 2, x.begin() + 4), (std::vector<int8_t>{-128, -128}));
  EXPECT_EQ(x[7], -128);
  for (int i = 8; i < 12; ++i) EXPECT_EQ(x[static_cast<size_t>(i)], -128) << i;
  const float e0 = 1.0f / (1.0f + std::exp(-0.75f));  // row 0: softmax(0.5, -0.25)
  const float d1 = std::exp(0.25f) + std::exp(0.5f) + std::exp(-2.0f);
  const std::vector<float> want = {
      e0,    1 - e0, 0,     0,    std::exp(0.25f) / d1, std::exp(0.5f) / d1, std::exp(-2.0f) / d1, 0,
      0.25f, 0.25f,  0.25f, 0.25f};
  const std::vector<int8_t>& p = q.at("p");
  for (size_t i = 0; i < want.size(); ++i) {
    const float got = dequantised(p[i], plan.of("p"));
    EXPECT_NEAR(got, want[i], 3 * plan.of("p").scale) << i;
    if (want[i] == 0) {
      EXPECT_EQ(p[i], 0) << i;
    }
  }
  // The same mask of -inf, a constant: its scale from its finite values (1.0 from zeros), masked, so that
  // its -128 is -inf again and the sum's fill is -128 whatever the scores' range.
  const float inf = std::numeric_limits<float>::infinity();
  v["m"] = {{3, 4}, {0, 0, -inf, -inf, 0, 0, 0, -inf, -inf, -inf, -inf, -inf}};
  QuantPlan infinite = calibrate(g, {interpret(g, v)}, false);
  EXPECT_TRUE(infinite.of("m").masked);
  EXPECT_FLOAT_EQ(infinite.of("m").scale, 1.0f);
  EXPECT_TRUE(infinite.of("x").masked);
  EXPECT_FLOAT_EQ(infinite.of("x").scale, 2.0f / 127);
  // A fill of -1e4 over row 2 whole: the scores plus -1e4 do not tie (torch weighs them as the scores),
  // which a row of -128s cannot say: no mask, the scale is the fill's as before.
  v["m"] = {{3, 4}, {0, 0, -1e4f, -1e4f, 0, 0, 0, -1e4f, -1e4f, -1e4f, -1e4f, -1e4f}};
  QuantPlan untied = calibrate(g, {interpret(g, v)}, false);
  EXPECT_FALSE(untied.of("x").masked);
  EXPECT_FLOAT_EQ(untied.of("x").scale, (1e4f + 0.75f) / 127);  // -0.75 - 1e4, row 2
}

// The same mask added before a view (OPT and BART add the padding mask to [b, h, s, s], then view it as
// [b * h, s, s]): the sum and its view share one scale (a copy keeps the int8 values), both calibrate on
// the kept keys and are masked together, and the softmax weighs the rows as without the view. Where
// something off the chain also reads the view, neither is masked and both keep the fill's scale.
TEST(W4A8, AMaskAddedBeforeAViewIsMaskedWithIt) {
  const std::string head = std::string(kMaskedScores) +
                           "  - {name: view, op: reshape, inputs: [x], output: y, shape: [1, 3, 4]}\n"
                           "  - {name: sm, op: softmax, inputs: [y], output: p}\n";
  const float low = std::numeric_limits<float>::lowest();
  std::map<std::string, Tensor> v = maskedScoresValues({0, 0, low, low, 0, 0, 0, low, low, low, low, low});
  Graph g = parseGraph(head + "outputs: [p]\n", "t.yaml");
  QuantPlan plan = calibrate(g, {interpret(g, v)}, false);
  for (const char* t : {"x", "y"}) {
    EXPECT_TRUE(plan.of(t).masked) << t;
    EXPECT_FLOAT_EQ(plan.of(t).scale, 2.0f / 127) << t;
  }
  EXPECT_FALSE(plan.of("s").masked);
  QuantWeights qw = quantizeWeights(g, plan, v);
  auto q = interpretQuantized(g, plan, qw, {{"a", quantizeValues(v.at("a").data, plan.of("a"))}}, {});
  const float e0 = 1.0f / (1.0f + std::exp(-0.75f));  // row 0: softmax(0.5, -0.25)
  const float d1 = std::exp(0.25f) + std::exp(0.5f) + std::exp(-2.0f);
  const std::vector<float> want = {
      e0,    1 - e0, 0,     0,    std::exp(0.25f) / d1, std::exp(0.5f) / d1, std::exp(-2.0f) / d1, 0,
      0.25f, 0.25f,  0.25f, 0.25f};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(dequantised(q.at("p")[i], plan.of("p")), want[i], 3 * plan.of("p").scale) << i;
  Graph read =
      parseGraph(head + "  - {name: dbl, op: mul, inputs: [y, y], output: z}\noutputs: [p, z]\n", "t.yaml");
  QuantPlan off = calibrate(read, {interpret(read, v)}, false);
  for (const char* t : {"x", "y"}) {
    EXPECT_FALSE(off.of(t).masked) << t;
    EXPECT_FLOAT_EQ(off.of(t).scale, static_cast<float>(-static_cast<double>(low) / 127)) << t;
  }
}

// A row whose keys are all -inf is NaN in torch's softmax (torch.nan_to_num then zeroes it, as padded
// query rows of a causal mask of -inf come out); the quantised softmax gives it 0, not the even weights a
// row all filled with one finite value gets (the dtype's minimum, which torch weighs evenly).
TEST(W4A8, ARowOfMinusInfAloneIsZeroNotEven) {
  Graph g = parseGraph(
      std::string(kMaskedScores) + "  - {name: sm, op: softmax, inputs: [x], output: p}\noutputs: [p]\n",
      "t.yaml");
  const float inf = std::numeric_limits<float>::infinity(), low = std::numeric_limits<float>::lowest();
  std::map<std::string, Tensor> v =
      maskedScoresValues({-inf, -inf, -inf, -inf, 0, 0, 0, -inf, 0, 0, -inf, 0});
  for (float fill : {-inf, low}) {
    for (int i : {0, 1, 2, 3, 7, 10}) v["m"].data[static_cast<size_t>(i)] = fill;
    QuantPlan plan = calibrate(g, {interpret(g, v)}, false);
    ASSERT_TRUE(plan.of("x").masked);
    EXPECT_EQ(plan.of("x").nanRows, fill == -inf);
    QuantWeights qw = quantizeWeights(g, plan, v);
    auto q = interpretQuantized(g, plan, qw, {{"a", quantizeValues(v.at("a").data, plan.of("a"))}}, {});
    const std::vector<int8_t>& p = q.at("p");
    const int8_t even = st_q8(0.25f * plan.of("p").inverse);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(p[i], fill == -inf ? 0 : even) << i;
    // Row 1 keeps three keys, row 2 three: their weights sum to about 1 either way.
    for (size_t r = 1; r < 3; ++r) {
      float sum = 0;
      for (size_t i = 0; i < 4; ++i) sum += dequantised(p[r * 4 + i], plan.of("p"));
      EXPECT_NEAR(sum, 1.0f, 4 * plan.of("p").scale) << r;
    }
  }
}

// The emitted statistics kernel against the reference, bit for bit: rows.yaml's softmax stats task
// (4 rows of 512 int8 scores) compiled alone with g++ from the emitted source, fed seeded scores, and its
// maximum and sum compared with softmaxRowStats at the kernel's token width. (csim compares int8
// outputs, which could hide a difference in the sum's last bits; a wrong table, shift or lane shows here.)
TEST(W4A8, EmittedSoftmaxStatisticsEqualTheReferenceBitForBit) {
  std::string dir = ::testing::TempDir() + "softmax_bits";
  std::filesystem::remove_all(dir);
  std::string emit = std::string(STC_BINARY) +
                     " emit " STC_SOURCE_DIR "/models/graphs/rows.yaml --set quant=w4a8 -o " + dir +
                     " > /dev/null";
  ASSERT_EQ(std::system(emit.c_str()), 0);
  std::ifstream in(dir + "/src/rows_g0.cpp");
  std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = src.find("kernel softmax.stats");
  ASSERT_NE(at, std::string::npos);
  size_t nameAt = src.find("static void ", at) + 12;
  std::string name = src.substr(nameAt, src.find('(', nameAt) - nameAt);
  size_t scaleAt = src.find("q_max, ", src.find("st_softmax_stats(s_row", at));
  ASSERT_NE(scaleAt, std::string::npos);
  float scale = std::strtof(src.c_str() + scaleAt + 7, nullptr);
  ASSERT_GT(scale, 0.0f);
  std::vector<int8_t> q(4 * 512);
  uint32_t seed = 7;
  for (int8_t& v : q) v = static_cast<int8_t>((seed = seed * 1103515245u + 12345u) >> 24);
  std::ofstream(dir + "/scores.bin", std::ios::binary).write(reinterpret_cast<const char*>(q.data()), 2048);
  std::ofstream(dir + "/driver.cpp") << "#include \"rows_g0.cpp\"\n#include <cstdio>\n#include <cstring>\n"
                                        "template <typename F> struct Args;\n"
                                        "template <typename A, typename B> struct Args<void "
                                        "(*)(hls::stream<A>&, hls::stream<B>&)> { using In = A; };\n"
                                        "int main() {\n"
                                        "  using In = Args<decltype(&"
                                     << name
                                     << ")>::In;\n"
                                        "  const int T = sizeof(In::v) / sizeof(In::v[0]);\n"
                                        "  signed char q[2048];\n"
                                        "  FILE* f = std::fopen(\""
                                     << dir
                                     << "/scores.bin\", \"rb\");\n"
                                        "  if (!f || std::fread(q, 1, sizeof q, f) != sizeof q) return 1;\n"
                                        "  hls::stream<In> in(\"in\");\n"
                                        "  hls::stream<Tok<2>> out(\"out\");\n"
                                        "  for (int i = 0; i < 2048; i += T) { In t; for (int e = 0; e < T; "
                                        "++e) t.v[e] = q[i + e]; in.write(t); }\n"
                                        "  "
                                     << name
                                     << "(in, out);\n"
                                        "  std::printf(\"%d\\n\", T);\n"
                                        "  for (int r = 0; r < 4; ++r) {\n"
                                        "    Tok<2> s = out.read();\n"
                                        "    unsigned a, b;\n"
                                        "    std::memcpy(&a, &s.v[0], 4);\n"
                                        "    std::memcpy(&b, &s.v[1], 4);\n"
                                        "    std::printf(\"%u %u\\n\", a, b);\n"
                                        "  }\n"
                                        "}\n";
  std::string build = "g++ -std=c++14 -ffp-contract=off -Wno-unknown-pragmas -I" + dir + "/src -I" + dir +
                      "/csim " + dir + "/driver.cpp -o " + dir + "/driver";
  ASSERT_EQ(std::system(build.c_str()), 0);
  FILE* run = popen((dir + "/driver").c_str(), "r");
  ASSERT_NE(run, nullptr);
  int T = 0;
  ASSERT_EQ(std::fscanf(run, "%d", &T), 1);
  SoftmaxTable table = softmaxTable(scale);
  for (int r = 0; r < 4; ++r) {
    unsigned gotMax = 0, gotSum = 0;
    ASSERT_EQ(std::fscanf(run, "%u %u", &gotMax, &gotSum), 2);
    float max = 0, sum = 0;
    softmaxRowStats(q.data() + 512 * r, 512, T, table, scale, &max, &sum);
    unsigned wantMax = 0, wantSum = 0;
    std::memcpy(&wantMax, &max, 4);
    std::memcpy(&wantSum, &sum, 4);
    EXPECT_EQ(gotMax, wantMax) << "row " << r;
    EXPECT_EQ(gotSum, wantSum) << "row " << r << " (T " << T << ")";
  }
  EXPECT_EQ(pclose(run), 0);
  EXPECT_GT(T, 1);
}

}  // namespace
}  // namespace stc
