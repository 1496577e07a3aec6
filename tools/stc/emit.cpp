// stc emit MODEL -o DIR and stc run MODEL -o DIR: the flow that ends in a Vitis HLS project.
//
//   load the graph (YAML graph, ONNX, or an LLM model file: its decode layer, chained over its layers)
//   -> compile -> simulate with unbounded FIFOs -> size the FIFOs (LP) -> simulate again to verify
//   -> emit (compiler/emit). `run` prints each stage's figures; `emit` prints what it wrote.
#include "compiler/emit/emit.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "compiler/frontend/model_builder.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/model_spec.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/llm/decode.h"
#include "compiler/sizing/fifo_sizing.h"
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
};

struct Loaded {
  Graph graph;
  int layers = 1;
  std::string quant = "none";  // what the model or settings ask for
  std::optional<Network> network;        // a network file: its FIFO depths are the ones to emit
  std::optional<ModelSpec> model;        // a model file: its decode layer, as the estimator sizes it
  std::vector<std::string> settings;     // the settings it was compiled with
};

// The graph a compiled network came from: its `source` file, as written or next to the network file.
Loaded loadNetworkSource(const std::string& path, const std::string& text, const std::string& command) {
  Loaded l;
  l.network = parseNetwork(text, path);
  const std::string& src = l.network->sourceFile;
  if (src.empty())
    throw UserError(path + ": error: " + command +
                    " needs what the kernels compute, and this network file holds their timing only (it has no "
                    "'source', as `stc compile` writes): pass the graph, ONNX or model file instead");
  std::string resolved = src;
  std::error_code ec;
  if (!std::filesystem::exists(resolved, ec) && std::filesystem::path(src).is_relative())
    resolved = (std::filesystem::path(path).parent_path() / src).string();
  if (!std::filesystem::exists(resolved, ec))
    throw UserError(path + ": error: field 'source': the network was compiled from '" + src + "', which cannot be read");
  l.graph = loadGraphFile(resolved);
  l.settings = l.network->sourceSettings;
  for (const auto& s : l.settings)
    if (s.rfind("quant=", 0) == 0) l.quant = s.substr(6);
  return l;
}

// The recompiled network must be the file's up to depths (and widths, which quant changes).
void takeDepths(const Network& file, const std::string& path, Network& compiled) {
  auto mismatch = [&](const std::string& what) {
    throw UserError(path + ": error: the network no longer matches what its source compiles to (" + what +
                    "); compile it again");
  };
  if (file.tasks.size() != compiled.tasks.size() || file.fifos.size() != compiled.fifos.size())
    mismatch(std::to_string(file.tasks.size()) + " tasks and " + std::to_string(file.fifos.size()) + " FIFOs, against " +
             std::to_string(compiled.tasks.size()) + " and " + std::to_string(compiled.fifos.size()));
  for (size_t i = 0; i < file.tasks.size(); ++i)
    if (file.tasks[i].name != compiled.tasks[i].name) mismatch("task '" + file.tasks[i].name + "'");
  for (size_t i = 0; i < file.fifos.size(); ++i) {
    const Fifo& f = file.fifos[i];
    if (f.name != compiled.fifos[i].name) mismatch("FIFO '" + f.name + "'");
    if (f.unbounded())
      throw UserError(path + ": error: FIFO '" + f.name + "' is unbounded: size the FIFOs first (stc size-fifos)");
    compiled.fifos[i].depth = f.depth;
  }
}

Loaded loadGraph(const EmitArgs& a, const std::string& command) {
  Loaded l;
  const std::string& path = a.input.path;
  if (isOnnxPath(path)) {
    l.graph = loadGraphFile(path);
  } else {
    std::string text = readTextFile(path);
    switch (detectFileKind(text, path)) {
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

// The project folder as given, without a trailing separator ("out/" -> "out").
std::string projectDir(const std::string& dir) {
  std::filesystem::path p(dir);
  while (p.has_parent_path() && p.filename().empty()) p = p.parent_path();
  return p.string();
}

void writeProject(const EmitArgs& a, const Loaded& loaded, const CompileResult& compiled, const Platform& platform,
                  const Bindings& bindings, std::chrono::steady_clock::time_point begin) {
  EmitOptions eo = a.emit;
  eo.dir = projectDir(eo.dir);
  eo.layers = loaded.layers;
  eo.bindings = bindings;
  if (loaded.model)  // the host's decode loop appends each token's keys and values to the caches
    for (const auto& [cache, fresh] : decodeLayerCaches(loaded.graph))
      eo.caches.push_back({cache, fresh, "ctx"});
  progress(a.verbose, "[5/5] emit      ...\r");
  EmitSummary e = emitProject(loaded.graph, compiled, platform, eo);
  std::string tops;
  for (const auto& t : e.tops) tops += (tops.empty() ? "" : ", ") + t;
  progress(a.verbose, "[5/5] emit      ");
  char line[512];
  std::snprintf(line, sizeof line, "%s: %d files, %.1f KiB; kernels %s; %d layer(s) in the C simulation; %.2f s\n",
                eo.dir.c_str(), e.files, static_cast<double>(e.bytes) / 1024.0, tops.c_str(), eo.layers, seconds(begin));
  std::cout << line;
  for (const std::string& note : e.notes) std::cout << note << "\n";
}

// A sized network file: emit its depths after one simulation shows they do not deadlock.
int emitWithFileDepths(const EmitArgs& a, const std::string& command, const Loaded& loaded, CompileResult& compiled,
                       const Platform& platform, const Bindings& bindings, std::chrono::steady_clock::time_point begin) {
  takeDepths(*loaded.network, a.input.path, compiled.network);
  sim::Program prog = sim::compileProgram(compiled.network, bindings, platform);
  sim::SimResult r = sim::runDirect(prog, sim::RunConfig{});
  if (r.deadlock) {
    std::cerr << command << ": the network deadlocks with the depths of " << a.input.path
              << " (stc simulate shows where); nothing was written\n";
    return 3;
  }
  char line[256];
  progress(a.verbose, "[4/5] verify    ");
  std::snprintf(line, sizeof line, "%lld cycles with the file's FIFO depths, no deadlock\n", static_cast<long long>(r.cycles));
  std::cout << line;
  writeProject(a, loaded, compiled, platform, bindings, begin);
  std::cout << "next: make -C " << a.emit.dir << " csim\n";
  return 0;
}

// A model's decode layer, sized at every ctx (llm::sizingContexts) as the estimator simulates it: one
// simulation at the bindings shows the depths hold.
int emitSizedModel(const EmitArgs& a, const std::string& command, const Loaded& loaded,
                   CompileResult& compiled, const Platform& platform, const Bindings& bindings,
                   std::chrono::steady_clock::time_point begin) {
  int64_t maxCtx = compiled.options.maxima.at("ctx");
  sim::SimResult r =
      sim::runDirect(sim::compileProgram(compiled.network, bindings, platform), sim::RunConfig{});
  if (r.deadlock) {  // the sizer verified every sampled ctx; another may still deadlock
    std::cerr << command << ": the sized decode layer deadlocks at ctx " << bindings.at("ctx")
              << "; nothing was written (please report it)\n";
    return 3;
  }
  std::string at;
  for (const Bindings& b : llm::sizingContexts(maxCtx, compiled.options.tile))
    at += (at.empty() ? "" : ", ") + std::to_string(b.at("ctx"));
  int64_t bits = 0;
  for (const Fifo& f : compiled.network.fifos) bits += f.storedTokens() * f.width;
  char line[512];
  std::snprintf(line, sizeof line, "[2/5] simulate  at ctx %s (as for the decode estimate)\n", at.c_str());
  progress(a.verbose, line);
  std::snprintf(line, sizeof line, "[3/5] size      %zu FIFOs: %lld bits, to hold at each of those ctx\n",
                compiled.network.fifos.size(), static_cast<long long>(bits));
  progress(a.verbose, line);
  std::snprintf(line, sizeof line,
                "[4/5] verify    %lld cycles at ctx %lld with the sized FIFOs, no deadlock\n",
                static_cast<long long>(r.cycles), static_cast<long long>(bindings.at("ctx")));
  progress(a.verbose, line);
  writeProject(a, loaded, compiled, platform, bindings, begin);
  if (!a.verbose)
    std::printf("FIFOs sized to hold at ctx %s; %lld cycles at ctx %lld\n", at.c_str(),
                static_cast<long long>(r.cycles), static_cast<long long>(bindings.at("ctx")));
  std::cout << "next: make -C " << a.emit.dir << " csim\n";
  return 0;
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

int emitCommand(const EmitArgs& a, const std::string& command) {
  auto begin = std::chrono::steady_clock::now();
  bool v = a.verbose;
  checkProjectFolder(a, command);
  Bindings given = parseSymbolBindings(command, a.input.ctx, a.input.binds);
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

  progress(v, "[1/5] compile   ");
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
  std::snprintf(line, sizeof line,
                "%d kernels, %d converters, %d DMAs, %d FIFOs in %d group(s); DSP %lld/%lld BRAM_18K %lld/%lld URAM %lld/%lld (%s); %.2f ms\n",
                r.kernels, r.converters, r.dmas, r.fifos, r.groups, static_cast<long long>(r.resources.dsp),
                static_cast<long long>(platform.resources.dsp), static_cast<long long>(r.resources.bram18k),
                static_cast<long long>(platform.resources.bram18k), static_cast<long long>(r.resources.uram),
                static_cast<long long>(platform.resources.uram), r.fits ? "fits" : "DOES NOT FIT", r.compileSeconds * 1e3);
  progress(v, line);

  checkMaxima(compiled.options.maxima);
  Bindings bindings = completeBindings(compiled, given);
  if (loaded.network) return emitWithFileDepths(a, command, loaded, compiled, platform, bindings, begin);
  if (loaded.model) return emitSizedModel(a, command, loaded, compiled, platform, bindings, begin);
  sizing::SizingOptions sizingOptions;
  sizingOptions.platform = platform;
  sizingOptions.bindings = bindings;
  progress(v, "[2/5] simulate  (unbounded FIFOs) ...\r");
  Network sized;
  sizing::SizingResult s = sizing::sizeFifos(compiled.network, sizingOptions, sized);
  if (s.trueDeadlock) {
    std::cerr << command << ": the network deadlocks even with unbounded FIFOs; nothing was written\n";
    return 3;
  }
  double mhz = platform.kernelClockMhz;
  std::string at;
  for (const auto& [sym, value] : bindings) at += (at.empty() ? " at " : ", ") + sym + "=" + std::to_string(value);
  std::snprintf(line, sizeof line, "[2/5] simulate  %lld cycles (%.2f us at %g MHz) with unbounded FIFOs%s\n",
                static_cast<long long>(s.cyclesUnbounded), static_cast<double>(s.cyclesUnbounded) / mhz, mhz, at.c_str());
  progress(v, line);
  std::snprintf(line, sizeof line,
                "[3/5] size      %zu FIFOs: %lld bits (at maximum occupancy %lld, holding every token %lld); LP %.1f ms\n",
                s.fifos.size(), static_cast<long long>(s.totalBits), static_cast<long long>(s.baselineMaxOccupancyBits),
                static_cast<long long>(s.baselineFullBits), s.lpSeconds * 1e3);
  progress(v, line);
  if (s.paced) progress(v, "[3/5] paced     " + pacedLine(s.cyclesPaced));
  std::snprintf(line, sizeof line, "[4/5] verify    %lld cycles with the sized FIFOs (%+.2f%%), no deadlock; %d round(s)\n",
                static_cast<long long>(s.cyclesSized),
                s.cyclesUnbounded ? 100.0 * static_cast<double>(s.cyclesSized - s.cyclesUnbounded) / static_cast<double>(s.cyclesUnbounded) : 0.0,
                s.rounds);
  progress(v, line);
  compiled.network = sized;

  writeProject(a, loaded, compiled, platform, bindings, begin);
  if (!v)
    std::printf("FIFOs sized: %zu, %lld bits; %lld cycles (unbounded %lld)\n", s.fifos.size(),
                static_cast<long long>(s.totalBits), static_cast<long long>(s.cyclesSized),
                static_cast<long long>(s.cyclesUnbounded));
  std::cout << "next: make -C " << a.emit.dir << " csim\n";
  return 0;
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
  return [a]() { return emitCommand(*a, "stc run"); };
}

}  // namespace stc::cli
