// LLM decode estimation: physical limits and monotonic trends, model errors, thread-count independence.
#include "compiler/llm/decode.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>

#include "compiler/frontend/model_builder.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/reference/interpreter.h"
#include "sim/engine.h"

namespace stc::llm {
namespace {

ModelSpec model(const std::string& name) { return loadModel(std::string(STC_SOURCE_DIR "/models/") + name + ".yaml"); }

TEST(Decode, NeverFasterThanTheRoofline) {
  for (const char* name : {"gpt2", "qwen", "gemma"}) {
    Estimator e(model(name), defaultPlatform());
    DecodeResult r = e.run(16, 4);
    EXPECT_GT(r.hostLoop.decodeTokensPerS, 0) << name;
    EXPECT_LE(r.hostLoop.decodeTokensPerS, r.rooflineTokensPerS) << name;
    EXPECT_LE(r.deviceLoop.decodeTokensPerS, r.rooflineTokensPerS) << name;
    // One call per token saves the per-layer invocation overhead.
    EXPECT_GT(r.deviceLoop.decodeTokensPerS, r.hostLoop.decodeTokensPerS) << name;
    EXPECT_TRUE(r.fits) << name;
    EXPECT_TRUE(r.fitsHbm) << name;
    // The layer's channels serve at least its weight and KV bytes (8-bit, ctx 16) in its time, and no
    // channel is busy more than all of it.
    ModelSpec m = model(name);
    const Platform& p = defaultPlatform();
    double bytes = static_cast<double>(layerWeightBytes(m)) + 2.0 * m.kvHeads * m.headDim * 16;
    double perCycle = p.hbm.channels * p.hbm.channelGbps * 1e9 / (p.kernelClockMhz * 1e6);
    EXPECT_GE(r.layerChannelBusyMean, bytes / (perCycle * static_cast<double>(r.layerCyclesFirst))) << name;
    EXPECT_LE(r.layerChannelBusyMax, 1) << name;
  }
}

// The LM head is the only weight stream of its design: striped over all 32 channels, it runs within 1.6x
// of its HBM time (GPT-2's padded 50304 x 1024 int4 table, 25.8 MB, over 460 GB/s: 13,999 cycles at
// 250 MHz), and never below it.
TEST(Decode, TheHeadUsesEveryChannel) {
  Estimator e(model("gpt2"), defaultPlatform());
  DecodeResult r = e.run(4, 1);
  double roofline = 50304.0 * 1024 / 2 / (32 * 14.375e9 / 250e6);
  EXPECT_GT(static_cast<double>(r.headCycles), roofline);
  EXPECT_LT(static_cast<double>(r.headCycles), 1.6 * roofline);
}

// From ctx 512 on, the KV cache's bytes make the layer grow. Below it the layer is not monotonic (not
// tested): a head's attention then has fewer iterations than its pipelines are deep (softmax statistics'
// f32 finish, 58 cycles, against 8 tokens a head at ctx 128), so each head's statistics stay in flight
// until later heads' scores push them out (a stall pipeline), and the heads' queries come one after another
// over the q projection's run: GPT-2's layer takes 8,733 cycles at ctx 16, 8,009 at 128, 7,166 at 511.
TEST(Decode, LatencyGrowsWithContextAndTtftWithPrompt) {
  Estimator e(model("gpt2"), defaultPlatform());
  std::vector<DecodeResult> r = e.runAll({{512, 4}, {1000, 4}, {512, 480}});
  EXPECT_LT(r[0].layerCyclesFirst, r[1].layerCyclesFirst);  // ctx 512 against ctx 1000
  EXPECT_LT(r[2].layerCyclesFirst, r[2].layerCyclesLast);   // ctx 512 against ctx 991
  EXPECT_LT(r[0].hostLoop.ttftMs, r[1].hostLoop.ttftMs);
  EXPECT_GT(r[0].hostLoop.decodeTokensPerS, r[2].hostLoop.decodeTokensPerS);
  // latency = TTFT + the decode steps, decode speed = G / (latency - TTFT).
  EXPECT_NEAR(r[0].hostLoop.decodeTokensPerS, 4 / ((r[0].hostLoop.latencyMs - r[0].hostLoop.ttftMs) / 1000), 1e-6);
}

// The figures two estimators give for the same requests are the same, field by field.
void expectSameFigures(const std::vector<DecodeResult>& a, const std::vector<DecodeResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prefillRows, b[i].prefillRows);
    EXPECT_EQ(a[i].deviceLoopPrefillRows, b[i].deviceLoopPrefillRows);
    EXPECT_EQ(a[i].prefillLayerCycles, b[i].prefillLayerCycles);
    EXPECT_EQ(a[i].deviceLoopPrefillLayerCycles, b[i].deviceLoopPrefillLayerCycles);
    EXPECT_EQ(a[i].hostLoop.ttftMs, b[i].hostLoop.ttftMs);
    EXPECT_EQ(a[i].deviceLoop.ttftMs, b[i].deviceLoop.ttftMs);
    EXPECT_EQ(a[i].hostLoop.latencyMs, b[i].hostLoop.latencyMs);
    EXPECT_EQ(a[i].prefillResources.dsp, b[i].prefillResources.dsp);
    EXPECT_EQ(a[i].prefillResources.bram18k, b[i].prefillResources.bram18k);
    EXPECT_EQ(a[i].prefillResources.uram, b[i].prefillResources.uram);
    EXPECT_EQ(a[i].prefillResources.lut, b[i].prefillResources.lut);
  }
}

// Prefill candidates dropped unsized at their lower bound (sim::lowerBoundCycles) could not have won:
// every figure is the one sizing them all gives. GPT-2 at prompts 20 (32 rows padded, or 1, 2, 4, 8 or 16
// and the rest as decode steps) and 40 (48, or those and 32), three candidates each: row blocks under each
// stripe estimate, weight-stationary; one at 1 row and two at 2, where schedules give the same network.
TEST(Decode, DesignsDroppedAtTheirBoundCouldNotHaveWon) {
  std::vector<std::pair<int64_t, int64_t>> requests{{20, 2}, {40, 2}};
  Estimator dropping(model("gpt2"), defaultPlatform()), all(model("gpt2"), defaultPlatform());
  all.setDropByBound(false);
  std::vector<DecodeResult> a = dropping.runAll(requests), b = all.runAll(requests);
  EXPECT_EQ(all.prefillDesignsSized(), 1 + 2 + 5 * 3);
  // The row blocks priced over the channels their tiles need have the lowest bounds, and are sized first.
  // Each weight-stationary design's bound is above their sized cycles, and so is the other row blocks' but
  // at 16 rows (157,790 against 158,605 cycles); 2 rows' other (84,828) is above its first (30,718). The
  // 1-row design and its steps (one call each in the device loop) beat 4, 8 and 32 rows at their bounds:
  // those row counts are dropped unsized. 1 + 1 + 2 + 1 (48 rows) sized.
  EXPECT_EQ(dropping.prefillDesignsSized(), 5);
  expectSameFigures(a, b);
}

// Where the device does not hold the candidate of the lowest bound (over the LUTs the decode layer and the
// head leave), it is no reference to drop the others by: the next of the lowest bound is sized, alone, until
// one the device holds within memory is; then only what can still beat it. The same requests as above
// with SLR0's LUTs cut from 289,000 to 240,000: most row-block designs are over them at compile time and
// come with a twin at nine tenths of their unroll budget. At 16 rows the row blocks of the lowest bound
// (144,730) are not held once sized; the next (150,162) is, at 172,834 cycles, which the bounds of the
// other two row-block candidates (157,272 and 165,967) are below and the weight-stationary design's
// (333,209) above: four sized of five. At 32 and 48 rows the two of the lowest bounds (275,934 and
// 288,476; 407,138 and 419,680) are not held and the third (296,051; 428,383) is, at 299,914 and 459,454
// cycles, which one more bound is below (297,175; 441,940): four of five each. Of the rows below 16
// (prefillRowsBelow), 1 row is sized; at 2 rows the lowest bound (22,610) is not held and the next
// (26,646) is, at 38,635 cycles, below the third's bound (84,944): 1 + 2 of 1 + 3 candidates; 4 and 8 (5
// each) are dropped unsized. All 29 sized otherwise.
TEST(Decode, ADesignTheDeviceDoesNotHoldDropsNoOther) {
  Platform tight = defaultPlatform();
  ASSERT_TRUE(tight.slrShares);
  ASSERT_EQ(tight.slrBudgets[0].lut, 289000);
  tight.slrBudgets[0].lut = 240000;
  std::vector<std::pair<int64_t, int64_t>> requests{{20, 2}, {40, 2}};
  Estimator dropping(model("gpt2"), tight), all(model("gpt2"), tight);
  all.setDropByBound(false);
  std::vector<DecodeResult> a = dropping.runAll(requests), b = all.runAll(requests);
  EXPECT_EQ(all.prefillDesignsSized(), 1 + 3 + 5 * 5);
  EXPECT_EQ(dropping.prefillDesignsSized(), 1 + 2 + 3 * 4);
  expectSameFigures(a, b);
}

// A prompt's prefill runs padded (a power of two up to 16 rows, then a multiple of 16), or as the largest
// design below it with the prompt's other tokens as decode steps, whichever is faster: TTFT never falls
// as the prompt grows and, in the host loop, rises by at most a decode step from one length to the next
// (padding 17 rows to 32 made it jump by the 16 rows' prefill before). Checked at every prompt of GPT-2
// from 1 to 34, each schedule choosing for itself.
TEST(Decode, TtftRisesByAtMostAStepAsThePromptGrows) {
  ModelSpec m = model("gpt2");
  Platform platform = defaultPlatform();
  Estimator e(m, platform);
  std::vector<std::pair<int64_t, int64_t>> requests;
  for (int64_t p = 1; p <= 34; ++p) requests.emplace_back(p, 1);
  std::vector<DecodeResult> r = e.runAll(requests);
  double mhz = platform.kernelClockMhz, overhead = platform.invocationOverheadUs * mhz;
  // One prompt token as a decode step, its layers and no head: a call a layer in the host loop, one call
  // in the device loop.
  auto stepMs = [&](const DecodeResult& at, bool host) {
    double cycles = m.layers * static_cast<double>(at.layerCyclesFirst) + (host ? m.layers : 1) * overhead;
    return cycles / mhz / 1000;
  };
  int hybrids = 0;
  for (bool host : {true, false}) {
    auto ttft = [&](const DecodeResult& x) { return host ? x.hostLoop.ttftMs : x.deviceLoop.ttftMs; };
    auto rows = [&](const DecodeResult& x) { return host ? x.prefillRows : x.deviceLoopPrefillRows; };
    auto steps = [&](const DecodeResult& x) {
      return host ? x.promptDecodeSteps : x.deviceLoopPromptDecodeSteps;
    };
    for (size_t i = 0; i < r.size(); ++i) {
      int64_t p = r[i].prompt;
      if (steps(r[i]) > 0) {
        ++hybrids;
        EXPECT_EQ(rows(r[i]) + steps(r[i]), p);
        // TTFT = the first rows' prefill (that prompt's TTFT, where it ran them alone) and a step per other
        // token.
        const DecodeResult& first = r[static_cast<size_t>(rows(r[i]) - 1)];
        if (steps(first) == 0) {  // (that prompt may itself have run a smaller design and steps)
          double expected = ttft(first);
          for (int64_t c = rows(r[i]); c < p; ++c) expected += stepMs(r[static_cast<size_t>(c - 1)], host);
          EXPECT_NEAR(ttft(r[i]), expected, 1e-9 * expected) << p << (host ? " host" : " device");
        }
      } else {
        EXPECT_GE(rows(r[i]), p);
      }
      if (i == 0) continue;
      EXPECT_LE(ttft(r[i - 1]), ttft(r[i])) << p;
      // Every design a prompt of up to 32 tokens runs is a choice of the next prompt's (prefillRowsBelow),
      // so TTFT rises by at most a step in both loops. (The device loop's step, one call, is cheaper than a
      // prefill row: a prompt of 16 runs 1 row and 15 steps; when 17 had only 16 rows and a step, or 32
      // rows, its TTFT rose by five steps' time.)
      EXPECT_LE(ttft(r[i]) - ttft(r[i - 1]), stepMs(r[i - 1], host) * (1 + 1e-9))
          << p << (host ? " host" : " device");
    }
  }
  EXPECT_GT(hybrids, 0);
  // Padded prompts share their design: 17 rows ran as 32, now as 16 and a step (1.8 ms, not 5.4).
  EXPECT_EQ(r[16].prefillRows, 16);
  EXPECT_EQ(r[16].prefillLayerCycles, r[15].prefillLayerCycles);
  EXPECT_EQ(r[30].prefillLayerCycles, r[31].prefillLayerCycles);  // 31 rows run as 32
}

// The estimator says what it does before each stage (stc simulate's progress line on a terminal): the
// decode layer at every ctx a request reaches, its programs, the prefill row counts compiled, then each wave
// of prefill designs with the count sized before it. GPT-2 tiny at 40:2: ctx 1 to 41 (the 1-row prefill's
// steps from 1, the two generated at 40 and 41), ceil((ctx + 1) / 16) = 1 to 3 tiles of KV cache: 3
// programs; row counts 48 (padded), 1, 2, 4, 8, 16 and 32 compiled. Each wave's count is the sum of the
// waves before it, and the last wave's plus its own is every design sized. One of the seven is sized and
// chosen; a second run compiles the six others again and sizes nothing.
TEST(Decode, TellsEachStageBeforeItRuns) {
  Estimator e(model("gpt2-tiny"), defaultPlatform());
  std::vector<std::string> told;
  e.setProgress([&](const std::string& what) { told.push_back(what); });
  e.run(40, 2);
  ASSERT_GE(told.size(), 3u);
  EXPECT_EQ(told[0], "simulating the decode layer at 41 contexts (3 programs) and the LM head");
  EXPECT_EQ(told[1], "compiling prefill designs of 7 row counts");
  int sized = 0;
  for (size_t i = 2; i < told.size(); ++i) {
    std::string head = "sizing prefill designs (" + std::to_string(sized) + " sized): ";
    ASSERT_EQ(told[i].rfind(head, 0), 0u) << told[i];
    sized += 1 + static_cast<int>(std::count(told[i].begin(), told[i].end(), ','));  // the wave's designs
  }
  EXPECT_EQ(sized, e.prefillDesignsSized());
  told.clear();
  e.run(40, 2);  // nothing simulated or sized again (the row counts dropped unsized are compiled again,
                 // and dropped again: the sized ones beat them)
  EXPECT_EQ(told, std::vector<std::string>{"compiling prefill designs of 6 row counts"});
  EXPECT_EQ(e.prefillDesignsSized(), sized);
}

TEST(Decode, SameResultsAtAnyThreadCount) {
  auto once = [](size_t threads) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    Estimator e(model("qwen"), defaultPlatform());
    return e.runAll({{8, 6}, {12, 6}});
  };
  std::vector<DecodeResult> one = once(1), two = once(2);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].hostLoop.latencyMs, two[i].hostLoop.latencyMs);
    EXPECT_EQ(one[i].layerCyclesLast, two[i].layerCyclesLast);
    EXPECT_EQ(one[i].prefillLayerCycles, two[i].prefillLayerCycles);
  }
}

// Predictions simulate the sized design, the one `stc emit MODEL` writes: its depths, not the compile-time
// ones, hold at every ctx from 1 to max_ctx (sized at five of them), and the estimator's layer and head
// cycles are simulations of exactly that design.
TEST(Decode, PredictionsRunOnTheSizedDesignAtEveryCtx) {
  ModelSpec m = model("gpt2-tiny");
  CompileOptions options = parseCompileOptions({"quant=" + m.quant}, defaultPlatform());
  DeviceDesigns d = compileDevice(m, defaultPlatform(), options);
  CompileOptions atShare = options;
  atShare.maxima["ctx"] = m.maxCtx;
  atShare.unrollBudget = kDecodeShare;
  atShare.alignedStripeEstimate = d.decodeLayer.options.alignedStripeEstimate;  // the estimate kept
  CompileResult compiled = compileGraph(buildDecodeLayer(m), defaultPlatform(), atShare);
  ASSERT_EQ(compiled.network.fifos.size(), d.decodeLayer.network.fifos.size());
  int resized = 0;
  for (size_t f = 0; f < compiled.network.fifos.size(); ++f)
    resized += compiled.network.fifos[f].depth != d.decodeLayer.network.fifos[f].depth;
  EXPECT_GT(resized, 0);

  Estimator e(m, defaultPlatform());
  for (int64_t ctx = 1; ctx <= m.maxCtx; ++ctx) {
    sim::SimResult r =
        sim::runDirect(sim::compileProgram(d.decodeLayer.network, {{"ctx", ctx}}, defaultPlatform()), {});
    ASSERT_FALSE(r.deadlock) << ctx;
    if (ctx % 9 == 1 && ctx < m.maxCtx) {  // a prompt and at least one token
      EXPECT_EQ(e.run(ctx, 1).layerCyclesFirst, r.cycles) << ctx;
    }
  }
  EXPECT_EQ(e.run(1, 1).headCycles,
            sim::runDirect(sim::compileProgram(d.head.network, {}, defaultPlatform()), {}).cycles);
}

// Decode steps are simulated once per program, not per ctx: the layer pads its KV cache (ctx and the
// token's own row) to tiles of 16, so the 301 ctx from 1 to 301 (a prompt of 300 whose tokens past a
// prefill of 1, 2, 4, 8, 16, 32, 64, 128 or 256 rows may run as steps, then 2 generated) bind it to 19
// programs (ceil(2 / 16) = 1 to ceil(302 / 16) = 19 tiles).
// Each step's figure is still the simulation of the sized layer at its own ctx. GPT-2 tiny with max_ctx 512.
TEST(Decode, OneSimulationPerProgramOfTheLayer) {
  std::string text = readTextFile(STC_SOURCE_DIR "/models/gpt2-tiny.yaml");
  text.replace(text.find("max_ctx: 64"), 11, "max_ctx: 512");
  ModelSpec m = parseModel(text, "tiny512.yaml");
  const Platform& platform = defaultPlatform();
  Estimator e(m, platform);
  DecodeResult r = e.run(300, 2);
  EXPECT_EQ(e.decodeSimulations(), 19);
  auto layer = [&](int64_t ctx) {
    return sim::runDirect(sim::compileProgram(e.decodeLayer(), {{"ctx", ctx}}, platform), {}).cycles;
  };
  EXPECT_EQ(r.layerCyclesFirst, layer(300));
  EXPECT_EQ(r.layerCyclesLast, layer(301));
  EXPECT_NE(layer(271), layer(272));  // the programs differ
}

// The unroll search budgets DSPs; a prefill design may still take more LUTs (AXI masters, converters) than
// the decode layer and the head leave. GPT-2 small (768 hidden, 12 heads, FFN 3,072), its 32-row prefill
// at the prefill's DSP share, on a U55C whose shell keeps 2% more of each SLR's LUTs: over the LUTs left
// with the other two (on the U55C itself 5k under since the beat-aligned weight stripes, 14k over before).
// The estimator compiles it again at a smaller budget, and the device holds all three.
TEST(Decode, ThePrefillShrinksToTheLutsLeft) {
  std::string text = readTextFile(STC_SOURCE_DIR "/models/gpt2.yaml");
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"layers: 24", "layers: 12"}, {"hidden: 1024", "hidden: 768"}, {"heads: 16", "heads: 12"},
           {"ffn: 4096", "ffn: 3072"}}) {
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
  }
  ModelSpec m = parseModel(text, "gpt2-small.yaml");
  Platform platform = defaultPlatform();
  for (Resources& slr : platform.slrBudgets) slr.lut = slr.lut * 98 / 100;
  CompileOptions o = parseCompileOptions({"quant=" + m.quant}, platform);
  DeviceDesigns d = compileDevice(m, platform, o);
  o.maxima["ctx"] = m.maxCtx;
  o.unrollBudget = kPrefillShare;
  CompileResult atShare = compileGraph(buildPrefillLayer(m, 32), platform, o);
  int64_t luts = d.decodeLayer.report.resources.lut + d.head.report.resources.lut + atShare.report.resources.lut;
  EXPECT_GT(luts, platform.kernelResources().lut);

  Estimator e(m, platform);
  DecodeResult r = e.run(32, 1);
  EXPECT_EQ(r.prefillRows, 32);
  EXPECT_TRUE(r.fits);
  EXPECT_LE(r.resources.lut, platform.kernelResources().lut);
  EXPECT_LT(r.prefillResources.dsp, atShare.report.resources.dsp);
}

// The decode layer's unroll search estimates a weight stream over the channels its tile needs, or over the
// beat-aligned stripes the lowering gives it (CompileOptions::alignedStripeEstimate); the device holds the
// faster of the two sized designs. Gemma-2-2B (its published configuration): the first estimate takes
// 768-byte MLP tiles, which the lowering stripes over 6 channels in tokens of two beats (768 bytes need 13.4
// channels, the cap is 32 / 3 = 10, and 10 to 7 stripes are not beat-aligned); the second keeps 512-byte
// tiles, 8 stripes of one beat.
TEST(Decode, TheDecodeLayerIsTheFasterOfBothStripeEstimates) {
  const std::string text =
      "model: gemma2-2b\nfamily: gemma\nlayers: 26\nhidden: 2304\nheads: 8\nkv_heads: 4\nhead_dim: 256\n"
      "ffn: 9216\nvocab: 256000\nmax_ctx: 4096\nnorm: rmsnorm\nactivation: gelu\ngated: true\n"
      "positions: rope\ntied_embeddings: true\nquant: w4a8\n";
  ModelSpec m = parseModel(text, "gemma2-2b.yaml");
  const Platform& platform = defaultPlatform();
  CompileOptions o = parseCompileOptions({"quant=w4a8"}, platform);
  DeviceDesigns device = compileDevice(m, platform, o);
  o.maxima["ctx"] = m.maxCtx;
  o.unrollBudget = kDecodeShare;
  o.alignedStripeEstimate = false;
  CompileOptions aligned = o;
  aligned.alignedStripeEstimate = true;
  Graph layer = buildDecodeLayer(m);
  CompileResult needed = compileGraph(layer, platform, o), beats = compileGraph(layer, platform, aligned);
  auto stripes = [](const CompileResult& r, const std::string& weight) {
    return std::count_if(r.network.tasks.begin(), r.network.tasks.end(),
                         [&](const Task& t) { return t.name.rfind("load_" + weight + ".s", 0) == 0; });
  };
  EXPECT_EQ(needed.schedules.at("gate_op").tk, 96);
  EXPECT_EQ(stripes(needed, "w_gate"), 6);
  EXPECT_EQ(beats.schedules.at("gate_op").tk, 64);
  EXPECT_EQ(stripes(beats, "w_gate"), 8);
  // Sized within the memory the head and the prefill leave, as compileDevice sizes them.
  Resources left;
  left.bram18k = static_cast<int64_t>((1 - kPrefillShare) * static_cast<double>(platform.kernelResources().bram18k)) -
                 device.head.report.resources.bram18k;
  left.uram = static_cast<int64_t>((1 - kPrefillShare) * static_cast<double>(platform.kernelResources().uram)) -
              device.head.report.resources.uram;
  SizedDesign a = sizeDesign(needed, platform, left), b = sizeDesign(beats, platform, left);
  ASSERT_TRUE(a.withinMemory && b.withinMemory);
  EXPECT_NE(a.cycles, b.cycles);
  EXPECT_EQ(emitNetwork(device.decodeLayer.network), emitNetwork((b.cycles < a.cycles ? beats : needed).network));
  EXPECT_EQ(device.decodeLayer.schedules.at("gate_op").tk, 64);

  // An estimate the settings give (`stc emit MODEL --set stripe_estimate=channels`) is the only one
  // compiled, for the head as for the decode layer.
  DeviceDesigns given =
      compileDevice(m, platform, parseCompileOptions({"quant=w4a8", "stripe_estimate=channels"}, platform));
  EXPECT_FALSE(given.decodeLayer.options.alignedStripeEstimate);
  EXPECT_FALSE(given.head.options.alignedStripeEstimate);
  EXPECT_EQ(given.decodeLayer.schedules.at("gate_op").tk, 96);
}

// A prompt attends causally to the keys it makes: with a KV head per query head (GPT-2) the prefill layer
// projects K and V on chip, its softmax is causal, and the scores and P.V hold K and V whole (row r reads
// key r; 32 rows of 1,024 int8 each) instead of reading the prompt's keys back from HBM as if already
// cached.
TEST(Decode, APromptAttendsCausallyToTheKeysItMakes) {
  auto reads = [](const Graph& g, const std::string& name) {
    return std::any_of(g.inputs.begin(), g.inputs.end(), [&](const TensorDecl& t) { return t.name == name; });
  };
  auto causalSoftmaxes = [](const Graph& g) {
    return std::count_if(g.ops.begin(), g.ops.end(), [](const Op& op) { return isCausal(op); });
  };
  ModelSpec m = model("gpt2");
  Graph g = buildPrefillLayer(m, 32);
  EXPECT_FALSE(reads(g, "k_cache") || reads(g, "v_cache"));
  EXPECT_EQ(causalSoftmaxes(g), 1);
  CompileOptions o = parseCompileOptions({"quant=" + m.quant}, defaultPlatform());
  o.unrollBudget = kPrefillShare;
  CompileResult r = compileGraph(g, defaultPlatform(), o);
  int held = 0;
  for (const Kernel& k : r.kernels.kernels) {
    if (k.heldKeys == Kernel::HeldKeys::kNone) continue;
    ++held;
    EXPECT_TRUE(k.name == "scores_op" || k.name == "mixed_op") << k.name;
    EXPECT_EQ(k.bufferBytes, 32 * 1024) << k.name;
  }
  EXPECT_EQ(held, 2);
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(r.network, {}, defaultPlatform()), {}).deadlock);
  // GQA (TinyLlama: 4 KV heads for 32 query heads) too, each KV head copied to the 8 query heads that
  // share it: the held K and V are 8 rows of 4 x 64 int8 each, a head per group of 8 copies.
  ModelSpec llama = model("llama");
  Graph l = buildPrefillLayer(llama, 8);
  EXPECT_FALSE(reads(l, "k_cache") || reads(l, "v_cache"));
  EXPECT_EQ(causalSoftmaxes(l), 1);
  CompileResult lr = compileGraph(l, defaultPlatform(), o);
  held = 0;
  for (const Kernel& k : lr.kernels.kernels) {
    if (k.heldKeys == Kernel::HeldKeys::kNone) continue;
    ++held;
    EXPECT_EQ(k.bufferBytes, 8 * 4 * 64) << k.name;
    EXPECT_EQ(k.heldGroup, 8) << k.name;
    EXPECT_EQ(k.heldGroupDim, 0) << k.name;  // the heads of K^T [32, 64, 8] and of V [32, 8, 64]
  }
  EXPECT_EQ(prefillHeldBytes(llama, 8), 8 * 4 * 64);
  EXPECT_EQ(held, 2);
  EXPECT_FALSE(sim::runDirect(sim::compileProgram(lr.network, {}, defaultPlatform()), {}).deadlock);
  // A prompt whose K no kernel could hold within the budget reads K and V back from HBM, grouped per KV
  // head (a Llama-2-7B-sized model past 2,600 rows under W4A8): at one byte over the limit, not at it.
  EXPECT_EQ(prefillHeldBytes(m, 1024), 1024 * 16 * 64);
  EXPECT_FALSE(reads(buildPrefillLayer(m, 1024, 1024 * 16 * 64), "k_cache"));
  Graph over = buildPrefillLayer(m, 1024, 1024 * 16 * 64 - 1);
  EXPECT_TRUE(reads(over, "k_cache") && reads(over, "v_cache"));
  EXPECT_EQ(causalSoftmaxes(over), 0);
}

// A prompt's rows are the decode steps that would make them: row r of a GQA prefill layer (2 KV heads for
// 4 query heads, rope) equals the decode layer at ctx r whose caches hold the prefill's keys and values of
// rows 0 .. r-1, and the keys and values it appends are the prefill's row r. So the prefill attends
// causally and each query head to its own KV head's keys.
TEST(Decode, AGroupedPromptsRowsAreItsDecodeSteps) {
  const std::string text =
      "model: tiny\nfamily: llama\nlayers: 1\nhidden: 32\nheads: 4\nkv_heads: 2\nhead_dim: 8\nffn: 48\n"
      "vocab: 64\nmax_ctx: 16\nnorm: rmsnorm\nactivation: silu\ngated: true\npositions: rope\nquant: none\n";
  ModelSpec m = parseModel(text, "tiny.yaml");
  const int64_t R = 5, KVH = 2, dh = 8;
  Graph prefill = buildPrefillLayer(m, R), decode = buildDecodeLayer(m);
  uint32_t seed = 12345;
  auto random = [&](int64_t n) {
    std::vector<float> v(n);
    for (float& x : v) {
      seed = seed * 1664525u + 1013904223u;
      x = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
    }
    return v;
  };
  auto sizeOf = [](const TensorDecl& t) {
    int64_t n = 1;
    for (const Expr& d : t.shape) n *= d.eval();
    return n;
  };
  std::map<std::string, Tensor> values;
  for (const TensorDecl& w : prefill.weights) {
    std::vector<int64_t> shape;
    for (const Expr& d : w.shape) shape.push_back(d.eval());
    auto known = prefill.values.find(w.name);
    values[w.name] = {shape, known != prefill.values.end() ? known->second : random(sizeOf(w))};
  }
  values["scale"].data = {1.0f / std::sqrt(static_cast<float>(dh))};
  ASSERT_EQ(values.at("kv_copies").data, std::vector<float>(2, 0.0f));
  values["x"] = {{R, 32}, random(R * 32)};
  auto made = interpret(prefill, values);
  const std::vector<float>&y = made.at("y").data, &k = made.at(prefill.outputs.at(1)).data,
        &v = made.at(prefill.outputs.at(2)).data;
  for (int64_t r = 0; r < R; ++r) {
    std::map<std::string, Tensor> step = values;
    step["x"] = {
        {1, 32},
        std::vector<float>(values.at("x").data.begin() + r * 32, values.at("x").data.begin() + (r + 1) * 32)};
    Tensor kc{{KVH, dh, r + 1}, std::vector<float>(KVH * dh * (r + 1), 0.0f)},
        vc{{KVH, r + 1, dh}, std::vector<float>(KVH * dh * (r + 1), 0.0f)};
    for (int64_t p = 0; p < r; ++p)
      for (int64_t h = 0; h < KVH; ++h)
        for (int64_t e = 0; e < dh; ++e) {
          kc.data[(h * dh + e) * (r + 1) + p] = k[p * KVH * dh + h * dh + e];
          vc.data[(h * (r + 1) + p) * dh + e] = v[p * KVH * dh + h * dh + e];
        }
    step["k_cache"] = kc;
    step["v_cache"] = vc;
    auto got = interpret(decode, step, {{"ctx", r}});
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_NEAR(got.at("y").data[i], y[r * 32 + i], 1e-5) << "row " << r << ", " << i;
    for (int64_t i = 0; i < KVH * dh; ++i) {
      EXPECT_NEAR(got.at(decode.outputs.at(1)).data[i], k[r * KVH * dh + i], 1e-5) << "row " << r;
      EXPECT_NEAR(got.at(decode.outputs.at(2)).data[i], v[r * KVH * dh + i], 1e-5) << "row " << r;
    }
  }
}

// Rope turns each head (head_dim) at the token's position: a decode step's token comes after the ctx
// cached ones (offset ctx), a prompt's rows at 0, 1, ... (no offset).
TEST(Decode, RopeTurnsEachHeadAtTheTokensPosition) {
  ModelSpec m = model("llama");
  for (bool decode : {true, false}) {
    Graph g = decode ? buildDecodeLayer(m) : buildPrefillLayer(m, 8);
    int ropes = 0;
    for (const Op& op : g.ops) {
      if (op.op != "rope") continue;
      ++ropes;
      EXPECT_EQ(numberAttr(op, "head_dim", 0), static_cast<double>(m.headDim));
      EXPECT_EQ(ropeOffset(op), decode ? "ctx" : "0");
    }
    EXPECT_EQ(ropes, 2);
  }
}

TEST(Decode, TooBigForHbmIsReported) {
  ModelSpec m = model("gpt2");
  m.layers = 3000;  // 3000 layers of 6.3 MB of weights: far beyond 16 GB
  Estimator e(m, defaultPlatform());
  DecodeResult r = e.run(4, 1);
  EXPECT_FALSE(r.fitsHbm);
  EXPECT_GT(r.hbmBytes, 16LL << 30);
}

// A long prompt's prefill compiles within the on-chip budget: activations are read from HBM again where
// no buffer could hold them, and a join of streams read from HBM keeps nothing. Mistral-7B stopped at 512
// prompt tokens with "on-chip budget too small for kernel gated_op" before; 512 is its first failing length.
TEST(Decode, LongPromptsCompile) {
  ModelSpec m = model("mistral-7b");
  CompileOptions o = parseCompileOptions({"quant=" + m.quant}, defaultPlatform());
  o.unrollBudget = kPrefillShare;
  Graph g = buildPrefillLayer(m, 512);
  // The estimator's design past 256 rows: every matmul weight-stationary (compiling the row-blocked one
  // takes minutes, most of them in the simulation that places DMAs on channels). Without that
  // simulation here: channels change no resource.
  for (const Op& op : g.ops)
    if (op.op == "matmul") o.pinnedRowBlock[op.name] = 0;
  o.phaseChannels = false;
  try {
    CompileResult r = compileGraph(g, defaultPlatform(), o);
    EXPECT_LE(r.report.resources.dsp, defaultPlatform().kernelResources().dsp);
  } catch (const UserError& e) {
    ADD_FAILURE() << e.what();
  }
}

std::string errorOf(const std::string& from, const std::string& to) {
  std::string text = readTextFile(STC_SOURCE_DIR "/models/gpt2.yaml");
  text.replace(text.find(from), from.size(), to);
  try {
    parseModel(text, "m.yaml");
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

// A model's rope_theta reaches its layers' rope ops (Qwen2.5's 1e6); without it rope's base is 10000.
TEST(Decode, RopeBaseOfTheModel) {
  for (const auto& [name, theta] :
       std::vector<std::pair<std::string, double>>{{"qwen", 1e6}, {"llama", 10000}}) {
    ModelSpec m = model(name);
    EXPECT_EQ(m.ropeTheta, theta) << name;
    for (const Graph& g : {buildDecodeLayer(m), buildPrefillLayer(m, 16)}) {
      int ropes = 0;
      for (const Op& op : g.ops) {
        if (op.op != "rope") continue;
        ++ropes;
        EXPECT_EQ(ropeTheta(op), theta) << name;
      }
      EXPECT_EQ(ropes, 2) << name;
    }
  }
}

TEST(Decode, BadModelFields) {
  EXPECT_EQ(errorOf("layers: 24", "layers: many"), "m.yaml:5:9: error: field 'layers': expected an integer, got 'many'");
  EXPECT_EQ(errorOf("family: gpt2", "family: gpt5"),
            "m.yaml:4:9: error: field 'family': expected gpt2, llama, qwen, gemma or mistral, got 'gpt5'");
  EXPECT_EQ(errorOf("heads: 16", "heads: 16\nkv_heads: 3"), "m.yaml:8:11: error: field 'kv_heads': 3 does not divide heads (16)");
  EXPECT_EQ(errorOf("norm: layernorm", "norm: batchnorm"), "m.yaml:11:7: error: field 'norm': expected layernorm or rmsnorm, got 'batchnorm'");
  EXPECT_EQ(errorOf("vocab: 50257", "vocab: 50257\nvocab_size: 3"),
            "m.yaml:10:1: error: field 'vocab_size': unknown field of a model (known: model, family, layers, "
            "hidden, heads, "
            "kv_heads, head_dim, ffn, vocab, max_ctx, norm, activation, gated, positions, rope_theta, "
            "tied_embeddings, "
            "quant)");
  // rope's base: for rope positions only (GPT-2's are learned), above 1.
  EXPECT_EQ(errorOf("positions: learned", "positions: learned\nrope_theta: 1000000"),
            "m.yaml:14:13: error: field 'rope_theta': is rope's base; the positions are not rope");
  EXPECT_EQ(errorOf("positions: learned", "positions: rope\nrope_theta: 0.5"),
            "m.yaml:14:13: error: field 'rope_theta': must be a number above 1, got 0.5");
  Estimator e(model("gpt2"), defaultPlatform());
  EXPECT_THROW(e.run(1000, 100), UserError);  // beyond max_ctx
}

}  // namespace
}  // namespace stc::llm
