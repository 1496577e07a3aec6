// stc compile GRAPH -o NETWORK: the compiler (compiler/pipeline.cpp), its network written atomically and
// its report printed (or written with --report).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/dse/explore.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/pipeline.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

struct CompileArgs {
  std::string input, output, report, platform, schedule, writeSchedule;
  std::vector<std::string> settings, binds;
  bool json = false;
  bool allowOverfit = false;
};

nlohmann::json reportJson(const CompileReport& r) {
  return {
      {"kernels", r.kernels},
      {"converters", r.converters},
      {"dmas", r.dmas},
      {"adapters", r.adapters},
      {"fifos", r.fifos},
      {"groups", r.groups},
      {"onchip_bytes_fused", r.onchipBytesFused},
      {"onchip_bytes_intermediate", r.onchipBytesIntermediate},
      {"onchip_bytes_unfused", r.onchipBytesUnfused},
      {"resources", resourcesJson(r.resources)},
      {"fits", r.fits},
      {"compile_seconds", r.compileSeconds},
      {"warnings", r.warnings},
      {"drained_pipelines", r.drainedPipelines},
      {"causal_triangles",
       {{"tasks", r.triangularTasks}, {"key_block", r.triangleKeyBlock}, {"skipped", r.triangleSkipped}}}};
}

int compile(const CompileArgs& a) {
  // Before anything is written: an output that is an input (refreshing --schedule in place aside), or
  // two outputs that are one file.
  checkOutputPaths({a.output, a.report, a.writeSchedule});
  for (const std::string* out : {&a.output, &a.report, &a.writeSchedule})
    for (const std::string* in : {&a.input, &a.platform, &a.schedule}) {
      if (out == &a.writeSchedule && in == &a.schedule) continue;
      if (sameFile(*out, *in))
        throw UserError("stc compile: error: " + *out + " is an input of this command; writing it would " +
                        "overwrite " + *in);
    }
  Platform platform = platformFromArg(a.platform);
  Graph graph;
  std::vector<std::string> settings = a.settings;
  if (isOnnxPath(a.input)) {
    // --bind fixes an axis at import where the shape arithmetic over it needs that, as simulate and emit
    // do; the network keeps any other symbol, to be bound where it runs.
    const Bindings bindings = parseSymbolBindings("stc compile", std::nullopt, a.binds);
    settings = fixBoundAxesAtImport("stc compile", a.input, settings, bindings);
    const std::map<std::string, int64_t> dims = importDims(settings, a.input);
    graph = importOnnxTold(a.input, dims);
    const std::set<std::string> symbols = inferShapes(graph).symbols();
    refuseUnusedBindings("stc compile", symbols, bindings, a.input, dims);
    for (const auto& [symbol, value] : bindings)
      if (symbols.count(symbol))
        std::cerr << "stc compile: note: --bind " << symbol << "=" << value
                  << ": the network keeps the symbol " << symbol
                  << " (its import did not need the axis fixed): bind it where the network runs, or "
                  << "fix it here with --set dim." << symbol << "=" << value << "\n";
  } else {
    if (!a.binds.empty())
      throw UserError("stc compile: error: --bind " + a.binds.front() +
                      ": a graph's symbols stay symbols in the " +
                      "network; bind them where it runs (stc simulate, size-fifos, emit or run --bind)");
    importDims(a.settings, a.input);  // refuses dim.AXIS
    std::string text = readTextFile(a.input);
    if (detectFileKind(text, a.input) != FileKind::kGraph)
      throw UserError(a.input + ":1:1: error: expected a graph file (its first key 'graph') or an ONNX model");
    graph = parseGraph(text, a.input);
  }
  CompileOptions options = parseCompileOptions(settings, platform);
  if (!a.schedule.empty()) {  // the file's pins, as settings too, so the network records them
    std::vector<std::string> pinned = applySchedule(loadSchedule(a.schedule), options);
    settings.insert(settings.end(), pinned.begin(), pinned.end());
  }
  CompileResult result = compileGraph(graph, platform, options);
  requireFit("stc compile", "the network", result.report.resources, platform, a.allowOverfit);
  result.network.sourceFile = a.input;
  result.network.sourceSettings = settings;
  if (!a.writeSchedule.empty())
    writeFileAtomic(a.writeSchedule, emitSchedule(schedulePins(result.schedules, result.options)));
  for (const std::string& w : result.report.warnings) std::cerr << w << "\n";
  nlohmann::json report = reportJson(result.report);
  if (!result.schedules.empty()) report["schedules"] = dse::schedulesJson(result.schedules);
  report["lane_ii"] = result.options.laneIi;
  for (const auto& [op, ii] : result.options.laneIiOf) report["lane_ii_of"][op] = ii;
  writeFileAtomic(a.output, emitNetwork(result.network));
  if (!a.report.empty()) writeFileAtomic(a.report, report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (a.json) {
    std::cout << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  const CompileReport& r = result.report;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "%s: %d kernels, %d converters, %d DMAs, %d FIFOs in %d group(s); on-chip %lld bytes; intermediate "
      "results %lld bytes streamed at the compiler's bounds%s, %lld kept whole (%.1f%%; stc size-fifos sizes "
      "them)\n",
      result.network.name.c_str(), r.kernels, r.converters, r.dmas, r.fifos, r.groups,
      static_cast<long long>(r.onchipBytesFused), static_cast<long long>(r.onchipBytesIntermediate),
      result.options.joinsAtBounds ? "" : " (joined streams at their least depths: fusion_joins=trimmed)",
      static_cast<long long>(r.onchipBytesUnfused),
      r.onchipBytesUnfused
          ? 100.0 * static_cast<double>(r.onchipBytesIntermediate) / static_cast<double>(r.onchipBytesUnfused)
          : 0.0);
  std::cout << line;
  std::cout << "resources: " << resourcesText(r.resources, platform) << "\n";
  if (!r.triangularTasks.empty())
    std::cout << "causal: the masked half skipped (each row's keys up to its block of " << r.triangleKeyBlock
              << ") in " << r.triangularTasks.size() << " tasks\n";
  else if (!r.triangleSkipped.empty())
    std::cout << "causal: every key of every row run (" << r.triangleSkipped << ")\n";
  if (!result.schedules.empty()) {  // what the search picked, in the form --set pins it
    std::cout << "schedules:";
    for (const auto& [op, sched] : result.schedules)
      std::cout << " tk." << op << "=" << sched.tk << (sched.tn > 0 ? " tn." + op + "=" + std::to_string(sched.tn) : "")
                << " row_block." << op << "=" << sched.rowBlock;
    std::cout << " lane_ii=" << result.options.laneIi;
    for (const auto& [op, ii] : result.options.laneIiOf) std::cout << " lane_ii." << op << "=" << ii;
    std::cout << "\n";
  }
  if (!r.drainedPipelines.empty()) {  // drainHeldPipelines
    std::cout << "pipelines drained per outer iteration (faster at the symbols' samples):";
    for (const std::string& t : r.drainedPipelines) std::cout << " " << t;
    std::cout << "\n";
  }
  std::cout << "wrote " << a.output << " in " << r.compileSeconds << " s\n";
  return 0;
}

}  // namespace

Runner addCompile(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  app.add_option("input", a->input, "graph file (models/graphs/*.yaml)")->required();
  app.add_option("-o,--output", a->output, "network file to write")->required();
  app.add_option("-p,--platform", a->platform,
                 "platform file, or a built-in platform: u55c (the default), u280");
  app.add_option(
      "--set", a->settings,
      "KEY=VALUE: tile, unroll_budget (share of DSPs), onchip_budget_bytes, quant (w4a8|none), "
      "lane_ii (II of the kernels of f32 lanes, which share their operators over it; 0: chosen), "
      "lane_ii.OP (an op's own lane II), "
      "max_stripe (0: each weight its stage's share of the channels), max_SYMBOL (largest value of a symbol, "
      "for buffer sizes), fusion_joins (whole: fusion counts a joined stream's FIFO at its bound, the "
      "whole tensor; trimmed: at its least depth, fewer groups, the sizer then sets its depth), "
      "stripe_estimate (aligned: the unroll search prices a weight over the beat-aligned stripes it gets; "
      "channels: over the channels its tile needs), "
      "causal_triangles (on: a causal attention over held keys skips the masked half; off: every key), "
      "row_block (every matmul's "
      "loop order: auto, 0 weight-stationary, N rows per block), tk.OP and row_block.OP (pin a matmul's "
      "reduction tile and rows per block; row_block 0: every row), dim.AXIS (an ONNX model's dynamic axis "
      "fixed at import, so that the shape arithmetic over it folds)");
  app.add_option(
      "--bind", a->binds,
      "NAME=N: an ONNX model's dynamic axis fixed at import where its shape arithmetic needs it, as "
      "simulate and emit fix it (the network keeps other symbols; repeatable)");
  app.add_option(
      "--schedule", a->schedule,
      "schedule file pinning matmuls' tk and row_block (as --write-schedule writes it; --set wins)");
  app.add_option("--write-schedule", a->writeSchedule, "write the chosen schedules as a schedule file");
  app.add_option("--report", a->report, "write the compile report as JSON");
  app.add_flag("--json", a->json, "print the report as JSON");
  app.add_flag("--allow-overfit", a->allowOverfit,
               "write a network that does not fit the platform (else exit 1)");
  return [a]() { return compile(*a); };
}

}  // namespace stc::cli
