// Random networks: the engine under both schedulers against the naive reference of reference.cpp, on
// cycles, deadlock, per-task end and stalls, and per-FIFO maximum occupancy.
#include <gtest/gtest.h>

#include <random>

#include "reference.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

// Tasks in a row; FIFOs between random pairs (mostly forward, sometimes backward, which may deadlock);
// every port moves n tokens: at level 0 of a [n, m] nest, or innermost of [n] or [n/2, 2].
std::string randomNetwork(std::mt19937& rng, int n) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int tasks = pick(2, 6), fifos = pick(1, 8);
  std::vector<std::vector<std::vector<std::string>>> ports(static_cast<size_t>(tasks));
  std::vector<int> phases(static_cast<size_t>(tasks));
  for (int t = 0; t < tasks; ++t) {
    phases[static_cast<size_t>(t)] = pick(1, 2);
    ports[static_cast<size_t>(t)].resize(static_cast<size_t>(phases[static_cast<size_t>(t)]));
  }
  std::string s = "network: random\nfifos:\n";
  for (int f = 0; f < fifos; ++f) {
    int a = pick(0, tasks - 1), b = pick(0, tasks - 1);
    if (a == b) b = (a + 1) % tasks;
    if (pick(0, 4) > 0 && a > b) std::swap(a, b);
    int depth = pick(0, 5);
    s += "  - {name: f" + std::to_string(f) + ", width: " + std::to_string(8 << pick(0, 7)) +
         ", depth: " + (depth == 0 ? std::string("unbounded") : std::to_string(depth)) + "}\n";
    ports[static_cast<size_t>(a)][static_cast<size_t>(pick(0, phases[static_cast<size_t>(a)] - 1))].push_back(
        "{fifo: f" + std::to_string(f) + ", dir: out");
    ports[static_cast<size_t>(b)][static_cast<size_t>(pick(0, phases[static_cast<size_t>(b)] - 1))].push_back(
        "{fifo: f" + std::to_string(f) + ", dir: in");
  }
  s += "tasks:\n";
  for (int t = 0; t < tasks; ++t) {
    s += "  - name: t" + std::to_string(t) + "\n    phases:\n";
    for (auto& list : ports[static_cast<size_t>(t)]) {
      int shape = pick(0, 2);
      std::string trip = shape == 0 ? std::to_string(n) + ", " + std::to_string(pick(1, 3))
                         : shape == 1 ? std::to_string(n)
                                      : std::to_string(n / 2) + ", 2";
      std::string level = shape == 0 ? ", level: 0}" : "}";
      std::shuffle(list.begin(), list.end(), rng);
      std::string joined;
      for (const auto& p : list) joined += (joined.empty() ? "" : ", ") + p + level;
      s += "      - {trip: [" + trip + "], ii: " + std::to_string(pick(1, 3)) + ", latency: " +
           std::to_string(pick(0, 6)) + ", ports: [" + joined + "]}\n";
    }
  }
  return s;
}

TEST(RandomNetworks, EngineMatchesReference) {
  std::mt19937 rng(20261122);
  int deadlocks = 0, finished = 0;
  for (int iter = 0; iter < 400; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(1, 12)(rng);
    std::string text = randomNetwork(rng, n);
    Network net = parseNetwork(text, "random.yaml");
    ReferenceResult want = referenceSimulate(net, {});
    for (bool systemc : {false, true}) {
      sim::SimResult got = simulateText(text, systemc);
      ASSERT_EQ(got.deadlock, want.deadlock) << text;
      (want.deadlock ? deadlocks : finished) += !systemc;
      if (want.deadlock) continue;
      ASSERT_EQ(got.cycles, want.cycles) << text;
      for (size_t t = 0; t < got.tasks.size(); ++t) {
        EXPECT_EQ(got.tasks[t].end, want.taskEnd[t]) << text;
        EXPECT_EQ(got.tasks[t].stallFull, want.stallFull[t]) << text;
        EXPECT_EQ(got.tasks[t].stallEmpty, want.stallEmpty[t]) << text;
      }
      for (size_t f = 0; f < got.fifos.size(); ++f) EXPECT_EQ(got.fifos[f].maxOccupancy, want.maxOccupancy[f]) << text;
    }
  }
  // The generator must exercise both outcomes.
  EXPECT_GT(deadlocks, 20);
  EXPECT_GT(finished, 100);
}

}  // namespace
}  // namespace stc::testing
