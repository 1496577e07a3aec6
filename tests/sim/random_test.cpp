// Random networks: the engine under both schedulers against the naive reference of reference.cpp, on
// cycles, deadlock, per-task end and stalls, per-FIFO maximum occupancy and, on deadlock, every blocked
// stage group's events that are not ready and the wait-for cycle.
#include <gtest/gtest.h>

#include <random>

#include "reference.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

// Tasks in a row; FIFOs between random pairs (mostly forward, sometimes backward or from a task to itself,
// which may deadlock). A FIFO carries n, n/2 or 1 tokens; every phase is a nest [n/2, 2] or [n/2, 2, m],
// and a port advances at level 1 (n tokens), 0 (n/2) or -1 (one per phase). So one local cycle often holds
// several reads, several writes, or both (a stage group), at ii 1 to 3 and latency 0 to 6.
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
    if (a == b && pick(0, 7) > 0) b = (a + 1) % tasks;
    if (pick(0, 7) > 0 && a > b) std::swap(a, b);
    int depth = pick(0, 5);
    int kind = pick(0, 5);
    std::string level = kind < 4 ? "1" : kind == 4 ? "0" : "-1";
    s += "  - {name: f" + std::to_string(f) + ", width: " + std::to_string(8 << pick(0, 7)) +
         ", depth: " + (depth == 0 ? std::string("unbounded") : std::to_string(depth)) + "}\n";
    std::string port = "{fifo: f" + std::to_string(f) + ", level: " + level;
    int pa = pick(0, phases[static_cast<size_t>(a)] - 1), pb = pick(0, phases[static_cast<size_t>(b)] - 1);
    ports[static_cast<size_t>(a)][static_cast<size_t>(pa)].push_back(port + ", dir: out}");
    ports[static_cast<size_t>(b)][static_cast<size_t>(pb)].push_back(port + ", dir: in}");
  }
  s += "tasks:\n";
  for (int t = 0; t < tasks; ++t) {
    s += "  - name: t" + std::to_string(t) + "\n    phases:\n";
    for (auto& list : ports[static_cast<size_t>(t)]) {
      int m = pick(0, 3);
      std::string trip = std::to_string(n / 2) + ", 2" + (m > 0 ? ", " + std::to_string(m) : "");
      std::shuffle(list.begin(), list.end(), rng);
      std::string joined;
      for (const auto& p : list) joined += (joined.empty() ? "" : ", ") + p;
      s += "      - {trip: [" + trip + "], ii: " + std::to_string(pick(1, 3)) + ", latency: " +
           std::to_string(pick(0, 6)) + ", ports: [" + joined + "]}\n";
    }
  }
  return s;
}

std::string describe(const std::vector<sim::WaitEdge>& edges) {
  std::string s;
  for (const auto& e : edges) s += "t" + std::to_string(e.task) + (e.write ? " w f" : " r f") + std::to_string(e.fifo) + "; ";
  return s;
}

std::string describe(const std::vector<ReferenceWait>& edges) {
  std::string s;
  for (const auto& e : edges) s += "t" + std::to_string(e.task) + (e.write ? " w f" : " r f") + std::to_string(e.fifo) + "; ";
  return s;
}

TEST(RandomNetworks, EngineMatchesReference) {
  std::mt19937 rng(20261123);
  int deadlocks = 0, finished = 0, groupWaits = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(1, 12)(rng);
    std::string text = randomNetwork(rng, n);
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
      for (size_t f = 0; f < got.fifos.size(); ++f) EXPECT_EQ(got.fifos[f].maxOccupancy, want.maxOccupancy[f]) << text;
      EXPECT_EQ(describe(got.deadlockCycle), describe(want.cycle)) << text;
      EXPECT_EQ(want.cycle.empty(), !want.deadlock) << text;
    }
  }
  // The generator must exercise both outcomes, and groups blocked on more than one event.
  EXPECT_GT(deadlocks, 300);
  EXPECT_GT(finished, 300);
  EXPECT_GT(groupWaits, 200);
}

}  // namespace
}  // namespace stc::testing
