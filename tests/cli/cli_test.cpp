// The stc command line, run as a user runs it: exit codes and messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/run_stc.h"

namespace {

using stc::test::Outcome;
using stc::test::stc;
using stc::test::stcIn;

const std::string kNets = STC_SOURCE_DIR "/models/networks/";

TEST(Cli, ItensorConvertWorkedExamples) {
  Outcome o = stc(
      "itensor convert 'itensor<4x2xf32, iter_space: [4,2]*[2,4], iter_map: (d0,d1)->(d1,d0)>' "
      "'itensor<4x2xf32, iter_space: [4,2,2]*[2,1,4], iter_map: (d0,d1,d2)->(d2,d0)>' --json");
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out, "{\"buffer_bytes\":128,\"buffer_shape\":[8,2],\"compatible\":false,\"shared_loops\":1}\n");
  o = stc("itensor convert 'itensor<2x2xf32, iter_space: [4,4]*[2,2], iter_map: (d0,d1)->(d0,d1)>' "
          "'itensor<2x2xf32, iter_space: [4,4]*[2,2], iter_map: (d0,d1)->(d0,d1)>' --json");
  EXPECT_EQ(o.out, "{\"compatible\":true}\n");
}

// An output that is a device is written in place: a temporary renamed over /dev/null would replace the
// device with a file (the tests run as root in CI).
TEST(Cli, AnOutputDeviceStaysADevice) {
  Outcome o = stc("compile " STC_SOURCE_DIR "/models/graphs/mlp.yaml -o /dev/null");
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
}

TEST(Cli, ItensorConvertMalformed) {
  Outcome o = stc("itensor convert 'itensor<4x2xf32 iter_space: [4]*[1], iter_map: (d0)->(d0,0)>' "
                  "'itensor<4x2xf32, iter_space: [4]*[1], iter_map: (d0)->(d0,0)>'");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            "src:1:17: error: expected ','\n  itensor<4x2xf32 iter_space: [4]*[1], iter_map: (d0)->(d0,0)>\n"
            "                  ^\n");
}

TEST(Cli, SimulateForkJoinDeadlocks) {
  Outcome o = stc("simulate " + kNets + "fork_join.yaml");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.out.find("A waits to write a_c: FULL, 2/2 tokens; it needs C"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("C waits to read b_c: EMPTY, 0/2 tokens; it needs B"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("B waits to read a_b: EMPTY, 0/2 tokens; it needs A"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("fix: depth of a_c 2 -> 64 is the smallest single change that breaks the cycle (then 134 "
                       "cycles; 63 still deadlocks)"),
            std::string::npos)
      << o.out;
}

// By hand: with every FIFO unbounded (raw 2), B reads a_b j at 4 + j and its second phase (local origin
// 63 + 1 + 1 = 65) writes b_c j at 4 + 66 + j; C reads it two cycles later, the last at 72 + 63, so 136
// cycles. fork_join_fixed (a_c 64 deep, RAM; a_b and b_c shift registers, raw 1) is two cycles faster:
// A writes j at 2 + j (a_b's room comes from B's read j - 2 at j + 1), B reads a_b j at 3 + j and writes
// b_c j at 69 + j, C reads both at 70 + j, the last at 133: 134 cycles; A never stalls and ends at 66.
TEST(Cli, SimulateJsonAndDepthOverride) {
  Outcome o = stc("simulate " + kNets + "fork_join.yaml --fifo-depth unbounded --json --engine direct");
  EXPECT_EQ(o.code, 0);
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["deadlock"], false);
  EXPECT_EQ(j["fifos"][1]["depth"], nullptr);
  Outcome fixed = stc("simulate " + kNets + "fork_join_fixed.yaml --json");
  EXPECT_EQ(fixed.code, 0);
  EXPECT_EQ(j["cycles"], 136);
  nlohmann::json f = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(f["cycles"], 134);
  EXPECT_EQ(f["tasks"][0]["stall_full"], 0);
  EXPECT_EQ(f["tasks"][0]["end"], 66);
}

TEST(Cli, SimulateNeedsBoundSymbols) {
  Outcome o = stc("simulate " + kNets + "attention_row.yaml");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("the network uses symbol 'ctx': bind it with --ctx N"), std::string::npos) << o.out;
  EXPECT_EQ(stc("simulate " + kNets + "attention_row.yaml --ctx 128").code, 0);
}

TEST(Cli, BadInputsExitOne) {
  EXPECT_EQ(stc("simulate /nonexistent.yaml").out, "/nonexistent.yaml: error: cannot open the file\n");
  EXPECT_EQ(stc("simulate /nonexistent.yaml").code, 1);
  Outcome o = stc("simulate " + kNets + "chain.yaml --fifo-depth deep");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc simulate: error: --fifo-depth expects auto, unbounded or a positive integer, got 'deep'\n");
  o = stc("simulate --bogus");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(stc("frobnicate").code, 1);
  o = stc("emit /nonexistent.yaml -o y");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("/nonexistent.yaml"), std::string::npos);
  std::string dir = ::testing::TempDir() + "beyond_max_ctx";
  o = stc("emit " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --ctx 65 -o " + dir);  // max_ctx 64
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc emit: error: --ctx 65 is beyond the model's max_ctx (64)\n");
  EXPECT_FALSE(std::filesystem::exists(dir));
  // An input that is also an output (Hugging Face's output_hidden_states returns x): no kernel makes it, so
  // no DMA would write it; said at compile, where emit alone said it before.
  std::string io = ::testing::TempDir() + "input_out.yaml";
  std::ofstream(io) << "graph: io\ninputs: [{name: x, shape: [2, 16]}]\nops:\n"
                       "  - {name: a, op: relu, inputs: [x], output: y}\noutputs: [y, x]\n";
  o = stc("compile " + io + " -o " + ::testing::TempDir() + "input_out.net");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            io + ":1:1: error: field 'outputs': 'x' is an input or weight of the graph, not computed by an "
                 "op: the host has it already\n");
  // A symbol the design does not have, bound: it would change nothing (emit exited 0 and wrote a project).
  std::string unbound = ::testing::TempDir() + "unused_binding", relu = ::testing::TempDir() + "relu.yaml";
  std::ofstream(relu) << "graph: relu\ninputs: [{name: x, shape: [2, 16]}]\nops:\n"
                         "  - {name: a, op: relu, inputs: [x], output: y}\noutputs: [y]\n";
  o = stc("emit " + relu + " --bind seq=6 -o " + unbound);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc emit: error: --bind seq=6: " + relu + " has no symbol 'seq' (it has none)\n");
  EXPECT_FALSE(std::filesystem::exists(unbound));
  // An ONNX axis fixed at import may be bound again to the same size (the torch check does), not another.
  o = stc("emit " STC_SOURCE_DIR "/models/onnx/causal_attention_seq.onnx --set dim.seq=8 --bind seq=9 -o " +
          unbound);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            "stc emit: error: --bind seq=9 disagrees with --set dim.seq=8, which fixed the axis at import\n");
  EXPECT_FALSE(std::filesystem::exists(unbound));
  // An embedding lookup at ids an op computes (OPT's and RoBERTa's positions from the mask) is refused at
  // the op: the lookup's DMA reads its ids from HBM, where they were not yet (emit refused it, without the
  // file; compile and simulate ran it, the rows fetched at no ids at all). No project is written.
  std::string computed = ::testing::TempDir() + "computed_ids.yaml",
              refused = ::testing::TempDir() + "computed_ids";
  std::ofstream(computed)
      << "graph: computed_ids\ninputs: [{name: ids, shape: [1, 6], dtype: i64}]\n"
         "weights: [{name: one, shape: [1], fill: 1}, {name: table, shape: [16, 32]}]\nops:\n"
         "  - {name: next, op: add, inputs: [ids, one], output: next_ids}\n"
         "  - {name: lookup, op: embedding, inputs: [next_ids, table], output: y}\noutputs: [y]\n";
  o = stc("emit " + computed + " -o " + refused);
  EXPECT_EQ(o.code, 1);
  const std::string atIds =
      computed +
      ":6:5: error: unsupported: the embedding lookup 'lookup' at ids 'next_ids' that the "
      "graph computes (a lookup reads its ids from HBM: give them as an input)\n";
  EXPECT_EQ(o.out, atIds);
  EXPECT_FALSE(std::filesystem::exists(refused));
  o = stc("simulate " + computed);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, atIds);
  // Ids that are a view of an input (input_ids.view(1, S)) are the input's data: looked up, and emitted
  // (emit refused them as not an input).
  std::string viewed = ::testing::TempDir() + "viewed_ids.yaml",
              project = ::testing::TempDir() + "viewed_ids";
  std::ofstream(viewed) << "graph: viewed_ids\ninputs: [{name: ids, shape: [6], dtype: i64}]\n"
                           "weights: [{name: table, shape: [16, 32]}]\nops:\n"
                           "  - {name: rows, op: reshape, inputs: [ids], output: ids2, shape: [1, 6]}\n"
                           "  - {name: lookup, op: embedding, inputs: [ids2, table], output: e}\n"
                           "  - {name: act, op: relu, inputs: [e], output: y}\noutputs: [y]\n";
  o = stc("emit " + viewed + " --force -o " + project);
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_TRUE(std::filesystem::exists(project + "/Makefile"));
  o = stc("simulate " STC_SOURCE_DIR "/models/graphs/attention_decode.yaml --ctx 6 --bind seq=2");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc simulate: error: --bind seq=2: " STC_SOURCE_DIR
                   "/models/graphs/attention_decode.yaml has no symbol 'seq' (its symbols: ctx)\n");
}

// A compiled network records the largest value of each symbol its buffers hold (max_SYMBOL, or the
// model's own bound: nanoGPT's mask buffer of 16 positions), and a binding past it is refused where the
// network runs, as stc emit refuses it, instead of timing a design that cannot run there.
TEST(Cli, ANetworkRecordsItsMaximaAndABindingPastThemIsRefused) {
  auto readFile = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string dir = ::testing::TempDir() + "maxima",
                    model = STC_SOURCE_DIR "/models/onnx/causal_attention_seq.onnx";
  ASSERT_EQ(stc("compile " + model + " -o " + dir + ".onnx.yaml").code, 0);
  EXPECT_NE(readFile(dir + ".onnx.yaml").find("\nmaxima: {seq: 16}\n"), std::string::npos);
  EXPECT_EQ(stc("simulate " + dir + ".onnx.yaml --bind seq=16").code, 0);
  Outcome past = stc("simulate " + dir + ".onnx.yaml --bind seq=17");
  EXPECT_EQ(past.code, 1);
  EXPECT_EQ(past.out,
            "stc simulate: error: --bind seq=17 is beyond the design's max_seq (16, " + dir +
                ".onnx.yaml field 'maxima'): its kernels' buffers hold no more (compile it with --set "
                "max_seq=N)\n");
  const std::string decode = STC_SOURCE_DIR "/models/graphs/attention_decode.yaml";
  ASSERT_EQ(stc("compile " + decode + " --set max_ctx=100 -o " + dir + ".decode.yaml").code, 0);
  EXPECT_NE(readFile(dir + ".decode.yaml").find("\nmaxima: {ctx: 100}\n"), std::string::npos);
  EXPECT_EQ(stc("simulate " + dir + ".decode.yaml --ctx 100").code, 0);
  EXPECT_EQ(stc("simulate " + dir + ".decode.yaml --ctx 101").out,
            "stc simulate: error: --ctx 101 is beyond the design's max_ctx (100, " + dir +
                ".decode.yaml field 'maxima'): its kernels' buffers hold no more (compile it with --set "
                "max_ctx=N)\n");
  Outcome ranged = stc("size-fifos " + dir + ".decode.yaml --ctx-range 1:101 -o " + dir + ".sized.yaml");
  EXPECT_EQ(ranged.code, 1);
  EXPECT_NE(ranged.out.find("--ctx-range 1:101 goes beyond the design's max_ctx (100)"), std::string::npos)
      << ranged.out;
  EXPECT_FALSE(std::filesystem::exists(dir + ".sized.yaml"));
  // A file's maxima are checked as any field is.
  std::string text = readFile(dir + ".decode.yaml");
  text.replace(text.find("maxima: {ctx: 100}"), 18, "maxima: {ctx: 0}");
  std::ofstream(dir + ".bad.yaml") << text;
  Outcome bad = stc("simulate " + dir + ".bad.yaml --ctx 4");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.out, dir + ".bad.yaml:3:15: error: field 'maxima': ctx needs a maximum of at least 1\n");
}

// An ONNX export whose shape arithmetic over a dynamic axis needs the axis fixed, run with --bind alone
// (as the torch check binds every symbolic input dimension): the axis is fixed at import at the bound
// value, as --set dim.seq=8 fixes it, with a note; the same results as that setting gives, byte for byte.
// Bound to nothing, the import's refusal still ends with the way out.
TEST(Cli, ABoundAxisIsFixedAtImportWhereTheShapeArithmeticNeedsIt) {
  const std::string model = STC_SOURCE_DIR "/models/onnx/causal_attention_seq.onnx";
  Outcome bound = stc("simulate " + model + " --bind seq=8"),
          set = stc("simulate " + model + " --set dim.seq=8");
  ASSERT_EQ(bound.code, 0) << bound.out;
  ASSERT_EQ(set.code, 0) << set.out;
  const std::string note =
      "stc simulate: note: " + model +
      ": its shape arithmetic over a dynamic axis folds with the axis fixed: imported "
      "with dim.seq=8 from --bind, as --set dim.seq=8 would (a design for that size alone)\n";
  ASSERT_EQ(bound.out.rfind(note, 0), 0u) << bound.out;
  EXPECT_EQ(bound.out.substr(note.size()), set.out);
  // Without a binding, the import keeps the axis symbolic (its causal mask is of one form at every length:
  // below), and the command asks for one.
  Outcome free = stc("simulate " + model);
  EXPECT_EQ(free.code, 1);
  EXPECT_NE(free.out.find(model + ": error: the model uses symbol 'seq': bind it with --bind seq=N"),
            std::string::npos)
      << free.out;
  std::string dir = ::testing::TempDir() + "bound_axis";
  Outcome emitted = stc("emit " + model + " --bind seq=8 --force -o " + dir);
  ASSERT_EQ(emitted.code, 0) << emitted.out;
  EXPECT_NE(emitted.out.find("stc emit: note: " + model), std::string::npos) << emitted.out;
  // stc compile too: the same network as --set dim.seq=8 writes, byte for byte.
  auto readFile = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string byBind = dir + ".bind.yaml", bySet = dir + ".set.yaml";
  Outcome compiled = stc("compile " + model + " --bind seq=8 -o " + byBind);
  ASSERT_EQ(compiled.code, 0) << compiled.out;
  EXPECT_EQ(compiled.out.rfind("stc compile: note: " + model, 0), 0u) << compiled.out;
  ASSERT_EQ(stc("compile " + model + " --set dim.seq=8 -o " + bySet).code, 0);
  EXPECT_EQ(readFile(byBind), readFile(bySet));
  // An axis the import does not need fixed stays a symbol of the network, said so; a graph's symbols
  // always do, and --bind there is a mistake (no network written).
  Outcome kept = stc("compile " STC_SOURCE_DIR "/models/onnx/mlp.onnx --bind seq=4 -o " + dir + ".mlp.yaml");
  ASSERT_EQ(kept.code, 0) << kept.out;
  EXPECT_EQ(
      kept.out.rfind("stc compile: note: --bind seq=4: the network keeps the symbol seq (its import did "
                     "not need the axis fixed): bind it where the network runs, or fix it here with --set "
                     "dim.seq=4\n",
                     0),
      0u)
      << kept.out;
  EXPECT_NE(readFile(dir + ".mlp.yaml").find("seq"), std::string::npos);
  // Without --bind, a model whose shape arithmetic over the axis reaches its data only as reshape targets
  // (grouped-query attention, no mask) compiles to a network that keeps the axis a symbol, said so; it runs
  // at any binding.
  const std::string gqa = STC_SOURCE_DIR "/models/onnx/gqa_bidirectional_seq.onnx";
  Outcome symbolic = stc("compile " + gqa + " -o " + dir + ".gqa.yaml");
  ASSERT_EQ(symbolic.code, 0) << symbolic.out;
  EXPECT_EQ(
      symbolic.out.rfind("stc: note: " + gqa +
                             ": the shape arithmetic over seq (imported at 11 and 13) reaches the data only "
                             "as reshape and expand targets and masks of one form at every size: the graph "
                             "keeps the axis a symbol, bound where the network runs (--set dim.seq=N "
                             "compiles a design for one size)\n",
                         0),
      0u)
      << symbolic.out;
  for (int seq : {8, 100}) {
    Outcome ran = stc("simulate " + dir + ".gqa.yaml --bind seq=" + std::to_string(seq));
    EXPECT_EQ(ran.code, 0) << ran.out;
    EXPECT_NE(ran.out.find("cycles"), std::string::npos) << ran.out;
  }
  Outcome graph = stc("compile " STC_SOURCE_DIR "/models/graphs/mlp.yaml --bind seq=4 -o " + dir + ".g.yaml");
  EXPECT_EQ(graph.code, 1);
  EXPECT_EQ(
      graph.out,
      "stc compile: error: --bind seq=4: a graph's symbols stay symbols in the network; bind them where it "
      "runs (stc simulate, size-fifos, emit or run --bind)\n");
  EXPECT_FALSE(std::filesystem::exists(dir + ".g.yaml"));
  // An export that refuses a node of its own beside the shape arithmetic (TopK beside a view over the
  // sequence) is imported with the bound axis fixed all the same: its refusal names that node alone, where
  // it listed every Shape, Gather and Unsqueeze of the symbolic axis.
  const std::string topk = STC_SOURCE_DIR "/models/onnx/topk_beside_view_seq.onnx";
  Outcome refused = stc("compile " + topk + " --bind seq=8 -o " + dir + ".topk.yaml");
  EXPECT_EQ(refused.code, 1);
  EXPECT_EQ(refused.out,
            "stc compile: note: " + topk +
                ": its import refuses nodes beside the shape arithmetic over a dynamic axis: imported "
                "with dim.seq=8 from --bind, as --set dim.seq=8 would, to name them\n" +
                topk + ": error: unsupported: 1 node(s):\n  /TopK (TopK)\n");
  EXPECT_FALSE(std::filesystem::exists(dir + ".topk.yaml"));
  // A concat along the axis (a cache of `past` positions given as an input, torch.cat with the new token's
  // keys) imports with the axis a symbol, which shape inference refuses there: --bind fixes it at import,
  // and says so (the command stopped at the concat); without a binding, the error says how to fix it.
  const std::string cached = STC_SOURCE_DIR "/models/onnx/cached_attention_past.onnx";
  Outcome appended = stc("simulate " + cached + " --bind past=7");
  ASSERT_EQ(appended.code, 0) << appended.out;
  const std::string concatNote = "stc simulate: note: " + cached +
                                 ": op '_Concat' (concat): unsupported: concat along a symbolic dimension: "
                                 "imported with dim.past=7 from --bind, as --set dim.past=7 would (a design "
                                 "for that size alone)\n";
  ASSERT_EQ(appended.out.rfind(concatNote, 0), 0u) << appended.out;
  EXPECT_EQ(appended.out.substr(concatNote.size()), stc("simulate " + cached + " --set dim.past=7").out);
  // With the batch and the new tokens dynamic too, the import needs those fixed, and shape inference past:
  // all three, the same network as --set gives.
  const std::string all = STC_SOURCE_DIR "/models/onnx/cached_attention_all_seq.onnx";
  Outcome allBound = stc("simulate " + all + " --bind batch=1 --bind new=1 --bind past=7");
  ASSERT_EQ(allBound.code, 0) << allBound.out;
  const std::string allNote =
      "stc simulate: note: " + all +
      ": its shape arithmetic over a dynamic axis folds with the axis fixed: imported "
      "with dim.batch=1 dim.new=1 dim.past=7 from --bind, as --set dim.batch=1 "
      "dim.new=1 dim.past=7 would (a design for that size alone)\n";
  ASSERT_EQ(allBound.out.rfind(allNote, 0), 0u) << allBound.out;
  EXPECT_EQ(allBound.out.substr(allNote.size()),
            stc("simulate " + all + " --set dim.batch=1 --set dim.new=1 --set dim.past=7").out);
  // --ctx, which every command takes and a model without the axis ignores, is no axis to fix.
  Outcome withCtx = stc("simulate " + cached + " --ctx 16 --bind past=7");
  ASSERT_EQ(withCtx.code, 0) << withCtx.out;
  EXPECT_EQ(withCtx.out.rfind(concatNote, 0), 0u) << withCtx.out;
  Outcome unfixed = stc("compile " + cached + " -o " + dir + ".cached.yaml");
  EXPECT_EQ(unfixed.code, 1);
  EXPECT_EQ(
      unfixed.out,
      cached + ": error: op '_Concat' (concat): unsupported: concat along a symbolic dimension\n" + cached +
          ": error: op '_Concat_1' (concat): unsupported: concat along a symbolic dimension\n(the graph "
          "keeps the model's dynamic axis 'past' a symbol, which shape inference does not take there; "
          "fixed at import, the model goes through: --set dim.past=N compiles a design for one size, as "
          "--bind past=N does where a command runs it)\n");
  EXPECT_FALSE(std::filesystem::exists(dir + ".cached.yaml"));
  // torch's Loop for a repeat_interleave over the dynamic axis (it once refused: SplitToSequence, Loop,
  // ConcatFromSequence) imports with the axis fixed, as an unsqueeze, expand and reshape.
  const std::string loop = STC_SOURCE_DIR "/models/onnx/repeat_interleave_kv_seq.onnx";
  Outcome looped = stc("compile " + loop + " --bind seq=8 -o " + dir + ".loop.yaml");
  EXPECT_EQ(looped.code, 0) << looped.out;
  EXPECT_TRUE(std::filesystem::exists(dir + ".loop.yaml"));
  // One whose shape is not torch's, read by that shape, compiles what ONNX defines, and says so.
  const std::string rows = STC_SOURCE_DIR "/models/onnx/repeat_interleave_rows.onnx";
  Outcome noted = stc("compile " + rows + " -o " + dir + ".rows.yaml");
  EXPECT_EQ(noted.code, 0) << noted.out;
  EXPECT_EQ(noted.out.rfind("stc: note: " + rows +
                                ": torch's repeat_interleave Loop at '/ConcatFromSequence' makes "
                                "[64, 2] where torch's own result is [16, 8]",
                            0),
            0u)
      << noted.out;
}

// A deadlocked run whose DMAs read ahead of the blocked tasks: the channels served bursts past the last
// event, and their busy share is over the time they served (it was 116% over the run's cycles).
TEST(Cli, DeadlockedRunKeepsChannelsWithinTheirTime) {
  Outcome o =
      stc("simulate " STC_SOURCE_DIR "/models/graphs/attention_decode.yaml --ctx 64 --fifo-depth 1 --json");
  EXPECT_EQ(o.code, 3);
  nlohmann::json j = nlohmann::json::parse(o.out.substr(0, o.out.find("\nnetwork ") + 1));
  ASSERT_FALSE(j["hbm"].empty());
  int reading = 0;
  for (const auto& c : j["hbm"]) {
    EXPECT_LE(c["busy_fraction"].get<double>(), 1.0) << c;
    if (c["bytes_read"].get<int64_t>() > 0) {
      EXPECT_GT(c["busy_fraction"].get<double>(), 0.0) << c;
    }
    reading += c["bytes_read"].get<int64_t>() > 0;
  }
  EXPECT_GE(reading, 8);  // the K and V caches' channels
}

// Two FIFOs that must grow together: the deadlock report says which and how deep, as --set-depth flags,
// and those flags make the run finish (tests/sim/deadlock_test.cpp derives the depths by hand).
TEST(Cli, DeadlockThatNeedsSeveralFifosSaysTheirDepths) {
  std::string path = ::testing::TempDir() + "pair.yaml";
  std::ofstream(path)
      << "network: pair\nfifos: [{name: x1, width: 32}, {name: x2, width: 32}, {name: y, width: 32}]\n"
         "tasks:\n  - {name: A, phases: [{trip: [16], ports: [{fifo: x1, dir: out}, "
         "{fifo: x2, dir: out}, {fifo: y, dir: out}]}]}\n  - {name: C, phases: [{trip: [16], ports: "
         "[{fifo: y, dir: in}]}, {trip: [16], ports: [{fifo: x1, dir: in}, {fifo: x2, dir: in}]}]}\n";
  Outcome o = stc("simulate " + path);
  EXPECT_EQ(o.code, 3);
  const std::string flags = "--set-depth x1=16 --set-depth x2=16";
  EXPECT_NE(o.out.find("fix: no single FIFO depth change breaks this cycle; these together do (then "),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("each as shallow as the others allow): " + flags + "\n"), std::string::npos) << o.out;
  Outcome fixed = stc("simulate " + path + " " + flags);
  EXPECT_EQ(fixed.code, 0) << fixed.out;
  EXPECT_EQ(stc("simulate " + path + " --set-depth x1=16 --set-depth x2=15").code, 3);
  Outcome bad = stc("simulate " + path + " --set-depth z=4");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.out,
            "stc simulate: error: --set-depth expects FIFO=N with a FIFO of the network, got 'z=4'\n");
}

// What a new user types wrong, each said at once in one line: a mistyped command, a platform by name,
// a symbol bound twice, options that do not apply to a model's decode, an output that would overwrite
// the input or is standard output, a binding beyond the design's maximum, a project folder in use.
TEST(Cli, CommandLineMistakesAreSaidBeforeAnythingRuns) {
  const std::string graphs = STC_SOURCE_DIR "/models/graphs/", dir = ::testing::TempDir() + "mistakes/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Outcome o = stc("bogus");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(
      o.out,
      "stc: error: unknown command 'bogus' (the commands: compile, simulate, size-fifos, emit, run, dse, "
      "itensor, check, report, conform)\n");
  // A built-in platform by name is the platform file's twin.
  Outcome byName = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 4:4 -p u280");
  Outcome byFile = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 4:4 -p " STC_SOURCE_DIR
                       "/configs/u280.yaml");
  ASSERT_EQ(byName.code, 0) << byName.out;
  EXPECT_NE(byName.out.find("gpt2-tiny on u280 at "), std::string::npos) << byName.out;
  auto table = [](const std::string& out) { return out.substr(0, out.rfind("; ")); };  // not the wall time
  EXPECT_EQ(table(byName.out), table(byFile.out));
  o = stc("simulate " + kNets + "fork_join.yaml -p u999");
  EXPECT_EQ(o.out,
            "u999: error: cannot open the file (a platform file, or a built-in platform: u55c, u280)\n");
  o = stc("simulate " + kNets + "attention_row.yaml --ctx 8 --bind ctx=4");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc simulate: error: ctx is bound twice: --ctx 8 and --bind ctx=4\n");
  // A sweep: several prompts in one --decode share one estimator, each row what it gives alone.
  o = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 4:4,20:2 --json");
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::json sweep = nlohmann::json::parse(o.out);
  ASSERT_EQ(sweep.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    Outcome alone = stc(std::string("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --json --decode ") +
                        (i == 0 ? "4:4" : "20:2"));
    nlohmann::json one = nlohmann::json::parse(alone.out);
    EXPECT_EQ(sweep[i]["prompt"], one["prompt"]);
    EXPECT_EQ(sweep[i]["ttft_ms"], one["ttft_ms"]);
    EXPECT_EQ(sweep[i]["latency_ms"], one["latency_ms"]);
    EXPECT_EQ(sweep[i]["device_loop"], one["device_loop"]);
  }
  o = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 4:4,4");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            "stc simulate: error: --decode expects PROMPT:GEN, two positive integers (several separated by "
            "commas), got '4' in '4:4,4'\n");
  o = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 4:4 --vcd " + dir + "x.vcd");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            "stc simulate: error: --vcd does not apply to a model's --decode or --table (they simulate every "
            "layer at the contexts the requests reach)\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "x.vcd"));
  std::filesystem::copy_file(graphs + "mlp.yaml", dir + "mlp.yaml");
  o = stc("compile " + dir + "mlp.yaml -o " + dir + "mlp.yaml");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc compile: error: " + dir +
                       "mlp.yaml is an input of this command; writing it would overwrite " + dir +
                       "mlp.yaml\n");
  EXPECT_EQ(stc("check " + dir + "mlp.yaml").code, 0);  // still the graph
  o = stc("compile " + dir + "mlp.yaml -o -");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "-: error: stc writes files, not standard output here: give a file name\n");
  EXPECT_FALSE(std::filesystem::exists("-"));
  o = stc("emit " + graphs + "attention_decode.yaml -o " + dir + "ad --ctx 100 --set max_ctx=64");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc emit: error: --ctx 100 is beyond the design's max_ctx (64)\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "ad"));
  std::ofstream(dir + "used.txt") << "x";
  o = stc("run " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --ctx 8 -o " + dir);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, dir + ": error: the folder is not empty (pass --force to replace it)\n");
  o = stc("run " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --ctx 8 -o " + dir + "used.txt");
  EXPECT_EQ(o.out, dir + "used.txt: error: exists and is not a folder\n");
  o = stc("emit " + dir + "mlp.yaml -o " + dir + " --force");  // --force would delete the graph
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, dir + ": error: the folder holds the input " + dir +
                       "mlp.yaml, which replacing it would delete\n");
  EXPECT_TRUE(std::filesystem::exists(dir + "mlp.yaml"));
  o = stc("compile " + dir + "mlp.yaml -o " + dir + "n.yaml --report " + dir + "n.yaml");
  EXPECT_EQ(o.out, dir + "n.yaml: error: two outputs name one file; give each its own\n");
  // A trace written over the network it simulates would lose it.
  o = stc("simulate " + kNets + "fork_join.yaml --fifo-depth unbounded --vcd " + kNets + "fork_join.yaml");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, kNets + "fork_join.yaml: error: is an input of this command; writing it would overwrite " +
                       kNets + "fork_join.yaml\n");
  // A folder named like a built-in platform (a project emitted with -o u280, say) does not hide it.
  std::filesystem::create_directories(dir + "u280");
  o = stcIn(dir, "simulate " + kNets + "fork_join.yaml --fifo-depth unbounded -p u280");
  EXPECT_EQ(o.code, 0) << o.out;
}

// One 4 KiB burst of 64 tokens on channel 0: token k arrives at 26.675 + 64 (k + 1) / 57.5 cycles, the
// last at 97.9, so the DMA writes it at cycle 98 and the consumer reads it at 99: 100 cycles.
TEST(Cli, SimulatesDmaTasksOnTheHbm) {
  std::string path = ::testing::TempDir() + "dma.yaml";
  std::ofstream(path) << "network: d\nfifos: [{name: w, width: 512}]\ntasks:\n"
                         "  - {name: load, kind: dma_read, channel: 0, bytes: 4096, ports: [{fifo: w, dir: out}]}\n"
                         "  - {name: use, phases: [{trip: [64], ports: [{fifo: w, dir: in}]}]}\n";
  EXPECT_EQ(stc("check " + path).code, 0);
  Outcome o = stc("simulate " + path + " --json");
  EXPECT_EQ(o.code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["cycles"], 100);
  EXPECT_EQ(j["hbm"][0]["channel"], 0);
  EXPECT_EQ(j["hbm"][0]["bytes_read"], 4096);
  EXPECT_EQ(j["hbm"][0]["bytes_written"], 0);
  o = stc("simulate " + path + " -p " + std::string(STC_SOURCE_DIR) + "/configs/u280.yaml --json");
  EXPECT_EQ(o.code, 0) << o.out;
}

// --write-schedule then --schedule: the same network; a bad schedule file exits 1 and writes nothing.
TEST(Cli, ScheduleFiles) {
  std::string dir = ::testing::TempDir(), graph = STC_SOURCE_DIR "/models/graphs/mlp.yaml";
  Outcome first = stc("compile " + graph + " -o " + dir + "a.net.yaml --write-schedule " + dir + "s.yaml");
  ASSERT_EQ(first.code, 0) << first.out;
  Outcome again = stc("compile " + graph + " -o " + dir + "b.net.yaml --schedule " + dir + "s.yaml");
  ASSERT_EQ(again.code, 0) << again.out;
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string a = read(dir + "a.net.yaml"), b = read(dir + "b.net.yaml");
  EXPECT_EQ(a.substr(a.find("\nfifos:")), b.substr(b.find("\nfifos:")));  // the source line adds the pins
  std::ofstream(dir + "bad.yaml") << "schedule:\n  nowhere: {tk: 4}\n";
  std::filesystem::remove(dir + "c.net.yaml");
  Outcome bad = stc("compile " + graph + " -o " + dir + "c.net.yaml --schedule " + dir + "bad.yaml");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("bad.yaml:2:17: error: the graph has no matmul named 'nowhere'"), std::string::npos)
      << bad.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "c.net.yaml"));
}

// A width with no divisor from 2 to the tile (1,009 is prime) compiles, with a warning at the tensor's line;
// 1,008 = 16 * 63 gives none.
TEST(Cli, APrimeWidthIsWarnedOf) {
  std::string dir = ::testing::TempDir() + "prime/";
  std::filesystem::create_directories(dir);
  for (int width : {1009, 1008})
    std::ofstream(dir + std::to_string(width) + ".yaml")
        << "graph: g\ninputs: [{name: x, shape: [2, " << width << "]}]\nops:\n"
        << "  - {name: a, op: relu, inputs: [x], output: y}\noutputs: [y]\n";
  Outcome prime = stc("compile " + dir + "1009.yaml -o " + dir + "p.net --json");
  ASSERT_EQ(prime.code, 0) << prime.out;
  const std::string warning =
      "' streams one element a token: its last dimension 1009 has no divisor from 2 to "
      "the tile (16); padded to 1024 it would stream 16";
  EXPECT_NE(prime.out.find("1009.yaml:2:10: warning: tensor 'x" + warning), std::string::npos) << prime.out;
  EXPECT_NE(prime.out.find("1009.yaml:4:5: warning: tensor 'y" + warning), std::string::npos) << prime.out;
  Outcome even = stc("compile " + dir + "1008.yaml -o " + dir + "e.net");
  ASSERT_EQ(even.code, 0) << even.out;
  EXPECT_EQ(even.out.find("warning"), std::string::npos) << even.out;
}

// stc dse: every point and the front written, the picked point's sized network simulating to the
// cycles its line reports and emitting; a bad pick or an unbound symbol writes nothing.
TEST(Cli, DseWritesTheFrontAndThePick) {
  std::string dir = ::testing::TempDir() + "dse/", graph = STC_SOURCE_DIR "/models/graphs/mlp.yaml";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "space.yaml") << "space:\n  tile: [8, 16]\n  unroll_budget: [0.2, 0.7]\n";
  Outcome o = stc("dse " + graph + " --space " + dir + "space.yaml -j 2 -o " + dir + "out --pick cycles");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("mlp: 4 points, 4 distinct networks sized; 0 rejected, 0 deadlocked, 4 fit"),
            std::string::npos)
      << o.out;
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  nlohmann::json points = nlohmann::json::parse(read(dir + "out/points.json"));
  ASSERT_EQ(points["points"].size(), 4u);
  int picked = points["front"][0].get<int>();
  EXPECT_NE(o.out.find("picked #" + std::to_string(picked) + " (cycles)"), std::string::npos) << o.out;
  std::string csv = read(dir + "out/points.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_EQ(read(dir + "out/front.svg").rfind("<svg", 0), 0u);
  Outcome sim = stc("simulate " + dir + "out/picked.net.yaml --json");
  ASSERT_EQ(sim.code, 0) << sim.out;
  EXPECT_EQ(nlohmann::json::parse(sim.out)["cycles"], points["points"][picked]["cycles"]);
  Outcome emitted = stc("emit " + dir + "out/picked.net.yaml -o " + dir + "project");
  EXPECT_EQ(emitted.code, 0) << emitted.out;

  Outcome bad = stc("dse " + graph + " --space " + dir + "space.yaml -o " + dir + "bad --pick fastest");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(
      bad.out.find("stc dse: error: --pick expects cycles, onchip, dsp or a point's number, got 'fastest'"),
      std::string::npos)
      << bad.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "bad"));
  EXPECT_EQ(bad.out.find("points"), std::string::npos) << bad.out;  // refused before the sweep
  // A knob naming no matmul of the graph: refused at its line, not a sweep of rejected points.
  std::ofstream(dir + "typo.yaml") << "space:\n  tile: [8]\n  tk.upp: [64]\n";
  Outcome typo = stc("dse " + graph + " --space " + dir + "typo.yaml -o " + dir + "bad");
  EXPECT_EQ(typo.code, 1);
  EXPECT_NE(typo.out.find("typo.yaml:3:12: error: field 'tk.upp': the graph has no matmul named 'upp'"),
            std::string::npos)
      << typo.out;
  Outcome typoSet = stc("dse " + graph + " --set row_block.act=2 -o " + dir + "bad");
  EXPECT_EQ(typoSet.code, 1);
  EXPECT_NE(typoSet.out.find("stc dse: error: --set row_block.act: the graph has no matmul named 'act'"),
            std::string::npos)
      << typoSet.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "bad"));
  Outcome unbound = stc("dse " + std::string(STC_SOURCE_DIR) + "/models/gpt2-tiny.yaml -o " + dir + "bad");
  EXPECT_EQ(unbound.code, 1);
  EXPECT_NE(unbound.out.find("gpt2-tiny.yaml: error: the layer uses symbol 'ctx': bind it with --ctx N"),
            std::string::npos)
      << unbound.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "bad"));
}

// A 128-row GPT-2 medium prefill layer (W4A8; its causal attention holds K and V on chip): sized from its
// unbounded run, its FIFOs hold 1.8 MB of intermediate results (the branches that meet in the scores and
// the MLP's residual wait in FIFOs for each other); sized from a run where writers keep their readers'
// pace, 12% of keeping them whole, K and V most of it, within 1% of the unbounded run's cycles, and stc
// dse and stc size-fifos keep that design.
TEST(Cli, DesignsThatWaitInTheirWritersAreSizedPaced) {
  std::string dir = ::testing::TempDir() + "paced/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Its row blocks as the unroll search chose them when it priced a weight over the channels its tile needs
  // (stripe_estimate=channels): over the stripes the weights get, the layer waits less in its writers.
  std::ofstream(dir + "space.yaml") << "space: {tile: [16], stripe_estimate: [channels]}\n";
  Outcome o = stc("dse " STC_SOURCE_DIR "/models/gpt2.yaml --prompt 128 --space " + dir + "space.yaml -j 1 -o " + dir +
                  "out --pick 0");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("1 points, 1 distinct networks sized; 0 rejected, 0 deadlocked, 1 fit"), std::string::npos)
      << o.out;
  std::ifstream in(dir + "out/points.json");
  nlohmann::json point = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}))["points"][0];
  EXPECT_TRUE(point["fits"].get<bool>()) << point;
  EXPECT_TRUE(point["paced"].get<bool>()) << point;
  EXPECT_LE(point["cycles"].get<int64_t>() * 100, point["cycles_unbounded"].get<int64_t>() * 101) << point;
  Outcome c =
      stc("compile " + dir + "out/picked.graph.yaml --set quant=w4a8 --set stripe_estimate=channels -o " +
          dir + "layer.yaml");
  ASSERT_EQ(c.code, 0) << c.out;
  Outcome s = stc("size-fifos " + dir + "layer.yaml -o " + dir + "sized.yaml --json");
  ASSERT_EQ(s.code, 0) << s.out;
  nlohmann::json sized = nlohmann::json::parse(s.out);
  EXPECT_TRUE(sized["fits"].get<bool>());
  EXPECT_TRUE(sized["paced"].get<bool>());
  EXPECT_EQ(sized["paced_why"], "fewer_bits");
  EXPECT_EQ(sized["cycles_sized"], point["cycles"]);
  // The same design's intermediate results at its sized depths, counted by both commands: beyond K and V
  // (128 x 1024 int8 each, whole in the scores' and P.V's buffers), under a tenth of keeping them whole.
  EXPECT_EQ(sized["intermediate_bytes"], point["intermediate_bytes_sized"]);
  EXPECT_EQ(sized["unfused_bytes"], point["unfused_bytes"]);
  EXPECT_GT(sized["intermediate_bytes"].get<int64_t>(), 0);
  EXPECT_GT(sized["intermediate_bytes"].get<int64_t>(), 2 * 128 * 1024);
  EXPECT_LT((sized["intermediate_bytes"].get<int64_t>() - 2 * 128 * 1024) * 10,
            sized["unfused_bytes"].get<int64_t>());
  Outcome sim = stc("simulate " + dir + "sized.yaml --json");
  ASSERT_EQ(sim.code, 0) << sim.out;
  EXPECT_EQ(nlohmann::json::parse(sim.out)["cycles"], sized["cycles_sized"]);
}

// The layer stc dse --pick writes for a GQA model (TinyLlama's 16-row prefill) says its KV-head copies
// weight is zeros (`fill: 0`), so compiling it again gives the design the point measured: the same cycles
// and intermediate results, its held K and V one KV head per group (before, the file lost the values, and
// the held buffers kept a copy per query head: 8x the bytes).
TEST(Cli, APickedGqaLayerCompilesAgainToThePickedDesign) {
  std::string dir = ::testing::TempDir() + "picked_gqa/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "space.yaml") << "space: {tile: [16]}\n";
  Outcome o = stc("dse " STC_SOURCE_DIR "/models/llama.yaml --prompt 16 --space " + dir +
                  "space.yaml -j 1 -o " + dir + "out --pick 0");
  ASSERT_EQ(o.code, 0) << o.out;
  std::ifstream graph(dir + "out/picked.graph.yaml");
  std::string layer(std::istreambuf_iterator<char>(graph), {});
  EXPECT_NE(layer.find("{name: kv_copies, shape: [8, 1], dtype: f32, fill: 0}"), std::string::npos) << layer;
  std::ifstream in(dir + "out/points.json");
  nlohmann::json point =
      nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}))["points"][0];
  Outcome s =
      stc("size-fifos " + dir + "out/picked.graph.yaml --set quant=w4a8 -o " + dir + "sized.yaml --json");
  ASSERT_EQ(s.code, 0) << s.out;
  nlohmann::json sized = nlohmann::json::parse(s.out);
  EXPECT_EQ(sized["cycles_sized"], point["cycles"]);
  EXPECT_EQ(sized["intermediate_bytes"], point["intermediate_bytes_sized"]);
  EXPECT_EQ(sized["unfused_bytes"], point["unfused_bytes"]);
}

// stc dse MODEL --prompt N explores the prefill layer padded as stc simulate --decode pads it: 19 tokens pad
// to 32 rows (a multiple of 16 beyond 16), so the sweep is --prompt 32's point for point, and it says so; 32
// needs no padding and says nothing.
TEST(Cli, DsePadsAPromptAsTheDecodeEstimatePadsIt) {
  std::string dir = ::testing::TempDir() + "padded/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "space.yaml") << "space: {tile: [16]}\n";
  auto run = [&](int prompt) {
    return stc("dse " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --prompt " + std::to_string(prompt) +
               " --space " + dir + "space.yaml -j 1 -o " + dir + std::to_string(prompt));
  };
  Outcome odd = run(19), even = run(32);
  ASSERT_EQ(odd.code, 0) << odd.out;
  ASSERT_EQ(even.code, 0) << even.out;
  EXPECT_NE(odd.out.find("a prompt of 19 tokens pads to the prefill layer of 32 rows"), std::string::npos)
      << odd.out;
  EXPECT_EQ(even.out.find("a prompt of"), std::string::npos) << even.out;
  auto text = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string csv = text(dir + "19/points.csv");
  EXPECT_NE(csv.find("\n0,ok,"), std::string::npos) << csv;
  EXPECT_EQ(csv, text(dir + "32/points.csv"));
}

// A BERT-base attention over 64 rows, not causal (models/graphs/attention_encoder.yaml, W4A8): q waits for
// the last key in front of the scores, and the merged heads in front of o_proj. Sized from the unbounded
// run, both waited behind their converters, each row once per key tile or column panel it is replayed
// (86.5 KB for q's 49 KB, 181 KB for om's): 72.4% of the intermediate results kept whole. Step 6 sizes it
// again from a run with the replays bounded as the network's (3 tokens), the rows waiting in front of the
// converters once, and keeps that: the replays' FIFOs at 3, 28.1%, at the unbounded run's latency. (The
// projections pinned to row blocks of 4 rows: left to the compiler, they write their panels head by head,
// and neither q nor K waits whole.)
TEST(Cli, ReplaysWaitOnceInFrontOfTheirConverters) {
  std::string dir = ::testing::TempDir() + "replays/";
  std::filesystem::create_directories(dir);
  Outcome c = stc("compile " STC_SOURCE_DIR
                  "/models/graphs/attention_encoder.yaml --set quant=w4a8 "
                  "--set row_block.q_proj=4 --set row_block.k_proj=4 --set row_block.v_proj=4 -o " +
                  dir + "net.yaml");
  ASSERT_EQ(c.code, 0) << c.out;
  Outcome s = stc("size-fifos " + dir + "net.yaml -o " + dir + "sized.yaml --json");
  ASSERT_EQ(s.code, 0) << s.out;
  nlohmann::json sized = nlohmann::json::parse(s.out);
  EXPECT_TRUE(sized["replays_bounded"].get<bool>());
  EXPECT_FALSE(sized["paced"].get<bool>());
  EXPECT_LE(sized["cycles_sized"].get<int64_t>() * 100, sized["cycles_unbounded"].get<int64_t>() * 101);
  for (const auto& f : sized["fifos"]) {
    if (f["name"] == "qh>scores" || f["name"] == "om>o_proj") {
      EXPECT_LE(f["depth"].get<int64_t>(), 3) << f["name"];
    }
  }
  EXPECT_LT(sized["intermediate_bytes"].get<int64_t>() * 10, sized["unfused_bytes"].get<int64_t>() * 3);
}

// The 128-row decoder layer (W4A8) with its softmax not causal (every query row reads every key, so q
// waits whole in front of the scores while K is made) sized from its unbounded run takes 187 URAM blocks,
// or 69 sized again with the converters' replays bounded (step 6; q waits once, not once per key tile).
// On a U55C with 60 URAM blocks for kernels (its SLRs' 15, 22 and 22) the blocks do not fit. Paced it is 10%
// slower, so bits alone keep the first; given the device's test by stc size-fifos (step 7), the sizer sizes
// it paced and keeps that design, which fits. On the real U55C the first one fits and stays.
TEST(Cli, DesignsOverTheDeviceAreSizedPaced) {
  std::string dir = ::testing::TempDir() + "overdevice/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ifstream in(STC_SOURCE_DIR "/configs/u55c.yaml");
  std::string platform(std::istreambuf_iterator<char>(in), {});
  auto replace = [&](std::string& text, const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace(platform, "  uram: 960", "  uram: 60");
  replace(platform, "uram: 288}", "uram: 15}");
  replace(platform, "uram: 320}", "uram: 22}");
  replace(platform, "uram: 320}", "uram: 22}");
  std::ofstream(dir + "small.yaml") << platform;
  std::ifstream layerIn(STC_SOURCE_DIR "/models/graphs/decoder_prefill.yaml");
  std::string graph(std::istreambuf_iterator<char>(layerIn), {});
  replace(graph, "causal: true", "causal: false");
  std::ofstream(dir + "open.yaml") << graph;
  Outcome c = stc("compile " + dir + "open.yaml --set quant=w4a8 --set stripe_estimate=channels -p " + dir +
                  "small.yaml -o " + dir + "layer.yaml");
  ASSERT_EQ(c.code, 0) << c.out;
  Outcome s = stc("size-fifos " + dir + "layer.yaml -p " + dir + "small.yaml -o " + dir + "sized.yaml --json");
  ASSERT_EQ(s.code, 0) << s.out;
  nlohmann::json sized = nlohmann::json::parse(s.out);
  EXPECT_TRUE(sized["fits"].get<bool>());
  EXPECT_TRUE(sized["paced"].get<bool>());
  EXPECT_EQ(sized["paced_why"], "over_device");
  EXPECT_GT(sized["cycles_sized"].get<int64_t>() * 100, sized["cycles_unbounded"].get<int64_t>() * 101);
  Outcome big = stc("size-fifos " + dir + "layer.yaml -o " + dir + "free.yaml --json");  // the U55C holds it
  ASSERT_EQ(big.code, 0) << big.out;
  nlohmann::json free = nlohmann::json::parse(big.out);
  EXPECT_FALSE(free["paced"].get<bool>());
  EXPECT_LT(free["cycles_sized"].get<int64_t>(), sized["cycles_sized"].get<int64_t>());
}

// Causal attention over 128 rows, 12 heads of 80 with RoPE (W4A8): sized from the unbounded run its FIFOs
// hold 274% of what keeping every intermediate result whole takes (q and h read ahead in front of the
// projections that replay them); paced, 22% at 3.9% more cycles, for a twelfth of the bits. The sizer
// keeps the paced design, and says by how much it may be slower. (The matmuls' tiles and the lanes' II
// pinned to that design: the unroll search now gives P.V twice the tile and the scores 40, at lane II 4,
// and that design runs paced within 1% of its unbounded run.)
TEST(Cli, APacedDesignBuysMemoryWithAFewPercentOfCycles) {
  Outcome o =
      stc("size-fifos " + std::string(STC_SOURCE_DIR) + "/models/graphs/attention_rope_prefill.yaml " +
          "--set quant=w4a8 --set stripe_estimate=channels --set tk.mix=16 --set tk.scores=16 --set "
          "tk.q_proj=160 " +
          "--set tk.k_proj=160 --set tk.v_proj=160 --set tk.o_proj=160 --set lane_ii=2 -o " +
          ::testing::TempDir() + "rope_sized.yaml --json");
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["paced_why"], "fewer_bits");
  double tolerance = j["paced_tolerance"].get<double>();
  EXPECT_GT(tolerance, 0.01);
  EXPECT_LE(tolerance, 0.05);
  int64_t sized = j["cycles_sized"].get<int64_t>(), unbounded = j["cycles_unbounded"].get<int64_t>();
  EXPECT_GT(sized * 100, unbounded * 101);
  EXPECT_LE(static_cast<double>(sized), static_cast<double>(unbounded) * (1 + tolerance));
  EXPECT_LT(j["intermediate_bytes"].get<int64_t>() * 4, j["unfused_bytes"].get<int64_t>());
}

// Causal attention over q, k and v from HBM, its heads merged into the output y [128, 1024]; the file's path.
std::string writeCoreAttention() {  // a file of the test's own: ctest runs tests side by side
  std::string path = ::testing::TempDir() + "core_attention_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
  std::ofstream(path) << "graph: core\n"
                         "inputs:\n"
                         "  - {name: q, shape: [128, 1024]}\n"
                         "  - {name: k, shape: [128, 1024]}\n"
                         "  - {name: v, shape: [128, 1024]}\n"
                         "weights: [{name: scale, shape: [1]}]\n"
                         "ops:\n"
                         "  - {name: q_heads, op: reshape, inputs: [q], output: q4, shape: [128, 16, 64]}\n"
                         "  - {name: q_t, op: transpose, inputs: [q4], output: qh, perm: [1, 0, 2]}\n"
                         "  - {name: k_heads, op: reshape, inputs: [k], output: k4, shape: [128, 16, 64]}\n"
                         "  - {name: k_t, op: transpose, inputs: [k4], output: kt, perm: [1, 2, 0]}\n"
                         "  - {name: v_heads, op: reshape, inputs: [v], output: v4, shape: [128, 16, 64]}\n"
                         "  - {name: v_t, op: transpose, inputs: [v4], output: vh, perm: [1, 0, 2]}\n"
                         "  - {name: scores, op: matmul, inputs: [qh, kt], output: s}\n"
                         "  - {name: scaled, op: mul, inputs: [s, scale], output: ss}\n"
                         "  - {name: probs, op: softmax, inputs: [ss], output: p, axis: -1, causal: true}\n"
                         "  - {name: mix, op: matmul, inputs: [p, vh], output: o}\n"
                         "  - {name: o_t, op: transpose, inputs: [o], output: ot, perm: [1, 0, 2]}\n"
                         "  - {name: merge, op: reshape, inputs: [ot], output: y, shape: [128, 1024]}\n"
                         "outputs: [y]\n";
  return path;
}

// Causal attention over q, k and v from HBM (128 rows, 16 heads of 64, W4A8). The scores at a reduction
// tile of 64 take 16 x 128 x 8 = 16,384 iterations (8 tiles of 16 keys a row), the softmax's statistics
// and apply kernels 16,384 each, side by side on successive rows; P.V at a tile of 32 keys takes 16 x 128
// x 4 x 4 = 32,768 (4 tiles of the 128 keys, 4 of the 64 values). The unroll search counted the softmax's
// two kernels one after the other (32,768 cycles), so growing P.V's tile shortened nothing it saw, and
// the design took 41,783 cycles (sized) with 1,203 of the 6,126 DSPs it may use; P.V now takes a tile of
// 64 keys or more, and the sized design runs in fewer cycles than P.V at 32 alone would take.
TEST(Cli, TheUnrollSearchSeesARowOpsKernelsSideBySide) {
  std::string path = writeCoreAttention();
  std::string net = ::testing::TempDir() + "core_attention.net.yaml";
  Outcome c = stc("compile " + path + " --set quant=w4a8 -o " + net + " --json");
  ASSERT_EQ(c.code, 0) << c.out;
  nlohmann::json j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["schedules"]["scores"]["tk"], 64);
  EXPECT_GE(j["schedules"]["mix"]["tk"].get<int64_t>(), 64);
  Outcome s = stc("size-fifos " + net + " -o " + ::testing::TempDir() + "core_attention.sized.yaml --json");
  ASSERT_EQ(s.code, 0) << s.out;
  int64_t cycles = nlohmann::json::parse(s.out)["cycles_sized"].get<int64_t>();
  EXPECT_LT(cycles, 32768);
  EXPECT_GT(cycles, 16384);
}

// A parallel block (GPT-J's, Falcon's: attention and MLP read the same norm's rows, y = x + attn + mlp), 96
// rows of 12 heads of 64, FFN 3,072, W4A8. Its q, k, v and MLP up projections run side by side: at
// reduction tiles of 16 (q, k, v: 96 x 768 x 768 / (16 x 16) = 221,184 iterations) and 64 for the up
// projection (96 x 768 x 3,072 / (64 x 16), the same), no group of three doubled shortens the layer, and
// the search stopped there on half its DSPs (229,039 cycles sized). The slowest four now grow together.
TEST(Cli, FourMatmulsSideBySideGrowTogether) {
  std::string path = ::testing::TempDir() + "parallel_block.yaml";
  std::ofstream(path) << "graph: parallel_block\n"
                         "inputs: [{name: x, shape: [96, 768]}]\n"
                         "weights: [{name: ln_g, shape: [768]}, {name: ln_b, shape: [768]}, {name: w_fc1, "
                         "shape: [768, 3072]},\n"
                         "          {name: w_fc2, shape: [3072, 768]}, {name: w_q, shape: [768, 768]}, "
                         "{name: w_k, shape: [768, 768]},\n"
                         "          {name: w_v, shape: [768, 768]}, {name: scale, shape: [1]}, {name: w_o, "
                         "shape: [768, 768]}]\n"
                         "ops:\n"
                         "  - {name: ln, op: layernorm, inputs: [x, ln_g, ln_b], output: h}\n"
                         "  - {name: q_proj, op: matmul, inputs: [h, w_q], output: q}\n"
                         "  - {name: k_proj, op: matmul, inputs: [h, w_k], output: k}\n"
                         "  - {name: v_proj, op: matmul, inputs: [h, w_v], output: v}\n"
                         "  - {name: q_heads, op: reshape, inputs: [q], output: q4, shape: [96, 12, 64]}\n"
                         "  - {name: q_t, op: transpose, inputs: [q4], output: qh, perm: [1, 0, 2]}\n"
                         "  - {name: k_heads, op: reshape, inputs: [k], output: k4, shape: [96, 12, 64]}\n"
                         "  - {name: k_t, op: transpose, inputs: [k4], output: kt, perm: [1, 2, 0]}\n"
                         "  - {name: v_heads, op: reshape, inputs: [v], output: v4, shape: [96, 12, 64]}\n"
                         "  - {name: v_t, op: transpose, inputs: [v4], output: vh, perm: [1, 0, 2]}\n"
                         "  - {name: scores, op: matmul, inputs: [qh, kt], output: s}\n"
                         "  - {name: scaled, op: mul, inputs: [s, scale], output: ss}\n"
                         "  - {name: probs, op: softmax, inputs: [ss], output: p, axis: -1, causal: true}\n"
                         "  - {name: mix, op: matmul, inputs: [p, vh], output: o}\n"
                         "  - {name: o_t, op: transpose, inputs: [o], output: ot, perm: [1, 0, 2]}\n"
                         "  - {name: merge, op: reshape, inputs: [ot], output: om, shape: [96, 768]}\n"
                         "  - {name: o_proj, op: matmul, inputs: [om, w_o], output: a}\n"
                         "  - {name: fc1, op: matmul, inputs: [h, w_fc1], output: f1}\n"
                         "  - {name: act, op: gelu, inputs: [f1], output: f2}\n"
                         "  - {name: fc2, op: matmul, inputs: [f2, w_fc2], output: f3}\n"
                         "  - {name: sum1, op: add, inputs: [x, a], output: r1}\n"
                         "  - {name: res, op: add, inputs: [r1, f3], output: y}\n"
                         "outputs: [y]\n";
  std::string net = ::testing::TempDir() + "parallel_block.net.yaml";
  Outcome c = stc("compile " + path + " --set quant=w4a8 -o " + net + " --json");
  ASSERT_EQ(c.code, 0) << c.out;
  nlohmann::json schedules = nlohmann::json::parse(c.out)["schedules"];
  for (const char* op : {"q_proj", "k_proj", "v_proj"})
    EXPECT_GE(schedules[op]["tk"].get<int64_t>(), 32) << schedules;
  EXPECT_GE(schedules["fc1"]["tk"].get<int64_t>(), 128) << schedules;
  Outcome s = stc("size-fifos " + net + " -o " + ::testing::TempDir() + "parallel_block.sized.yaml --json");
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_LT(nlohmann::json::parse(s.out)["cycles_sized"].get<int64_t>(), 221184 / 2);
}

// The same attention's output: P.V makes it head by head ([16, 128, 64]), and y is its transpose merged
// into rows. A converter reordered it into rows, holding all 128 KiB and writing them out after P.V's last
// head: 8,192 tokens of 16 bytes, a third of the design's 25,399 cycles. The merged heads now leave the
// chip as P.V makes them (the DMA writes each head's 64 bytes of a row at its place), so the design ends
// a fill after P.V's 16 x 128 x 4 x 2 = 16,384 iterations, and holds no more than K's and V's tiles.
TEST(Cli, AnOutputInAnotherOrderThanItsProducersIsNotHeldToReorder) {
  Outcome o = stc("size-fifos " + writeCoreAttention() + " --set quant=w4a8 -o " + ::testing::TempDir() +
                  "core_order.yaml --json");
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_LT(j["intermediate_bytes"].get<int64_t>(), 128 * 1024 / 2);
  EXPECT_LT(j["cycles_sized"].get<int64_t>(), 16384 + 8192 / 4);
}

// The same attention's output is a reshape of the merged heads' transpose, which one kernel makes: it
// leaves the chip once, as y. The transpose's own tensor, which nothing reads, was written to HBM too:
// a second DMA write of 128 KiB beside y's. Four reads (q, k, v, the scale) and one write.
TEST(Cli, AnOutputViewLeavesTheChipOnce) {
  std::string net = ::testing::TempDir() + "core_attention_once.net.yaml";
  Outcome c = stc("compile " + writeCoreAttention() + " --set quant=w4a8 -o " + net + " --json");
  ASSERT_EQ(c.code, 0) << c.out;
  nlohmann::json j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["dmas"], 5);
  std::ifstream in(net);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("name: store_y"), std::string::npos);
  EXPECT_EQ(text.find("ot>hbm"), std::string::npos);
}

// The same attention's keys and values come from HBM: a buffer holding them whole in the scores and in
// P.V (the causal products' held keys, for keys a projection makes on chip a row at a time) adds 2 x 128 x
// 1024 bytes and gains nothing, since row r's key is no nearer than the last; they stream in tiles as
// the unmasked attention's do, at the same cycles.
TEST(Cli, KeysFromHbmAreNotHeld) {
  std::string dir = ::testing::TempDir();
  Outcome o =
      stc("size-fifos " + writeCoreAttention() + " --set quant=w4a8 -o " + dir + "core_held.yaml --json");
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_LT(j["intermediate_bytes"].get<int64_t>(), 2 * 128 * 1024);
}

// GPT-2 medium's 128-row causal attention (W4A8): q_proj's weight (1024 x 1024 at 4 bits, 512 KiB) is read
// once per row block, in tiles of 128 x 16 (1,024 bytes an iteration). Its stage's three projections share
// the 32 channels, ten each, and the lowering splits the tile into beat-aligned stripes: 8 of 128 bytes. In
// 2-row blocks the weight takes 64 x 512 KiB / (8 x 57.5 bytes a cycle) = 72,944 cycles, more than the
// matmul's 65,536 iterations; in 4-row blocks, 36,472. Priced over the 18 channels the tile needs (capped at
// 10: 58,356 cycles) the search kept 2-row blocks, and the sized design waited on HBM.
TEST(Cli, TheUnrollSearchPricesAWeightOverTheStripesItGets) {
  struct Design {
    nlohmann::json schedules;
    std::string network;
    int64_t cycles = 0;
  };
  auto design = [&](const std::string& estimate) {
    Design d;
    std::string net = ::testing::TempDir() + "stripes_" + estimate + ".yaml";
    Outcome c = stc("compile " STC_SOURCE_DIR
                    "/models/graphs/attention_prefill.yaml --set quant=w4a8 "
                    "--set stripe_estimate=" +
                    estimate + " -o " + net + " --json");
    EXPECT_EQ(c.code, 0) << c.out;
    if (c.code != 0) return d;
    d.schedules = nlohmann::json::parse(c.out)["schedules"];
    std::ifstream in(net);
    d.network.assign(std::istreambuf_iterator<char>(in), {});
    Outcome s = stc("size-fifos " + net + " -o " + net + ".sized --json");
    EXPECT_EQ(s.code, 0) << s.out;
    if (s.code == 0) d.cycles = nlohmann::json::parse(s.out)["cycles_sized"].get<int64_t>();
    return d;
  };
  Design aligned = design("aligned"), channels = design("channels");
  int stripes = 0;
  for (size_t at = aligned.network.find("name: load_w_q.s"); at != std::string::npos;
       at = aligned.network.find("name: load_w_q.s", at + 1))
    ++stripes;
  EXPECT_EQ(stripes, 8);
  EXPECT_EQ(aligned.schedules["q_proj"]["tk"], 128) << aligned.schedules;
  EXPECT_EQ(aligned.schedules["q_proj"]["row_block"], 4) << aligned.schedules;
  EXPECT_EQ(channels.schedules["q_proj"]["row_block"], 2) << channels.schedules;
  EXPECT_LT(aligned.cycles * 100, channels.cycles * 95) << aligned.cycles << " " << channels.cycles;
}

// BERT-base's 64-row attention writes its projections head by head
// (Compiler.AttentionProjectionsWriteHeadByHead): the compile report says so beside each projection's tiles,
// a panel of one head (64 columns) over every row, and says nothing of the sort for o_proj, which reads the
// merged heads in row blocks.
TEST(Cli, TheCompileReportNamesTheProjectionsWrittenByHeads) {
  Outcome c = stc("compile " STC_SOURCE_DIR "/models/graphs/attention_encoder.yaml --set quant=w4a8 -o " +
                  ::testing::TempDir() + "heads.yaml --json");
  ASSERT_EQ(c.code, 0) << c.out;
  nlohmann::json schedules = nlohmann::json::parse(c.out)["schedules"];
  for (const char* op : {"q_proj", "k_proj", "v_proj"}) {
    EXPECT_EQ(schedules[op]["by_heads"], true) << op << " " << schedules;
    EXPECT_EQ(schedules[op]["tn"], 64) << op;
    EXPECT_EQ(schedules[op]["row_block"], 0) << op;
  }
  EXPECT_FALSE(schedules["o_proj"].contains("by_heads")) << schedules;
  EXPECT_GT(schedules["o_proj"]["row_block"].get<int64_t>(), 0) << schedules;
}

TEST(Cli, SizeFifosWritesTheSizedNetwork) {
  std::string out = ::testing::TempDir() + "fj.sized.yaml";
  Outcome o = stc("size-fifos " + kNets + "fork_join.yaml -o " + out + " --json");
  EXPECT_EQ(o.code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["fifos"][0]["depth"], 2);
  EXPECT_GE(j["fifos"][1]["depth"].get<int64_t>(), 64);
  EXPECT_LE(j["total_bits"].get<int64_t>(), j["baseline_max_occupancy_bits"].get<int64_t>());
  EXPECT_TRUE(j["intermediate_bytes"].is_null());  // a hand-written network: no kernels to tell them by
  Outcome sim = stc("simulate " + out + " --json");
  EXPECT_EQ(sim.code, 0);
  EXPECT_EQ(nlohmann::json::parse(sim.out)["cycles"], j["cycles_sized"]);
  EXPECT_EQ(stc("size-fifos " + kNets + "fork_join.yaml").code, 1);  // -o is required
}

TEST(Cli, OnnxModels) {
  std::string onnx = std::string(STC_SOURCE_DIR) + "/models/onnx/";
  Outcome o = stc("check " + onnx + "gpt2_block.onnx");
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("gelu 1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("layernorm 2"), std::string::npos) << o.out;
  std::string out = ::testing::TempDir() + "llama.net.yaml";
  o = stc("compile " + onnx + "llama_block.onnx -o " + out + " --set quant=w4a8");
  EXPECT_EQ(o.code, 0) << o.out;
  o = stc("simulate " + onnx + "mlp.onnx --bind seq=16 --json");
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(nlohmann::json::parse(o.out)["deadlock"], false);
  o = stc("simulate " + onnx + "mlp.onnx");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("the model uses symbol 'seq': bind it with --bind seq=N"), std::string::npos) << o.out;
}

TEST(Cli, HostileInputs) {
  Outcome o = stc("check /dev/zero");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "/dev/zero: error: not a regular file\n");
  std::string path = ::testing::TempDir() + "utf8.yaml";
  std::ofstream(path) << "network: n\xff\nfifos: [{name: f, width: 32}]\ntasks:\n"
                         "  - {name: a\xfe, phases: [{trip: [4], ports: [{fifo: f, dir: out}]}]}\n"
                         "  - {name: b, phases: [{trip: [4], ports: [{fifo: f, dir: in}]}]}\n";
  o = stc("simulate " + path + " --json");
  EXPECT_EQ(o.code, 0) << o.out;  // names that are not UTF-8 are replaced in JSON, never an abort
  o = stc("simulate " + path + " --ctx 99999999999999999");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "stc simulate: error: --ctx must be 1 to 2^40\n");
}

TEST(Cli, CheckSummaries) {
  Outcome o = stc("check " + kNets + "fork_join.yaml");
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out, kNets + "fork_join.yaml: network 'fork_join': 3 tasks (0 DMA), 3 FIFOs, 6 ports: ok\n");
  o = stc("check " + std::string(STC_SOURCE_DIR) + "/configs/u55c.yaml");
  EXPECT_EQ(o.code, 0);
  // A graph whose ops' shapes do not agree is refused as stc compile refuses it, at the op's line.
  std::string path = ::testing::TempDir() + "batches.yaml";
  std::ofstream(path) << "graph: g\ninputs: [{name: q, shape: [4, 16, 32]}, {name: k, shape: [2, 32, 16]}]\n"
                         "ops:\n  - {name: s, op: matmul, inputs: [q, k], output: y}\noutputs: [y]\n";
  o = stc("check " + path);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out,
            path + ":4:5: error: op 's' (matmul): batch dimensions differ: [4, 16, 32] x [2, 32, 16]\n");
}

TEST(Cli, OutputsAreWritten) {
  std::string dir = ::testing::TempDir();
  Outcome o = stc("simulate " + kNets + "chain.yaml --curves " + dir + "c.csv --vcd " + dir + "c.vcd --trace " + dir +
                  "c.json");
  EXPECT_EQ(o.code, 0) << o.out;
  std::ifstream csv(dir + "c.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "fifo,cycle,writes,reads");
  EXPECT_TRUE(std::ifstream(dir + "c.vcd").good());
  EXPECT_TRUE(std::ifstream(dir + "c.json").good());
}

}  // namespace
