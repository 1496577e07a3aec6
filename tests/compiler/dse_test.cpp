// Design space exploration: the space's points, the Pareto front (hand-built cases and a property over
// random points), an exploration that agrees with compiling and sizing each point alone at any thread
// count, and the space file's errors.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <fstream>
#include <optional>
#include <random>

#include "compiler/dse/explore.h"
#include "compiler/frontend/model_builder.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/pipeline.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/engine.h"

namespace stc::dse {
namespace {

Point point(int64_t cycles, int64_t bytes, int64_t dsp, bool fits = true) {
  Point p;
  p.cycles = cycles;
  p.onchipBytes = bytes;
  p.resources.dsp = dsp;
  p.fits = fits;
  return p;
}

SpaceKnob knob(const std::string& key, std::vector<std::string> values) {
  SpaceKnob k;
  k.key = key;
  k.values = std::move(values);
  k.valueLocs.resize(k.values.size());
  return k;
}

TEST(Dse, SpaceIsEveryCombinationLastKnobFastest) {
  Space s;
  s.knobs = {knob("tile", {"8", "16"}), knob("row_block", {"auto", "0", "4"})};
  EXPECT_EQ(s.size(), 6u);
  EXPECT_EQ(s.settingsAt(0), (std::vector<std::string>{"tile=8", "row_block=auto"}));
  EXPECT_EQ(s.settingsAt(4), (std::vector<std::string>{"tile=16", "row_block=0"}));
  EXPECT_EQ(defaultSpace(defaultPlatform()).size(), 96u);
}

// Worked by hand: (cycles, bytes, DSPs).
TEST(Dse, FrontIsTheNonDominatedPointsThatFit) {
  std::vector<Point> p = {
      point(100, 1000, 10),      // 0: beaten by 8 (same cycles and bytes, fewer DSPs)
      point(100, 1000, 10),      // 1: the same as 0
      point(90, 2000, 10),       // 2: front (faster than 8, more bytes)
      point(120, 1500, 10),      // 3: beaten by 0
      point(50, 500, 5, false),  // 4: would beat all, but does not fit
      point(80, 3000, 5),        // 5: front (fastest)
      point(1, 1, 1),            // 6: rejected
      point(200, 100, 50),       // 7: front (fewest bytes)
      point(100, 1000, 9),       // 8: front
      point(100, 1000, 9),       // 9: equal to 8, later: not repeated
  };
  p[6].status = Point::Status::kRejected;
  EXPECT_EQ(paretoFront(p), (std::vector<int>{5, 2, 8, 7}));  // fastest first
}

// Over random points: no front point is dominated by a fitting point, and every fitting point off the
// front is dominated by, or equal to, one on it.
TEST(Dse, FrontHoldsOverRandomPoints) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Point> p;
    for (int i = 0; i < 40; ++i) p.push_back(point(rng() % 20, rng() % 20, rng() % 20, rng() % 5 != 0));
    std::vector<int> front = paretoFront(p);
    auto beats = [](const Point& a, const Point& b) {
      return a.cycles <= b.cycles && a.onchipBytes <= b.onchipBytes && a.resources.dsp <= b.resources.dsp &&
             (a.cycles < b.cycles || a.onchipBytes < b.onchipBytes || a.resources.dsp < b.resources.dsp);
    };
    std::vector<bool> on(p.size());
    for (int f : front) on[static_cast<size_t>(f)] = true;
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].fits) {
        EXPECT_FALSE(on[i]);
        continue;
      }
      bool dominatedOrRepeated = false;
      for (size_t j = 0; j < p.size(); ++j)
        if (p[j].fits && (beats(p[j], p[i]) ||
                          (j < i && p[j].cycles == p[i].cycles && p[j].onchipBytes == p[i].onchipBytes &&
                           p[j].resources.dsp == p[i].resources.dsp)))
          dominatedOrRepeated = true;
      EXPECT_EQ(on[i], !dominatedOrRepeated) << "trial " << trial << " point " << i;
    }
  }
}

const char* kMlp32 =
    "graph: mlp32\n"
    "inputs: [{name: x, shape: [32, 256]}]\n"
    "weights: [{name: w_up, shape: [256, 1024]}, {name: b_up, shape: [1024]}, {name: w_down, shape: [1024, "
    "256]}]\n"
    "ops:\n"
    "  - {name: up, op: matmul, inputs: [x, w_up, b_up], output: h}\n"
    "  - {name: act, op: gelu, inputs: [h], output: g}\n"
    "  - {name: down, op: matmul, inputs: [g, w_down], output: y}\n"
    "outputs: [y]\n";

// Each point as compiling it alone, sizing it and simulating the sized network gives; a budget no kernel
// fits rejects its points with the compiler's message; a budget that binds nothing gives the same
// network, sized once; the same results at one thread and at four.
TEST(Dse, PointsAreWhatCompilingAndSizingThemAloneGives) {
  Graph graph = parseGraph(kMlp32, "mlp32.yaml");
  Platform platform = defaultPlatform();
  Space space;
  space.knobs = {knob("tile", {"8", "16"}), knob("row_block", {"auto", "0"}),
                 knob("onchip_budget_bytes", {"11169792", "3000", "5584896"})};
  std::optional<tbb::global_control> threads;
  threads.emplace(tbb::global_control::max_allowed_parallelism, 4);
  Exploration e = explore(graph, platform, {"quant=w4a8"}, space, {});
  ASSERT_EQ(e.points.size(), 12u);
  EXPECT_EQ(e.compiledNetworks, 4);
  for (size_t i = 0; i < e.points.size(); ++i) {
    const Point& p = e.points[i];
    std::vector<std::string> settings = {"quant=w4a8"};
    settings.insert(settings.end(), p.settings.begin(), p.settings.end());
    if (i % 3 == 2) {  // the same network as at the larger budget
      EXPECT_EQ(p.sameAs, static_cast<int>(i - 2));
      EXPECT_EQ(p.cycles, e.points[i - 2].cycles);
      EXPECT_FALSE(p.pareto);
      EXPECT_EQ(pickPoint(e, std::to_string(i)), static_cast<int>(i - 2));
      continue;
    }
    EXPECT_EQ(p.sameAs, -1);
    if (i % 3 == 1) {  // 3000 bytes: no matmul kernel fits
      EXPECT_EQ(p.status, Point::Status::kRejected);
      EXPECT_NE(p.message.find("mlp32.yaml:"), std::string::npos) << p.message;
      EXPECT_NE(p.message.find("is too small for kernel"), std::string::npos) << p.message;
      continue;
    }
    ASSERT_EQ(p.status, Point::Status::kOk) << p.message;
    CompileResult c = compileGraph(graph, platform, parseCompileOptions(settings, platform));
    Network sized;
    sizing::SizingOptions options;
    sizing::SizingResult r = sizing::sizeFifos(c.network, options, sized);
    EXPECT_EQ(p.cycles, r.cyclesSized) << i;
    EXPECT_EQ(p.cycles, sim::runDirect(sim::compileProgram(e.sized[i], {}), {}).cycles) << i;
    EXPECT_EQ(e.sized[i].fifos, sized.fifos) << i;
    int64_t bytes = 0;
    for (const Kernel& k : c.kernels.kernels) bytes += k.bufferBytes;
    std::map<std::string, int64_t> written;  // tokens each FIFO carries in one call
    for (const Task& t : sized.tasks)
      for (const Phase& ph : t.phases)
        for (const Port& port : ph.ports)
          if (port.dir == PortDir::kOut) written[port.fifo] = portTokens(ph, port, {});
    for (const Fifo& f : sized.fifos) {
      // A converter's region buffer also holds the one read and the one filled, no more than a call's regions.
      bool region = f.name.size() > 7 && f.name.substr(f.name.size() - 7) == ".region";
      int64_t blocks = region ? std::min(f.depth + 2, written.at(f.name)) : f.depth;
      bytes += (blocks * f.width + 7) / 8;
    }
    EXPECT_EQ(p.onchipBytes, bytes) << i;
    bool stationary = p.settings[1] == "row_block=0";
    for (const auto& [op, s] : p.schedules) EXPECT_EQ(s.rowBlock == 0, stationary) << op << " of point " << i;
  }
  // Row blocks stream; weight-stationary keeps whole tensors: more bytes, and here more cycles too.
  EXPECT_LT(e.points[0].onchipBytes, e.points[3].onchipBytes);
  for (int f : e.front) EXPECT_TRUE(e.points[static_cast<size_t>(f)].pareto);
  std::string fourThreads = pointsCsv(e) + pointsJson(e) + frontSvg(e, "t");
  threads.emplace(tbb::global_control::max_allowed_parallelism, 1);
  Exploration again = explore(graph, platform, {"quant=w4a8"}, space, {});
  EXPECT_EQ(pointsCsv(again) + pointsJson(again) + frontSvg(again, "t"), fourThreads);
  EXPECT_EQ(pickPoint(e, "cycles"), e.front.front());
  EXPECT_THROW(pickPoint(e, "1"), UserError);  // rejected
  EXPECT_THROW(pickPoint(e, "fastest"), UserError);
  EXPECT_THROW(checkPick("12", e.points.size()), UserError);
  EXPECT_EQ(checkPick("11", e.points.size()), 11u);
}

// A decode layer (one row) keeps no more of its intermediate results on chip than the unfused design
// would (the compile report's every intermediate tensor kept whole), with the sizing `stc dse` gives it.
// Its FIFOs sized from the unbounded run held the row norm2 gives the gate and up projections, replayed
// once per column panel, 1,122 tokens deep for each (TinyLlama: 106.9% of unfused); the run with the
// writers at their readers' pace, which takes fewer bits, measured the KV caches' converters at the
// network's depth of 2 regions and kept that (2 x 2.1 Mbit more: not fewer bits). Measured at 1 region,
// as a reader's pace needs, the paced design wins.
TEST(Dse, DecodeLayersKeepAtMostTheUnfusedBytes) {
  Platform platform = defaultPlatform();
  Space space;
  space.knobs = {knob("tile", {"16"})};
  for (const char* name : {"gpt2", "llama", "qwen", "gemma"}) {
    ModelSpec model = loadModel(std::string(STC_SOURCE_DIR "/models/") + name + ".yaml");
    Exploration e =
        explore(buildDecodeLayer(model), platform,
                {"quant=" + model.quant, "max_ctx=" + std::to_string(model.maxCtx)}, space, {{"ctx", 512}});
    ASSERT_EQ(e.points.size(), 1u);
    const Point& p = e.points[0];
    ASSERT_EQ(p.status, Point::Status::kOk) << name << ": " << p.message;
    EXPECT_GT(p.intermediateBytesSized, 0) << name;
    EXPECT_LE(p.intermediateBytesSized, p.unfusedBytes) << name;
    int caches = 0;  // the KV caches' converters
    for (const Fifo& f : e.sized[0].fifos) {
      if (!f.isRegion() || (f.name.rfind("k_cache.", 0) != 0 && f.name.rfind("v_cache.", 0) != 0)) continue;
      ++caches;
      EXPECT_EQ(f.depth, 1) << name << " " << f.name;
    }
    if (std::string(name) == "llama") {  // k and v; GPT-2's caches stream in their readers' order
      EXPECT_EQ(caches, 2);
    }
  }
}

// Points that compile to the same network share its sizing and simulation, but each keeps its own compile
// report: models/graphs/misc_ops.yaml counts its joined streams at their bounds (fusion_joins=whole) or at
// their least depths (trimmed), for the same network.
TEST(Dse, ASharedNetworkKeepsEachPointsOwnCompileReport) {
  std::string path = STC_SOURCE_DIR "/models/graphs/misc_ops.yaml";
  Graph graph = parseGraph(readTextFile(path), path);
  Platform platform = defaultPlatform();
  Space space;
  space.knobs = {knob("fusion_joins", {"whole", "trimmed"})};
  Exploration e = explore(graph, platform, {"quant=w4a8"}, space, {});
  ASSERT_EQ(e.points.size(), 2u);
  EXPECT_EQ(e.compiledNetworks, 1);
  EXPECT_EQ(e.points[1].sameAs, 0);
  EXPECT_EQ(e.points[1].cycles, e.points[0].cycles);
  for (size_t i = 0; i < 2; ++i) {
    CompileResult c =
        compileGraph(graph, platform, parseCompileOptions({"quant=w4a8", e.points[i].settings[0]}, platform));
    EXPECT_EQ(e.points[i].intermediateBytes, c.report.onchipBytesIntermediate) << i;
    EXPECT_EQ(e.points[i].unfusedBytes, c.report.onchipBytesUnfused) << i;
  }
  EXPECT_LT(e.points[1].intermediateBytes, e.points[0].intermediateBytes);
}

// A space evaluated in pieces of any size and in any order, each point written out as a chunk file stores
// it and read back, merges to what explore gives over the whole space (what stc dse --slurm relies on):
// same_as across pieces, rejected points and the front included.
TEST(Dse, PiecesMergeToTheWholeExploration) {
  Graph graph = parseGraph(kMlp32, "mlp32.yaml");
  Platform platform = defaultPlatform();
  Space space;
  space.knobs = {knob("tile", {"8", "16"}), knob("onchip_budget_bytes", {"11169792", "3000", "5584896"})};
  Exploration whole = explore(graph, platform, {"quant=w4a8"}, space, {});
  const std::string expected = pointsCsv(whole) + pointsJson(whole) + frontSvg(whole, "t");
  for (size_t piece : {1, 4}) {
    std::vector<Point> points(space.size());
    for (size_t first = space.size(); first-- > 0;) {  // the last piece first
      if (first % piece != 0) continue;
      std::vector<size_t> indices;
      for (size_t i = first; i < std::min(space.size(), first + piece); ++i) indices.push_back(i);
      std::vector<Point> got = evaluate(graph, platform, {"quant=w4a8"}, space, {}, indices);
      for (size_t i = 0; i < indices.size(); ++i)
        points[indices[i]] = pointFromJson(nlohmann::json::parse(pointToJson(got[i]).dump()), "chunk");
    }
    Exploration merged = merge(space, points);
    EXPECT_EQ(pointsCsv(merged) + pointsJson(merged) + frontSvg(merged, "t"), expected)
        << "pieces of " << piece;
    EXPECT_EQ(merged.points[2].sameAs, 0) << "pieces of " << piece;  // point 2 was evaluated alone
    EXPECT_EQ(merged.points[1].status, Point::Status::kRejected);
    EXPECT_TRUE(merged.points[1].network.empty());
  }
  EXPECT_NE(whole.points[0].network, whole.points[3].network);
  EXPECT_EQ(fingerprint(""), "6c62272e07bb014262b821756295c58d");   // FNV-1a 128 offset basis
  EXPECT_EQ(fingerprint("a"), "d228cb696f1a8caf78912b704e4a8964");  // its published vector
  EXPECT_THROW(pointFromJson(nlohmann::json{{"status", "ok"}}, "chunk"), UserError);
  Point odd = whole.points[0];  // bytes that are not UTF-8 (from a graph file's op name, say) kept exactly
  odd.message = "op 'a\xff\xfe'";
  odd.schedules["mm\xc3"] = {64, 4};
  odd.schedules["heads"] = {32, 0, 64, true};  // written head by head: kept with its tiles
  Point back = pointFromJson(nlohmann::json::parse(pointToJson(odd).dump()), "chunk");
  EXPECT_EQ(back.message, odd.message);
  EXPECT_EQ(back.schedules.at("mm\xc3").tk, 64);
  EXPECT_FALSE(back.schedules.at("mm\xc3").byHeads);
  const MatmulSchedule& heads = back.schedules.at("heads");
  EXPECT_EQ(std::vector<int64_t>({heads.tk, heads.rowBlock, heads.tn}), std::vector<int64_t>({32, 0, 64}));
  EXPECT_TRUE(heads.byHeads);
  EXPECT_EQ(back.settings, odd.settings);
}

std::string spaceError(const std::string& text) {
  std::string path = ::testing::TempDir() + "space.yaml";
  std::ofstream(path) << text;
  try {
    loadSpace(path, defaultPlatform());
  } catch (const UserError& e) {
    std::string what = e.what();
    return what.substr(what.find("space.yaml"));
  }
  return "no error";
}

TEST(Dse, SpaceFileErrors) {
  EXPECT_EQ(spaceError("space:\n  tiles: [8]\n"),
            "space.yaml:2:11: error: field 'tiles': unknown setting 'tiles' (known: tile, unroll_budget, "
            "onchip_budget_bytes, quant, lane_ii, max_stripe, max_SYMBOL, row_block, slr_split, "
            "fusion_joins, stripe_estimate, tk.OP, tn.OP, row_block.OP, "
            "lane_ii.OP, dim.AXIS)");
  // An ONNX model's dynamic axis is fixed once, at import, before the sweep.
  EXPECT_EQ(spaceError("space:\n  dim.seq: [8]\n"),
            "space.yaml:2:13: error: field 'dim.seq': a dynamic axis is fixed at import, not swept: give it with "
            "--set dim.seq=N");
  EXPECT_EQ(
      spaceError("space:\n  unroll_budget: [0.5, 2]\n"),
      "space.yaml:2:24: error: field 'unroll_budget': --set unroll_budget expects a share of the DSPs in "
      "(0, 1], got '2'");
  EXPECT_EQ(spaceError("space:\n  tile: []\n"),
            "space.yaml:2:9: error: field 'tile': expected at least one value");
  EXPECT_EQ(spaceError("points: 3\n"),
            "space.yaml:1:1: error: field 'points': unknown field of a design space file (known: space)");
  EXPECT_EQ(spaceError("space:\n  tile: [8]\n  tile: [16]\n"),
            "space.yaml:3:3: error: field 'tile': given twice");
}

// The row_block knob: every matmul's loop order at once, a pin for one op still winning.
TEST(Dse, RowBlockPolicyOrdersEveryMatmul) {
  const char* mlp128 =
      "graph: mlp128\n"
      "inputs: [{name: x, shape: [128, 512]}]\n"
      "weights: [{name: w_up, shape: [512, 2048]}, {name: w_down, shape: [2048, 512]}]\n"
      "ops:\n"
      "  - {name: up, op: matmul, inputs: [x, w_up], output: h}\n"
      "  - {name: down, op: matmul, inputs: [h, w_down], output: y}\n"
      "outputs: [y]\n";
  Platform platform = defaultPlatform();
  auto schedules = [&](std::vector<std::string> settings) {
    return compileGraph(parseGraph(mlp128, "g.yaml"), platform, parseCompileOptions(settings, platform))
        .schedules;
  };
  Schedules stationary = schedules({"quant=w4a8", "row_block=0"});
  EXPECT_EQ(stationary.at("up").rowBlock, 0);
  EXPECT_EQ(stationary.at("down").rowBlock, 0);
  Schedules blocks = schedules({"quant=w4a8", "row_block=48", "row_block.down=4"});
  EXPECT_EQ(blocks.at("up").rowBlock, 16);  // gcd(48, 128)
  EXPECT_EQ(blocks.at("down").rowBlock, 4);
  Schedules automatic = schedules({"quant=w4a8", "row_block=auto"}), chosen = schedules({"quant=w4a8"});
  EXPECT_EQ(automatic.at("up").rowBlock, chosen.at("up").rowBlock);
  EXPECT_GT(chosen.at("up").rowBlock, 0);
}

}  // namespace
}  // namespace stc::dse
