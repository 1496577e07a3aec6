// stc simulate NETWORK: runs the cycle-level simulator and reports latency, stalls, FIFO occupancy and,
// on deadlock, the wait-for cycle with the smallest depth change that breaks it (exit 3).

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "compiler/ir/model_spec.h"
#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/llm/decode.h"
#include "report/timeline.h"
#include "sim/report.h"
#include "sim/systemc_model.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

struct SimulateArgs {
  NetworkInput network;
  std::string fifoDepth = "auto";
  std::string vcd, trace, curves, html;
  std::string engine = "systemc";
  std::string decode;
  std::vector<std::string> setDepths;  ///< --set-depth FIFO=N|unbounded, after --fifo-depth
  bool table = false;
  bool json = false;
  bool timeline = false;  ///< --json holds the report's timeline
  bool allowOverfit = false;
};

std::vector<int64_t> resolveDepths(const sim::Program& prog, const std::string& mode) {
  std::vector<int64_t> depths;
  if (mode == "auto") return depths;
  std::optional<int64_t> fixed = parseDepth(mode);
  if (!fixed)
    throw UserError("stc simulate: error: --fifo-depth expects auto, unbounded or a positive integer, got '" +
                    mode + "'");
  depths.assign(prog.fifos.size(), *fixed);
  return depths;
}

// --set-depth FIFO=N|unbounded over the depths --fifo-depth gave (empty: the file's).
void setDepths(const Network& net, const sim::Program& prog, const std::vector<std::string>& given,
               std::vector<int64_t>& depths) {
  if (given.empty()) return;
  if (depths.empty())
    for (const sim::FifoProgram& f : prog.fifos) depths.push_back(f.depth);
  for (const auto& [name, depth] : parseSetDepths("stc simulate", net, given, true))
    depths[static_cast<size_t>(net.findFifo(name))] = depth;
}

// "P:G[,P:G...]" -> (P, G) each, in order: one estimator shares their simulations.
std::vector<std::pair<int64_t, int64_t>> parseDecode(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> out;
  size_t from = 0;
  for (;;) {
    size_t comma = text.find(',', from);
    std::string one = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    auto pg = parseIntegerPair(one);
    if (!pg || pg->first <= 0 || pg->second <= 0)
      throw UserError("stc simulate: error: --decode expects PROMPT:GEN, two positive integers (several "
                      "separated by commas), got '" + one + "'" + (one == text ? "" : " in '" + text + "'"));
    out.push_back(*pg);
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

nlohmann::json decodeJson(const llm::DecodeResult& r, const ModelSpec& model, const Platform& platform) {
  auto schedule = [](const llm::Schedule& s) {
    return nlohmann::json{{"latency_ms", s.latencyMs}, {"ttft_ms", s.ttftMs}, {"decode_tokens_per_s", s.decodeTokensPerS}};
  };
  return {{"model", r.model},
          {"layers", model.layers},
          {"platform", platformJson(platform)},
          {"prompt", r.prompt},
          {"gen", r.gen},
          {"latency_ms", r.hostLoop.latencyMs},
          {"ttft_ms", r.hostLoop.ttftMs},
          {"decode_tokens_per_s", r.hostLoop.decodeTokensPerS},
          {"roofline_tokens_per_s", r.rooflineTokensPerS},
          {"roofline_fraction", r.rooflineFraction()},
          {"layer_hbm_busy_mean", r.layerChannelBusyMean},
          {"layer_hbm_busy_max", r.layerChannelBusyMax},
          {"device_loop",
           [&] {
             nlohmann::json d = schedule(r.deviceLoop);
             d["prefill_rows"] = r.deviceLoopPrefillRows;
             d["prompt_decode_steps"] = r.deviceLoopPromptDecodeSteps;
             d["prefill_layer_cycles"] = r.deviceLoopPrefillLayerCycles;
             return d;
           }()},
          {"layer_cycles_first", r.layerCyclesFirst},
          {"layer_cycles_last", r.layerCyclesLast},
          {"prefill_layer_cycles", r.prefillLayerCycles},
          {"head_cycles", r.headCycles},
          {"resources", resourcesJson(r.resources)},
          {"resources_of",
           {{"decode_layer", resourcesJson(r.decodeLayerResources)},
            {"head", resourcesJson(r.headResources)},
            {"prefill", resourcesJson(r.prefillResources)}}},
          {"prefill_rows", r.prefillRows},
          {"prompt_decode_steps", r.promptDecodeSteps},
          {"fits", r.fits},
          {"hbm_bytes", r.hbmBytes},
          {"fits_hbm", r.fitsHbm},
          {"wall_seconds", r.wallSeconds}};
}

int simulateModel(const SimulateArgs& a, const Platform& platform, const CLI::App& app) {
  if (a.decode.empty() && !a.table)
    throw UserError("stc simulate: error: a model needs --decode PROMPT:GEN or --table");
  // The estimator simulates the model's layers itself, at the contexts the requests reach.
  for (const char* option :
       {"--fifo-depth", "--vcd", "--trace", "--curves", "--engine", "--ctx", "--bind", "--set"})
    if (app.count(option) > 0)
      throw UserError(std::string("stc simulate: error: ") + option +
                      " does not apply to a model's --decode or " +
                      "--table (they simulate every layer at the contexts the requests reach)");
  ModelSpec model = loadModel(a.network.path);
  // On a terminal, a progress line on stderr (a long prompt's estimate takes seconds to a minute), cleared
  // when the estimate ends or fails.
  std::optional<ProgressLine> progress(std::in_place, "simulate");
  progress->show("compiling and sizing the decode layer and the LM head");
  llm::Estimator estimator(model, platform);
  estimator.setProgress([&](const std::string& what) { progress->show(what); });
  std::vector<std::pair<int64_t, int64_t>> requests;
  if (a.table) requests = {{32, 32}, {64, 64}, {128, 128}, {256, 256}};
  else requests = parseDecode(a.decode);
  bool several = requests.size() > 1;  // --json prints an array, as for --table
  std::vector<llm::DecodeResult> results = estimator.runAll(requests);
  progress.reset();
  for (const llm::DecodeResult& r : results) {
    requireFit(
        "stc simulate",
        "the device (decode layer, LM head and the prefill of " + std::to_string(r.prefillRows) + " rows)",
        r.resources, platform, a.allowOverfit);
    if (!r.fitsHbm && !a.allowOverfit)
      throw UserError("stc simulate: error: the model's weights and KV caches at max_ctx (" +
                      std::to_string(r.hbmBytes) + " bytes) do not fit " + platform.name + "'s HBM (" +
                      std::to_string(platform.hbm.channels * platform.hbm.channelBytes) +
                      " bytes); --allow-overfit predicts it anyway");
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) out.push_back(decodeJson(r, model, platform));
  if (!a.html.empty() || a.timeline)  // the page draws the last request's first decode step
    out.back()["decode_layer"] =
        simulationJson(estimator.decodeLayer(), {{"ctx", results.back().prompt}}, platform);
  if (!a.html.empty()) writeHtmlReport(a.html, several ? out : out[0]);
  if (!a.timeline) out.back().erase("decode_layer");
  if (a.json) {
    std::cout << (several ? out : out[0]).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  const auto& first = results.front();
  char line[256];
  std::snprintf(line, sizeof line, "%s on %s at %g MHz: %s; HBM %.2f GB (%s)\n", model.name.c_str(),
                platform.name.c_str(), platform.kernelClockMhz, model.quant.c_str(),
                static_cast<double>(first.hbmBytes) / 1e9, first.fitsHbm ? "fits" : "DOES NOT FIT");
  std::cout << line;
  std::cout << "  device       " << resourcesText(first.resources, platform) << "\n";
  std::cout << "  decode layer " << resourcesText(first.decodeLayerResources, platform) << "\n  LM head      "
            << resourcesText(first.headResources, platform) << "\n  prefill      "
            << resourcesText(first.prefillResources, platform) << " (" << first.prefillRows << " rows"
            << (first.promptDecodeSteps
                    ? " and " + std::to_string(first.promptDecodeSteps) + " prompt tokens as decode steps"
                    : std::string())
            << ")\n";
  std::cout << "                 one call per layer (the paper's)        one call per token                 "
               "roofline          layer's HBM busy\n";
  std::cout << "prompt:gen   latency ms   TTFT ms   tokens/s     latency ms   TTFT ms   tokens/s    "
               "tokens/s  reached    mean   max\n";
  for (const auto& r : results) {
    std::snprintf(
        line, sizeof line,
        "%4lld:%-4lld   %10.2f  %8.2f  %9.1f     %10.2f  %8.2f  %9.1f   %9.1f  %6.1f%%  %5.1f%% %5.1f%%\n",
        static_cast<long long>(r.prompt), static_cast<long long>(r.gen), r.hostLoop.latencyMs,
        r.hostLoop.ttftMs, r.hostLoop.decodeTokensPerS, r.deviceLoop.latencyMs, r.deviceLoop.ttftMs,
        r.deviceLoop.decodeTokensPerS, r.rooflineTokensPerS, 100 * r.rooflineFraction(),
        100 * r.layerChannelBusyMean, 100 * r.layerChannelBusyMax);
    std::cout << line;
  }
  std::snprintf(line, sizeof line, "(layer cycles %lld at the first decode step, %lld at the last; %.2f s of simulation)\n",
                static_cast<long long>(results.back().layerCyclesFirst), static_cast<long long>(results.back().layerCyclesLast),
                results.back().wallSeconds);
  std::cout << line;
  return 0;
}

int simulate(const SimulateArgs& a, const CLI::App& app) {
  checkOutputPaths({a.vcd, a.trace, a.curves, a.html}, {a.network.path, a.network.platform});
  if (a.timeline && !a.json)
    throw UserError("stc simulate: error: --timeline adds to --json's object: pass --json too");
  Platform platform = a.network.loadPlatformArg();
  if (!isOnnxPath(a.network.path) && detectFileKind(readTextFile(a.network.path), a.network.path) == FileKind::kModel) {
    importDims(a.network.settings, a.network.path);  // refuses dim.AXIS
    return simulateModel(a, platform, app);
  }
  if (!a.decode.empty() || a.table)
    throw UserError("stc simulate: error: --decode and --table take a model file (models/*.yaml, first key 'model')");
  Bindings bindings;
  Network net = a.network.load("stc simulate", platform, bindings);
  sim::Program prog = sim::compileProgram(net, bindings, platform);
  sim::RunConfig config;
  config.depths = resolveDepths(prog, a.fifoDepth);
  setDepths(net, prog, a.setDepths, config.depths);
  if (a.fifoDepth == "auto") warnOutsideSizedRange(net, a.network.path, bindings);  // the file's depths
  bool report = !a.html.empty() || a.timeline;
  config.recordCurves = !a.curves.empty() || !a.vcd.empty() || !a.trace.empty() || report;
  config.recordStalls = !a.vcd.empty() || !a.trace.empty() || report;
  sim::SimResult r = a.engine == "direct" ? sim::runDirect(prog, config) : sim::runSystemC(prog, config);
  std::optional<sim::DepthFix> fix;
  if (r.deadlock) fix = sim::findDepthFix(prog, r);
  double mhz = platform.kernelClockMhz;
  if (!a.curves.empty()) writeFileAtomic(a.curves, [&](std::ostream& s) { sim::writeCurvesCsv(s, r); });
  if (!a.vcd.empty()) writeFileAtomic(a.vcd, [&](std::ostream& s) { sim::writeVcd(s, r, mhz); });
  if (!a.trace.empty()) writeFileAtomic(a.trace, [&](std::ostream& s) { sim::writeTrace(s, r, mhz); });
  if (a.json || report) {
    nlohmann::json out = sim::resultJson(r, fix, mhz);
    std::string what;
    Network simulated = net;
    for (size_t f = 0; f < simulated.fifos.size(); ++f) simulated.fifos[f].depth = r.fifos[f].depth;
    out["platform"] = platformJson(platform);
    bool bounded = std::none_of(r.fifos.begin(), r.fifos.end(),
                                [](const sim::FifoStats& f) { return f.depth == kUnboundedDepth; });
    if (report && bounded) {  // the page's (a recompile); an unbounded FIFO has no memory to count
      out["resources"] = resourcesJson(
          networkResources(net, simulated, a.network.path, platform, "FIFOs as simulated", false, what));
      out["resources_of"] = what;
    }
    if (report) out["timeline"] = report::timelineJson(net, r);
    if (!a.html.empty()) writeHtmlReport(a.html, out);
    if (!a.timeline) out.erase("timeline");
    if (a.json) std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (a.json) {
    if (r.deadlock) sim::printSummary(std::cerr, r, fix, mhz);
  } else {
    sim::printSummary(std::cout, r, fix, mhz);
  }
  return r.deadlock ? 3 : 0;
}

}  // namespace

Runner addSimulate(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  a->network.addOptions(app);
  app.add_option("--fifo-depth", a->fifoDepth, "auto (the file's depths), unbounded, or N for every FIFO");
  app.add_option("--set-depth", a->setDepths,
                 "one FIFO's depth, FIFO=N or FIFO=unbounded (repeatable; after --fifo-depth)");
  app.add_option("--vcd", a->vcd, "write FIFO occupancy and task states as VCD");
  app.add_option("--trace", a->trace, "write a Chrome/Perfetto trace-event JSON file");
  app.add_option("--curves", a->curves, "write token curves as CSV (fifo,cycle,writes,reads)");
  app.add_option("--engine", a->engine, "systemc (default) or direct (the same engine without the SystemC kernel)")
      ->check(CLI::IsMember({"systemc", "direct"}));
  app.add_option("--decode", a->decode,
                 "for a model: PROMPT:GEN, the latency, TTFT and decode speed (several, comma-separated, share "
                 "their simulations: a prompt-length sweep)");
  app.add_flag("--table", a->table, "for a model: the rows 32:32, 64:64, 128:128, 256:256");
  app.add_flag("--json", a->json, "print one JSON object");
  app.add_flag(
      "--timeline", a->timeline,
      "with --json: add the timeline stc report draws (task states, token curves, HBM busy over time)");
  app.add_option("--html", a->html, "write the run's report as one self-contained HTML page");
  app.add_flag("--allow-overfit", a->allowOverfit,
               "for a model: predict a device that does not fit the platform (else exit 1)");
  return [a, &app]() { return simulate(*a, app); };
}

}  // namespace stc::cli
