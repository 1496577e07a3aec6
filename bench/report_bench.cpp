// The HTML report of a GPT-2 medium decoder layer (models/graphs/gpt2_layer.yaml at ctx 1024): the run
// recorded with curves and stalls against the plain run, the timeline sampled from it, and the page drawn
// from that timeline; the counters give the page's and the timeline's bytes.
// Run: build/bench/report_bench (from the repository root)
#include <benchmark/benchmark.h>

#include "compiler/ir/yaml_io.h"
#include "compiler/pipeline.h"
#include "report/html.h"
#include "report/timeline.h"
#include "sim/engine.h"
#include "sim/report.h"

namespace {

struct Layer {
  stc::Network net;
  stc::sim::Program program;
  Layer()
      : net(stc::compileGraph(stc::loadGraph(STC_SOURCE_DIR "/models/graphs/gpt2_layer.yaml"),
                              stc::defaultPlatform(), stc::parseCompileOptions({}, stc::defaultPlatform()))
                .network),
        program(stc::sim::compileProgram(net, {{"ctx", 1024}}, stc::defaultPlatform())) {}
};

const Layer& layer() {
  static const Layer l;
  return l;
}

stc::sim::RunConfig recorded(bool record) {
  stc::sim::RunConfig c;
  c.recordCurves = c.recordStalls = record;
  return c;
}

void BM_Simulate(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(stc::sim::runDirect(layer().program, recorded(state.range(0))));
}

void BM_Timeline(benchmark::State& state) {
  stc::sim::SimResult r = stc::sim::runDirect(layer().program, recorded(true));
  nlohmann::json tl;
  for (auto _ : state) tl = stc::report::timelineJson(layer().net, r);
  state.counters["timeline_bytes"] = static_cast<double>(tl.dump().size());
}

void BM_Page(benchmark::State& state) {
  stc::sim::SimResult r = stc::sim::runDirect(layer().program, recorded(true));
  nlohmann::json doc = stc::sim::resultJson(r, std::nullopt, 250);
  doc["timeline"] = stc::report::timelineJson(layer().net, r);
  std::string page;
  for (auto _ : state) page = stc::report::renderHtml(doc, "bench");
  state.counters["page_bytes"] = static_cast<double>(page.size());
}

}  // namespace

BENCHMARK(BM_Simulate)->ArgName("recorded")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Timeline)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Page)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
