// Simulator throughput: I/O events per second on a chain of 40 tasks with 250,000 tokens per FIFO
// (39 FIFOs, 19.5 million events), for the SystemC scheduler, the direct scheduler (each with periodic
// jumps, the default, and step by step) and the plain SystemC baseline (plain_systemc.cpp); the same chain
// with 12,820,513 tokens per FIFO (10^9 events); and a DMA-heavy network streaming 1 GiB of weights out of
// HBM.
// Run: build/bench/sim_bench
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "compiler/ir/yaml_io.h"
#include "plain_systemc.h"
#include "sim/engine.h"
#include "sim/systemc_model.h"

namespace {

constexpr int kTasks = 40;
constexpr int64_t kTokens = 250'000;
constexpr int64_t kBillionTokens = 12'820'513;  // 2 * 39 FIFOs * this = 1,000,000,014 events

// A chain of kTasks tasks, each a pipelined loop of ii 1 and latency 3 over `tokens` tokens, with FIFOs of
// the given depth (0 = unbounded).
stc::Network chain(int depth, int64_t tokens = kTokens) {
  std::string s = "network: chain40\nfifos:\n";
  for (int f = 0; f + 1 < kTasks; ++f)
    s += "  - {name: f" + std::to_string(f) + ", width: 32, depth: " +
         (depth ? std::to_string(depth) : std::string("unbounded")) + "}\n";
  s += "tasks:\n";
  for (int t = 0; t < kTasks; ++t) {
    s += "  - {name: t" + std::to_string(t) + ", phases: [{trip: [" + std::to_string(tokens) +
         "], ii: 1, latency: 3, ports: [";
    if (t > 0) s += "{fifo: f" + std::to_string(t - 1) + ", dir: in}";
    if (t > 0 && t + 1 < kTasks) s += ", ";
    if (t + 1 < kTasks) s += "{fifo: f" + std::to_string(t) + ", dir: out}";
    s += "]}]}\n";
  }
  return stc::parseNetwork(s, "chain40");
}

// kDmas DMA reads of 64 MiB each (1 GiB in all), 512-bit tokens, one per HBM channel, each feeding a
// pipelined consumer of ii 1: the HBM, not the consumers, sets the pace.
constexpr int kDmas = 16;
stc::Network dmaNetwork() {
  std::string s = "network: weights1g\nfifos:\n";
  for (int d = 0; d < kDmas; ++d) s += "  - {name: w" + std::to_string(d) + ", width: 512}\n";
  s += "tasks:\n";
  for (int d = 0; d < kDmas; ++d) {
    s += "  - {name: load" + std::to_string(d) + ", kind: dma_read, channel: " + std::to_string(d) +
         ", bytes: 67108864, ports: [{fifo: w" + std::to_string(d) + ", dir: out}]}\n";
    s += "  - {name: mac" + std::to_string(d) + ", phases: [{trip: [1048576], ii: 1, latency: 4, ports: [{fifo: w" +
         std::to_string(d) + ", dir: in}]}]}\n";
  }
  return stc::parseNetwork(s, "weights1g");
}

long maxRssKb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// range(0): depth (0 = unbounded); range(1): periodic jumps (1) or step by step (0); range(2): tokens.
template <bool kSystemC>
void BM_Chain(benchmark::State& state) {
  stc::Network net = chain(static_cast<int>(state.range(0)), state.range(2));
  stc::sim::Program prog = stc::sim::compileProgram(net, {});
  stc::sim::RunConfig config;
  config.periodic = state.range(1) != 0;
  int64_t events = 0;
  for (auto _ : state) {
    stc::sim::SimResult r = kSystemC ? stc::sim::runSystemC(prog, config) : stc::sim::runDirect(prog, config);
    events += r.events;
    benchmark::DoNotOptimize(r.cycles);
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["max_rss_mb"] = static_cast<double>(maxRssKb()) / 1024.0;
}

template <bool kSystemC>
void BM_Dma(benchmark::State& state) {
  stc::Network net = dmaNetwork();
  stc::sim::Program prog = stc::sim::compileProgram(net, {});
  int64_t events = 0;
  double gbps = 0;
  for (auto _ : state) {
    stc::sim::SimResult r = kSystemC ? stc::sim::runSystemC(prog, {}) : stc::sim::runDirect(prog, {});
    events += r.events;
    gbps = static_cast<double>(kDmas) * 67108864.0 / (static_cast<double>(r.cycles) / 250e6) / 1e9;
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["hbm_gbps"] = gbps;
  state.counters["max_rss_mb"] = static_cast<double>(maxRssKb()) / 1024.0;
}

void BM_PlainSystemC(benchmark::State& state) {
  int64_t events = 0;
  for (auto _ : state) events += stc::bench::runPlainSystemCChain(kTasks, kTokens, static_cast<int>(state.range(0)));
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_Chain<true>)
    ->Name("systemc_engine")
    ->ArgNames({"depth", "periodic", "tokens"})
    ->Args({2, 1, kTokens})
    ->Args({2, 0, kTokens})
    ->Args({0, 1, kTokens})
    ->Args({0, 0, kTokens})
    ->Args({2, 1, kBillionTokens})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Chain<false>)
    ->Name("direct_engine")
    ->ArgNames({"depth", "periodic", "tokens"})
    ->Args({2, 1, kTokens})
    ->Args({2, 0, kTokens})
    ->Args({0, 1, kTokens})
    ->Args({0, 0, kTokens})
    ->Args({2, 1, kBillionTokens})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Dma<true>)->Name("systemc_engine/dma_1GiB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Dma<false>)->Name("direct_engine/dma_1GiB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainSystemC)->Name("plain_systemc/depth")->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

BENCHMARK_MAIN();
