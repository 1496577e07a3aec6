// stc dse GRAPH|MODEL [--space FILE.yaml] [-j N] [-o DIR] [--pick CRITERION]: the design space explored
// (compiler/dse/explore.cpp), every point and the Pareto front written to DIR as CSV, JSON and SVG, and
// with --pick the chosen point's sized network and schedule, ready for stc emit.
#include "tools/stc/dse.h"

#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "compiler/dse/explore.h"
#include "compiler/dse/tiling.h"
#include "compiler/frontend/model_builder.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/model_spec.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/llm/decode.h"
#include "compiler/pipeline.h"
#include "tools/stc/commands.h"

namespace stc::cli {
namespace dse_cli {

namespace {

Subject loadSubject(const DseArgs& a, const Platform& platform) {
  Subject s;
  if (isOnnxPath(a.input)) {
    s.graph = loadGraphFile(a.input, a.settings);
  } else {
    importDims(a.settings, a.input);  // refuses dim.AXIS: not an ONNX model
    std::string text = readTextFile(a.input);
    switch (detectFileKind(text, a.input)) {
      case FileKind::kGraph:
        s.graph = parseGraph(text, a.input);
        break;
      case FileKind::kModel: {
        ModelSpec model = parseModel(text, a.input);
        if (a.prompt && (*a.prompt < 1 || *a.prompt > model.maxCtx))
          throw UserError("stc dse: error: --prompt must be 1 to the model's max_ctx (" +
                          std::to_string(model.maxCtx) + ")");
        // The prompt padded to the prefill layer's rows as `stc simulate --decode` pads it (which also
        // weighs smaller designs with the prompt's last tokens as decode steps), its K and V held on chip
        // within the default on-chip budget.
        int64_t rows = a.prompt ? llm::paddedPrefillRows(model, *a.prompt) : 0;
        if (a.prompt && rows != *a.prompt)
          s.note = "a prompt of " + std::to_string(*a.prompt) + " tokens pads to the prefill layer of " +
                   std::to_string(rows) +
                   " rows (as stc simulate --decode pads it; its causal attention never reads the rows after "
                   "the prompt)";
        s.graph = a.prompt ? buildPrefillLayer(
                                 model, rows,
                                 parseCompileOptions({"quant=" + model.quant}, platform).onchipBudgetBytes)
                           : buildDecodeLayer(model);
        s.base = {"quant=" + model.quant, "max_ctx=" + std::to_string(model.maxCtx)};
        s.fromModel = true;
        break;
      }
      default:
        throw UserError(a.input +
                        ":1:1: error: expected a graph or model file (its first key 'graph' or "
                        "'model') or an ONNX model");
    }
  }
  if (a.prompt && !s.fromModel) throw UserError("stc dse: error: --prompt needs a model file");
  s.base.insert(s.base.end(), a.settings.begin(), a.settings.end());
  return s;
}

std::string describe(const dse::Point& p) {
  char line[256];
  std::snprintf(line, sizeof line, "%10lld cycles %12lld bytes %6lld DSP %5lld BRAM %4lld URAM ",
                static_cast<long long>(p.cycles), static_cast<long long>(p.onchipBytes),
                static_cast<long long>(p.resources.dsp), static_cast<long long>(p.resources.bram18k),
                static_cast<long long>(p.resources.uram));
  std::string s = line;
  for (const std::string& kv : p.settings) s += " " + kv;
  return s;
}

// A setting naming an op (tk.OP, tn.OP, row_block.OP, lane_ii.OP) must name one of the graph's (missingOp):
// else every point would be rejected for the same reason and the sweep end with an empty front.
void checkOpSettings(const Sweep& s) {
  for (const std::string& kv : s.subject.base) {
    std::string key = kv.substr(0, kv.find('=')), why = missingOp(key, s.subject.graph);
    if (!why.empty()) throw UserError("stc dse: error: --set " + key + ": " + why);
  }
  for (const SpaceKnob& k : s.space.knobs) {
    std::string why = missingOp(k.key, s.subject.graph);
    if (why.empty()) continue;
    if (k.valueLocs.empty()) throw UserError("stc dse: error: knob '" + k.key + "': " + why);
    throw UserError(formatError(k.valueLocs[0], "field '" + k.key + "': " + why));
  }
}

}  // namespace

Sweep prepareSweep(const DseArgs& a) {
  Sweep s;
  s.platform = platformFromArg(a.platform);
  s.subject = loadSubject(a, s.platform);
  parseCompileOptions(s.subject.base, s.platform);  // a bad --set: said before anything runs
  s.space = a.space.empty() ? dse::defaultSpace(s.platform) : dse::loadSpace(a.space, s.platform);
  checkOpSettings(s);
  s.bindings = parseSymbolBindings("stc dse", a.ctx, a.binds);
  requireBindings(inferShapes(s.subject.graph).symbols(), s.bindings, a.input,
                  s.subject.fromModel ? "layer" : "graph");
  if (!a.pick.empty()) dse::checkPick(a.pick, s.space.size());  // a typo: said before the sweep, not after
  if (a.jobs < 0) throw UserError("stc dse: error: -j expects a number of threads (0: every core)");
  return s;
}

int writeResults(const dse::Exploration& e, const Sweep& s, const DseArgs& a,
                 const std::function<Network(int)>& sizedOf, const std::string& took) {
  std::error_code ec;
  std::filesystem::create_directories(a.outDir, ec);
  if (ec) throw UserError(a.outDir + ": error: cannot create the folder: " + ec.message());
  auto path = [&](const std::string& name) { return (std::filesystem::path(a.outDir) / name).string(); };
  writeFileAtomic(path("points.csv"), dse::pointsCsv(e));
  writeFileAtomic(path("points.json"), dse::pointsJson(e));
  writeFileAtomic(path("front.svg"), dse::frontSvg(e, s.subject.graph.name + ": the Pareto front"));

  int rejected = 0, deadlocked = 0, fit = 0;
  for (const dse::Point& p : e.points) {
    rejected += p.status == dse::Point::Status::kRejected;
    deadlocked += p.status == dse::Point::Status::kDeadlock;
    fit += p.status == dse::Point::Status::kOk && p.fits;
  }
  if (!s.subject.note.empty()) std::printf("%s: %s\n", s.subject.graph.name.c_str(), s.subject.note.c_str());
  std::printf("%s: %zu points, %d distinct networks sized; %d rejected, %d deadlocked, %d fit; %s\n",
              s.subject.graph.name.c_str(), e.points.size(), e.compiledNetworks, rejected, deadlocked, fit,
              took.c_str());
  for (const dse::Point& p : e.points)
    if (p.status == dse::Point::Status::kRejected && p.sameAs < 0) {  // one example: the rest are in the CSV
      std::printf("  rejected, e.g. %s\n", p.message.c_str());
      break;
    }
  std::printf("front (%zu points: none has fewer cycles, on-chip bytes and DSPs at once):\n", e.front.size());
  for (int i : e.front) std::printf("  #%-4d %s\n", i, describe(e.points[static_cast<size_t>(i)]).c_str());
  std::printf("wrote %s, %s, %s\n", path("points.csv").c_str(), path("points.json").c_str(),
              path("front.svg").c_str());

  if (a.pick.empty()) return 0;
  int picked = dse::pickPoint(e, a.pick);  // none to pick: the points are written to see why
  const dse::Point& p = e.points[static_cast<size_t>(picked)];
  Network net = sizedOf(picked);
  net.sourceSettings = s.subject.base;
  net.sourceSettings.insert(net.sourceSettings.end(), p.settings.begin(), p.settings.end());
  if (s.subject.fromModel) {  // the layer's graph beside the network, as its source
    writeFileAtomic(path("picked.graph.yaml"), emitGraph(s.subject.graph));
    net.sourceFile = "picked.graph.yaml";
  } else {
    namespace fs = std::filesystem;  // as the network's folder sees it (stc emit looks there too)
    net.sourceFile = fs::relative(fs::weakly_canonical(a.input), fs::weakly_canonical(a.outDir)).string();
  }
  CompileOptions chosen;  // the lane IIs the point's search chose
  chosen.laneIi = p.laneIi;
  chosen.laneIiOf = p.laneIiOf;
  writeFileAtomic(path("picked.schedule.yaml"), emitSchedule(schedulePins(p.schedules, chosen)));
  writeFileAtomic(path("picked.net.yaml"), emitNetwork(net));
  size_t asked = dse::checkPick(a.pick, e.points.size());  // a number, or the space's size for a name
  std::string same = asked < e.points.size() && static_cast<size_t>(picked) != asked
                         ? ", the same network as point " + a.pick
                         : "";
  std::printf("picked #%d (%s%s): wrote %s (sized) and %s\n", picked, a.pick.c_str(), same.c_str(),
              path("picked.net.yaml").c_str(), path("picked.schedule.yaml").c_str());
  std::string emitFlags = a.platform.empty() ? "" : " -p " + a.platform;
  for (const auto& [symbol, value] : s.bindings)
    emitFlags += symbol == "ctx" ? " --ctx " + std::to_string(value)
                                 : " --bind " + symbol + "=" + std::to_string(value);
  std::printf("emit it with: stc emit %s -o DIR%s\n", path("picked.net.yaml").c_str(), emitFlags.c_str());
  return 0;
}

namespace {

int dseCommand(const DseArgs& a) {
  auto begin = std::chrono::steady_clock::now();
  Sweep s = prepareSweep(a);
  std::optional<tbb::global_control> threads;
  if (a.jobs > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(a.jobs));

  ProgressLine line("dse");
  dse::Progress progress;
  if (line.terminal())
    progress = [&line](int compiled, int sized, int points) {
      line.show(std::to_string(compiled) + "/" + std::to_string(points) + " points compiled, " +
                std::to_string(sized) + " networks sized");
    };
  dse::Exploration e = dse::explore(s.subject.graph, s.platform, s.subject.base, s.space, s.bindings, progress);
  line.clear();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  return writeResults(e, s, a, [&](int i) { return e.sized[static_cast<size_t>(i)]; }, took);
}

// Which of the three ways the command runs, its options checked against it.
int dispatch(DseArgs& a, const CLI::App& app) {
  auto given = [&](const char* option) { return app.count(option) > 0; };
  const bool collect = !a.collect.empty(), worker = !a.worker.empty();
  if (collect + worker + a.slurm > 1)
    throw UserError("stc dse: error: --slurm, --collect and --worker go alone, one at a time");
  if (!a.slurm)
    for (const char* slurmOnly : {"--partition", "--max-parallel", "--time", "--chunk-size", "--wait"})
      if (given(slurmOnly)) throw UserError(std::string("stc dse: error: ") + slurmOnly + " needs --slurm");
  if (!a.chunks.empty() && !a.slurm && !worker)
    throw UserError("stc dse: error: --chunk needs --slurm (to retry chunks) or --worker");
  if (collect || worker) {
    if (!a.input.empty())
      throw UserError("stc dse: error: --" + std::string(collect ? "collect" : "worker") +
                      " takes no input: the sweep folder's sweep.json names it");
    for (const char* sweepOwn : {"--space", "--prompt", "--ctx", "--bind", "--set", "--platform", "--output"})
      if (given(sweepOwn))
        throw UserError(std::string("stc dse: error: ") + sweepOwn + " is the sweep's own (in sweep.json)");
    return collect ? slurmCollect(a) : slurmWorker(a);
  }
  if (a.input.empty()) throw UserError("stc dse: error: a graph, ONNX or model file is required");
  return a.slurm ? slurmSubmit(a) : dseCommand(a);
}

}  // namespace
}  // namespace dse_cli

Runner addDse(CLI::App& app) {
  using dse_cli::DseArgs;
  auto a = std::make_shared<DseArgs>();
  app.add_option("input", a->input, "graph (models/graphs/*.yaml), ONNX model or model file (models/*.yaml)");
  app.add_option("-p,--platform", a->platform,
                 "platform file, or a built-in platform: u55c (the default), u280");
  app.add_option("--space", a->space,
                 "design space file: `space: {KNOB: [VALUES]}` with stc compile's --set keys (default: 96 "
                 "points over tile, unroll_budget, max_stripe, row_block, onchip_budget_bytes)");
  app.add_option("-j,--jobs", a->jobs,
                 "threads (default 0: every core; with --slurm, each task's CPUs, default 1); results are the "
                 "same at any count");
  app.add_option("-o,--output", a->outDir,
                 "folder for points.csv, points.json, front.svg (default: dse); with --slurm, the shared "
                 "folder of the sweep");
  app.add_option("--pick", a->pick,
                 "write a point's sized network and schedule: cycles (the fastest front point), onchip (the "
                 "front's fewest on-chip bytes), dsp (its fewest DSPs), or a point's number");
  app.add_option(
      "--prompt", a->prompt,
      "a model's prefill layer for a prompt of this many tokens, its rows padded as stc simulate pads "
      "them (a multiple of 16 beyond 16 rows; default: its decode layer)");
  app.add_option("--ctx", a->ctx, "bind the KV-cache length symbol ctx");
  app.add_option("--bind", a->binds, "bind a symbol, NAME=N (repeatable)");
  app.add_option("--set", a->settings, "compiler setting for every point, KEY=VALUE (see stc compile)");
  const char* slurm = "Slurm (a sweep on a cluster; -o names a folder every node sees)";
  app.add_flag("--slurm", a->slurm,
               "submit the points without a result as a Slurm job array (sbatch), a task per chunk; a rerun "
               "submits only what is missing")
      ->group(slurm);
  app.add_option("--partition", a->partition, "the Slurm partition (default: the cluster's)")->group(slurm);
  app.add_option("--max-parallel", a->maxParallel, "at most this many tasks at once (sbatch --array=...%N)")
      ->group(slurm);
  app.add_option("--time", a->time, "each task's time limit, as sbatch --time takes it")->group(slurm);
  app.add_option("--chunk-size", a->chunkSize, "points per task (default 8)")->group(slurm);
  app.add_option("--chunk", a->chunks, "with --slurm, submit only these chunks (repeatable): a retry")
      ->group(slurm);
  app.add_flag("--wait", a->wait, "wait for the job, then collect")->group(slurm);
  app.add_option("--collect", a->collect,
                 "merge a sweep folder's results into points.csv, points.json and front.svg, as a local run "
                 "writes them (with --pick, the picked point too)")
      ->group(slurm);
  app.add_option("--worker", a->worker, "one array task (what the job script runs)")->group("");
  return [a, &app]() {
    return dse_cli::dispatch(*a, app);
  };
}

}  // namespace stc::cli
