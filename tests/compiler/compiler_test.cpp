// The compiler end to end: graphs compile into networks that verify, simulate without deadlock and size;
// converter buffers follow the itensor rule; fusion respects its budget; resources add up; errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/dse/cost_model.h"
#include "compiler/dse/tiling.h"
#include "compiler/frontend/model_builder.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/model_spec.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/lower/kernels.h"
#include "compiler/pipeline.h"
#include "compiler/reference/interpreter.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/engine.h"

namespace stc {
namespace {

std::string graphFile(const std::string& name) { return std::string(STC_SOURCE_DIR "/models/graphs/") + name; }

CompileResult compileText(const std::string& text, const std::vector<std::string>& settings = {}) {
  return compileGraph(parseGraph(text, "g.yaml"), defaultPlatform(), parseCompileOptions(settings, defaultPlatform()));
}

CompileResult compileFile(const std::string& name, const std::vector<std::string>& settings = {}) {
  return compileText(readTextFile(graphFile(name)), settings);
}

sim::SimResult simulate(const Network& net, const Bindings& b = {}) {
  return sim::runDirect(sim::compileProgram(net, b), {});
}

int taskNamed(const Network& n, const std::string& name) {
  for (size_t t = 0; t < n.tasks.size(); ++t)
    if (n.tasks[t].name == name) return static_cast<int>(t);
  return -1;
}

const Fifo& fifoNamed(const Network& n, const std::string& name) {
  int f = n.findFifo(name);
  if (f < 0) throw std::runtime_error("no FIFO " + name);
  return n.fifos[static_cast<size_t>(f)];
}

TEST(Compiler, ExampleGraphsCompileSimulateAndSize) {
  for (const char* name : {"matmul_chain.yaml", "mlp.yaml", "rows.yaml", "attention_decode.yaml", "gpt2_layer.yaml",
                           "misc_ops.yaml"}) {
    for (const char* quant : {"quant=none", "quant=w4a8"}) {
      CompileResult r = compileFile(name, {quant});
      Bindings b = {{"ctx", 96}};
      EXPECT_TRUE(verifyNetwork(r.network, b).empty()) << name;
      sim::SimResult s = simulate(r.network, b);
      EXPECT_FALSE(s.deadlock) << name << " " << quant;
      sizing::SizingOptions options;
      options.bindings = b;
      Network sized;
      sizing::SizingResult z = sizing::sizeFifos(r.network, options, sized);
      EXPECT_FALSE(z.trueDeadlock) << name;
      EXPECT_FALSE(simulate(sized, b).deadlock) << name;
      EXPECT_LE(z.cyclesSized * 100, z.cyclesUnbounded * 101) << name;
      EXPECT_TRUE(r.report.fits) << name;
    }
  }
}

// The sized design's intermediate results count the streams from one kernel to another at their depths,
// converters' regions as Fifo::storedTokens holds them, and nothing of the streams from or to HBM. The f32
// matmul chain (8 rows, 128 -> 128 -> 64 -> 32) at the compiled depth 2: ten 512-bit streams (each
// matmul's panels into its converter and on to its row copy, h1 and h2 into and out of their converters)
// of 2 tokens, 10 x 128 bytes, and five regions of 512, 4096, 512, 2048 and 512 bits, each held as
// depth + 2 = 4 blocks: 7,680 x 4 / 8 = 3,840 bytes; 5,120 in all. The input x, the weights and y's
// write to HBM are not intermediate, whatever their depth. (The reduction tiles pinned at 16: the streams
// into mm2 and mm3 are then a tile of 16 floats too.)
TEST(Compiler, IntermediateBytesCountStreamsBetweenKernelsAtTheirDepths) {
  CompileResult r = compileFile("matmul_chain.yaml", {"tk.mm2=16", "tk.mm3=16"});
  for (const Fifo& f : r.network.fifos) ASSERT_EQ(f.depth, 2) << f.name;
  EXPECT_EQ(intermediateBytesAtDepths(r), 10 * 128 + (512 + 4096 + 512 + 2048 + 512) * 4 / 8);
  for (Fifo& f : r.network.fifos)
    if (f.name == "x>mm1" || f.name == "w1>mm1" || f.name == "y>hbm" || f.name == "x.hbm") f.depth = 1000;
  EXPECT_EQ(intermediateBytesAtDepths(r), 5120);
  r.network.fifos[static_cast<size_t>(r.network.findFifo("h1>mm2"))].depth = 10;  // 8 more 512-bit tokens
  r.network.fifos[static_cast<size_t>(r.network.findFifo("h1.cvt4.region"))].depth = 3;  // a fifth block
  EXPECT_EQ(intermediateBytesAtDepths(r), 5120 + 8 * 64 + 4096 / 8);
}

// The MLP reads every weight byte once and its input row once: 256x1024 + 1024 + 1024x256 f32 weights and
// the 256-float input, 4 bytes each.
TEST(Compiler, MlpReadsEachByteOnce) {
  CompileResult r = compileFile("mlp.yaml");
  int64_t read = 0;
  for (const Task& t : r.network.tasks)
    if (t.kind == TaskKind::kDmaRead) read += t.bytes.eval();
  EXPECT_EQ(read, 4 * (256 * 1024 + 1024 + 1024 * 256 + 256));
  EXPECT_EQ(r.report.kernels, 3);
  EXPECT_EQ(r.report.groups, 1);
}

// The first matmul re-reads its input row for every output tile, so the row sits in a converter: by the
// itensor rule no loop is shared with the canonical [1, 256] stream and the region is the whole row,
// 256 floats, 8192 bits, held twice (ping-pong).
TEST(Compiler, ConverterBufferFollowsTheItensorRule) {
  CompileResult r = compileFile("mlp.yaml");
  const Fifo& region = fifoNamed(r.network, "x.cvt1.region");
  EXPECT_EQ(region.width, 256 * 32);
  EXPECT_EQ(region.depth, 2);
  // The same buffer from the types on the converter's ports, by the library's inference.
  const Task* w = nullptr;
  const Task* rd = nullptr;
  for (const Task& t : r.network.tasks) {
    if (t.name == "x.cvt1.w") w = &t;
    if (t.name == "x.cvt1.r") rd = &t;
  }
  ASSERT_TRUE(w && rd);
  ConverterPlan plan = inferConverter(*w->phases[0].ports[0].type, *rd->phases[0].ports[1].type);
  EXPECT_EQ(plan.bufferShape, (std::vector<int64_t>{1, 256}));
  EXPECT_EQ(plan.bufferBytes, 2 * 256 * 4);
}

// A GEMV whose input comes spread over its producer's run (an output-stationary matmul, through GELU)
// streams it: phase 0 walks (m, k, n), one input tile per k, phase 1 writes the output tiles; the input
// arrives through a FIFO or a tile adapter, never a whole-row converter, so `down` runs beside `up`.
TEST(Compiler, GemvAfterAGemvStreamsItsInput) {
  // At the DSPs of a design whose matmuls stay at the stream tile (wider ones, as the default unrolls, stripe
  // their weights over FIFOs of more bytes than the 8 KiB kept whole).
  CompileResult r = compileFile("mlp.yaml", {"unroll_budget=0.4"});
  const Task* up = nullptr;
  const Task* down = nullptr;
  for (const Task& t : r.network.tasks) {
    if (t.name == "up") up = &t;
    if (t.name == "down") down = &t;
    EXPECT_EQ(t.name.rfind("g.cvt", 0), std::string::npos) << t.name;
  }
  ASSERT_TRUE(up && down);
  EXPECT_EQ(up->phases.size(), 1u);
  ASSERT_EQ(down->phases.size(), 2u);
  const Kernel& k = r.kernels.kernels[static_cast<size_t>(r.roles.tasks.at("down").kernel)];
  int64_t tk = k.phases[0].ports[0].order.element.back(), tn = k.phases[1].ports.back().order.element.back();
  EXPECT_EQ(down->phases[0].trip, (std::vector<Expr>{Expr(1), Expr(1024 / tk), Expr(256 / tn)}));
  EXPECT_EQ(down->phases[1].trip, (std::vector<Expr>{Expr(1), Expr(256 / tn)}));
  sim::SimResult s = simulate(r.network);
  ASSERT_FALSE(s.deadlock);
  auto stats = [&](const std::string& name) {
    for (const auto& t : s.tasks)
      if (t.name == name) return t;
    throw std::runtime_error("no task " + name);
  };
  // The two run side by side for over a third of their runs (both wait on their weight streams).
  int64_t overlap = stats("up").end - stats("down").start;
  EXPECT_GT(3 * overlap, stats("up").end - stats("up").start);
  EXPECT_GT(3 * overlap, stats("down").end - stats("down").start);
  // On chip: the FIFOs and one whole-row converter (x, re-read by `up` for every output tile), which the
  // unfused count also has.
  EXPECT_LT(r.report.onchipBytesFused, r.report.onchipBytesUnfused);
}

// Stages of the GPT-2 decode layer: ln1 (one row) starts q, k, v and o (o streams the attention's
// output, so it runs beside them): 32 channels / 4 = 8 stripes each; ln2 starts fc1 and fc2 (fc2 streams
// fc1's GELU): 32 / 2 = 16 each. max_stripe pins every cap.
TEST(Compiler, StripeCapsShareTheChannelsOfAStage) {
  Graph graph = loadGraph(graphFile("gpt2_layer.yaml"));
  TypedGraph g = inferShapes(graph);
  CompileOptions o = parseCompileOptions({}, defaultPlatform());
  o.maxima["ctx"] = 1024;
  std::map<std::string, int> caps = stripeCaps(g, defaultPlatform(), o);
  EXPECT_EQ(caps, (std::map<std::string, int>{{"w_q", 8}, {"w_k", 8}, {"w_v", 8}, {"w_o", 8}, {"w_fc1", 16}, {"w_fc2", 16}}));
  o.maxStripe = 4;
  for (const auto& [weight, cap] : stripeCaps(g, defaultPlatform(), o)) EXPECT_EQ(cap, 4) << weight;
}

// A symbolic dimension takes the stream's tile and is padded to it: decode attention over ctx runs
// ceil((ctx + 1)/16) iterations per row (the ctx cached keys and the token's own: scores 8 heads x
// ceil((ctx + 1)/16) tiles x 64/16 k steps, the softmax passes 8 x ceil((ctx + 1)/16)), not ctx; so the
// attention at ctx 100 is faster than at tile 1, and padding (ctx 96 to 111) costs the same as ctx 111.
TEST(Compiler, SymbolicDimensionsArePaddedToTheTile) {
  CompileResult r = compileFile("attention_decode.yaml");
  auto trips = [&](const std::string& task, int64_t ctx) {
    const Task& t = r.network.tasks.at(static_cast<size_t>(taskNamed(r.network, task)));
    int64_t n = 1;
    for (const Expr& e : t.phases[0].trip) n *= e.eval({{"ctx", ctx}});
    return n;
  };
  EXPECT_EQ(trips("scores", 100), 8 * 7 * (64 / r.schedules.at("scores").tk));  // k steps of its tile
  EXPECT_EQ(trips("probs.stats", 100), 8 * 7);
  EXPECT_EQ(trips("probs.apply", 97), 8 * 7);
  int64_t outTiles = 64 / (r.schedules.at("mix").tn > 0 ? r.schedules.at("mix").tn : 16);  // its output tiles
  EXPECT_EQ(trips("mix", 111), 8 * outTiles * 7);
  EXPECT_EQ(trips("mix", 112), 8 * outTiles * 8);
  EXPECT_EQ(simulate(r.network, {{"ctx", 96}}).cycles, simulate(r.network, {{"ctx", 111}}).cycles);
  EXPECT_LT(simulate(r.network, {{"ctx", 111}}).cycles, simulate(r.network, {{"ctx", 112}}).cycles);
}

// A reshape's target may say a symbolic size (`shape: [seq, 16, 64]`): the attention of
// attention_prefill.yaml over a sequence of any length. It is written back as sizes, refused at its line
// where the sizes do not hold the input's elements or do not parse, computes at seq = 8 what the file at 8
// rows does, and its network runs at any binding.
std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// attention_prefill.yaml over `seq` rows instead of 128.
std::string attentionOverSeq() {
  return replaceAll(replaceAll(readTextFile(graphFile("attention_prefill.yaml")), "[128, 1024], dtype",
                               "[seq, 1024], dtype"),
                    "[128, ", "[seq, ");
}

TEST(Compiler, AReshapeTargetMaySayASymbolicSize) {
  std::string text = attentionOverSeq(),
              fixed = replaceAll(readTextFile(graphFile("attention_prefill.yaml")), "128", "8");
  Graph g = parseGraph(text, "g.yaml");
  TypedGraph typed = inferShapes(g);
  EXPECT_EQ(shapeText(typed.tensors.at("q4").shape), "[seq, 16, 64]");
  EXPECT_EQ(shapeText(typed.tensors.at("om").shape), "[seq, 1024]");
  std::string written = emitGraph(g);
  EXPECT_NE(written.find("shape: [seq, 16, 64]"), std::string::npos) << written;
  EXPECT_EQ(parseGraph(written, "again.yaml"), g);

  // The interpreter at seq = 8 against the file at 8 rows, the same inputs and weights.
  std::map<std::string, Tensor> values;
  uint32_t state = 12345;
  for (const auto* decls : {&g.inputs, &g.weights})
    for (const TensorDecl& t : *decls) {
      std::vector<int64_t> shape = bindShape(t.shape, {{"seq", 8}});
      Tensor v{shape, std::vector<float>(static_cast<size_t>(elementCount(shape)))};
      for (float& x : v.data)
        x = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
      values[t.name] = v;
    }
  std::vector<float> symbolic = interpret(g, values, {{"seq", 8}}).at("y").data,
                     eight = interpret(parseGraph(fixed, "eight.yaml"), values).at("y").data;
  EXPECT_EQ(symbolic, eight);
  ASSERT_EQ(symbolic.size(), 8u * 1024u);

  auto error = [&](const std::string& from, const std::string& to) {
    std::string bad = text;
    bad.replace(bad.find(from), from.size(), to);
    try {
      inferShapes(parseGraph(bad, "g.yaml"));
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("output: q4, shape: [seq, 16, 64]", "output: q4, shape: [seq, 16, 32]"),
            "g.yaml:18:5: error: op 'q_heads' (reshape): cannot reshape [seq, 1024] to [seq, 16, 32]");
  // (as many elements at every seq: the reshape holds, and the product after it finds the heads differ)
  EXPECT_EQ(
      error("output: q4, shape: [seq, 16, 64]", "output: q4, shape: [2*seq, 8, 64]"),
      "g.yaml:24:5: error: op 'scores' (matmul): batch dimensions differ: [8, 2*seq, 64] x [16, 64, seq]");
  EXPECT_EQ(error("output: q4, shape: [seq, 16, 64]", "output: q4, shape: [seq*seq, 16, 64]"),
            "g.yaml:18:5: error: op 'q_heads' (reshape): cannot reshape [seq, 1024] to [seq*seq, 16, 64]");
  // With / or %, the symbolic sizes must be the input's own (seq/2*2 is seq at even lengths alone).
  EXPECT_EQ(error("output: q4, shape: [seq, 16, 64]", "output: q4, shape: [seq/2*2, 16, 64]"),
            "g.yaml:18:5: error: op 'q_heads' (reshape): cannot reshape [seq, 1024] to [seq/2*2, 16, 64]");
  EXPECT_EQ(error("output: q4, shape: [seq, 16, 64]", "output: q4, shape: [seq, 16, 6x]"),
            "g.yaml:18:76: error: field 'shape': a size that does not parse: column 2 of expression '6x': "
            "unexpected 'x'");

  CompileResult r =
      compileGraph(g, defaultPlatform(), parseCompileOptions({"quant=none"}, defaultPlatform()));
  for (int64_t seq : {1, 37, 256}) EXPECT_FALSE(simulate(r.network, {{"seq", seq}}).deadlock) << seq;
}

// A symbol's maximum need not be a whole number of stream tiles (16): the scores read K's seq axis in tiles
// of 16, the last one whole, so a converter holding that axis holds the tile that pads it, its buffer the
// one of the next multiple of 16 (max_seq 20 and 8: the buffers of 32 and 16; 33 needs more than 32's).
TEST(Compiler, ASymbolsMaximumBetweenStreamTilesPadsTheConvertersLastTile) {
  Graph g = parseGraph(attentionOverSeq(), "g.yaml");
  auto regions = [&](int64_t maximum) {
    CompileResult r = compileGraph(
        g, defaultPlatform(),
        parseCompileOptions({"quant=none", "max_seq=" + std::to_string(maximum)}, defaultPlatform()));
    std::map<std::string, int64_t> widths;
    for (const Fifo& f : r.network.fifos)
      if (f.isRegion()) widths[f.name] = f.width;
    for (int64_t seq : {int64_t{1}, maximum / 2 + 1, maximum})
      EXPECT_FALSE(simulate(r.network, {{"seq", seq}}).deadlock) << maximum << " " << seq;
    return widths;
  };
  std::map<std::string, int64_t> at32 = regions(32);
  ASSERT_FALSE(at32.empty());
  EXPECT_EQ(regions(20), at32);
  EXPECT_EQ(regions(8), regions(16));
  EXPECT_NE(regions(33), at32);
}

// A decode step's scores, softmax and P.V see their 16 heads one at a time, at the pace of the projections
// making q and the new key, and at short contexts a head takes fewer iterations than their pipelines are
// deep: drained per head (Phase::outer 1), the layer at the compiler's depths takes more than 1% fewer
// cycles over the samples the sizer checks (ctx 1, 16, 17, 128, 1024), and at ctx 16 more than 5% fewer.
// Nothing else drains, and an MLP (no outer loop held) keeps every pipeline whole.
TEST(Compiler, ADecodeLayersAttentionDrainsPerHeadWhereThatIsFaster) {
  CompileResult r = compileFile("gpt2_layer.yaml", {"quant=w4a8"});
  const std::vector<std::string> drained{"scores", "scaled", "probs.stats", "probs.apply", "mix"};
  EXPECT_EQ(r.report.drainedPipelines, drained);
  Network flat = r.network;
  for (Task& t : flat.tasks) {
    bool listed = std::find(drained.begin(), drained.end(), t.name) != drained.end();
    for (Phase& ph : t.phases) {
      EXPECT_EQ(ph.outer, listed ? 1 : 0) << t.name;
      ph.outer = 0;
    }
  }
  int64_t sumDrained = 0, sumFlat = 0;
  for (int64_t ctx : sizing::symbolSamples(1024, r.options.tile)) {
    int64_t a = sim::runDirect(sim::compileProgram(r.network, {{"ctx", ctx}}), {}).cycles;
    int64_t b = sim::runDirect(sim::compileProgram(flat, {{"ctx", ctx}}), {}).cycles;
    ASSERT_GT(a, 0);
    ASSERT_GT(b, 0);
    sumDrained += a;
    sumFlat += b;
    if (ctx == 16) {
      EXPECT_LT(a, b - b / 20) << a << " " << b;
    }
  }
  EXPECT_LT(sumDrained, sumFlat - sumFlat / 100) << sumDrained << " " << sumFlat;
  EXPECT_TRUE(compileFile("mlp.yaml", {"quant=w4a8"}).report.drainedPipelines.empty());
}

// The token's own key and value (kv_append) reach attention a head at a time: the matmuls reading the
// caches take a head's 64 values at the first iteration of each head (a port of level 0), through an
// adapter that joins the projection's 16-value tokens; no converter holds the whole row.
TEST(Compiler, TheTokensOwnKeyAndValueReachAttentionAHeadAtATime) {
  CompileResult r = compileFile("gpt2_layer.yaml", {"quant=w4a8"});
  for (const auto& [task, row] : std::vector<std::pair<std::string, std::string>>{{"scores", "k_new"}, {"mix", "v_new"}}) {
    const Task& t = r.network.tasks.at(static_cast<size_t>(taskNamed(r.network, task)));
    ASSERT_EQ(t.phases.size(), 1u) << task;
    const Port* fresh = nullptr;
    for (const Port& p : t.phases[0].ports)
      if (p.fifo.rfind(row, 0) == 0) fresh = &p;
    ASSERT_NE(fresh, nullptr) << task;
    EXPECT_EQ(t.phases[0].levelOf(*fresh), 0) << task;
    EXPECT_EQ(fifoNamed(r.network, fresh->fifo).width, 64 * 8) << task;  // a head's 64 int8 values
    for (const Fifo& f : r.network.fifos) EXPECT_EQ(f.name.find(row + ".cvt"), std::string::npos) << f.name;
  }
  // At ctx 32 attention waits for the new key's last head only, not for all 16 heads at once: the layer is
  // within 2% of one with the cache alone (the same graph, kv_append dropped and ctx + 1 cached keys).
  std::string text = readTextFile(graphFile("gpt2_layer.yaml"));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"inputs: [qh, k_all]", "inputs: [qh, k_cache]"}, {"inputs: [p, v_all]", "inputs: [p, v_cache]"}}) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, from.size(), to);
  }
  for (const char* op : {"  - {name: k_append,", "  - {name: v_append,"}) {
    size_t at = text.find(op);
    ASSERT_NE(at, std::string::npos);
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  CompileResult cacheOnly = compileText(text, {"quant=w4a8"});
  double with = static_cast<double>(simulate(r.network, {{"ctx", 32}}).cycles);
  double without = static_cast<double>(simulate(cacheOnly.network, {{"ctx", 32}}).cycles);
  EXPECT_LT(with, 1.02 * without) << with << " against " << without;
}

// A KV cache streams over several channels like a weight: a [16, 16] int8 tile of V (P.V's output tile
// pinned at the stream's) is 256 bytes a cycle, 4.45 channels of 57.5 bytes, so 4 stripes of 64 bytes (5
// does not divide the tile); K's tile is at least as large. At the searched tile ([16, 32]: 512 bytes,
// 8.9 channels) V takes the cap of 8.
TEST(Compiler, KvCachesAreStriped) {
  CompileResult r = compileFile("gpt2_layer.yaml", {"quant=w4a8", "tn.mix=16"});
  for (const char* cache : {"load_k_cache.s3", "load_v_cache.s3"}) EXPECT_GE(taskNamed(r.network, cache), 0) << cache;
  EXPECT_LT(taskNamed(r.network, "load_v_cache.s4"), 0);
  CompileResult searched = compileFile("gpt2_layer.yaml", {"quant=w4a8"});
  ASSERT_EQ(searched.schedules.at("mix").tn, 32);
  EXPECT_GE(taskNamed(searched.network, "load_v_cache.s7"), 0);
  EXPECT_LT(taskNamed(searched.network, "load_v_cache.s8"), 0);
}

TEST(Compiler, FusionRespectsTheBudgetAndMovesTheBoundary) {
  CompileResult wide = compileFile("gpt2_layer.yaml", {"quant=w4a8"});
  EXPECT_EQ(wide.report.groups, 1);
  int64_t whole = wide.report.onchipBytesFused;
  CompileResult half = compileFile("gpt2_layer.yaml", {"quant=w4a8", "onchip_budget_bytes=" + std::to_string(whole / 2)});
  EXPECT_GE(half.report.groups, 2);
  CompileResult quarter =
      compileFile("gpt2_layer.yaml", {"quant=w4a8", "onchip_budget_bytes=" + std::to_string(whole / 4)});
  EXPECT_GT(quarter.report.groups, half.report.groups);
  // The first group ends earlier under the smaller budget.
  auto firstGroupTasks = [](const Network& n) {
    int count = 0;
    for (const Task& t : n.tasks) count += t.group == 0 && !t.isDma();
    return count;
  };
  EXPECT_LT(firstGroupTasks(quarter.network), firstGroupTasks(half.network));
  for (const CompileResult* r : {&half, &quarter}) {
    EXPECT_FALSE(simulate(r->network, {{"ctx", 64}}).deadlock);
    EXPECT_GT(r->report.dmas, wide.report.dmas);  // groups talk through HBM
  }
}

// A fork joined again (h to exp and sigmoid, their results added) keeps each joined stream whole at the
// compiler's bound, [1024, 64] f32 = 256 KiB, until sizing trims it: under a budget of 100,000 bytes fusion
// splits the kernels into groups that run one after another through HBM. fusion_joins=trimmed counts those
// streams at their least depth: one group, which the sizer holds in a few tokens per stream (the
// difference of the exp and sigmoid pipelines' latencies, 13 tokens), within the budget, in fewer cycles
// than the groups one after another take (each at least one pass of the 4,096 tokens; sized here 4,675
// cycles against 21,809, the second group reading the first's results back from HBM).
TEST(Compiler, TrimmedJoinsFuseWhatTheirBoundsSplit) {
  const std::string graph =
      "graph: fork\ninputs: [{name: x, shape: [1024, 64]}]\n"
      "ops:\n  - {name: h, op: relu, inputs: [x], output: hx}\n"
      "  - {name: a, op: exp, inputs: [hx], output: ea}\n"
      "  - {name: b, op: sigmoid, inputs: [hx], output: nb}\n"
      "  - {name: y, op: add, inputs: [ea, nb], output: o}\noutputs: [o]\n";
  CompileResult whole = compileText(graph, {"onchip_budget_bytes=100000"});
  CompileResult trimmed = compileText(graph, {"onchip_budget_bytes=100000", "fusion_joins=trimmed"});
  EXPECT_GE(whole.report.groups, 2);
  EXPECT_EQ(trimmed.report.groups, 1);
  sizing::SizingResult sizedWhole, sizedTrimmed;
  Network a, b;
  sizedWhole = sizing::sizeFifos(whole.network, sizing::SizingOptions{}, a);
  sizedTrimmed = sizing::sizeFifos(trimmed.network, sizing::SizingOptions{}, b);
  ASSERT_GT(sizedWhole.cyclesSized, 0);
  ASSERT_GT(sizedTrimmed.cyclesSized, 0);
  EXPECT_FALSE(simulate(b).deadlock);
  EXPECT_LT(sizedTrimmed.cyclesSized * 4, sizedWhole.cyclesSized * 3)
      << sizedTrimmed.cyclesSized << " vs " << sizedWhole.cyclesSized;
  trimmed.network = b;
  EXPECT_LE(intermediateBytesAtDepths(trimmed), 100000);
  for (const char* join : {"ea>y", "nb>y"}) EXPECT_LE(fifoNamed(b, join).depth, 32) << join;
}

TEST(Compiler, ResourcesAddUp) {
  // Two independent MLPs in one graph cost what each costs alone (no unrolling: the budget is tiny; a
  // fixed stripe cap, since by default the two share the channels of the stage they run in together).
  std::string one = readTextFile(graphFile("mlp.yaml"));
  auto renamed = [&](const std::string& suffix) {
    Graph g = parseGraph(one, "mlp.yaml");
    auto rename = [&](std::string& s) { s += suffix; };
    for (auto& t : g.inputs) rename(t.name);
    for (auto& t : g.weights) rename(t.name);
    for (auto& op : g.ops) {
      rename(op.name);
      rename(op.output);
      for (auto& i : op.inputs) rename(i);
    }
    for (auto& o : g.outputs) rename(o);
    return g;
  };
  Graph a = renamed("_a"), b = renamed("_b"), both = renamed("_a");
  Graph other = renamed("_b");
  both.inputs.insert(both.inputs.end(), other.inputs.begin(), other.inputs.end());
  both.weights.insert(both.weights.end(), other.weights.begin(), other.weights.end());
  both.ops.insert(both.ops.end(), other.ops.begin(), other.ops.end());
  both.outputs.insert(both.outputs.end(), other.outputs.begin(), other.outputs.end());
  CompileOptions o = parseCompileOptions({"unroll_budget=0.001", "max_stripe=8"}, defaultPlatform());
  Resources ra = compileGraph(a, defaultPlatform(), o).report.resources;
  Resources rb = compileGraph(b, defaultPlatform(), o).report.resources;
  Resources rab = compileGraph(both, defaultPlatform(), o).report.resources;
  EXPECT_EQ(rab.dsp, ra.dsp + rb.dsp);
  EXPECT_EQ(rab.lut, ra.lut + rb.lut);
  EXPECT_EQ(rab.bram18k, ra.bram18k + rb.bram18k);
  EXPECT_EQ(rab.uram, ra.uram + rb.uram);
  EXPECT_GT(ra.dsp, 0);
}

// Every DMA's m_axi adapter buffers outstanding bursts of 512-bit words (UG1399): at the default 4 reads of
// 1 KiB, 64 words in LUTRAM, one LUT per bit (512); at 8 reads, 128 words in BRAM_18K, 15 blocks wide
// (ceil(512 / 36)) and one deep. Nothing else about the compiled design changes with the buffer.
TEST(Compiler, DmaBuffersAreCounted) {
  Graph g = loadGraph(graphFile("mlp.yaml"));
  CompileOptions o = parseCompileOptions({"unroll_budget=0.001", "max_stripe=8"}, defaultPlatform());
  Platform deeper = defaultPlatform();
  deeper.hbm.outstandingReads = 8;
  CompileResult a = compileGraph(g, defaultPlatform(), o), b = compileGraph(g, deeper, o);
  int64_t reads = 0, writes = 0;
  for (const Task& t : a.network.tasks) {
    reads += t.kind == TaskKind::kDmaRead;
    writes += t.kind == TaskKind::kDmaWrite;
  }
  ASSERT_GT(reads, 1);
  ASSERT_GT(writes, 0);
  EXPECT_EQ(a.report.resources.lut - b.report.resources.lut, 512 * reads);
  EXPECT_EQ(b.report.resources.bram18k - a.report.resources.bram18k, 15 * reads);
  EXPECT_EQ(b.report.resources.dsp, a.report.resources.dsp);
}

// A matmul re-reads its input once per column panel. From HBM, the repeats go through a converter that
// holds the input while that fits in half the on-chip budget, and are read from HBM again beyond: an MLP
// on 64 rows (x [64, 1024], up 1024 -> 1024), g = [64, 1024] int8 = 64 KiB, one region a call (the whole
// tensor), so a buffer of 64 KiB; down's 256 output columns in panels of the 16-wide stream tile, so 16
// reads of g without the buffer. Before, the buffer was required, and a long prompt stopped with "on-chip
// budget too small". Both matmuls pinned to one block of every row (weight-stationary), so that down
// reads the whole of g per panel; budgets below what up and down take together, where the groups part
// at g, so that g goes through HBM.
TEST(Compiler, RepeatsBeyondTheBudgetAreReadFromHbmAgain) {
  std::string mlp = readTextFile(graphFile("mlp.yaml"));
  mlp.replace(mlp.find("shape: [1, 256]"), 15, "shape: [64, 1024]");
  mlp.replace(mlp.find("shape: [256, 1024]"), 18, "shape: [1024, 1024]");
  auto loadOfG = [&](const char* budget) {
    CompileResult r =
        compileText(mlp, {"quant=w4a8", "unroll_budget=0.001", "row_block.up=0", "row_block.down=0", budget});
    EXPECT_FALSE(simulate(r.network).deadlock) << budget;
    for (const Task& t : r.network.tasks)
      if (t.name == "load_g") return t.bytes.eval();
    return int64_t{-1};
  };
  EXPECT_EQ(loadOfG("onchip_budget_bytes=150000"), 65536);      // 65536 <= 75000: buffered, read once
  EXPECT_EQ(loadOfG("onchip_budget_bytes=80000"), 16 * 65536);  // 65536 > 40000: read per panel
}

// The cost model's packing rule (dse/cost_model.h): a W4A8 matmul packs two MACs per DSP48E2 (WP486), an
// f32 one takes five DSPs per MAC; the other kernels add their own per-lane cost on top.
// A matmul's DSPs: its MACs by the packing rule, and its output lanes' f32 steps at the default cores'
// DSP48E2 slices (an add 2, a multiply 3): an f32 matmul its bias (2 a lane); under W4A8 the epilogue
// acc * scale + offset (5 a lane), which a kernel of its own applies at the II of the matmul's output
// tokens, E = min(16, K / Tk), sharing them: ceil(16 / E) multipliers and adders, unless the matmul
// streams its input (finishing every token at once): down, a GEMV after a GEMV
// (Compiler.GemvAfterAGemvStreamsItsInput). mlp.yaml: up (K 256) has a bias, down (K 1024) none; 16
// output lanes each.
TEST(Compiler, MatmulDspsFollowThePackingRule) {
  EXPECT_DOUBLE_EQ(dspPerMac("w4a8"), 0.5);
  for (const char* quant : {"quant=w4a8", "quant=none"}) {
    CompileResult r = compileGraph(loadGraph(graphFile("mlp.yaml")), defaultPlatform(),
                                   parseCompileOptions({quant, "unroll_budget=0.05"}, defaultPlatform()));
    int matmuls = 0, epilogues = 0;
    bool w4a8 = std::string(quant) == "quant=w4a8";
    std::map<std::string, int64_t> lanesOf;
    for (const Kernel& k : r.kernels.kernels) {
      if (k.op != "matmul") continue;
      ++matmuls;
      bool up = k.name == "up";  // W4A8: both have an epilogue (the int4 weights' scales)
      int64_t iterations = (up ? 256 : 1024) / (k.lanes / 16), share = up ? std::min<int64_t>(16, iterations) : 1;
      int64_t expected = w4a8 ? (k.lanes + 1) / 2 + (share > 1 ? 0 : 16 * 5) : 5 * k.lanes + (up ? 16 * 2 : 0);
      EXPECT_EQ(k.dsp, expected) << quant << " " << k.name << " lanes " << k.lanes;
      if (!w4a8 || share == 1) continue;
      const Kernel* epi = nullptr;
      for (const Kernel& e : r.kernels.kernels)
        if (e.name == k.name + ".epi") epi = &e;
      ASSERT_NE(epi, nullptr) << k.name;
      ++epilogues;
      EXPECT_EQ(epi->op, kEpilogueOp);
      EXPECT_EQ(epi->ii, share) << k.name;
      EXPECT_EQ(epi->dsp, (16 + share - 1) / share * 5) << k.name << " at II " << share;
    }
    EXPECT_EQ(matmuls, 2) << quant;
    EXPECT_EQ(epilogues, w4a8 ? 1 : 0) << quant;
  }
}

// The f32 steps of W4A8 kernels, counted by hand from the emitted code (emit/task_bodies.cpp) at 2 DSPs an
// f32 add and 3 a multiply, inputs dequantised by table lookups (no DSP): an add of two int8 streams adds
// and requantises (2 + 3 = 5 a lane); a layernorm's apply subtracts the mean, multiplies by the reciprocal
// and the gain, adds the bias, requantises (2 + 3 + 3 + 2 + 3 = 13 a lane) and adds eps once a row (2);
// its statistics square int8 values (two a DSP) and finish a row with two multiplies and two 64-bit
// products (3 * 2 + 8 * 2 = 22); a GELU looks its 256 results up (no DSP). At lane_ii=N each kind of
// operator is shared over N cycles, ceil(its count / N) of them, the kernel's II N.
TEST(Compiler, F32StepsOfW4A8KernelsCountTheirDsps) {
  const std::string graph =
      "graph: steps\ninputs: [{name: x, shape: [1, 256]}, {name: y, shape: [1, 256]}]\n"
      "weights: [{name: g, shape: [256]}, {name: b, shape: [256]}]\n"
      "ops:\n  - {name: s, op: add, inputs: [x, y], output: h}\n"
      "  - {name: n, op: layernorm, inputs: [h, g, b], output: hn}\n"
      "  - {name: a, op: gelu, inputs: [hn], output: o}\noutputs: [o]\n";
  for (int64_t ii : {1, 2, 4}) {
    CompileResult r = compileText(graph, {"quant=w4a8", "lane_ii=" + std::to_string(ii)});
    std::map<std::string, const Kernel*> by;
    for (const Kernel& k : r.kernels.kernels) by[k.op] = &k;
    auto shared = [&](int64_t count) { return (count + ii - 1) / ii; };
    ASSERT_TRUE(by.count("add") && by.count("layernorm.apply") && by.count("layernorm.stats") && by.count("gelu"));
    EXPECT_EQ(by["add"]->dsp, shared(16) * 2 + shared(16) * 3) << ii;
    EXPECT_EQ(by["layernorm.apply"]->dsp, shared(16 * 2 + 1) * 2 + shared(16 * 3) * 3) << ii;
    EXPECT_EQ(by["layernorm.stats"]->dsp, shared(16 / 2) + shared(2) * 3 + shared(2) * 8) << ii;
    EXPECT_EQ(by["gelu"]->dsp, 0) << ii;
    EXPECT_EQ(by["add"]->ii, ii);
    EXPECT_EQ(by["layernorm.apply"]->ii, ii);
    int64_t sum = 0;
    for (const Kernel& k : r.kernels.kernels) sum += k.dsp;
    EXPECT_EQ(r.report.resources.dsp, sum) << ii;
  }
}

// Rope's DSPs by hand: per lane both rotations (4 multiplies, 2 additions) and the requantisation (a
// multiply); its row's table of cos and sin computed once, ropeTableUnits pairs an iteration, each a
// multiply (pos * inv_freq[i]) and a cos and a sin (7 DSPs each). 4 heads of 64: 16 tokens a row, so 32
// angles by iteration 8: 4 an iteration. `lane_ii.OP` gives one op its own II.
TEST(Compiler, RopeComputesItsRowsCosAndSinOnce) {
  const std::string graph =
      "graph: rot\ninputs: [{name: x, shape: [1, 256]}, {name: y, shape: [1, 256]}]\n"
      "ops:\n  - {name: r, op: rope, inputs: [x], output: h, head_dim: 64}\n"
      "  - {name: s, op: add, inputs: [h, y], output: o}\noutputs: [o]\n";
  EXPECT_EQ(ropeTableUnits(64, 16), 4);
  EXPECT_EQ(ropeTableUnits(64, 128), 1);
  for (int64_t ii : {1, 2, 4}) {
    CompileResult r = compileText(graph, {"quant=w4a8", "lane_ii=4", "lane_ii.r=" + std::to_string(ii)});
    std::map<std::string, const Kernel*> by;
    for (const Kernel& k : r.kernels.kernels) by[k.op] = &k;
    ASSERT_TRUE(by.count("rope") && by.count("add"));
    auto shared = [&](int64_t count) { return (count + ii - 1) / ii; };
    EXPECT_EQ(by["rope"]->tableUnits, 4);
    EXPECT_EQ(by["rope"]->dsp, shared(16 * 5) * 3 + shared(16 * 2) * 2 + shared(4) * 3 + shared(4 * 2) * 7) << ii;
    EXPECT_EQ(by["rope"]->ii, ii);
    EXPECT_EQ(by["add"]->ii, 4);  // the layer's lane II
  }
}

// A reduction tile grows to any multiple of the stream tile that divides K, not only by doubling: K = 896
// (7 x 128) stops at 128 when doubling, and reaches 224 or 448 so. With the weight striped over every
// channel (max_stripe=32) the HBM delivers 1,840 bytes a cycle, so 896 x 896 int4 weights take 218
// cycles; at tk 224 the matmul takes 56 column tiles x 4 = 224 iterations, more than that, so growing on
// past 128 shortens it.
// A token's elements along a constant width: gcd(tile, width) where that is at least half the tile, else
// the width's largest divisor up to the tile, even where the width is, so that a 4-bit weight tile stays
// whole bytes (2,667 = 3 * 7 * 127 streamed one element a token made every
// elementwise op of a SwiGLU MLP on it 2,667 cycles a row).
TEST(Compiler, StreamTilesAreLargeDivisorsOfTheWidth) {
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {768, 16}, {1000, 8}, {2667, 7}, {27, 9}, {42, 14}, {29, 1}, {12, 12}, {1500, 12}, {60, 12}, {45, 15}};
  for (auto [width, tile] : cases) EXPECT_EQ(stc::tileFor(stc::Expr(width), 16), tile) << width;
  EXPECT_EQ(stc::tileFor(stc::Expr(2667), 64), 21);
  EXPECT_EQ(stc::tileFor(stc::Expr::parse("ctx"), 16), 16);
}

// Row blocks double where M allows, else step to M's next divisor up to 4 times the block: a 129-row
// prefill's matmuls ran in 1-row blocks (doubling never divided 129), 2x the cycles of 128 rows.
TEST(Compiler, RowBlocksStepThroughDivisorsOfTheRows) {
  EXPECT_EQ(stc::nextRowBlock(128, 4), 8);
  EXPECT_EQ(stc::nextRowBlock(129, 1), 3);
  EXPECT_EQ(stc::nextRowBlock(129, 3), 0);  // 43 is past 12
  EXPECT_EQ(stc::nextRowBlock(100, 4), 10);
  EXPECT_EQ(stc::nextRowBlock(97, 1), 0);
  EXPECT_EQ(stc::nextRowBlock(96, 32), 96);  // the whole: callers take blocks below M only
}

// A weight tile's stripes each move whole 512-bit beats or a divisor of one (UG1399: an m_axi access of a
// wider or misaligned token takes several), about the channels the tile needs per cycle (14.375 GB/s at
// 250 MHz: 57.5 bytes a channel-cycle), within the cap.
TEST(Compiler, WeightStripesAreBeatAligned) {
  for (int64_t ok : {16, 32, 64, 128, 192}) EXPECT_TRUE(stc::beatAligned(ok)) << ok;
  for (int64_t bad : {0, 48, 96, 80}) EXPECT_FALSE(stc::beatAligned(bad)) << bad;
  const stc::Platform u55c = stc::defaultPlatform();
  auto stripes = [&](int64_t bytes, int cap) {
    stc::CompileOptions o = stc::parseCompileOptions({"max_stripe=" + std::to_string(cap)}, u55c);
    return stc::wholeStripes(bytes, u55c, o, "w");
  };
  // 768 bytes need 13.4 channels; capped at 10, 10 to 7 do not divide into aligned stripes (76.8, 85.3,
  // 96, 109.7 bytes): 6 of 128 bytes (two beats), where 8 of 96 bytes were given before.
  EXPECT_EQ(stripes(768, 10), 6);
  // 512 bytes need 8.9: 9 and 10 do not divide it, 8 of one beat each.
  EXPECT_EQ(stripes(512, 10), 8);
  // 1,536 bytes need 26.7: 27 to 32 (at most a quarter above) give no aligned stripe (32 of 48 bytes), so
  // the most below: 24 of 64.
  EXPECT_EQ(stripes(1536, 32), 24);
  // 256 bytes need 4.45: 5 does not divide it, 4 of 64.
  EXPECT_EQ(stripes(256, 8), 4);
  // 1,024 bytes need 17.8 of a cap of 32: 18 to 22 do not divide it, 16 of 64.
  EXPECT_EQ(stripes(1024, 32), 16);
  // 96 bytes: no split is aligned (48, 96), whole bytes as before: 2.
  EXPECT_EQ(stripes(96, 8), 2);
  // A stripe holds whole elements: 108 bytes of 27 floats split into no two stripes (54 bytes each is 13.5
  // floats), where 108 bytes of int8 do (an emitted tile of 27 floats lost its last one to two stripes of 13).
  stc::CompileOptions o = stc::parseCompileOptions({"max_stripe=8"}, u55c);
  EXPECT_EQ(stc::wholeStripes(108, u55c, o, "w", 4), 1);
  EXPECT_EQ(stc::wholeStripes(108, u55c, o, "w", 1), 2);
  CompileResult r = compileText(
      "graph: odd\ninputs: [{name: x, shape: [2, 27]}]\nweights: [{name: w, shape: [27, 27]}]\n"
      "ops: [{name: mm, op: matmul, inputs: [x, w], output: y}]\noutputs: [y]\n");
  int64_t bits = 0;
  for (const Fifo& f : r.network.fifos)
    if (f.name.rfind("w.", 0) == 0 && f.name.size() > 4 && f.name.compare(f.name.size() - 4, 4, ".hbm") == 0) {
      EXPECT_EQ(f.width % 32, 0) << f.name;
      bits += f.width;
    }
  EXPECT_EQ(bits, 27 * 9 * 32);  // a [27, 9] tile a token: 27's stream tile is 9, its largest divisor to 16
}

TEST(Compiler, ReductionTilesGrowToDivisorsOfK) {
  // The reduction tile the search gives a one-row W4A8 matmul [1, K] x [K, N] over 32 channels.
  auto tkOf = [](int64_t K, int64_t N, const std::string& budget) {
    std::string k = std::to_string(K), n = std::to_string(N);
    const std::string graph = "graph: one\ninputs: [{name: x, shape: [1, " + k + "]}]\nweights: [{name: w, shape: [" +
                              k + ", " + n + "]}]\nops:\n  - {name: m, op: matmul, inputs: [x, w], output: o}\n"
                              "outputs: [o]\n";
    return compileText(graph, {"quant=w4a8", "max_stripe=32", "unroll_budget=" + budget}).schedules.at("m").tk;
  };
  int64_t tk = tkOf(896, 896, "1");
  EXPECT_EQ(896 % tk, 0) << tk;
  EXPECT_EQ(tk % 16, 0) << tk;
  EXPECT_GT(tk, 128) << tk;

  // K = 1,720 = 8 * 5 * 43: its stream tile is 8, and no multiple of 8 up to 16 divides it; the tile grows
  // to the next one that does (40, 344, ...) instead of staying at 8 (128 MACs a cycle).
  int64_t oddTk = tkOf(1720, 640, "0.2");
  EXPECT_EQ(1720 % oddTk, 0) << oddTk;
  EXPECT_EQ(oddTk % 8, 0) << oddTk;
  EXPECT_GE(oddTk, 40) << oddTk;
}

// A gated MLP of 128 rows, 512 -> 2 x 1,376 -> 512 (1,376 = 32 * 43): the down projection's K has tiles
// 16 and 32, then 688. Growing it to 688 took 5,504 DSPs at once and left gate and up at 512 MACs a cycle
// (198,780 cycles). Its output tile grows over N instead, K at 32, and gate and up unroll: each matmul at
// least 2,048 MACs a cycle, none past the budget.
TEST(Compiler, AReductionWithFewTilesUnrollsItsOutputInstead) {
  const std::string graph =
      "graph: glu\ninputs: [{name: x, shape: [128, 512]}]\n"
      "weights: [{name: wg, shape: [512, 1376]}, {name: wu, shape: [512, 1376]}, {name: wd, shape: [1376, "
      "512]}]\n"
      "ops:\n  - {name: gate, op: matmul, inputs: [x, wg], output: g}\n"
      "  - {name: up, op: matmul, inputs: [x, wu], output: u}\n  - {name: act, op: silu, inputs: [g], "
      "output: s}\n"
      "  - {name: glu, op: mul, inputs: [s, u], output: h}\n  - {name: down, op: matmul, inputs: [h, wd], "
      "output: y}\n"
      "outputs: [y]\n";
  CompileResult r = compileText(graph, {"quant=w4a8"});
  const MatmulSchedule& down = r.schedules.at("down");
  EXPECT_EQ(down.tk, 32);
  EXPECT_GE(down.tn, 64);
  EXPECT_EQ(512 % down.tn, 0);
  for (const char* op : {"gate", "up", "down"}) {
    const MatmulSchedule& s = r.schedules.at(op);
    int64_t tn = s.tn > 0 ? s.tn : 16;
    EXPECT_GE(s.tk * tn, 2048) << op;
  }
  EXPECT_TRUE(r.report.fits);
  // Pinned, K's tile is honoured as before.
  CompileResult pinned = compileText(graph, {"quant=w4a8", "tk.down=688"});
  EXPECT_EQ(pinned.schedules.at("down").tk, 688);
  EXPECT_EQ(pinned.schedules.at("down").tn, 0);
  // K = 192 grows 16, 24, 32, 48, 64, 96, 192 (no jump past 4x): its tile stays the search's. In f32 (5 DSPs
  // a MAC) three such matmuls once started at tk 96 each, 23,048 DSPs, and the design did not fit.
  const std::string three =
      "graph: qkv\ninputs: [{name: x, shape: [128, 192]}]\n"
      "weights: [{name: wq, shape: [192, 192]}, {name: wk, shape: [192, 192]}, {name: wv, shape: [192, "
      "192]}]\n"
      "ops:\n  - {name: q, op: matmul, inputs: [x, wq], output: qo}\n"
      "  - {name: k, op: matmul, inputs: [x, wk], output: ko}\n  - {name: v, op: matmul, inputs: [x, wv], "
      "output: vo}\n"
      "outputs: [qo, ko, vo]\n";
  for (const char* quant : {"quant=none", "quant=w4a8"}) {
    CompileResult r3 = compileText(three, {quant});
    EXPECT_TRUE(r3.report.fits) << quant;
    for (const char* op : {"q", "k", "v"}) EXPECT_EQ(r3.schedules.at(op).tn, 0) << quant << " " << op;
  }
}

// A matmul of more than one row grows its reduction tile by half its stream tile where that divides K:
// the scores over heads of 80 (attention_rope_prefill.yaml, 12 heads, 128 rows, W4A8) go 16 -> 40, where
// growing by the stream tile jumped to 80, and the sized design takes at most 0.9x the cycles of the
// one the search chose before (the scores at 16, the projections at 160, pinned): 55,482 against 65,978.
// (Both run every key: with the masked half skipped the scores need fewer lanes, and the search keeps them
// at 16, 54,787 cycles.) A one-row matmul (a GEMV) keeps multiples of the stream tile: one that streams its
// input takes its producer's tokens of 16 (a decode MLP over Gemma 3 1B's widths, 1,152 and 6,912, whose K
// also has 72 and 1,224 at half the tile).
TEST(Compiler, MatmulsOfManyRowsGrowTheirTileByHalfTheStreamTile) {
  CompileResult fine = compileFile("attention_rope_prefill.yaml", {"quant=w4a8", "causal_triangles=off"});
  EXPECT_EQ(fine.schedules.at("scores").tk, 40);
  CompileResult coarse = compileFile("attention_rope_prefill.yaml",
                                     {"quant=w4a8", "causal_triangles=off", "tk.scores=16", "tk.q_proj=160",
                                      "tk.k_proj=160", "tk.v_proj=160", "tk.o_proj=160"});
  Network a, b;
  int64_t fineCycles = sizing::sizeFifos(fine.network, sizing::SizingOptions{}, a).cyclesSized;
  int64_t coarseCycles = sizing::sizeFifos(coarse.network, sizing::SizingOptions{}, b).cyclesSized;
  ASSERT_GT(fineCycles, 0);
  EXPECT_LT(fineCycles * 10, coarseCycles * 9) << fineCycles << " vs " << coarseCycles;
  const std::string gemv =
      "graph: gemv_mlp\ninputs: [{name: x, shape: [1, 1152]}]\n"
      "weights: [{name: wg, shape: [1152, 6912]}, {name: wu, shape: [1152, 6912]}, {name: wd, shape: [6912, "
      "1152]}]\n"
      "ops:\n  - {name: gate, op: matmul, inputs: [x, wg], output: g}\n"
      "  - {name: up, op: matmul, inputs: [x, wu], output: u}\n"
      "  - {name: act, op: silu, inputs: [g], output: sg}\n  - {name: glu, op: mul, inputs: [sg, u], output: "
      "p}\n"
      "  - {name: down, op: matmul, inputs: [p, wd], output: y}\noutputs: [y]\n";
  CompileResult decode = compileText(gemv, {"quant=w4a8", "unroll_budget=0.55"});
  for (const char* op : {"gate", "up", "down"}) {
    EXPECT_GT(decode.schedules.at(op).tk, 16) << op;
    EXPECT_EQ(decode.schedules.at(op).tk % 16, 0) << op << " " << decode.schedules.at(op).tk;
  }
}

// An f32 SwiGLU MLP of 8 rows whose gate and up are one projection to 2f, split in halves (torch's chunk):
// at width 176 (= 16 * 11) K's tiles are 16, then 88 (at half the stream tile), 5.5 times the DSPs at 5 a
// MAC. The search stopped at tk 16 with two thirds of the DSPs unused (at width 80, while K's tiles grew by
// the stream tile: 8,303 sized cycles, against 5,924 at width 96 with 1.44x the MACs); the projection's
// output tile grows instead, K's staying 16. Width 80 now has 40 between, and grows K to it: the narrower
// layer is faster than the wider one, which grows its own K 16 -> 24 -> 48.
TEST(Compiler, AnF32ReductionWithoutAMiddleTileUnrollsItsOutput) {
  auto swiglu = [](int d) {
    std::string D = std::to_string(d), F = std::to_string(2 * d), F2 = std::to_string(4 * d);
    return "graph: swiglu\ninputs: [{name: x, shape: [8, " + D +
           "]}]\n"
           "weights: [{name: w12, shape: [" +
           D + ", " + F2 + "]}, {name: w3, shape: [" + F + ", " + D +
           "]}]\n"
           "ops:\n  - {name: proj, op: matmul, inputs: [x, w12], output: h}\n"
           "  - {name: a, op: slice, inputs: [h], output: g, axis: 1, start: 0, end: " +
           F +
           "}\n"
           "  - {name: b, op: slice, inputs: [h], output: u, axis: 1, start: " +
           F + ", end: " + F2 +
           "}\n"
           "  - {name: act, op: silu, inputs: [g], output: s}\n  - {name: glu, op: mul, inputs: [s, u], "
           "output: p}\n"
           "  - {name: down, op: matmul, inputs: [p, w3], output: y}\noutputs: [y]\n";
  };
  CompileResult odd = compileText(swiglu(176), {"quant=none"});
  const MatmulSchedule& proj = odd.schedules.at("proj");
  EXPECT_EQ(proj.tk, 16);
  EXPECT_GE(proj.tn, 32);
  EXPECT_EQ(704 % proj.tn, 0);
  EXPECT_TRUE(odd.report.fits);
  CompileResult narrow = compileText(swiglu(80), {"quant=none"});
  EXPECT_EQ(narrow.schedules.at("proj").tk, 40);
  EXPECT_EQ(narrow.schedules.at("proj").tn, 0);
  CompileResult wide = compileText(swiglu(96), {"quant=none"});
  EXPECT_EQ(wide.schedules.at("proj").tn, 0);  // K = 96 has 24, 32 and 48: its own tile grows
  int64_t narrowCycles = simulate(narrow.network).cycles, wideCycles = simulate(wide.network).cycles;
  EXPECT_LT(narrowCycles, wideCycles);
  // Pinned, K's tile is honoured.
  EXPECT_EQ(compileText(swiglu(80), {"quant=none", "tk.proj=80"}).schedules.at("proj").tk, 80);
  // Over the budget at the stream tiles (a tenth of the DSPs: 875, the projection alone 1,280 at Tk 16,
  // Tn 16), the search halves K's tile below the stream tile as before (with the output tile growing, it
  // could not).
  CompileResult tight = compileText(swiglu(176), {"quant=none", "unroll_budget=0.1"});
  EXPECT_LT(tight.schedules.at("proj").tk, 16);
  EXPECT_EQ(tight.schedules.at("proj").tn, 0);
  EXPECT_LE(tight.report.resources.dsp, 0.1 * defaultPlatform().kernelResources().dsp);
}

std::string errorOf(const std::string& text, const std::vector<std::string>& settings = {}) {
  try {
    compileText(text, settings);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

// P.V reduces over ctx, a symbolic K whose tile stays the 16 it is padded to: the search widens its output
// tile instead (16 -> 32 -> 64 over head_dim), and the attention at ctx 1,000 gets shorter. By hand, mix
// runs 8 heads x 64 / tn output tiles x ceil(1,001 / 16) = 63 reduction steps. A pinned tn must be a
// multiple of the stream tile that divides N, and a symbolic N (the scores over ctx) takes none.
TEST(Compiler, SymbolicReductionsWidenTheirOutputTile) {
  const std::string graph = readTextFile(graphFile("attention_decode.yaml"));
  auto mixIterations = [](const Network& n, const Bindings& at) {
    int64_t product = 1;
    for (const Expr& t : n.tasks[static_cast<size_t>(taskNamed(n, "mix"))].phases.at(0).trip) product *= t.eval(at);
    return product;
  };
  const Bindings at{{"ctx", 1000}};
  CompileResult chosen = compileText(graph, {"quant=w4a8", "max_ctx=1024"});
  int64_t tn = chosen.schedules.at("mix").tn;
  EXPECT_EQ(chosen.schedules.at("mix").tk, 16);
  ASSERT_TRUE(tn == 32 || tn == 64) << tn;
  EXPECT_EQ(mixIterations(chosen.network, at), 8 * (64 / tn) * 63);
  CompileResult narrow = compileText(graph, {"quant=w4a8", "max_ctx=1024", "tn.mix=16"});
  EXPECT_EQ(narrow.schedules.at("mix").tn, 0);  // the stream tile
  EXPECT_EQ(mixIterations(narrow.network, at), 8 * 4 * 63);
  CompileResult wide = compileText(graph, {"quant=w4a8", "max_ctx=1024", "tn.mix=64"});
  EXPECT_EQ(mixIterations(wide.network, at), 8 * 63);
  int64_t narrowCycles = simulate(narrow.network, at).cycles;
  EXPECT_LT(simulate(chosen.network, at).cycles, narrowCycles * 3 / 4);
  EXPECT_LT(simulate(wide.network, at).cycles, narrowCycles * 3 / 4);
  EXPECT_GE(simulate(wide.network, at).cycles, 8 * 63);
  // The widened tokens reach the readers at the stream tile, and a schedule file keeps the choice.
  std::vector<SchedulePin> pins = parseSchedule(emitSchedule(schedulePins(wide.schedules, wide.options)), "s.yaml");
  CompileOptions again = parseCompileOptions({"quant=w4a8", "max_ctx=1024"}, defaultPlatform());
  applySchedule(pins, again);
  EXPECT_EQ(emitNetwork(compileGraph(parseGraph(graph, "g.yaml"), defaultPlatform(), again).network),
            emitNetwork(wide.network));
  EXPECT_NE(errorOf(graph, {"tn.mix=48"}).find("the output tile must be a multiple of 16 that divides N (64)"),
            std::string::npos)
      << errorOf(graph, {"tn.mix=48"});
  EXPECT_NE(errorOf(graph, {"tn.scores=32"}).find("N is symbolic: its tile is the stream tile"), std::string::npos)
      << errorOf(graph, {"tn.scores=32"});
}

// Gemma's grouped-query P.V at a 32-wide output tile writes panels, and a move kernel gives its output
// row-major through the panels' converter in tokens of the stream tile: the move has 16 lanes (its LUTs
// counted for the tokens it moves), not the matmul's 32.
TEST(Compiler, AMoveAfterWidenedPanelsHasTheStreamTilesLanes) {
  ModelSpec m = loadModel(STC_SOURCE_DIR "/models/gemma.yaml");
  CompileOptions o = parseCompileOptions({"quant=w4a8", "tn.mixed_op=32"}, defaultPlatform());
  o.maxima["ctx"] = m.maxCtx;
  CompileResult r = compileGraph(buildDecodeLayer(m), defaultPlatform(), o);
  int moves = 0;
  for (const Kernel& k : r.kernels.kernels) {
    if (k.name == "mixed_op") {
      EXPECT_EQ(k.lanes, 16 * 32);
    }
    if (k.name == "mixed_op.rows") {
      ++moves;
      EXPECT_EQ(k.op, "move");
      EXPECT_EQ(k.lanes, 16);
    }
  }
  EXPECT_EQ(moves, 1);
}

// f32 weights are bound by HBM bandwidth (a 16 x 16 tile is 1 KiB, more than 8 channels deliver per
// cycle), so unrolling them buys nothing and the search leaves them; W4A8 tiles (128 bytes) are not, and
// a larger DSP budget unrolls them further and runs faster.
// The budget covers every kernel, not only the matmuls; under a budget the stream tile already exceeds,
// the reduction tiles shrink (f32 mlp: two matmuls of 16x16 MACs at 5 DSPs each are 2,560 DSPs).
TEST(Compiler, UnrollingFollowsTheBudget) {
  CompileResult f32Small = compileFile("mlp.yaml", {"unroll_budget=0.1"});
  CompileResult f32Large = compileFile("mlp.yaml", {"unroll_budget=0.5"});
  EXPECT_LE(f32Small.report.resources.dsp, 902);
  EXPECT_GT(f32Large.report.resources.dsp, 2560);
  EXPECT_LE(f32Large.report.resources.dsp, 9024 / 2);
  for (const char* budget : {"unroll_budget=0.4", "unroll_budget=0.7"}) {
    CompileResult r = compileFile("gpt2_layer.yaml", {budget});
    EXPECT_LE(static_cast<double>(r.report.resources.dsp), std::stod(std::string(budget).substr(14)) * 9024) << budget;
  }
  CompileResult small = compileFile("mlp.yaml", {"quant=w4a8", "unroll_budget=0.01"});
  CompileResult large = compileFile("mlp.yaml", {"quant=w4a8", "unroll_budget=0.5"});
  EXPECT_GT(large.report.resources.dsp, small.report.resources.dsp);
  EXPECT_LE(large.report.resources.dsp, 9024 / 2);
  EXPECT_LT(simulate(large.network).cycles, simulate(small.network).cycles);
}

// The budget goes where the layer waits. One row through a (1024 x 1024), a norm, then b and c side by
// side (1024 x 2048 each) into a product: b and c run together, a before them. Unrolling b alone buys
// nothing while c is as slow, and a is on the path as much as they are. Checked against a second method:
// every pinned assignment of the three reduction tiles (16 to 256) within the same DSPs, each compiled and
// simulated; the chosen design is within 5% of the fastest of them.
TEST(Compiler, UnrollingGoesWhereTheLayerWaits) {
  const std::string graph =
      "graph: chain\ninputs: [{name: x, shape: [1, 1024]}]\n"
      "weights:\n  - {name: wa, shape: [1024, 1024]}\n  - {name: g, shape: [1024]}\n  - {name: bt, shape: "
      "[1024]}\n"
      "  - {name: wb, shape: [1024, 2048]}\n  - {name: wc, shape: [1024, 2048]}\n"
      "ops:\n  - {name: a, op: matmul, inputs: [x, wa], output: h}\n"
      "  - {name: n, op: layernorm, inputs: [h, g, bt], output: hn}\n"
      "  - {name: b, op: matmul, inputs: [hn, wb], output: u}\n"
      "  - {name: c, op: matmul, inputs: [hn, wc], output: v}\n"
      "  - {name: m, op: mul, inputs: [u, v], output: y}\noutputs: [y]\n";
  const std::vector<std::string> base = {"quant=w4a8", "unroll_budget=0.12"};
  CompileResult chosen = compileText(graph, base);
  const double budget = 0.12 * defaultPlatform().kernelResources().dsp;
  EXPECT_LE(chosen.report.resources.dsp, budget);
  EXPECT_EQ(chosen.schedules.at("b").tk, chosen.schedules.at("c").tk);
  int64_t chosenCycles = simulate(chosen.network).cycles, fastest = 0;
  std::string fastestPins;
  for (int64_t a = 16; a <= 256; a *= 2)
    for (int64_t b = 16; b <= 256; b *= 2)
      for (int64_t c = 16; c <= 256; c *= 2) {
        std::vector<std::string> pins = base;
        for (auto [op, tk] : {std::pair{"a", a}, {"b", b}, {"c", c}})
          pins.push_back(std::string("tk.") + op + "=" + std::to_string(tk));
        CompileResult r = compileText(graph, pins);
        if (r.report.resources.dsp > budget) continue;
        int64_t cycles = simulate(r.network).cycles;
        if (fastest == 0 || cycles < fastest)
          fastest = cycles, fastestPins = pins[2] + " " + pins[3] + " " + pins[4];
      }
  ASSERT_GT(fastest, 0);
  EXPECT_LE(static_cast<double>(chosenCycles), 1.05 * static_cast<double>(fastest))
      << "chosen tk a=" << chosen.schedules.at("a").tk << " b=" << chosen.schedules.at("b").tk
      << " c=" << chosen.schedules.at("c").tk << "; fastest " << fastestPins;
}

TEST(Compiler, Errors) {
  EXPECT_EQ(errorOf("graph: g\ninputs: [{name: x, shape: [4, 8]}]\nops:\n  - {name: f, op: fft, inputs: [x], output: y}\n"
                    "outputs: [y]\n"),
            "g.yaml:4:5: error: field 'op': unsupported op 'fft' in 'f'");
  EXPECT_EQ(errorOf("graph: g\ninputs: [{name: x, shape: [4, 8]}]\nweights: [{name: w, shape: [6, 2]}]\nops:\n"
                    "  - {name: mm, op: matmul, inputs: [x, w], output: y}\noutputs: [y]\n"),
            "g.yaml:5:5: error: op 'mm' (matmul): inner dimensions differ: [4, 8] x [6, 2]");
  EXPECT_EQ(errorOf("graph: g\ninputs: [{name: x, shape: [4, 8]}, {name: z, shape: [3, 8]}]\nops:\n"
                    "  - {name: s, op: add, inputs: [x, z], output: y}\noutputs: [y]\n"),
            "g.yaml:4:5: error: op 's' (add): shapes [4, 8] and [3, 8] do not broadcast");
  // A tensor past the platform's HBM is refused by name (a [2^18, 2^18] input ran for minutes).
  EXPECT_EQ(
      errorOf("graph: g\ninputs: [{name: x, shape: [262144, 262144]}]\nops:\n"
              "  - {name: r, op: relu, inputs: [x], output: y}\noutputs: [y]\n"),
      "g.yaml:2:10: error: tensor 'x' holds 274877906944 bytes, more than the platform's HBM (17179869184 "
      "bytes)");
  // A scalar result (a reshape of [1] to []) is refused (it crashed the tile choice).
  EXPECT_EQ(errorOf("graph: g\ninputs: [{name: x, shape: [1]}]\nops:\n"
                    "  - {name: s, op: reshape, inputs: [x], output: y, shape: []}\noutputs: [y]\n"),
            "g.yaml:4:5: error: op 's': its result has no dimensions (a scalar); keep a dimension of 1");
  // rope rotates heads of head_dim in two halves: it must be even and divide the row.
  EXPECT_EQ(
      errorOf("graph: g\ninputs: [{name: x, shape: [4, 240]}]\nops:\n"
              "  - {name: r, op: rope, inputs: [x], output: y, head_dim: 64}\noutputs: [y]\n"),
      "g.yaml:4:5: error: op 'r' (rope): field 'head_dim': rope's head_dim must be even and divide the last "
      "dimension (240), got 64");
  EXPECT_EQ(
      errorOf("graph: g\ninputs: [{name: x, shape: [4, 240]}]\nops:\n"
              "  - {name: r, op: rope, inputs: [x], output: y, head_dim: 15}\noutputs: [y]\n"),
      "g.yaml:4:5: error: op 'r' (rope): field 'head_dim': rope's head_dim must be even and divide the last "
      "dimension (240), got 15");
  std::string mlp = readTextFile(graphFile("mlp.yaml"));
  std::string e = errorOf(mlp, {"onchip_budget_bytes=100"});
  EXPECT_NE(e.find("error: the on-chip budget of 100 bytes is too small for kernel 'up', which needs"), std::string::npos) << e;
  EXPECT_EQ(
      errorOf(mlp, {"tiles=4"}),
      "stc compile: error: unknown setting 'tiles' (known: tile, unroll_budget, onchip_budget_bytes, quant, "
      "lane_ii, max_stripe, max_SYMBOL, row_block, slr_split, fusion_joins, stripe_estimate, tk.OP, tn.OP, "
      "row_block.OP, lane_ii.OP, dim.AXIS)");
  EXPECT_EQ(errorOf(mlp, {"slr_split=maybe"}), "stc compile: error: --set slr_split expects on or off, got 'maybe'");
  EXPECT_EQ(errorOf(mlp, {"fusion_joins=maybe"}),
            "stc compile: error: --set fusion_joins expects whole or trimmed, got 'maybe'");
  EXPECT_EQ(errorOf(mlp, {"stripe_estimate=both"}),
            "stc compile: error: --set stripe_estimate expects aligned or channels, got 'both'");
  EXPECT_EQ(errorOf(mlp, {"row_block=many"}),
            "stc compile: error: --set row_block expects auto, 0 (every row) or rows per block, got 'many'");
  EXPECT_EQ(errorOf(mlp, {"quant=w3a7"}), "stc compile: error: --set quant expects w4a8 or none, got 'w3a7'");
  // kv_append's result is the cache patched as it streams into a matmul: nothing else may read it.
  const std::string kv = "graph: g\ninputs: [{name: q, shape: [2, 1, 16]}, {name: r, shape: [1, 32]}, "
                         "{name: k, shape: [2, 16, ctx + 1]}]\nops:\n"
                         "  - {name: ka, op: kv_append, inputs: [k, r], output: kk, axis: 2}\n";
  EXPECT_EQ(errorOf(kv + "  - {name: s, op: matmul, inputs: [q, kk], output: y}\noutputs: [y, kk]\n"),
            "g.yaml:4:5: error: unsupported: op 'ka' (kv_append): its result 'kk' cannot be a graph output (it is "
            "the cache, patched as it streams)");
  EXPECT_EQ(errorOf(kv + "  - {name: s, op: exp, inputs: [kk], output: y}\noutputs: [y]\n"),
            "g.yaml:5:5: error: unsupported: op 's' (exp): the cache 'kk' (kv_append) can only be a matmul's right side");
}

// Row blocks. An MLP on 128 rows (512 -> 2048 -> 512, W4A8, the 16-wide stream tile).
const char* kMlp128 =
    "graph: mlp128\n"
    "inputs: [{name: x, shape: [128, 512]}]\n"
    "weights: [{name: w_up, shape: [512, 2048]}, {name: b_up, shape: [2048]}, {name: w_down, shape: [2048, "
    "512]}]\n"
    "ops:\n"
    "  - {name: up, op: matmul, inputs: [x, w_up, b_up], output: h}\n"
    "  - {name: act, op: gelu, inputs: [h], output: g}\n"
    "  - {name: down, op: matmul, inputs: [g, w_down], output: y}\n"
    "outputs: [y]\n";

// Matmuls whose panels make the next one's rows share one row block (dse/tiling.cpp, a chain): a gated MLP's
// gate and up, whose product walks both their panels, and down after it. The converter between them holds a
// block of the larger of the blocks by the itensor rule: with one block, 4 rows of the FFN (1,376 int8). Its
// layer estimate sits on its weights' HBM bound, where doubling the chain is taken at up to 2% more estimated
// cycles: 2-row blocks before (gate and up; down 4: 54,195 cycles sized, 7.2% of the intermediate results
// kept whole), 4-row ones now (50,215 and 6.6%). A pin on one leaves the others to themselves.
TEST(Compiler, ChainedMatmulsShareOneRowBlock) {
  CompileResult r = compileFile("gqa_prefill.yaml", {"quant=w4a8"});
  for (const char* op : {"gate", "up", "down"}) EXPECT_EQ(r.schedules.at(op).rowBlock, 4) << op;
  int regions = 0;
  for (const Fifo& f : r.network.fifos)
    if (f.isRegion() && f.name.rfind("m.cvt", 0) == 0) {
      EXPECT_EQ(f.width, 4 * 1376 * 8) << f.name;
      ++regions;
    }
  EXPECT_EQ(regions, 1);
  CompileResult pinned = compileFile("gqa_prefill.yaml", {"quant=w4a8", "row_block.down=8"});
  EXPECT_EQ(pinned.schedules.at("down").rowBlock, 8);
  EXPECT_NE(pinned.schedules.at("gate").rowBlock, 8);
}

// Each matmul's block is the fewest rows (a power of two) that keep its weight stream, read again per
// block, within its iterations: iterations 128 * N/16 * K/tk; weight bytes per block K * N / 2 over 32
// channels of 14.375 GB/s at 250 MHz (57.5 bytes a cycle). But up and down stream side by side and share
// the channels: at those blocks all their bytes take more cycles than the iterations, so blocks are
// doubled (the layer estimate's choice), and then they take fewer. up makes down's rows (through the gelu
// walking its panels): a chain, in one block, so both double together.
TEST(Compiler, PrefillMatmulsRunInTheFewestRowsThatKeepUpWithHbm) {
  CompileResult r = compileText(kMlp128, {"quant=w4a8"});
  struct Dims {
    const char* op;
    double K, N;
  };
  auto hbmCycles = [](const Dims& d, int64_t block) { return 128 / block * d.K * d.N / 2 / (32 * 57.5); };
  double iterations = 0, atOwn = 0, atChosen = 0;
  int doubled = 0;
  for (Dims d : {Dims{"up", 512, 2048}, Dims{"down", 2048, 512}}) {
    const MatmulSchedule& s = r.schedules.at(d.op);
    double own = 128 * d.N / 16 * d.K / static_cast<double>(s.tk);
    iterations = std::max(iterations, own);
    int64_t block = 1;
    while (hbmCycles(d, block) > own) block *= 2;
    EXPECT_TRUE(s.rowBlock == block || s.rowBlock == 2 * block) << d.op << " " << s.rowBlock << " " << block;
    doubled += s.rowBlock == 2 * block;
    atOwn += hbmCycles(d, block);
    atChosen += hbmCycles(d, s.rowBlock);
    EXPECT_LT(s.rowBlock, 128) << d.op;
    // Loops (block, n, row, k).
    const Task& t = r.network.tasks[static_cast<size_t>(taskNamed(r.network, d.op))];
    EXPECT_EQ(t.phases[0].trip,
              (std::vector<Expr>{Expr(128 / s.rowBlock), Expr(static_cast<int64_t>(d.N) / 16),
                                 Expr(s.rowBlock), Expr(static_cast<int64_t>(d.K) / s.tk)}))
        << d.op;
  }
  EXPECT_GT(atOwn, iterations);  // 36,472 cycles of weights against 32,768 iterations
  EXPECT_EQ(doubled, 2);
  EXPECT_EQ(r.schedules.at("up").rowBlock, r.schedules.at("down").rowBlock);
  EXPECT_LE(atChosen, iterations);  // 18,236
  // A doubled block keeps 2 x 4 rows of (K + N) int8 (20,480 bytes) on chip: over each matmul's share of a
  // 40,000-byte budget, so no block doubles there.
  CompileResult small = compileText(kMlp128, {"quant=w4a8", "onchip_budget_bytes=40000"});
  EXPECT_EQ(small.schedules.at("up").rowBlock, 2);
  EXPECT_EQ(small.schedules.at("down").rowBlock, 2);
  // Buffers by the itensor rule: a block of x (B_up x 512 int8) before up; g in the column panels of up's
  // blocks (the gelu walks them as up makes them) into down's blocks, the larger of the two blocks
  // (max(B_up, B_down) x 2048), so no block of h after up; a column panel of each weight (K x 16 int4),
  // a block of y (B_down x 512) after down, a [16, 2] f32 tile of each epilogue; twice each (ping-pong).
  int64_t bu = r.schedules.at("up").rowBlock, bd = r.schedules.at("down").rowBlock;
  std::map<std::string, int64_t> regionBytes = {{"x", bu * 512},
                                                {"w_up", 512 * 16 / 2},
                                                {"g", std::max(bu, bd) * 2048},
                                                {"w_down", 2048 * 16 / 2},
                                                {"y.panels", bd * 512},
                                                {"up.epilogue", 16 * 2 * 4},
                                                {"down.epilogue", 16 * 2 * 4}};
  int regions = 0;
  for (const Fifo& f : r.network.fifos) {
    auto cvt = f.name.find(".cvt");
    if (f.name.size() < 7 || f.name.compare(f.name.size() - 7, 7, ".region") != 0) continue;
    ++regions;
    EXPECT_EQ(f.width, 8 * regionBytes.at(f.name.substr(0, cvt))) << f.name;
  }
  EXPECT_EQ(regions, 7);
  // The gelu reads up's panels as up makes them: a plain FIFO from up, and no kernel copies them into rows.
  EXPECT_EQ(fifoNamed(r.network, "h>act").width, 16 * 8);
  EXPECT_EQ(taskNamed(r.network, "up.rows"), -1);
  // The intermediate results (h and g, 128 x 2048 int8) kept whole take 512 KiB; streamed, at most a
  // fifth of that, and the whole design (weight panels and DMA FIFOs too) less than them.
  EXPECT_EQ(r.report.onchipBytesUnfused, 2 * 128 * 2048);
  EXPECT_LE(r.report.onchipBytesIntermediate * 5, r.report.onchipBytesUnfused);
  EXPECT_LT(r.report.onchipBytesFused, r.report.onchipBytesUnfused);
  EXPECT_EQ(r.report.groups, 1);
  EXPECT_FALSE(simulate(r.network).deadlock);
}

// Elementwise ops walk the column panels their matmuls make. A gated MLP over 32 rows (`gated_mlp.yaml`:
// silu(gate) * up, then down; 256 -> 512 -> 256, W4A8), gate and up pinned to blocks of 4 rows and
// down to 8: gate hands its panels to silu as made, silu and up hand theirs to the product, and the one
// converter in front of down takes the product's panels (blocks of 4 rows, 16 columns a token) into
// down's blocks: 8 rows of 512 int8 (the larger block; every column, since down reads a row's whole K
// for each of its own panels), twice (ping-pong). No kernel copies panels into rows, and no converter
// holds a block of g or u. With up at 2 rows the product's inputs come in two orders and it walks rows:
// silu still walks gate's panels, a converter takes its result into rows (a block, 4 rows of 512), and a
// kernel copies up's panels into rows through another (2 rows of 512).
TEST(Compiler, ElementwiseOpsWalkTheColumnPanelsTheirMatmulsMake) {
  auto regions = [](const CompileResult& r) {
    std::map<std::string, int64_t> out;  // a converter's tensor: its region's bytes
    for (const Fifo& f : r.network.fifos)
      if (auto cvt = f.name.find(".cvt"); cvt != std::string::npos && f.name.size() > 7 &&
                                          f.name.compare(f.name.size() - 7, 7, ".region") == 0)
        out[f.name.substr(0, cvt)] = f.width / 8;
    return out;
  };
  auto copies = [](const CompileResult& r) {
    std::vector<std::string> out;
    for (const Task& t : r.network.tasks)
      if (t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".rows") == 0) out.push_back(t.name);
    return out;
  };
  CompileResult same = compileFile("gated_mlp.yaml", {"quant=w4a8", "row_block.gate=4", "row_block.up=4",
                                                      "row_block.down=8", "tk.down=32"});
  std::map<std::string, int64_t> at = regions(same);
  EXPECT_EQ(at.at("m"), 8 * 512);
  EXPECT_EQ(at.count("g"), 0u);
  EXPECT_EQ(at.count("g.panels"), 0u);
  EXPECT_EQ(at.count("u.panels"), 0u);
  EXPECT_EQ(copies(same), (std::vector<std::string>{"down.rows"}));  // y, a graph output, leaves in rows
  for (const char* plain : {"g>act", "a>gated", "u>gated"})
    EXPECT_EQ(fifoNamed(same.network, plain).width, 16 * 8) << plain;
  EXPECT_FALSE(simulate(same.network).deadlock);

  CompileResult apart = compileFile("gated_mlp.yaml", {"quant=w4a8", "row_block.gate=4", "row_block.up=2",
                                                       "row_block.down=8", "tk.down=32"});
  std::map<std::string, int64_t> two = regions(apart);
  EXPECT_EQ(two.at("a"), 4 * 512);
  EXPECT_EQ(two.at("u.panels"), 2 * 512);
  EXPECT_EQ(two.at("m"), 8 * 512);
  EXPECT_EQ(copies(apart), (std::vector<std::string>{"up.rows", "down.rows"}));
  EXPECT_FALSE(simulate(apart.network).deadlock);
  EXPECT_LT(same.report.onchipBytesIntermediate, apart.report.onchipBytesIntermediate);
}

// A matmul over rows made in column panels starts once the producer's first block is in (dse/tiling.cpp,
// LayerEstimate): a GPT-2-small layer of 160 rows (768, 12 heads of 64, FFN 3,072; W4A8), written as
// decoder_prefill.yaml. The unroll search kept fc1 in blocks of 8 rows beside fc2's 2 while the estimate
// saw no fill in fc1's blocks; sized, the design it chooses now is at least 3% faster than one with those
// blocks pinned (135,193 against 141,069 cycles).
TEST(Compiler, RowsMadeInPanelsComeABlockAtATime) {
  std::string layer = readTextFile(graphFile("decoder_prefill.yaml"));
  for (auto [from, to] : {std::pair<std::string, std::string>{"[128, 1024]", "[160, 768]"},
                          {"[1024, 4096]", "[768, 3072]"},
                          {"[4096]", "[3072]"},
                          {"[4096, 1024]", "[3072, 768]"},
                          {"[128, 16, 64]", "[160, 12, 64]"}}) {
    for (size_t at = layer.find(from); at != std::string::npos; at = layer.find(from, at + to.size()))
      layer.replace(at, from.size(), to);
  }
  for (size_t at = layer.find("[1024"); at != std::string::npos; at = layer.find("[1024", at))
    layer.replace(at, 5, "[768");
  for (size_t at = layer.find(", 1024]"); at != std::string::npos; at = layer.find(", 1024]", at))
    layer.replace(at, 7, ", 768]");
  CompileResult chosen = compileText(layer, {"quant=w4a8"});
  CompileResult before = compileText(layer, {"quant=w4a8", "row_block.fc1=8", "row_block.fc2=2"});
  EXPECT_LT(chosen.schedules.at("fc1").rowBlock, 8);
  Network a, b;
  sizing::SizingResult sizedChosen = sizing::sizeFifos(chosen.network, sizing::SizingOptions{}, a);
  sizing::SizingResult sizedBefore = sizing::sizeFifos(before.network, sizing::SizingOptions{}, b);
  ASSERT_GT(sizedChosen.cyclesSized, 0);
  EXPECT_LT(sizedChosen.cyclesSized * 100, sizedBefore.cyclesSized * 97)
      << sizedChosen.cyclesSized << " vs " << sizedBefore.cyclesSized;
}

// A 96-row GPT-2 MLP (768 -> 3072 -> 768, W4A8). With each matmul at its own smallest row block, the
// layer's weights over the shared channels held the unroll search at Tk 128 (up in 1-row blocks, down in
// 2); once the layer's blocks are doubled, larger tiles pay. The search's design leaves the plateau: all
// weight bytes, re-read per block, over the 32 channels (57.5 bytes a cycle each) take no more cycles
// than the slower matmul's iterations (96 * N/16 * K/Tk), and its run is at least 1.8x shorter than the
// design the search stopped at before.
TEST(Compiler, TilesGrowOnceTheLayersRowBlocksAreDoubled) {
  std::string mlp = kMlp128;
  for (auto [from, to] : {std::pair<std::string, std::string>{"128, 512", "96, 768"},
                          {"512, 2048", "768, 3072"},
                          {"[2048]", "[3072]"},
                          {"2048, 512", "3072, 768"},
                          {"mlp128", "mlp96"}}) {
    auto at = mlp.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    mlp.replace(at, from.size(), to);
  }
  CompileResult r = compileText(mlp, {"quant=w4a8"});
  double iterations = 0, hbm = 0;
  for (auto [op, K, N] : {std::tuple<const char*, double, double>{"up", 768, 3072}, {"down", 3072, 768}}) {
    const MatmulSchedule& s = r.schedules.at(op);
    iterations = std::max(iterations, 96 * N / 16 * K / static_cast<double>(s.tk));
    double reads = s.rowBlock == 0 ? 1 : 96.0 / static_cast<double>(s.rowBlock);
    hbm += reads * K * N / 2 / (32 * 57.5);
  }
  EXPECT_LE(hbm, iterations);
  EXPECT_GT(r.schedules.at("up").tk + r.schedules.at("down").tk, 256);
  CompileResult before =
      compileText(mlp, {"quant=w4a8", "tk.up=128", "tk.down=128", "row_block.up=1", "row_block.down=2"});
  int64_t now = simulate(r.network).cycles, then = simulate(before.network).cycles;
  EXPECT_LT(static_cast<double>(now) * 1.8, static_cast<double>(then)) << now << " " << then;
}

// Matmuls side by side whose weights stream at the same pace (q, k, v and o of a 128-row GQA layer, W4A8):
// from each matmul's own smallest block (1 row), no one doubling shortens the layer, and the tiles stay
// small. The search also starts from 2-, 4- and 8-row blocks and keeps the start the layer estimate finds
// shortest: here the projections run in blocks of at least 2 rows, and the layer is at least 1.3x shorter
// than the best design in 1-row blocks (row_block=1, where the search grows the tiles for those).
TEST(Compiler, RowBlockSearchStartsFromSeveralBlocks) {
  std::string layer = readTextFile(graphFile("gqa_prefill.yaml"));
  CompileResult r = compileText(layer, {"quant=w4a8"});
  for (const char* op : {"q_proj", "k_proj", "v_proj", "o_proj"})
    EXPECT_GE(r.schedules.at(op).rowBlock, 2) << op;
  CompileResult rows = compileText(layer, {"quant=w4a8", "row_block=1"});
  for (const char* op : {"q_proj", "k_proj", "v_proj", "o_proj"})
    EXPECT_EQ(rows.schedules.at(op).rowBlock, 1) << op;
  auto sizedCycles = [](const Network& net) {  // at the depths the sizer gives (the compiled ones may stall)
    Network sized;
    return sizing::sizeFifos(net, sizing::SizingOptions{}, sized).cyclesSized;
  };
  int64_t now = sizedCycles(r.network), oneRow = sizedCycles(rows.network);
  EXPECT_LT(static_cast<double>(now) * 1.3, static_cast<double>(oneRow)) << now << " " << oneRow;
}

// A graph file's copies of KV heads (repeat_kv's add of zeros) are copies when the file says the weight
// is zeros (`fill: 0`): the causal attention's held K and V keep one KV head per group of 4 query heads,
// 128 rows x 2 KV heads x 64 int8 each; a weight of unknown values is no group, and they keep all 8.
TEST(Compiler, AFilledCopiesWeightKeepsOneKvHeadPerGroup) {
  std::string layer = readTextFile(graphFile("gqa_prefill.yaml"));
  ASSERT_NE(layer.find("dtype: f32, fill: 0}"), std::string::npos);
  auto held = [](const CompileResult& r) {
    std::vector<std::pair<int64_t, int64_t>> out;  // (group, bytes) of each product holding its keys
    for (const Kernel& k : r.kernels.kernels)
      if (k.heldKeys != Kernel::HeldKeys::kNone) out.emplace_back(k.heldGroup, k.bufferBytes);
    return out;
  };
  using Held = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(held(compileText(layer, {"quant=w4a8"})), (Held{{4, 128 * 2 * 64}, {4, 128 * 2 * 64}}));
  std::string unknown = layer;
  unknown.replace(unknown.find("dtype: f32, fill: 0}"), 20, "dtype: f32}");
  EXPECT_EQ(held(compileText(unknown, {"quant=w4a8"})), (Held{{1, 128 * 8 * 64}, {1, 128 * 8 * 64}}));
}

// A pinned schedule is the one applied; one that cannot be is refused, naming the op.
TEST(Compiler, PinnedSchedulesAreHonoured) {
  CompileResult r = compileText(kMlp128, {"quant=w4a8", "tk.up=64", "row_block.up=2", "row_block.down=0"});
  EXPECT_EQ(r.schedules.at("up").tk, 64);
  EXPECT_EQ(r.schedules.at("up").rowBlock, 2);
  EXPECT_EQ(r.schedules.at("down").rowBlock, 0);
  EXPECT_EQ(r.network.tasks[static_cast<size_t>(taskNamed(r.network, "up"))].phases[0].trip,
            (std::vector<Expr>{Expr(64), Expr(128), Expr(2), Expr(8)}));
  EXPECT_EQ(r.network.tasks[static_cast<size_t>(taskNamed(r.network, "down"))].phases[0].trip[1],
            Expr(128));  // (n, m, k)
  auto error = [](std::vector<std::string> settings) {
    try {
      compileText(kMlp128, settings);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({"row_block.down=3"}),
            "g.yaml:7:5: error: --set row_block.down=3: the block must divide the 128 rows");
  EXPECT_EQ(error({"tk.up=3"}), "g.yaml:5:5: error: --set tk.up=3: the reduction tile must divide K (512)");
  EXPECT_EQ(error({"row_block.upp=2"}),
            "stc compile: error: --set row_block.upp: the graph has no matmul named 'upp'");
}

// A schedule file: what one compile wrote pins the next to the same network; a --set wins over the
// file; a pin the graph cannot take is refused at the file's line, naming the op's.
TEST(Compiler, ScheduleFilesRoundTrip) {
  CompileResult chosen = compileText(kMlp128, {"quant=w4a8"});
  std::string file = emitSchedule(schedulePins(chosen.schedules, chosen.options));
  std::vector<SchedulePin> pins = parseSchedule(file, "s.yaml");
  ASSERT_EQ(pins.size(), 3 + chosen.options.laneIiOf.size());  // the layer's lane II, up, down, ...
  CompileOptions options = parseCompileOptions({"quant=w4a8"}, defaultPlatform());
  applySchedule(pins, options);
  CompileResult pinned = compileGraph(parseGraph(kMlp128, "g.yaml"), defaultPlatform(), options);
  EXPECT_EQ(emitNetwork(pinned.network), emitNetwork(chosen.network));

  // The lane IIs the search chose go in the file too: GPT-2 medium's f32 decode layer, whose norms get a
  // lane II of their own (2, the others' 8). Pinned from the file, the same network.
  CompileResult layer = compileFile("gpt2_layer.yaml", {});
  ASSERT_FALSE(layer.options.laneIiOf.empty());
  std::vector<SchedulePin> layerPins = parseSchedule(emitSchedule(schedulePins(layer.schedules, layer.options)), "s.yaml");
  CompileOptions again = parseCompileOptions({}, defaultPlatform());
  applySchedule(layerPins, again);
  EXPECT_EQ(again.laneIi, layer.options.laneIi);
  EXPECT_EQ(again.laneIiOf, layer.options.laneIiOf);
  Graph layerGraph = loadGraph(graphFile("gpt2_layer.yaml"));
  EXPECT_EQ(emitNetwork(compileGraph(layerGraph, defaultPlatform(), again).network), emitNetwork(layer.network));

  // The file asks for 2 rows per block and tk 64 for up; --set row_block.up=0 keeps every row.
  pins = parseSchedule("schedule:\n  up: {tk: 64, row_block: 2}\n  down: {row_block: 0}\n", "s.yaml");
  options = parseCompileOptions({"quant=w4a8", "row_block.up=0"}, defaultPlatform());
  applySchedule(pins, options);
  CompileResult r = compileGraph(parseGraph(kMlp128, "g.yaml"), defaultPlatform(), options);
  EXPECT_EQ(r.schedules.at("up").tk, 64);
  EXPECT_EQ(r.schedules.at("up").rowBlock, 0);
  EXPECT_EQ(r.schedules.at("down").rowBlock, 0);

  // An op name YAML would not read back plain is quoted.
  SchedulePin odd;
  odd.op = "a: b # c";
  odd.tk = 8;
  std::vector<SchedulePin> back = parseSchedule(emitSchedule({odd}), "s.yaml");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].op, "a: b # c");
  EXPECT_EQ(back[0].tk, 8);
  EXPECT_FALSE(back[0].rowBlock);

  auto error = [](const std::string& text) {
    try {
      CompileOptions o = parseCompileOptions({"quant=w4a8"}, defaultPlatform());
      applySchedule(parseSchedule(text, "s.yaml"), o);
      compileGraph(parseGraph(kMlp128, "g.yaml"), defaultPlatform(), o);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      error("schedule:\n  up: {tk: 3}\n"),
      "s.yaml:2:12: error: field 'tk': tk 3 for 'up' (g.yaml:5:5): the reduction tile must divide K (512)");
  EXPECT_EQ(
      error("schedule:\n  down: {row_block: 3}\n"),
      "s.yaml:2:21: error: field 'row_block': row_block 3 for 'down' (g.yaml:7:5): the block must divide "
      "the 128 rows");
  EXPECT_EQ(error("schedule:\n  upp: {tk: 4}\n"), "s.yaml:2:13: error: the graph has no matmul named 'upp'");
  EXPECT_EQ(error("schedule:\n  up: {tk: 4, rows: 2}\n"),
            "s.yaml:2:15: error: field 'rows': unknown field of an op's schedule (known: tk, tn, row_block, lane_ii)");
  EXPECT_EQ(error("schedule:\n  up: {lane_ii: 32}\n"),
            "s.yaml:2:17: error: field 'lane_ii': expected an initiation interval from 1 to 16, got '32'");
  EXPECT_EQ(error("schedule: {}\nlane_ii: 0\n"),
            "s.yaml:2:10: error: field 'lane_ii': expected an initiation interval from 1 to 16, got '0'");
  EXPECT_EQ(error("schedule:\n  upp: {lane_ii: 2}\n"), "s.yaml:2:18: error: the graph has no op named 'upp'");
  EXPECT_EQ(error("schedule:\n  up: {tk: -4}\n"),
            "s.yaml:2:12: error: field 'tk': expected a reduction tile from 1 to 4096, got '-4'");
  EXPECT_EQ(error("schedule:\n  up: {tk: 4}\n  up: {tk: 8}\n"), "s.yaml:3:3: error: field 'up': given twice");
  EXPECT_EQ(error("schedules: {}\n"),
            "s.yaml:1:1: error: field 'schedules': unknown field of a schedule file (known: schedule, lane_ii)");
}

// Compute units onto SLRs, first fit in SLR order, worked out by hand: 80 DSPs into SLR0 (budget 100);
// 50 more would make 130 there, so SLR1 (200); 150 joins them in SLR1 (200, full); 300 fits nowhere (-1).
// A unit within SLR0's DSPs but over its remaining LUTs moves on: 10 DSPs and 995 LUTs would make 1,005
// LUTs in SLR0 (1,000), and SLR1 has 200 DSPs used, so it fits nowhere; 5 DSPs and 400 LUTs go to SLR0.
TEST(Compiler, PlacementFillsSlrsInOrderAndNamesUnitsNoSlrHolds) {
  auto r = [](int64_t dsp, int64_t lut) { return Resources{lut, 2 * lut, dsp, 0, 0, 0}; };
  Placement p = placeUnits({r(80, 10), r(50, 10), r(150, 10), r(300, 10), r(10, 995), r(5, 400)},
                           {r(100, 1000), r(200, 500)});
  EXPECT_EQ(p.slrOf, (std::vector<int>{0, 1, 1, -1, -1, 0}));
  EXPECT_EQ(p.used[0].dsp, 85);
  EXPECT_EQ(p.used[0].lut, 410);
  EXPECT_EQ(p.used[1].dsp, 200);
  EXPECT_EQ(p.used[1].lut, 20);
  // A unit pinned to its SLR (a split group's part) goes there first: 90 DSPs in SLR0 leave 80 no room.
  Placement pinned = placeUnits({r(80, 10), r(90, 10)}, {r(100, 1000), r(200, 500)}, {-1, 0});
  EXPECT_EQ(pinned.slrOf, (std::vector<int>{1, 0}));
  EXPECT_EQ(pinned.used[0].dsp, 90);
  // One estimate per fused group; their DSPs are the kernels' (every kernel in exactly one group).
  CompileResult c = compileFile("gpt2_layer.yaml", {"onchip_budget_bytes=200000"});
  std::vector<Resources> groups = groupResources(c, defaultPlatform());
  EXPECT_EQ(static_cast<int>(groups.size()), c.report.groups);
  int64_t dsp = 0, kernels = 0;
  for (const Resources& u : groups) dsp += u.dsp;
  for (const Kernel& k : c.kernels.kernels) kernels += k.dsp;
  EXPECT_EQ(dsp, kernels);
  EXPECT_GT(dsp, 0);
}

// A fused group no SLR holds is cut into one part per SLR. The f32 mlp (up 256 x 1024, gelu, down 1024 x
// 256; 5,172 DSPs) fits no SLR's 2,736 or 3,008 DSPs. The DMAs and adapters stay with their kernels, so the
// only cuts run between up, act and down; up is about half the DSPs. In SLR0 it would fill up / 2,736 of
// the DSPs, in SLR1 up / 3,008; the rest fills rest / 3,008 of SLR2. The cut with the least full part
// leaves SLR0 out: up in SLR1, act and down in SLR2, joined by one stream, h>act. The network is otherwise
// the whole group's, and simulates alike.
TEST(Compiler, GroupsNoSlrHoldsAreSplitAtSlrBoundaries) {
  const Platform& p = defaultPlatform();
  CompileResult c = compileFile("mlp.yaml");
  CompileResult whole = compileFile("mlp.yaml", {"slr_split=off"});
  ASSERT_FALSE(groupResources(whole, p)[0].within(p.slrBudgets[1]));  // 5,172 DSPs: no SLR holds it
  std::map<std::string, int> slrOf;
  for (const Task& t : c.network.tasks) slrOf[t.name] = t.slr;
  EXPECT_EQ(slrOf.at("up"), 1);
  EXPECT_EQ(slrOf.at("act"), 2);
  EXPECT_EQ(slrOf.at("down"), 2);
  EXPECT_EQ(slrOf.at("load_w_up.s0"), 1);
  EXPECT_EQ(slrOf.at("load_w_down.s0"), 2);
  EXPECT_EQ(slrOf.at("store_y"), 2);
  // The fills by hand from the parts' DSPs: the chosen cut's fullest part is less full than up in SLR0.
  std::vector<ComputeUnit> units = computeUnits(c, p);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].slr, 1);
  EXPECT_EQ(units[1].slr, 2);
  double up = static_cast<double>(units[0].resources.dsp), rest = static_cast<double>(units[1].resources.dsp);
  EXPECT_EQ(units[0].resources.dsp + units[1].resources.dsp, groupResources(whole, p)[0].dsp);
  EXPECT_LT(std::max(up / 3008, rest / 3008), std::max(up / 2736, rest / 3008));
  for (const ComputeUnit& u : units) EXPECT_TRUE(u.resources.within(p.slrBudgets[static_cast<size_t>(u.slr)]));
  // The same tasks and FIFOs as the group kept whole, each task with its SLR.
  ASSERT_EQ(c.network.tasks.size(), whole.network.tasks.size());
  for (size_t i = 0; i < c.network.tasks.size(); ++i) {
    Task t = c.network.tasks[i];
    t.slr = -1;
    EXPECT_EQ(t, whole.network.tasks[i]) << t.name;
  }
  EXPECT_EQ(c.network.fifos, whole.network.fifos);
  // Every FIFO between SLRs runs forward, kernel to kernel: h>act; no DMA or adapter has one.
  std::map<std::string, std::pair<const Task*, const Task*>> ends;
  for (const Task& t : c.network.tasks) {
    for (const Phase& ph : t.phases)
      for (const Port& port : ph.ports) (port.dir == PortDir::kOut ? ends[port.fifo].first : ends[port.fifo].second) = &t;
    for (const Port& port : t.dmaPorts) (port.dir == PortDir::kOut ? ends[port.fifo].first : ends[port.fifo].second) = &t;
  }
  int crossings = 0;
  for (const auto& [fifo, e] : ends) {
    if (e.first->slr == e.second->slr) continue;
    ++crossings;
    EXPECT_EQ(fifo, "h>act");
    EXPECT_LT(e.first->slr, e.second->slr) << fifo;
    EXPECT_EQ(c.roles.tasks.at(e.second->name).kind, TaskRole::kKernel) << fifo;
    EXPECT_EQ(c.roles.tasks.at(e.first->name).kind, TaskRole::kKernel) << fifo;
  }
  EXPECT_EQ(crossings, 1);
  // The SLRs survive the network file, and the split network simulates as the whole one does.
  EXPECT_EQ(parseNetwork(emitNetwork(c.network), "n.yaml"), c.network);
  EXPECT_EQ(parseNetwork(emitNetwork(c.network), "n.yaml").tasks[static_cast<size_t>(taskNamed(c.network, "up"))].slr, 1);
  EXPECT_EQ(simulate(c.network).cycles, simulate(whole.network).cycles);
  // A group an SLR holds stays whole (the W4A8 mlp).
  for (const Task& t : compileFile("mlp.yaml", {"quant=w4a8"}).network.tasks) EXPECT_EQ(t.slr, -1) << t.name;
  // gpt2_layer's f32 layer (6,054 DSPs) in three parts, each within its SLR's share.
  CompileResult layer = compileFile("gpt2_layer.yaml");
  std::vector<ComputeUnit> parts = computeUnits(layer, p);
  ASSERT_EQ(parts.size(), 3u);
  for (const ComputeUnit& u : parts) EXPECT_TRUE(u.resources.within(p.slrBudgets.at(static_cast<size_t>(u.slr)))) << u.slr;
}

// Sizing deepens FIFOs after the cut, and the cut is made again for the depths (updateResources): the
// network's timing does not depend on it. On a U55C whose SLR1 leaves 50 URAM, the f32 mlp is cut as on
// the real one (up in SLR1: 2,592 of 2,736 DSPs would fill SLR0 the more). Up's input stream x>up, written
// by x's converter, made 100 URAM deep puts SLR1 over its share. Made again, the cut runs between the
// converter and up: the converter and x's DMA in SLR0 (105 of 288 URAM), up in SLR1, act and down in SLR2,
// each within its share, and the network is otherwise the same. A stream between the parts made deeper
// than a link's largest FIFO (32,768 entries) leaves no cut: the group becomes one unit again.
TEST(Compiler, TheSlrCutIsMadeAgainForTheSizedDepths) {
  std::string text = defaultPlatformText();
  const std::string slr1 = "    - {lut: 420000, ff: 840000, dsp: 3008, bram18k: 1320, uram: 320}";
  ASSERT_NE(text.find(slr1), std::string::npos);
  text.replace(text.find(slr1), slr1.size(), "    - {lut: 420000, ff: 840000, dsp: 3008, bram18k: 1320, uram: 50}");
  Platform p = parsePlatform(text, "p.yaml");
  CompileResult c = compileGraph(parseGraph(readTextFile(graphFile("mlp.yaml")), "mlp.yaml"), p,
                                 parseCompileOptions({}, p));
  Network before = c.network;
  auto slrOf = [&](const std::string& task) { return c.network.tasks[static_cast<size_t>(taskNamed(c.network, task))].slr; };
  EXPECT_EQ(slrOf("up"), 1);
  EXPECT_EQ(slrOf("down"), 2);
  Fifo& x = c.network.fifos[static_cast<size_t>(c.network.findFifo("x>up"))];
  while (fifoResources(x).uram < 100) x.depth += std::max<int64_t>(1, x.depth / 8);
  std::vector<ComputeUnit> units = computeUnits(c, p);
  EXPECT_FALSE(units[0].resources.within(p.slrBudgets[1])) << units[0].resources.uram;
  updateResources(c, p);
  EXPECT_EQ(slrOf("x.cvt1.r"), 0);
  EXPECT_EQ(slrOf("load_x"), 0);
  EXPECT_EQ(slrOf("up"), 1);
  EXPECT_EQ(slrOf("load_w_up.s0"), 1);
  EXPECT_EQ(slrOf("down"), 2);
  EXPECT_EQ(computeUnits(c, p).size(), 3u);
  for (const ComputeUnit& u : computeUnits(c, p))
    EXPECT_TRUE(u.resources.within(p.slrBudgets.at(static_cast<size_t>(u.slr)))) << u.slr;
  EXPECT_TRUE(c.report.fits);
  for (size_t i = 0; i < before.tasks.size(); ++i) {
    Task t = c.network.tasks[i], u = before.tasks[i];
    t.slr = u.slr = -1;
    EXPECT_EQ(t, u);
  }
  c.network.fifos[static_cast<size_t>(c.network.findFifo("h>act"))].depth = kMaxCrossingDepth + 1;
  updateResources(c, p);
  for (const Task& t : c.network.tasks) EXPECT_EQ(t.slr, -1) << t.name;
}

// A converter's buffer holds the network's written regions, the one read and the one filled (depth + 2),
// but never more than one call moves. Self-attention over 128 rows of 16 heads of 64, the scores a graph
// output (so streamed in their canonical order, head by head): the transposes copy q and k in the order
// their projections make them (rows outer), so the heads' order [16, 128, 64] shares no outer loop with it
// and each converter's region is the whole tensor (128 x 1024 f32, 4,194,304 bits), one per call: one block,
// not four. The rows of x that q_proj re-reads for every column panel (row blocks of 1 row pinned) are a
// region of a row (1,024 f32), 128 a call: depth 2 + 2 = 4 blocks. A network read from a file does not know
// its calls' regions and keeps depth + 2. (Both projections' row blocks pinned: left to the compiler, they
// would write their panels head by head, and the converters hold a head.)
TEST(Compiler, AConverterHoldsNoMoreRegionsThanOneCallMoves) {
  CompileResult c = compileText(
      "graph: attn\n"
      "inputs:\n  - {name: x, shape: [128, 1024], dtype: f32}\n"
      "weights:\n  - {name: w_q, shape: [1024, 1024], dtype: f32}\n  - {name: w_k, shape: [1024, 1024], "
      "dtype: f32}\n"
      "ops:\n"
      "  - {name: q_proj, op: matmul, inputs: [x, w_q], output: q}\n"
      "  - {name: k_proj, op: matmul, inputs: [x, w_k], output: k}\n"
      "  - {name: q_heads, op: reshape, inputs: [q], output: q4, shape: [128, 16, 64]}\n"
      "  - {name: q_t, op: transpose, inputs: [q4], output: qh, perm: [1, 0, 2]}\n"
      "  - {name: k_heads, op: reshape, inputs: [k], output: k4, shape: [128, 16, 64]}\n"
      "  - {name: k_t, op: transpose, inputs: [k4], output: kt, perm: [1, 2, 0]}\n"
      "  - {name: scores, op: matmul, inputs: [qh, kt], output: s}\n"
      "outputs: [s]\n",
      {"row_block.q_proj=1", "row_block.k_proj=1"});
  auto region = [&](const std::string& prefix) -> const Fifo& {
    for (const Fifo& f : c.network.fifos)
      if (f.isRegion() && f.name.compare(0, prefix.size(), prefix) == 0) return f;
    throw std::runtime_error("no region FIFO " + prefix);
  };
  EXPECT_THROW(region("q4.cvt"), std::runtime_error);  // the transpose reads q as made
  const Fifo& q = region("qh.cvt");
  EXPECT_EQ(q.width, 128 * 1024 * 32);
  EXPECT_EQ(q.depth, 2);
  EXPECT_EQ(q.regionsPerCall, 1);
  EXPECT_EQ(q.storedTokens(), 1);
  const Fifo& kt = region("kt.cvt");
  EXPECT_EQ(kt.width, 128 * 1024 * 32);
  EXPECT_EQ(kt.storedTokens(), 1);
  const Fifo& x = region("x.cvt");
  EXPECT_EQ(x.width, 1024 * 32);
  EXPECT_EQ(x.regionsPerCall, 128);
  EXPECT_EQ(x.storedTokens(), 4);
  // The resource estimate counts one block of q's: 524,288 bytes of URAM (36,864 bytes a block), and the
  // converter's control.
  Resources r = fifoResources(q);
  EXPECT_EQ(r.uram, (524288 * 8 + kUramBits - 1) / kUramBits);
  Network read = parseNetwork(emitNetwork(c.network), "n.yaml");
  EXPECT_EQ(read.fifos[static_cast<size_t>(read.findFifo(q.name))].storedTokens(), 4);
}

// The same attention made whole (softmax, P.V, the heads merged and projected, the softmax causal): a
// transpose keeps the order its producer makes (rows, then heads), the batched products walk (row, head) in
// it and the softmax its rows, so q and the attention's output reach their readers through no converter,
// and only K and V are held whole, in the scores' and P.V's buffers (Kernel::heldKeys: row r reads keys up
// to r; 128 x 1024 f32 each, 524,288 bytes), where heads first needed q, k, v and o reordered whole. No
// converter region of an intermediate result holds more than a row of x.
TEST(Compiler, TransposedHeadsStreamInTheOrderTheirProducerMakes) {
  CompileResult c = compileFile("attention_prefill.yaml");
  for (const Fifo& f : c.network.fifos)
    if (f.isRegion() && f.name.rfind("w_", 0) != 0) {
      EXPECT_LE(f.width, 1024 * 32) << f.name;
    }
  for (const Kernel& k : c.kernels.kernels)
    EXPECT_EQ(k.bufferBytes, k.name == "scores" || k.name == "mix" ? 524288 : 0) << k.name;
  // So the intermediate results on chip are K and V (524,288 bytes each) and little else: at most 20% of
  // keeping every intermediate whole (the paper's fused designs: 15-17%), in one fused group.
  EXPECT_EQ(c.report.groups, 1);
  EXPECT_GE(c.report.onchipBytesIntermediate, 2 * 524288);
  EXPECT_LE(c.report.onchipBytesIntermediate * 5, c.report.onchipBytesUnfused);
  // The products loop over rows first: scores (row, head, key tiles, d tiles), P.V (row, head, d, keys).
  for (const char* name : {"scores", "mix"}) {
    const Task& t = c.network.tasks[static_cast<size_t>(taskNamed(c.network, name))];
    ASSERT_EQ(t.phases.size(), 1u);
    EXPECT_EQ(t.phases[0].trip[0], Expr(128)) << name;
    EXPECT_EQ(t.phases[0].trip[1], Expr(16)) << name;
  }
  // q and the attention's output pass through no converter: the transposes' FIFOs are plain.
  for (const Fifo& f : c.network.fifos) {
    EXPECT_NE(f.name.rfind("q4.cvt", 0), 0u) << f.name;
    EXPECT_NE(f.name.rfind("o.cvt", 0), 0u) << f.name;
    EXPECT_NE(f.name.rfind("ot.cvt", 0), 0u) << f.name;
  }
  // Under W4A8 the three projections read x in one order. Each has its own DMA reads and converter: one
  // shared would be a fork whose branches meet again in the scores, where q would have to wait whole
  // (K is whole first) while no join keeps it; the network runs at its compiled depths.
  CompileResult q = compileFile("attention_prefill.yaml", {"quant=w4a8"});
  int xConverters = 0;
  for (const Fifo& f : q.network.fifos) xConverters += f.isRegion() && f.name.rfind("x.cvt", 0) == 0;
  EXPECT_EQ(xConverters, 3);
  EXPECT_EQ(q.report.groups, 1);
  EXPECT_LE(q.report.onchipBytesIntermediate * 5, q.report.onchipBytesUnfused);
  EXPECT_FALSE(simulate(q.network).deadlock);
}

// BERT-base attention over 64 rows from HBM, not causal (models/graphs/attention_encoder.yaml, W4A8): every
// query row needs every key. With the projections in row blocks (rows outer), keys and values wait whole
// (64 x 768 int8 each) in front of the scores and P.V. Left to the compiler, the projections run
// weight-stationary in column panels of a head (64 columns) and their output streams head by head
// (dse/tiling.cpp, chooseSchedules): the converters in front of the scores and P.V hold one head's keys or
// values (64 x 64 int8), a projection's weight converter one head's panel (768 x 64 int4), and x is read
// from HBM again for each panel (12 x 64 x 768 bytes a projection) instead of being held whole. Only the
// merged heads in front of o_proj are held whole (64 x 768 int8).
TEST(Compiler, AttentionProjectionsWriteHeadByHead) {
  CompileResult c = compileFile("attention_encoder.yaml", {"quant=w4a8"});
  for (const char* op : {"q_proj", "k_proj", "v_proj"}) {
    EXPECT_EQ(c.schedules.at(op).rowBlock, 0) << op;
    EXPECT_EQ(c.schedules.at(op).tn, 64) << op;
    EXPECT_TRUE(c.schedules.at(op).byHeads) << op;
  }
  EXPECT_FALSE(c.schedules.at("o_proj").byHeads);
  auto regionWidth = [](const CompileResult& r, const std::string& prefix) {
    for (const Fifo& f : r.network.fifos)
      if (f.isRegion() && f.name.compare(0, prefix.size(), prefix) == 0) return f.width;
    return int64_t{0};
  };
  EXPECT_EQ(regionWidth(c, "kt.cvt"), 64 * 64 * 8);
  EXPECT_EQ(regionWidth(c, "vh.cvt"), 64 * 64 * 8);
  EXPECT_EQ(regionWidth(c, "o.cvt"), 64 * 768 * 8);
  for (const char* w : {"w_q.cvt", "w_k.cvt", "w_v.cvt"}) EXPECT_EQ(regionWidth(c, w), 768 * 64 * 4) << w;
  EXPECT_EQ(regionWidth(c, "x.cvt"), 0);
  for (const Fifo& f : c.network.fifos)
    if (f.isRegion() && f.name.rfind("w_", 0) != 0 && f.name.rfind("o.cvt", 0) != 0) {
      EXPECT_LE(f.width, 64 * 64 * 8) << f.name;
    }
  int64_t xBytes = 0;
  int xReads = 0;
  for (const Task& t : c.network.tasks)
    if (t.kind == TaskKind::kDmaRead && t.name.rfind("load_x", 0) == 0) xBytes += t.bytes.eval(), ++xReads;
  EXPECT_EQ(xReads, 3);
  EXPECT_EQ(xBytes, 3 * 12 * 64 * 768);
  // At most a fifth of the intermediate results kept whole (the issue's target; the paper's 15-17%), and
  // less than the same attention with its projections in row blocks of 4 rows, whose keys wait whole.
  EXPECT_LE(c.report.onchipBytesIntermediate * 5, c.report.onchipBytesUnfused);
  CompileResult rows = compileFile("attention_encoder.yaml", {"quant=w4a8", "row_block.q_proj=4",
                                                              "row_block.k_proj=4", "row_block.v_proj=4"});
  EXPECT_EQ(regionWidth(rows, "kt.cvt"), 64 * 768 * 8);
  EXPECT_LT(c.report.onchipBytesIntermediate, rows.report.onchipBytesIntermediate);
  EXPECT_FALSE(simulate(c.network).deadlock);
  // The pins the compiler tried the heads with are not the user's: the options it returns have none.
  EXPECT_TRUE(c.options.pinnedTn.empty());
  EXPECT_TRUE(c.options.pinnedRowBlock.empty());
  // 4 heads of 192 over 64 rows: a projection's panel of a head takes tk x 192 lanes, 3,072 at the least
  // tile, and three of the next (tk 24: 4,608) do not fit the DSP budget beside o_proj, so the panels pass
  // slowly and o_proj waits for all of them (that design, pinned, simulates at 1.24x the rows-outer one at
  // the compiled depths): the unroll search's estimate puts it above kHeadsEstimateRatio, and the
  // projections keep their row blocks. (8 heads of 96 did so too while tiles grew 16 -> 32; at tk 24 three
  // panels of 2,304 lanes fit, and they go head by head.)
  std::string text = readTextFile(graphFile("attention_encoder.yaml"));
  int reshapes = 0;
  for (size_t at = text.find("[64, 12, 64]"); at != std::string::npos;
       at = text.find("[64, 12, 64]"), ++reshapes)
    text.replace(at, 12, "[64, 4, 192]");
  ASSERT_EQ(reshapes, 3);
  CompileResult wide = compileText(text, {"quant=w4a8"});
  for (const char* op : {"q_proj", "k_proj", "v_proj"}) {
    EXPECT_GT(wide.schedules.at(op).rowBlock, 0) << op;
    EXPECT_FALSE(wide.schedules.at(op).byHeads) << op;
  }
  EXPECT_EQ(regionWidth(wide, "kt.cvt"), 64 * 768 * 8);
  // Below 64 rows the compiler keeps rows outer (kHeadsRows); pinning the projections' output tiles to the
  // head and their row blocks to every row asks for heads all the same (o_proj's pin is no projection's).
  std::string few = readTextFile(graphFile("attention_encoder.yaml"));
  for (const std::string& from : {std::string("[64, 768]"), std::string("[64, 12, 64]")})
    for (size_t at = few.find(from); at != std::string::npos; at = few.find(from)) few.replace(at, 3, "[48");
  CompileResult rows48 = compileText(few, {"quant=w4a8"});
  for (const char* op : {"q_proj", "k_proj", "v_proj"}) EXPECT_FALSE(rows48.schedules.at(op).byHeads) << op;
  CompileResult pinned = compileText(
      few, {"quant=w4a8", "tn.q_proj=64", "row_block.q_proj=0", "tn.k_proj=64", "row_block.k_proj=0",
            "tn.v_proj=64", "row_block.v_proj=0", "tn.o_proj=64", "row_block.o_proj=0"});
  for (const char* op : {"q_proj", "k_proj", "v_proj"}) EXPECT_TRUE(pinned.schedules.at(op).byHeads) << op;
  EXPECT_FALSE(pinned.schedules.at("o_proj").byHeads);
  EXPECT_EQ(regionWidth(pinned, "kt.cvt"), 48 * 64 * 8);
  EXPECT_FALSE(simulate(pinned.network).deadlock);
}

// Causal attention over 64 rows of 12 heads of 64 from HBM (attention_prefill.yaml resized, W4A8). Rows
// outer, its products hold K and V whole for every head (two 64 x 768 int8 buffers, 18% of the
// intermediate results kept whole), more than a fifth of them in all. Written head by head (the
// projections in panels of a head), the products run heads outside rows, and each holds one head's keys
// or values (64 x 64 int8), each head's overwriting the last's: the compiler takes that design
// (kOnchipShareGoal), though its estimate is 1.5x the rows-outer one's (within kHeadsMemoryRatio). With 128
// rows the rows-outer design is within the goal and stays.
TEST(Compiler, CausalAttentionOverTheOnchipGoalHoldsAHeadOfKeys) {
  auto resized = [](int64_t rows, int64_t heads) {
    std::string text = readTextFile(graphFile("attention_prefill.yaml"));
    int64_t hidden = heads * 64;
    for (auto [from, to] :
         {std::pair<std::string, std::string>{
              "[128, 1024]", "[" + std::to_string(rows) + ", " + std::to_string(hidden) + "]"},
          {"[1024, 1024]", "[" + std::to_string(hidden) + ", " + std::to_string(hidden) + "]"},
          {"[128, 16, 64]", "[" + std::to_string(rows) + ", " + std::to_string(heads) + ", 64]"}})
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from))
        text.replace(at, from.size(), to);
    return text;
  };
  auto held = [](const CompileResult& r, const std::string& op) {
    for (const Kernel& k : r.kernels.kernels)
      if (k.name == op) return k.bufferBytes;
    return int64_t{-1};
  };
  auto share = [](const CompileResult& r) {
    return static_cast<double>(r.report.onchipBytesIntermediate) /
           static_cast<double>(r.report.onchipBytesUnfused);
  };
  std::string text = resized(64, 12);
  CompileResult c = compileText(text, {"quant=w4a8"});
  for (const char* op : {"q_proj", "k_proj", "v_proj"}) {
    EXPECT_TRUE(c.schedules.at(op).byHeads) << op;
    EXPECT_EQ(c.schedules.at(op).tn, 64) << op;
  }
  EXPECT_EQ(held(c, "scores"), 64 * 64);
  EXPECT_EQ(held(c, "mix"), 64 * 64);
  EXPECT_LE(share(c), kOnchipShareGoal);
  EXPECT_FALSE(simulate(c.network).deadlock);
  // Pinned rows outer (row blocks of 4): every head's keys and values held, over the goal.
  CompileResult rows =
      compileText(text, {"quant=w4a8", "row_block.q_proj=4", "row_block.k_proj=4", "row_block.v_proj=4"});
  EXPECT_FALSE(rows.schedules.at("q_proj").byHeads);
  EXPECT_EQ(held(rows, "scores"), 64 * 768);
  EXPECT_EQ(held(rows, "mix"), 64 * 768);
  EXPECT_GT(share(rows), kOnchipShareGoal);
  // 128 rows of 8 heads: rows outer keeps its held tensors within the goal, and its cycles.
  CompileResult longer = compileText(resized(128, 8), {"quant=w4a8"});
  EXPECT_FALSE(longer.schedules.at("q_proj").byHeads);
  EXPECT_EQ(held(longer, "scores"), 128 * 512);
  EXPECT_LE(share(longer), kOnchipShareGoal);
}

// Channels by token curves (dse/channels.cpp). In the 128-row W4A8 attention every weight is re-read per
// row block, paced by its matmul over the whole run, so the channels are busy as long as the run and each
// one's load is its bytes: no channel carries more than the largest DMA alone (a projection's stripe, 4 MiB,
// which does not split) or 6% over the mean. When each DMA was seen as a burst at the end of its run,
// w_o's 32 stripes went one a channel onto the projections' (5.2 MB on 24 channels, 1.3 MB on 8). Its
// 2-row blocks are the unroll search's when it prices a weight over the channels its tile needs.
TEST(Compiler, ChannelsCarryAStreamingLayersBytesEvenly) {
  CompileResult c = compileFile("attention_prefill.yaml", {"quant=w4a8", "stripe_estimate=channels"});
  std::vector<int64_t> bytes(32, 0);
  int64_t total = 0, largest = 0;
  for (const Task& t : c.network.tasks) {
    if (!t.isDma()) continue;
    ASSERT_GE(t.channel, 0);
    ASSERT_LT(t.channel, 32);
    int64_t b = t.bytes.eval({});
    bytes[static_cast<size_t>(t.channel)] += b;
    total += b;
    largest = std::max(largest, b);
  }
  EXPECT_EQ(largest, 4 << 20);  // 512 KiB of w_q over 8 stripes, read in 64 blocks of 2 rows
  EXPECT_GT(total, 100 << 20);  // the four weights, 32 or 64 times each, and the activations
  for (size_t ch = 0; ch < bytes.size(); ++ch)
    EXPECT_LE(bytes[ch], std::max(largest, total * 106 / 100 / 32)) << "channel " << ch;
}

// models/graphs/attention_rows.yaml, its softmax causal or not, and its outputs.
std::string causalAttention(const std::string& causal, const std::string& outputs = "[y]") {
  std::string text = readTextFile(graphFile("attention_rows.yaml"));
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    if (at == std::string::npos) throw std::runtime_error("attention_rows.yaml has no " + from);
    text.replace(at, from.size(), to);
  };
  replace("causal: true", "causal: " + causal);
  replace("outputs: [y]", "outputs: " + outputs);
  return text;
}

const Kernel& kernelNamed(const CompileResult& c, const std::string& name) {
  for (const Kernel& k : c.kernels.kernels)
    if (k.name == name) return k;
  throw std::runtime_error("no kernel " + name);
}

// Causal self-attention over a prompt of 16 rows (models/graphs/attention_rows.yaml: no cached keys, 4
// heads of 16, f32): row r keeps keys 0 .. r, so the scores and P.V hold K and V in buffers of their own
// (4 x 16 x 16 floats, 4,096 bytes each) and read the key of the row's index with each (row, head): one
// 16-float token, 64 in all. So q and P stream: run with unbounded FIFOs, q's stream into the scores holds
// at most a quarter of q where, the mask off, every query row waits for the last key and all of q piles up
// in front of the scores, and the layer ends sooner. Where the scores are also read by something other
// than the softmax (an output here), the keys past a row would be wrong (they are 0 in the held form), so
// they stream in tiles as before. (The unmasked attention's projections are pinned to row blocks of a row,
// rows outer as the masked one's come: left to the compiler, they would write their panels head by head.)
TEST(Compiler, CausalAttentionHoldsItsKeysAndStreamsItsRows) {
  CompileResult c = compileText(causalAttention("true"));
  const Kernel &scores = kernelNamed(c, "scores"), &mix = kernelNamed(c, "mix");
  EXPECT_EQ(scores.heldKeys, Kernel::HeldKeys::kAlongN);
  EXPECT_EQ(mix.heldKeys, Kernel::HeldKeys::kAlongK);
  EXPECT_EQ(scores.bufferBytes, 4 * 16 * 16 * 4);
  EXPECT_EQ(mix.bufferBytes, 4 * 16 * 16 * 4);
  // Partitioned to store a key's 16 values at once and read a [Tk, Tn] tile a cycle: a bank per value of a
  // key and per key of the tile (Tn keys for the scores, Tk for P.V), priced bank by bank.
  auto tk = [](const Kernel& k) { return k.phases[0].ports[0].order.element.back(); };
  EXPECT_EQ(scores.bufferBanks, 16 * (scores.lanes / tk(scores)));
  EXPECT_EQ(mix.bufferBanks, 16 * tk(mix));
  for (const char* name : {"scores", "mix"}) {
    const Task& t = c.network.tasks[static_cast<size_t>(taskNamed(c.network, name))];
    const Port& held = t.phases[0].ports[1];
    EXPECT_EQ(held.level, 1) << name;  // the (row, head) loops
    const Fifo& f = fifoNamed(c.network, held.fifo);
    EXPECT_EQ(f.width, 16 * 32) << name;
    EXPECT_EQ(t.phases[0].trip[0].eval() * t.phases[0].trip[1].eval(), 64) << name;  // a token a (row, head)
  }
  // q's 64 tokens (16 rows x 4 heads of 16 floats) into the scores, with unbounded FIFOs.
  auto unbounded = [](const CompileResult& r) {
    Network n = r.network;
    for (Fifo& f : n.fifos) f.depth = kUnboundedDepth;
    return simulate(n);
  };
  auto peak = [](const sim::SimResult& s, const std::string& fifo) {
    for (const auto& f : s.fifos)
      if (f.name == fifo) return f.maxOccupancy;
    throw std::runtime_error("no FIFO " + fifo);
  };
  sim::SimResult held = unbounded(c);
  EXPECT_FALSE(held.deadlock);
  EXPECT_LE(peak(held, "qh>scores"), 16);
  CompileResult open =
      compileText(causalAttention("false"), {"row_block.qp=1", "row_block.kp=1", "row_block.vp=1"});
  EXPECT_EQ(kernelNamed(open, "scores").heldKeys, Kernel::HeldKeys::kNone);
  EXPECT_EQ(kernelNamed(open, "mix").heldKeys, Kernel::HeldKeys::kNone);
  EXPECT_EQ(kernelNamed(open, "scores").bufferBytes, 0);
  sim::SimResult waits = unbounded(open);
  EXPECT_GE(peak(waits, "qh>scores"), 64);
  EXPECT_LT(held.cycles, waits.cycles);
  CompileResult seen = compileText(causalAttention("true", "[y, s]"));
  EXPECT_EQ(kernelNamed(seen, "scores").heldKeys, Kernel::HeldKeys::kNone);
  EXPECT_EQ(kernelNamed(seen, "mix").heldKeys, Kernel::HeldKeys::kAlongK);
  // Viewed on the way to the softmax with each row's keys kept where they were (OPT adds its mask to
  // [b, h, R, K] and views the sum as [b * h, R, K]): the scores hold their keys as before. (The views of
  // rows streamed heads inside cost converters here; the ONNX importer merges two that cancel.)
  std::string viewed = causalAttention("true");
  const std::string softmax = "inputs: [ss], output: p";
  size_t at = viewed.find(softmax);
  ASSERT_NE(at, std::string::npos);
  viewed.replace(at, softmax.size(), "inputs: [ss3], output: p");
  viewed.replace(viewed.find("  - {name: probs"), 0,
                 "  - {name: as_batch, op: reshape, inputs: [ss], output: ss4, shape: [1, 4, 16, 16]}\n"
                 "  - {name: as_heads, op: reshape, inputs: [ss4], output: ss3, shape: [4, 16, 16]}\n");
  CompileResult v = compileText(viewed);
  EXPECT_EQ(kernelNamed(v, "scores").heldKeys, Kernel::HeldKeys::kAlongN);
  EXPECT_EQ(kernelNamed(v, "mix").heldKeys, Kernel::HeldKeys::kAlongK);
  EXPECT_EQ(kernelNamed(v, "scores").bufferBytes, 4 * 16 * 16 * 4);
  EXPECT_FALSE(simulate(v.network).deadlock);
}

// The same attention over 128 rows (hidden 64, 4 heads of 16), where the attention outweighs its
// projections: row r needs the keys up to r only, so the products over held keys, the scale, the softmax's
// two kernels and their converter sides run each row's key tiles up to the end of its block of 16 rows
// (lower/triangles.h). The kernels walk 8 blocks outside their pipelines, [8, 16, 4, "i0 + 1"]: block b
// its b + 1 tiles of 16 keys, so the scores stream 4 heads x 16 rows x (1 + ... + 8) = 2,304 tokens where
// every key took 4 x 128 x 8 = 4,096. Sized, that design takes under 0.75x the cycles of the one that runs
// every key (measured: W4A8 3,449 against 5,036; f32 34,385 against 46,638), and compileGraph, which
// measures both, keeps it. GPT-2 medium's 128-row attention waits on its projections (65,536 iterations
// each): both measured, it runs every key, and says why.
TEST(Compiler, CausalAttentionSkipsTheMaskedHalfWhereThatRunsFaster) {
  std::string text = causalAttention("true");
  for (std::string from : {"[16, 64]", "[16, 4, 16]", "[16, 4, 16]", "[16, 4, 16]", "[16, 64]"}) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), from == "[16, 64]" ? "[128, 64]" : "[128, 4, 16]");
  }
  for (const char* quant : {"quant=w4a8", "quant=none"}) {
    CompileResult tri = compileText(text, {quant});
    EXPECT_EQ(tri.report.triangularTasks.size(), 9u) << quant << ": " << tri.report.triangleSkipped;
    EXPECT_EQ(tri.report.triangleKeyBlock, 16) << quant;
    const Task& scores = tri.network.tasks[static_cast<size_t>(taskNamed(tri.network, "scores"))];
    const Phase& ph = scores.phases[0];
    EXPECT_EQ(ph.outer, 1);
    ASSERT_GE(ph.trip.size(), 4u);
    EXPECT_EQ(ph.trip[0].str() + " " + ph.trip[1].str() + " " + ph.trip[2].str() + " " + ph.trip[3].str(),
              "8 16 4 i0 + 1")
        << quant;
    const Port& out =
        *std::find_if(ph.ports.begin(), ph.ports.end(), [](const Port& p) { return p.dir == PortDir::kOut; });
    EXPECT_EQ(portTokens(ph, out, {}), 4 * 16 * 36) << quant;
    const Task& mix = tri.network.tasks[static_cast<size_t>(taskNamed(tri.network, "mix"))];
    EXPECT_EQ(mix.phases[0].trip.back().str(), "i0 + 1") << quant;  // P.V: keys in tiles of 16 too
    CompileResult whole = compileText(text, {quant, "causal_triangles=off"});
    EXPECT_TRUE(whole.report.triangularTasks.empty());
    Network a, b;
    int64_t triCycles = sizing::sizeFifos(tri.network, sizing::SizingOptions{}, a).cyclesSized;
    int64_t wholeCycles = sizing::sizeFifos(whole.network, sizing::SizingOptions{}, b).cyclesSized;
    ASSERT_GT(triCycles, 0) << quant;
    EXPECT_LT(triCycles * 4, wholeCycles * 3) << quant << ": " << triCycles << " vs " << wholeCycles;
  }
  // V read from HBM (not held): P.V takes every key of P's regions, which the probabilities' converter
  // would fill only up to each row's block, the rest left from the last call: every key, and why.
  std::string fromHbm = text;
  for (auto [from, to] : {std::pair<std::string, std::string>{"inputs: [{name: x, shape: [128, 64]}]",
                                                              "inputs: [{name: x, shape: [128, 64]}, "
                                                              "{name: vin, shape: [4, 128, 16]}]"},
                          {"inputs: [p, vh]", "inputs: [p, vin]"}}) {
    size_t at = fromHbm.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    fromHbm.replace(at, from.size(), to);
  }
  for (const char* pin : {"causal_triangles=on", "quant=w4a8"}) {
    CompileResult r = compileText(fromHbm, {"quant=w4a8", pin});
    EXPECT_TRUE(r.report.triangularTasks.empty()) << pin;
    EXPECT_NE(r.report.triangleSkipped.find("which reads it whole"), std::string::npos)
        << r.report.triangleSkipped;
  }
  CompileResult gpt = compileFile("attention_prefill.yaml", {"quant=w4a8"});
  EXPECT_TRUE(gpt.report.triangularTasks.empty());
  EXPECT_NE(gpt.report.triangleSkipped.find("as the sizer measures them"), std::string::npos)
      << gpt.report.triangleSkipped;
}

// A whole decoder layer over 128 rows (models/graphs/decoder_prefill.yaml, W4A8): ln1 forks to the three
// projections, whose results meet in the scores. Under the causal softmax the scores read key r with query
// row r (Kernel::heldKeys), made as q is, so neither q nor K waits whole in front of them: their streams
// keep the 2 tokens of any FIFO. P.V's values come with K, ahead of P (which waits on the scores' row and
// the softmax's two passes): the join's compile-time bound keeps V and P whole in front of their
// converters (128 x 1024 int8 and 16 x 128 x 128 in 16-value tokens: 8,192 and 16,384, and 2), and the
// residual beside the MLP keeps r1 (8,192 and 2). It fuses in one group and runs at its compiled depths.
TEST(Compiler, APrefillDecoderLayerRunsFusedAtItsCompiledDepths) {
  CompileResult c = compileFile("decoder_prefill.yaml", {"quant=w4a8"});
  EXPECT_EQ(c.report.groups, 1);
  for (const char* name : {"qh>cvt", "qh>scores", "kt>cvt", "kt>scores", "vh>mix", "p>mix"})
    EXPECT_EQ(fifoNamed(c.network, name).depth, 2) << name;
  EXPECT_EQ(fifoNamed(c.network, "vh>cvt").depth, 128 * 1024 / 16 + 2);
  EXPECT_EQ(fifoNamed(c.network, "p>cvt").depth, 16 * 128 * 128 / 16 + 2);
  EXPECT_EQ(fifoNamed(c.network, "r1>res2").depth, 128 * 1024 / 16 + 2);
  EXPECT_FALSE(simulate(c.network).deadlock);
  EXPECT_FALSE(simulate(compileFile("decoder_prefill.yaml").network).deadlock);  // and in f32
}

// A view of a view (Meta's rope: h.view(.., heads, head_dim).reshape(.., head_dim / 2, 2), then a slice)
// reads the matmul's stream: before, the second view was read from HBM, where nothing wrote it.
TEST(Compiler, AViewOfAViewReadsItsFirstBasesStream) {
  CompileResult r = compileText(
      "graph: two_views\ninputs:\n  - {name: x, shape: [8, 64], dtype: f32}\nweights:\n"
      "  - {name: w, shape: [64, 64], dtype: f32}\nops:\n"
      "  - {name: lin, op: matmul, inputs: [x, w], output: h}\n"
      "  - {name: v1, op: reshape, inputs: [h], output: h4, shape: [1, 8, 4, 16]}\n"
      "  - {name: v2, op: reshape, inputs: [h4], output: h5, shape: [1, 8, 4, 8, 2]}\n"
      "  - {name: s0, op: slice, inputs: [h5], output: a, axis: 4, start: 0, end: 1}\n"
      "  - {name: s1, op: slice, inputs: [h5], output: b, axis: 4, start: 1, end: 2}\n"
      "  - {name: cat, op: concat, inputs: [a, b], output: y, axis: 4}\noutputs: [y]\n",
      {"quant=none"});
  std::vector<std::string> loads;
  for (const Task& t : r.network.tasks)
    if (t.kind == TaskKind::kDmaRead) loads.push_back(t.name.substr(0, t.name.find('.')));
  std::sort(loads.begin(), loads.end());
  loads.erase(std::unique(loads.begin(), loads.end()), loads.end());
  EXPECT_EQ(loads, (std::vector<std::string>{"load_w", "load_x"}));
  EXPECT_FALSE(simulate(r.network).deadlock);
}

// A reshape between sides of other tiles (`a[..., None]`: [64] in 16s to [64, 1] in 1s, and back) keeps the
// graph's tile: an adapter splits the base's tokens into the view's or packs them, where before the whole
// graph streamed one element a token. A view as a graph output has a DMA of its own; one of an input,
// which no op computes, is refused when lowered.
TEST(Compiler, AReshapeToAnotherTileGoesThroughAnAdapter) {
  const std::string graph =
      "graph: gate\ninputs:\n  - {name: x, shape: [64, 256], dtype: f32}\nops:\n"
      "  - {name: total, op: reduce_sum, inputs: [x], output: s, axis: -1, keepdims: 0}\n"
      "  - {name: squash, op: sigmoid, inputs: [s], output: a}\n"
      "  - {name: col, op: reshape, inputs: [a], output: a1, shape: [64, 1]}\n"
      "  - {name: gate, op: mul, inputs: [x, a1], output: y}\n"
      "  - {name: peak, op: reduce_max, inputs: [y], output: m, axis: -1}\n"
      "  - {name: flat, op: reshape, inputs: [m], output: m1, shape: [64]}\n"
      "  - {name: both, op: add, inputs: [m1, s], output: z}\n"
      "outputs: [y, z, a1]\n";
  CompileResult c = compileText(graph, {"quant=none"});
  EXPECT_EQ(c.options.tile, 16);
  // a: 64 values in 4 tokens of 16 (512 bits), split into 64 of one for a1.
  EXPECT_EQ(fifoNamed(c.network, "a1>retile").width, 512);
  int split = taskNamed(c.network, "split_a1");
  ASSERT_GE(split, 0);
  EXPECT_EQ(c.network.tasks[static_cast<size_t>(split)].phases[0].trip,
            (std::vector<Expr>{Expr(4), Expr(16)}));
  // m: one value a row (a reduction's token), packed 16 to a token for m1.
  EXPECT_EQ(fifoNamed(c.network, "m1>retile").width, 32);
  int join = taskNamed(c.network, "join_m1");
  ASSERT_GE(join, 0);
  EXPECT_EQ(c.network.tasks[static_cast<size_t>(join)].phases[0].trip,
            (std::vector<Expr>{Expr(4), Expr(16)}));
  EXPECT_GE(taskNamed(c.network, "store_a1"), 0);  // the view output, 64 values of one
  sim::SimResult r = simulate(c.network);
  EXPECT_FALSE(r.deadlock);
  EXPECT_EQ(r.fifos.at(static_cast<size_t>(c.network.findFifo("a1>retile"))).tokens, 4);
  EXPECT_EQ(r.fifos.at(static_cast<size_t>(c.network.findFifo("m1>retile"))).tokens, 64);
  // A view of a view streams its first base: [9, 2] (tile 2) to [3, 6] (6) to [6, 3] (3) is 2 against 3,
  // which no adapter joins, whatever each step alone allows: the graph's tile narrows to 2 (3 in 1s).
  CompileResult chain = compileText(
      "graph: chain\ninputs: [{name: x, shape: [9, 2]}]\nops:\n"
      "  - {name: r, op: relu, inputs: [x], output: h}\n"
      "  - {name: a, op: reshape, inputs: [h], output: h1, shape: [3, 6]}\n"
      "  - {name: b, op: reshape, inputs: [h1], output: h2, shape: [6, 3]}\n"
      "  - {name: e, op: exp, inputs: [h2], output: y}\noutputs: [y]\n");
  EXPECT_EQ(chain.options.tile, 2);
  EXPECT_FALSE(simulate(chain.network).deadlock);
  try {
    compileText(
        "graph: v\ninputs: [{name: x, shape: [4, 16]}]\nops:\n"
        "  - {name: r, op: reshape, inputs: [x], output: o, shape: [64]}\noutputs: [o]\n");
    ADD_FAILURE() << "a reshape of an input as the output compiled";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("graph output 'o' is a reshape of 'x', which no op computes"),
              std::string::npos)
        << e.what();
  }
}

// Unquantised, every tensor moves as f32, as the emitted project holds it, whatever its declared type: a
// bool mask, an i8, an i64, an f16 and an i4 input (an i4 one was refused for its 4-bit tokens; the others
// streamed at their own widths, and the emitted f32 project's tokens did not match its DMAs'). Under W4A8
// they are 8-bit, as every activation. Each input is [4, 32], in tokens of 16 values.
TEST(Compiler, UnquantisedTensorsMoveAsF32) {
  std::string text = "graph: g\ninputs:\n";
  const std::vector<std::string> types = {"i1", "i8", "i64", "f16", "i4"};
  for (const std::string& t : types) text += "  - {name: in_" + t + ", shape: [4, 32], dtype: " + t + "}\n";
  text += "ops:\n";
  std::string last = "in_" + types[0];
  for (size_t i = 1; i < types.size(); ++i) {
    std::string sum = "sum" + std::to_string(i);
    text += "  - {name: " + sum + ", op: add, inputs: [" + last + ", in_" + types[i] + "], output: " + sum +
            "}\n";
    last = sum;
  }
  text += "outputs: [" + last + "]\n";
  for (auto [quant, bits] : {std::pair{"none", 32}, std::pair{"w4a8", 8}}) {
    CompileResult c = compileText(text, {std::string("quant=") + quant});
    for (const std::string& t : types) {  // its DMA's tokens, over the stripes it has (in_T.hbm, in_T.sK.hbm)
      int64_t width = 0;
      for (const Fifo& f : c.network.fifos)
        if (f.name.rfind("in_" + t + ".", 0) == 0 && f.name.size() > 4 &&
            f.name.substr(f.name.size() - 4) == ".hbm")
          width += f.width;
      EXPECT_EQ(width, 16 * bits) << quant << " " << t;
    }
  }
}

// An embedding's rows have the table's type, whatever integer type its ids have (torch's int64): before,
// they took the ids' i64, and the emitted kernel's 64-bit tokens met the next kernel's 32-bit ones.
TEST(Compiler, EmbeddingRowsHaveTheTablesType) {
  for (const char* ids : {"i32", "i64"}) {
    Graph g =
        parseGraph(std::string("graph: embed\ninputs:\n  - {name: ids, shape: [8], dtype: ") + ids +
                       "}\nweights:\n  - {name: table, shape: [96, 64], dtype: f32}\nops:\n"
                       "  - {name: embed, op: embedding, inputs: [ids, table], output: e}\noutputs: [e]\n",
                   "g.yaml");
    EXPECT_EQ(inferShapes(g).tensors.at("e").dtype, "f32") << ids;
  }
}

// Joins linked through another join: an add and a concat of the same two streams, made by kernels of
// their own. The concat reads all of h1 before any of h2; were h2's FIFOs shallow, its producer, blocked
// on the concat, would starve the add, which would stop reading h1. Each join's streams keep their
// tokens (8 x 64 in 16-value tokens: 32, and the 2 of any FIFO). And a softmax over a transpose whose token
// lies on the rows (the transpose copies relu's output as made): its stats and apply kernels read the rows
// through one converter, the apply's FIFO keeping a row behind it. Both run at their compiled depths.
TEST(Compiler, StreamsJoinedTwiceOrReadTwiceKeepWhatTheirReadersNeed) {
  CompileResult c = compileText(
      "graph: twice\n"
      "inputs: [{name: x1, shape: [8, 64]}, {name: x2, shape: [8, 64]}]\n"
      "ops:\n"
      "  - {name: r1, op: relu, inputs: [x1], output: h1}\n"
      "  - {name: r2, op: relu, inputs: [x2], output: h2}\n"
      "  - {name: sum, op: add, inputs: [h1, h2], output: j}\n"
      "  - {name: cat, op: concat, inputs: [h1, h2], output: c, axis: 0}\n"
      "outputs: [j, c]\n");
  for (const char* f : {"h1>sum", "h2>sum", "h1>cat", "h2>cat"}) EXPECT_EQ(fifoNamed(c.network, f).depth, 8 * 64 / 16 + 2) << f;
  EXPECT_FALSE(simulate(c.network).deadlock);
  CompileResult t = compileText(
      "graph: rows\n"
      "inputs: [{name: x, shape: [16, 64]}]\n"
      "ops:\n"
      "  - {name: r, op: relu, inputs: [x], output: h}\n"
      "  - {name: t, op: transpose, inputs: [h], output: ht, perm: [1, 0]}\n"
      "  - {name: s, op: softmax, inputs: [ht], output: p, axis: -1}\n"
      "outputs: [p]\n");
  EXPECT_GT(fifoNamed(t.network, "ht>s.apply").depth, 2);
  EXPECT_FALSE(simulate(t.network).deadlock);
}

// repeat_kv's copies, K [8, 64] of 2 KV heads of 32 copied to 4 query heads: [8, 2, 1, 32] + zeros
// [2, 1] -> [8, 2, 2, 32], viewed as [8, 4, 32] and transposed to K^T [4, 32, 8]. Heads 0, 1 and 2, 3 are
// the same: a group of 2 along K^T's dim 0 and along the [8, 4, 32] view's dim 1, none along the others.
// Copied the other way ([8, 1, 2, 32] + zeros [2, 1, 1]: torch's k.repeat(1, 2, 1), heads 0, 2 and 1, 3
// alike), or added a weight that is not zeros, or of unknown values, no dim is a group.
TEST(Compiler, CopiesOfKvHeadsAreFoundThroughViewsAndTransposes) {
  auto typed = [](const std::vector<int64_t>& per, const std::vector<int64_t>& zerosShape,
                  std::vector<float> zeros) {
    Graph g;
    g.name = "copies";
    g.inputs.push_back({"k", {Expr(8), Expr(64)}, "f32", {}});
    std::vector<Expr> zs;
    for (int64_t d : zerosShape) zs.push_back(Expr(d));
    g.weights.push_back({"zeros", zs, "f32", {}});
    if (!zeros.empty()) g.values["zeros"] = zeros;
    auto op = [&](const std::string& kind, std::vector<std::string> in, const std::string& out) -> Op& {
      Op o;
      o.name = out + "_op";
      o.op = kind;
      o.inputs = std::move(in);
      o.output = out;
      g.ops.push_back(o);
      return g.ops.back();
    };
    op("reshape", {"k"}, "per").attrs["shape"] = per;
    op("add", {"per", "zeros"}, "copied");
    op("reshape", {"copied"}, "heads").attrs["shape"] = std::vector<int64_t>{8, 4, 32};
    op("transpose", {"heads"}, "kt").attrs["perm"] = std::vector<int64_t>{1, 2, 0};
    g.outputs = {"kt"};
    return g;
  };
  {
    Graph g = typed({8, 2, 1, 32}, {2, 1}, {0, 0});
    TypedGraph t = inferShapes(g);
    EXPECT_EQ(copiesGroup(t, "kt", 0), 2);
    EXPECT_EQ(copiesGroup(t, "kt", 1), 1);
    EXPECT_EQ(copiesGroup(t, "kt", 2), 1);
    EXPECT_EQ(copiesGroup(t, "heads", 1), 2);
    EXPECT_EQ(copiesGroup(t, "heads", 0), 1);
  }
  {
    Graph g = typed({8, 1, 2, 32}, {2, 1, 1}, {0, 0});
    TypedGraph t = inferShapes(g);
    EXPECT_EQ(copiesGroup(t, "kt", 0), 1);
    EXPECT_EQ(copiesGroup(t, "heads", 1), 1);
  }
  for (const std::vector<float>& w : {std::vector<float>{0, 0.5f}, std::vector<float>{}}) {
    Graph g = typed({8, 2, 1, 32}, {2, 1}, w);
    EXPECT_EQ(copiesGroup(inferShapes(g), "kt", 0), 1) << w.size();
  }
  // A digit that straddles a transposed dim: per [2, 3, 1] + zeros [2] -> c [2, 3, 2] (c[x][r][k] =
  // per[x][r]), viewed as [2, 2, 3], transposed to [2, 3, 2] and viewed as [3, 2, 2]: t's dim 1 is no group
  // (t[0][0][1] is per[0][1], t[0][1][1] per[0][2]).
  Graph g;
  g.name = "straddle";
  g.inputs.push_back({"per", {Expr(2), Expr(3), Expr(1)}, "f32", {}});
  g.weights.push_back({"zeros", {Expr(2)}, "f32", {}});
  g.values["zeros"] = {0, 0};
  auto add = [&](const std::string& kind, const std::string& in, const std::string& out,
                 const std::string& key, std::vector<int64_t> value) {
    Op o;
    o.name = out + "_op";
    o.op = kind;
    o.inputs = {in};
    if (kind == "add")
      o.inputs.push_back("zeros");
    else
      o.attrs[key] = std::move(value);
    o.output = out;
    g.ops.push_back(o);
  };
  add("add", "per", "c", "", {});
  add("reshape", "c", "a", "shape", {2, 2, 3});
  add("transpose", "a", "x", "perm", {0, 2, 1});
  add("reshape", "x", "t", "shape", {3, 2, 2});
  g.outputs = {"t"};
  TypedGraph t = inferShapes(g);
  EXPECT_EQ(copiesGroup(t, "t", 1), 1);
  EXPECT_EQ(copiesGroup(t, "c", 2), 2);  // the copied dim itself: every copy alike
}

}  // namespace
}  // namespace stc
