// The fork_join network of DESIGN.md: it deadlocks with the wait-for cycle A, C, B, and finishes once
// its short path a_c holds 62 tokens. Derivation: C reads a_c token 0, then waits for b_c token 0, which
// B writes only after reading all 64 tokens of a_b; A writes a_b token 63 after a_c token 62, and that
// write needs read 62 - d of a_c, where only read 0 has happened: d >= 62.
#include <gtest/gtest.h>

#include "sim/report.h"
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
  EXPECT_TRUE(simulateText(forkJoin(61), GetParam()).deadlock);
  sim::SimResult ok = simulateText(forkJoin(62), GetParam());
  EXPECT_FALSE(ok.deadlock);
  EXPECT_EQ(ok.cycles, simulateText(readTextFile(STC_SOURCE_DIR "/models/networks/fork_join_fixed.yaml")).cycles);
}

TEST_P(Deadlock, FixSearchFindsDepth62) {
  Network net = parseNetwork(forkJoin(2), "fj.yaml");
  sim::Program prog = sim::compileProgram(net, {});
  sim::SimResult r = GetParam() ? sim::runSystemC(prog, {}) : sim::runDirect(prog, {});
  sim::DepthFix fix = sim::findDepthFix(prog, r);
  ASSERT_GE(fix.fifo, 0);
  EXPECT_EQ(r.fifos[static_cast<size_t>(fix.fifo)].name, "a_c");
  EXPECT_EQ(fix.from, 2);
  EXPECT_EQ(fix.to, 62);
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
