// FIFO sizing speed: the LP alone on 1,000 FIFOs, and the whole sizing (measuring run, LP, verifying
// runs) against one simulation of the same network. Network: 1,000 FIFOs in a row of pipelined tasks
// with a fork every tenth task whose short path rejoins ten tasks later (reconvergent paths), 2,000
// tokens per FIFO. And the whole sizing of a chain of 40 tasks with 25 million tokens per FIFO (2 * 10^9
// I/O events), whose middle stage takes a token every 2 cycles, so that in the measuring run (FIFOs
// unbounded) the FIFOs in front of it fill to half their tokens. Run: build/bench/sizing_bench
#include <benchmark/benchmark.h>

#include "compiler/ir/yaml_io.h"
#include "compiler/sizing/fifo_sizing.h"
#include "compiler/sizing/lp_solver.h"
#include "sim/engine.h"

namespace {

constexpr int kFifos = 1000;
constexpr int kTokens = 2000;

stc::Network network() {
  // Tasks t0..tN; a main FIFO m_k from t_k to t_k+1; every tenth task also sends s_k to t_k+10.
  std::vector<std::vector<std::string>> ports;
  std::string fifos;
  int tasks = 1, count = 0;
  ports.emplace_back();
  for (int k = 0; count < kFifos; ++k) {
    ports.emplace_back();
    ++tasks;
    fifos += "  - {name: m" + std::to_string(k) + ", width: 64}\n";
    ports[static_cast<size_t>(k)].push_back("{fifo: m" + std::to_string(k) + ", dir: out}");
    ports[static_cast<size_t>(k + 1)].push_back("{fifo: m" + std::to_string(k) + ", dir: in}");
    ++count;
    if (k % 10 == 0 && count < kFifos && k >= 10) {
      fifos += "  - {name: s" + std::to_string(k) + ", width: 32, depth: unbounded}\n";
      ports[static_cast<size_t>(k - 10)].push_back("{fifo: s" + std::to_string(k) + ", dir: out}");
      ports[static_cast<size_t>(k)].push_back("{fifo: s" + std::to_string(k) + ", dir: in}");
      ++count;
    }
  }
  std::string s = "network: reconverging\nfifos:\n" + fifos + "tasks:\n";
  for (int t = 0; t < tasks; ++t) {
    std::string joined;
    for (const auto& p : ports[static_cast<size_t>(t)]) joined += (joined.empty() ? "" : ", ") + p;
    s += "  - {name: t" + std::to_string(t) + ", phases: [{trip: [" + std::to_string(kTokens) +
         "], ii: 1, latency: " + std::to_string(2 + t % 5) + ", ports: [" + joined + "]}]}\n";
  }
  return stc::parseNetwork(s, "reconverging");
}

void BM_Simulate(benchmark::State& state) {
  stc::Network net = network();
  stc::sim::Program prog = stc::sim::compileProgram(net, {});
  for (auto _ : state) benchmark::DoNotOptimize(stc::sim::runDirect(prog, {}).cycles);
}

void BM_SizeFifos(benchmark::State& state) {
  stc::Network net = network();
  double lp = 0, rounds = 0, bits = 0, baseline = 0;
  for (auto _ : state) {
    stc::Network sized;
    stc::sizing::SizingResult r = stc::sizing::sizeFifos(net, {}, sized);
    lp = r.lpSeconds;
    rounds = r.rounds;
    bits = static_cast<double>(r.totalBits);
    baseline = static_cast<double>(r.baselineMaxOccupancyBits);
  }
  state.counters["lp_seconds"] = lp;
  state.counters["rounds"] = rounds;
  state.counters["bits_vs_max_occupancy"] = bits / baseline;
}

// src, stages s1..s39 (s20 at ii 2), dst; FIFOs f0..f39 of 32 bits at depth 2.
stc::Network longChain() {
  const std::string trip = "trip: [25000000]";
  std::string s = "network: long_chain\nfifos:\n";
  for (int i = 0; i < 40; ++i) s += "  - {name: f" + std::to_string(i) + ", width: 32, depth: 2}\n";
  s += "tasks:\n  - {name: src, phases: [{" + trip + ", latency: 3, ports: [{fifo: f0, dir: out}]}]}\n";
  for (int i = 1; i < 40; ++i)
    s += "  - {name: s" + std::to_string(i) + ", phases: [{" + trip + ", ii: " + (i == 20 ? "2" : "1") +
         ", latency: 5, ports: [{fifo: f" + std::to_string(i - 1) + ", dir: in}, {fifo: f" +
         std::to_string(i) + ", dir: out}]}]}\n";
  s += "  - {name: dst, phases: [{" + trip + ", ports: [{fifo: f39, dir: in}]}]}\n";
  return stc::parseNetwork(s, "long_chain");
}

void BM_SizeChainOfTwoBillionEvents(benchmark::State& state) {
  stc::Network net = longChain();
  double cycles = 0;
  for (auto _ : state) {
    stc::Network sized;
    cycles = static_cast<double>(stc::sizing::sizeFifos(net, {}, sized).cyclesSized);
  }
  state.counters["cycles"] = cycles;
}

void BM_Lp1000(benchmark::State& state) {
  stc::sizing::DifferenceProblem p;
  p.variables = kFifos + 1;
  for (int k = 0; k < kFifos; ++k) p.edges.push_back({k, k + 1, static_cast<double>(k % 7), 1.0 + k % 3});
  for (int k = 0; k + 10 <= kFifos; k += 10) p.edges.push_back({k, k + 10, 1, 2});
  for (auto _ : state) benchmark::DoNotOptimize(stc::sizing::solveDifferenceProblem(p).objective);
}

}  // namespace

BENCHMARK(BM_Lp1000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Simulate)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SizeFifos)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SizeChainOfTwoBillionEvents)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

BENCHMARK_MAIN();
