#pragma once
// Random networks for cross-checks of the simulator and the FIFO sizer.

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace stc::testing {

// Tasks in a row; FIFOs between random pairs (mostly forward, sometimes backward or from a task to itself,
// which may deadlock; with dag, only forward, so unbounded FIFOs never deadlock). A FIFO carries n, n/2 or
// 1 tokens; every phase is a nest [n/2, 2] or [n/2, 2, m], and a port advances at level 1 (n tokens), 0
// (n/2) or -1 (one per phase). So one local cycle often holds several reads, several writes, or both (a
// stage group), at ii 1 to 3 and latency 0 to 6; depths 1 to 5 or unbounded, widths 8 to 1024 bits. With
// deep > 0, half the bounded FIFOs are deep instead: deep / 4 to deep tokens, which a writer that runs
// ahead fills over many periods. With outer, a phase's first loop (or first two of three) runs outside
// its pipeline half the time (outer: 1 or 2), and its latency may reach 12, past an outer iteration's
// length. With triangular, every phase runs its first loop (or first two) outside its pipeline and the
// loops inside it take trips over their indices: [n/2, "1 + i0 % 3"] or [n/2, "1 + i0 % 3", "1 + (i0 + i1) %
// m"], so each run's nest has a length of its own (a FIFO of level 1 then carries the sum of the second
// loop's trips).
inline std::string randomNetwork(std::mt19937& rng, int n, bool dag = false, int deep = 0, bool outer = false,
                                 bool triangular = false) {
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
    if (a == b && (dag || pick(0, 7) > 0)) b = (a + 1) % tasks;
    if ((dag || pick(0, 7) > 0) && a > b) std::swap(a, b);
    int depth = pick(0, 5);
    if (deep > 0 && depth > 0 && pick(0, 1) == 0) depth = pick(deep / 4, deep);
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
      int around = 0;  // loops outside the pipeline, of a triangular nest
      if (triangular) {
        around = pick(1, m > 0 ? 2 : 1);
        trip = std::to_string(n / 2) + ", \"1 + i0 % 3\"" +
               (m > 0 ? std::string(", \"1 + ") + (around == 2 ? "(i0 + i1)" : "i0") + " % " +
                            std::to_string(m) + "\""
                      : "");
      }
      std::shuffle(list.begin(), list.end(), rng);
      std::string joined;
      for (const auto& p : list) joined += (joined.empty() ? "" : ", ") + p;
      s += "      - {trip: [" + trip + "], ii: " + std::to_string(pick(1, 3)) +
           ", latency: " + std::to_string(pick(0, outer || triangular ? 12 : 6)) +
           (triangular            ? ", outer: " + std::to_string(around)
            : outer && pick(0, 1) ? ", outer: " + std::to_string(pick(1, m > 0 ? 2 : 1))
                                  : "") +
           ", ports: [" + joined + "]}\n";
    }
  }
  return s;
}

}  // namespace stc::testing
