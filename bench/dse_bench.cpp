// stc dse's exploration of a GPT-2 medium layer (models/gpt2.yaml) over the default space (96 points):
// the decode layer at ctx 128 and a 64-row prefill layer, W4A8, every point compiled, sized and
// simulated. Counters: points, distinct networks, the front's size and its fastest point's cycles.
// Run: build/bench/dse_bench (from the repository root; uses every core)
#include <benchmark/benchmark.h>

#include "compiler/dse/explore.h"
#include "compiler/frontend/model_builder.h"
#include "compiler/ir/model_spec.h"

namespace {

void BM_DseGpt2Layer(benchmark::State& state) {
  stc::ModelSpec model = stc::loadModel(STC_SOURCE_DIR "/models/gpt2.yaml");
  int64_t prompt = state.range(0);
  stc::Graph layer = prompt == 0 ? stc::buildDecodeLayer(model) : stc::buildPrefillLayer(model, prompt);
  stc::Bindings bindings = prompt == 0 ? stc::Bindings{{"ctx", 128}} : stc::Bindings{};
  stc::Platform platform = stc::defaultPlatform();
  stc::dse::Exploration e;
  for (auto _ : state)
    e = stc::dse::explore(layer, platform, {"quant=w4a8", "max_ctx=1024"}, stc::dse::defaultSpace(platform),
                          bindings);
  state.counters["points"] = static_cast<double>(e.points.size());
  state.counters["networks"] = e.compiledNetworks;
  state.counters["front"] = static_cast<double>(e.front.size());
  state.counters["fastest_cycles"] =
      e.front.empty() ? 0.0 : static_cast<double>(e.points[static_cast<size_t>(e.front[0])].cycles);
}

}  // namespace

BENCHMARK(BM_DseGpt2Layer)->ArgName("prompt")->Arg(0)->Arg(64)->Unit(benchmark::kSecond)->Iterations(1);

BENCHMARK_MAIN();
