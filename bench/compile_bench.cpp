// Compile time of a GPT-2 medium decoder layer (models/graphs/gpt2_layer.yaml: hidden 1024, 16 heads,
// FFN 4096), f32 and W4A8, with the fused against the unfused on-chip bytes.
// Run: build/bench/compile_bench (from the repository root)
#include <benchmark/benchmark.h>

#include "compiler/ir/yaml_io.h"
#include "compiler/pipeline.h"

namespace {

void BM_CompileGpt2Layer(benchmark::State& state, const char* quant) {
  stc::Graph g = stc::loadGraph(STC_SOURCE_DIR "/models/graphs/gpt2_layer.yaml");
  stc::CompileOptions options = stc::parseCompileOptions({quant}, stc::defaultPlatform());
  stc::CompileReport report;
  for (auto _ : state) report = stc::compileGraph(g, stc::defaultPlatform(), options).report;
  state.counters["onchip_fused"] = static_cast<double>(report.onchipBytesFused);
  state.counters["onchip_unfused"] = static_cast<double>(report.onchipBytesUnfused);
  state.counters["fused_share"] =
      static_cast<double>(report.onchipBytesFused) / static_cast<double>(report.onchipBytesUnfused);
  state.counters["dsp"] = static_cast<double>(report.resources.dsp);
}

}  // namespace

BENCHMARK_CAPTURE(BM_CompileGpt2Layer, f32, "quant=none")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileGpt2Layer, w4a8, "quant=w4a8")->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
