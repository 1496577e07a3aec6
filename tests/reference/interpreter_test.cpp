// The reference interpreter against values worked out by hand.
#include "compiler/reference/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/yaml_io.h"

namespace stc {
namespace {

std::vector<float> run(const std::string& ops, const std::string& decls, const std::map<std::string, Tensor>& values,
                       const std::string& output) {
  Graph g = parseGraph("graph: t\n" + decls + "ops:\n" + ops + "outputs: [" + output + "]\n", "t.yaml");
  return interpret(g, values).at(output).data;
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Reference, MatmulWithBiasAndTransposedWeight) {
  std::string decls = "inputs: [{name: a, shape: [2, 2]}]\nweights: [{name: w, shape: [2, 2]}, {name: b, shape: [2]}]\n";
  std::map<std::string, Tensor> v = {{"a", {{2, 2}, {1, 2, 3, 4}}}, {"w", {{2, 2}, {5, 6, 7, 8}}}, {"b", {{2}, {1, -1}}}};
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]], plus [1, -1].
  expectNear(run("  - {name: m, op: matmul, inputs: [a, w, b], output: y}\n", decls, v, "y"), {20, 21, 44, 49});
  // With w read as [N, K]: [[1,2],[3,4]] x [[5,7],[6,8]] = [[17,23],[39,53]].
  expectNear(run("  - {name: m, op: matmul, inputs: [a, w], output: y, transpose_b: 1}\n", decls, v, "y"), {17, 23, 39, 53});
}

TEST(Reference, BroadcastingAndUnaryOps) {
  std::string decls = "inputs: [{name: x, shape: [2, 3]}]\nweights: [{name: r, shape: [3]}]\n";
  std::map<std::string, Tensor> v = {{"x", {{2, 3}, {0, 1, 2, 3, 4, 5}}}, {"r", {{3}, {10, 20, 30}}}};
  expectNear(run("  - {name: s, op: add, inputs: [x, r], output: y}\n", decls, v, "y"), {10, 21, 32, 13, 24, 35});
  expectNear(run("  - {name: s, op: div, inputs: [x, r], output: y}\n", decls, v, "y"), {0, 0.05f, 2.0f / 30, 0.3f, 0.2f, 5.0f / 30});
  std::map<std::string, Tensor> one = {{"x", {{2, 3}, {0, 1, -1, 0, 0, 0}}}, {"r", {{3}, {0, 0, 0}}}};
  auto gelu = run("  - {name: g, op: gelu, inputs: [x], output: y}\n", decls, one, "y");
  EXPECT_NEAR(gelu[1], 0.841344746f, 1e-6f);  // Phi(1) = 0.841344746
  EXPECT_NEAR(gelu[2], -0.158655254f, 1e-6f);
  auto geluTanh = run("  - {name: g, op: gelu, inputs: [x], output: y, approximate: tanh}\n", decls, one, "y");
  EXPECT_NEAR(geluTanh[1], 0.841191990f, 1e-6f);
  auto silu = run("  - {name: g, op: silu, inputs: [x], output: y}\n", decls, one, "y");
  EXPECT_NEAR(silu[1], 0.731058579f, 1e-6f);  // 1 / (1 + e^-1)
  auto relu = run("  - {name: g, op: relu, inputs: [x], output: y}\n", decls, one, "y");
  EXPECT_EQ(relu[1], 1.0f);
  EXPECT_EQ(relu[2], 0.0f);
  auto sigmoid = run("  - {name: g, op: sigmoid, inputs: [x], output: y}\n", decls, one, "y");
  EXPECT_NEAR(sigmoid[0], 0.5f, 1e-7f);
  EXPECT_NEAR(sigmoid[2], 0.268941421f, 1e-6f);  // 1 / (1 + e)
}

TEST(Reference, FunctionsAndComparisons) {
  std::string decls = "inputs: [{name: x, shape: [2, 3]}]\nweights: [{name: r, shape: [3]}]\n";
  std::map<std::string, Tensor> v = {{"x", {{2, 3}, {0, 1, -2, 4, 0.25f, -0.5f}}}, {"r", {{3}, {2, 0.5f, -1}}}};
  auto op = [&](const std::string& kind, bool binary) {
    return run("  - {name: f, op: " + kind + ", inputs: [x" + (binary ? ", r" : "") + "], output: y}\n", decls, v, "y");
  };
  // erf(1) = 0.842700793, erf(-2) = -0.995322265, erf(4) = 0.999999985, erf(0.25) = 0.276326390,
  // erf(-0.5) = -0.520499878.
  expectNear(op("erf", false), {0, 0.842700793f, -0.995322265f, 0.999999985f, 0.276326390f, -0.520499878f}, 1e-6f);
  auto root = op("sqrt", false);
  expectNear({root[0], root[1], root[3], root[4]}, {0, 1, 2, 0.5f});
  EXPECT_TRUE(std::isnan(root[2]));  // as torch: sqrt of a negative number
  auto inverse = op("reciprocal", false);
  EXPECT_EQ(inverse[0], INFINITY);
  expectNear({inverse.begin() + 1, inverse.end()}, {1, -0.5f, 0.25f, 4, -2});
  expectNear(op("abs", false), {0, 1, 2, 4, 0.25f, 0.5f});
  // x against r = [2, 0.5, -1] broadcast over the rows.
  expectNear(op("max", true), {2, 1, -1, 4, 0.5f, -0.5f});
  expectNear(op("min", true), {0, 0.5f, -2, 2, 0.25f, -1});
  // 0^2, 1^0.5, (-2)^-1, 4^2, 0.25^0.5, (-0.5)^-1
  expectNear(op("pow", true), {0, 1, -0.5f, 16, 0.5f, -2});  // NaN in either operand of max or min, or into relu, comes out NaN (torch.maximum, ONNX Max); std::fmax
  // would return the other operand.
  std::map<std::string, Tensor> nan = {{"x", {{2, 3}, {NAN, 1, -2, 4, NAN, -0.5f}}}, {"r", {{3}, {2, NAN, -1}}}};
  for (const char* kind : {"max", "min"}) {
    auto m = run(std::string("  - {name: f, op: ") + kind + ", inputs: [x, r], output: y}\n", decls, nan, "y");
    for (size_t i : {0, 1, 4}) EXPECT_TRUE(std::isnan(m[i])) << kind << " " << i;
    EXPECT_EQ(m[2], std::string(kind) == "max" ? -1.0f : -2.0f);
  }
  auto relu = run("  - {name: f, op: relu, inputs: [x], output: y}\n", decls, nan, "y");
  EXPECT_TRUE(std::isnan(relu[0]));
  expectNear({relu[1], relu[2], relu[3], relu[5]}, {1, 0, 4, 0});
}

// Functions that jump, as torch computes them: round goes half to even (torch.round(2.5) = 2,
// torch.round(-0.5) = -0), sign keeps 0 and NaN, fmod takes the dividend's sign (torch.fmod(-7, 2) = -1).
TEST(Reference, RoundingFunctions) {
  std::string decls = "inputs: [{name: x, shape: [2, 4]}]\nweights: [{name: r, shape: [4]}]\n";
  std::map<std::string, Tensor> v = {{"x", {{2, 4}, {2.5f, -0.5f, 1.75f, -7, 3.5f, 0, -1.25f, NAN}}},
                                     {"r", {{4}, {2, 0.75f, 0.5f, 2}}}};
  auto op = [&](const std::string& kind, bool binary) {
    return run("  - {name: f, op: " + kind + ", inputs: [x" + (binary ? ", r" : "") + "], output: y}\n",
               decls, v, "y");
  };
  auto first = [](const std::vector<float>& y) { return std::vector<float>(y.begin(), y.begin() + 7); };
  EXPECT_EQ(first(op("round", false)), (std::vector<float>{2, -0.0f, 2, -7, 4, 0, -1}));
  EXPECT_TRUE(std::signbit(op("round", false)[1]));
  EXPECT_EQ(first(op("floor", false)), (std::vector<float>{2, -1, 1, -7, 3, 0, -2}));
  EXPECT_EQ(first(op("ceil", false)), (std::vector<float>{3, -0.0f, 2, -7, 4, 0, -1}));
  auto sign = op("sign", false);
  EXPECT_EQ(first(sign), (std::vector<float>{1, -1, 1, -1, 1, 0, -1}));
  EXPECT_TRUE(std::isnan(sign[7]));
  // 2.5 mod 2, -0.5 mod 0.75, 1.75 mod 0.5, -7 mod 2; 3.5 mod 2, 0 mod 0.75, -1.25 mod 0.5.
  EXPECT_EQ(first(op("fmod", true)), (std::vector<float>{0.5f, -0.5f, 0.25f, -1, 1.5f, 0, -0.25f}));
}

// A causal softmax over scores [2 heads, 2 rows, 3 keys]: the 2 rows are the last 2 of 3 positions, so
// row 0 keeps keys 0..1 and row 1 all three; the masked key weighs exactly 0.
TEST(Reference, CausalSoftmaxKeepsTheKeysUpToItsRow) {
  std::string decls = "inputs: [{name: x, shape: [2, 2, 3]}]\n";
  float l2 = std::log(2.0f);
  std::map<std::string, Tensor> v = {{"x", {{2, 2, 3}, {0, l2, 9, 0, 0, l2, l2, 0, 5, 0, 0, 0}}}};
  auto p = run("  - {name: s, op: softmax, inputs: [x], output: y, causal: 1}\n", decls, v, "y");
  expectNear(p, {1.0f / 3, 2.0f / 3, 0, 0.25f, 0.25f, 0.5f, 2.0f / 3, 1.0f / 3, 0, 1.0f / 3, 1.0f / 3, 1.0f / 3}, 1e-6f);
  EXPECT_EQ(run("  - {name: s, op: softmax, inputs: [x], output: y, causal: true}\n", decls, v, "y"), p);
  try {  // anything else is refused, not read as "not causal"
    run("  - {name: s, op: softmax, inputs: [x], output: y, causal: yes}\n", decls, v, "y");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'causal': a softmax's causal mask is 1 or true, 0 or false"), std::string::npos)
        << e.what();
  }
  try {  // more rows than keys: a row would keep no key
    run("  - {name: s, op: softmax, inputs: [x], output: y, causal: 1}\n", "inputs: [{name: x, shape: [3, 2]}]\n",
        {{"x", {{3, 2}, {0, 0, 0, 0, 0, 0}}}}, "y");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("a causal softmax needs at least as many keys as rows, got [3, 2]"), std::string::npos)
        << e.what();
  }
}

TEST(Reference, RowOps) {
  std::string decls = "inputs: [{name: x, shape: [2, 2]}]\nweights: [{name: g, shape: [2]}, {name: b, shape: [2]}]\n";
  std::map<std::string, Tensor> v = {{"x", {{2, 2}, {0, std::log(2.0f), 3, 4}}}, {"g", {{2}, {1, 2}}}, {"b", {{2}, {0, 1}}}};
  auto soft = run("  - {name: s, op: softmax, inputs: [x], output: y, axis: -1}\n", decls, v, "y");
  EXPECT_NEAR(soft[0], 1.0f / 3, 1e-6f);  // e^0 : e^ln2 = 1 : 2
  EXPECT_NEAR(soft[1], 2.0f / 3, 1e-6f);
  // Row [3, 4]: mean 3.5, variance 0.25, normalised [-1, 1] (eps 1e-5), scaled [-1, 2], shifted [-1, 3].
  auto ln = run("  - {name: s, op: layernorm, inputs: [x, g, b], output: y}\n", decls, v, "y");
  EXPECT_NEAR(ln[2], -1.0f / std::sqrt(1 + 4e-5f), 1e-5f);
  EXPECT_NEAR(ln[3], 2.0f / std::sqrt(1 + 4e-5f) + 1, 1e-5f);
  // Row [3, 4]: root mean square sqrt(12.5); scaled by [1, 2].
  auto rms = run("  - {name: s, op: rmsnorm, inputs: [x, g], output: y}\n", decls, v, "y");
  EXPECT_NEAR(rms[2], 3 / std::sqrt(12.5f), 1e-5f);
  EXPECT_NEAR(rms[3], 8 / std::sqrt(12.5f), 1e-5f);
  expectNear(run("  - {name: s, op: reduce_sum, inputs: [x], output: y}\n", decls, v, "y"), {std::log(2.0f), 7});
  expectNear(run("  - {name: s, op: reduce_max, inputs: [x], output: y}\n", decls, v, "y"), {std::log(2.0f), 4});
  expectNear(run("  - {name: s, op: reduce_mean, inputs: [x], output: y}\n", decls, v, "y"), {std::log(2.0f) / 2, 3.5f});
  // Rope, D = 2: row 0 (position 0) unchanged; row 1 rotated by 1 radian.
  auto rope = run("  - {name: s, op: rope, inputs: [x], output: y}\n", decls, v, "y");
  EXPECT_NEAR(rope[0], 0, 1e-6f);
  EXPECT_NEAR(rope[2], 3 * std::cos(1.0f) - 4 * std::sin(1.0f), 1e-5f);
  EXPECT_NEAR(rope[3], 4 * std::cos(1.0f) + 3 * std::sin(1.0f), 1e-5f);
  // Per head of 2 (head_dim) at position ctx + row (offset: a decoded token after ctx cached ones): the
  // row [3, 4, 5, 6] at ctx = 3 rotates (3, 4) and (5, 6) each by 3 radians.
  Graph g = parseGraph(
      "graph: t\ninputs: [{name: x, shape: [1, 4]}]\nops:\n"
      "  - {name: s, op: rope, inputs: [x], output: y, head_dim: 2, offset: ctx}\noutputs: [y]\n",
      "t.yaml");
  auto heads = interpret(g, {{"x", {{1, 4}, {3, 4, 5, 6}}}}, {{"ctx", 3}}).at("y").data;
  expectNear(heads, {3 * std::cos(3.0f) - 4 * std::sin(3.0f), 4 * std::cos(3.0f) + 3 * std::sin(3.0f),
                     5 * std::cos(3.0f) - 6 * std::sin(3.0f), 6 * std::cos(3.0f) + 5 * std::sin(3.0f)});
  // Another base (theta) changes every pair but the first: D = 4 at position 1, pair 1 turns by
  // 100^(-2/4) = 0.1 radian.
  Graph based = parseGraph(
      "graph: t\ninputs: [{name: x, shape: [2, 4]}]\nops:\n"
      "  - {name: s, op: rope, inputs: [x], output: y, theta: 100}\noutputs: [y]\n",
      "t.yaml");
  auto turned = interpret(based, {{"x", {{2, 4}, {0, 0, 0, 0, 3, 4, 5, 6}}}}).at("y").data;
  expectNear({turned[4], turned[5], turned[6], turned[7]},
             {3 * std::cos(1.0f) - 5 * std::sin(1.0f), 4 * std::cos(0.1f) - 6 * std::sin(0.1f),
              5 * std::cos(1.0f) + 3 * std::sin(1.0f), 6 * std::cos(0.1f) + 4 * std::sin(0.1f)});
  try {  // a base of 1 or less is refused by name
    interpret(parseGraph("graph: t\ninputs: [{name: x, shape: [2, 4]}]\nops:\n"
                         "  - {name: s, op: rope, inputs: [x], output: y, theta: 0}\noutputs: [y]\n",
                         "t.yaml"),
              {{"x", {{2, 4}, {0, 0, 0, 0, 3, 4, 5, 6}}}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'theta': rope's base is a number above 1"), std::string::npos)
        << e.what();
  }
}

TEST(Reference, DataMovement) {
  std::string decls = "inputs: [{name: x, shape: [2, 3]}, {name: ids, shape: [2], dtype: i32}]\n"
                      "weights: [{name: t, shape: [3, 2]}]\n";
  std::map<std::string, Tensor> v = {{"x", {{2, 3}, {1, 2, 3, 4, 5, 6}}}, {"ids", {{2}, {2, 0}}},
                                     {"t", {{3, 2}, {10, 11, 20, 21, 30, 31}}}};
  expectNear(run("  - {name: s, op: transpose, inputs: [x], output: y, perm: [1, 0]}\n", decls, v, "y"), {1, 4, 2, 5, 3, 6});
  expectNear(run("  - {name: s, op: slice, inputs: [x], output: y, axis: 1, start: 1, end: 3}\n", decls, v, "y"), {2, 3, 5, 6});
  expectNear(run("  - {name: s, op: concat, inputs: [x, x], output: y, axis: 1}\n", decls, v, "y"),
             {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  expectNear(run("  - {name: s, op: embedding, inputs: [ids, t], output: y}\n", decls, v, "y"), {30, 31, 10, 11});
  expectNear(run("  - {name: s, op: reshape, inputs: [x], output: y, shape: [3, 2]}\n", decls, v, "y"), {1, 2, 3, 4, 5, 6});
}

// kv_append: a cache of 2 heads with room for one more position takes the new row [1, 2 * X] there.
TEST(Reference, KvAppendFillsTheCachesLastPosition) {
  std::string decls = "inputs: [{name: k, shape: [2, 2, 3]}, {name: v, shape: [2, 3, 2]}, {name: r, shape: [1, 4]}, "
                      "{name: flat, shape: [4]}]\n";
  std::map<std::string, Tensor> vals = {{"k", {{2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}},
                                        {"v", {{2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}},
                                        {"r", {{1, 4}, {-1, -2, -3, -4}}}, {"flat", {{4}, {0, 0, 0, 0}}}};
  // K [head, dim, position]: position 2 of head h, dim d takes r[h * 2 + d].
  expectNear(run("  - {name: a, op: kv_append, inputs: [k, r], output: y, axis: 2}\n", decls, vals, "y"),
             {1, 2, -1, 4, 5, -2, 7, 8, -3, 10, 11, -4});
  // V [head, position, dim]: position 2 of head h is r[h * 2 .. h * 2 + 1].
  expectNear(run("  - {name: a, op: kv_append, inputs: [v, r], output: y, axis: 1}\n", decls, vals, "y"),
             {1, 2, 3, 4, -1, -2, 7, 8, 9, 10, -3, -4});
  for (const auto& [op, message] : std::vector<std::pair<std::string, std::string>>{
           {"  - {name: a, op: kv_append, inputs: [k, r], output: y, axis: 0}\n",
            "t.yaml:4:5: error: op 'a' (kv_append): axis 0 must be 1 or 2 (a cache position)"},
           {"  - {name: a, op: kv_append, inputs: [r, r], output: y, axis: 1}\n",
            "t.yaml:4:5: error: op 'a' (kv_append): the cache must be [heads, A, B], got [1, 4]"},
           {"  - {name: a, op: kv_append, inputs: [v, k], output: y, axis: 1}\n",
            "t.yaml:4:5: error: op 'a' (kv_append): the new row must be [1, 4] (heads times 2), got [2, 2, 3]"},
           {"  - {name: a, op: kv_append, inputs: [k, flat], output: y, axis: 2}\n",
            "t.yaml:4:5: error: op 'a' (kv_append): the new row must be [1, 4] (heads times 2), got [4]"}}) {
    try {
      run(op, decls, vals, "y");
      ADD_FAILURE() << op;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

TEST(Reference, Errors) {
  std::string decls = "inputs: [{name: x, shape: [2, 3]}]\n";
  try {
    run("  - {name: s, op: exp, inputs: [x], output: y}\n", decls, {}, "y");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "t.yaml:2:10: error: no value for 'x'");
  }
  try {
    run("  - {name: s, op: exp, inputs: [x], output: y}\n", decls, {{"x", {{2, 3}, {1, 2}}}}, "y");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "t.yaml:2:10: error: the value of 'x' has 2 elements, its shape [2, 3] needs 6");
  }
}

}  // namespace
}  // namespace stc
