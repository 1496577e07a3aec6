// Random networks: the engine under both schedulers against the naive reference of reference.cpp, on
// cycles, deadlock, per-task end and stalls, per-FIFO maximum occupancy and stalls and, on deadlock, every
// blocked stage group's events that are not ready and the wait-for cycle.
#include <gtest/gtest.h>

#include <random>

#include "random_networks.h"
#include "reference.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

// "t2 w f0; t0 r f3; ": a list of blocked accesses, from the engine (sim::WaitEdge) or the reference.
template <typename Wait>
std::string describe(const std::vector<Wait>& edges) {
  std::string s;
  for (const auto& e : edges) s += "t" + std::to_string(e.task) + (e.write ? " w f" : " r f") + std::to_string(e.fifo) + "; ";
  return s;
}

struct Outcomes {
  int deadlocks = 0, finished = 0, groupWaits = 0;
};

// `count` random networks (randomNetwork with `outer`, `triangular`) under both schedulers against the
// reference.
void compareWithReference(uint32_t seed, int count, bool outer, Outcomes& o, bool triangular = false) {
  std::mt19937 rng(seed);
  int& deadlocks = o.deadlocks;
  int& finished = o.finished;
  int& groupWaits = o.groupWaits;
  for (int iter = 0; iter < count; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(1, 12)(rng);
    std::string text = randomNetwork(rng, n, false, 0, outer, triangular);
    Network net = parseNetwork(text, "random.yaml");
    ReferenceResult want = referenceSimulate(net, {});
    for (bool systemc : {false, true}) {
      sim::SimResult got = simulateText(text, systemc);
      ASSERT_EQ(got.deadlock, want.deadlock) << text;
      if (!systemc) (want.deadlock ? deadlocks : finished) += 1;
      ASSERT_EQ(got.cycles, want.cycles) << text;
      for (size_t t = 0; t < got.tasks.size(); ++t) {
        EXPECT_EQ(got.tasks[t].end, want.taskEnd[t]) << text;
        EXPECT_EQ(got.tasks[t].stallFull, want.stallFull[t]) << text;
        EXPECT_EQ(got.tasks[t].stallEmpty, want.stallEmpty[t]) << text;
        EXPECT_EQ(describe(got.tasks[t].waits), describe(want.waits[t])) << text;
        if (!systemc && want.waits[t].size() > 1) ++groupWaits;
      }
      for (size_t f = 0; f < got.fifos.size(); ++f) {
        EXPECT_EQ(got.fifos[f].maxOccupancy, want.maxOccupancy[f]) << text;
        EXPECT_EQ(got.fifos[f].stallFull, want.fifoStallFull[f]) << text;
        EXPECT_EQ(got.fifos[f].stallEmpty, want.fifoStallEmpty[f]) << text;
      }
      EXPECT_EQ(describe(got.deadlockCycle), describe(want.cycle)) << text;
      EXPECT_EQ(want.cycle.empty(), !want.deadlock) << text;
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(RandomNetworks, EngineMatchesReference) {
  Outcomes o;
  compareWithReference(20261123, 1000, false, o);
  // The generator must exercise both outcomes, and groups blocked on more than one event.
  EXPECT_GT(o.deadlocks, 300);
  EXPECT_GT(o.finished, 300);
  EXPECT_GT(o.groupWaits, 200);
}

// Phases whose first loop runs outside the pipeline (outer: 1), with latencies past an outer iteration.
TEST(RandomNetworks, PipelinesDrainedPerOuterIterationMatchReference) {
  Outcomes o;
  compareWithReference(20261206, 600, true, o);
  EXPECT_GT(o.deadlocks, 150);
  EXPECT_GT(o.finished, 150);
  EXPECT_GT(o.groupWaits, 100);
}

// Triangular nests: the loops inside a phase's outer ones take trips over their indices ("1 + i0 % 3"), so
// that each run of its pipeline has a length of its own.
TEST(RandomNetworks, TriangularNestsMatchReference) {
  Outcomes o;
  compareWithReference(20261207, 600, false, o, true);
  EXPECT_GT(o.deadlocks, 150);
  EXPECT_GT(o.finished, 150);
  EXPECT_GT(o.groupWaits, 100);
}

}  // namespace
}  // namespace stc::testing
