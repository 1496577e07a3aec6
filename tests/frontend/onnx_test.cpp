// The ONNX front end on models exported by torch.onnx.export (tools/export_onnx_models.py) and on
// hand-made bad files.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <map>

#include "compiler/frontend/onnx_import.h"
#include "compiler/pipeline.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/engine.h"

namespace stc {
namespace {

std::string model(const char* name) { return std::string(STC_SOURCE_DIR "/models/onnx/") + name; }

std::map<std::string, int> opCounts(const Graph& g) {
  std::map<std::string, int> counts;
  for (const auto& op : g.ops) ++counts[op.op];
  return counts;
}

TEST(Onnx, ExportedModelsCompileSizeAndSimulate) {
  for (const char* name : {"mlp.onnx", "gpt2_block.onnx", "llama_block.onnx"}) {
    for (const char* quant : {"quant=none", "quant=w4a8"}) {
      Graph g = importOnnx(model(name));
      EXPECT_TRUE(verifyGraph(g).empty()) << name;
      CompileResult r = compileGraph(g, defaultPlatform(), parseCompileOptions({quant}, defaultPlatform()));
      Bindings b = {{"seq", 8}};
      EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, b), {}).deadlock) << name;
      sizing::SizingOptions options;
      options.bindings = b;
      Network sized;
      sizing::SizingResult s = sizing::sizeFifos(r.network, options, sized);
      EXPECT_FALSE(s.trueDeadlock) << name;
      EXPECT_FALSE(sim::runDirect(sim::compileProgram(sized, b), {}).deadlock) << name;
    }
  }
}

TEST(Onnx, DecomposedPatternsBecomeOneOpEach) {
  auto mlp = opCounts(importOnnx(model("mlp.onnx")));  // GELU, erf form
  EXPECT_EQ(mlp["gelu"], 1);
  EXPECT_EQ(mlp["matmul"], 2);
  EXPECT_EQ(mlp.size(), 2u);
  auto gpt2 = opCounts(importOnnx(model("gpt2_block.onnx")));  // LayerNorm, GELU tanh form, Split
  EXPECT_EQ(gpt2["layernorm"], 2);
  EXPECT_EQ(gpt2["gelu"], 1);
  EXPECT_EQ(gpt2["slice"], 3);
  EXPECT_EQ(gpt2["tanh"], 0);
  EXPECT_EQ(gpt2["softmax"], 1);
  auto llama = opCounts(importOnnx(model("llama_block.onnx")));  // RMSNorm, rotate_half RoPE, SiLU
  EXPECT_EQ(llama["rmsnorm"], 2);
  EXPECT_EQ(llama["rope"], 2);
  EXPECT_EQ(llama["silu"], 1);
  EXPECT_EQ(llama["concat"], 0);
}

TEST(Onnx, ShapesDtypesAndSymbols) {
  Graph g = importOnnx(model("mlp.onnx"));
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].shape[0].str(), "seq");  // torch's dynamic axis
  EXPECT_EQ(g.inputs[0].shape[1].eval(), 32);
  EXPECT_EQ(g.inputs[0].dtype, "f32");
  int64_t params = 0;
  for (const auto& w : g.weights) {
    int64_t n = 1;
    for (const auto& d : w.shape) n *= d.eval();
    params += n;
  }
  EXPECT_EQ(params, 32 * 64 + 64 + 64 * 32 + 32);  // two Linear layers with biases
}

std::string errorOf(const std::string& path) {
  try {
    importOnnx(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

std::string writeModel(const onnx::ModelProto& m, const std::string& name) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

onnx::ModelProto tinyModel(int opset, const std::vector<std::string>& ops) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* in = g->add_input();
  in->set_name("x");
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(4);
  std::string prev = "x";
  for (size_t i = 0; i < ops.size(); ++i) {
    auto* n = g->add_node();
    n->set_op_type(ops[i]);
    n->set_name("node" + std::to_string(i));
    n->add_input(prev);
    prev = "v" + std::to_string(i);
    n->add_output(prev);
  }
  auto* out = g->add_output();
  out->set_name(prev);
  return m;
}

// A causal mask made the way exporters make it (a constant triangle, sliced) selects between a stream
// and a constant; a reduction over the last axis follows. Folding leaves one add and one reduce_sum.
TEST(Onnx, FoldsMaskArithmeticAndMapsReductions) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("masked");
  auto* in = g->add_input();
  in->set_name("x");
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {4, 8}) t->mutable_shape()->add_dim()->set_dim_value(d);
  auto constant = [&](const std::string& name, std::vector<int64_t> dims, std::vector<float> values, bool ints = false) {
    auto* c = g->add_initializer();
    c->set_name(name);
    for (auto d : dims) c->add_dims(d);
    if (ints) {
      c->set_data_type(onnx::TensorProto::INT64);
      for (float v : values) c->add_int64_data(static_cast<int64_t>(v));
    } else {
      c->set_data_type(onnx::TensorProto::FLOAT);
      for (float v : values) c->add_float_data(v);
    }
  };
  constant("ones", {8, 8}, std::vector<float>(64, 1.0f));
  constant("starts", {1}, {0}, true);
  constant("ends", {1}, {4}, true);
  constant("axes", {1}, {0}, true);
  constant("low", {}, {-1e4f});
  constant("reduce_axes", {1}, {-1}, true);
  auto node = [&](const std::string& op, std::vector<std::string> ins, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out + "_node");
    for (auto& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  };
  auto* tril = node("Trilu", {"ones"}, "tri");
  auto* upper = tril->add_attribute();
  upper->set_name("upper");
  upper->set_type(onnx::AttributeProto::INT);
  upper->set_i(0);
  node("Slice", {"tri", "starts", "ends", "axes"}, "mask");
  node("Where", {"mask", "x", "low"}, "masked");
  node("ReduceSum", {"masked", "reduce_axes"}, "total");
  auto* out = g->add_output();
  out->set_name("total");
  std::string path = writeModel(m, "masked.onnx");
  Graph graph = importOnnx(path);
  auto counts = opCounts(graph);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts["add"], 1);
  EXPECT_EQ(counts["reduce_sum"], 1);
  CompileResult r = compileGraph(graph, defaultPlatform(), parseCompileOptions({}, defaultPlatform()));
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {}), {}).deadlock);
}

TEST(Onnx, Errors) {
  std::string text = ::testing::TempDir() + "not.onnx";
  std::ofstream(text) << "graph: not onnx\n";
  EXPECT_EQ(errorOf(text), text + ": error: not an ONNX model (the file does not parse as an ONNX ModelProto)");
  std::string old = writeModel(tinyModel(11, {"Relu"}), "old.onnx");
  EXPECT_EQ(errorOf(old), old + ": error: opset 11 is outside the supported range 13 to 17 (export with opset_version=17)");
  std::string bad = writeModel(tinyModel(17, {"Relu", "Tanh", "Sin"}), "bad.onnx");
  EXPECT_EQ(errorOf(bad), bad + ": error: unsupported: 2 node(s):\n  node0 (Relu)\n  node2 (Sin)");
}

}  // namespace
}  // namespace stc
