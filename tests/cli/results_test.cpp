// Results that hold where they are used: FIFO depths over a range of ctx, pinned depths, one resource
// estimate with "does not fit" an error, --json on every command that makes something, and an emitted
// project that refuses a ctx its buffers and depths do not hold.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/run_stc.h"
#include "compiler/ir/yaml_io.h"

namespace {

using stc::test::Outcome;
using stc::test::stc;

const std::string kNets = STC_SOURCE_DIR "/models/networks/";
const std::string kGraphs = STC_SOURCE_DIR "/models/graphs/";

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JSON object a command printed (a warning may precede it on the merged output).
nlohmann::json jsonOf(const Outcome& o) {
  size_t brace = o.out.find('{');
  EXPECT_NE(brace, std::string::npos) << o.out;
  return nlohmann::json::parse(o.out.substr(brace == std::string::npos ? 0 : brace));
}

std::string fresh(const std::string& name) {
  std::string dir = ::testing::TempDir() + "results_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Depths sized over ctx 1..64 hold at every ctx of it, each within 1% of its own unbounded run: checked
// here at all 64 values by simulation, where the sizer sized at 4 (1, 16, 17, 64) and checked 12.
TEST(SizeRange, DepthsHoldAtEveryCtxOfTheRange) {
  std::string sized = ::testing::TempDir() + "ar_range.yaml";
  Outcome o = stc("size-fifos " + kNets + "attention_row.yaml --ctx-range 1:64 -o " + sized + " --json");
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::json j = jsonOf(o);
  EXPECT_EQ(j["sized_for"]["ctx"], nlohmann::json({1, 64}));
  std::set<int64_t> checked;
  for (const auto& c : j["checked"]) checked.insert(c["ctx"].get<int64_t>());
  EXPECT_EQ(checked, (std::set<int64_t>{1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64}));
  stc::Network net = stc::parseNetwork(readAll(sized), sized);
  EXPECT_EQ(net.sizedFor.at("ctx"), std::make_pair(int64_t{1}, int64_t{64}));
  for (int ctx = 1; ctx <= 64; ++ctx) {
    Outcome run = stc("simulate " + sized + " --ctx " + std::to_string(ctx) + " --json");
    ASSERT_EQ(run.code, 0) << "ctx " << ctx << "\n" << run.out;
    Outcome free = stc("simulate " + kNets + "attention_row.yaml --fifo-depth unbounded --ctx " +
                       std::to_string(ctx) + " --json");
    ASSERT_EQ(free.code, 0) << free.out;
    int64_t cycles = jsonOf(run)["cycles"], unbounded = jsonOf(free)["cycles"];
    EXPECT_LE(cycles, unbounded + unbounded / 100) << "ctx " << ctx;
    EXPECT_EQ(run.out.find("warning"), std::string::npos) << run.out;
  }
  // Outside the range the depths are not promised: said, and at ctx 128 they do deadlock.
  o = stc("simulate " + sized + " --ctx 128");
  EXPECT_EQ(o.code, 3) << o.out;
  EXPECT_NE(
      o.out.find(sized + ": warning: the FIFO depths were sized for ctx 1..64; at ctx 128 they may deadlock "
                         "or stall (size them again with --ctx-range covering it)"),
      std::string::npos)
      << o.out;
  // One ctx is a range of one.
  o = stc("size-fifos " + kNets + "attention_row.yaml --ctx 64 -o " + sized);
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(stc::parseNetwork(readAll(sized), sized).sizedFor.at("ctx"),
            std::make_pair(int64_t{64}, int64_t{64}));
}

TEST(SizeRange, SaysWhatItNeeds) {
  std::string out = ::testing::TempDir() + "ar_none.yaml";
  Outcome o = stc("size-fifos " + kNets + "attention_row.yaml -o " + out);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            kNets +
                "attention_row.yaml: error: the network uses symbol 'ctx' and says no maximum: give --ctx "
                "N, or --ctx-range LOW:HIGH to size it for every ctx in a range\n");
  o = stc("size-fifos " + kNets + "attention_row.yaml --ctx 4 --ctx-range 1:8 -o " + out);
  EXPECT_EQ(o.out, "stc size-fifos: error: --ctx and --ctx-range both give ctx: pass one\n");
  o = stc("size-fifos " + kNets + "attention_row.yaml --bind ctx=4 --ctx-range 1:8 -o " + out);
  EXPECT_EQ(o.out, "stc size-fifos: error: --bind ctx= and --ctx-range both give ctx: pass one\n");
  o = stc("size-fifos " + kGraphs + "attention_decode.yaml --set max_ctx=64 --ctx-range 1:65 -o " + out);
  EXPECT_EQ(o.out,
            "stc size-fifos: error: --ctx-range 1:65 goes beyond the design's max_ctx (64): its kernels' "
            "buffers hold no more\n");
  o = stc("size-fifos " + kNets + "attention_row.yaml --ctx-range 9:8 -o " + out);
  EXPECT_EQ(
      o.out,
      "stc size-fifos: error: --ctx-range expects LOW:HIGH, integers with 1 <= LOW <= HIGH, got '9:8'\n");
  o = stc("size-fifos " + kNets + "fork_join.yaml --ctx-range 1:8 -o " + out);
  EXPECT_EQ(o.out,
            "stc size-fifos: error: --ctx-range: the network " + kNets + "fork_join.yaml does not use ctx\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

// fork_join (DESIGN.md): A writes a_b and a_c together, B reads all 64 of a_b before writing b_c, C reads
// a_c and b_c together. With a_b pinned at 2 (B keeps up with it), a_c must hold what A writes before B is
// done: the sizer must find that, not raise the pin. Pinned at 2, a_c itself stops A before B is done,
// whatever the other depths.
TEST(SetDepth, SizeFifosKeepsPinnedDepths) {
  std::string out = ::testing::TempDir() + "fj_pinned.yaml";
  Outcome o = stc("size-fifos " + kNets + "fork_join.yaml --set-depth a_b=2 -o " + out + " --json");
  ASSERT_EQ(o.code, 0) << o.out;
  stc::Network net = stc::parseNetwork(readAll(out), out);
  EXPECT_EQ(net.fifos[static_cast<size_t>(net.findFifo("a_b"))].depth, 2);
  EXPECT_GE(net.fifos[static_cast<size_t>(net.findFifo("a_c"))].depth, 62);
  EXPECT_EQ(jsonOf(o)["pinned"]["a_b"], 2);
  o = stc("simulate " + out + " --json");
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(jsonOf(o)["deadlock"], false);

  std::filesystem::remove(out);
  o = stc("size-fifos " + kNets + "fork_join.yaml --set-depth a_c=2 -o " + out);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            "stc size-fifos: error: the network deadlocks with the --set-depth depths even with every other "
            "FIFO unbounded: raise them\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  o = stc("size-fifos " + kNets + "fork_join.yaml --set-depth a_c=unbounded -o " + out);
  EXPECT_EQ(o.out, "stc size-fifos: error: --set-depth a_c=unbounded: the depth must be 1 to 2^40\n");
  o = stc("size-fifos " + kNets + "fork_join.yaml --set-depth nope=4 -o " + out);
  EXPECT_EQ(o.out,
            "stc size-fifos: error: --set-depth expects FIFO=N with a FIFO of the network, got 'nope=4'\n");
}

// The U55C with 100,000 LUTs: designs that fit the real one do not fit it. With `shell`, the SLRs' shares
// for kernels add up to 90,000 of them (the rest the shell's).
std::string smallPlatform(bool shell = false) {
  std::string text = readAll(STC_SOURCE_DIR "/configs/u55c.yaml");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"lut: 1303680", "lut: 100000"},
           {"lut: 289000", "lut: 30000"},
           {"lut: 420000", "lut: 30000"},
           {"lut: 434560", shell ? "lut: 30000" : "lut: 40000"}}) {
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  std::string path = ::testing::TempDir() + (shell ? "small_shell_u55c.yaml" : "small_u55c.yaml");
  std::ofstream(path) << text;
  return path;
}

TEST(Overfit, DoesNotFitIsAnErrorUnlessAllowed) {
  std::string small = smallPlatform(), net = ::testing::TempDir() + "mlp_small.yaml";
  std::filesystem::remove(net);
  Outcome o = stc("compile " + kGraphs + "mlp.yaml -p " + small + " -o " + net);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("stc compile: error: the network does not fit u55c: LUT "), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find(" > 100000; nothing was written (pass --allow-overfit to write it anyway)"),
            std::string::npos)
      << o.out;
  EXPECT_FALSE(std::filesystem::exists(net));
  // The bound is the kernels' share, as the resource lines count it, not the device's whole.
  o = stc("compile " + kGraphs + "mlp.yaml -p " + smallPlatform(true) + " -o " + net);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find(" > 90000; nothing was written"), std::string::npos) << o.out;
  o = stc("compile " + kGraphs + "mlp.yaml -p " + small + " -o " + net + " --allow-overfit --json");
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(jsonOf(o)["fits"], false);
  EXPECT_TRUE(std::filesystem::exists(net));

  // A graph sized directly: its kernels count too (the design, not its FIFOs alone).
  o = stc("size-fifos " + kGraphs + "mlp.yaml -p " + small + " -o " + net);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("stc size-fifos: error: the design with its sized FIFOs does not fit u55c: LUT "),
            std::string::npos)
      << o.out;

  std::string dir = fresh("overfit");
  o = stc("run " + kGraphs + "mlp.yaml -p " + small + " -o " + dir);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("stc run: error: the design does not fit u55c: LUT "), std::string::npos) << o.out;
  EXPECT_FALSE(std::filesystem::exists(dir));

  o = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 8:8 -p " + small);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(
      o.out.find("stc simulate: error: the device (decode layer, LM head and the prefill of 8 rows) does not "
                 "fit u55c: LUT "),
      std::string::npos)
      << o.out;
  o = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 8:8 --json --allow-overfit -p " +
          small);
  EXPECT_EQ(o.code, 0) << o.out;
  nlohmann::json d = jsonOf(o);
  EXPECT_EQ(d["fits"], false);
  // The device is its three designs, each as stc prints it alone.
  for (const char* count : {"dsp", "lut", "bram18k", "uram"})
    EXPECT_EQ(d["resources"][count].get<int64_t>(), d["resources_of"]["decode_layer"][count].get<int64_t>() +
                                                        d["resources_of"]["head"][count].get<int64_t>() +
                                                        d["resources_of"]["prefill"][count].get<int64_t>())
        << count;
}

// One design, one figure: run prints the decode layer's resources, simulate --decode the same layer's.
TEST(Overfit, RunAndSimulateGiveTheDecodeLayerOneEstimate) {
  std::string dir = fresh("tiny");
  Outcome run = stc("run " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --ctx 8 -o " + dir + " --json");
  ASSERT_EQ(run.code, 0) << run.out;
  Outcome sim = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 8:8 --json");
  ASSERT_EQ(sim.code, 0) << sim.out;
  EXPECT_EQ(jsonOf(run)["resources"], jsonOf(sim)["resources_of"]["decode_layer"]);
}

// --ctx for a graph that does not use ctx: the design is sized as it is (was an internal error).
TEST(Json, EmitOfAGraphWithoutCtxTakesNone) {
  std::string dir = fresh("noctx");
  Outcome o = stc("emit " + kGraphs + "mlp.yaml --ctx 5 -o " + dir + " --json");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(jsonOf(o)["sizing"]["sized_for"], nlohmann::json::object());
}

// --json says what the text says, and what was written.
TEST(Json, RunEmitAndCheck) {
  std::string a = fresh("json_text"), b = fresh("json_json");
  Outcome text = stc("emit " + kGraphs + "mlp.yaml -o " + a);
  ASSERT_EQ(text.code, 0) << text.out;
  Outcome json = stc("emit " + kGraphs + "mlp.yaml -o " + b + " --json");
  ASSERT_EQ(json.code, 0) << json.out;
  nlohmann::json j = nlohmann::json::parse(json.out);  // nothing else on the output
  size_t at = text.out.find("FIFOs sized: ");
  ASSERT_NE(at, std::string::npos) << text.out;
  long long fifos = 0, bits = 0, cycles = 0, unbounded = 0;
  ASSERT_EQ(std::sscanf(text.out.c_str() + at, "FIFOs sized: %lld, %lld bits; %lld cycles (unbounded %lld)",
                        &fifos, &bits, &cycles, &unbounded),
            4)
      << text.out;
  EXPECT_EQ(j["sizing"]["fifos"], fifos);
  EXPECT_EQ(j["sizing"]["total_bits"], bits);
  EXPECT_EQ(j["sizing"]["cycles_sized"], cycles);
  EXPECT_EQ(j["sizing"]["cycles_unbounded"], unbounded);
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(b)) files += e.is_regular_file();
  EXPECT_EQ(j["project"]["files"], files);
  // The f32 mlp (5,172 DSPs) fits no SLR whole: one kernel per SLR (see Compiler.GroupsNoSlrHoldsAreSplit).
  EXPECT_EQ(j["project"]["kernels"], nlohmann::json({"mlp_g0_slr1", "mlp_g0_slr2"}));
  EXPECT_EQ(j["command"], "emit");

  Outcome ok = stc("check " + kNets + "fork_join.yaml --json");
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(nlohmann::json::parse(ok.out), nlohmann::json({{"file", kNets + "fork_join.yaml"},
                                                           {"kind", "network"},
                                                           {"name", "fork_join"},
                                                           {"tasks", 3},
                                                           {"dmas", 0},
                                                           {"fifos", 3},
                                                           {"ports", 6},
                                                           {"symbols", nlohmann::json::array()},
                                                           {"ok", true}}));
  std::string bad = ::testing::TempDir() + "bad_width.yaml";
  std::ofstream(bad) << "network: x\nfifos:\n  - {name: a, width: 0, depth: 2}\ntasks: []\n";
  Outcome no = stc("check " + bad + " --json");
  EXPECT_EQ(no.code, 1);
  nlohmann::json e = nlohmann::json::parse(no.out);
  EXPECT_EQ(e["ok"], false);
  ASSERT_EQ(e["errors"].size(), 3u);
  EXPECT_EQ(e["errors"][0]["line"], 3);
  EXPECT_EQ(e["errors"][0]["column"], 5);
  EXPECT_EQ(e["errors"][0]["message"],
            bad + ":3:5: error: field 'width': FIFO 'a' needs a positive width in bits");
}

// A network sized for ctx 1..32 of a design whose buffers hold 64: the project runs ctx up to 32, the host
// refuses more, every kernel task that takes ctx clamps it, and emitting it at ctx 40 is refused.
TEST(Guards, TheProjectRunsOnlyTheCtxItsDepthsHold) {
  std::string net = ::testing::TempDir() + "ad_net.yaml", sized = ::testing::TempDir() + "ad_sized.yaml";
  ASSERT_EQ(stc("compile " + kGraphs + "attention_decode.yaml --set max_ctx=64 -o " + net).code, 0);
  Outcome o = stc("size-fifos " + net + " --ctx-range 1:32 -o " + sized);
  ASSERT_EQ(o.code, 0) << o.out;
  std::string dir = fresh("guard");
  o = stc("emit " + sized + " --ctx 40 -o " + dir);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, sized +
                       ": error: its FIFO depths were sized for ctx 1..32, not 40 (pass --ctx in 1..32, or "
                       "size them again with --ctx-range covering it)\n");
  // Without --ctx, a value in the range: 20..32 has no 16.
  std::string high = ::testing::TempDir() + "ad_high.yaml";
  ASSERT_EQ(stc("size-fifos " + net + " --ctx-range 20:32 -o " + high).code, 0);
  o = stc("emit " + high + " -o " + dir + " --json");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(jsonOf(o)["bindings"]["ctx"], 20);
  std::string host20 = readAll(dir + "/host/host.cpp");
  EXPECT_NE(host20.find("const int ctx_min = 20, ctx_max = 32;  // the FIFO depths were sized for these\n"),
            std::string::npos)
      << host20;
  std::filesystem::remove_all(dir);
  o = stc("emit " + sized + " --ctx 20 -o " + dir);
  ASSERT_EQ(o.code, 0) << o.out;
  std::string host = readAll(dir + "/host/host.cpp");
  EXPECT_NE(host.find("const int ctx_min = 1, ctx_max = 32;  // the FIFO depths were sized for these\n"),
            std::string::npos)
      << host;
  EXPECT_NE(host.find("if (ctx < ctx_min || ctx > ctx_max) {"), std::string::npos);
  std::string kernels;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/src"))
    if (e.path().extension() == ".cpp") kernels += readAll(e.path().string());
  size_t takers = 0, guards = 0;
  for (size_t at = 0; (at = kernels.find("_task(", at)) != std::string::npos; ++at)
    if (kernels.substr(at, kernels.find(')', at) - at).find("int ctx") != std::string::npos) ++takers;
  for (size_t at = 0;
       (at = kernels.find("if (ctx < 1 || ctx > 32) ctx = ctx < 1 ? 1 : 32;", at)) != std::string::npos; ++at)
    ++guards;
  EXPECT_GT(takers, 0u);
  EXPECT_EQ(guards, takers);
  EXPECT_EQ(stc::parseNetwork(readAll(dir + "/network.yaml"), "network.yaml").sizedFor.at("ctx"),
            std::make_pair(int64_t{1}, int64_t{32}));
}

}  // namespace
