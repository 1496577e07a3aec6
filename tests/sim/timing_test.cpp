// Cycle counts derived by hand from the timing semantics of DESIGN.md; each test runs both schedulers.
#include <gtest/gtest.h>

#include "sim_helpers.h"

namespace stc::testing {
namespace {

class Timing : public ::testing::TestWithParam<bool> {
 protected:
  sim::SimResult run(const std::string& text) { return simulateText(text, GetParam()); }
};

// A source (latency Ls), m middle stages (latency Lm) and a sink, T tokens, ii 1, depth 2, 32 bits:
// stage i writes token j at Ls + i*(1 + Lm) + j, the sink reads it one cycle later, so the latency is
// Ls + m*(1 + Lm) + T + 1 and nobody stalls (Lm >= 1: with latency 0 a write precedes the read of its
// own iteration, as the tie rule of DESIGN.md orders them).
std::string chain(int stages, int tokens, int ls, int lm) {
  std::string s = "network: chain\nfifos:\n";
  for (int i = 0; i <= stages; ++i) s += "  - {name: f" + std::to_string(i) + ", width: 32}\n";
  s += "tasks:\n  - {name: src, phases: [{trip: [" + std::to_string(tokens) + "], latency: " + std::to_string(ls) +
       ", ports: [{fifo: f0, dir: out}]}]}\n";
  for (int i = 1; i <= stages; ++i)
    s += "  - {name: s" + std::to_string(i) + ", phases: [{trip: [" + std::to_string(tokens) +
         "], latency: " + std::to_string(lm) + ", ports: [{fifo: f" + std::to_string(i - 1) + ", dir: in}, {fifo: f" +
         std::to_string(i) + ", dir: out}]}]}\n";
  s += "  - {name: dst, phases: [{trip: [" + std::to_string(tokens) + "], ports: [{fifo: f" + std::to_string(stages) +
       ", dir: in}]}]}\n";
  return s;
}

TEST_P(Timing, ChainClosedForm) {
  for (auto [m, T, ls, lm] : {std::tuple{1, 1024, 3, 5}, {5, 100, 1, 1}, {10, 7, 4, 1}, {0, 9, 2, 0}}) {
    sim::SimResult r = run(chain(m, T, ls, lm));
    EXPECT_FALSE(r.deadlock);
    EXPECT_EQ(r.cycles, ls + m * (1 + lm) + T + 1) << "m=" << m << " T=" << T;
    EXPECT_EQ(r.events, 2LL * (m + 1) * T);
    for (const auto& t : r.tasks) EXPECT_EQ(t.stallFull + t.stallEmpty, 0) << t.name;
  }
}

TEST_P(Timing, ChainExampleFile) {
  sim::SimResult r = run(readTextFile(STC_SOURCE_DIR "/models/networks/chain.yaml"));
  EXPECT_EQ(r.cycles, 3 + 1 * (1 + 5) + 1024 + 1);
}

// Source ii 2 latency 1 writes j at 2j + 1; the sink (ii 1) reads j at 2j + 2, stalling one cycle on
// every token after the first.
TEST_P(Timing, SlowProducer) {
  sim::SimResult r = run(
      "network: n\nfifos: [{name: f, width: 32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [10], ii: 2, latency: 1, ports: [{fifo: f, dir: out}]}]}\n"
      "  - {name: b, phases: [{trip: [10], ii: 1, latency: 1, ports: [{fifo: f, dir: in}]}]}\n");
  EXPECT_EQ(r.cycles, 2 * 10 + 1);
  EXPECT_EQ(task(r, "b").stallEmpty, 9);
  EXPECT_EQ(task(r, "b").start, 2);
  EXPECT_EQ(task(r, "a").stallFull, 0);
}

// Latency 10 > ii 1 into a consumer of ii 3 with depth 2: the consumer reads j at 3j + 11; the producer's
// write j (j >= 2) waits for read j-2: ready at 3j + 6, two cycles after it could go for j >= 3.
TEST_P(Timing, LatencyAboveIiWithBackpressure) {
  sim::SimResult r = run(
      "network: n\nfifos: [{name: f, width: 32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [8], ii: 1, latency: 10, ports: [{fifo: f, dir: out}]}]}\n"
      "  - {name: b, phases: [{trip: [8], ii: 3, latency: 1, ports: [{fifo: f, dir: in}]}]}\n");
  EXPECT_EQ(r.cycles, 3 * 8 + 9);
  EXPECT_EQ(task(r, "a").stallFull, 2 * 5);
  EXPECT_EQ(task(r, "b").stallEmpty, 0);
  EXPECT_EQ(fifo(r, "f").maxOccupancy, 2);
}

// Level -1: one token per phase, written at the last iteration (7 + latency 2 = 9), read at 10.
TEST_P(Timing, PerPhasePorts) {
  sim::SimResult r = run(
      "network: n\nfifos: [{name: f, width: 32}, {name: g, width: 32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [8], ii: 1, latency: 2, ports: [{fifo: f, dir: out, level: -1}]}]}\n"
      "  - {name: b, phases: [{trip: [4], ii: 1, latency: 3, ports: [{fifo: f, dir: in, level: -1}, {fifo: g, dir: out}]}]}\n"
      "  - {name: c, phases: [{trip: [4], ii: 1, latency: 1, ports: [{fifo: g, dir: in}]}]}\n");
  // b reads f at 10 (local 0); writes g at 10 + j + 3 = 13..16; c reads at 14..17.
  EXPECT_EQ(task(r, "b").start, 10);
  EXPECT_EQ(r.cycles, 18);
  EXPECT_EQ(fifo(r, "f").tokens, 1);
}

// Two phases: b reads 4 tokens (local 0..3, latency 3) then its second phase starts at local
// 3 + 3 + 1 = 7 and writes j at 7 + 2j + 1. With b's offset of 2 the writes land at 10, 12, 14, 16; c
// reads them at 11, 13, 15, 17, stalling 3 cycles in all.
TEST_P(Timing, TwoPhases) {
  sim::SimResult r = run(
      "network: n\nfifos: [{name: f1, width: 32, depth: 4}, {name: f2, width: 32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [4], ii: 1, latency: 1, ports: [{fifo: f1, dir: out}]}]}\n"
      "  - name: b\n    phases:\n"
      "      - {trip: [4], ii: 1, latency: 3, ports: [{fifo: f1, dir: in}]}\n"
      "      - {trip: [4], ii: 2, latency: 1, ports: [{fifo: f2, dir: out}]}\n"
      "  - {name: c, phases: [{trip: [4], ii: 1, latency: 1, ports: [{fifo: f2, dir: in}]}]}\n");
  EXPECT_EQ(r.cycles, 18);
  EXPECT_EQ(task(r, "b").start, 2);
  EXPECT_EQ(task(r, "b").end, 17);
  EXPECT_EQ(task(r, "c").stallEmpty, 3);
}

// 512 bits x depth 2 = 1024 bits: a shift register, read one cycle after the write; depth 3 (1536
// bits) is RAM: two cycles. Likewise 1024 x 1 versus 1025 x 1, and unbounded counts as RAM.
TEST_P(Timing, ReadLatencyBoundaryAt1024Bits) {
  auto cycles = [&](int width, const char* depth) {
    return run("network: n\nfifos: [{name: f, width: " + std::to_string(width) + ", depth: " + depth +
               "}]\ntasks:\n"
               "  - {name: a, phases: [{trip: [1], latency: 1, ports: [{fifo: f, dir: out}]}]}\n"
               "  - {name: b, phases: [{trip: [1], latency: 1, ports: [{fifo: f, dir: in}]}]}\n")
        .cycles;
  };
  EXPECT_EQ(cycles(512, "2"), 3);
  EXPECT_EQ(cycles(512, "3"), 4);
  EXPECT_EQ(cycles(1024, "1"), 3);
  EXPECT_EQ(cycles(1025, "1"), 4);
  EXPECT_EQ(cycles(8, "unbounded"), 4);
}

// Depth 1: the writer waits for each read (+1), the reader for each write (+1): tokens land at 1, 3, 5, 7
// and are read at 2, 4, 6, 8.
TEST_P(Timing, WriteAfterReadWithDepthOne) {
  sim::SimResult r = run(
      "network: n\nfifos: [{name: f, width: 32, depth: 1}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [4], ii: 1, latency: 1, ports: [{fifo: f, dir: out}]}]}\n"
      "  - {name: b, phases: [{trip: [4], ii: 1, latency: 1, ports: [{fifo: f, dir: in}]}]}\n");
  EXPECT_EQ(r.cycles, 9);
  EXPECT_EQ(task(r, "a").stallFull, 3);
  EXPECT_EQ(task(r, "b").stallEmpty, 3);
  EXPECT_EQ(fifo(r, "f").maxOccupancy, 1);
}

// Symbolic tripcounts bound at run time: ctx/4 + 1 tokens.
TEST_P(Timing, SymbolicTripcounts) {
  std::string text =
      "network: n\nfifos: [{name: f, width: 32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [ctx/4 + 1], ii: 1, latency: 1, ports: [{fifo: f, dir: out}]}]}\n"
      "  - {name: b, phases: [{trip: [ctx/4 + 1], ii: 1, latency: 1, ports: [{fifo: f, dir: in}]}]}\n";
  sim::SimResult r = simulateText(text, GetParam(), {{"ctx", 40}});
  EXPECT_EQ(r.cycles, 1 + 11 + 1);  // a writes j at 1 + j, b reads at 2 + j, 11 tokens
}

// A producer p makes one token of f every 10 cycles (writes at 1, 11, 21, 31); c reads one per outer
// iteration of its nest [4, 2] (ii 1, latency 6) and writes g every iteration; the sink reads g every 4
// cycles (depth 2). One pipeline (outer 0): iteration t = 2h + i starts at local t, so f3's read (local 6)
// shares its stage group with g0's write, which waits for f3 (ready at 32): g0..g7 go at 32, 33, 34,
// then 38, 42, 46, 50, 54 as the sink frees room (it reads at 33, 37, ..., 61; 62 cycles). Drained per
// outer iteration (outer 1): an outer iteration lasts a cycle to enter the pipelined loop, (2 - 1) + 6 + 1
// = 8 in it and a cycle to leave it, so iteration (h, i) starts at local 10h + 1 + i: f_h is read at local
// 10h + 1 and is ready at 10h + 2 (c starts a cycle late, then meets each f as it comes: no stall), and
// head h's writes go before head h + 1's read: g at 8, 9, 18, 19, 28, 29, 38, 39, read at 9, 13, 19, 23,
// 29, 33, 39, 43 (44 cycles).
std::string heldByTheNextRead(int outer) {
  return "network: n\nfifos: [{name: f, width: 32}, {name: g, width: 32}]\ntasks:\n"
         "  - {name: p, phases: [{trip: [4], ii: 10, latency: 1, ports: [{fifo: f, dir: out}]}]}\n"
         "  - {name: c, phases: [{trip: [4, 2], ii: 1, latency: 6, outer: " +
         std::to_string(outer) +
         ", ports: [{fifo: f, dir: in, level: 0}, {fifo: g, dir: out}]}]}\n"
         "  - {name: s, phases: [{trip: [8], ii: 4, latency: 0, ports: [{fifo: g, dir: in}]}]}\n";
}

TEST_P(Timing, APipelineDrainedPerOuterIterationWritesBeforeTheNextRead) {
  sim::SimResult flat = run(heldByTheNextRead(0));
  EXPECT_EQ(flat.cycles, 62);
  EXPECT_EQ(task(flat, "c").stallEmpty, 3 * 8);
  EXPECT_EQ(task(flat, "c").stallFull, 5 * 3);
  sim::SimResult drained = run(heldByTheNextRead(1));
  EXPECT_EQ(drained.cycles, 44);
  EXPECT_EQ(task(drained, "c").start, 1);
  EXPECT_EQ(task(drained, "c").stallEmpty, 0);
  EXPECT_EQ(task(drained, "c").stallFull, 0);
  EXPECT_EQ(task(drained, "c").end, 40);
  EXPECT_EQ(drained.events, flat.events);
}

// A task alone, nest [3, 2], ii 1, latency 2, writing g (unbounded, read 2 cycles after its write) each
// iteration; the sink reads g as it comes. One pipeline: write t at t + 2, the last at 7, read at 9: 10
// cycles. Drained per outer iteration: each lasts 1 + ((2 - 1) + 2 + 1) + 1 = 6 cycles, iteration (h, i)
// starts at 6h + 1 + i and writes at 6h + 3 + i, the last at 16, read at 18: 19 cycles (14 without the
// cycles that enter and leave the pipelined loop).
TEST_P(Timing, AnOuterIterationTakesACycleToEnterItsPipelineAndOneToLeaveIt) {
  auto text = [](int outer) {
    return "network: n\nfifos: [{name: g, width: 32, depth: unbounded}]\ntasks:\n"
           "  - {name: c, phases: [{trip: [3, 2], ii: 1, latency: 2, outer: " +
           std::to_string(outer) +
           ", ports: [{fifo: g, dir: out}]}]}\n"
           "  - {name: s, phases: [{trip: [6], ii: 1, latency: 0, ports: [{fifo: g, dir: in}]}]}\n";
  };
  sim::SimResult flat = run(text(0)), drained = run(text(1));
  EXPECT_EQ(flat.cycles, 10);
  EXPECT_EQ(drained.cycles, 19);
  EXPECT_EQ(task(drained, "c").end, 17);
  EXPECT_EQ(task(drained, "s").stallEmpty, 2 * (6 - 2));  // the sink waits 4 cycles at each next head
}

// A triangular nest: run i0 of c's pipeline makes i0 + 1 iterations, (i0 + 1 - 1) * 1 + 2 + 1 cycles and one
// to enter and leave it, so its runs start at 0, 5, 11 and 18; iteration j of run r writes at
// origin + 1 + j + 2. The sink reads a token a cycle after its write (32 bits x 16 <= 1024: a shift
// register), one a cycle at most: reads at 4, 9, 10, 15, 16, 17, 22, 23, 24, 25; the network's latency 26.
TEST_P(Timing, ATriangularNestRunsEachOuterIterationItsOwnLength) {
  const std::string text =
      "network: n\nfifos: [{name: g, width: 32, depth: 16}]\ntasks:\n"
      "  - {name: c, phases: [{trip: [4, \"i0 + 1\"], ii: 1, latency: 2, outer: 1, ports: [{fifo: g, dir: "
      "out}]}]}\n"
      "  - {name: s, phases: [{trip: [10], ii: 1, latency: 1, ports: [{fifo: g, dir: in}]}]}\n";
  sim::RunConfig config;
  config.recordCurves = true;
  sim::SimResult r = simulateText(text, GetParam(), {}, config);
  auto times = [](const std::vector<sim::TimeRun>& runs) {
    std::vector<int64_t> out;
    for (const auto& run : runs)
      for (int64_t k = 0; k < run.count; ++k) out.push_back(run.start + k * run.stride);
    return out;
  };
  EXPECT_EQ(times(fifo(r, "g").writeTimes), (std::vector<int64_t>{3, 8, 9, 14, 15, 16, 21, 22, 23, 24}));
  EXPECT_EQ(times(fifo(r, "g").readTimes), (std::vector<int64_t>{4, 9, 10, 15, 16, 17, 22, 23, 24, 25}));
  EXPECT_EQ(r.cycles, 26);
  EXPECT_EQ(task(r, "c").end, 25);  // its last run's exit cycle: 18 + 1 + 3 + 2 + 1
}

// The trips of a triangular nest are checked at every run, and an index names a loop outside the pipeline
// around the loop whose trip uses it; other symbols are the run's.
TEST(TriangularNests, AreCheckedRunByRun) {
  auto verify = [](const std::string& trip, int outer, const Bindings& b = {}) {
    Network net = parseNetwork(
        "network: n\nfifos: [{name: g, width: 32}]\ntasks:\n"
        "  - {name: c, phases: [{trip: " +
            trip + ", outer: " + std::to_string(outer) +
            ", ports: [{fifo: g, dir: out, level: -1}]}]}\n"
            "  - {name: s, phases: [{trip: [1], ports: [{fifo: g, dir: in}]}]}\n",
        "t.yaml");
    return verifyNetwork(net, b).str();
  };
  EXPECT_EQ(verify("[4, \"i0 + 1\"]", 1), "");
  EXPECT_EQ(verify("[4, \"3 - i0\"]", 1),
            "t.yaml:4:24: error: field 'trip': tripcount '3 - i0' is 0 at i0 = 3, must be at least 1");
  // Without a loop outside the pipeline, or of a loop in it, iK is a symbol the run binds.
  auto symbols = [](const std::string& trip, int outer) {
    return parseNetwork(
               "network: n\nfifos: [{name: g, width: 32}]\ntasks:\n"
               "  - {name: c, phases: [{trip: " +
                   trip + ", outer: " + std::to_string(outer) +
                   ", ports: [{fifo: g, dir: out, level: -1}]}]}\n"
                   "  - {name: s, phases: [{trip: [1], ports: [{fifo: g, dir: in}]}]}\n",
               "t.yaml")
        .symbols();
  };
  EXPECT_EQ(symbols("[4, \"i0 + 1\"]", 0), (std::set<std::string>{"i0"}));
  EXPECT_EQ(symbols("[4, 2, \"i0 + i1 + 1\"]", 1), (std::set<std::string>{"i1"}));
  EXPECT_EQ(symbols("[4, \"i0 + 1\", \"i0 + i1\"]", 2), (std::set<std::string>{}));
  EXPECT_EQ(verify("[4, 2, \"i0 + i1 + ctx\"]", 2, {{"ctx", 1}}), "");
  Network net = parseNetwork(
      "network: n\nfifos: [{name: g, width: 32}]\ntasks:\n"
      "  - {name: c, phases: [{trip: [\"ctx\", \"i0 + 1\"], outer: 1, ports: [{fifo: g, dir: out}]}]}\n"
      "  - {name: s, phases: [{trip: [\"ctx * (ctx + 1) / 2\"], ports: [{fifo: g, dir: in}]}]}\n",
      "t.yaml");
  EXPECT_EQ(net.symbols(), (std::set<std::string>{"ctx"}));
  EXPECT_EQ(portTokens(net.tasks[0].phases[0], net.tasks[0].phases[0].ports[0], {{"ctx", 7}}), 28);
  EXPECT_EQ(verifyNetwork(net).str(), "");  // the sums agree at the samples of ctx
}

INSTANTIATE_TEST_SUITE_P(Schedulers, Timing, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "SystemC" : "Direct"; });

}  // namespace
}  // namespace stc::testing
