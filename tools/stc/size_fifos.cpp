// stc size-fifos NETWORK -o SIZED: LP-based FIFO sizing, verified by re-simulation. The output network is
// the input with new depths and nothing else changed.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/pipeline.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/report.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

struct SizeArgs {
  NetworkInput network;
  std::string output, strategy = "normal", html;
  std::string ctxRange;                ///< --ctx-range LOW:HIGH
  std::vector<std::string> setDepths;  ///< --set-depth FIFO=N
  bool json = false;
  bool timeline = false;
  bool allowOverfit = false;
  bool paced = false;
  bool prefetch = false;
};

// "LOW:HIGH" -> {LOW, HIGH}, 1 <= LOW <= HIGH.
std::pair<int64_t, int64_t> parseRange(const std::string& text) {
  auto range = parseIntegerPair(text);
  if (range && range->first >= 1 && range->first <= range->second && range->second <= kMaxNumber)
    return *range;
  throw UserError(
      "stc size-fifos: error: --ctx-range expects LOW:HIGH, integers with 1 <= LOW <= HIGH, got '" + text +
      "'");
}

const char* pacedWhyName(sizing::PacedReason why) {
  switch (why) {
    case sizing::PacedReason::kAsked: return "asked";
    case sizing::PacedReason::kOverMemory: return "over_memory";
    case sizing::PacedReason::kFewerBits: return "fewer_bits";
    case sizing::PacedReason::kOverDevice: return "over_device";
    case sizing::PacedReason::kNone: break;
  }
  return "";
}

int sizeCommand(const SizeArgs& a) {
  checkOutputPaths({a.output, a.html}, {a.network.platform});
  if (!a.html.empty()) checkOutputPaths({a.html}, {a.network.path});
  if (a.timeline && !a.json)
    throw UserError("stc size-fifos: error: --timeline adds to --json's object: pass --json too");
  Platform platform = a.network.loadPlatformArg();
  sizing::SizingOptions options;
  options.platform = platform;
  bool ctxFree = !a.network.ctx;  // sized over a range of ctx unless --ctx binds it
  for (const std::string& kv : a.network.binds) ctxFree = ctxFree && kv.rfind("ctx=", 0) != 0;
  if (!ctxFree && !a.ctxRange.empty())
    throw UserError(std::string("stc size-fifos: error: ") + (a.network.ctx ? "--ctx" : "--bind ctx=") +
                    " and --ctx-range both give ctx: pass one");
  Network net = a.network.load("stc size-fifos", platform, options.bindings,
                               ctxFree ? std::set<std::string>{"ctx"} : std::set<std::string>{});
  options.strategy = a.strategy == "conservative" ? sizing::Strategy::kConservative : sizing::Strategy::kNormal;
  options.paced = a.paced;
  options.prefetch = a.prefetch;
  options.pinned = parseSetDepths("stc size-fifos", net, a.setDepths, false);
  bool overCtx = net.symbols().count("ctx") > 0 && ctxFree;
  if (!a.ctxRange.empty() && !overCtx)
    throw UserError("stc size-fifos: error: --ctx-range: the network " + a.network.path +
                    " does not use ctx");
  Network sized;
  sizing::SizingResult r;
  std::vector<sizing::RangeCheck> checks;
  std::pair<int64_t, int64_t> ctxRange;
  int64_t tileOverCtx = 0;
  if (overCtx) {  // the range given, or 1 .. the maximum the kernels' buffers hold
    bool compiled = false;
    CompileOptions settings = parseCompileOptions(a.network.compileSettings(net, compiled), platform);
    auto m = settings.maxima.find("ctx");
    int64_t maxCtx = m != settings.maxima.end() ? m->second : kDefaultSymbolMaximum;
    if (net.maxima.count("ctx")) {  // what the compiler recorded (a model's own bound included)
      maxCtx = net.maxima.at("ctx");
      compiled = true;
    }
    if (!a.ctxRange.empty()) {
      ctxRange = parseRange(a.ctxRange);
      if (compiled && ctxRange.second > maxCtx)
        throw UserError("stc size-fifos: error: --ctx-range " + a.ctxRange +
                        " goes beyond the design's max_ctx (" + std::to_string(maxCtx) +
                        "): its kernels' buffers hold no more");
    } else if (compiled) {
      ctxRange = {1, maxCtx};
    } else {
      throw UserError(
          a.network.path +
          ": error: the network uses symbol 'ctx' and says no maximum: give --ctx N, or --ctx-range "
          "LOW:HIGH to size it for every ctx in a range");
    }
    tileOverCtx = settings.tile;
  }
  // The sizer tries the other measuring run where a design does not fit the device (step 7): counted as
  // stc emit counts it, from the network's source compiled (once, when first asked) with those depths.
  std::optional<std::optional<CompileResult>> compiledSource;
  auto source = [&]() -> const std::optional<CompileResult>& {
    if (!compiledSource) compiledSource = compileNetworkSource(net, a.network.path, platform, true);
    return *compiledSource;
  };
  options.fits = [&](const Network& candidate) {
    std::string unused;
    return resourcesAtDepths(source(), net, candidate, a.network.path, platform, "sized FIFOs", unused)
        .within(platform.kernelResources());
  };
  r = overCtx ? sizing::sizeFifosOverRange(net, options, "ctx", ctxRange.first, ctxRange.second, tileOverCtx, sized, checks)
              : sizing::sizeFifos(net, options, sized);
  if (r.pinnedDeadlock)
    throw UserError(
        "stc size-fifos: error: the network deadlocks with the --set-depth depths even with every other "
        "FIFO unbounded: raise them");
  if (r.trueDeadlock) {
    std::cerr << "stc size-fifos: the network deadlocks even with unbounded FIFOs: no depth can fix it\n";
    sim::printSummary(std::cerr, r.unbounded, std::nullopt, platform.kernelClockMhz);
    return 3;
  }
  for (const sizing::RangeCheck& c : checks)
    if (c.cycles == 0) {
      std::cerr << "stc size-fifos: error: the sized network still deadlocks at ctx " << c.value
                << "; nothing was written (please report it)\n";
      return 3;
    }
  sized.sizedFor.clear();
  for (const auto& [symbol, value] : options.bindings) sized.sizedFor[symbol] = {value, value};
  if (overCtx) sized.sizedFor["ctx"] = ctxRange;
  std::string what;
  std::pair<int64_t, int64_t> intermediate;  // bytes at the sized depths, kept whole
  Resources used = resourcesAtDepths(source(), net, sized, a.network.path, platform, "sized FIFOs", what, &intermediate);
  requireFit("stc size-fifos", what, used, platform, a.allowOverfit);
  writeFileAtomic(a.output, emitNetwork(sized));
  if (a.json || !a.html.empty()) {
    nlohmann::json j{
        {"network", net.name},
        {"platform", platformJson(platform)},
        {"fifos", sizedFifosJson(r.fifos)},
        {"total_bits", r.totalBits},
        {"baseline_max_occupancy_bits", r.baselineMaxOccupancyBits},
        {"baseline_full_bits", r.baselineFullBits},
        {"cycles_unbounded", r.cyclesUnbounded},
        {"cycles_sized", r.cyclesSized},
        {"paced", r.paced},
        {"paced_why", r.paced ? nlohmann::json(pacedWhyName(r.pacedWhy)) : nlohmann::json()},
        {"cycles_paced", r.cyclesPaced},
        {"replays_bounded", r.replaysBounded},
        {"paced_tolerance",
         r.pacedWhy == sizing::PacedReason::kFewerBits ? nlohmann::json(r.pacedTolerance) : nlohmann::json()},
        {"rounds", r.rounds},
        {"lp_seconds", r.lpSeconds},
        {"lp_feasible", r.lpFeasible},
        {"memory", r.memoryCounts},
        {"resources", resourcesJson(used)},
        {"resources_of", what},
        {"fits", used.within(platform.kernelResources())},
        {"intermediate_bytes",
         intermediate.first >= 0 ? nlohmann::json(intermediate.first) : nlohmann::json()},
        {"unfused_bytes", intermediate.first >= 0 ? nlohmann::json(intermediate.second) : nlohmann::json()},
        {"pinned", options.pinned}};
    nlohmann::json sizedFor = nlohmann::json::object();
    for (const auto& [symbol, range] : sized.sizedFor) sizedFor[symbol] = {range.first, range.second};
    j["sized_for"] = sizedFor;
    j["checked"] = rangeChecksJson(checks);
    if (a.timeline || !a.html.empty()) j["simulation"] = simulationJson(sized, options.bindings, platform);
    if (!a.html.empty()) writeHtmlReport(a.html, j);
    if (!a.timeline) j.erase("simulation");
    if (a.json) std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (!a.json) {
    char line[256];
    std::snprintf(line, sizeof line, "%s: %zu FIFOs sized in %d round(s); %lld cycles (unbounded %lld)\n",
                  net.name.c_str(), r.fifos.size(), r.rounds, static_cast<long long>(r.cyclesSized),
                  static_cast<long long>(r.cyclesUnbounded));
    std::cout << line;
    if (r.paced) std::cout << "paced: " << pacedLine(r);
    if (r.replaysBounded)
      std::cout << "replays bounded: sized from a run with the converters' replays bounded, in fewer bits at "
                   "the unbounded run's latency (the rows they replay wait in front of them, once)\n";
    std::snprintf(line, sizeof line, "bits: %lld sized, %lld at maximum occupancy, %lld holding every token\n",
                  static_cast<long long>(r.totalBits), static_cast<long long>(r.baselineMaxOccupancyBits),
                  static_cast<long long>(r.baselineFullBits));
    std::cout << line;
    if (overCtx) {
      std::string at, over;
      for (const sizing::RangeCheck& c : checks) {
        at += (at.empty() ? "" : ", ") + std::to_string(c.value) + (c.sampled ? "*" : "");
        if (!c.ok)
          over += "  warning: at ctx " + std::to_string(c.value) + " " + std::to_string(c.cycles) +
                  " cycles, over " + toleranceText(r) + " above " + std::to_string(c.unbounded) +
                  " unbounded\n";
      }
      std::cout << "sized for ctx " << ctxRange.first << ".." << ctxRange.second << ": simulated at ctx "
                << at << " (* sized at), no deadlock"
                << (over.empty() ? ", each within " + toleranceText(r) + " of its unbounded run" : "") << "\n"
                << over;
    }
    std::cout << "resources of " << what << ": " << resourcesText(used, platform) << "\n";
    if (intermediate.first >= 0 && intermediate.second > 0) {
      std::snprintf(line, sizeof line, "intermediate results on chip at the sized depths: %lld bytes, %.1f%% of %lld kept whole\n",
                    static_cast<long long>(intermediate.first),
                    100.0 * static_cast<double>(intermediate.first) / static_cast<double>(intermediate.second),
                    static_cast<long long>(intermediate.second));
      std::cout << line;
    }
    for (const auto& f : r.fifos) {
      std::snprintf(line, sizeof line, "  %-24s depth %8lld  (max occupancy %8lld)  %8lld bits  %s\n", f.name.c_str(),
                    static_cast<long long>(f.depth), static_cast<long long>(f.maxOccupancy),
                    static_cast<long long>(f.bits), f.memory.kind.c_str());
      std::cout << line;
    }
    std::cout << "wrote " << a.output << "\n";
  }
  return 0;
}

}  // namespace

Runner addSizeFifos(CLI::App& app) {
  auto a = std::make_shared<SizeArgs>();
  a->network.addOptions(app);
  app.add_option("-o,--output", a->output, "sized network file to write")->required();
  app.add_option("--strategy", a->strategy, "normal or conservative (every pace scaled to the slowest task)")
      ->check(CLI::IsMember({"normal", "conservative"}));
  app.add_option("--ctx-range", a->ctxRange,
                 "LOW:HIGH: depths that hold at every ctx in the range (default 1..the design's max_ctx)");
  app.add_option("--set-depth", a->setDepths, "pin one FIFO's depth, FIFO=N (repeatable): never raised");
  app.add_flag("--json", a->json, "print one JSON object");
  app.add_flag("--timeline", a->timeline,
               "with --json: add the sized network's simulation with the timeline stc report draws");
  app.add_option("--html", a->html, "write the sizing's report as one self-contained HTML page");
  app.add_flag("--paced", a->paced,
               "measure with writers held to their readers' pace: fewer bits where branches wait for each "
               "other, the latency checked that run's");
  auto* paced = app.get_option("--paced");
  app.add_flag("--prefetch", a->prefetch,
               "measure with the streams from HBM unbounded: weights read ahead into deep FIFOs while their "
               "kernels wait (more memory; faster where the channels would idle; over the memory or the "
               "device the sizer still paces)")
      ->excludes(paced);
  app.add_flag("--allow-overfit", a->allowOverfit,
               "write depths whose design does not fit the platform (else exit 1)");
  return [a]() { return sizeCommand(*a); };
}

}  // namespace stc::cli
