// Deadlocks under the stage-group rule of DESIGN.md (revision 2), derived by hand.
//
// The fork_join network: it deadlocks with the wait-for cycle A, C, B, and finishes once its short path
// a_c holds 64 tokens. C reads a_c and b_c in one stage, so it takes no token of a_c before b_c token 0,
// which B writes only after reading all 64 tokens of a_b. A writes a_b and a_c in one stage, so its write
// of a_b token 63 waits for room in a_c for token 63, which needs read 63 - d of a_c: none has happened,
// so d >= 64. (Revision 1, firing C's read of a_c alone, needed 62.)
#include <gtest/gtest.h>

#include "sim/report.h"
#include "sim/run_queue.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

std::string forkJoin(int depthAc) {
  std::string text = readTextFile(STC_SOURCE_DIR "/models/networks/fork_join.yaml");
  std::string from = "{name: a_c, width: 32, depth: 2}";
  text.replace(text.find(from), from.size(), "{name: a_c, width: 32, depth: " + std::to_string(depthAc) + "}");
  return text;
}

class Deadlock : public ::testing::TestWithParam<bool> {};

TEST_P(Deadlock, ForkJoinCycleIsACB) {
  sim::SimResult r = simulateText(forkJoin(2), GetParam());
  ASSERT_TRUE(r.deadlock);
  ASSERT_EQ(r.deadlockCycle.size(), 3u);
  const char* names[] = {"A", "C", "B"};
  const char* fifos[] = {"a_c", "b_c", "a_b"};
  bool writes[] = {true, false, false};
  int64_t occupancy[] = {2, 0, 0};
  for (size_t k = 0; k < 3; ++k) {
    const sim::WaitEdge& e = r.deadlockCycle[k];
    EXPECT_EQ(r.tasks[static_cast<size_t>(e.task)].name, names[k]);
    EXPECT_EQ(r.fifos[static_cast<size_t>(e.fifo)].name, fifos[k]);
    EXPECT_EQ(e.write, writes[k]);
    EXPECT_EQ(e.occupancy, occupancy[k]);
    EXPECT_EQ(e.depth, 2);
  }
}

TEST_P(Deadlock, ExactlyTheSmallestDepthPasses) {
  EXPECT_TRUE(simulateText(forkJoin(62), GetParam()).deadlock);
  EXPECT_TRUE(simulateText(forkJoin(63), GetParam()).deadlock);
  sim::SimResult ok = simulateText(forkJoin(64), GetParam());
  EXPECT_FALSE(ok.deadlock);
  EXPECT_EQ(ok.cycles, simulateText(readTextFile(STC_SOURCE_DIR "/models/networks/fork_join_fixed.yaml")).cycles);
}

TEST_P(Deadlock, FixSearchFindsDepth64) {
  Network net = parseNetwork(forkJoin(2), "fj.yaml");
  sim::Program prog = sim::compileProgram(net, {});
  sim::SimResult r = GetParam() ? sim::runSystemC(prog, {}) : sim::runDirect(prog, {});
  sim::DepthFix fix = sim::findDepthFix(prog, r);
  ASSERT_GE(fix.fifo, 0);
  EXPECT_EQ(r.fifos[static_cast<size_t>(fix.fifo)].name, "a_c");
  EXPECT_EQ(fix.from, 2);
  EXPECT_EQ(fix.to, 64);
  EXPECT_EQ(fix.cyclesAfter, 134);
}

// P writes x (4 tokens) and then y (4 tokens); C reads x and y in one stage. With x 3 deep, P's write of
// x token 3 needs C's read of x token 0, which fires only with y token 0, which P writes after x token 3:
// a deadlock. Revision 1 let C take x token 0 alone and finished. With x 4 deep nothing waits on room:
// P writes x at 1..4 and y at 6..9 (its second phase starts at local 3 + 1 + 1 = 5); C's group k is
// ready when y token k is (raw 1): 7 + k, so C starts at 7 and the run takes 11 cycles.
std::string readPair(int depthX) {
  return "network: pair\nfifos: [{name: x, width: 32, depth: " + std::to_string(depthX) +
         "}, {name: y, width: 32}]\ntasks:\n"
         "  - {name: P, phases: [{trip: [4], latency: 1, ports: [{fifo: x, dir: out}]},\n"
         "                       {trip: [4], latency: 1, ports: [{fifo: y, dir: out}]}]}\n"
         "  - {name: C, phases: [{trip: [4], latency: 1, ports: [{fifo: x, dir: in}, {fifo: y, dir: in}]}]}\n";
}

TEST_P(Deadlock, AStageReadsTwoFifosTogether) {
  sim::SimResult r = simulateText(readPair(3), GetParam());
  ASSERT_TRUE(r.deadlock);
  EXPECT_EQ(r.events, 3);  // x tokens 0 to 2; C consumed nothing
  EXPECT_EQ(fifo(r, "x").maxOccupancy, 3);
  ASSERT_EQ(r.deadlockCycle.size(), 2u);
  EXPECT_EQ(r.deadlockCycle[0].task, 0);
  EXPECT_EQ(r.fifos[static_cast<size_t>(r.deadlockCycle[0].fifo)].name, "x");
  EXPECT_TRUE(r.deadlockCycle[0].write);
  EXPECT_EQ(r.deadlockCycle[0].occupancy, 3);
  EXPECT_EQ(r.deadlockCycle[1].task, 1);
  EXPECT_EQ(r.fifos[static_cast<size_t>(r.deadlockCycle[1].fifo)].name, "y");
  EXPECT_FALSE(r.deadlockCycle[1].write);
  ASSERT_EQ(task(r, "C").waits.size(), 1u);  // its read of x is ready; only y holds the group
  sim::SimResult ok = simulateText(readPair(4), GetParam());
  ASSERT_FALSE(ok.deadlock);
  EXPECT_EQ(ok.cycles, 11);
  EXPECT_EQ(task(ok, "C").start, 7);
  EXPECT_EQ(task(ok, "C").stallEmpty, 0);
  EXPECT_EQ(task(ok, "P").stallFull, 0);
  Network net = parseNetwork(readPair(3), "pair.yaml");
  sim::Program prog = sim::compileProgram(net, {});
  sim::DepthFix fix = sim::findDepthFix(prog, r);
  EXPECT_EQ(fix.fifo, 0);
  EXPECT_EQ(fix.to, 4);
  EXPECT_EQ(fix.cyclesAfter, 11);
}

// W writes a and b in one stage (ii 1, latency 1: local k + 1); Ra reads a at ii 1, Rb reads b at ii 3;
// both 2 deep (raw 1). W's group k needs room in both: W_k = max(W_k-1 + 1, Ra_k-2 + 1, Rb_k-2 + 1).
// Rb_k = 2 + 3k, so from k = 3 on W_k = Rb_k-2 + 1 = 3k - 3: a is written at 1, 2, 3, 6, 9, ..., 18 at
// b's pace, although Ra would take it at once, and Ra reads it at W_k + 1. W stalls 2 cycles on each of
// groups 3 to 7 (10, FULL), Ra as much (EMPTY); Rb reads its last token at 23: 24 cycles.
TEST_P(Deadlock, AStageWritesTwoFifosTogether) {
  sim::RunConfig curves;
  curves.recordCurves = true;
  sim::SimResult r = simulateText(
      "network: fanout\nfifos: [{name: a, width: 32}, {name: b, width: 32}]\ntasks:\n"
      "  - {name: W, phases: [{trip: [8], latency: 1, ports: [{fifo: a, dir: out}, {fifo: b, dir: out}]}]}\n"
      "  - {name: Ra, phases: [{trip: [8], latency: 1, ports: [{fifo: a, dir: in}]}]}\n"
      "  - {name: Rb, phases: [{trip: [8], ii: 3, latency: 1, ports: [{fifo: b, dir: in}]}]}\n",
      GetParam(), {}, curves);
  ASSERT_FALSE(r.deadlock);
  EXPECT_EQ(r.cycles, 24);
  EXPECT_EQ(task(r, "W").stallFull, 10);
  EXPECT_EQ(task(r, "W").end, 19);
  EXPECT_EQ(task(r, "Ra").stallEmpty, 10);
  EXPECT_EQ(task(r, "Ra").end, 20);
  EXPECT_EQ(task(r, "Rb").stallEmpty + task(r, "Rb").stallFull, 0);
  sim::RunLog writes;
  for (const auto& run : fifo(r, "a").writeTimes)
    for (int64_t k = 0; k < run.count; ++k) writes.push(run.start + k * run.stride);
  EXPECT_EQ(writes.times(), (std::vector<int64_t>{1, 2, 3, 6, 9, 12, 15, 18}));
}

// C's group has two events that are not ready, and B, outside the cycle A, C, is blocked too.
TEST_P(Deadlock, EveryEventNotReadyIsReported) {
  sim::SimResult r = simulateText(kStarDeadlock, GetParam());
  ASSERT_TRUE(r.deadlock);
  ASSERT_EQ(r.deadlockCycle.size(), 2u);
  EXPECT_EQ(r.deadlockCycle[0].task, 0);  // A waits to read c1
  EXPECT_EQ(r.deadlockCycle[1].task, 2);  // C waits to read u (and v)
  ASSERT_EQ(task(r, "C").waits.size(), 2u);
  EXPECT_EQ(r.fifos[static_cast<size_t>(task(r, "C").waits[1].fifo)].name, "v");
  ASSERT_EQ(task(r, "B").waits.size(), 1u);
  EXPECT_EQ(r.fifos[static_cast<size_t>(task(r, "B").waits[0].fifo)].name, "c2");
}

// A writes x1, x2 and y in one stage (16 times); C reads all of y, then x1 and x2 together. A's third
// group needs room in x1 and x2 (depth 2) while C waits for y: deepening x1 alone leaves x2 full, so no
// single change helps; together each must hold all 16 tokens (group k needs k < depth, up to k = 15,
// before C reads any), and 15 in either deadlocks.
TEST_P(Deadlock, TwoFifosMustGrowTogether) {
  std::string text =
      "network: pair\nfifos: [{name: x1, width: 32}, {name: x2, width: 32}, {name: y, width: 32}]\ntasks:\n"
      "  - {name: A, phases: [{trip: [16], ports: [{fifo: x1, dir: out}, {fifo: x2, dir: out}, "
      "{fifo: y, dir: out}]}]}\n"
      "  - {name: C, phases: [{trip: [16], ports: [{fifo: y, dir: in}]}, {trip: [16], ports: [{fifo: x1, "
      "dir: in}, "
      "{fifo: x2, dir: in}]}]}\n";
  sim::SimResult r = simulateText(text, GetParam());
  ASSERT_TRUE(r.deadlock);
  Network net = parseNetwork(text, "pair.yaml");
  sim::Program prog = sim::compileProgram(net, {});
  sim::DepthFix fix = sim::findDepthFix(prog, r);
  EXPECT_EQ(fix.fifo, -1);
  ASSERT_EQ(fix.together.size(), 2u);
  EXPECT_EQ(r.fifos[static_cast<size_t>(fix.together[0].fifo)].name, "x1");
  EXPECT_EQ(r.fifos[static_cast<size_t>(fix.together[1].fifo)].name, "x2");
  EXPECT_EQ(fix.together[0].from, 2);
  EXPECT_EQ(fix.together[0].to, 16);
  EXPECT_EQ(fix.together[1].to, 16);
  auto run = [&](int64_t x1, int64_t x2) {
    sim::RunConfig c;
    c.depths = {x1, x2, 2};
    return sim::runDirect(prog, c);
  };
  sim::SimResult fixed = run(16, 16);
  EXPECT_FALSE(fixed.deadlock);
  EXPECT_EQ(fix.cyclesAfter, fixed.cycles);
  EXPECT_TRUE(run(15, 16).deadlock);
  EXPECT_TRUE(run(16, 15).deadlock);
  EXPECT_TRUE(run(1000, 2).deadlock);
}

// A cycle with no initial tokens cannot be broken by any depth.
TEST_P(Deadlock, TrueDeadlockHasNoFix) {
  std::string text =
      "network: loop\nfifos: [{name: x, width: 8}, {name: y, width: 8}]\ntasks:\n"
      "  - {name: p, phases: [{trip: [4], ports: [{fifo: y, dir: in}, {fifo: x, dir: out}]}]}\n"
      "  - {name: q, phases: [{trip: [4], ports: [{fifo: x, dir: in}, {fifo: y, dir: out}]}]}\n";
  sim::SimResult r = simulateText(text, GetParam());
  ASSERT_TRUE(r.deadlock);
  EXPECT_EQ(r.events, 0);
  EXPECT_EQ(r.deadlockCycle.size(), 2u);
  Network net = parseNetwork(text, "loop.yaml");
  sim::Program prog = sim::compileProgram(net, {});
  EXPECT_EQ(sim::findDepthFix(prog, r).fifo, -1);
}

INSTANTIATE_TEST_SUITE_P(Schedulers, Deadlock, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "SystemC" : "Direct"; });

}  // namespace
}  // namespace stc::testing
