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

}  // namespace
}  // namespace stc
