#include <gtest/gtest.h>

#include "compiler/ir/graph.h"
#include "compiler/ir/yaml_io.h"

namespace stc {
namespace {

const char* kMlp = R"(graph: mlp
inputs:
  - {name: x, shape: [seq, 64], dtype: f32}
weights:
  - {name: w1, shape: [64, 256], dtype: i4}
  - {name: w2, shape: [256, 64], dtype: i4}
ops:
  - {name: up, op: matmul, inputs: [x, w1], output: h}
  - {name: act, op: gelu, inputs: [h], output: g, approximate: tanh}
  - {name: down, op: matmul, inputs: [g, w2], output: y}
  - {name: norm, op: softmax, inputs: [y], output: z, axis: -1}
outputs: [z]
)";

TEST(Graph, ParsesAndRoundTrips) {
  Graph g = parseGraph(kMlp, "mlp.yaml");
  EXPECT_TRUE(verifyGraph(g).empty()) << verifyGraph(g).str();
  EXPECT_EQ(g.inputs[0].shape[0].str(), "seq");
  EXPECT_EQ(std::get<int64_t>(g.ops[3].attrs.at("axis")), -1);
  EXPECT_EQ(std::get<std::string>(g.ops[1].attrs.at("approximate")), "tanh");
  Graph again = parseGraph(emitGraph(g), "again.yaml");
  EXPECT_EQ(again, g);
}

TEST(Graph, ReportsEveryProblem) {
  std::string text = kMlp;
  text.replace(text.find("op: gelu"), 8, "op: gleu");
  text.replace(text.find("inputs: [g, w2]"), 15, "inputs: [q, w2]");
  Graph g = parseGraph(text, "mlp.yaml");
  Diagnostics d = verifyGraph(g);
  ASSERT_EQ(d.messages().size(), 2u);
  EXPECT_EQ(d.messages()[0], "mlp.yaml:9:5: error: field 'op': unsupported op 'gleu' in 'act'");
  EXPECT_EQ(d.messages()[1], "mlp.yaml:10:5: error: field 'inputs': op 'down' uses 'q', which is not defined before it");
}

// A weight of one value (`fill`) has its values known, as an ONNX initializer's are, and writes them back
// as `fill`; weights of other values the file does not carry. A fill the file cannot hold is refused at its
// line.
TEST(Graph, AFilledWeightKnowsItsValues) {
  std::string text = kMlp;
  text.replace(text.find("dtype: i4}"), 10, "dtype: i4, fill: -0.5}");
  Graph g = parseGraph(text, "mlp.yaml");
  ASSERT_EQ(g.values.count("w1"), 1u);
  EXPECT_EQ(g.values.at("w1"), std::vector<float>(64 * 256, -0.5f));
  EXPECT_EQ(g.values.count("w2"), 0u);
  std::string written = emitGraph(g);
  EXPECT_NE(written.find("{name: w1, shape: [64, 256], dtype: i4, fill: -0.5}"), std::string::npos)
      << written;
  Graph again = parseGraph(written, "again.yaml");
  EXPECT_EQ(again, g);
  EXPECT_EQ(again.values, g.values);
  g.values.at("w1")[7] = 1.0f;  // no longer one value: not written
  EXPECT_EQ(parseGraph(emitGraph(g), "again.yaml").values.count("w1"), 0u);

  auto error = [&](const std::string& from, const std::string& to) {
    std::string bad = kMlp;
    bad.replace(bad.find(from), from.size(), to);
    try {
      parseGraph(bad, "mlp.yaml");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("[256, 64], dtype: i4}", "[256, seq], dtype: i4, fill: 0}"),
            "mlp.yaml:6:52: error: field 'fill': needs a constant shape; dimension 'seq' is not");
  EXPECT_EQ(error("[256, 64], dtype: i4}", "[256, 64], dtype: i4, fill: zero}"),
            "mlp.yaml:6:51: error: field 'fill': expected a number, got 'zero'");
  EXPECT_EQ(error("[256, 64], dtype: i4}", "[256, 64], dtype: i4, fill: -inf}"),
            "mlp.yaml:6:51: error: field 'fill': expected a finite number, got '-inf'");
  // At most 2^24 elements in all the file's filled weights, counted without overflow (2^24 x 2^40 would
  // wrap to 0).
  EXPECT_EQ(error("[256, 64], dtype: i4}", "[16777216, 1099511627776], dtype: i4, fill: 0}"),
            "mlp.yaml:6:67: error: field 'fill': filled weights hold at most 16777216 elements in all");
  std::string two = kMlp;
  two.replace(two.find("[64, 256], dtype: i4}"), 21, "[4096, 4096], dtype: i4, fill: 1}");
  EXPECT_EQ(parseGraph(two, "mlp.yaml").values.at("w1").size(), 4096u * 4096u);
  two.replace(two.find("[256, 64], dtype: i4}"), 21, "[256, 64], dtype: i4, fill: 1}");
  try {
    parseGraph(two, "mlp.yaml");
    ADD_FAILURE() << "two filled weights over 2^24 elements in all";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "mlp.yaml:6:51: error: field 'fill': filled weights hold at most 16777216 elements in all");
  }
  EXPECT_EQ(error("[seq, 64], dtype: f32}", "[seq, 64], dtype: f32, fill: 0}"),
            "mlp.yaml:3:45: error: field 'fill': unknown field of a tensor (known: name, shape, dtype)");
}

}  // namespace
}  // namespace stc
