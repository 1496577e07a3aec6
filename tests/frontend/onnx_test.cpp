// The ONNX front end on models exported by torch.onnx.export (tools/export_onnx_models.py) and on
// hand-made bad files.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/lower/kernels.h"
#include "compiler/pipeline.h"
#include "compiler/reference/interpreter.h"
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

// The GPT-2 block's second residual add reads the first residual and the MLP's output in one stage, so
// the residual's FIFO holds its tokens until the MLP's first one arrives: sized under the stage-group rule
// it is 32 deep, and 31 deadlocks with the add waiting on the MLP (a depth that revision 1 let pass).
// At lane II 1: at the II the search picks now (8) the MLP's add lags by more and the sizer's 32 has room.
TEST(Onnx, ResidualJoinSizedForTheStageGroupRule) {
  Graph g = importOnnx(model("gpt2_block.onnx"));
  CompileResult r = compileGraph(g, defaultPlatform(), parseCompileOptions({"lane_ii=1"}, defaultPlatform()));
  Network sized;
  sizing::SizingResult s = sizing::sizeFifos(r.network, {}, sized);
  ASSERT_FALSE(s.trueDeadlock);
  int f = sized.findFifo("/Add_output_0>_Add_3");
  ASSERT_GE(f, 0);
  EXPECT_EQ(sized.fifos[static_cast<size_t>(f)].depth, 32);
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(sized, {}), {}).deadlock);
  sized.fifos[static_cast<size_t>(f)].depth = 31;
  sim::SimResult d = sim::runDirect(sim::compileProgram(sized, {}), {});
  ASSERT_TRUE(d.deadlock);
  ASSERT_GE(d.deadlockCycle.size(), 2u);
  EXPECT_EQ(d.fifos[static_cast<size_t>(d.deadlockCycle[0].fifo)].name, "/Add_output_0>_Add_3");
  EXPECT_EQ(d.tasks[static_cast<size_t>(d.deadlockCycle[1].task)].name, "_Add_3");
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

// The f32 initializers of a model file, read with the protobuf API alone (not through the importer).
std::map<std::string, Tensor> floatInitializers(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
  std::map<std::string, Tensor> out;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT) continue;
    Tensor& v = out[t.name()];
    v.shape.assign(t.dims().begin(), t.dims().end());
    if (t.has_raw_data()) {
      v.data.resize(t.raw_data().size() / sizeof(float));
      std::memcpy(v.data.data(), t.raw_data().data(), v.data.size() * sizeof(float));
    } else {
      v.data.assign(t.float_data().begin(), t.float_data().end());
    }
  }
  return out;
}

int64_t elements(const TensorDecl& t) {
  int64_t n = 1;
  for (const auto& d : t.shape) n *= d.eval();
  return n;
}

// Every weight has values that fill its shape; a weight that is an initializer has the initializer's data.
TEST(Onnx, WeightsKeepTheirValues) {
  for (const char* name : {"mlp.onnx", "gpt2_block.onnx", "llama_block.onnx"}) {
    Graph g = importOnnx(model(name));
    std::map<std::string, Tensor> initializers = floatInitializers(model(name));
    int fromInitializers = 0;
    EXPECT_EQ(g.values.size(), g.weights.size()) << name;
    for (const auto& w : g.weights) {
      ASSERT_TRUE(g.values.count(w.name)) << name << ": " << w.name;
      const std::vector<float>& v = g.values.at(w.name);
      EXPECT_EQ(static_cast<int64_t>(v.size()), elements(w)) << name << ": " << w.name;
      auto it = initializers.find(w.name);
      if (it == initializers.end()) continue;
      ++fromInitializers;
      EXPECT_EQ(v, it->second.data) << name << ": " << w.name;
      std::vector<int64_t> shape;
      for (const auto& d : w.shape) shape.push_back(d.eval());
      EXPECT_EQ(shape, it->second.shape) << name << ": " << w.name;
    }
    EXPECT_GE(fromInitializers, 2) << name;  // at least one Linear's weight and bias
  }
}

// The imported MLP run by the reference interpreter on its own weights gives what loops over the
// initializers give: down(gelu(up(x))), torch's Linear being x W^T + b.
TEST(Onnx, InterpretedMlpMatchesLoopsOverInitializers) {
  Graph g = importOnnx(model("mlp.onnx"));
  std::map<std::string, Tensor> init = floatInitializers(model("mlp.onnx"));
  const int64_t rows = 3, d = 32, f = 64;
  ASSERT_EQ(init.at("up.weight").shape, (std::vector<int64_t>{f, d}));
  ASSERT_EQ(init.at("down.weight").shape, (std::vector<int64_t>{d, f}));
  Tensor x{{rows, d}, {}};
  for (int64_t i = 0; i < rows * d; ++i) x.data.push_back(std::sin(0.37f * static_cast<float>(i)));
  std::map<std::string, Tensor> values = {{g.inputs[0].name, x}};
  for (const auto& [name, v] : g.values) values[name] = Tensor{{}, v};
  std::map<std::string, Tensor> result = interpret(g, values, {{"seq", rows}});
  const Tensor& y = result.at(g.outputs.at(0));
  ASSERT_EQ(y.shape, (std::vector<int64_t>{rows, d}));

  auto linear = [](const std::vector<double>& in, const Tensor& w, const Tensor& b) {
    int64_t outs = w.shape[0], ins = w.shape[1];
    std::vector<double> out;
    for (int64_t o = 0; o < outs; ++o) {
      double acc = b.data[static_cast<size_t>(o)];
      for (int64_t i = 0; i < ins; ++i)
        acc += in[static_cast<size_t>(i)] * w.data[static_cast<size_t>(o * ins + i)];
      out.push_back(acc);
    }
    return out;
  };
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row(x.data.begin() + r * d, x.data.begin() + (r + 1) * d);
    std::vector<double> h = linear(row, init.at("up.weight"), init.at("up.bias"));
    for (double& v : h) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    std::vector<double> expected = linear(h, init.at("down.weight"), init.at("down.bias"));
    for (int64_t c = 0; c < d; ++c)
      EXPECT_NEAR(y.data[static_cast<size_t>(r * d + c)], expected[static_cast<size_t>(c)], 1e-5)
          << r << "," << c;
  }
}

std::string errorOf(const std::string& path, const std::map<std::string, int64_t>& dims = {}) {
  try {
    importOnnx(path, dims);
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

// A model of `opset` whose graph `name` has one f32 input x of shape `dims`.
onnx::ModelProto modelWithInput(int opset, const std::string& name, const std::vector<int64_t>& dims) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name(name);
  auto* in = g->add_input();
  in->set_name("x");
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  return m;
}

// Dimension `dim` of the model's first input made dynamic, named `axis` (an exporter's dynamic_axes).
void makeDynamic(onnx::ModelProto& m, int dim, const std::string& axis) {
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(dim)
      ->set_dim_param(axis);
}

// Node `op` reading `ins` and making `out`, named out_node.
onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& ins,
                         const std::string& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out + "_node");
  for (const auto& i : ins) n->add_input(i);
  n->add_output(out);
  return n;
}

// An initializer of `g` (a model's graph or a branch's): `name`, of shape `dims` (none: a scalar), holding
// `values` as FLOAT, or as INT64 where `type` says (integers are exact up to 2^53).
onnx::TensorProto* addInitializer(onnx::GraphProto* g, const std::string& name,
                                  const std::vector<int64_t>& dims, const std::vector<double>& values,
                                  onnx::TensorProto::DataType type = onnx::TensorProto::FLOAT) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (double v : values) {
    if (type == onnx::TensorProto::INT64)
      t->add_int64_data(static_cast<int64_t>(v));
    else
      t->add_float_data(static_cast<float>(v));
  }
  return t;
}

// A 4 x 4 softmax output against a softmax in double of scores(row, key) along each row (`byColumn`: along
// each column), the maximum subtracted first, so that keys tied at the dtype's minimum or at -inf weigh as
// torch weighs them.
void expectSoftmaxOf(const std::vector<float>& probs, const std::function<double(size_t, size_t)>& scores,
                     const std::string& what, bool byColumn = false) {
  ASSERT_EQ(probs.size(), 16u) << what;
  for (size_t a = 0; a < 4; ++a) {
    auto at = [&](size_t b) { return byColumn ? scores(b, a) : scores(a, b); };
    double top = -std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t b = 0; b < 4; ++b) top = std::max(top, at(b));
    for (size_t b = 0; b < 4; ++b) sum += std::exp(at(b) - top);
    for (size_t b = 0; b < 4; ++b)
      EXPECT_NEAR(probs[byColumn ? b * 4 + a : a * 4 + b], std::exp(at(b) - top) / sum, 1e-6)
          << what << ": " << a << "," << b;
  }
}

// A reduction over the last axis (keepdims as ONNX's default keeps it): the node, its `axes` set to -1.
void meanOverLastAxis(onnx::NodeProto* n) {
  auto* a = n->add_attribute();
  a->set_name("axes");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(-1);
}

// A Cast of `from` to bool, named `to`: a mask as torch exports it.
void castToBool(onnx::GraphProto* g, const std::string& from, const std::string& to) {
  onnx::AttributeProto* type = addNode(g, "Cast", {from}, to)->add_attribute();
  type->set_name("to");
  type->set_type(onnx::AttributeProto::INT);
  type->set_i(onnx::TensorProto::BOOL);
}

// stc's interpreter on g against torch's output for torch's input: `io` holds the input, then the output
// of the same size (raw little-endian f32, NAME.io.bin as the exporter writes it), within 1e-5 + 1e-4 |y|.
void expectTorchOutput(const Graph& g, const std::string& io, const Bindings& bindings = {}) {
  // Every input of the graph in order (x, then a cache's past_k and past_v), then y.
  std::string bytes;
  {
    std::ifstream f(io, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_EQ(bytes.size() % 4, 0u) << io;
  std::map<std::string, Tensor> values;
  size_t at = 0;
  for (const TensorDecl& input : g.inputs) {
    std::vector<int64_t> shape;
    for (const auto& d : input.shape) shape.push_back(d.eval(bindings));
    const size_t n = static_cast<size_t>(elementCount(shape));
    ASSERT_GT(bytes.size(), at + 4 * n) << io;  // the inputs, then y (of the output's size)
    std::vector<float> x(n);
    std::memcpy(x.data(), bytes.data() + at, 4 * n);
    values[input.name] = Tensor{shape, x};
    at += 4 * n;
  }
  std::vector<float> y((bytes.size() - at) / 4);
  std::memcpy(y.data(), bytes.data() + at, 4 * y.size());
  for (const auto& [weight, v] : g.values) values[weight] = Tensor{{}, v};
  std::vector<float> got = interpret(g, values, bindings).at(g.outputs.at(0)).data;
  ASSERT_EQ(got.size(), y.size()) << io;
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(got[i], y[i], 1e-5 + 1e-4 * std::fabs(y[i])) << io << " element " << i;
}

onnx::ModelProto tinyModel(int opset, const std::vector<std::string>& ops) {
  onnx::ModelProto m = modelWithInput(opset, "tiny", {4});
  onnx::GraphProto* g = m.mutable_graph();
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
  onnx::ModelProto m = modelWithInput(14, "masked", {4, 8});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "ones", {8, 8}, std::vector<double>(64, 1.0));
  addInitializer(g, "starts", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "ends", {1}, {4}, onnx::TensorProto::INT64);
  addInitializer(g, "axes", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "low", {}, {-1e4f});
  addInitializer(g, "reduce_axes", {1}, {-1}, onnx::TensorProto::INT64);
  auto* tril = addNode(g, "Trilu", {"ones"}, "tri");
  auto* upper = tril->add_attribute();
  upper->set_name("upper");
  upper->set_type(onnx::AttributeProto::INT);
  upper->set_i(0);
  addNode(g, "Slice", {"tri", "starts", "ends", "axes"}, "mask");
  addNode(g, "Where", {"mask", "x", "low"}, "masked");
  addNode(g, "Softmax", {"masked"}, "probs");
  addNode(g, "ReduceSum", {"probs", "reduce_axes"}, "total");
  auto* out = g->add_output();
  out->set_name("total");
  std::string path = writeModel(m, "masked.onnx");
  Graph graph = importOnnx(path);
  auto counts = opCounts(graph);
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts["add"], 1);
  EXPECT_EQ(counts["softmax"], 1);
  EXPECT_EQ(counts["reduce_sum"], 1);
  // The select before the softmax became an add of a folded constant: 0 where the mask keeps x, the low
  // value elsewhere. (Not a causal mask: 4 rows over 8 keys keep key j <= row + 4, this one j <= row.)
  ASSERT_EQ(graph.weights.size(), 1u);
  const std::vector<float>& bias = graph.values.at(graph.weights[0].name);
  ASSERT_EQ(bias.size(), 32u);
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 8; ++j) EXPECT_EQ(bias[i * 8 + j], j <= i ? 0.0f : -1e4f) << i << "," << j;
  CompileResult r = compileGraph(graph, defaultPlatform(), parseCompileOptions({}, defaultPlatform()));
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {}), {}).deadlock);
  // Summed without the softmax, adding -1e4 is not the select: it is the select itself, select(x, c) +
  // select(low, c == 0) with c the folded mask, which gives x where the mask keeps it and -1e4 elsewhere,
  // exactly.
  g->mutable_node()->DeleteSubrange(g->node_size() - 2, 1);
  g->mutable_node(g->node_size() - 1)->set_input(0, "masked");
  std::string bare = writeModel(m, "masked_sum.onnx");
  Graph selected = importOnnx(bare);
  std::map<std::string, int> want = {{"select", 2}, {"equal", 1}, {"add", 1}, {"reduce_sum", 1}};
  EXPECT_EQ(opCounts(selected), want);
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 3.0f;
  std::map<std::string, Tensor> values = {{selected.inputs.at(0).name, Tensor{{4, 8}, x}}};
  for (const auto& [weight, v] : selected.values) values[weight] = Tensor{{}, v};
  std::vector<float> total = interpret(selected, values).at(selected.outputs.at(0)).data;
  ASSERT_EQ(total.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    float sum = 0;
    for (size_t j = 0; j < 8; ++j) sum += j <= i ? x[i * 8 + j] : -1e4f;
    EXPECT_EQ(total[i], sum) << i;
  }
}

// The tanh GELU written with its 0.5 * x computed apart and read again (h * (1 + tanh(..)) + h, as torch
// exports it when it merges two equal 0.5 * x), and with its inner sum read again: the GELU fuses where its
// nodes are its own, the shared node stays an op, and the values are the formula's. Before, the pattern
// took the shared node and the import stopped ("uses '..', which is not defined before it").
TEST(Onnx, APatternsNodeReadElsewhereStaysAnOp) {
  for (bool inner : {false, true}) {
    SCOPED_TRACE(inner ? "inner sum read again" : "0.5 * x read again");
    onnx::ModelProto m = modelWithInput(17, "gelu_shared", {2, 16});
    onnx::GraphProto* g = m.mutable_graph();
    for (auto [name, value] : std::vector<std::pair<const char*, float>>{
             {"half_c", 0.5f}, {"three", 3.0f}, {"k", 0.044715f}, {"c", 0.7978845608f}, {"one", 1.0f}})
      addInitializer(g, name, {}, {value});
    addNode(g, "Mul", {"x", "half_c"}, "h");
    addNode(g, "Pow", {"x", "three"}, "cube");
    addNode(g, "Mul", {"cube", "k"}, "cube_k");
    addNode(g, "Add", {"x", "cube_k"}, "inner");
    addNode(g, "Mul", {"inner", "c"}, "scaled");
    addNode(g, "Tanh", {"scaled"}, "t");
    addNode(g, "Add", {"t", "one"}, "t1");
    addNode(g, "Mul", {"h", "t1"}, "gelu");
    addNode(g, "Add", {"gelu", inner ? "inner" : "h"}, "y");
    g->add_output()->set_name("y");
    Graph graph = importOnnx(writeModel(m, inner ? "gelu_inner.onnx" : "gelu_half.onnx"));
    std::map<std::string, int> counts = opCounts(graph);
    if (inner) {
      EXPECT_EQ(counts.count("gelu"), 0u);  // its inner sum is read elsewhere: the ops stay
      EXPECT_EQ(counts["tanh"], 1);
    } else {
      std::map<std::string, int> want = {{"mul", 1}, {"gelu", 1}, {"add", 1}};
      EXPECT_EQ(counts, want);
    }
    std::vector<float> x(32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.2f * static_cast<float>(i) - 3.0f;
    std::map<std::string, Tensor> values = {{"x", Tensor{{2, 16}, x}}};
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    std::vector<float> y = interpret(graph, values).at("y").data;
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      double v = x[i], in = v + 0.044715 * v * v * v;
      double want = 0.5 * v * (1 + std::tanh(0.7978845608 * in)) + (inner ? in : 0.5 * v);
      EXPECT_NEAR(y[i], want, 1e-5) << i;
    }
  }
}

// A softmax over another axis than the last (softmax(dim=-2), or dim 0): a transpose swapping it with the
// last, the softmax, and the same swap back; the values are the formula's over that axis.
TEST(Onnx, ASoftmaxOverAnotherAxisSwapsItLast) {
  for (int64_t axis : {0, -2}) {
    SCOPED_TRACE(axis);
    onnx::ModelProto m = modelWithInput(17, "softmax_axis", {3, 4, 5});
    onnx::GraphProto* g = m.mutable_graph();
    auto* a = addNode(g, "Softmax", {"x"}, "y")->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
    g->add_output()->set_name("y");
    Graph graph = importOnnx(writeModel(m, "softmax_axis.onnx"));
    std::map<std::string, int> want = {{"transpose", 2}, {"softmax", 1}};
    EXPECT_EQ(opCounts(graph), want);
    std::vector<float> x(60);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>((i * 7) % 23) - 1.0f;
    std::vector<float> y = interpret(graph, {{"x", Tensor{{3, 4, 5}, x}}}).at("y").data;
    ASSERT_EQ(y.size(), x.size());
    const size_t dims[3] = {3, 4, 5}, strides[3] = {20, 5, 1},
                 along = axis < 0 ? static_cast<size_t>(axis + 3) : 0;
    for (size_t i = 0; i < x.size(); ++i) {  // over the entries of i's line along the axis
      size_t start = i - (i / strides[along] % dims[along]) * strides[along];
      double sum = 0;
      for (size_t k = 0; k < dims[along]; ++k)
        sum += std::exp(static_cast<double>(x[start + k * strides[along]]));
      EXPECT_NEAR(y[i], std::exp(static_cast<double>(x[i])) / sum, 1e-6) << i;
    }
  }
}

// An If whose condition folds (x's first dim is 2) takes its then-branch in its place. The branch holds
// an initializer under the graph's own name (c, 10 against 1), which ONNX lets a subgraph shadow: inlined,
// it takes a name of its own, and y = (x + 1) + (x + 10).
TEST(Onnx, AnIfWhoseConditionFoldsTakesItsBranch) {
  onnx::ModelProto m = modelWithInput(17, "if_shadow", {2, 16});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "c", {}, {1});
  addInitializer(g, "zero", {}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "two", {}, {2}, onnx::TensorProto::INT64);
  addNode(g, "Add", {"x", "c"}, "y1");
  addNode(g, "Shape", {"x"}, "sh");
  addNode(g, "Gather", {"sh", "zero"}, "d0");
  addNode(g, "Equal", {"d0", "two"}, "cond");
  onnx::NodeProto* branch = addNode(g, "If", {"cond"}, "f");
  auto* then = branch->add_attribute();
  then->set_name("then_branch");
  then->set_type(onnx::AttributeProto::GRAPH);
  addInitializer(then->mutable_g(), "c", {}, {10});
  addNode(then->mutable_g(), "Add", {"x", "c"}, "t");
  then->mutable_g()->add_output()->set_name("t");
  auto* otherwise = branch->add_attribute();
  otherwise->set_name("else_branch");
  otherwise->set_type(onnx::AttributeProto::GRAPH);
  addNode(otherwise->mutable_g(), "Identity", {"x"}, "e");
  otherwise->mutable_g()->add_output()->set_name("e");
  addNode(g, "Add", {"y1", "f"}, "y");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  Graph graph = importOnnx(writeModel(m, "if_shadow.onnx"));
  std::map<std::string, int> want = {{"add", 3}};
  EXPECT_EQ(opCounts(graph), want);
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 16}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], 2 * x[i] + 11) << i;
}

// x * (1 + erf(x / sqrt 2)) times 0.5 is the GELU; times 3 it is not, and stays ops that compute it
// (the pattern took any last product for the 0.5 before).
TEST(Onnx, TheErfGeluNeedsItsHalf) {
  for (float factor : {0.5f, 3.0f}) {
    SCOPED_TRACE(factor);
    onnx::ModelProto m = modelWithInput(17, "erf_times", {2, 16});
    onnx::GraphProto* g = m.mutable_graph();
    for (auto [name, value] : std::vector<std::pair<const char*, float>>{
             {"sqrt2", 1.41421356f}, {"one", 1.0f}, {"factor", factor}})
      addInitializer(g, name, {}, {value});
    addNode(g, "Div", {"x", "sqrt2"}, "d");
    addNode(g, "Erf", {"d"}, "e");
    addNode(g, "Add", {"e", "one"}, "a");
    addNode(g, "Mul", {"a", "x"}, "m1");
    addNode(g, "Mul", {"m1", "factor"}, "y");
    g->add_output()->set_name("y");
    Graph graph = importOnnx(writeModel(m, "erf_times.onnx"));
    EXPECT_EQ(opCounts(graph).count("gelu"), factor == 0.5f ? 1u : 0u);
    std::vector<float> x(32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 4.0f;
    std::map<std::string, Tensor> values = {{"x", Tensor{{2, 16}, x}}};
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], factor * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0))), 1e-5) << i;
  }
}

// Gemm is alpha * A B + beta * C (torch.addmm(c, a, b, beta=0.5, alpha=2)): the factors fold into the
// constant B and C, whose values they scale; they were ignored. A LayerNormalization over the axes from
// -2 on (several) is refused by name, not taken over the last alone.
TEST(Onnx, GemmScalesAndLayerNormAxes) {
  onnx::ModelProto m = modelWithInput(17, "gemm", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<float> b(12), c = {0.5f, -1.0f, 2.0f};
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(i) - 0.4f;
  addInitializer(g, "b", {4, 3}, std::vector<double>(b.begin(), b.end()));
  addInitializer(g, "c", {3}, std::vector<double>(c.begin(), c.end()));
  onnx::NodeProto* gemm = addNode(g, "Gemm", {"x", "b", "c"}, "y");
  for (auto [name, value] : std::vector<std::pair<const char*, float>>{{"alpha", 2.0f}, {"beta", 0.5f}}) {
    auto* a = gemm->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "gemm_scaled.onnx"));
  std::vector<float> x = {1, -2, 0.5f, 3, -1, 0.25f, 2, -0.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}};
  for (const auto& w : graph.weights) {
    std::vector<int64_t> shape;
    for (const Expr& e : w.shape) shape.push_back(e.eval());
    values[w.name] = Tensor{shape, graph.values.at(w.name)};
  }
  std::vector<float> y = interpret(graph, values).at("y").data;
  ASSERT_EQ(y.size(), 6u);
  for (size_t r = 0; r < 2; ++r)
    for (size_t j = 0; j < 3; ++j) {
      double dot = 0;
      for (size_t k = 0; k < 4; ++k) dot += static_cast<double>(x[r * 4 + k]) * b[k * 3 + j];
      EXPECT_NEAR(y[r * 3 + j], 2 * dot + 0.5 * c[j], 1e-5) << r << "," << j;
    }

  onnx::ModelProto ln = modelWithInput(17, "ln", {2, 4, 8});
  g = ln.mutable_graph();
  addInitializer(g, "scale", {8}, std::vector<double>(8, 1.0));
  auto* axis = addNode(g, "LayerNormalization", {"x", "scale"}, "n")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-2);
  g->add_output()->set_name("n");
  try {
    importOnnx(writeModel(ln, "ln_axes.onnx"));
    ADD_FAILURE() << "a LayerNormalization over two axes imported";
  } catch (const UserError& e) {
    EXPECT_NE(
        std::string(e.what()).find("n_node (LayerNormalization over the axes from -2, not the last alone)"),
        std::string::npos)
        << e.what();
  }
}

// Flatten is a view; LeakyRelu max(x, alpha x); HardSigmoid max(0, min(1, alpha x + beta)); HardSwish x
// times HardSigmoid at 1/6 and 1/2 (ONNX's definitions): each was refused by name.
TEST(Onnx, LeakyReluHardSigmoidHardSwishAndFlatten) {
  onnx::ModelProto m = modelWithInput(17, "acts", {2, 2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  auto attr = [](onnx::NodeProto* n, const char* name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  };
  addNode(g, "Flatten", {"x"}, "flat");  // axis 1: [2, 8]
  attr(addNode(g, "LeakyRelu", {"flat"}, "leaky"), "alpha", 0.1f);
  addNode(g, "HardSwish", {"leaky"}, "swish");
  onnx::NodeProto* hs = addNode(g, "HardSigmoid", {"flat"}, "hsig");
  attr(hs, "alpha", 0.25f);
  attr(hs, "beta", 0.4f);
  addNode(g, "Add", {"swish", "hsig"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "acts.onnx"));
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.75f * static_cast<float>(i) - 6.0f;
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 2, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at("y").data;
  ASSERT_EQ(y.size(), x.size());
  EXPECT_EQ(graph.outputs.size(), 1u);
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i], leaky = v >= 0 ? v : 0.1 * v;
    double swish = leaky * std::max(0.0, std::min(1.0, leaky / 6 + 0.5));
    double hsig = std::max(0.0, std::min(1.0, 0.25 * v + 0.4));
    EXPECT_NEAR(y[i], swish + hsig, 1e-5) << i;
  }
}

// masked_fill with 0 (or any value above -1e4) before a softmax sets the masked scores to that value,
// which adding a constant cannot stand for (with 0 it added nothing, and the softmax was unmasked): a
// select on data. Each row of the probabilities is exp over x where j <= i and exp(0) elsewhere.
TEST(Onnx, AFillOfZeroBeforeASoftmaxIsASelect) {
  onnx::ModelProto m = modelWithInput(14, "masked", {4, 8});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "ones", {4, 8}, std::vector<double>(32, 1.0));
  addInitializer(g, "zero", {}, {0});
  addInitializer(g, "one", {}, {1}, onnx::TensorProto::INT64);
  auto* triu = addNode(g, "Trilu", {"ones", "one"}, "above");  // torch.triu(.., 1): the keys masked
  auto* k = triu->add_attribute();
  k->set_name("upper");
  k->set_type(onnx::AttributeProto::INT);
  k->set_i(1);
  castToBool(g, "above", "mask");
  addNode(g, "Where", {"mask", "zero", "x"}, "filled");
  addNode(g, "Softmax", {"filled"}, "probs");
  g->add_output()->set_name("probs");
  Graph graph = importOnnx(writeModel(m, "fill_zero.onnx"));
  std::map<std::string, int> want = {{"select", 2}, {"equal", 1}, {"add", 1}, {"softmax", 1}};
  EXPECT_EQ(opCounts(graph), want);
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.3f * static_cast<float>(i % 7) - 1.0f;
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{4, 8}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> probs = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(probs.size(), 32u);
  for (size_t i = 0; i < 4; ++i) {
    double sum = 0;
    for (size_t j = 0; j < 8; ++j) sum += std::exp(j <= i ? x[i * 8 + j] : 0.0);
    for (size_t j = 0; j < 8; ++j)
      EXPECT_NEAR(probs[i * 8 + j], std::exp(j <= i ? x[i * 8 + j] : 0.0) / sum, 1e-6) << i << "," << j;
  }
}

// A fill of -1e4 before a softmax is an added constant only where every row keeps a score: a row masked
// whole (left padding: torch weighs its keys evenly, the constant alone) makes it a select. An added
// mask with more rows than keys (queries against pooled keys, triu(1 + K - R) of the dtype's minimum) is
// no causal softmax (it keeps no key in rows 0 .. R - K - 1, which it weighs evenly too). EyeLike
// (torch.eye in a mask) folds from its input's shape. Every weight here worked by hand.
TEST(Onnx, RowsMaskedWholeWeighTheirKeysEvenly) {
  onnx::ModelProto m = modelWithInput(17, "masked_rows", {4, 3});
  onnx::GraphProto* g = m.mutable_graph();
  const std::vector<double> padded = {1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};  // rows 0 and 3 masked whole
  addInitializer(g, "padded", {4, 3}, padded);
  addInitializer(g, "fill", {}, {-1e4});
  castToBool(g, "padded", "mask");
  addNode(g, "Where", {"mask", "fill", "x"}, "filled");
  addNode(g, "Softmax", {"filled"}, "probs");
  const double low = -3.4028234663852886e38;  // finfo(float32).min; row i keeps keys j <= i + K - R = i - 1
  addInitializer(g, "bottom_right", {4, 3}, {low, low, low, 0, low, low, 0, 0, low, 0, 0, 0});
  addNode(g, "Add", {"x", "bottom_right"}, "scores");
  addNode(g, "Softmax", {"scores"}, "right");
  addNode(g, "EyeLike", {"x"}, "eye");  // ones at (i, i) of [4, 3]
  addNode(g, "Add", {"x", "eye"}, "diag");
  g->add_output()->set_name("probs");
  g->add_output()->set_name("right");
  g->add_output()->set_name("diag");
  Graph graph = importOnnx(writeModel(m, "masked_rows.onnx"));
  int causal = 0;
  for (const auto& op : graph.ops) causal += isCausal(op);
  EXPECT_EQ(causal, 0);
  EXPECT_GT(opCounts(graph)["select"], 0);  // (an added constant before)
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f, 1.0f, 1.5f, -2.0f, -3.0f, 0.75f, 1.25f};
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{4, 3}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  std::vector<float> probs = out.at(graph.outputs.at(0)).data, right = out.at(graph.outputs.at(1)).data,
                     diag = out.at(graph.outputs.at(2)).data;
  ASSERT_EQ(probs.size(), 12u);
  ASSERT_EQ(right.size(), 12u);
  ASSERT_EQ(diag.size(), 12u);
  for (size_t i = 0; i < 4; ++i) {
    bool whole = padded[i * 3] != 0 && padded[i * 3 + 1] != 0 && padded[i * 3 + 2] != 0;
    auto weight = [&](size_t j) {  // exp(-1e4) is 0 in any float; a row all at -1e4 is even
      return whole ? 1.0 : padded[i * 3 + j] != 0 ? 0.0 : std::exp(static_cast<double>(x[i * 3 + j]));
    };
    auto kept = [&](size_t j) {
      return i == 0 ? 1.0 : j < i ? std::exp(static_cast<double>(x[i * 3 + j])) : 0.0;
    };
    double sum = 0, keptSum = 0;
    for (size_t j = 0; j < 3; ++j) {
      sum += weight(j);
      keptSum += kept(j);
    }
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_NEAR(probs[i * 3 + j], weight(j) / sum, 1e-6) << i << "," << j;
      EXPECT_NEAR(right[i * 3 + j], kept(j) / keptSum, 1e-6) << i << "," << j;
      EXPECT_FLOAT_EQ(diag[i * 3 + j], x[i * 3 + j] + (i == j ? 1.0f : 0.0f)) << i << "," << j;
    }
  }
}

// A causal fill of the dtype's minimum after a padding mask of the same minimum was added (Hugging Face's
// extended attention mask, then masked_fill(triu(1), min)): the padded rows' kept keys hold the minimum too
// (x + min rounds to min in f32), so every key of those rows ties and torch weighs them evenly, filled ones
// included. That is no causal softmax (it weighed the kept keys alone): the fill is a select there. A bias
// that leaves each row a key above -1e3 (ALiBi's) keeps the causal softmax. Worked by hand.
TEST(Onnx, AFillAfterAnAddedPaddingMaskIsNoCausalSoftmax) {
  onnx::ModelProto m = modelWithInput(17, "padded_then_causal", {4, 4});
  onnx::GraphProto* g = m.mutable_graph();
  const double low = -3.4028234663852886e38;            // finfo(float32).min
  addInitializer(g, "padding", {4}, {low, low, 0, 0});  // keys 0 and 1 padded: rows 0 and 1 keep no other
  addInitializer(g, "alibi", {4}, {-3, -2, -1, 0});
  addInitializer(g, "fill", {}, {low});
  std::vector<double> future;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) future.push_back(j > i ? 1 : 0);
  addInitializer(g, "future", {4, 4}, future);
  castToBool(g, "future", "triu");
  addNode(g, "Add", {"x", "padding"}, "padded");
  addNode(g, "Where", {"triu", "fill", "padded"}, "filled");
  addNode(g, "Softmax", {"filled"}, "probs");
  addNode(g, "Add", {"x", "alibi"}, "biased");
  addNode(g, "Where", {"triu", "fill", "biased"}, "causal");
  addNode(g, "Softmax", {"causal"}, "alibi_probs");
  g->add_output()->set_name("probs");
  g->add_output()->set_name("alibi_probs");
  Graph graph = importOnnx(writeModel(m, "padded_then_causal.onnx"));
  int causal = 0;
  for (const auto& op : graph.ops) causal += isCausal(op);
  EXPECT_EQ(causal, 1);  // the ALiBi softmax alone
  std::vector<float> x = {0.5f,  -1.0f, 2.0f,  0.25f, 3.0f, -0.5f, 1.0f,  1.5f,
                          -2.0f, -3.0f, 0.75f, 1.25f, 0.1f, 0.2f,  -0.3f, 0.4f};
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{4, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  std::vector<float> probs = out.at(graph.outputs.at(0)).data, alibi = out.at(graph.outputs.at(1)).data;
  ASSERT_EQ(probs.size(), 16u);
  ASSERT_EQ(alibi.size(), 16u);
  const double bias[4] = {-3, -2, -1, 0};
  for (size_t i = 0; i < 4; ++i) {
    // Rows 0 and 1: every key at the minimum, even. Rows 2 and 3: keys 2 .. i, as exp(x).
    auto weight = [&](size_t j) {
      return i < 2 ? 1.0 : j >= 2 && j <= i ? std::exp(static_cast<double>(x[i * 4 + j])) : 0.0;
    };
    auto kept = [&](size_t j) {
      return j <= i ? std::exp(static_cast<double>(x[i * 4 + j]) + bias[j]) : 0.0;
    };
    double sum = 0, keptSum = 0;
    for (size_t j = 0; j < 4; ++j) {
      sum += weight(j);
      keptSum += kept(j);
    }
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_NEAR(probs[i * 4 + j], weight(j) / sum, 1e-6) << i << "," << j;
      EXPECT_NEAR(alibi[i * 4 + j], kept(j) / keptSum, 1e-6) << i << "," << j;
    }
  }
}

// Hugging Face's causal mask before 4.31, as Llama and OPT apply it: the [R, K] triangle of 0 and the
// dtype's minimum expanded per batch ([2, 1, 4, 4] here), added to the scores, the sum clamped by
// torch.max(w, finfo.min); OPT then views [b, h, R, K] as [b * h, R, K] for the softmax. The clamp changes
// no kept score and no dropped key's weight (0 either way), and the view keeps every row's keys: both are
// causal softmaxes, the clamp and the addition gone. A clamp at -1e4 would lift a kept score below it: that
// softmax keeps its mask, as does one whose second batch also pads key 0. Each row's weights worked in
// double, the keys past it 0.
TEST(Onnx, ACausalMaskClampedAtTheLowestFloatOrViewedIsACausalSoftmax) {
  onnx::ModelProto m = modelWithInput(17, "clamped_causal", {2, 3, 4, 4});
  onnx::GraphProto* g = m.mutable_graph();
  const double low = -3.4028234663852886e38;  // finfo(float32).min
  std::vector<double> mask;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) mask.push_back(j > i ? low : 0);
  addInitializer(g, "mask", {2, 1, 4, 4}, mask);
  addInitializer(g, "lowest", {}, {low});
  addInitializer(g, "floor", {}, {-1e4});
  addInitializer(g, "heads_merged", {3}, {6, 4, 4}, onnx::TensorProto::INT64);
  addNode(g, "Add", {"x", "mask"}, "llama_masked");
  addNode(g, "Max", {"llama_masked", "lowest"}, "llama_clamped");
  addNode(g, "Softmax", {"llama_clamped"}, "llama_probs");
  addNode(g, "Add", {"mask", "x"}, "opt_masked");
  addNode(g, "Max", {"lowest", "opt_masked"}, "opt_clamped");
  addNode(g, "Reshape", {"opt_clamped", "heads_merged"}, "opt_viewed");
  addNode(g, "Softmax", {"opt_viewed"}, "opt_probs");
  addNode(g, "Add", {"x", "mask"}, "floor_masked");
  addNode(g, "Max", {"floor_masked", "floor"}, "floor_clamped");
  addNode(g, "Softmax", {"floor_clamped"}, "floor_probs");
  // A mask whose second batch also pads key 0 away is no causal triangle in every batch: it stays a mask,
  // and so does its clamp.
  std::vector<double> padded = mask;
  for (int i = 0; i < 4; ++i) padded[static_cast<size_t>(16 + i * 4)] = low;
  addInitializer(g, "padded", {2, 1, 4, 4}, padded);
  addNode(g, "Add", {"x", "padded"}, "padded_masked");
  addNode(g, "Max", {"padded_masked", "lowest"}, "padded_clamped");
  addNode(g, "Softmax", {"padded_clamped"}, "padded_probs");
  for (const char* out : {"llama_probs", "opt_probs", "floor_probs", "padded_probs"})
    g->add_output()->set_name(out);
  Graph graph = importOnnx(writeModel(m, "clamped_causal.onnx"));
  int causal = 0, maxima = 0;
  for (const auto& op : graph.ops) {
    causal += isCausal(op);
    maxima += op.op == "max";
  }
  EXPECT_EQ(causal, 2);
  EXPECT_EQ(maxima, 2);  // the clamp at -1e4 and the padded mask's
  std::vector<float> x(96);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) * 3);
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{2, 3, 4, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  for (size_t o = 0; o < 4; ++o) {
    const std::vector<float>& probs = out.at(graph.outputs.at(o)).data;
    ASSERT_EQ(probs.size(), 96u) << o;
    for (size_t r = 0; r < 24; ++r) {  // (batch, head, row)
      size_t i = r % 4;
      // The padded mask's second batch keeps keys 1 .. i; its row 0 keeps none: every key clamped to the
      // minimum, tied, weighed evenly.
      size_t first = o == 3 && r >= 12 ? 1 : 0;
      double sum = 0;
      for (size_t j = first; j <= i; ++j) sum += std::exp(static_cast<double>(x[r * 4 + j]));
      for (size_t j = 0; j < 4; ++j) {
        double want = first > i              ? 0.25
                      : j >= first && j <= i ? std::exp(static_cast<double>(x[r * 4 + j])) / sum
                                             : 0.0;
        EXPECT_NEAR(probs[r * 4 + j], want, 1e-6) << o << ": " << r << "," << j;
      }
    }
  }
}

// Bloom's scores: alibi.baddbmm(q, k^T) adds the ALiBi bias [b * h, 1, K] to the scores [b * h, R, K], views
// the sum as [b, h, R, K] and fills the keys past each row with the dtype's minimum. The view keeps every
// row's keys where they were, so the bias added before it lines up with the fill's keys: each row keeps a
// key above -1e3 and the fill is a causal softmax (the bias stays an add). The same with a padding of the
// minimum added to key 0 of the last head (b 1, h 2) alone: that head's row 0 then keeps no key above
// -1e3, every key ties at the minimum and torch weighs them evenly, so the fill stays a select; laid out
// wrongly, the padding would meet another head's keys. A third: 2,000 added to key 0 of batch 1's heads
// (bh 3 to 5) before the view and a padding of -2,500 on key 0 of batch 1 ([2, 1, 1, 4]) after it: key 0
// sums to -500 there, above -1e3, so every row keeps a key and the fill is a causal softmax; laid out
// wrongly (the padding's batch dim taken for heads), some row 0 would keep only -2,500. Each row's weights
// worked in double.
TEST(Onnx, ABiasAddedBeforeAViewThatKeepsRowsLinesUpWithTheFill) {
  onnx::ModelProto m = modelWithInput(17, "bloom_alibi", {6, 4, 4});
  onnx::GraphProto* g = m.mutable_graph();
  const double low = -3.4028234663852886e38;  // finfo(float32).min
  std::vector<double> alibi, padded;
  for (int bh = 0; bh < 6; ++bh)
    for (int j = 0; j < 4; ++j) {
      alibi.push_back(-0.5 * (bh % 3 + 1) * (3 - j));
      padded.push_back(bh == 5 && j == 0 ? low : 0);
    }
  addInitializer(g, "alibi", {6, 1, 4}, alibi);
  addInitializer(g, "padding", {6, 1, 4}, padded);
  addInitializer(g, "heads", {4}, {2, 3, 4, 4}, onnx::TensorProto::INT64);
  std::vector<double> future;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) future.push_back(j > i ? 1 : 0);
  addInitializer(g, "future_f", {4, 4}, future);
  castToBool(g, "future_f", "future");
  addInitializer(g, "fill", {}, {low});
  addNode(g, "Add", {"x", "alibi"}, "biased");
  addNode(g, "Reshape", {"biased", "heads"}, "viewed");
  addNode(g, "Where", {"future", "fill", "viewed"}, "filled");
  addNode(g, "Softmax", {"filled"}, "probs");
  addNode(g, "Add", {"padding", "x"}, "padded");
  addNode(g, "Reshape", {"padded", "heads"}, "padded_viewed");
  addNode(g, "Where", {"future", "fill", "padded_viewed"}, "padded_filled");
  addNode(g, "Softmax", {"padded_filled"}, "padded_probs");
  std::vector<double> lift(24, 0.0), pad(8, 0.0);
  for (int bh = 3; bh < 6; ++bh) lift[static_cast<size_t>(bh * 4)] = 2000;
  pad[4] = -2500;
  addInitializer(g, "lift", {6, 1, 4}, lift);
  addInitializer(g, "pad", {2, 1, 1, 4}, pad);
  addNode(g, "Add", {"x", "lift"}, "lifted");
  addNode(g, "Reshape", {"lifted", "heads"}, "lifted_viewed");
  addNode(g, "Add", {"lifted_viewed", "pad"}, "lifted_padded");
  addNode(g, "Where", {"future", "fill", "lifted_padded"}, "lifted_filled");
  addNode(g, "Softmax", {"lifted_filled"}, "lifted_probs");
  g->add_output()->set_name("probs");
  g->add_output()->set_name("padded_probs");
  g->add_output()->set_name("lifted_probs");
  Graph graph = importOnnx(writeModel(m, "bloom_alibi.onnx"));
  int causal = 0, adds = 0, selects = 0;
  for (const auto& op : graph.ops) {
    causal += isCausal(op);
    adds += op.op == "add";
    selects += op.op == "select";
  }
  EXPECT_EQ(causal, 2);
  EXPECT_EQ(adds, 5);  // bias; padding and the padded fill's select on data (two selects' sum); lift, pad
  EXPECT_EQ(selects, 2);
  std::vector<float> x(96);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::cos(0.9 * static_cast<double>(i)) * 2);
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{6, 4, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  for (size_t o = 0; o < 3; ++o) {
    const std::vector<float>& probs = out.at(graph.outputs.at(o)).data;
    ASSERT_EQ(probs.size(), 96u) << o;
    for (size_t r = 0; r < 24; ++r) {  // (batch * head, row)
      size_t bh = r / 4, i = r % 4;
      auto score = [&](size_t j) {
        return static_cast<double>(x[r * 4 + j]) + (o == 0   ? alibi[bh * 4 + j]
                                                    : o == 2 ? lift[bh * 4 + j] + pad[(bh / 3) * 4 + j]
                                                             : 0);
      };
      // Padded: the last head's keys 1 .. i; its row 0 keeps none and weighs all four evenly.
      size_t first = o == 1 && bh == 5 ? 1 : 0;
      double sum = 0;
      for (size_t j = first; j <= i; ++j) sum += std::exp(score(j));
      for (size_t j = 0; j < 4; ++j) {
        double want = first > i ? 0.25 : j >= first && j <= i ? std::exp(score(j)) / sum : 0.0;
        EXPECT_NEAR(probs[r * 4 + j], want, 1e-6) << o << ": " << r << "," << j;
      }
    }
  }
}

// A view of a view is one view of the first's input, and none where the shape comes back (OPT's scores
// viewed as [b, h, R, K] and back, its mask gone between): x [6, 4, 4] viewed as [2, 3, 4, 4] and back reads
// x itself; viewed as [2, 3, 16] then [6, 16], one view; a view that something else reads too stays, and
// the view of it with it. Three reshapes in all; every output x's values, in its order, through a Relu.
TEST(Onnx, ViewsOfViewsMerge) {
  onnx::ModelProto m = modelWithInput(17, "views", {6, 4, 4});
  onnx::GraphProto* g = m.mutable_graph();
  auto shape = [&](const std::string& name, const std::vector<double>& dims) {
    addInitializer(g, name, {static_cast<int64_t>(dims.size())}, dims, onnx::TensorProto::INT64);
  };
  shape("batch_heads", {2, 3, 4, 4});
  shape("merged", {6, 4, 4});
  shape("rows", {2, 3, 16});
  shape("flat", {6, 16});
  shape("wide", {2, 12, 4});
  addNode(g, "Reshape", {"x", "batch_heads"}, "v1");
  addNode(g, "Reshape", {"v1", "merged"}, "back");
  addNode(g, "Relu", {"back"}, "y1");
  addNode(g, "Reshape", {"x", "rows"}, "w1");
  addNode(g, "Reshape", {"w1", "flat"}, "w2");
  addNode(g, "Relu", {"w2"}, "y2");
  addNode(g, "Reshape", {"x", "wide"}, "u1");
  addNode(g, "Relu", {"u1"}, "y3");
  addNode(g, "Reshape", {"u1", "merged"}, "u2");
  addNode(g, "Relu", {"u2"}, "y4");
  for (const char* out : {"y1", "y2", "y3", "y4"}) g->add_output()->set_name(out);
  Graph graph = importOnnx(writeModel(m, "views.onnx"));
  int reshapes = 0;
  for (const auto& op : graph.ops) reshapes += op.op == "reshape";
  EXPECT_EQ(reshapes, 3);
  std::vector<float> x(96);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<double>(i % 7) - 3.0);
  auto out = interpret(graph, {{graph.inputs.at(0).name, Tensor{{6, 4, 4}, x}}});
  const std::vector<std::vector<int64_t>> shapes = {{6, 4, 4}, {6, 16}, {2, 12, 4}, {6, 4, 4}};
  for (size_t o = 0; o < 4; ++o) {
    const Tensor& y = out.at(graph.outputs.at(o));
    EXPECT_EQ(y.shape, shapes[o]) << o;
    ASSERT_EQ(y.data.size(), x.size()) << o;
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y.data[i], std::max(x[i], 0.0f)) << o << ": " << i;
  }
}

// Fills stacked before a softmax: the padded keys filled with the dtype's minimum, then the causal fill of
// the same minimum (rows 0 and 1 keep only padded keys: every key ties at the minimum, torch weighs them
// evenly); an inner fill whose condition is data (x > 0.4 fills row 0's one kept key); an inner fill of
// -1e4 on key 3 alone, which leaves every row a kept key and so keeps the causal softmax. Each softmax is
// checked against a softmax in double of the rows built by hand.
TEST(Onnx, StackedFillsAreACausalSoftmaxOnlyWhereEachRowKeepsAKey) {
  onnx::ModelProto m = modelWithInput(17, "stacked_fills", {4, 4});
  onnx::GraphProto* g = m.mutable_graph();
  const double low = -3.4028234663852886e38;  // finfo(float32).min
  std::vector<double> future;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) future.push_back(j > i ? 1 : 0);
  addInitializer(g, "future_f", {4, 4}, future);
  addInitializer(g, "padded_f", {4}, {1, 1, 0, 0});
  addInitializer(g, "last_f", {4}, {0, 0, 0, 1});
  for (const char* mask : {"future", "padded", "last"}) castToBool(g, std::string(mask) + "_f", mask);
  addInitializer(g, "fill", {}, {low});
  addInitializer(g, "far", {}, {-1e4});
  addInitializer(g, "cut", {}, {0.4});
  addNode(g, "Where", {"padded", "fill", "x"}, "pad_filled");
  addNode(g, "Where", {"future", "fill", "pad_filled"}, "both");
  addNode(g, "Softmax", {"both"}, "padded_probs");
  addNode(g, "Greater", {"x", "cut"}, "high");
  addNode(g, "Where", {"high", "fill", "x"}, "data_filled");
  addNode(g, "Where", {"future", "fill", "data_filled"}, "data_both");
  addNode(g, "Softmax", {"data_both"}, "data_probs");
  addNode(g, "Where", {"last", "far", "x"}, "last_filled");
  addNode(g, "Where", {"future", "fill", "last_filled"}, "last_both");
  addNode(g, "Softmax", {"last_both"}, "last_probs");
  for (const char* out : {"padded_probs", "data_probs", "last_probs"}) g->add_output()->set_name(out);
  Graph graph = importOnnx(writeModel(m, "stacked_fills.onnx"));
  int causal = 0;
  for (const auto& op : graph.ops) causal += isCausal(op);
  EXPECT_EQ(causal, 1);  // the last alone
  std::vector<float> x = {0.5f,  -1.0f, 2.0f,  0.25f, 3.0f, -0.5f, 1.0f,  1.5f,
                          -2.0f, -3.0f, 0.75f, 1.25f, 0.1f, 0.2f,  -0.3f, 0.4f};
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{4, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  // The scores each softmax reads, by hand; `low` ties with `low` (max subtracted first).
  auto scores = [&](int which, size_t i, size_t j) {
    double s = x[i * 4 + j];
    if (j > i) return low;
    if (which == 0 && j < 2) return low;
    if (which == 1 && s > 0.4f) return low;
    if (which == 2 && j == 3) return -1e4;
    return s;
  };
  for (int which = 0; which < 3; ++which) {
    expectSoftmaxOf(
        out.at(graph.outputs.at(static_cast<size_t>(which))).data,
        [&](size_t i, size_t j) { return scores(which, i, j); }, std::to_string(which));
  }
}

// A fill before a causal mask of -inf, and a padding mask of the dtype's minimum after one (keys 0 and 1
// padded). Padded keys filled with -1e4, then the causal fill: rows 0 and 1 keep only padded keys, all at
// -1e4, which torch weighs evenly; the causal softmax must read the fill as a select there, not as -1e4
// added to the scores. The causal fill of -inf first, then the padding mask of min added: the future keys
// stay at -inf (weight 0) and the padded past ones round to min (x + min is min in f32), so row 0 weighs key
// 0 alone and row 1 keys 0 and 1 evenly (an -inf taken as -FLT_MAX spread them over the future keys too).
// Checked against a softmax in double of the rows built by hand.
TEST(Onnx, MasksOfMinimaAndInfinitiesKeepTheirTies) {
  onnx::ModelProto m = modelWithInput(17, "min_and_inf", {4, 4});
  onnx::GraphProto* g = m.mutable_graph();
  const double low = -3.4028234663852886e38, inf = std::numeric_limits<double>::infinity();
  std::vector<double> future;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) future.push_back(j > i ? 1 : 0);
  addInitializer(g, "future_f", {4, 4}, future);
  addInitializer(g, "padded_f", {4}, {1, 1, 0, 0});
  for (const char* mask : {"future", "padded"}) castToBool(g, std::string(mask) + "_f", mask);
  addInitializer(g, "far", {}, {-1e4});
  addInitializer(g, "minus_inf", {}, {-inf});
  addInitializer(g, "padding", {4}, {low, low, 0, 0});
  addNode(g, "Where", {"padded", "far", "x"}, "pad_filled");
  addNode(g, "Where", {"future", "minus_inf", "pad_filled"}, "then_causal");
  addNode(g, "Softmax", {"then_causal"}, "fill_probs");
  addNode(g, "Where", {"future", "minus_inf", "x"}, "causal_first");
  addNode(g, "Add", {"causal_first", "padding"}, "then_padding");
  addNode(g, "Softmax", {"then_padding"}, "add_probs");
  for (const char* out : {"fill_probs", "add_probs"}) g->add_output()->set_name(out);
  Graph graph = importOnnx(writeModel(m, "min_and_inf.onnx"));
  int causal = 0;
  for (const auto& op : graph.ops) causal += isCausal(op);
  EXPECT_EQ(causal, 1);  // the first
  std::vector<float> x = {0.5f,  -1.0f, 2.0f,  0.25f, 3.0f, -0.5f, 1.0f,  1.5f,
                          -2.0f, -3.0f, 0.75f, 1.25f, 0.1f, 0.2f,  -0.3f, 0.4f};
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{4, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  auto scores = [&](int which, size_t i, size_t j) {
    if (j > i) return -inf;
    if (j < 2) return which == 0 ? -1e4 : low;
    return static_cast<double>(x[i * 4 + j]);
  };
  for (int which = 0; which < 2; ++which) {
    expectSoftmaxOf(
        out.at(graph.outputs.at(static_cast<size_t>(which))).data,
        [&](size_t i, size_t j) { return scores(which, i, j); }, std::to_string(which));
  }
}

// Fills a bias cannot stand for (from a second reading): a padded key selected to 0 and then -1e4 added,
// under a causal fill of -1e4 (rows 0 and 1 hold -1e4 at every key: torch weighs them evenly); a key
// selected to 1e5 and then filled with -1e4 (the fill sets it: weight ~0, where 1e5 - 1e4 would take every
// weight); a fill before a softmax over the first axis (its column 0 is -1e4 throughout: even), whose rows
// are not the ones checked. Each is a select: no causal softmax, values from a softmax in double of the
// rows built by hand.
TEST(Onnx, FillsABiasCannotStandForStaySelects) {
  onnx::ModelProto m = modelWithInput(17, "no_bias", {4, 4});
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<double> future;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) future.push_back(j > i ? 1 : 0);
  addInitializer(g, "future_f", {4, 4}, future);
  addInitializer(g, "padded_f", {4}, {1, 1, 0, 0});
  addInitializer(g, "last_f", {4}, {0, 0, 0, 1});
  addInitializer(g, "first_f", {4}, {1, 0, 0, 0});
  for (const char* mask : {"future", "padded", "last", "first"})
    castToBool(g, std::string(mask) + "_f", mask);
  addInitializer(g, "zero", {}, {0});
  addInitializer(g, "far", {}, {-1e4});
  addInitializer(g, "huge", {}, {1e5});
  addInitializer(g, "pad_bias", {4}, {-1e4, -1e4, 0, 0});
  addNode(g, "Where", {"padded", "zero", "x"}, "zeroed");
  addNode(g, "Add", {"zeroed", "pad_bias"}, "pad_added");
  addNode(g, "Where", {"future", "far", "pad_added"}, "causal_after");
  addNode(g, "Softmax", {"causal_after"}, "zeroed_probs");
  addNode(g, "Where", {"last", "huge", "x"}, "raised");
  addNode(g, "Where", {"last", "far", "raised"}, "refilled");
  addNode(g, "Softmax", {"refilled"}, "raised_probs");
  addNode(g, "Where", {"first", "far", "x"}, "column");
  auto* axis = addNode(g, "Softmax", {"column"}, "column_probs")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  for (const char* out : {"zeroed_probs", "raised_probs", "column_probs"}) g->add_output()->set_name(out);
  Graph graph = importOnnx(writeModel(m, "no_bias.onnx"));
  for (const auto& op : graph.ops) EXPECT_FALSE(isCausal(op)) << op.name;
  std::vector<float> x = {0.5f,  -1.0f, 2.0f,  0.25f, 3.0f, -0.5f, 1.0f,  1.5f,
                          -2.0f, -3.0f, 0.75f, 1.25f, 0.1f, 0.2f,  -0.3f, 0.4f};
  std::map<std::string, Tensor> values = {{graph.inputs.at(0).name, Tensor{{4, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  auto scores = [&](int which, size_t i, size_t j) {
    double s = x[i * 4 + j];
    if (which == 0) return j > i || j < 2 ? -1e4 : s;
    if (which == 1) return j == 3 ? -1e4 : s;
    return j == 0 ? -1e4 : s;
  };
  for (int which = 0; which < 3; ++which) {
    expectSoftmaxOf(
        out.at(graph.outputs.at(static_cast<size_t>(which))).data,
        [&](size_t i, size_t j) { return scores(which, i, j); }, std::to_string(which), which == 2);
  }
}

// And, Or and Xor of streams (booleans of data: comparisons) with each other and with a constant mask, as
// an attention mask given as input meets a causal one (`causal & attention_mask.bool()`), and IsNaN and
// IsInf of a stream (torch.nan_to_num), of either sign, one or none: 1 where the logic holds, 0 elsewhere,
// worked by hand.
TEST(Onnx, LogicOfStreamsIsOneWhereItHolds) {
  onnx::ModelProto m = modelWithInput(17, "logic", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "zero", {}, {0});
  addInitializer(g, "one", {}, {1});
  addInitializer(g, "kept_f", {4}, {1, 0, 1, 0});
  castToBool(g, "kept_f", "kept");
  addNode(g, "Greater", {"x", "zero"}, "positive");
  addNode(g, "Less", {"x", "one"}, "below_one");
  addNode(g, "And", {"positive", "kept"}, "and_const");
  addNode(g, "Or", {"positive", "kept"}, "or_const");
  addNode(g, "Xor", {"positive", "below_one"}, "xor_data");
  addNode(g, "And", {"positive", "below_one"}, "and_data");
  addNode(g, "IsNaN", {"x"}, "nan");
  addNode(g, "IsInf", {"x"}, "inf");
  auto isInf = [&](const char* out, int64_t negative, int64_t positive) {
    onnx::NodeProto* n = addNode(g, "IsInf", {"x"}, out);
    for (auto [key, value] :
         {std::pair{"detect_negative", negative}, std::pair{"detect_positive", positive}}) {
      auto* a = n->add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(value);
    }
  };
  isInf("minus_inf", 1, 0);
  isInf("plus_inf", 0, 1);
  isInf("no_inf", 0, 0);
  for (const char* v :
       {"and_const", "or_const", "xor_data", "and_data", "nan", "inf", "minus_inf", "plus_inf", "no_inf"}) {
    auto* to = addNode(g, "Cast", {v}, std::string(v) + "_f")->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::FLOAT);
    g->add_output()->set_name(std::string(v) + "_f");
  }
  Graph graph = importOnnx(writeModel(m, "logic.onnx"));
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.5f, -inf, 2.0f, 0.0f, std::nanf(""), inf, -0.5f, 3.0f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  const float kept[4] = {1, 0, 1, 0};
  for (size_t i = 0; i < 8; ++i) {
    bool positive = x[i] > 0, below = x[i] < 1, k = kept[i % 4] != 0;
    EXPECT_EQ(out.at(graph.outputs.at(0)).data.at(i), positive && k ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(1)).data.at(i), positive || k ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(2)).data.at(i), positive != below ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(3)).data.at(i), positive && below ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(4)).data.at(i), i == 4 ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(5)).data.at(i), i == 1 || i == 5 ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(6)).data.at(i), i == 1 ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(7)).data.at(i), i == 5 ? 1.0f : 0.0f) << i;
    EXPECT_EQ(out.at(graph.outputs.at(8)).data.at(i), 0.0f) << i;
  }
}

// Trilu of a stream (torch.tril and triu of scores: causal linear attention) keeps its triangle of the last
// two dims, the diagonal moved by k, and zeroes the rest: lower with k 0, upper with k 1, lower with k -1,
// worked by hand on a [2, 3, 4] input.
TEST(Onnx, TriluOfAStreamKeepsItsTriangle) {
  onnx::ModelProto m = modelWithInput(17, "trilu", {2, 3, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "one", {}, {1}, onnx::TensorProto::INT64);
  addInitializer(g, "minus_one", {}, {-1}, onnx::TensorProto::INT64);
  auto trilu = [&](const std::vector<std::string>& ins, const std::string& out, int64_t upper) {
    auto* a = addNode(g, "Trilu", ins, out)->add_attribute();
    a->set_name("upper");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(upper);
    g->add_output()->set_name(out);
  };
  trilu({"x"}, "lower", 0);
  trilu({"x", "one"}, "strictly_upper", 1);
  trilu({"x", "minus_one"}, "strictly_lower", 0);
  Graph graph = importOnnx(writeModel(m, "trilu.onnx"));
  std::vector<float> x;
  for (int i = 0; i < 24; ++i) x.push_back(static_cast<float>(i) - 7.5f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  for (size_t f = 0; f < 24; ++f) {
    int64_t i = static_cast<int64_t>(f / 4 % 3), j = static_cast<int64_t>(f % 4);
    EXPECT_EQ(out.at(graph.outputs.at(0)).data.at(f), j <= i ? x[f] : 0.0f) << f;
    EXPECT_EQ(out.at(graph.outputs.at(1)).data.at(f), j >= i + 1 ? x[f] : 0.0f) << f;
    EXPECT_EQ(out.at(graph.outputs.at(2)).data.at(f), j <= i - 1 ? x[f] : 0.0f) << f;
  }
}

// A table of three dims at indices of data (ChatGLM's rope cache [max, rot / 2, 2] at position ids) is the
// rows of [V, a * b] viewed back; along another axis than the first it is refused by name (it was an
// embedding whose shape check failed). Values by hand.
TEST(Onnx, ATableOfMoreDimsGathersWholeRows) {
  for (int64_t axis : {0, 1}) {
    onnx::ModelProto m = modelWithInput(17, "rows", {1, 3});
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::INT64);
    onnx::GraphProto* g = m.mutable_graph();
    std::vector<double> table;
    for (int i = 0; i < 30; ++i) table.push_back(0.5 * i - 3);
    addInitializer(g, "table", {5, 2, 3}, table);
    auto* a = addNode(g, "Gather", {"table", "x"}, "y")->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
    g->add_output()->set_name("y");
    std::string path = writeModel(m, "rows" + std::to_string(axis) + ".onnx");
    if (axis == 1) {
      EXPECT_EQ(errorOf(path),
                path +
                    ": error: unsupported: 1 node(s):\n  y_node (Gather of a table of rank 3 along "
                    "axis 1 at indices computed at run time)");
      continue;
    }
    Graph graph = importOnnx(path);
    std::map<std::string, Tensor> values = {{"x", Tensor{{1, 3}, {4, 0, 2}}}};
    {  // a table of two dims at ids of a symbolic length stays an embedding
      onnx::ModelProto e = m;
      makeDynamic(e, 1, "seq");
      onnx::TensorProto* t = e.mutable_graph()->mutable_initializer(0);
      t->clear_dims();
      t->add_dims(5);
      t->add_dims(6);
      e.mutable_graph()->clear_output();
      e.mutable_graph()->add_output()->set_name("y");
      Graph embedded = importOnnx(writeModel(e, "ids_seq.onnx"));
      ASSERT_EQ(embedded.ops.size(), 1u);
      EXPECT_EQ(embedded.ops[0].op, "embedding");
    }
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    Tensor y = interpret(graph, values).at(graph.outputs.at(0));
    EXPECT_EQ(y.shape, (std::vector<int64_t>{1, 3, 2, 3}));
    const int rows[3] = {4, 0, 2};
    ASSERT_EQ(y.data.size(), 18u);
    for (size_t f = 0; f < 18; ++f)
      EXPECT_EQ(y.data[f], static_cast<float>(table[static_cast<size_t>(rows[f / 6] * 6) + f % 6])) << f;
  }
}

// A Loop that only a ConcatFromSequence reads, as torch writes a repeat_interleave, but whose body is not
// one (it inserts x * 2 twice): the rule that lets torch's Loop through with the axes free takes it, and
// the imports at two sizes, which rewrite only a repeat, refuse it; the import gives the first refusal,
// naming the Loop, with the axis free or fixed. A second reader of the sequence inside another Loop's body
// (a subgraph, which the rewrite counts) keeps the rule from taking it at all: the Loop holds a subgraph.
TEST(Onnx, ALoopThatIsNoRepeatInterleaveIsRefusedWhereverItsAxisIs) {
  auto loopModel = [](bool readInsideAnotherBody) {
    onnx::ModelProto m = modelWithInput(17, "not_a_repeat", {1, 3, 4});
    makeDynamic(m, 1, "seq");
    onnx::GraphProto* g = m.mutable_graph();
    addInitializer(g, "trips", {}, {2}, onnx::TensorProto::INT64);
    onnx::TensorProto* yes = g->add_initializer();
    yes->set_name("go");
    yes->set_data_type(onnx::TensorProto::BOOL);
    yes->add_int32_data(1);
    addInitializer(g, "two", {}, {2.0});
    onnx::NodeProto* empty = addNode(g, "SequenceEmpty", {}, "none");
    onnx::AttributeProto* dtype = empty->add_attribute();
    dtype->set_name("dtype");
    dtype->set_type(onnx::AttributeProto::INT);
    dtype->set_i(onnx::TensorProto::FLOAT);
    onnx::NodeProto* loop = addNode(g, "Loop", {"trips", "go", "none"}, "seqs");
    onnx::AttributeProto* body = loop->add_attribute();
    body->set_name("body");
    body->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* b = body->mutable_g();
    b->set_name("body");
    b->add_input()->set_name("i");
    b->add_input()->set_name("cond_in");
    b->add_input()->set_name("seq_in");
    addNode(b, "Mul", {"x", "two"}, "doubled");
    addNode(b, "SequenceInsert", {"seq_in", "doubled"}, "seq_out");
    addNode(b, "Identity", {"cond_in"}, "cond_out");
    b->add_output()->set_name("cond_out");
    b->add_output()->set_name("seq_out");
    onnx::AttributeProto* axis = addNode(g, "ConcatFromSequence", {"seqs"}, "y")->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(1);
    if (readInsideAnotherBody) {  // an If whose branch reads the sequence's length
      onnx::NodeProto* branch = addNode(g, "If", {"go"}, "n");
      for (const char* name : {"then_branch", "else_branch"}) {
        onnx::AttributeProto* at = branch->add_attribute();
        at->set_name(name);
        at->set_type(onnx::AttributeProto::GRAPH);
        at->mutable_g()->set_name(name);
        addNode(at->mutable_g(), "SequenceLength", {"seqs"}, std::string(name) + "_n");
        at->mutable_g()->add_output()->set_name(std::string(name) + "_n");
      }
      g->add_output()->set_name("n");
    }
    g->add_output()->set_name("y");
    return m;
  };
  const std::string path = writeModel(loopModel(false), "not_a_repeat.onnx");
  std::string free, fixed;
  try {
    importOnnx(path, {}, /*overFreeAxes=*/true);
  } catch (const UserError& e) {
    free = e.what();
  }
  try {
    importOnnx(path, {{"seq", 3}});
  } catch (const UserError& e) {
    fixed = e.what();
  }
  EXPECT_NE(free.find("seqs_node (Loop"), std::string::npos) << free;
  EXPECT_NE(fixed.find("seqs_node (Loop"), std::string::npos) << fixed;
  EXPECT_EQ(free.find("cannot stay symbolic"), std::string::npos) << free;  // the rule took the Loop
  const std::string read = writeModel(loopModel(true), "not_a_repeat_read_inside.onnx");
  std::string held;
  try {
    importOnnx(read, {}, /*overFreeAxes=*/true);
  } catch (const UserError& e) {
    held = e.what();
  }
  EXPECT_NE(held.find("(the dynamic axes cannot stay symbolic: seqs_node (Loop) holds a subgraph, which the "
                      "import follows at one size only)"),
            std::string::npos)
      << held;
}

// ChatGLM2's rope cache over a dynamic sequence axis fixed at import: a table computed from arange(seq)
// (a Range of float bounds from the input's Shape) by torch.outer (an Einsum, whose result ONNX sizes by
// rank alone: the importer sizes it from its operands), viewed with a -1 and multiplied into the stream,
// whose Shape then feeds a Reshape (flatten). ONNX's shape inference gave the Range no length while its
// bounds were computed, so every shape after it, and the Shape of the product, stayed unknown ("Shape of a
// value with a symbolic dimension"); the bounds are folded as the shape arguments are. Values by hand:
// y[i][j] = x[i][j] * i * theta[j].
TEST(Onnx, ARangeOverADynamicAxisFixedAtImportHasItsLength) {
  onnx::ModelProto m = modelWithInput(17, "range_table", {3, 4});
  makeDynamic(m, 0, "seq");
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "zero", {}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "axes0", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "axes1", {1}, {1}, onnx::TensorProto::INT64);
  addInitializer(g, "rest", {2}, {-1, 4}, onnx::TensorProto::INT64);
  addInitializer(g, "start", {}, {0.0});
  addInitializer(g, "delta", {}, {1.0});
  addInitializer(g, "theta", {4}, {0.5, 1.0, 1.5, -2.0});
  addNode(g, "Shape", {"x"}, "sh");
  addNode(g, "Gather", {"sh", "zero"}, "n");
  onnx::AttributeProto* to = addNode(g, "Cast", {"n"}, "nf")->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  addNode(g, "Range", {"start", "nf", "delta"}, "pos");
  onnx::AttributeProto* outer =
      addNode(g, "Einsum", {"pos", "theta"}, "ang")->add_attribute();  // torch.outer
  outer->set_name("equation");
  outer->set_type(onnx::AttributeProto::STRING);
  outer->set_s("i,d->id");
  addNode(g, "Unsqueeze", {"n", "axes0"}, "n1");
  onnx::AttributeProto* axis = addNode(g, "Concat", {"n1", "rest"}, "target")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addNode(g, "Reshape", {"ang", "target"}, "table");  // [seq, -1, 4]: its 1 unknown to ONNX
  addNode(g, "Unsqueeze", {"x", "axes1"}, "x3");
  addNode(g, "Mul", {"x3", "table"}, "prod");  // [seq, 1, 4] by [seq, ?, 4]
  addNode(g, "Shape", {"prod"}, "psh");
  addNode(g, "Reshape", {"prod", "psh"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "range_table.onnx"), {{"seq", 3}});
  std::vector<float> x;
  for (int i = 0; i < 12; ++i) x.push_back(0.25f * static_cast<float>(i) - 1.0f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{3, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  Tensor y = interpret(graph, values).at(graph.outputs.at(0));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{3, 1, 4}));
  const double theta[4] = {0.5, 1.0, 1.5, -2.0};
  ASSERT_EQ(y.data.size(), 12u);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j)
      EXPECT_NEAR(y.data[i * 4 + j], x[i * 4 + j] * static_cast<double>(i) * theta[j], 1e-6) << i << j;
}

// The last token's row of a stream whose sequence is a dynamic axis (`x[:, -1, :]`, a Gather at -1, before
// an LM head): refused with the way out while the axis is symbolic (it said "indices that are not a run",
// so `--bind seq=N` did not fix the axis at import), and the row itself once the axis is fixed.
TEST(Onnx, TheLastTokenOfADynamicAxisNeedsTheAxisFixed) {
  onnx::ModelProto m = modelWithInput(17, "last_token", {1, 3, 2});
  makeDynamic(m, 1, "seq");
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "last", {}, {-1}, onnx::TensorProto::INT64);
  onnx::AttributeProto* axis = addNode(g, "Gather", {"x", "last"}, "y")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  g->add_output()->set_name("y");
  std::string path = writeModel(m, "last_token.onnx");
  EXPECT_EQ(errorOf(path),
            path +
                ": error: unsupported: 1 node(s):\n  y_node (Gather of a stream along a symbolic "
                "dimension)\n(the shape arithmetic over the model's dynamic axes folds once they "
                "are fixed at import: --set dim.seq=N; --bind NAME=N also fixes an axis where the "
                "import needs it)");
  Graph graph = importOnnx(path, {{"seq", 3}});
  Tensor y = interpret(graph, {{"x", Tensor{{1, 3, 2}, {1, 2, 3, 4, 5, 6}}}}).at(graph.outputs.at(0));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(y.data, (std::vector<float>{5, 6}));
  // Indices that fixing the axis would not make a run (a [2, 2] table of them) keep their own reason, and
  // no way out that would not work.
  onnx::ModelProto pairs = m;
  pairs.mutable_graph()->clear_initializer();
  addInitializer(pairs.mutable_graph(), "last", {2, 2}, {0, 1, 1, 2}, onnx::TensorProto::INT64);
  std::string pairsPath = writeModel(pairs, "token_pairs.onnx");
  EXPECT_EQ(errorOf(pairsPath),
            pairsPath +
                ": error: unsupported: 1 node(s):\n  y_node (Gather of a stream at indices "
                "that are not a run of one axis)");
}

// A MatMul whose constant operand's batch dims broadcast against the stream's (a per-head table [h, k, n]
// with no batch axis, times queries [b, h, m, k] at batch 2): the table laid out per batch. It stopped with
// "batch dimensions differ". Values by hand.
TEST(Onnx, AConstantBroadcastsOverTheBatchOfAMatMul) {
  onnx::ModelProto m = modelWithInput(17, "batchless", {2, 2, 3, 4});
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<double> r;
  for (int i = 0; i < 2 * 4 * 5; ++i) r.push_back(0.25 * (i % 7) - 0.5);
  addInitializer(g, "r", {2, 4, 5}, r);
  addNode(g, "MatMul", {"x", "r"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "batchless.onnx"));
  std::vector<float> x;
  for (int i = 0; i < 48; ++i) x.push_back(0.125f * static_cast<float>(i % 11) - 0.5f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 2, 3, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  Tensor y = interpret(graph, values).at(graph.outputs.at(0));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2, 3, 5}));
  ASSERT_EQ(y.data.size(), 60u);
  for (size_t b = 0; b < 2; ++b)
    for (size_t h = 0; h < 2; ++h)
      for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 5; ++j) {
          double sum = 0;
          for (size_t k = 0; k < 4; ++k) sum += x[((b * 2 + h) * 3 + i) * 4 + k] * r[(h * 4 + k) * 5 + j];
          EXPECT_NEAR(y.data[((b * 2 + h) * 3 + i) * 5 + j], sum, 1e-6) << b << h << i << j;
        }
  // A right side of [1, k, n] at [b, m, k] folds the batch into rows: the weight is not copied per batch.
  onnx::ModelProto shared = modelWithInput(17, "shared", {2, 3, 4});
  addInitializer(shared.mutable_graph(), "w", {1, 4, 5}, std::vector<double>(r.begin(), r.begin() + 20));
  addNode(shared.mutable_graph(), "MatMul", {"x", "w"}, "y");
  shared.mutable_graph()->add_output()->set_name("y");
  Graph folded = importOnnx(writeModel(shared, "shared.onnx"));
  size_t held = 0;
  for (const auto& [weight, v] : folded.values) held += v.size();
  EXPECT_EQ(held, 20u);
}

// An Einsum with an ellipsis (lucidrains-style "... i d, ... j d -> ... i j") is the product its letters
// and the operands' ranks spell: here a batched x w^T over the leading dim. It was refused. Values by hand.
TEST(Onnx, AnEllipsisEinsumIsTheProductItSpells) {
  onnx::ModelProto m = modelWithInput(17, "ellipsis", {2, 3, 4});
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<double> w;
  for (int i = 0; i < 2 * 5 * 4; ++i) w.push_back(0.25 * (i % 9) - 1.0);
  addInitializer(g, "w", {2, 5, 4}, w);
  auto* e = addNode(g, "Einsum", {"x", "w"}, "y")->add_attribute();
  e->set_name("equation");
  e->set_type(onnx::AttributeProto::STRING);
  e->set_s("... i d, ... j d -> ... i j");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "ellipsis.onnx"));
  std::vector<float> x;
  for (int i = 0; i < 24; ++i) x.push_back(0.125f * static_cast<float>(i % 7) - 0.25f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  Tensor y = interpret(graph, values).at(graph.outputs.at(0));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 3, 5}));
  ASSERT_EQ(y.data.size(), 30u);
  for (size_t b = 0; b < 2; ++b)
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 5; ++j) {
        double sum = 0;
        for (size_t k = 0; k < 4; ++k) sum += x[(b * 3 + i) * 4 + k] * w[(b * 5 + j) * 4 + k];
        EXPECT_NEAR(y.data[(b * 3 + i) * 5 + j], sum, 1e-6) << b << i << j;
      }
  // An ellipsis that broadcasts (w's batch of 1 against x's 2) is refused by name (it was "batch dimensions
  // differ", from the matmul it became).
  onnx::ModelProto wide = modelWithInput(17, "ellipsis_broadcast", {2, 3, 4});
  addInitializer(wide.mutable_graph(), "w", {1, 5, 4}, std::vector<double>(w.begin(), w.begin() + 20));
  *wide.mutable_graph()->add_node() = g->node(0);
  wide.mutable_graph()->add_output()->set_name("y");
  std::string error = errorOf(writeModel(wide, "ellipsis_broadcast.onnx"));
  EXPECT_NE(
      error.find("y_node (Einsum whose operands give an index different extents: an ellipsis broadcast, 1 "
                 "against more; expand the operand first)"),
      std::string::npos)
      << error;
}

// An Einsum node's equation attribute.
void equation(onnx::NodeProto* node, const char* text) {
  auto* e = node->add_attribute();
  e->set_name("equation");
  e->set_type(onnx::AttributeProto::STRING);
  e->set_s(text);
}

// Transformer-XL's BD term, einsum("ibnd,jnd->ijbn"): a product batched over n whose left side keeps two
// indices (i and b) was refused ("other than a product over one index"); it is the batched product of
// A's kept indices merged into rows, split again and transposed. XLNet's einsum("ijbn->bnij") of one
// operand is a transpose. Values by hand.
TEST(Onnx, EinsumsOfSeveralKeptIndicesOrOneOperandAreProductsAndTransposes) {
  onnx::ModelProto m = modelWithInput(17, "einsums", {4, 3, 2, 4});  // x [i, b, n, d]
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<double> r;  // r [j, n, d]
  for (int i = 0; i < 5 * 2 * 4; ++i) r.push_back(0.25 * (i % 7) - 0.5);
  addInitializer(g, "r", {5, 2, 4}, r);
  equation(addNode(g, "Einsum", {"x", "r"}, "bd"), "ibnd,jnd->ijbn");
  equation(addNode(g, "Einsum", {"bd"}, "y"), "ijbn->bnij");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "einsums.onnx"));
  std::vector<float> x;
  for (int i = 0; i < 96; ++i) x.push_back(0.125f * static_cast<float>(i % 5) - 0.25f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{4, 3, 2, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  Tensor y = interpret(graph, values).at(graph.outputs.at(0));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{3, 2, 4, 5}));  // [b, n, i, j]
  ASSERT_EQ(y.data.size(), 120u);
  for (size_t b = 0; b < 3; ++b)
    for (size_t n = 0; n < 2; ++n)
      for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 5; ++j) {
          double sum = 0;
          for (size_t d = 0; d < 4; ++d) sum += x[((i * 3 + b) * 2 + n) * 4 + d] * r[(j * 2 + n) * 4 + d];
          EXPECT_NEAR(y.data[((b * 2 + n) * 4 + i) * 5 + j], sum, 1e-6) << b << n << i << j;
        }
  auto counts = opCounts(graph);
  EXPECT_EQ(counts["matmul"], 1);
  EXPECT_EQ(counts.count("einsum"), 0u);
}

// An Einsum of one constant operand folds at import like one of two: a weight transposed by `ij->ji`
// (a model storing [out, in] and writing einsum("oi->io", w)), summed over an index (`ij->j`) and its
// diagonal taken (`ii->i`), each a table the matmul and the adds read. Values by hand.
TEST(Onnx, AnEinsumOfOneConstantFolds) {
  onnx::ModelProto m = modelWithInput(17, "einsum_const", {2, 3});  // x [2, 3]
  onnx::GraphProto* g = m.mutable_graph();
  // w [4, 3]: w[o][i] = o - i / 2; square [3, 3]: square[r][c] = 3 r + c.
  std::vector<double> w, square;
  for (int o = 0; o < 4; ++o)
    for (int i = 0; i < 3; ++i) w.push_back(o - 0.5 * i);
  for (int k = 0; k < 9; ++k) square.push_back(k);
  addInitializer(g, "w", {4, 3}, w);
  addInitializer(g, "square", {3, 3}, square);
  equation(addNode(g, "Einsum", {"w"}, "wt"), "oi->io");        // [3, 4]
  equation(addNode(g, "Einsum", {"w"}, "colsum"), "oi->i");     // [3]: 6 - 2i
  equation(addNode(g, "Einsum", {"square"}, "diag"), "ii->i");  // [3]: 0, 4, 8
  addNode(g, "MatMul", {"x", "wt"}, "y");
  addNode(g, "Add", {"x", "colsum"}, "x_sum");
  addNode(g, "Add", {"x_sum", "diag"}, "z");
  g->add_output()->set_name("y");
  g->add_output()->set_name("z");
  Graph graph = importOnnx(writeModel(m, "einsum_const.onnx"));
  const std::vector<float> x = {1, -2, 0.5f, 3, 0.25f, -1};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  const Tensor &y = out.at(graph.outputs.at(0)), &z = out.at(graph.outputs.at(1));
  ASSERT_EQ(y.shape, (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(z.shape, (std::vector<int64_t>{2, 3}));
  for (int r = 0; r < 2; ++r) {
    for (int o = 0; o < 4; ++o) {
      double sum = 0;
      for (int i = 0; i < 3; ++i) sum += x[static_cast<size_t>(r * 3 + i)] * (o - 0.5 * i);
      EXPECT_NEAR(y.data[static_cast<size_t>(r * 4 + o)], sum, 1e-6) << r << " " << o;
    }
    for (int i = 0; i < 3; ++i)
      EXPECT_FLOAT_EQ(z.data[static_cast<size_t>(r * 3 + i)],
                      x[static_cast<size_t>(r * 3 + i)] + (6 - 2 * i) + 4 * i)
          << r << " " << i;
  }
  auto counts = opCounts(graph);
  EXPECT_EQ(counts["matmul"], 1);
  EXPECT_EQ(counts["add"], 2);
  EXPECT_EQ(counts.count("transpose"), 0u);  // folded, not a kernel over the weight
  EXPECT_EQ(counts.count("einsum"), 0u);
}

// CumSum of a stream along its last axis is a product by a triangle of ones: plain, exclusive (each value
// out of its own sum), reverse (summed from the end) and both, worked by hand on x = [1, 2, 3, 4] and
// [-1, 0.5, 2, -3]; along another axis, between two transposes. An axis given at run time is refused by name.
TEST(Onnx, CumSumOfAStreamIsAProductByATriangle) {
  onnx::ModelProto m = modelWithInput(17, "cumsum", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "last", {}, {-1}, onnx::TensorProto::INT64);
  for (auto [out, exclusive, reverse] : {std::tuple{"plain", 0, 0}, std::tuple{"exclusive", 1, 0},
                                         std::tuple{"reverse", 0, 1}, std::tuple{"both", 1, 1}}) {
    onnx::NodeProto* n = addNode(g, "CumSum", {"x", "last"}, out);
    for (auto [key, value] : {std::pair{"exclusive", exclusive}, std::pair{"reverse", reverse}}) {
      auto* a = n->add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(value);
    }
    g->add_output()->set_name(out);
  }
  Graph graph = importOnnx(writeModel(m, "cumsum.onnx"));
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, {1, 2, 3, 4, -1, 0.5f, 2, -3}}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  const std::vector<std::vector<float>> want = {{1, 3, 6, 10, -1, -0.5f, 1.5f, -1.5f},
                                                {0, 1, 3, 6, 0, -1, -0.5f, 1.5f},
                                                {10, 9, 7, 4, -1.5f, -0.5f, -1, -3},
                                                {9, 7, 4, 0, -0.5f, -1, -3, 0}};
  for (size_t o = 0; o < want.size(); ++o)
    for (size_t i = 0; i < 8; ++i)
      EXPECT_FLOAT_EQ(out.at(graph.outputs.at(o)).data.at(i), want[o][i]) << o << " " << i;
  // Along another axis (a running sum over the sequence of [batch, seq, d]): the axis swapped with the last
  // before and after, reverse too. x[b][t][c] = 10 b + 3 t + c - 4 (it was refused).
  onnx::ModelProto rows = modelWithInput(17, "cumsum_rows", {2, 3, 2});
  addInitializer(rows.mutable_graph(), "seq", {}, {1}, onnx::TensorProto::INT64);
  addNode(rows.mutable_graph(), "CumSum", {"x", "seq"}, "y");
  auto* back = addNode(rows.mutable_graph(), "CumSum", {"x", "seq"}, "z")->add_attribute();
  back->set_name("reverse");
  back->set_type(onnx::AttributeProto::INT);
  back->set_i(1);
  rows.mutable_graph()->add_output()->set_name("y");
  rows.mutable_graph()->add_output()->set_name("z");
  Graph running = importOnnx(writeModel(rows, "cumsum_rows.onnx"));
  std::vector<float> x;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < 2; ++c) x.push_back(static_cast<float>(10 * b + 3 * t + c - 4));
  values = {{"x", Tensor{{2, 3, 2}, x}}};
  for (const auto& [weight, v] : running.values) values[weight] = Tensor{{}, v};
  out = interpret(running, values);
  // b = 0: rows [-4, -3], [-1, 0], [2, 3]; b = 1: [6, 7], [9, 10], [12, 13].
  EXPECT_EQ(out.at(running.outputs.at(0)).shape, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(out.at(running.outputs.at(0)).data,
            (std::vector<float>{-4, -3, -5, -3, -3, 0, 6, 7, 15, 17, 27, 30}));
  EXPECT_EQ(out.at(running.outputs.at(1)).shape, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(out.at(running.outputs.at(1)).data,
            (std::vector<float>{-3, 0, 1, 3, 2, 3, 27, 30, 21, 23, 12, 13}));
  // an axis given at run time (it was taken as the last)
  onnx::ModelProto given = modelWithInput(17, "cumsum_given", {2, 4});
  auto* axis = given.mutable_graph()->add_input();
  axis->set_name("axis");
  axis->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  axis->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
  addNode(given.mutable_graph(), "CumSum", {"x", "axis"}, "y");
  given.mutable_graph()->add_output()->set_name("y");
  std::string error = errorOf(writeModel(given, "cumsum_given.onnx"));
  EXPECT_NE(error.find("y_node (CumSum of a stream along an axis computed at run time"), std::string::npos)
      << error;
}

// A Cast of a float stream to int64 or int32 rounds toward zero, as torch's .long() (it was refused); a
// mask cast so stays as it is; a cast to int8 is refused by name (it would wrap). By hand on six values.
TEST(Onnx, ACastOfAStreamToIntegersRoundsTowardZero) {
  onnx::ModelProto m = modelWithInput(17, "casts", {6});
  onnx::GraphProto* g = m.mutable_graph();
  auto cast = [&](const std::string& from, const std::string& to, int type) {
    auto* a = addNode(g, "Cast", {from}, to)->add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(type);
  };
  addInitializer(g, "zero", {}, {0});
  cast("x", "as_long", onnx::TensorProto::INT64);
  cast("as_long", "long_f", onnx::TensorProto::FLOAT);
  cast("x", "as_int", onnx::TensorProto::INT32);
  cast("as_int", "int_f", onnx::TensorProto::FLOAT);
  addNode(g, "Greater", {"x", "zero"}, "positive");
  cast("positive", "positive_long", onnx::TensorProto::INT64);
  cast("positive_long", "positive_f", onnx::TensorProto::FLOAT);
  // integers divided (torch's // of ints exports so): toward zero, as ONNX's Div of integers
  addInitializer(g, "three", {}, {3}, onnx::TensorProto::INT64);
  addNode(g, "Div", {"as_long", "three"}, "thirds");
  cast("thirds", "thirds_f", onnx::TensorProto::FLOAT);
  for (const char* out : {"long_f", "int_f", "positive_f", "thirds_f"}) g->add_output()->set_name(out);
  Graph graph = importOnnx(writeModel(m, "casts.onnx"));
  std::vector<float> x = {-2.5f, -0.5f, 0.0f, 0.7f, 3.9f, -7.0f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{6}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  const std::vector<float> truncated = {-2, 0, 0, 0, 3, -7}, positive = {0, 0, 0, 1, 1, 0},
                           thirds = {0, 0, 0, 0, 1, -2};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(out.at(graph.outputs.at(0)).data.at(i), truncated[i]) << i;
    EXPECT_EQ(out.at(graph.outputs.at(1)).data.at(i), truncated[i]) << i;
    EXPECT_EQ(out.at(graph.outputs.at(2)).data.at(i), positive[i]) << i;
    EXPECT_EQ(out.at(graph.outputs.at(3)).data.at(i), thirds[i]) << i;
  }
  onnx::ModelProto narrow = modelWithInput(17, "narrow", {6});
  auto* a = addNode(narrow.mutable_graph(), "Cast", {"x"}, "y")->add_attribute();
  a->set_name("to");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(onnx::TensorProto::INT8);
  narrow.mutable_graph()->add_output()->set_name("y");
  std::string error = errorOf(writeModel(narrow, "narrow.onnx"));
  EXPECT_NE(error.find("y_node (Cast of a float stream to an integer type other than int32 and int64)"),
            std::string::npos)
      << error;
}

// A Slice of a stream walking back along its last axis (torch.flip, x[..., 3:0:-2]) is a product by a
// selection: [5, 4, 3, 2, 1] reversed, and elements 3 and 1; back along another axis it is refused by name.
TEST(Onnx, ASliceOfAStreamWalkingBackSelectsItsElements) {
  auto slice = [](const std::string& name, int64_t start, int64_t end, int64_t axis, int64_t step) {
    onnx::ModelProto m = modelWithInput(17, name, {2, 5});
    onnx::GraphProto* g = m.mutable_graph();
    addInitializer(g, "starts", {1}, {static_cast<double>(start)}, onnx::TensorProto::INT64);
    addInitializer(g, "ends", {1}, {static_cast<double>(end)}, onnx::TensorProto::INT64);
    addInitializer(g, "axes", {1}, {static_cast<double>(axis)}, onnx::TensorProto::INT64);
    addInitializer(g, "steps", {1}, {static_cast<double>(step)}, onnx::TensorProto::INT64);
    addNode(g, "Slice", {"x", "starts", "ends", "axes", "steps"}, "y");
    g->add_output()->set_name("y");
    return writeModel(m, name + ".onnx");
  };
  const std::vector<float> x = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  auto run = [&](const std::string& path) {
    Graph graph = importOnnx(path);
    std::map<std::string, Tensor> values = {{"x", Tensor{{2, 5}, x}}};
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    return interpret(graph, values).at(graph.outputs.at(0)).data;
  };
  // torch.flip(x, [-1]) exports starts -1, ends -2^63 + 1 (INT64_MIN + 1 as a double is -2^63)
  EXPECT_EQ(run(slice("flipped", -1, std::numeric_limits<int64_t>::min() + 1, -1, -1)),
            (std::vector<float>{5, 4, 3, 2, 1, -5, -4, -3, -2, -1}));
  EXPECT_EQ(run(slice("stepped", 3, 0, 1, -2)), (std::vector<float>{4, 2, -4, -2}));
  std::string error = errorOf(slice("rows_back", -1, -3, 0, -1));
  EXPECT_NE(error.find("y_node (Slice with a negative step along another axis than the last"),
            std::string::npos)
      << error;
}

// Mod with fmod=0 of a stream (torch's % of integers) takes the divisor's sign, as Python's %: by hand,
// 7 % 3 = 1, -7 % 3 = 2, 7 % -3 = -2, -7 % -3 = -1, 6 % 3 = 0, 0 % 5 = 0 (it was refused).
TEST(Onnx, AnIntegerRemainderOfAStreamTakesTheDivisorsSign) {
  onnx::ModelProto m = modelWithInput(17, "remainders", {6});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "by", {6}, {3, 3, -3, -3, 3, 5});
  addNode(g, "Mod", {"x", "by"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "remainders.onnx"));
  std::map<std::string, Tensor> values = {{"x", Tensor{{6}, {7, -7, 7, -7, 6, 0}}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  EXPECT_EQ(interpret(graph, values).at(graph.outputs.at(0)).data, (std::vector<float>{1, 2, -2, -1, 0, 0}));
}

// GatherElements of constants folds (GPT-J's torch.gather of its sin/cos table at position ids repeated
// over the rotary dims): t [3, 2] = [[1, 2], [3, 4], [5, 6]] gathered along axis 0 at [[2, 0], [-3, 2]] is
// [[5, 2], [1, 6]], added to x and checked by hand.
TEST(Onnx, GatherElementsOfConstantsFolds) {
  onnx::ModelProto m = modelWithInput(17, "gathered", {2, 2});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "t", {3, 2}, {1, 2, 3, 4, 5, 6});
  addInitializer(g, "at", {2, 2}, {2, 0, -3, 2}, onnx::TensorProto::INT64);
  addNode(g, "GatherElements", {"t", "at"}, "rows");
  addNode(g, "Add", {"x", "rows"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "gathered.onnx"));
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 2}, {10, 20, 30, 40}}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  EXPECT_EQ(interpret(graph, values).at(graph.outputs.at(0)).data, (std::vector<float>{15, 22, 31, 46}));
}

// Pad of a stream along its last axis in mode edge (torch's replicate), reflect and wrap (circular) copies
// the input's values: [1, 2, 3, 4] padded by 2 before and 1 after is [1, 1, 1, 2, 3, 4, 4], [3, 2, 1, 2,
// 3, 4, 3] and [3, 4, 1, 2, 3, 4, 1], by hand. Along another axis it is refused by name.
TEST(Onnx, APadOfAStreamCopiesItsEdgesReflectionsOrWraps) {
  auto padded = [](const std::string& mode, int64_t axis) {
    onnx::ModelProto m = modelWithInput(17, "pad_" + mode, {2, 4});
    onnx::GraphProto* g = m.mutable_graph();
    // Two before and one after, along `axis` alone (the begins of both axes, then their ends).
    std::vector<double> amounts =
        axis == 0 ? std::vector<double>{2, 0, 1, 0} : std::vector<double>{0, 2, 0, 1};
    addInitializer(g, "amounts", {4}, amounts, onnx::TensorProto::INT64);
    onnx::AttributeProto* a = addNode(g, "Pad", {"x", "amounts"}, "y")->add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(mode);
    g->add_output()->set_name("y");
    return writeModel(m, "pad_" + mode + std::to_string(axis) + ".onnx");
  };
  const std::map<std::string, std::vector<float>> want = {
      {"edge", {1, 1, 1, 2, 3, 4, 4}}, {"reflect", {3, 2, 1, 2, 3, 4, 3}}, {"wrap", {3, 4, 1, 2, 3, 4, 1}}};
  for (const auto& [mode, row] : want) {
    Graph graph = importOnnx(padded(mode, -1));
    std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, {1, 2, 3, 4, -1, -2, -3, -4}}}};
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    std::vector<float> expected = row;
    for (float v : row) expected.push_back(-v);
    EXPECT_EQ(interpret(graph, values).at(graph.outputs.at(0)).data, expected) << mode;
  }
  // As torch exports F.pad(x, (2, 1), mode="replicate"): two inputs, amounts for every axis.
  onnx::ModelProto every = modelWithInput(13, "pad_every_axis", {2, 4});
  addInitializer(every.mutable_graph(), "amounts", {4}, {0, 2, 0, 1}, onnx::TensorProto::INT64);
  onnx::AttributeProto* mode = addNode(every.mutable_graph(), "Pad", {"x", "amounts"}, "y")->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("edge");
  every.mutable_graph()->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(every, "pad_every_axis.onnx"));
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, {1, 2, 3, 4, -1, -2, -3, -4}}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  EXPECT_EQ(interpret(graph, values).at(graph.outputs.at(0)).data,
            (std::vector<float>{1, 1, 1, 2, 3, 4, 4, -1, -1, -1, -2, -3, -4, -4}));
  std::string error = errorOf(padded("edge", 0));
  EXPECT_NE(error.find("y_node (Pad in mode 'edge' along another axis than the last)"), std::string::npos)
      << error;
}

// A Tile of constants folds (position ids repeated per batch): [2, 3] tiled (2, 2) is [4, 6], row r and
// column c holding t[r % 2][c % 3], added to x here and checked by hand.
TEST(Onnx, ATileOfConstantsFolds) {
  onnx::ModelProto m = modelWithInput(17, "tiled", {4, 6});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "t", {2, 3}, {1, 2, 3, 4, 5, 6});
  addInitializer(g, "repeats", {2}, {2, 2}, onnx::TensorProto::INT64);
  addNode(g, "Tile", {"t", "repeats"}, "tiled");
  addNode(g, "Add", {"x", "tiled"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "tiled.onnx"));
  EXPECT_EQ(opCounts(graph)["tile"], 0);
  std::vector<float> x(24, 0.5f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{4, 6}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  Tensor y = interpret(graph, values).at(graph.outputs.at(0));
  ASSERT_EQ(y.data.size(), 24u);
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 6; ++c)
      EXPECT_EQ(y.data[r * 6 + c], 0.5f + static_cast<float>((r % 2) * 3 + c % 3 + 1)) << r << "," << c;
}

// Index arithmetic on constants folds: Mod (Python's sign of the divisor, and fmod's of the dividend), Clip
// with its bounds as inputs (either left out), Round half to even; an index table clamped so fed an
// embedding that no emission could gather (Shaw's relative positions).
TEST(Onnx, ConstantModClipAndRoundFold) {
  onnx::ModelProto m = modelWithInput(17, "folds", {4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "rel", {4}, {-5, -1, 2, 7}, onnx::TensorProto::INT64);
  addInitializer(g, "three", {}, {3}, onnx::TensorProto::INT64);
  addInitializer(g, "lo", {}, {-2}, onnx::TensorProto::INT64);
  addInitializer(g, "hi", {}, {3}, onnx::TensorProto::INT64);
  addInitializer(g, "halves", {4}, {0.5, 1.5, 2.5, -0.5});
  addNode(g, "Mod", {"rel", "three"}, "m0");
  auto* fmod = addNode(g, "Mod", {"rel", "three"}, "m1")->add_attribute();
  fmod->set_name("fmod");
  fmod->set_type(onnx::AttributeProto::INT);
  fmod->set_i(1);
  addNode(g, "Clip", {"rel", "lo", "hi"}, "c");
  addNode(g, "Clip", {"rel", "", "hi"}, "c2");
  addNode(g, "Round", {"halves"}, "r");
  for (const char* v : {"m0", "m1", "c", "c2"}) {
    auto* to = addNode(g, "Cast", {v}, std::string(v) + "f")->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::FLOAT);
  }
  for (const char* v : {"m0f", "m1f", "cf", "c2f", "r"}) {
    addNode(g, "Add", {"x", v}, std::string("y_") + v);
    g->add_output()->set_name(std::string("y_") + v);
  }
  Graph graph = importOnnx(writeModel(m, "folds.onnx"));
  std::map<std::string, Tensor> values = {{"x", Tensor{{4}, {0, 0, 0, 0}}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto got = interpret(graph, values);
  const std::vector<std::vector<float>> want = {
      {1, 2, 2, 1}, {-2, -1, 2, 1}, {-2, -1, 2, 3}, {-5, -1, 2, 3}, {0, 2, 2, 0}};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.at(graph.outputs.at(i)).data, want[i]) << i;
}

// MatMul by a 1-D constant (attention pooling's scores, torch.matmul(h, v) with v [d]): x * v summed over
// d, as numpy's rule reads it; each value checked against the dot product written out.
TEST(Onnx, AMatmulByAVectorIsASum) {
  onnx::ModelProto m = modelWithInput(17, "pool", {2, 3, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "v", {4}, {0.5, -1.0, 2.0, 0.25});
  addNode(g, "MatMul", {"x", "v"}, "scores");
  g->add_output()->set_name("scores");
  Graph graph = importOnnx(writeModel(m, "pool.onnx"));
  EXPECT_EQ(inferShapes(graph).tensors.at("scores").shape, (std::vector<Expr>{Expr(2), Expr(3)}));
  // x * v summed over the last axis: no reshape of a [.., 1] product to narrow the graph's tile to 1.
  EXPECT_EQ(compileGraph(graph, defaultPlatform(), parseCompileOptions({}, defaultPlatform())).options.tile,
            16);
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i % 7) - 1.0f;
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  const std::vector<float> got = interpret(graph, values).at("scores").data;
  ASSERT_EQ(got.size(), 6u);
  const float v[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  for (size_t r = 0; r < 6; ++r) {
    float dot = 0;
    for (size_t k = 0; k < 4; ++k) dot += x[r * 4 + k] * v[k];
    EXPECT_FLOAT_EQ(got[r], dot) << r;
  }
}

// A float32 stream cast to bfloat16 or float16 (autocast emulated, h.to(torch.bfloat16).to(torch.float32)) is
// refused by name: the design computes in f32, and the cast dropped was up to 1.4e-3 from torch.
TEST(Onnx, AStreamRoundedTo16BitsIsRefused) {
  onnx::ModelProto m = modelWithInput(17, "halves", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  for (auto [out, type] :
       {std::pair{"h", onnx::TensorProto::BFLOAT16}, std::pair{"f", onnx::TensorProto::FLOAT16}}) {
    auto* to = addNode(g, "Cast", {"x"}, out)->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(type);
    g->add_output()->set_name(out);
  }
  std::string path = writeModel(m, "halves.onnx");
  EXPECT_EQ(errorOf(path),
            path +
                ": error: unsupported: 2 node(s):\n  h_node (Cast of a stream to bfloat16: the design "
                "computes in f32 and would not round it)\n  f_node (Cast of a stream to float16: the "
                "design computes in f32 and would not round it)");
}

// Selects on data: an infinite constant operand stays infinite (as torch's), a NaN in the stream does not
// show through where it is not selected (as torch's), bool() of a stream is 1 for every value not 0 (NaN
// too), an einsum by an initializer is sized (ONNX 1.12 gives its rank alone) so that a softmax can follow,
// and malformed Tile and Where nodes are listed, not crashed on.
TEST(Onnx, SelectsOnDataAreExact) {
  onnx::ModelProto m = modelWithInput(17, "selects", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "zero", {}, {0.0f});
  addInitializer(g, "low", {}, {-std::numeric_limits<float>::infinity()});
  addInitializer(g, "two", {}, {2.0f});
  addInitializer(g, "three", {}, {3.0f});
  std::vector<double> w;
  for (int i = 0; i < 12; ++i) w.push_back(0.25f * static_cast<float>(i % 5) - 0.5f);
  addInitializer(g, "w", {4, 3}, w);
  addNode(g, "Greater", {"x", "zero"}, "positive");
  addNode(g, "Where", {"positive", "x", "low"}, "kept");
  castToBool(g, "x", "nonzero");
  addNode(g, "Where", {"nonzero", "two", "three"}, "picked");
  auto* e = addNode(g, "Einsum", {"x", "w"}, "projected");
  auto* eq = e->add_attribute();
  eq->set_name("equation");
  eq->set_type(onnx::AttributeProto::STRING);
  eq->set_s("ld,dk->lk");
  addNode(g, "Softmax", {"projected"}, "probs");
  for (const char* out : {"kept", "picked", "probs"}) g->add_output()->set_name(out);
  std::string path = writeModel(m, "selects.onnx");
  Graph graph = importOnnx(path);
  TypedGraph typed = inferShapes(graph);
  EXPECT_EQ(typed.tensors.at(graph.outputs.at(2)).shape, (std::vector<Expr>{Expr(2), Expr(3)}));
  std::vector<float> x = {1.5f, -2.0f, 0.0f, 3.0f, std::nanf(""), -0.5f, 0.25f, 0.0f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto got = interpret(graph, values);
  const std::vector<float>& kept = got.at(graph.outputs.at(0)).data;
  const std::vector<float>& picked = got.at(graph.outputs.at(1)).data;
  ASSERT_EQ(kept.size(), 8u);
  ASSERT_EQ(picked.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    // A NaN is not positive: the constant is kept there (a product of the branch not taken by 0 made it NaN).
    EXPECT_EQ(kept[i], x[i] > 0 ? x[i] : -std::numeric_limits<float>::infinity()) << i;
    EXPECT_EQ(picked[i], x[i] != 0 ? 2.0f : 3.0f) << i;                             // bool(NaN) is true
  }
  // A Tile of no copies is listed by name; a Where of two inputs is no valid ONNX, and says so first (its
  // schema's counts: it stopped the import with a segmentation fault where a pass read an input it lacked).
  onnx::ModelProto bad = modelWithInput(17, "bad", {2, 4});
  addInitializer(bad.mutable_graph(), "repeats", {2}, {1, 0}, onnx::TensorProto::INT64);
  addNode(bad.mutable_graph(), "Tile", {"x", "repeats"}, "tiled");
  bad.mutable_graph()->add_output()->set_name("tiled");
  std::string badPath = writeModel(bad, "bad_selects.onnx");
  EXPECT_EQ(
      errorOf(badPath),
      badPath + ": error: unsupported: 1 node(s):\n  tiled_node (Tile by 0 copies; 1 to 1024 are taken)");
  addNode(bad.mutable_graph(), "Where", {"x", "tiled"}, "chosen");
  bad.mutable_graph()->mutable_output(0)->set_name("chosen");
  badPath = writeModel(bad, "bad_where.onnx");
  EXPECT_EQ(errorOf(badPath), badPath +
                                  ": error: node 'chosen_node' (Where) is not valid ONNX: Node (chosen_node) "
                                  "has input size 2 not in range [min=3, max=3].");
}

// Slices a stream with a step (GPT-J's x[..., ::2]), and takes a list or a scalar index of it (Falcon's
// fused[..., [-2], :]), as views and slices of step 1; a table computed in forward as a matmul and a
// transpose of constants folds. Every value is checked against the index arithmetic written out here.
TEST(Onnx, StepsIndicesAndConstantMatmulsOfStreams) {
  onnx::ModelProto m = modelWithInput(17, "steps", {2, 3, 12});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "s1", {1}, {1}, onnx::TensorProto::INT64);
  addInitializer(g, "e12", {1}, {12}, onnx::TensorProto::INT64);
  addInitializer(g, "e11", {1}, {11}, onnx::TensorProto::INT64);
  addInitializer(g, "last", {1}, {-1}, onnx::TensorProto::INT64);
  addInitializer(g, "three", {1}, {3}, onnx::TensorProto::INT64);
  addInitializer(g, "two", {1}, {2}, onnx::TensorProto::INT64);
  addInitializer(g, "run", {2}, {-2, -1}, onnx::TensorProto::INT64);
  addInitializer(g, "one", {}, {1}, onnx::TensorProto::INT64);
  // x[..., 1::3] (4 columns: 1 4 7 10) and x[..., 2:11:2] (5 columns: 2 4 6 8 10, the axis cut to 12)
  addNode(g, "Slice", {"x", "s1", "e12", "last", "three"}, "every_third");
  addInitializer(g, "s2", {1}, {2}, onnx::TensorProto::INT64);
  addNode(g, "Slice", {"x", "s2", "e11", "last", "two"}, "every_second");
  // x[..., 0:7:3] (0 3 6: the axis cut to 9 first)
  addInitializer(g, "s0", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "e7", {1}, {7}, onnx::TensorProto::INT64);
  addNode(g, "Slice", {"x", "s0", "e7", "last", "three"}, "first_three");
  // x[:, ::2] of the odd axis 1 (rows 0 2) and x[..., 1::5] (1 6 11): a cut to a multiple of the step
  // would pass the axis's end, so the last row or column is sliced alone and concatenated
  addInitializer(g, "axis1", {1}, {1}, onnx::TensorProto::INT64);
  addInitializer(g, "five", {1}, {5}, onnx::TensorProto::INT64);
  addNode(g, "Slice", {"x", "s0", "e12", "axis1", "two"}, "odd_rows");
  addNode(g, "Slice", {"x", "s1", "e12", "last", "five"}, "by_five");
  // rows [-2, -1] of axis 1 (1 and 2), and row 1 alone with the axis dropped
  addNode(g, "Gather", {"x", "run"}, "rows")->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(1);
    return a;
  }());
  auto* one = addNode(g, "Gather", {"x", "one"}, "row");
  auto* axis = one->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  // cos(transpose(f @ p)) + x[0]: f [1, 3, 1] times p [1, 1, 12] is [1, 3, 12]; transposed (0 2 1) and back
  addInitializer(g, "f", {1, 3, 1}, {0.5f, 1.0f, 2.0f});
  std::vector<double> positions;
  for (int i = 0; i < 12; ++i) positions.push_back(i);
  addInitializer(g, "p", {1, 1, 12}, positions);
  addNode(g, "MatMul", {"f", "p"}, "angles");
  auto* t = addNode(g, "Transpose", {"angles"}, "turned");
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t d : {0, 2, 1}) perm->add_ints(d);
  auto* back = addNode(g, "Transpose", {"turned"}, "angles_again");
  back->add_attribute()->CopyFrom(*perm);
  addNode(g, "Cos", {"angles_again"}, "table");
  addNode(g, "Add", {"x", "table"}, "rotated");
  for (const char* out :
       {"every_third", "every_second", "rows", "row", "rotated", "first_three", "odd_rows", "by_five"})
    g->add_output()->set_name(out);
  std::string path = writeModel(m, "steps.onnx");
  Graph graph = importOnnx(path);
  EXPECT_TRUE(verifyGraph(graph).empty());
  EXPECT_EQ(opCounts(graph)["matmul"], 0);  // the table is a constant
  std::vector<float> x;
  for (int i = 0; i < 72; ++i) x.push_back(static_cast<float>(i) * 0.5f - 7.0f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3, 12}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto got = interpret(graph, values);
  auto at = [&](int b, int r, int c) { return x[static_cast<size_t>((b * 3 + r) * 12 + c)]; };
  // Output `i` is [2, R, C], its element (b, r, c) x's element source(b, r, c).
  auto expectTaken = [&](size_t i, int R, int C, const std::function<float(int, int, int)>& source) {
    const Tensor& t = got.at(graph.outputs.at(i));
    ASSERT_EQ(t.shape, (std::vector<int64_t>{2, R, C})) << i;
    for (int b = 0; b < 2; ++b)
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c)
          EXPECT_EQ(t.data[static_cast<size_t>((b * R + r) * C + c)], source(b, r, c)) << i;
  };
  expectTaken(0, 3, 4, [&](int b, int r, int c) { return at(b, r, 1 + 3 * c); });
  expectTaken(1, 3, 5, [&](int b, int r, int c) { return at(b, r, 2 + 2 * c); });
  expectTaken(2, 2, 12, [&](int b, int r, int c) { return at(b, r + 1, c); });
  const Tensor& row = got.at(graph.outputs.at(3));
  ASSERT_EQ(row.shape, (std::vector<int64_t>{2, 12}));
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 12; ++c) EXPECT_EQ(row.data[static_cast<size_t>(b * 12 + c)], at(b, 1, c));
  const Tensor& rotated = got.at(graph.outputs.at(4));
  ASSERT_EQ(rotated.data.size(), 72u);
  const float freq[3] = {0.5f, 1.0f, 2.0f};
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 12; ++c)
        EXPECT_NEAR(rotated.data[static_cast<size_t>((b * 3 + r) * 12 + c)],
                    at(b, r, c) + std::cos(freq[r] * c), 1e-6);
  expectTaken(5, 3, 3, [&](int b, int r, int c) { return at(b, r, 3 * c); });
  expectTaken(6, 2, 12, [&](int b, int r, int c) { return at(b, 2 * r, c); });
  expectTaken(7, 3, 3, [&](int b, int r, int c) { return at(b, r, 1 + 5 * c); });
  EXPECT_EQ(opCounts(graph)["concat"], 2);
  // The graph compiles and its network runs to the end.
  CompileResult r =
      compileGraph(graph, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()));
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {}), {}).deadlock);

  // What is still refused is listed by name: an index past the axis (rows 0 and 2 of 2), a step given at
  // run time. (A negative step along the last axis imports: ASliceOfAStreamWalkingBackSelectsItsElements.)
  onnx::ModelProto bad = modelWithInput(17, "bad_steps", {2, 12});
  g = bad.mutable_graph();
  addInitializer(g, "last", {1}, {-1}, onnx::TensorProto::INT64);
  addInitializer(g, "apart", {2}, {0, 2}, onnx::TensorProto::INT64);
  addNode(g, "Gather", {"x", "apart"}, "apart_rows");
  // a step given at run time (a graph input), not read as 1
  auto* step = g->add_input();
  step->set_name("step");
  step->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  step->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
  addInitializer(g, "s0", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "e12", {1}, {12}, onnx::TensorProto::INT64);
  addNode(g, "Slice", {"x", "s0", "e12", "last", "step"}, "stepped");
  for (const char* out : {"apart_rows", "stepped"}) g->add_output()->set_name(out);
  std::string badPath = writeModel(bad, "bad_steps.onnx");
  EXPECT_EQ(
      errorOf(badPath),
      badPath +
          ": error: unsupported: 2 node(s):\n  apart_rows_node (Gather of a stream at an "
          "index outside its axis)\n  stepped_node (Slice other than one axis with constant starts, ends "
          "and a non-zero step)");
}

// x * cos + rotate_half(x) * sin over constant tables is one rope op only when the tables are rope's:
// the base (theta) is read off them (500,000 here, Llama 3's), and tables of another kind (positions
// scaled by a half, as a linear rope scaling writes them) leave the ops as written, as does a cos term of
// another value than the one rotated (relu(x) * cos). Either way the interpreter gives what the ops say,
// computed here from the tables' formula.
TEST(Onnx, RotaryTablesDecideTheRopeAndItsBase) {
  const int P = 4, D = 8, h = D / 2;
  for (auto [scale, relu] : std::vector<std::pair<double, bool>>{{1.0, false}, {0.5, false}, {1.0, true}}) {
    SCOPED_TRACE(std::to_string(scale) + (relu ? " relu" : ""));
    const double theta = 500000;
    auto angle = [&](int pos, int i) { return scale * pos * std::pow(theta, -2.0 * (i % h) / D); };
    onnx::ModelProto m = modelWithInput(17, "rotary", {1, 2, P, D});
    onnx::GraphProto* g = m.mutable_graph();
    auto table = [&](double (*f)(double)) {  // f of every angle, in the table's [P, D] order.
      std::vector<double> values;
      for (int pos = 0; pos < P; ++pos)
        for (int i = 0; i < D; ++i) values.push_back(f(angle(pos, i)));
      return values;
    };
    addInitializer(g, "zero", {1}, {0}, onnx::TensorProto::INT64);
    addInitializer(g, "half", {1}, {h}, onnx::TensorProto::INT64);
    addInitializer(g, "whole", {1}, {D}, onnx::TensorProto::INT64);
    addInitializer(g, "last", {1}, {-1}, onnx::TensorProto::INT64);
    addInitializer(g, "cos_table", {P, D}, table([](double a) { return std::cos(a); }));
    addInitializer(g, "sin_table", {P, D}, table([](double a) { return std::sin(a); }));
    addNode(g, "Slice", {"x", "zero", "half", "last"}, "low");
    addNode(g, "Slice", {"x", "half", "whole", "last"}, "high");
    addNode(g, "Neg", {"high"}, "minus_high");
    auto* cat = addNode(g, "Concat", {"minus_high", "low"}, "rotated_half");
    auto* axis = cat->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(-1);
    if (relu) addNode(g, "Relu", {"x"}, "relu_x");
    addNode(g, "Mul", {relu ? "relu_x" : "x", "cos_table"}, "x_cos");
    addNode(g, "Mul", {"rotated_half", "sin_table"}, "half_sin");
    addNode(g, "Add", {"x_cos", "half_sin"}, "y");
    g->add_output()->set_name("y");
    Graph graph = importOnnx(writeModel(m, "rotary.onnx"));
    EXPECT_EQ(opCounts(graph)["rope"], scale == 1.0 && !relu ? 1 : 0);
    for (const auto& op : graph.ops) {
      if (op.op == "rope") {
        EXPECT_EQ(numberAttr(op, "theta", 0), theta);
      }
    }
    std::vector<float> x;
    for (int i = 0; i < 2 * P * D; ++i) x.push_back(std::sin(0.7f * static_cast<float>(i)) + 0.1f);
    std::map<std::string, Tensor> values = {{"x", Tensor{{1, 2, P, D}, x}}};
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
    ASSERT_EQ(y.size(), x.size());
    for (int head = 0; head < 2; ++head)
      for (int pos = 0; pos < P; ++pos)
        for (int i = 0; i < D; ++i) {
          size_t at = static_cast<size_t>((head * P + pos) * D + i);
          double partner = i < h ? -x[at + h] : x[at - h], self = relu ? std::max(0.0f, x[at]) : x[at];
          EXPECT_NEAR(y[at], self * std::cos(angle(pos, i)) + partner * std::sin(angle(pos, i)), 1e-5)
              << pos << "," << i;
        }
  }
}

// A shape argument computed from constants is handed back to shape inference as an int64 initializer
// named after it; a model that already has a value of that name keeps it, and the Reshape gets the folded
// shape, not the model's tensor.
TEST(Onnx, FoldedShapeArgumentsTakeNamesNoValueHas) {
  onnx::ModelProto m = modelWithInput(14, "clash", {2, 8});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "rows", {1}, {4}, onnx::TensorProto::INT64);
  addInitializer(g, "cols", {1}, {4}, onnx::TensorProto::INT64);
  // The name the folded shape would take: four floats, 1 2 3 4.
  addInitializer(g, "shape__folded", {4}, {1, 2, 3, 4});
  auto* concat = addNode(g, "Concat", {"rows", "cols"}, "shape");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addNode(g, "Reshape", {"x", "shape"}, "square");
  addNode(g, "Add", {"square", "shape__folded"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "clash.onnx"));
  ASSERT_EQ(graph.outputs.size(), 1u);
  const std::string& y = graph.outputs[0];
  const Op* add = nullptr;
  for (const Op& op : graph.ops)
    if (op.output == y) add = &op;
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op, "add");
  // y is [4, 4]: x reshaped to the folded [4, 4], plus the model's four floats along its rows.
  std::vector<Expr> shape = inferShapes(graph).tensors.at(y).shape;
  EXPECT_EQ(shape, (std::vector<Expr>{Expr(4), Expr(4)}));
  bool kept = false;
  for (const auto& [name, values] : graph.values)
    kept = kept || values == std::vector<float>{1, 2, 3, 4};
  EXPECT_TRUE(kept);
}

// The values the importer makes (a gathered row before its axis is dropped, Neg's -1) take names no
// value of the model has, here where the model has values named as they would be.
TEST(Onnx, MadeValuesTakeNamesNoValueHas) {
  onnx::ModelProto m = modelWithInput(17, "clash", {2, 3, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "one", {}, {1}, onnx::TensorProto::INT64);
  auto* gather = addNode(g, "Gather", {"x", "one"}, "y");
  auto* axis = gather->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  addNode(g, "Relu", {"x"}, "y__taken");
  addNode(g, "Neg", {"x"}, "neg");
  addNode(g, "Abs", {"x"}, "neg_minus_one");
  for (const char* out : {"y", "y__taken", "neg", "neg_minus_one"}) g->add_output()->set_name(out);
  Graph graph = importOnnx(writeModel(m, "made_names.onnx"));
  EXPECT_TRUE(verifyGraph(graph).empty());
  std::vector<float> x;
  for (int i = 0; i < 24; ++i) x.push_back(static_cast<float>(i) - 11.5f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto got = interpret(graph, values);
  ASSERT_EQ(graph.outputs.size(), 4u);
  const std::vector<float>&row = got.at(graph.outputs[0]).data, &relu = got.at(graph.outputs[1]).data,
        &neg = got.at(graph.outputs[2]).data, &abs = got.at(graph.outputs[3]).data;
  ASSERT_EQ(row.size(), 8u);
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(row[static_cast<size_t>(b * 4 + c)], x[static_cast<size_t>(b * 12 + 4 + c)]);
  for (size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(relu[i], std::max(x[i], 0.0f));
    EXPECT_EQ(neg[i], -x[i]);
    EXPECT_EQ(abs[i], std::fabs(x[i]));
  }
}

// Reductions and running sums of constants fold (the element count of a shape for var's n - 1, OPT's
// positions as a cumsum of ones, a norm of a table), each value here computed by hand.
TEST(Onnx, ReductionsAndRunningSumsOfConstantsFold) {
  onnx::ModelProto m = modelWithInput(17, "folds", {2, 3});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "c", {2, 3}, {1, 2, 3, 4, 5, 6});  // [[1 2 3] [4 5 6]]
  addInitializer(g, "one_axis", {}, {1}, onnx::TensorProto::INT64);
  addInitializer(g, "zero_axis", {}, {0}, onnx::TensorProto::INT64);
  auto ints = [](onnx::NodeProto* n, const char* name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(v.size() == 1 && std::string(name) != "axes" ? onnx::AttributeProto::INT
                                                             : onnx::AttributeProto::INTS);
    if (a->type() == onnx::AttributeProto::INT)
      a->set_i(v[0]);
    else
      for (int64_t x : v) a->add_ints(x);
  };
  addNode(g, "ReduceProd", {"c"}, "prod");                        // all axes, kept: [[720]]
  ints(addNode(g, "ReduceMean", {"c"}, "mean"), "axes", {0});     // [[2.5 3.5 4.5]]
  auto* sum = addNode(g, "ReduceSum", {"c", "one_axis"}, "sum");  // [6 15], then viewed [2, 1]
  ints(sum, "keepdims", {0});
  addInitializer(g, "column", {2}, {2, 1}, onnx::TensorProto::INT64);
  addNode(g, "Reshape", {"sum", "column"}, "sum_column");
  addNode(g, "CumSum", {"c", "one_axis"}, "running");             // [[1 3 6] [4 9 15]]
  ints(addNode(g, "ReduceL2", {"c"}, "l2"), "axes", {-1});        // [[sqrt 14] [sqrt 77]]
  ints(addNode(g, "ReduceSumSquare", {"c"}, "squares"), "axes", {0});  // [[17 29 45]]
  ints(addNode(g, "ReduceMin", {"c"}, "least"), "axes", {-2});         // [[1 2 3]]
  auto* back = addNode(g, "CumSum", {"c", "zero_axis"}, "back");  // reverse, exclusive: [[4 5 6] [0 0 0]]
  ints(back, "reverse", {1});
  ints(back, "exclusive", {1});
  addNode(g, "Mul", {"x", "prod"}, "t0");
  addNode(g, "Add", {"t0", "mean"}, "t1");
  addNode(g, "Add", {"t1", "sum_column"}, "t2");
  addNode(g, "Add", {"t2", "running"}, "t3");
  addNode(g, "Add", {"t3", "back"}, "t4");
  addNode(g, "Add", {"t4", "l2"}, "t5");
  addNode(g, "Add", {"t5", "squares"}, "t6");
  addNode(g, "Add", {"t6", "least"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "folds.onnx"));
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  const float mean[3] = {2.5f, 3.5f, 4.5f}, sums[2] = {6, 15}, running[6] = {1, 3, 6, 4, 9, 15},
              after[6] = {4, 5, 6, 0, 0, 0}, l2[2] = {std::sqrt(14.0f), std::sqrt(77.0f)},
              squares[3] = {17, 29, 45};
  ASSERT_EQ(y.size(), 6u);
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y[static_cast<size_t>(i)], x[static_cast<size_t>(i)] * 720 + mean[i % 3] + sums[i / 3] +
                                                   running[i] + after[i] + l2[i / 3] + squares[i % 3] +
                                                   static_cast<float>(1 + i % 3))
        << i;
  EXPECT_EQ(opCounts(graph)["mul"] + opCounts(graph)["add"],
            8);  // the constants folded, the stream's ops kept
  EXPECT_EQ(graph.ops.size(), 8u);
}

// A mask written by slice assignment (BLOOM's `mask[:, past:] = ...`, an in-place write of a table)
// exports ScatterND or ScatterElements over constants: folded, each value here worked by hand, a
// negative index counted from the end and `reduction` honoured.
TEST(Onnx, ScattersIntoConstantsFold) {
  onnx::ModelProto m = modelWithInput(17, "scatters", {2, 3});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "zeros", {2, 3}, {0, 0, 0, 0, 0, 0});
  addInitializer(g, "cells", {2, 2}, {0, 1, 1, 2}, onnx::TensorProto::INT64);  // (0, 1) and (1, 2)
  addInitializer(g, "cell_values", {2}, {5, 7});
  addInitializer(g, "last_row", {1, 1}, {-1}, onnx::TensorProto::INT64);
  addInitializer(g, "row_values", {1, 3}, {1, 2, 3});
  addInitializer(g, "columns", {2, 1}, {2, 0}, onnx::TensorProto::INT64);
  addInitializer(g, "column_values", {2, 1}, {9, 8});
  addNode(g, "ScatterND", {"zeros", "cells", "cell_values"}, "cells_set");  // [[0 5 0] [0 0 7]]
  auto* add =
      addNode(g, "ScatterND", {"cells_set", "last_row", "row_values"}, "rows_added");  // [[0 5 0] [1 2 10]]
  auto* reduction = add->add_attribute();
  reduction->set_name("reduction");
  reduction->set_type(onnx::AttributeProto::STRING);
  reduction->set_s("add");
  auto* elements =
      addNode(g, "ScatterElements", {"zeros", "columns", "column_values"}, "placed");  // [[0 0 9] [8 0 0]]
  auto* axis = elements->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  addNode(g, "Add", {"rows_added", "placed"}, "table");  // [[0 5 9] [9 2 10]]
  addNode(g, "Add", {"x", "table"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "scatters.onnx"));
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  const float table[6] = {0, 5, 9, 9, 2, 10};
  ASSERT_EQ(y.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], x[i] + table[i]) << i;
  EXPECT_EQ(graph.ops.size(), 1u);  // the scatters folded into the one table added
}

// The coordinates of a constant's nonzero elements fold (mask.index_put_ at mask.nonzero()): NonZero of
// [[0 1 0] [1 0 1]] is [[0 1 1] [1 0 2]]; transposed, they place 5, 6 and 7 into a table of zeros.
TEST(Onnx, NonZeroOfAConstantFolds) {
  onnx::ModelProto m = modelWithInput(17, "nonzero", {2, 3});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "where", {2, 3}, {0, 1, 0, 1, 0, 1});
  addInitializer(g, "zeros", {2, 3}, {0, 0, 0, 0, 0, 0});
  addInitializer(g, "placed", {3}, {5, 6, 7});
  addNode(g, "NonZero", {"where"}, "coordinates");                  // [2, 3]
  addNode(g, "Transpose", {"coordinates"}, "tuples");               // [3, 2]
  addNode(g, "ScatterND", {"zeros", "tuples", "placed"}, "table");  // [[0 5 0] [6 0 7]]
  addNode(g, "Add", {"x", "table"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "nonzero.onnx"));
  EXPECT_EQ(graph.ops.size(), 1u);
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  EXPECT_EQ(y, (std::vector<float>{0.5f, 4.0f, 2.0f, 6.25f, 3.0f, 6.5f}));
}

// ScatterND of a stream at indices that form a box: rows 1 and 2 of a stream replaced by a table (the
// data's other rows sliced around it), and a stream written into a table of zeros and read back where
// it was written (Meta llama's KV cache, cache[:b, :s] = xk; keys = cache[:b, :s]) reads the stream
// itself: no concatenation, no cache, left in the graph. Values worked by hand.
TEST(Onnx, ScatterOfAStreamIntoABoxIsAConcatenation) {
  onnx::ModelProto m = modelWithInput(17, "scatter_stream", {4, 3});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "rows", {2, 1}, {1, 2}, onnx::TensorProto::INT64);
  addInitializer(g, "table", {2, 3}, {7, 8, 9, 1, 2, 3});
  addNode(g, "ScatterND", {"x", "rows", "table"}, "y");  // [x0; 7 8 9; 1 2 3; x3]
  addInitializer(g, "cache", {6, 3}, std::vector<double>(18, 0.0));
  addInitializer(g, "first_four", {4, 1}, {0, 1, 2, 3}, onnx::TensorProto::INT64);
  addNode(g, "ScatterND", {"cache", "first_four", "x"}, "written");
  addInitializer(g, "zero", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "four", {1}, {4}, onnx::TensorProto::INT64);
  addNode(g, "Slice", {"written", "zero", "four", "zero"}, "keys");  // x itself
  addNode(g, "Neg", {"keys"}, "z");
  g->add_output()->set_name("y");
  g->add_output()->set_name("z");
  Graph graph = importOnnx(writeModel(m, "scatter_stream.onnx"));
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f, 4.0f, 5.0f, 6.0f, -2.0f, -3.0f, 1.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{4, 3}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  std::vector<float> y = out.at(graph.outputs.at(0)).data, z = out.at(graph.outputs.at(1)).data;
  const float expected[12] = {0.5f, -1.0f, 2.0f, 7, 8, 9, 1, 2, 3, -2.0f, -3.0f, 1.5f};
  ASSERT_EQ(y.size(), 12u);
  ASSERT_EQ(z.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(y[i], expected[i]) << i;
    EXPECT_FLOAT_EQ(z[i], -x[i]) << i;
  }
  auto counts = opCounts(graph);
  EXPECT_EQ(counts["concat"], 1);  // y's; the cache's is gone
  EXPECT_EQ(counts["slice"], 2);   // x's rows 0 and 3
  EXPECT_EQ(counts["mul"], 1);     // z = -1 * x
  EXPECT_EQ(graph.ops.size(), 4u);
  for (const auto& w : graph.weights)
    EXPECT_EQ(w.name.find("written"), std::string::npos) << w.name;  // no cache
}

// A Gather of a stream at indices in several runs (index_select of heads at arange(h) // rep) is a slice
// per run, concatenated: [3, 4, 0, 0, 1, 2] takes columns 3..4, 0, then 0..2 (three runs, one repeat).
TEST(Onnx, AGatherOfAStreamInRunsIsConcatenatedSlices) {
  onnx::ModelProto m = modelWithInput(17, "gather_runs", {2, 5});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "columns", {6}, {3, 4, 0, 0, 1, 2}, onnx::TensorProto::INT64);
  auto* gather = addNode(g, "Gather", {"x", "columns"}, "y");
  auto* axis = gather->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "gather_runs.onnx"));
  EXPECT_EQ(opCounts(graph), (std::map<std::string, int>{{"slice", 3}, {"concat", 1}}));
  std::vector<float> x = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14};
  std::vector<float> y = interpret(graph, {{"x", Tensor{{2, 5}, x}}}).at(graph.outputs.at(0)).data;
  EXPECT_EQ(y, (std::vector<float>{3, 4, 0, 0, 1, 2, 13, 14, 10, 10, 11, 12}));
}

// ScatterElements of a stream whose indices run along the axis (index_copy_ at cache_position, Hugging
// Face's StaticCache) is the same box: rows 1 and 2 of a table of zeros are x; indices out of order are
// refused by name.
TEST(Onnx, ScatterElementsOfAStreamAlongARunIsABox) {
  for (bool run : {true, false}) {
    onnx::ModelProto m = modelWithInput(17, "scatter_elements", {2, 3});
    onnx::GraphProto* g = m.mutable_graph();
    addInitializer(g, "cache", {4, 3}, std::vector<double>(12, 0.0));
    addInitializer(g, "rows", {2, 3},
                   run ? std::vector<double>{1, 1, 1, 2, 2, 2} : std::vector<double>{2, 2, 2, 1, 1, 1},
                   onnx::TensorProto::INT64);
    addNode(g, "ScatterElements", {"cache", "rows", "x"}, "y");
    g->add_output()->set_name("y");
    std::string path = writeModel(m, "scatter_elements.onnx");
    if (!run) {
      EXPECT_NE(
          errorOf(path).find("(ScatterElements of a stream at indices that are not a run along its axis)"),
          std::string::npos)
          << errorOf(path);
      continue;
    }
    Graph graph = importOnnx(path);
    std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f};
    std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3}, x}}};
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
    EXPECT_EQ(y, (std::vector<float>{0, 0, 0, 0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f, 0, 0, 0}));
  }
}

// A cache written in place, read back where it was written and also a model output through an Identity
// (an output that is the cache whole): the read is the stream, and the cache stays for the output.
TEST(Onnx, AScatteredCacheThatIsAlsoAnOutputStays) {
  onnx::ModelProto m = modelWithInput(17, "cache_out", {2, 3});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "cache", {3, 3}, std::vector<double>(9, 0.0));
  addInitializer(g, "first_two", {2, 1}, {0, 1}, onnx::TensorProto::INT64);
  addNode(g, "ScatterND", {"cache", "first_two", "x"}, "written");
  addInitializer(g, "zero", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "two", {1}, {2}, onnx::TensorProto::INT64);
  addNode(g, "Slice", {"written", "zero", "two", "zero"}, "keys");
  addNode(g, "Identity", {"keys"}, "keys_out");    // the read, an output
  addNode(g, "Identity", {"written"}, "present");  // the cache, an output
  g->add_output()->set_name("keys_out");
  g->add_output()->set_name("present");
  Graph graph = importOnnx(writeModel(m, "cache_out.onnx"));
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  auto out = interpret(graph, values);
  EXPECT_EQ(out.at(graph.outputs.at(0)).data, x);
  EXPECT_EQ(out.at(graph.outputs.at(1)).data,
            (std::vector<float>{0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.5f, 0, 0, 0}));
  for (const std::string& o : graph.outputs) EXPECT_NE(o, "x");  // no output is the input itself
}

// A scatter of a stream the design cannot express is refused by name: indices that are not a box.
TEST(Onnx, ScatterOfAStreamOutsideABoxIsRefusedByName) {
  onnx::ModelProto m = modelWithInput(17, "scatter_refused", {4, 3});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "rows", {2, 1}, {2, 0}, onnx::TensorProto::INT64);  // out of order
  addInitializer(g, "table", {2, 3}, {7, 8, 9, 1, 2, 3});
  addNode(g, "ScatterND", {"x", "rows", "table"}, "y");
  g->add_output()->set_name("y");
  try {
    importOnnx(writeModel(m, "scatter_refused.onnx"));
    FAIL() << "expected a refusal";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "(ScatterND of a stream at indices that are not a box of the data in its order)"),
              std::string::npos)
        << e.what();
  }
}

// In a static model a size turns symbolic only past a node that makes one unknown (NonZero here): the
// refusal names that node, and lists the shape arithmetic after it apart, as what it holds up.
TEST(Onnx, NodesPastARefusedOneAreListedApart) {
  onnx::ModelProto m = modelWithInput(17, "nonzero_rows", {8, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "zero", {}, {0});
  addInitializer(g, "one", {}, {1}, onnx::TensorProto::INT64);
  addInitializer(g, "first", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "rest", {1}, {-1}, onnx::TensorProto::INT64);
  addNode(g, "Greater", {"x", "zero"}, "positive");
  addNode(g, "NonZero", {"positive"}, "where");
  addNode(g, "Shape", {"where"}, "found");
  addNode(g, "Gather", {"found", "one"}, "count");
  addNode(g, "Unsqueeze", {"count", "first"}, "rows");
  onnx::AttributeProto* axis = addNode(g, "Concat", {"rows", "rest"}, "shape")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addNode(g, "Reshape", {"x", "shape"}, "y");
  g->add_output()->set_name("y");
  std::string error = errorOf(writeModel(m, "nonzero_rows.onnx"));
  EXPECT_NE(error.find("error: unsupported: 1 node(s):\n  where_node (NonZero)\nand "), std::string::npos)
      << error;
  EXPECT_NE(error.find("node(s) after them, over the sizes they leave unknown:\n  found_node (Shape"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("\n  y_node (Reshape"), std::string::npos) << error;
}

// x.norm(dim=-1) (ReduceL2, as F.normalize exports it) is the square root of a sum of squares, and
// ReduceSumSquare the sum itself, of a stream over its last axis.
TEST(Onnx, NormsOfAStreamAreSumsOfSquares) {
  onnx::ModelProto m = modelWithInput(17, "norms", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  for (const char* op : {"ReduceL2", "ReduceSumSquare"}) {
    auto* n = addNode(g, op, {"x"}, op == std::string("ReduceL2") ? "l2" : "squares");
    auto* a = n->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(-1);
  }
  addNode(g, "Div", {"x", "l2"}, "unit");
  addNode(g, "Add", {"unit", "squares"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "norms.onnx"));
  std::vector<float> x = {3, 4, 0, 0, 1, -2, 2, 4};  // norms 5 and 5; sums of squares 25 and 25
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(y[i], x[i] / 5 + 25, 1e-5) << i;
}

// An RMS scaling is an rmsnorm only of the tensor whose mean of squares it divides by, and only where its
// statistics are its own: w * (y / sqrt(mean(x^2) + eps)) with y = 2x + 1 (a branch scaled by the RMS of
// its input), or y times the reciprocal, stays ops, as does a norm whose mean of squares is added to the
// result again (v reused).
// Before, the first became rmsnorm(x) * w, y computed and dropped (wrong values, which the interpreter
// shared), and the second stopped the import ("uses '..', which is not defined before it").
TEST(Onnx, AnRmsScalingOfAnotherTensorOrSharedStatisticsIsNoNorm) {
  for (int variant : {0, 1, 2}) {
    const bool otherNumerator = variant < 2, reciprocal = variant == 1;
    SCOPED_TRACE(variant == 0   ? "(2x + 1) / rms"
                 : variant == 1 ? "(2x + 1) * (1 / rms)"
                                : "mean of squares read again");
    onnx::ModelProto m = modelWithInput(17, "scaling", {2, 4});
    onnx::GraphProto* g = m.mutable_graph();
    addInitializer(g, "two", {}, {2.0});
    addInitializer(g, "one", {}, {1.0});
    addInitializer(g, "eps", {}, {0.0});
    addInitializer(g, "w", {4}, {1.0, 2.0, 3.0, 4.0});
    auto* mean = addNode(g, "ReduceMean", {"sq"}, "v");
    auto* a = mean->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(-1);
    addNode(g, "Pow", {"x", "two"}, "sq");
    addNode(g, "Mul", {"x", "two"}, "x2");
    addNode(g, "Add", {"x2", "one"}, "y0");
    addNode(g, "Add", {"v", "eps"}, "ve");
    addNode(g, "Sqrt", {"ve"}, "rms");
    if (reciprocal) {
      addNode(g, "Reciprocal", {"rms"}, "inv");
      addNode(g, "Mul", {"y0", "inv"}, "unit");
    } else {
      addNode(g, "Div", {otherNumerator ? "y0" : "x", "rms"}, "unit");
    }
    addNode(g, "Mul", {"unit", "w"}, otherNumerator ? "y" : "scaled");
    if (!otherNumerator) addNode(g, "Add", {"scaled", "v"}, "y");
    g->add_output()->set_name("y");
    // ONNX wants nodes in topological order: the mean after its Pow.
    std::swap(*g->mutable_node(0), *g->mutable_node(1));
    Graph graph = importOnnx(writeModel(m, "scaling.onnx"));
    EXPECT_EQ(opCounts(graph)["rmsnorm"], 0);
    std::vector<float> x = {3, 4, 0, 0, 1, -1, 1, -1};  // mean squares 6.25 and 1: RMS 2.5 and 1
    std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}};
    for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
    std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
    ASSERT_EQ(y.size(), 8u);
    for (size_t i = 0; i < 8; ++i) {
      float rms = i < 4 ? 2.5f : 1.0f, ms = rms * rms, w = static_cast<float>(i % 4 + 1);
      float want = otherNumerator ? (2 * x[i] + 1) / rms * w : x[i] / rms * w + ms;
      EXPECT_NEAR(y[i], want, 1e-5) << i;
    }
  }
}

// A rotary over the whole head written as a partial one (Qwen-1, GPT-NeoX at rotary_pct 1.0): x[..., :8]
// and x[..., 8:], the second empty, concatenated back. The empty operand adds nothing and is dropped;
// before, its slice [8, 8) stopped the import ("is not inside dimension 8").
TEST(Onnx, AnEmptySliceConcatenatedAddsNothing) {
  onnx::ModelProto m = modelWithInput(17, "full_rotary", {2, 8});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "zero", {1}, {0}, onnx::TensorProto::INT64);
  addInitializer(g, "eight", {1}, {8}, onnx::TensorProto::INT64);
  addInitializer(g, "last", {1}, {-1}, onnx::TensorProto::INT64);
  addNode(g, "Slice", {"x", "zero", "eight", "last"}, "rot");
  addNode(g, "Slice", {"x", "eight", "eight", "last"}, "pass");
  addNode(g, "Tanh", {"rot"}, "turned");
  auto* cat = addNode(g, "Concat", {"turned", "pass"}, "y");
  auto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-1);
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "full_rotary.onnx"));
  std::vector<float> x = {-2, -1, -0.5f, 0, 0.25f, 0.5f, 1, 3, 4, -4, 2, -3, 0.1f, -0.1f, 1.5f, -1.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 8}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(y[i], std::tanh(x[i]), 1e-6) << i;
}

// A reduction over another axis than the last (a mean over the rows, mean pooling) is the axis moved
// last by a transpose, reduced, and viewed as the node's shape: kept (keepdims) or dropped.
TEST(Onnx, ReductionsOverAnotherAxisMoveItLast) {
  onnx::ModelProto m = modelWithInput(17, "pooling", {2, 3, 4});
  onnx::GraphProto* g = m.mutable_graph();
  auto axes = [](onnx::NodeProto* n, int64_t axis, int64_t keep) {
    auto* a = n->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(axis);
    auto* k = n->add_attribute();
    k->set_name("keepdims");
    k->set_type(onnx::AttributeProto::INT);
    k->set_i(keep);
  };
  axes(addNode(g, "ReduceMean", {"x"}, "row_mean"), 1, 1);   // [2, 1, 4]
  axes(addNode(g, "ReduceMax", {"x"}, "batch_max"), -3, 0);  // [3, 4]
  addNode(g, "Add", {"x", "row_mean"}, "t");
  addNode(g, "Add", {"t", "batch_max"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "pooling.onnx"));
  EXPECT_EQ(opCounts(graph)["transpose"], 2);
  std::vector<float> x;
  for (int i = 0; i < 24; ++i) x.push_back(static_cast<float>((i * 7) % 11) - 5.0f);
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 3, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), 24u);
  auto at = [&](int b, int r, int c) { return x[static_cast<size_t>((b * 3 + r) * 4 + c)]; };
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) {
        float mean = (at(b, 0, c) + at(b, 1, c) + at(b, 2, c)) / 3, most = std::max(at(0, r, c), at(1, r, c));
        EXPECT_NEAR(y[static_cast<size_t>((b * 3 + r) * 4 + c)], at(b, r, c) + mean + most, 1e-5);
      }
  CompileResult r =
      compileGraph(graph, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()));
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {}), {}).deadlock);

  // A norm's statistics over the rows (axis 1) are not a layernorm over the last axis.
  onnx::ModelProto n = modelWithInput(17, "row_norm", {2, 3, 4});
  g = n.mutable_graph();
  addInitializer(g, "two", {}, {2.0f});
  addInitializer(g, "eps", {}, {1e-5f});
  axes(addNode(g, "ReduceMean", {"x"}, "m"), 1, 1);
  addNode(g, "Sub", {"x", "m"}, "c");
  addNode(g, "Pow", {"c", "two"}, "c2");
  axes(addNode(g, "ReduceMean", {"c2"}, "v"), 1, 1);
  addNode(g, "Add", {"v", "eps"}, "ve");
  addNode(g, "Sqrt", {"ve"}, "sd");
  addNode(g, "Div", {"c", "sd"}, "y");
  g->add_output()->set_name("y");
  Graph rows = importOnnx(writeModel(n, "row_norm.onnx"));
  EXPECT_EQ(opCounts(rows)["layernorm"], 0);
  values = {{"x", Tensor{{2, 3, 4}, x}}};
  for (const auto& [weight, v] : rows.values) values[weight] = Tensor{{}, v};
  y = interpret(rows, values).at(rows.outputs.at(0)).data;
  ASSERT_EQ(y.size(), 24u);
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 4; ++c) {
      float mean = (at(b, 0, c) + at(b, 1, c) + at(b, 2, c)) / 3, var = 0;
      for (int r = 0; r < 3; ++r) var += (at(b, r, c) - mean) * (at(b, r, c) - mean) / 3;
      for (int r = 0; r < 3; ++r)
        EXPECT_NEAR(y[static_cast<size_t>((b * 3 + r) * 4 + c)],
                    (at(b, r, c) - mean) / std::sqrt(var + 1e-5f), 1e-4);
    }
}

// f16 (raw_data) and f64 initializers, folded through Cast, become f32 values; an initializer whose data
// is in an external file becomes a weight without values rather than one of made-up zeros.
TEST(Onnx, ConvertsInitializerTypesAndLeavesExternalDataUnknown) {
  onnx::ModelProto m = tinyModel(17, {});
  onnx::GraphProto* g = m.mutable_graph();
  auto* half = g->add_initializer();
  half->set_name("half");
  half->set_data_type(onnx::TensorProto::FLOAT16);
  half->add_dims(4);
  const uint16_t halfBits[] = {0x3E00, 0xC000, 0x0001, 0x7BFF};  // 1.5, -2, 2^-24 (subnormal), 65504
  half->set_raw_data(std::string(reinterpret_cast<const char*>(halfBits), sizeof halfBits));
  auto* wide = g->add_initializer();
  wide->set_name("wide");
  wide->set_data_type(onnx::TensorProto::DOUBLE);
  wide->add_dims(4);
  for (double v : {0.25, -3.0, 1e10, 7.0}) wide->add_double_data(v);
  auto* outside = g->add_initializer();
  outside->set_name("outside");
  outside->set_data_type(onnx::TensorProto::FLOAT);
  outside->add_dims(4);
  outside->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = outside->add_external_data();
  location->set_key("location");
  location->set_value("outside.bin");
  auto node = [&](const std::string& op, std::vector<std::string> ins, const std::string& out) {
    auto* n = addNode(g, op, ins, out);
    if (op == "Cast") {
      auto* to = n->add_attribute();
      to->set_name("to");
      to->set_type(onnx::AttributeProto::INT);
      to->set_i(onnx::TensorProto::FLOAT);
    }
  };
  node("Cast", {"half"}, "half_f32");
  node("Cast", {"wide"}, "wide_f32");
  node("Add", {"x", "half_f32"}, "a");
  node("Mul", {"a", "wide_f32"}, "b");
  node("Add", {"b", "outside"}, "c");
  g->mutable_output(0)->set_name("c");
  Graph graph = importOnnx(writeModel(m, "types.onnx"));
  ASSERT_EQ(graph.weights.size(), 3u);
  EXPECT_EQ(graph.values.at("half_f32"), (std::vector<float>{1.5f, -2.0f, std::ldexp(1.0f, -24), 65504.0f}));
  EXPECT_EQ(graph.values.at("wide_f32"), (std::vector<float>{0.25f, -3.0f, 1e10f, 7.0f}));
  EXPECT_EQ(graph.values.count("outside"), 0u);
}

// Blocks written as reference implementations write them (tools/export_onnx_models.py): nanoGPT's
// masked_fill of a tril buffer, Hugging Face's repeat_kv (expand + reshape) and repeat_interleave, whose
// target shapes torch computes with Shape, ConstantOfShape, Equal, Where and Expand over constants, and
// elementwise functions outside any pattern. They import, compile and simulate.
TEST(Onnx, ReferenceIdiomsImportCompileAndSimulate) {
  const std::vector<const char*> idioms = {"causal_attention.onnx",
                                           "gqa_attention.onnx",
                                           "gqa_interleave.onnx",
                                           "pointwise.onnx",
                                           "select_mlp.onnx",
                                           "einsum_attention.onnx",
                                           "sliding_window_attention.onnx",
                                           "tiled_mlp.onnx",
                                           "rope_in_forward.onnx",
                                           "qwen2_block.onnx",
                                           "gemma_block.onnx",
                                           "phi_block.onnx",
                                           "gptj_block.onnx",
                                           "falcon_block.onnx",
                                           "alibi_attention.onnx",
                                           "neox_block.onnx",
                                           "torch_mha.onnx",
                                           "torch_encoder_layer.onnx",
                                           "t5_decoder_attention.onnx",
                                           "t5_encoder_attention.onnx",
                                           "meta_llama_attention.onnx",
                                           "opt_positions.onnx",
                                           "norm_variants.onnx",
                                           "masked_fills.onnx",
                                           "input_views.onnx",
                                           "mqa_broadcast.onnx",
                                           "gqa_broadcast.onnx",
                                           "more_activations.onnx",
                                           "threshold_selects.onnx",
                                           "norm_weight_shapes.onnx",
                                           "jax_einsums.onnx",
                                           "pads_and_reductions.onnx",
                                           "rank_broadcast_matmuls.onnx",
                                           "logsumexp_pools.onnx",
                                           "rounding_ops.onnx",
                                           "axis_softmaxes.onnx",
                                           "padding_mask_attention.onnx",
                                           "gqa_bidirectional.onnx",
                                           "stream_rotary.onnx",
                                           "disentangled_gather.onnx",
                                           "repeat_interleave_table.onnx",
                                           "min_pools.onnx",
                                           "hf_gpt2_attention.onnx",
                                           "mpt_attention.onnx"};
  for (const char* name : idioms) {
    Graph g = importOnnx(model(name));
    EXPECT_TRUE(verifyGraph(g).empty()) << name;
    CompileResult r = compileGraph(g, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()));
    EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {}), {}).deadlock) << name;
  }
  // stc's interpreter against torch's own output for torch's input (NAME.io.bin, written by the exporter).
  for (const char* name : idioms) {
    SCOPED_TRACE(name);
    expectTorchOutput(importOnnx(model(name)), model(name) + ".io.bin");
  }
  // The masks (masked_fill of a tril buffer, torch.where of one, an added triu of -inf or -1e4) become
  // a causal softmax: nothing adds a mask of 8 x 8 any more.
  // Also Meta's llama reference's triu of -inf concatenated after no columns, Qwen2's finfo.min triu added,
  // Gemma's mask after a soft-cap, Phi's -inf triu added, GPT-J's where before the division by
  // sqrt(head_dim), Falcon's -1e9, ALiBi's masked_fill after its bias, and the bool masks
  // torch.nn.MultiheadAttention and TransformerEncoderLayer turn into -inf, and T5's mask after its position
  // bias with a cast to float before the softmax.
  for (const char* name :
       {"causal_attention.onnx", "gqa_attention.onnx", "gpt2_block.onnx", "llama_block.onnx",
        "einsum_attention.onnx", "qwen2_block.onnx", "gemma_block.onnx", "phi_block.onnx", "gptj_block.onnx",
        "falcon_block.onnx", "alibi_attention.onnx", "neox_block.onnx", "torch_mha.onnx",
        "torch_encoder_layer.onnx", "t5_decoder_attention.onnx", "meta_llama_attention.onnx",
        "hf_gpt2_attention.onnx", "mpt_attention.onnx"}) {
    Graph g = importOnnx(model(name));
    int causal = 0;
    for (const auto& op : g.ops) {
      causal += isCausal(op);
      if (op.op == "add") {
        EXPECT_FALSE(g.values.count(op.inputs[1]) && g.values.at(op.inputs[1]).size() == 64) << name;
      }
    }
    EXPECT_EQ(causal, 1) << name;
  }
  // T5's relative-position bias (a Gather of its [buckets, heads] table at buckets computed from constants)
  // folds into one constant added to the scores: no embedding lookup of constant ids.
  for (const char* name : {"t5_decoder_attention.onnx", "t5_encoder_attention.onnx"}) {
    auto counts = opCounts(importOnnx(model(name)));
    EXPECT_EQ(counts.count("embedding"), 0u) << name;
    EXPECT_EQ(counts["add"], 1) << name;
  }
  // Mistral's sliding window (finfo.min above the diagonal and more than 3 keys back, built with arange, a
  // comparison, a bool tril and masked_fill in place) folds to one constant added before the softmax: not
  // causal, so it stays an addition.
  {
    Graph g = importOnnx(model("sliding_window_attention.onnx"));
    int masks = 0;
    for (const auto& op : g.ops) {
      if (op.op != "add" || !g.values.count(op.inputs[1]) || g.values.at(op.inputs[1]).size() != 64) continue;
      ++masks;
      const std::vector<float>& m = g.values.at(op.inputs[1]);
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j)
          EXPECT_EQ(m[static_cast<size_t>(i * 8 + j)], j > i || j <= i - 3 ? std::numeric_limits<float>::lowest() : 0.0f)
              << i << "," << j;
    }
    EXPECT_EQ(masks, 1);
  }
  // x.repeat(1, 2) is a concat of x with itself; softplus and log are ops of their own. A rope table that
  // forward computes (outer of constants, an Einsum; cat; cos; sin) folds, and the rotation is one rope.
  std::map<std::string, int> tiled = {{"matmul", 1}, {"concat", 1}, {"mul", 2}, {"add", 4}, {"softplus", 1},
                                      {"log", 1}};
  auto tiledCounts = opCounts(importOnnx(model("tiled_mlp.onnx")));
  EXPECT_EQ(tiledCounts, tiled);
  EXPECT_EQ(opCounts(importOnnx(model("rope_in_forward.onnx")))["rope"], 1);
  // Angles computed from data (Hugging Face 4.38+'s inv_freq @ position_ids, the positions an input there):
  // cos and sin of a stream are ops of their own, each once, over cat((freqs, freqs)), a concat of one
  // stream with itself (a converter per port: a shared one deadlocked at the compiler's depths, above);
  // rotate_half of q and k, with angles not constant, are the other two concats.
  auto streamRotary = opCounts(importOnnx(model("stream_rotary.onnx")));
  EXPECT_EQ(streamRotary["sin"], 1);
  EXPECT_EQ(streamRotary["cos"], 1);
  EXPECT_EQ(streamRotary["concat"], 3);
  // torch's repeat_interleave where its tracer does not know a size is a Loop over SplitToSequence. Of a
  // rotary table forward computes (Cohere's repeat_interleave(outer(arange(s), inv_freq), 2, dim=-1)),
  // constants alone: its cos and sin fold to tables, pair j of position p at p / 10000^(2 (j / 2) / 64).
  {
    Graph table = importOnnx(model("repeat_interleave_table.onnx"));
    int cosines = 0, sines = 0;
    for (const auto& [name, values] : table.values) {
      if (values.size() != 8 * 64) continue;
      bool cosine = true, sine = true;
      for (int p = 0; p < 8; ++p)
        for (int j = 0; j < 64; ++j) {
          double angle = p / std::pow(10000.0, (2 * (j / 2)) / 64.0);
          double v = values[static_cast<size_t>(p * 64 + j)];
          cosine = cosine && std::abs(v - std::cos(angle)) < 1e-5;
          sine = sine && std::abs(v - std::sin(angle)) < 1e-5;
        }
      cosines += cosine;
      sines += sine;
    }
    EXPECT_EQ(cosines, 1);
    EXPECT_EQ(sines, 1);
  }
  // Of keys over a symbolic sequence (mistral-src's repeat_kv along dim 2 of [b, s, kv, hd]), fixed at
  // import: an unsqueeze, expand and reshape, the interpreter giving torch's output at seq 8.
  expectTorchOutput(importOnnx(model("repeat_interleave_kv_seq.onnx"), {{"seq", 8}}),
                    model("repeat_interleave_kv_seq.onnx") + ".io.bin");
  // Its pieces there are [1, 8, 16, 2] where torch's are [1, 8, 4, 16], but repeat_kv's reshape right after
  // reads the values in the same order: no note. A table [8, 8] repeated along its first axis, its slices
  // [1, 2, 8] reshaped with [-1, 0] to [8, 2] (torch's [2, 8]), so that a slice and a sum read the whole as
  // [64, 2] (torch's [16, 8]), imports what ONNX defines, with a note.
  EXPECT_TRUE(importOnnx(model("repeat_interleave_kv_seq.onnx"), {{"seq", 8}}).notes.empty());
  // Left free, the Loop (which only a ConcatFromSequence reads) no longer stops the axis staying a symbol:
  // each import at a fixed size rewrites it, and the two show where its sizes go. Bound at 8, torch's
  // output again.
  {
    Graph g = importOnnx(model("repeat_interleave_kv_seq.onnx"), {}, true);
    ASSERT_EQ(g.inputs.at(0).shape.size(), 3u);
    EXPECT_EQ(g.inputs.at(0).shape[1].str(), "seq");
    ASSERT_EQ(g.notes.size(), 1u);  // the axis kept a symbol; the Loop's shape is torch's
    EXPECT_NE(g.notes[0].find("the graph keeps the axis a symbol"), std::string::npos) << g.notes[0];
    expectTorchOutput(g, model("repeat_interleave_kv_seq.onnx") + ".io.bin", {{"seq", 8}});
  }
  {
    std::vector<std::string> notes = importOnnx(model("repeat_interleave_rows.onnx")).notes;
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find(
                  "torch's repeat_interleave Loop at '/ConcatFromSequence' makes [64, 2] where torch's own "
                  "result is [16, 8]"),
              std::string::npos)
        << notes[0];
    EXPECT_NE(notes[0].find("'/Slice' reads it by that shape"), std::string::npos) << notes[0];
  }
  // Of keys [b, kv, s, hd] along dim 1 (OpenELM's), torch's Loop reshapes each slice [1, 1, 2, 8, 16] with
  // [0, -1, 0, 0], a 0 keeping the 2 where torch meant the sequence: the ONNX model's product of q and k
  // does not meet, so it computes nothing. The Loop's values are torch's, in torch's order: at torch's
  // shape the model holds together, and imports so, with a note; the interpreter gives torch's output.
  {
    Graph g = importOnnx(model("repeat_interleave_heads_seq.onnx"), {{"seq", 8}});
    ASSERT_EQ(g.notes.size(), 1u);
    EXPECT_NE(g.notes[0].find("torch's repeat_interleave Loop at '/ConcatFromSequence' makes [1, 32, 2, 8] "
                              "where torch's own result is [1, 4, 8, 16]"),
              std::string::npos)
        << g.notes[0];
    EXPECT_NE(g.notes[0].find("does not hold together at that shape: imported at torch's"), std::string::npos)
        << g.notes[0];
    expectTorchOutput(g, model("repeat_interleave_heads_seq.onnx") + ".io.bin");
  }
  // A whole two-layer Llama: torch.repeat_interleave of two KV heads whose other sizes the tracer lost
  // (after the rotary, or over the dynamic seq) is split into slices, each unsqueezed, expanded to
  // [1, 1, 2, s, 8] and reshaped with [1, -1, 0, 8]: ONNX's 0 keeps the 2, so the values, [1, 2 * s, 2, 8]
  // joined, meet no product. Torch meant [1, 4, s, 8]: imported so, with a note, fixed or symbolic.
  {
    const std::string tiny = model("tiny_llama_seq.onnx");
    Graph fixed = importOnnx(tiny, {{"seq", 6}});
    std::string notes;
    for (const std::string& n : fixed.notes) notes += n + "\n";
    EXPECT_NE(
        notes.find("(a Split's slices expanded and reshaped) makes [1, 12, 2, 8] where torch's own result "
                   "is [1, 4, 6, 8]"),
        std::string::npos)
        << notes;
    expectTorchOutput(fixed, tiny + ".io.bin");
    Graph free = importOnnx(tiny, {}, true);
    EXPECT_EQ(free.inputs.at(1).shape.at(1).str(), "seq");
    expectTorchOutput(free, tiny + ".io.bin", {{"seq", 6}});
  }
  // A decode step over a cache given as inputs (Hugging Face's past_key_values), the new keys and values
  // appended by torch.cat along a symbolic `past`: the graph keeps `past` a symbol, which the concat does
  // not take (shape inference refuses it); fixed at import, the model goes through and computes torch's y.
  {
    Graph free = importOnnx(model("cached_attention_past.onnx"));
    ASSERT_EQ(free.inputs.size(), 3u);
    EXPECT_EQ(free.inputs[1].shape[2].str(), "past");
    try {
      inferShapes(free);
      ADD_FAILURE() << "a concat along a symbolic dimension went through shape inference";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("concat along a symbolic dimension"), std::string::npos)
          << e.what();
    }
    Graph fixed = importOnnx(model("cached_attention_past.onnx"), {{"past", 7}});
    EXPECT_EQ(inferShapes(fixed).tensors.at(fixed.outputs.at(0)).shape.size(), 3u);
    expectTorchOutput(fixed, model("cached_attention_past.onnx") + ".io.bin");
  }
  // DeBERTa-v2's torch.gather of the content-to-position scores per query row at constant indices (log
  // buckets of relative positions: sign, log and ceil of constants, folded) is a product by a selection
  // per row: the scores viewed [b * heads, s, 2 * span], walked rows outer, times S [s, 2 * span, s], and
  // back: 9 matmuls (q, k, v, o, pos_k, q.pos_key, q.k, w.v and the selection). With span 4 the clamp
  // leaves the buckets' logs no say: row r's column j takes position clamp(r - j + 4, 0, 7).
  Graph gathered = importOnnx(model("disentangled_gather.onnx"));
  EXPECT_EQ(opCounts(gathered)["matmul"], 9);
  int selections = 0;
  for (const TensorDecl& w : gathered.weights) {
    if (w.shape.size() != 3 || w.shape[0].eval() != 8 || w.shape[1].eval() != 8 || w.shape[2].eval() != 8)
      continue;
    ++selections;
    const std::vector<float>& pick = gathered.values.at(w.name);
    for (int r = 0; r < 8; ++r)
      for (int k = 0; k < 8; ++k)
        for (int j = 0; j < 8; ++j)
          EXPECT_EQ(pick[static_cast<size_t>((r * 8 + k) * 8 + j)],
                    k == std::clamp(r - j + 4, 0, 7) ? 1.0f : 0.0f)
              << r << "," << k << "," << j;
  }
  EXPECT_EQ(selections, 1);
  // Each function is its own op (nothing fused into a pattern); torch writes rsqrt as 1 / sqrt.
  auto counts = opCounts(importOnnx(model("pointwise.onnx")));
  for (const char* op : {"erf", "sigmoid", "pow", "abs", "max", "min"}) EXPECT_EQ(counts[op], 1) << op;
  EXPECT_EQ(counts["sqrt"], 2);
  // Selects on data: each of the three torch.where is select(a, c) + select(b, c == 0) over its comparison
  // (>, <, >=): 2 selects, an equal and an add each; 0.01 * h and the last product two multiplies, the
  // final sum one more add. clamp and hardtanh (Clip) are a max and a min each; the einsum is the second
  // matmul (nn.Linear of 2-D x is a Gemm: the first, its bias inside).
  std::map<std::string, int> select = {{"matmul", 2}, {"greater", 1}, {"less", 1}, {"greater_equal", 1},
                                       {"equal", 3},  {"select", 6},  {"mul", 2},  {"add", 4},
                                       {"max", 2},    {"min", 2}};
  auto selectCounts = opCounts(importOnnx(model("select_mlp.onnx")));
  EXPECT_EQ(selectCounts, select);
  // Norm weights of shape [1, 1, d] and [1, d] are the norms' own; Cohere's per-head [heads, head_dim] weight
  // stays a multiply after a layernorm of scale 1 (it was fused, then refused as a scale not [16]).
  std::map<std::string, int> norms = {{"rmsnorm", 1}, {"layernorm", 2}, {"mul", 1},
                                      {"add", 3},     {"matmul", 2},    {"reshape", 2}};
  EXPECT_EQ(opCounts(importOnnx(model("norm_weight_shapes.onnx"))), norms);
  // JAX's einsums by [heads, d, head_dim] weights are matmuls by the weights laid out [d, heads * head_dim]
  // (and [heads * head_dim, d] back, the two summed dims merged), the product reshaped to heads: the three
  // projections, o and the two attention products make 6 matmuls; the gate's "bsd,d->bs" is x * v summed
  // (a product's column of 1 reshaped away would narrow the graph's tile to 1).
  // Hugging Face's RMSNorm casts to float32 and back to its input's dtype around the statistics (Qwen2's):
  // the casts are read through, and both norms fused (before, pow, mean, add, sqrt, div and mul apart).
  auto qwen2 = opCounts(importOnnx(model("qwen2_block.onnx")));
  EXPECT_EQ(qwen2["rmsnorm"], 2);
  EXPECT_EQ(qwen2.count("pow") + qwen2.count("sqrt") + qwen2.count("reduce_mean"), 0u);
  // The pads: the token shift's ZeroPad2d((0, 0, 1, -1)) a slice and a concat along the sequence, F.pad of
  // the width by 0.5 a concat of three; the mean over (heads, head_dim) needs no transpose, the amax over
  // (positions, head_dim) one.
  auto pads = opCounts(importOnnx(model("pads_and_reductions.onnx")));
  EXPECT_EQ(pads["concat"], 2);
  EXPECT_EQ(pads["reduce_mean"], 1);
  EXPECT_EQ(pads["reduce_max"], 1);
  EXPECT_EQ(pads["transpose"], 1);
  auto jax = opCounts(importOnnx(model("jax_einsums.onnx")));
  EXPECT_EQ(jax["matmul"], 6);
  EXPECT_EQ(jax["reduce_sum"], 1);
  EXPECT_EQ(jax.count("einsum"), 0u);
  // Einsum: q.k over heads laid out [b, q, h, d] transposes both operands to [b, h, q, d] and [b, h, d, k];
  // p.v ("bhqk,bkhd->bqhd") transposes v to [b, h, k, d] and the product back to [b, q, h, d].
  auto einsumCounts = opCounts(importOnnx(model("einsum_attention.onnx")));
  EXPECT_EQ(einsumCounts["matmul"], 4);  // qkv, two products, proj
  EXPECT_EQ(einsumCounts["transpose"], 4);
  // repeat_kv's copies become grouped-query attention: both products read the 2 KV heads themselves, with
  // the 4 query heads of 8 rows grouped as 2 x 16 rows (scores [1, 2, 16, 8], mixed [1, 2, 16, 16]), and
  // nothing adds the expand's zeros any more; repeat_interleave (a Split of the heads, copies, a Concat) the
  // same. Under a causal softmax over the prompt's own keys the copies stay: each query head's products
  // hold their keys (heldKeysOf), which the grouped rows could not.
  auto products = [](const char* name, int* held) {
    Graph gqa = importOnnx(model(name));
    TypedGraph typed = inferShapes(gqa);
    std::vector<std::vector<Expr>> shapes;
    for (const auto& op : gqa.ops) {
      if (op.op == "add" && gqa.values.count(op.inputs[1])) {  // no copy adds the expand's zeros
        const auto& w = gqa.values.at(op.inputs[1]);
        *held += std::all_of(w.begin(), w.end(), [](float v) { return v == 0.0f; }) ? 100 : 0;
      }
      if (op.op == "matmul" && typed.tensors.at(op.inputs[0]).shape.size() == 4) {
        shapes.push_back(typed.tensors.at(op.output).shape);
        *held += heldKeysOf(typed, op) != Kernel::HeldKeys::kNone;
      }
    }
    return shapes;
  };
  {
    int copies = 0;
    std::vector<std::vector<Expr>> want = {{Expr(1), Expr(2), Expr(16), Expr(8)}, {Expr(1), Expr(2), Expr(16), Expr(16)}};
    EXPECT_EQ(products("gqa_bidirectional.onnx", &copies), want);
    EXPECT_EQ(copies, 0);
  }
  for (const char* name : {"gqa_attention.onnx", "gqa_interleave.onnx", "llama_block.onnx"}) {
    int held = 0;  // 100 per add of zeros (K's and V's copies) and 1 per product holding its keys
    std::vector<std::vector<Expr>> want = {{Expr(1), Expr(4), Expr(8), Expr(8)},
                                           {Expr(1), Expr(4), Expr(8), Expr(16)}};
    EXPECT_EQ(products(name, &held), want) << name;
    EXPECT_EQ(held, 202) << name;
  }
  // Multi-query attention written with matmul's broadcasting: the right side's batch dims of 1 just before
  // the rows fold into them. One key head against 4 query heads of 8 rows (dh 16): scores [1, 1, 32, 8]
  // and mixed [1, 1, 32, 16]; grouped as [1, 2, 4, 8, 8] against [1, 2, 1, 8, 8] (8 heads, 2 KV heads, dh
  // 8): [1, 2, 1, 32, 8] twice. Each product's right side is the KV head itself, and the softmax
  // over the heads read back is causal.
  for (auto [name, want] : std::vector<std::pair<const char*, std::vector<std::vector<int64_t>>>>{
           {"mqa_broadcast.onnx", {{1, 1, 32, 8}, {1, 1, 32, 16}}},
           {"gqa_broadcast.onnx", {{1, 2, 1, 32, 8}, {1, 2, 1, 32, 8}}}}) {
    Graph g = importOnnx(model(name));
    TypedGraph typed = inferShapes(g);
    std::vector<std::vector<int64_t>> products;
    int causal = 0;
    for (const auto& op : g.ops) {
      causal += isCausal(op);
      if (op.op != "matmul" || typed.tensors.at(op.inputs[0]).shape.size() < 4) continue;
      std::vector<int64_t> dims;
      for (const Expr& d : typed.tensors.at(op.output).shape) dims.push_back(d.eval());
      products.push_back(dims);
      EXPECT_EQ(typed.tensors.at(op.inputs[1]).shape[1], Expr(want[0][1])) << name << " " << op.name;
    }
    EXPECT_EQ(products, want) << name;
    EXPECT_EQ(causal, 1) << name;
  }
  EXPECT_EQ(opCounts(importOnnx(model("gqa_attention.onnx")))["add"],
            2);  // K's and V's copies: the mask is the softmax's
  EXPECT_EQ(opCounts(importOnnx(model("gqa_interleave.onnx"))), opCounts(importOnnx(model("gqa_attention.onnx"))));
}

// Exports with a symbolic sequence length compute their views and masks from Shape of it; until those
// fold, each node that needs one is listed by name, op type and reason.
TEST(Onnx, ShapesComputedFromASymbolicDimensionAreListedNodeByNode) {
  std::string path = model("causal_tril_seq.onnx"), msg = errorOf(path);
  // (The Gathers of x.size(-1), a constant size of the symbolic shape, fold: 24 of the 37 nodes before.)
  EXPECT_EQ(
      msg.rfind(
          path + ": error: unsupported: 24 node(s):\n  /Shape (Shape of a value with a symbolic dimension)\n",
          0),
      0u)
      << msg;
  for (const char* line : {"\n  /Reshape (Reshape to a shape computed from a symbolic dimension)",
                           "\n  /Trilu (Trilu of a symbolic shape)",
                           "\n  /Where (Where with an operand computed from a symbolic dimension)"})
    EXPECT_NE(msg.find(line), std::string::npos) << line;
  // Nodes after the first that cannot be shaped stay off the list: the softmax and the projections do.
  EXPECT_EQ(msg.find("Softmax"), std::string::npos);
  EXPECT_EQ(msg.find("c_proj"), std::string::npos);
  // The list ends with the way out: fixing the axis at import.
  const std::string hint =
      "\n(the shape arithmetic over the model's dynamic axes folds once they are fixed at import: --set "
      "dim.seq=N; "
      "--bind NAME=N also fixes an axis where the import needs it)";
  EXPECT_EQ(msg.substr(msg.size() - hint.size()), hint) << msg;
}

// Where the sizes computed from a dynamic axis reach the data only as reshape and expand targets
// (grouped-query attention without a mask) or through masks of one form at every length, importing over
// the free axes (stc's commands do) takes the model at two sizes of the axis and keeps it a symbol: the
// reshapes' targets say it ([1, seq, 4, 16]), and at seq = 8 the graph computes what torch did.
TEST(Onnx, ShapeArithmeticReachingOnlyTargetsKeepsTheAxisSymbolic) {
  const std::string path = model("gqa_bidirectional_seq.onnx");
  EXPECT_NE(errorOf(path).find("/Reshape (Reshape to a shape computed from a symbolic dimension)"),
            std::string::npos);
  Graph g = importOnnx(path, {}, /*overFreeAxes=*/true);
  EXPECT_EQ(g.inputs.at(0).shape, (std::vector<Expr>{Expr(1), Expr::parse("seq"), Expr(64)}));
  std::set<std::string> targets;
  for (const Op& op : g.ops)
    if (op.op == "reshape")
      if (const auto* text = std::get_if<std::string>(&op.attrs.at("shape"))) targets.insert(*text);
  EXPECT_TRUE(targets.count("[1, seq, 4, 16]")) << ::testing::PrintToString(targets);
  EXPECT_TRUE(targets.count("[1, seq, 64]")) << ::testing::PrintToString(targets);
  TypedGraph typed = inferShapes(g);
  EXPECT_EQ(typed.symbols(), (std::set<std::string>{"seq"}));
  ASSERT_EQ(g.notes.size(), 1u);
  EXPECT_NE(g.notes[0].find("seq (imported at 11 and 13)"), std::string::npos) << g.notes[0];
  // The same ops as the import at 8 rows, and torch's output at 8 rows (the twin's, the same weights).
  Graph eight = importOnnx(path, {{"seq", 8}});
  EXPECT_EQ(opCounts(g), opCounts(eight));
  {
    SCOPED_TRACE("symbolic at seq=8");
    expectTorchOutput(g, model("gqa_bidirectional.onnx") + ".io.bin", {{"seq", 8}});
  }
  // Round trip through a graph file: the targets are written as sizes ([1, seq, 4, 16]).
  std::string text = emitGraph(g);
  EXPECT_NE(text.find("shape: [1, seq, 4, 16]"), std::string::npos);
  EXPECT_EQ(parseGraph(text, "g.yaml"), g);
  CompileResult r =
      compileGraph(g, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()));
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {{"seq", 24}}), {}).deadlock);
  // Causal masks of one form at every length keep the axis symbolic too, folded into the softmax: nanoGPT's
  // buffer of 16 positions sliced (imported at 5 and 7, below it; the note gives the longest length), a
  // tril of ones built in forward, Llama's additive mask with repeat_kv, Hugging Face GPT-2's buffer sliced
  // from the lengths after the views (bias[:, :, kl - ql : kl, :kl], x.size(-2) a Slice of a Shape: the
  // views' shapes known for the sizes to be), MPT's tril negated and sliced [-s:, -s:]. Each computes
  // torch's output at 8.
  for (const auto& [seq, twin] : std::vector<std::pair<std::string, std::string>>{
           {"causal_attention_seq.onnx", "causal_attention.onnx"},
           {"causal_tril_seq.onnx", "causal_attention.onnx"},
           {"gqa_attention_seq.onnx", "gqa_attention.onnx"},
           {"hf_gpt2_attention_seq.onnx", "hf_gpt2_attention.onnx"},
           {"mpt_attention_seq.onnx", "mpt_attention.onnx"}}) {
    SCOPED_TRACE(seq);
    Graph causal = importOnnx(model(seq.c_str()), {}, true);
    EXPECT_EQ(inferShapes(causal).symbols(), (std::set<std::string>{"seq"}));
    int softmaxes = 0;
    for (const Op& op : causal.ops) softmaxes += isCausal(op);
    EXPECT_EQ(softmaxes, 1);
    EXPECT_EQ(opCounts(causal), opCounts(importOnnx(model(seq.c_str()), {{"seq", 8}})));
    expectTorchOutput(causal, model(twin.c_str()) + ".io.bin", {{"seq", 8}});
    ASSERT_EQ(causal.notes.size(), 1u);
    const int64_t positions = seq == "causal_attention_seq.onnx"    ? 16
                              : seq == "hf_gpt2_attention_seq.onnx" ? 24
                                                                    : 0;
    const bool buffer = positions > 0;
    EXPECT_NE(causal.notes[0].find(buffer ? "seq (imported at 5 and 7)" : "seq (imported at 11 and 13)"),
              std::string::npos)
        << causal.notes[0];
    EXPECT_EQ(
        causal.notes[0].find("; its mask buffer holds " + std::to_string(positions) +
                             " positions, the longest seq the model takes (max_seq)") != std::string::npos,
        buffer)
        << causal.notes[0];
    // (The buffer's length is the graph's max_seq: compiling takes it, and refuses a larger one.)
    EXPECT_EQ(causal.maxima.size(), buffer ? 1u : 0u);
    EXPECT_EQ(causal.maxima.count("seq") ? causal.maxima.at("seq") : 0, positions);
    if (buffer) {
      EXPECT_EQ(
          compileGraph(causal, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()))
              .options.maxima.at("seq"),
          positions);
      EXPECT_THROW(
          compileGraph(causal, defaultPlatform(),
                       parseCompileOptions({"max_seq=" + std::to_string(positions + 1)}, defaultPlatform())),
          UserError);
    }
  }
  // Rotary tables from the positions of the length (outer(arange(T), inv_freq) in forward, Qwen2's block
  // with its causal mask): at every length the same rope op, no table left as a weight. A cache sliced to
  // the length (Hugging Face 4.31's) is refused: two short lengths see its first rows alone.
  try {
    importOnnx(model("rotary_cache_seq.onnx"), {}, true);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/Slice (Slice) slices the constant 'onnx::Slice_14' by the length, "
                                         "and it is no mask buffer split at the diagonal"),
              std::string::npos)
        << e.what();
  }
  for (const auto& [seq, twin] :
       std::vector<std::pair<std::string, std::string>>{{"rope_in_forward_seq.onnx", "rope_in_forward.onnx"},
                                                        {"qwen2_block_seq.onnx", "qwen2_block.onnx"}}) {
    SCOPED_TRACE(seq);
    Graph rotary = importOnnx(model(seq.c_str()), {}, true);
    EXPECT_EQ(inferShapes(rotary).symbols(), (std::set<std::string>{"seq"}));
    EXPECT_EQ(opCounts(rotary)["rope"], seq == "qwen2_block_seq.onnx" ? 2 : 1);
    EXPECT_EQ(opCounts(rotary), opCounts(importOnnx(model(seq.c_str()), {{"seq", 8}})));
    expectTorchOutput(rotary, model(twin.c_str()) + ".io.bin", {{"seq", 8}});
    EXPECT_TRUE(rotary.maxima.empty());
  }
  // An edge computed from the length with a constant of its own (attention over the last 16 keys,
  // arange(n) < n - 16) masks nothing at two short lengths: refused as well.
  // So are a ceil-division of the length as a reshape's target (one block of 16 at both lengths),
  // squeeze() of every axis of length 1 (the sequence's at one row), and a window as wide as the model
  // (i - j >= x.size(-1): a constant of a symbolic shape, checked as any constant is). Each imports fixed.
  // The refusal names the node that broke a rule, and the rule.
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{
           {"recent_keys_seq.onnx",
            "/Less (Less) takes '/Sub_output_0', a size compared, clamped, divided or "
            "offset by a constant"},
           {"chunked_attention_seq.onnx",
            "/Reshape (Reshape) shapes the data to '/Concat_output_0', a size "
            "through a comparison, clamp or division"},
           {"squeeze_all_seq.onnx", "/Squeeze (Squeeze) squeezes every axis of length 1"},
           {"window_of_width_seq.onnx",
            "/GreaterOrEqual (GreaterOrEqual) combines what it builds from the "
            "sizes with the constant"}}) {
    SCOPED_TRACE(name);
    try {
      importOnnx(model(name.c_str()), {}, true);
      ADD_FAILURE() << "no error";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("(the dynamic axes cannot stay symbolic: " + why),
                std::string::npos)
          << e.what();
    }
    EXPECT_NO_THROW(importOnnx(model(name.c_str()), {{"seq", 32}}));
  }
  // Mistral's sliding window of 16 positions is causal at any length up to 16, and two short lengths could
  // not tell it from a causal mask: its window, a constant of the mask's own (tril's diagonal -16), keeps
  // the axis from staying symbolic. Refused as before, with the way out.
  const std::string window = model("sliding_window_seq.onnx");
  auto causalOps = [](const Graph& graph) {
    int n = 0;
    for (const Op& op : graph.ops) n += isCausal(op);
    return n;
  };
  EXPECT_EQ(causalOps(importOnnx(window, {{"seq", 8}})), 1);
  EXPECT_EQ(causalOps(importOnnx(window, {{"seq", 24}})), 0);
  try {
    importOnnx(window, {}, true);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    // The plain import's refusal, with the way out, and why the axis could not stay symbolic.
    EXPECT_EQ(std::string(e.what()).rfind(errorOf(window), 0), 0u);
    EXPECT_NE(std::string(e.what()).find("--set dim.seq=N"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("\n(the dynamic axes cannot stay symbolic: /Trilu (Trilu) combines"),
              std::string::npos)
        << e.what();
  }
}

// With the sequence fixed at import (--set dim.seq=N), the shape arithmetic of those exports folds as a
// static export's does: the masks become causal softmaxes, repeat_kv grouped-query attention, and each
// computes what torch does. The exporter builds each *_seq module right after a reset of torch's seed, as
// it does its static twin, so the two hold the same weights: the twin's torch input and output
// (NAME.io.bin) check the *_seq import at 8 rows.
TEST(Onnx, DynamicAxesFixedAtImportFoldTheirShapeArithmetic) {
  const std::map<std::string, int64_t> eight = {{"seq", 8}};
  for (const auto& [seq, twin] : std::vector<std::pair<std::string, std::string>>{
           {"causal_attention_seq.onnx", "causal_attention.onnx"},
           {"causal_tril_seq.onnx", "causal_attention.onnx"},
           {"gqa_attention_seq.onnx", "gqa_attention.onnx"},
           {"einsum_attention_seq.onnx", "einsum_attention.onnx"},
           {"rope_in_forward_seq.onnx", "rope_in_forward.onnx"},
           {"rotary_cache_seq.onnx", "rotary_cache.onnx"},
           {"qwen2_block_seq.onnx", "qwen2_block.onnx"},
           {"gptj_block_seq.onnx", "gptj_block.onnx"},
           {"gqa_bidirectional_seq.onnx", "gqa_bidirectional.onnx"}}) {
    Graph g = importOnnx(model(seq.c_str()), eight);
    EXPECT_TRUE(verifyGraph(g).empty()) << seq;
    EXPECT_EQ(g.inputs.at(0).shape, (std::vector<Expr>{Expr(1), Expr(8), Expr(64)})) << seq;
    // The same ops. Learned positions too: the static export has their rows folded into a constant by
    // torch, the symbolic one a Gather of the table at the folded positions, which folds here as well (no
    // embedding lookup of constant ids).
    auto counts = opCounts(g);
    EXPECT_EQ(counts.count("embedding"), 0u) << seq;
    EXPECT_EQ(counts, opCounts(importOnnx(model(twin.c_str())))) << seq;
    int causal = 0;
    for (const auto& op : g.ops) causal += isCausal(op);
    EXPECT_EQ(causal, seq == "rope_in_forward_seq.onnx" || seq == "rotary_cache_seq.onnx" ||
                              seq == "gqa_bidirectional_seq.onnx"
                          ? 0
                          : 1)
        << seq;
    {
      SCOPED_TRACE(seq);
      expectTorchOutput(g, model(twin.c_str()) + ".io.bin");
    }
    CompileResult r = compileGraph(g, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()));
    EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {}), {}).deadlock) << seq;
  }
  // Another length folds too (the mask buffer holds 16 positions: 12 of them are sliced).
  Graph twelve = importOnnx(model("causal_attention_seq.onnx"), {{"seq", 12}});
  EXPECT_EQ(twelve.inputs.at(0).shape, (std::vector<Expr>{Expr(1), Expr(12), Expr(64)}));
  // An axis the model does not have is refused by name.
  std::string path = model("causal_attention_seq.onnx");
  try {
    importOnnx(path, {{"len", 8}});
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": error: field 'dim.len': the model has no dynamic axis 'len' (its dynamic axes: seq)");
  }
  // A length beyond the mask buffer's 16 positions: torch fails the same way (the sliced mask stays 16 x 16
  // against 32 x 32 scores). The message names the node where shape inference stopped and its inputs.
  try {
    importOnnx(path, {{"seq", 32}});
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": error: value '/Softmax_output_0' has no inferred shape: shape inference gives none to node "
                     "'/Where' (Where), whose inputs are [1, 1, 16, 16], [], [1, 4, 32, 32] (shapes that do not "
                     "broadcast, or a fixed axis beyond what the model's own tensors hold)");
  }
}

// nanoGPT's flash path, F.scaled_dot_product_attention(q, k, v, is_causal=True), as torch 2 exports it (the
// opset 14 symbolic, which tools/export_onnx_models.py reproduces for torch 1.13): the scale is 1 / sqrt of
// q's last size read from its Shape, its square root multiplies q and k^T, and the mask added to the scores
// is Where(Equal(Trilu(Expand(1, [L, S])), 0), -inf, 0), L and S sliced from the shapes of q and k. It folds
// into one causal softmax (no select left), with seq fixed or kept a symbol; torch's y at 8 rows, both.
TEST(Onnx, Torch2ScaledDotProductAttentionIsACausalSoftmax) {
  const std::string io = model("nanogpt_sdpa.onnx") + ".io.bin";
  Graph fixed = importOnnx(model("nanogpt_sdpa.onnx"));
  Graph free = importOnnx(model("nanogpt_sdpa_seq.onnx"), {}, true);
  EXPECT_EQ(inferShapes(free).symbols(), (std::set<std::string>{"seq"}));
  for (const Graph* g : {&fixed, &free}) {
    int causal = 0;
    for (const Op& op : g->ops) causal += isCausal(op);
    EXPECT_EQ(causal, 1);
    std::map<std::string, int> counts = opCounts(*g);
    EXPECT_EQ(counts.count("select"), 0u);
    EXPECT_EQ(counts["softmax"], 1);
    EXPECT_EQ(counts["matmul"], 6);  // c_attn, q.k, p.v, c_proj, fc, proj
  }
  EXPECT_EQ(opCounts(free), opCounts(fixed));
  expectTorchOutput(fixed, io);
  expectTorchOutput(free, io, {{"seq", 8}});
  // One network for every length: compiled with seq free, run at 24 rows.
  CompileResult r =
      compileGraph(free, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()));
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {{"seq", 24}}), {}).deadlock);
}

// A MatMul whose operands do not meet (torch 1.13 exports Qwen3's repeat_interleave after a rotary built in
// forward with a reshape target of [b, -1, 0, 0], which puts head_dim second last): the message says which
// dimensions differ, not "shapes that do not broadcast". The value named first is the one the import needed.
TEST(Onnx, AMatMulWhoseOperandsDoNotMeetSaysWhichDimensionsDiffer) {
  onnx::ModelProto m = modelWithInput(17, "unmet", {2, 7, 16});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "v", {2, 7, 4}, std::vector<double>(56, 0.25));
  addNode(g, "MatMul", {"x", "v"}, "s");
  addNode(g, "Softmax", {"s"}, "y");
  g->add_output()->set_name("y");
  std::string path = writeModel(m, "unmet.onnx");
  EXPECT_EQ(errorOf(path),
            path +
                ": error: value 'y' has no inferred shape: shape inference gives none to node "
                "'s_node' (MatMul), whose inputs are [2, 7, 16], [2, 7, 4] (the left operand's last "
                "dimension, 16, is not the right one's second last, 7)");
}

// Two constants whose shapes do not broadcast ([2] and [3]) are not folded, read past the smaller one: the
// node is listed with both shapes. A Transpose without perm reverses the axes, as ONNX defines it.
TEST(Onnx, ConstantsThatDoNotBroadcastAndTheDefaultPerm) {
  onnx::ModelProto m = modelWithInput(17, "mismatch", {3});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "two", {2}, {1, 1});
  addInitializer(g, "three", {3}, {1, 1, 1});
  addNode(g, "Add", {"two", "three"}, "sum");
  addNode(g, "Add", {"x", "sum"}, "y");
  g->add_output()->set_name("y");
  std::string path = writeModel(m, "mismatch.onnx");
  EXPECT_EQ(errorOf(path),
            path +
                ": error: unsupported: 1 node(s):\n  sum_node (Add): constants of shapes [2] and [3] "
                "do not broadcast");

  onnx::ModelProto t = modelWithInput(17, "reversed", {2, 3, 4});
  addNode(t.mutable_graph(), "Transpose", {"x"}, "y");
  t.mutable_graph()->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(t, "reversed.onnx"));
  ASSERT_EQ(graph.ops.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int64_t>>(graph.ops[0].attrs.at("perm")), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(inferShapes(graph).tensors.at(graph.outputs[0]).shape,
            (std::vector<Expr>{Expr(4), Expr(3), Expr(2)}));
}

TEST(Onnx, Errors) {
  {  // a ConstantOfShape of a negative dimension (it stopped with the vector's length_error)
    onnx::ModelProto m = modelWithInput(17, "negative_shape", {4, 5});
    addInitializer(m.mutable_graph(), "shape", {1}, {-1}, onnx::TensorProto::INT64);
    addNode(m.mutable_graph(), "ConstantOfShape", {"shape"}, "c");
    addNode(m.mutable_graph(), "Add", {"x", "c"}, "y");
    m.mutable_graph()->add_output()->set_name("y");
    std::string error = errorOf(writeModel(m, "negative_shape.onnx"));
    EXPECT_NE(error.find("ConstantOfShape 'c_node' makes a dimension of -1"), std::string::npos) << error;
  }

  // Constants too large to fold, or without end: a Range of 2^31 positions (it made them a value at a time
  // for minutes, then ran out of memory), and one by a step of 0 (it never ended); each listed by name.
  for (const auto& [limit, step, why] : std::vector<std::tuple<double, double, std::string>>{
           {2147483648.0, 1,
            "a constant [2147483648] of 2.15e+09 values, more than the 268435456 the import folds"},
           {4, 0, "a range from 0 to 4 by 0 has no finite count"}}) {
    onnx::ModelProto m = modelWithInput(17, "ranges", {4});
    addInitializer(m.mutable_graph(), "start", {}, {0});
    addInitializer(m.mutable_graph(), "limit", {}, {limit});
    addInitializer(m.mutable_graph(), "step", {}, {step});
    addNode(m.mutable_graph(), "Range", {"start", "limit", "step"}, "positions");
    addNode(m.mutable_graph(), "ReduceSum", {"positions"}, "total");
    addNode(m.mutable_graph(), "Add", {"x", "total"}, "y");
    m.mutable_graph()->add_output()->set_name("y");
    std::string path = writeModel(m, "range_of_" + std::to_string(static_cast<int64_t>(step)) + ".onnx");
    std::string error = errorOf(path);
    EXPECT_NE(error.find("unsupported: 1 node(s):\n  positions_node (Range): " + why), std::string::npos)
        << error;
  }

  // Mistral's sliding-window mask over a sequence fixed at 100,000 positions: its masks, 10^10 values each,
  // are listed, at once (it ran out of the host's memory, slowly); an input with an axis of 0 is named (it
  // stopped with a division by zero).
  {
    std::string window = model("sliding_window_seq.onnx");
    std::string error = errorOf(window, {{"seq", 100000}});
    EXPECT_NE(
        error.find("(ConstantOfShape): a constant [100000, 100000] of 1e+10 values, more than the 268435456 "
                   "the import folds"),
        std::string::npos)
        << error;
    onnx::ModelProto empty = modelWithInput(17, "empty", {1, 0, 4});
    addNode(empty.mutable_graph(), "Relu", {"x"}, "y");
    empty.mutable_graph()->add_output()->set_name("y");
    std::string path = writeModel(empty, "empty_axis.onnx");
    EXPECT_EQ(errorOf(path),
              path + ": error: input 'x' has dimension 1 of size 0 (every dimension must be 1 or more)");
  }
  // An empty list attribute is valid ONNX (torch writes amax()'s axes as [], every axis), which ONNX 1.12's
  // checker takes for a missing field: not refused as invalid. A node of ONNX's domain named "ai.onnx" is
  // checked as one of "" (a one-input Add); a node of another domain is refused, by name.
  {
    onnx::ModelProto m = modelWithInput(17, "empty_axes", {2, 4});
    onnx::AttributeProto* axes = addNode(m.mutable_graph(), "ReduceMax", {"x"}, "peak")->add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    addNode(m.mutable_graph(), "Add", {"x", "peak"}, "y");
    m.mutable_graph()->add_output()->set_name("y");
    std::string error = errorOf(writeModel(m, "empty_axes.onnx"));
    EXPECT_EQ(error.find("not valid ONNX"), std::string::npos) << error;
    onnx::ModelProto named = modelWithInput(17, "named_domain", {2, 4});
    addNode(named.mutable_graph(), "Add", {"x"}, "y")->set_domain("ai.onnx");
    named.mutable_graph()->add_output()->set_name("y");
    std::string path = writeModel(named, "named_domain.onnx");
    EXPECT_EQ(errorOf(path),
              path +
                  ": error: node 'y_node' (Add) is not valid ONNX: Node (y_node) has input size 1 "
                  "not in range [min=2, max=2].");
    named.mutable_graph()->mutable_node(0)->set_domain("com.example");
    path = writeModel(named, "other_domain.onnx");
    EXPECT_EQ(errorOf(path),
              path +
                  ": error: node 'y_node' (Add) is of the domain 'com.example', not ONNX's (stc "
                  "imports the default domain's ops only)");
  }
  // A weight whose dims take more values than the file holds (it was imported as 10^9 stand-in zeros).
  {
    onnx::ModelProto m = modelWithInput(17, "short", {2, 4});
    addInitializer(m.mutable_graph(), "w", {4, 3}, std::vector<double>(12, 0.5))->set_dims(0, 1000000);
    addNode(m.mutable_graph(), "MatMul", {"x", "w"}, "y");
    m.mutable_graph()->add_output()->set_name("y");
    std::string path = writeModel(m, "short_weight.onnx");
    EXPECT_EQ(errorOf(path), path +
                                 ": error: initializer 'w' holds 12 values where its dims [1000000, 3] take "
                                 "3000000 (a malformed file)");
  }

  std::string text = ::testing::TempDir() + "not.onnx";
  std::ofstream(text) << "graph: not onnx\n";
  EXPECT_EQ(errorOf(text), text + ": error: not an ONNX model (the file does not parse as an ONNX ModelProto)");
  std::string old = writeModel(tinyModel(11, {"Relu"}), "old.onnx");
  EXPECT_EQ(errorOf(old), old + ": error: opset 11 is outside the supported range 13 to 17 (export with opset_version=17)");
  std::string bad = writeModel(tinyModel(17, {"Acos", "Tanh", "Atan"}), "bad.onnx");
  EXPECT_EQ(errorOf(bad), bad + ": error: unsupported: 2 node(s):\n  node0 (Acos)\n  node2 (Atan)");
}

// LayerNorm(elementwise_affine=False) as torch exports it below opset 17 (the statistics, then Div, and no
// scale or bias), an RMS norm with no weight, and a norm multiplied by a tensor the graph makes: each a
// norm of scale 1 (the multiply kept after it). Before, a norm needed a constant scale and these stayed
// seven elementwise ops and two reductions each.
TEST(Onnx, ANormWithoutScaleIsANormOfScaleOne) {
  onnx::ModelProto m = modelWithInput(15, "plain_norms", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "two", {}, {2.0f});
  addInitializer(g, "eps", {}, {0.0f});
  meanOverLastAxis(addNode(g, "ReduceMean", {"x"}, "mean"));
  addNode(g, "Sub", {"x", "mean"}, "c");
  addNode(g, "Pow", {"c", "two"}, "c2");
  meanOverLastAxis(addNode(g, "ReduceMean", {"c2"}, "var"));
  addNode(g, "Add", {"var", "eps"}, "ve");
  addNode(g, "Sqrt", {"ve"}, "sd");
  addNode(g, "Div", {"c", "sd"}, "ln");  // a layernorm of x, no affine
  addNode(g, "Pow", {"ln", "two"}, "sq");
  meanOverLastAxis(addNode(g, "ReduceMean", {"sq"}, "ms"));
  addNode(g, "Add", {"ms", "eps"}, "mse");
  addNode(g, "Sqrt", {"mse"}, "rms");
  addNode(g, "Div", {"ln", "rms"}, "r");  // an rms norm of ln, no weight
  addNode(g, "Mul", {"r", "x"}, "y");     // scaled by a tensor of the graph's: kept as a multiply
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "plain_norms.onnx"));
  auto counts = opCounts(graph);
  EXPECT_EQ(counts["layernorm"], 1);
  EXPECT_EQ(counts["rmsnorm"], 1);
  EXPECT_EQ(counts["mul"], 1);
  EXPECT_EQ(counts["reduce_mean"], 0);
  EXPECT_EQ(counts["sqrt"], 0);
  // Rows {1, 2, 3, 6} (mean 3, variance 3.5) and {-2, 0, 0, 2} (mean 0, variance 2): the layernorm's rows
  // have a mean square of 1, so the rms norm gives them back, each times x.
  std::vector<float> x = {1, 2, 3, 6, -2, 0, 0, 2};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    float mean = i < 4 ? 3.0f : 0.0f, sd = std::sqrt(i < 4 ? 3.5f : 2.0f);
    EXPECT_NEAR(y[i], (x[i] - mean) / sd * x[i], 1e-4) << i;
  }
}

// A layer norm as a hand-written x.mean() and x.var(unbiased=False) export it: the variance's square a
// Mul of the centred values by themselves, and the numerator centred by a mean of its own (the same mean
// of x taken twice). Before, either kept the statistics as elementwise ops and reductions.
TEST(Onnx, ANormSquaredByAMulAndCentredTwiceIsOneNorm) {
  onnx::ModelProto m = modelWithInput(17, "var_norm", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  addInitializer(g, "eps", {}, {0.0f});
  addInitializer(g, "gain", {4}, {1.0f, 2.0f, 3.0f, 4.0f});
  addInitializer(g, "shift", {4}, {0.5f, 0.0f, 0.0f, -0.5f});
  meanOverLastAxis(addNode(g, "ReduceMean", {"x"}, "mu"));   // x.mean(-1, keepdim=True)
  meanOverLastAxis(addNode(g, "ReduceMean", {"x"}, "mu2"));  // the mean x.var takes again
  addNode(g, "Sub", {"x", "mu2"}, "c2");
  addNode(g, "Mul", {"c2", "c2"}, "sq");
  meanOverLastAxis(addNode(g, "ReduceMean", {"sq"}, "var"));
  addNode(g, "Sub", {"x", "mu"}, "c");
  addNode(g, "Add", {"var", "eps"}, "ve");
  addNode(g, "Sqrt", {"ve"}, "sd");
  addNode(g, "Div", {"c", "sd"}, "n");
  addNode(g, "Mul", {"n", "gain"}, "scaled");
  addNode(g, "Add", {"scaled", "shift"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "var_norm.onnx"));
  auto counts = opCounts(graph);
  EXPECT_EQ(counts["layernorm"], 1);
  EXPECT_EQ(graph.ops.size(), 1u);
  // Rows {1, 2, 3, 6} (mean 3, variance 3.5) and {-2, 0, 0, 2} (mean 0, variance 2).
  std::vector<float> x = {1, 2, 3, 6, -2, 0, 0, 2}, gain = {1, 2, 3, 4}, shift = {0.5f, 0, 0, -0.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    float mean = i < 4 ? 3.0f : 0.0f, sd = std::sqrt(i < 4 ? 3.5f : 2.0f);
    EXPECT_NEAR(y[i], (x[i] - mean) / sd * gain[i % 4] + shift[i % 4], 1e-4) << i;
  }
}

// GPT-NeoX's scores, torch.baddbmm(zeros, q, k^T, beta=1, alpha=1/sqrt(d)): an addition of a constant
// [h, R, K] of zeros, then a view as [1, h, R, K] and torch.where(tril, scores, finfo.min). The zeros read
// through (before, they were a weight read from HBM and an add kernel, and they hid the causal mask: the
// Where stayed three select kernels); so does a multiplication by ones. Zeros that broadcast the stream
// into a larger shape stay.
TEST(Onnx, ZerosAddedAndOnesMultipliedReadThrough) {
  const int64_t h = 2, R = 3;
  onnx::ModelProto m = modelWithInput(17, "baddbmm_scores", {h, R, 4});
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<double> wk(4 * R), tril(R * R), zeros(h * R * R, 0.0), ones(h * R * R, 1.0);
  for (size_t i = 0; i < wk.size(); ++i) wk[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < R; ++k) tril[static_cast<size_t>(r * R + k)] = k <= r ? 1.0 : 0.0;
  addInitializer(g, "wk", {4, R}, wk);
  addInitializer(g, "zeros", {h, R, R}, zeros);
  addInitializer(g, "ones", {h, R, R}, ones);
  addInitializer(g, "wide_zeros", {2, h, R, R}, std::vector<double>(2 * h * R * R, 0.0));
  addInitializer(g, "view", {4}, {1, h, R, R}, onnx::TensorProto::INT64);
  addInitializer(g, "tril_f", {1, 1, R, R}, tril);
  addInitializer(g, "lowest", {}, {std::numeric_limits<float>::lowest()});
  castToBool(g, "tril_f", "tril");
  addNode(g, "MatMul", {"x", "wk"}, "qk");
  addNode(g, "Add", {"zeros", "qk"}, "s");
  addNode(g, "Mul", {"s", "ones"}, "s1");
  addNode(g, "Reshape", {"s1", "view"}, "s4");
  addNode(g, "Where", {"tril", "s4", "lowest"}, "masked");
  addNode(g, "Softmax", {"masked"}, "p");
  addNode(g, "Add", {"p", "wide_zeros"}, "wide");  // [2, h, R, R]: a broadcast, kept
  addNode(g, "Relu", {"wide"}, "y");  // (so that the broadcast is no model output: probabilities, kept)
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "baddbmm_scores.onnx"));
  auto counts = opCounts(graph);
  EXPECT_EQ(counts["add"], 1);
  EXPECT_EQ(counts["mul"], 0);
  EXPECT_EQ(counts["select"], 0);
  const Op* softmax = nullptr;
  for (const Op& op : graph.ops)
    if (op.op == "softmax") softmax = &op;
  ASSERT_NE(softmax, nullptr);
  EXPECT_TRUE(isCausal(*softmax));
  // Row r of each head weighs keys 0 .. r by the softmax of x.wk over them; its other keys 0.
  std::vector<float> x(static_cast<size_t>(h * R * 4));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 7) - 0.2f;
  std::map<std::string, Tensor> values = {{"x", Tensor{{h, R, 4}, x}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), static_cast<size_t>(2 * h * R * R));
  for (int64_t b = 0; b < h; ++b)
    for (int64_t r = 0; r < R; ++r) {
      std::vector<double> s(static_cast<size_t>(R), 0.0);
      double total = 0;
      for (int64_t k = 0; k <= r; ++k) {
        for (int64_t i = 0; i < 4; ++i)
          s[static_cast<size_t>(k)] +=
              x[static_cast<size_t>((b * R + r) * 4 + i)] * wk[static_cast<size_t>(i * R + k)];
        total += std::exp(s[static_cast<size_t>(k)]);
      }
      for (int64_t k = 0; k < R; ++k) {
        double want = k <= r ? std::exp(s[static_cast<size_t>(k)]) / total : 0.0;
        for (int64_t copy = 0; copy < 2; ++copy)
          EXPECT_NEAR(y[static_cast<size_t>(((copy * h + b) * R + r) * R + k)], want, 1e-5)
              << b << " " << r << " " << k;
      }
    }
}

// A layer norm whose gain is ones (read through) keeps the bias after it; a "norm" whose epsilon is a
// tensor of the graph's (the mean of another input added to the mean square) is none: before, that
// tensor was dropped and 1e-6 used.
TEST(Onnx, AUnitGainKeepsItsBiasAndAnEpsilonOfDataIsNoNorm) {
  onnx::ModelProto m = modelWithInput(17, "gain_and_eps", {2, 4});
  onnx::GraphProto* g = m.mutable_graph();
  auto* z = g->add_input();
  z->set_name("z");
  z->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {2, 4})
    z->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  addInitializer(g, "two", {}, {2.0});
  addInitializer(g, "eps", {}, {0.0});
  addInitializer(g, "ones", {4}, {1, 1, 1, 1});
  addInitializer(g, "shift", {4}, {0.5, 0, 0, -0.5});
  meanOverLastAxis(addNode(g, "ReduceMean", {"x"}, "mean"));
  addNode(g, "Sub", {"x", "mean"}, "c");
  addNode(g, "Pow", {"c", "two"}, "c2");
  meanOverLastAxis(addNode(g, "ReduceMean", {"c2"}, "var"));
  addNode(g, "Add", {"var", "eps"}, "ve");
  addNode(g, "Sqrt", {"ve"}, "sd");
  addNode(g, "Div", {"c", "sd"}, "n");
  addNode(g, "Mul", {"n", "ones"}, "scaled");
  addNode(g, "Add", {"scaled", "shift"}, "ln");
  addNode(g, "Pow", {"z", "two"}, "z2");
  meanOverLastAxis(addNode(g, "ReduceMean", {"z2"}, "ms"));
  meanOverLastAxis(addNode(g, "ReduceMean", {"x"}, "offset"));
  addNode(g, "Add", {"ms", "offset"}, "mso");
  addNode(g, "Sqrt", {"mso"}, "rms");
  addNode(g, "Div", {"z", "rms"}, "r");
  addNode(g, "Add", {"ln", "r"}, "y");
  g->add_output()->set_name("y");
  Graph graph = importOnnx(writeModel(m, "gain_and_eps.onnx"));
  auto counts = opCounts(graph);
  EXPECT_EQ(counts["layernorm"], 1);
  EXPECT_EQ(counts["rmsnorm"], 0);
  EXPECT_EQ(counts["add"], 2);  // the mean square plus the offset, and y
  // x rows {1, 2, 3, 6} (mean 3, variance 3.5) and {-2, 0, 0, 2} (mean 0, variance 2); z rows {3, 4, 0, 0}
  // and {1, -1, 1, -1} (mean squares 6.25 and 1), plus the mean of x (3 and 0): 9.25 and 1.
  std::vector<float> x = {1, 2, 3, 6, -2, 0, 0, 2}, zv = {3, 4, 0, 0, 1, -1, 1, -1},
                     shift = {0.5f, 0, 0, -0.5f};
  std::map<std::string, Tensor> values = {{"x", Tensor{{2, 4}, x}}, {"z", Tensor{{2, 4}, zv}}};
  for (const auto& [weight, v] : graph.values) values[weight] = Tensor{{}, v};
  std::vector<float> y = interpret(graph, values).at(graph.outputs.at(0)).data;
  ASSERT_EQ(y.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    float mean = i < 4 ? 3.0f : 0.0f, sd = std::sqrt(i < 4 ? 3.5f : 2.0f),
          rms = std::sqrt(i < 4 ? 9.25f : 1.0f);
    EXPECT_NEAR(y[i], (x[i] - mean) / sd + shift[i % 4] + zv[i] / rms, 1e-4) << i;
  }
}

// An export whose dynamic_axes give an output an input's axis name though it is longer (BERT's pooled row
// joined to the sequence): with the axis fixed, ONNX shape inference stops at the declared output, and the
// error says which output, dimension and axis, and the size the graph computes.
TEST(Onnx, AnOutputDeclaredWithAnInputsAxisItIsNotIsNamed) {
  onnx::ModelProto m = modelWithInput(17, "declared_output", {5, 4});
  makeDynamic(m, 0, "seq");
  onnx::GraphProto* g = m.mutable_graph();
  addNode(g, "Concat", {"x", "x"}, "y")->add_attribute()->set_name("axis");
  g->mutable_node(0)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  g->mutable_node(0)->mutable_attribute(0)->set_i(0);
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("seq");
  y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  const std::string path = writeModel(m, "declared_output.onnx");
  try {
    importOnnx(path, {{"seq", 3}});
    ADD_FAILURE() << "an output declared 3 rows long that the graph makes 6 imported";
  } catch (const UserError& e) {
    EXPECT_NE(
        std::string(e.what()).find("the model declares its output 'y' as [3, 4] where its graph computes "
                                   "[6, 4]: dimension 0 is 6, not 3 (its dynamic axis 'seq', fixed at "
                                   "import at 3)"),
        std::string::npos)
        << e.what();
  }
  // Declared as the graph makes it, it imports.
  y->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("rows");
  EXPECT_NO_THROW(importOnnx(writeModel(m, "declared_output_rows.onnx"), {{"seq", 3}}));
}

}  // namespace
}  // namespace stc
