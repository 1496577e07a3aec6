// stc emit MODEL -o DIR and stc run MODEL -o DIR: the flow that ends in a Vitis HLS project.
//
//   load the graph (YAML graph, ONNX, or an LLM model file: its decode layer, chained over its layers)
//   -> compile -> simulate with unbounded FIFOs -> size the FIFOs (LP) -> simulate again to verify
//   -> emit (compiler/emit). `run` prints each stage's figures; `emit` prints what it wrote.
#include "compiler/emit/emit.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "compiler/frontend/model_builder.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/model_spec.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/llm/decode.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/conform.h"
#include "sim/engine.h"
#include "sim/program.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

struct EmitArgs {
  NetworkInput input;
  EmitOptions emit;
  int layers = 0;  // 0: the model's layer count (1 for a graph)
  bool verbose = false;
  bool allowOverfit = false;
  bool json = false;
  bool timeline = false;   // --json holds the sized network's simulation with its timeline
  std::string html;        // the report's page
  bool noConform = false;  // run: skip tracing the C simulation and checking it against the network
};

struct Loaded {
  Graph graph;
  int layers = 1;
  std::string quant = "none";  // what the model or settings ask for
  std::optional<Network> network;        // a network file: its FIFO depths are the ones to emit
  std::optional<ModelSpec> model;        // a model file: its decode layer, as the estimator sizes it
  std::vector<std::string> settings;     // the settings it was compiled with
};

// A network file's source graph and settings: what its kernels compute.
Loaded loadNetworkSource(const std::string& path, const std::string& text, const std::string& command) {
  Loaded l;
  l.network = parseNetwork(text, path);
  l.graph = loadNetworkSourceGraph(*l.network, path, command);
  l.settings = l.network->sourceSettings;
  for (const auto& s : l.settings)
    if (s.rfind("quant=", 0) == 0) l.quant = s.substr(6);
  return l;
}

Loaded loadGraph(const EmitArgs& a, const std::string& command) {
  Loaded l;
  const std::string& path = a.input.path;
  if (isOnnxPath(path)) {
    l.graph = loadGraphFile(path, a.input.settings);
  } else {
    std::string text = readTextFile(path);
    FileKind kind = detectFileKind(text, path);
    importDims(a.input.settings, path);  // refuses dim.AXIS: not an ONNX model (a network keeps its own)
    switch (kind) {
      case FileKind::kGraph:
        l.graph = parseGraph(text, path);
        break;
      case FileKind::kModel: {
        ModelSpec model = parseModel(text, path);
        l.graph = buildDecodeLayer(model);
        l.graph.name = model.name;
        l.layers = model.layers;
        l.quant = model.quant;
        l.model = model;
        break;
      }
      case FileKind::kNetwork:
        l = loadNetworkSource(path, text, command);
        break;
      default:
        throw UserError(path + ": error: expected a graph, model or ONNX file");
    }
  }
  if (a.layers > 0) l.layers = a.layers;
  return l;
}

// A stage's result line; `pending` lines (a stage under way, ending in '\r') only on a terminal.
void progress(bool on, const std::string& text) {
  if (!on) return;
  bool pending = !text.empty() && text.back() == '\r';
  static const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  if (pending && !terminal) return;
  std::cout << text << std::flush;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// What emit and run say: run's stage lines and the lines both print, or with --json one object at the end
// (errors still go to standard error).
struct Stages {
  bool verbose = false, json = false;
  nlohmann::json out = nlohmann::json::object();
  std::string sizedLine;  // emit's one line on the sizing, said once the project is written
  void stage(const std::string& text) const {  // run's progress
    if (!json) progress(verbose, text);
  }
  void say(const std::string& text) const {
    if (!json) std::cout << text;
  }
};

// The project folder as given, without a trailing separator ("out/" -> "out").
std::string projectDir(const std::string& dir) {
  std::filesystem::path p(dir);
  while (p.has_parent_path() && p.filename().empty()) p = p.parent_path();
  return p.string();
}

// `text` as one shell word.
std::string shellQuoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// run's last stage: the project's C simulation built with tracing (make trace: it checks the outputs too),
// its stream accesses checked against the network (stc conform), and the kernels run concurrently at the
// emitted depths (make dfsim). Skipped, and said so, without make
// and a C++ compiler. False, with the reason on standard error, when the C simulation fails or the trace
// does not follow the network.
bool conformStage(Stages& st, const std::string& dir, const Network& network) {
  auto begin = std::chrono::steady_clock::now();
  if (std::system("command -v make >/dev/null 2>&1 && command -v \"${CXX:-g++}\" >/dev/null 2>&1") != 0) {
    st.stage("[6/6] conform   skipped: no make and C++ compiler here (make -C " + dir +
             " conform checks it)\n");
    st.out["conform"] = {{"ok", nullptr}, {"message", "skipped: no make and C++ compiler"}};
    return true;
  }
  st.stage("[6/6] conform   ...\r");
  std::string log = dir + "/build/trace.log", trace = dir + "/build/trace.txt";
  std::filesystem::create_directories(dir + "/build");
  std::filesystem::remove(trace);  // never an old one
  // Both programs built at once (they share nothing but the sources), then run one after the other.
  std::string command = "make -s -j2 -C " + shellQuoted(dir) + " build/csim_trace build/dfsim > " +
                        shellQuoted(log) + " 2>&1 && make -s -C " + shellQuoted(dir) + " trace >> " +
                        shellQuoted(log) + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::string why =
        "the project's traced C simulation failed (make -C " + dir + " trace; its output is in " + log + ")";
    st.out["conform"] = {{"ok", false}, {"message", why}};
    std::cerr << "stc run: " << why << "\n";
    return false;
  }
  conform::Result r = conform::check(network, conform::parseTrace(readTextFile(trace), trace));
  st.out["conform"] = {
      {"ok", r.ok}, {"calls", r.calls}, {"tasks", r.tasks}, {"accesses", r.accesses}, {"message", r.message}};
  if (!r.ok) {
    std::cerr << "stc run: the emitted code does not follow the network: " << r.message << "\n";
    return false;
  }
  // The kernels concurrently at the emitted depths (make dfsim): they complete, or the deadlock is said.
  std::string dflog = dir + "/build/dfsim.log";
  command = "make -s -C " + shellQuoted(dir) + " dfsim > " + shellQuoted(dflog) + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::string why = "the kernels run concurrently at the emitted depths do not complete (make -C " + dir +
                      " dfsim; its output is in " + dflog + ")";
    st.out["conform"]["dfsim"] = false;
    std::cerr << "stc run: " << why << "\n" << readTextFile(dflog);
    return false;
  }
  st.out["conform"]["dfsim"] = true;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "[6/6] conform   C simulation passed; %s; concurrent at the emitted depths: no deadlock; %.1f s\n",
      r.message.c_str(), seconds(begin));
  st.stage(line);
  return true;
}

int writeProject(const EmitArgs& a, Stages& st, const Loaded& loaded, const CompileResult& compiled,
                 const Platform& platform, const Bindings& bindings,
                 std::chrono::steady_clock::time_point begin) {
  EmitOptions eo = a.emit;
  eo.dir = projectDir(eo.dir);
  eo.layers = loaded.layers;
  eo.bindings = bindings;
  if (loaded.model)  // the host's decode loop appends each token's keys and values to the caches
    for (const auto& [cache, fresh] : decodeLayerCaches(loaded.graph))
      eo.caches.push_back({cache, fresh, "ctx"});
  st.stage("[5/6] emit      ...\r");
  EmitSummary e;
  try {
    e = emitProject(loaded.graph, compiled, platform, eo);
  } catch (const UserError& error) {  // what emission refuses, named at the file it came from
    std::string what = error.what();
    if (what.find(": error: ") != std::string::npos) throw;
    throw UserError(a.input.path + ": error: " + what);
  }
  std::string tops;
  for (const auto& t : e.tops) tops += (tops.empty() ? "" : ", ") + t;
  st.stage("[5/6] emit      ");
  char line[512];
  std::snprintf(line, sizeof line, "%s: %d files, %.1f KiB; kernels %s; %d layer(s) in the C simulation; %.2f s\n",
                eo.dir.c_str(), e.files, static_cast<double>(e.bytes) / 1024.0, tops.c_str(), eo.layers, seconds(begin));
  st.say(line);
  for (const std::string& note : e.notes) st.say(note + "\n");
  st.say(st.sizedLine);
  bool conforms = !st.verbose || a.noConform || conformStage(st, eo.dir, compiled.network);
  if (conforms)
    st.say("next: make -C " + a.emit.dir + (st.verbose && !a.noConform ? " xclbin TARGET=hw_emu" : " csim") +
           "\n");
  st.out["resources"] = resourcesJson(compiled.report.resources);
  st.out["fits"] = compiled.report.resources.within(platform.kernelResources());
  st.out["project"] = {{"folder", eo.dir},  {"files", e.files},    {"bytes", e.bytes},
                       {"kernels", e.tops}, {"layers", eo.layers}, {"notes", e.notes}};
  st.out["platform"] = platformJson(platform);
  st.out["seconds"] = seconds(begin);
  if (a.timeline || !a.html.empty())
    st.out["simulation"] = simulationJson(compiled.network, bindings, platform);
  if (!a.html.empty()) writeHtmlReport(a.html, st.out);
  if (!a.timeline) st.out.erase("simulation");
  if (st.json) std::cout << st.out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return conforms ? 0 : 1;
}

nlohmann::json bindingsJson(const Bindings& b) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [symbol, value] : b) j[symbol] = value;
  return j;
}

// A sized network file: emit its depths after one simulation shows they do not deadlock.
int emitWithFileDepths(const EmitArgs& a, Stages& st, const std::string& command, const Loaded& loaded,
                       CompileResult& compiled, const Platform& platform, const Bindings& bindings,
                       std::chrono::steady_clock::time_point begin) {
  takeDepths(*loaded.network, a.input.path, compiled.network);  // sized_for is already the file's
  for (const auto& [symbol, range] : compiled.network.sizedFor) {
    auto b = bindings.find(symbol);
    if (b != bindings.end() && (b->second < range.first || b->second > range.second)) {
      std::string low = std::to_string(range.first), high = std::to_string(range.second);
      throw UserError(a.input.path + ": error: its FIFO depths were sized for " + symbol + " " + low + ".." +
                      high + ", not " + std::to_string(b->second) + " (pass " +
                      (symbol == "ctx" ? "--ctx" : "--bind " + symbol + "=N with N") + " in " + low + ".." +
                      high + (symbol == "ctx" ? ", or size them again with --ctx-range covering it)" : ")"));
    }
  }
  if (bindings.count("ctx") && !compiled.network.sizedFor.count("ctx")) {
    std::string note = a.input.path +
                       " does not say which ctx its FIFO depths hold for (stc size-fifos records "
                       "it); the project runs ctx up to max_ctx " +
                       std::to_string(compiled.options.maxima.at("ctx"));
    st.say("note: " + note + "\n");
    st.out["warnings"].push_back(note);
  }
  updateResources(compiled, platform);
  st.stage("[3/6] resources " + resourcesText(compiled.report.resources, platform) + "\n");
  requireFit(command, "the network with the file's FIFO depths", compiled.report.resources, platform,
             a.allowOverfit);
  sim::Program prog = sim::compileProgram(compiled.network, bindings, platform);
  sim::SimResult r = sim::runDirect(prog, sim::RunConfig{});
  if (r.deadlock) {
    std::cerr << command << ": the network deadlocks with the depths of " << a.input.path
              << " (stc simulate shows where); nothing was written\n";
    return 3;
  }
  char line[256];
  st.stage("[4/6] verify    ");
  std::snprintf(line, sizeof line, "%lld cycles with the file's FIFO depths, no deadlock\n", static_cast<long long>(r.cycles));
  st.say(line);
  st.out["sizing"] = {{"depths", "the file's"}, {"cycles_sized", r.cycles}};
  return writeProject(a, st, loaded, compiled, platform, bindings, begin);
}

// A model's decode layer, sized at every ctx (llm::sizingContexts) as the estimator simulates it: one
// simulation at the bindings shows the depths hold.
int emitSizedModel(const EmitArgs& a, Stages& st, const std::string& command, const Loaded& loaded,
                   CompileResult& compiled, const Platform& platform, const Bindings& bindings,
                   std::chrono::steady_clock::time_point begin) {
  int64_t maxCtx = compiled.options.maxima.at("ctx");
  compiled.network.sizedFor["ctx"] = {1, maxCtx};
  sim::SimResult r =
      sim::runDirect(sim::compileProgram(compiled.network, bindings, platform), sim::RunConfig{});
  if (r.deadlock) {  // the sizer verified every sampled ctx; another may still deadlock
    std::cerr << command << ": the sized decode layer deadlocks at ctx " << bindings.at("ctx")
              << "; nothing was written (please report it)\n";
    return 3;
  }
  std::string at;
  nlohmann::json sizedAt = nlohmann::json::array();
  for (const Bindings& b : llm::sizingContexts(maxCtx, compiled.options.tile)) {
    at += (at.empty() ? "" : ", ") + std::to_string(b.at("ctx"));
    sizedAt.push_back(bindingsJson(b));
  }
  // The project runs every ctx up to max_ctx: checked at each power of two and one past it too.
  std::string checked;
  nlohmann::json checkedJson = nlohmann::json::array();
  for (int64_t c : sizing::rangeProbes(1, maxCtx)) {
    if (sim::runDirect(sim::compileProgram(compiled.network, {{"ctx", c}}, platform), sim::RunConfig{})
            .deadlock) {
      std::cerr << command << ": the sized decode layer deadlocks at ctx " << c
                << "; nothing was written (please report it)\n";
      return 3;
    }
    checked += (checked.empty() ? "" : ", ") + std::to_string(c);
    checkedJson.push_back(c);
  }
  int64_t bits = 0;
  for (const Fifo& f : compiled.network.fifos) bits += f.storedTokens() * f.width;
  char line[512];
  std::snprintf(line, sizeof line, "[2/6] simulate  at ctx %s (as for the decode estimate)\n", at.c_str());
  st.stage(line);
  std::snprintf(line, sizeof line, "[3/6] size      %zu FIFOs: %lld bits, to hold at each of those ctx\n",
                compiled.network.fifos.size(), static_cast<long long>(bits));
  st.stage(line);
  st.stage("[3/6] for ctx   1.." + std::to_string(maxCtx) + ": no deadlock at ctx " + checked + "\n");
  std::snprintf(line, sizeof line,
                "[4/6] verify    %lld cycles at ctx %lld with the sized FIFOs, no deadlock\n",
                static_cast<long long>(r.cycles), static_cast<long long>(bindings.at("ctx")));
  st.stage(line);
  if (!a.verbose) {
    std::snprintf(line, sizeof line, "FIFOs sized to hold at ctx %s; %lld cycles at ctx %lld\n", at.c_str(),
                  static_cast<long long>(r.cycles), static_cast<long long>(bindings.at("ctx")));
    st.sizedLine = line;
  }
  st.out["sizing"] = {{"fifos", compiled.network.fifos.size()},
                      {"total_bits", bits},
                      {"sized_at", sizedAt},
                      {"checked_at", checkedJson},
                      {"sized_for", {{"ctx", {1, maxCtx}}}},
                      {"cycles_sized", r.cycles}};
  return writeProject(a, st, loaded, compiled, platform, bindings, begin);
}

// What the project's atomic write would refuse at the end, refused before the stages run; and a folder
// that holds the input, which --force would delete.
void checkProjectFolder(const EmitArgs& a, const std::string& command) {
  namespace fs = std::filesystem;
  std::string dir = projectDir(a.emit.dir);
  std::string stem = fs::path(dir).filename().string();
  if (a.emit.dir == "-") throw UserError(command + ": error: -o names the project folder; '-' is not one");
  if (stem.empty() || stem == "." || stem == "..")
    throw UserError(a.emit.dir +
                    ": error: not a folder name stc can replace (name the project's own folder)");
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw UserError(a.emit.dir + ": error: exists and is not a folder");
  bool empty = fs::is_empty(dir, ec);
  if (ec) throw UserError(a.emit.dir + ": error: cannot read the folder: " + ec.message());
  if (!empty && !a.emit.force)
    throw UserError(a.emit.dir + ": error: the folder is not empty (pass --force to replace it)");
  std::string folder = fs::weakly_canonical(dir, ec).string() + "/";
  std::string input = fs::weakly_canonical(a.input.path, ec).string();
  if (!ec && input.rfind(folder, 0) == 0)
    throw UserError(a.emit.dir + ": error: the folder holds the input " + a.input.path +
                    ", which replacing it would delete");
}

int emitCommand(const EmitArgs& args, const std::string& command) {
  auto begin = std::chrono::steady_clock::now();
  EmitArgs a = args;  // (its settings with the axes --bind fixes at import)
  Stages st;
  st.verbose = a.verbose;
  st.json = a.json;
  st.out["command"] = command.substr(4);
  st.out["input"] = a.input.path;
  checkProjectFolder(a, command);
  if (a.timeline && !a.json)
    throw UserError(command + ": error: --timeline adds to --json's object: pass --json too");
  if (!a.html.empty()) {
    checkOutputPaths({a.html}, {a.input.path, a.input.platform});
    std::error_code ec;
    std::string folder = std::filesystem::weakly_canonical(projectDir(a.emit.dir), ec).string() + "/";
    if (std::filesystem::weakly_canonical(a.html, ec).string().rfind(folder, 0) == 0)
      throw UserError(command + ": error: --html " + a.html + " lies in the project folder " + a.emit.dir +
                      ", which the project replaces: write it elsewhere");
  }
  Bindings given = parseSymbolBindings(command, a.input.ctx, a.input.binds);
  a.input.settings = fixBoundAxesAtImport(command, a.input.path, a.input.settings, given);
  Platform platform = a.input.loadPlatformArg();
  Loaded loaded = loadGraph(a, command);
  std::vector<std::string> settings = loaded.settings;
  settings.insert(settings.end(), a.input.settings.begin(), a.input.settings.end());
  for (const auto& s : settings)
    if (s.rfind("quant=", 0) == 0) loaded.quant = s.substr(6);
  settings.push_back("quant=" + loaded.quant);  // a model's own quantisation unless --set quant= says otherwise
  CompileOptions options = parseCompileOptions(settings, platform);
  // The kernels' buffers hold max_SYMBOL, no more: said before compiling when the settings or the model
  // give the maximum, and after for a graph's defaults.
  auto checkMaxima = [&](const std::map<std::string, int64_t>& maxima) {
    for (const auto& [symbol, value] : given) {
      auto maximum = maxima.find(symbol);
      if (maximum != maxima.end() && value > maximum->second)
        throw UserError(command + ": error: " + (symbol == "ctx" ? "--ctx " : "--bind " + symbol + "=") +
                        std::to_string(value) + " is beyond the " + (loaded.model ? "model's" : "design's") +
                        " max_" + symbol + " (" + std::to_string(maximum->second) + ")");
    }
  };
  std::map<std::string, int64_t> known = options.maxima;
  if (loaded.model) known.emplace("ctx", loaded.model->maxCtx);
  checkMaxima(known);
  if (loaded.model && !a.allowOverfit) {
    ModelSpec held = *loaded.model;  // as compiled: --set quant= and max_ctx= change what HBM holds
    held.quant = loaded.quant;
    held.maxCtx = known.at("ctx");
    int64_t bytes = modelHbmBytes(held), hbm = platform.hbm.channels * platform.hbm.channelBytes;
    if (bytes > hbm)
      throw UserError(command + ": error: the model's weights and KV caches at max_ctx (" +
                      std::to_string(bytes) + " bytes) do not fit " + platform.name + "'s HBM (" +
                      std::to_string(hbm) +
                      " bytes); nothing was written (pass --allow-overfit to write it anyway)");
  }

  st.stage("[1/6] compile   ");
  CompileResult compiled;
  if (loaded.model) {  // the decode layer of `stc simulate --decode`, at its DSP share unless pinned
    bool pinned = false;
    for (const auto& s : settings) pinned = pinned || s.rfind("unroll_budget=", 0) == 0;
    compiled = llm::compileDevice(*loaded.model, platform, options,
                                  pinned ? options.unrollBudget : llm::kDecodeShare)
                   .decodeLayer;
    compiled.network.name = loaded.graph.name;
  } else {
    compiled = compileGraph(loaded.graph, platform, options);
  }
  const CompileReport& r = compiled.report;
  char line[512];
  std::snprintf(line, sizeof line, "%d kernels, %d converters, %d DMAs, %d FIFOs in %d group(s); %.2f ms\n",
                r.kernels, r.converters, r.dmas, r.fifos, r.groups, r.compileSeconds * 1e3);
  st.stage(line);
  // A model's decode layer is sized as it compiles: its resources are the project's; a graph's are
  // said again after sizing.
  st.stage(std::string(loaded.model ? "[1/6] resources " : "[1/6] resources at the compiled depths: ") +
           resourcesText(r.resources, platform) + "\n");
  requireFit(command, loaded.model ? "the decode layer" : "the design", r.resources, platform,
             a.allowOverfit);

  checkMaxima(compiled.options.maxima);
  refuseUnusedBindings(command, compiled.network.symbols(), given, a.input.path,
                       isOnnxPath(a.input.path) ? importDims(a.input.settings, a.input.path)
                                                : std::map<std::string, int64_t>{});
  // A sized file's depths hold over its sized_for range: an unbound symbol takes a value in it.
  if (loaded.network) compiled.network.sizedFor = loaded.network->sizedFor;
  Bindings bindings = completeBindings(compiled, given);
  st.out["compile"] = {{"kernels", r.kernels}, {"converters", r.converters}, {"dmas", r.dmas},
                       {"fifos", r.fifos},     {"groups", r.groups},         {"seconds", r.compileSeconds}};
  st.out["bindings"] = bindingsJson(bindings);
  if (loaded.network) return emitWithFileDepths(a, st, command, loaded, compiled, platform, bindings, begin);
  if (loaded.model) return emitSizedModel(a, st, command, loaded, compiled, platform, bindings, begin);
  sizing::SizingOptions sizingOptions;
  sizingOptions.platform = platform;
  sizingOptions.bindings = bindings;
  sizingOptions.fits = [&](const Network& candidate) {  // as stc size-fifos and stc dse: whole blocks
    return fitsWithDepths(compiled, candidate, platform);
  };
  // ctx changes at run time (the kernels take it): the depths must hold from 1 to its maximum.
  bool overCtx = compiled.network.symbols().count("ctx") > 0;
  int64_t maxCtx = overCtx ? compiled.options.maxima.at("ctx") : 0;
  st.stage(overCtx ? "[2/6] simulate  (unbounded FIFOs, ctx 1.." + std::to_string(maxCtx) + ") ...\r"
                   : std::string("[2/6] simulate  (unbounded FIFOs) ...\r"));
  Network sized;
  std::vector<sizing::RangeCheck> checks;
  sizing::SizingResult s =
      overCtx ? sizing::sizeFifosOverRange(compiled.network, sizingOptions, "ctx", 1, maxCtx,
                                           compiled.options.tile, sized, checks, {bindings.at("ctx")})
              : sizing::sizeFifos(compiled.network, sizingOptions, sized);
  if (s.trueDeadlock) {
    std::cerr << command << ": the network deadlocks even with unbounded FIFOs; nothing was written\n";
    return 3;
  }
  int64_t cyclesUnbounded = s.cyclesUnbounded, cyclesSized = s.cyclesSized;  // at the bindings
  std::string checkedAt, over;
  for (const sizing::RangeCheck& c : checks) {
    checkedAt += (checkedAt.empty() ? "" : ", ") + std::to_string(c.value);
    if (c.cycles == 0) {
      std::cerr << command << ": the sized network deadlocks at ctx " << c.value
                << "; nothing was written (please report it)\n";
      return 3;
    }
    if (!c.ok) over += (over.empty() ? "" : ", ") + std::to_string(c.value);
    if (c.value == bindings.at("ctx")) cyclesUnbounded = c.unbounded, cyclesSized = c.cycles;
  }
  double mhz = platform.kernelClockMhz;
  std::string at;
  for (const auto& [sym, value] : bindings) at += (at.empty() ? " at " : ", ") + sym + "=" + std::to_string(value);
  std::snprintf(line, sizeof line, "[2/6] simulate  %lld cycles (%.2f us at %g MHz) with unbounded FIFOs%s\n",
                static_cast<long long>(cyclesUnbounded), static_cast<double>(cyclesUnbounded) / mhz, mhz,
                at.c_str());
  st.stage(line);
  std::snprintf(line, sizeof line,
                "[3/6] size      %zu FIFOs: %lld bits (at maximum occupancy %lld, holding every token %lld); "
                "LP %.1f ms\n",
                s.fifos.size(), static_cast<long long>(s.totalBits),
                static_cast<long long>(s.baselineMaxOccupancyBits),
                static_cast<long long>(s.baselineFullBits), s.lpSeconds * 1e3);
  st.stage(line);
  if (s.paced) st.stage("[3/6] paced     " + pacedLine(s));
  if (overCtx)
    st.stage("[3/6] for ctx   1.." + std::to_string(maxCtx) + ": no deadlock at ctx " + checkedAt +
             (over.empty() ? "; each within " + toleranceText(s) + " of its unbounded run\n"
                           : "; over " + toleranceText(s) + " of unbounded at ctx " + over + "\n"));
  std::snprintf(line, sizeof line,
                "[4/6] verify    %lld cycles with the sized FIFOs (%+.2f%%), no deadlock; %d round(s)\n",
                static_cast<long long>(cyclesSized),
                cyclesUnbounded ? 100.0 * static_cast<double>(cyclesSized - cyclesUnbounded) /
                                      static_cast<double>(cyclesUnbounded)
                                : 0.0,
                s.rounds);
  st.stage(line);
  if (overCtx) sized.sizedFor["ctx"] = {1, maxCtx};
  compiled.network = sized;
  updateResources(compiled, platform);  // the sized FIFOs' memory
  st.stage("[4/6] resources " + resourcesText(compiled.report.resources, platform) + "\n");
  requireFit(command, "the design with its sized FIFOs", compiled.report.resources, platform, a.allowOverfit);

  std::string holds;  // the range the depths hold over, and where they run slower than unbounded
  if (overCtx) holds = "; the depths hold for ctx 1.." + std::to_string(maxCtx);
  if (!over.empty()) holds += ", over " + toleranceText(s) + " of unbounded at ctx " + over;
  if (!a.verbose) {
    std::snprintf(line, sizeof line, "FIFOs sized: %zu, %lld bits; %lld cycles (unbounded %lld)%s\n",
                  s.fifos.size(), static_cast<long long>(s.totalBits), static_cast<long long>(cyclesSized),
                  static_cast<long long>(cyclesUnbounded), holds.c_str());
    st.sizedLine = line;
  }
  st.out["sizing"] = {
      {"fifos", s.fifos.size()},
      {"sized_fifos", sizedFifosJson(s.fifos)},
      {"total_bits", s.totalBits},
      {"baseline_max_occupancy_bits", s.baselineMaxOccupancyBits},
      {"baseline_full_bits", s.baselineFullBits},
      {"cycles_unbounded", cyclesUnbounded},
      {"cycles_sized", cyclesSized},
      {"sized_for", overCtx ? nlohmann::json{{"ctx", {1, maxCtx}}} : nlohmann::json::object()},
      {"checked", rangeChecksJson(checks)},
      {"paced", s.paced},
      {"rounds", s.rounds},
      {"lp_seconds", s.lpSeconds}};
  return writeProject(a, st, loaded, compiled, platform, bindings, begin);
}

std::shared_ptr<EmitArgs> addOptions(CLI::App& app) {
  auto a = std::make_shared<EmitArgs>();
  a->input.addOptions(app);
  app.add_option("-o,--output", a->emit.dir, "project folder to write")->required();
  app.add_option("--inputs", a->emit.inputsFile, "graph inputs for the C simulation: raw little-endian f32, in order");
  app.add_option("--seed", a->emit.seed, "seed of the random inputs and weights (default 1)");
  app.add_option("--layers", a->layers, "layers the C simulation chains (default: the model's, 1 for a graph)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--rtol", a->emit.rtol, "relative tolerance of the C simulation's check (default 1e-3)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--atol", a->emit.atol, "absolute tolerance of the C simulation's check (default 1e-3)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_flag("--force", a->emit.force, "replace a non-empty project folder");
  app.add_flag("--allow-overfit", a->allowOverfit,
               "emit a design that does not fit the platform (else exit 1)");
  app.add_flag("--json", a->json, "print one JSON object at the end instead of the stages' lines");
  app.add_flag("--timeline", a->timeline,
               "with --json: add the sized network's simulation with the timeline stc report draws");
  app.add_option("--html", a->html,
                 "write the report of the sized design's run as one self-contained HTML page");
  return a;
}

}  // namespace

Runner addEmit(CLI::App& app) {
  auto a = addOptions(app);
  return [a]() { return emitCommand(*a, "stc emit"); };
}

Runner addRun(CLI::App& app) {
  auto a = addOptions(app);
  a->verbose = true;
  app.add_flag("--no-conform", a->noConform,
               "skip the last stage: the traced C simulation checked against the network (make conform), "
               "and the kernels run concurrently at the emitted depths (make dfsim)");
  return [a]() { return emitCommand(*a, "stc run"); };
}

}  // namespace stc::cli
