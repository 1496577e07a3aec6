// Decode estimation.
//
//   per layer invocation at context c:  L(c) cycles, simulated on the compiled decoder layer (ctx = c)
//   head (final norm, LM head):         Hd cycles
//   prefill of P tokens:                Lp(P) per layer, on the layer compiled for prefillRows(P) rows
//   host overhead per kernel call:      O = invocation_overhead_us * clock
//
//   every network's FIFOs sized by the LP sizer (the decode layer's to hold at every ctx, sampled) and
//   simulated at those depths, the ones the emitted project gets
//
//   host loop    TTFT = layers * (Lp(R) + O) + T + Hd + O;   step(c) = layers * (L(c) + O) + Hd + O
//   device loop  TTFT = layers * Lp(R) + T + Hd + O;          step(c) = layers * L(c) + Hd + O
//   R rows of prefill: prefillRows(P) (the prompt padded), or prefillRowsBelow(P) with the prompt's
//   other tokens as decode steps, T = sum over c = R .. P-1 of layers * (L(c) + O) in the host loop,
//   layers * L(c) + O in the device loop, whichever TTFT is less for that schedule; T = 0 padded
//   latency = TTFT + sum of step(P + i), i = 0 .. G-1;   decode speed = G / (latency - TTFT)
//   roofline: per step, (layers * (weight bytes + KV bytes at c) + head bytes) / (channels * GB/s)
//
// KV bytes at c: 2 * kv_heads * head_dim * c bytes per layer (8-bit) or 4x that in f32.
#include "compiler/llm/decode.h"

#include <tbb/parallel_for.h>

#include <chrono>
#include <optional>

#include "compiler/frontend/model_builder.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/engine.h"

namespace stc::llm {

namespace {

DesignRun simulate(const Network& net, const Bindings& b, const Platform& platform) {
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, b, platform), {});
  if (r.deadlock)
    throw UserError("internal: the compiled network '" + net.name + "' deadlocked; please report it");
  DesignRun run;
  run.cycles = r.cycles;
  for (const sim::ChannelStats& c : r.hbm) {
    run.busyMean += c.busyFraction / platform.hbm.channels;
    run.busyMax = std::max(run.busyMax, c.busyFraction);
  }
  return run;
}

Resources add(const Resources& a, const Resources& b) {
  Resources r;
  r.lut = a.lut + b.lut;
  r.ff = a.ff + b.ff;
  r.dsp = a.dsp + b.dsp;
  r.bram18k = a.bram18k + b.bram18k;
  r.uram = a.uram + b.uram;
  r.slrs = std::max(a.slrs, b.slrs);
  return r;
}

// A share of the device's block memories.
Resources memoryShare(const Platform& platform, double share) {
  Resources r;
  r.bram18k = static_cast<int64_t>(share * static_cast<double>(platform.resources.bram18k));
  r.uram = static_cast<int64_t>(share * static_cast<double>(platform.resources.uram));
  return r;
}

}  // namespace

std::vector<Bindings> sizingContexts(int64_t maxCtx, int64_t tile) {
  std::vector<Bindings> at;
  for (int64_t c : sizing::symbolSamples(maxCtx, tile)) at.push_back({{"ctx", c}});
  return at;
}

SizedDesign sizeDesign(CompileResult& design, const Platform& platform, const Resources& memory) {
  bool overCtx = design.network.symbols().count("ctx") > 0;
  std::vector<Bindings> at = overCtx ? sizingContexts(design.options.maxima.at("ctx"), design.options.tile)
                                     : std::vector<Bindings>{Bindings{}};
  // Candidates: weight streams that read ahead by the m_axi read buffer only, and ones that prefetch
  // into deep FIFOs; when neither fits `memory`, a third measured with every writer paced by its readers
  // (sizing::SizingOptions::paced). The fastest within `memory` wins, or the fastest when none is.
  std::optional<CompileResult> best;
  int64_t bestCycles = 0;
  bool bestWithin = false;
  bool pacedAlready = false;  // the first sizing went over the device's memory and paced itself
  for (int mode = 0; mode < 3; ++mode) {
    if ((mode == 2 && bestWithin) || (mode > 0 && pacedAlready)) break;
    sizing::SizingOptions options;
    options.platform = platform;
    options.prefetch = mode == 1;
    options.paced = mode == 2;
    CompileResult candidate = design;
    sizing::SizingResult r = sizing::sizeFifosAcross(design.network, options, at, candidate.network);
    if (r.trueDeadlock)
      throw UserError("internal: the compiled network '" + design.network.name +
                      "' deadlocks with unbounded FIFOs; please report it");
    updateResources(candidate, platform);
    int64_t cycles = 0;
    bool held = true;  // the verification's fallback (every FIFO at its cap) holds; a deadlock is a bug
    for (int64_t c : r.cyclesSizedAt) {
      cycles += c;
      held = held && c > 0;
    }
    if (!held)
      throw UserError("internal: the sized network '" + design.network.name +
                      "' deadlocks; please report it");
    pacedAlready = pacedAlready || r.paced;
    const Resources& got = candidate.report.resources;
    bool withinMemory = got.bram18k <= memory.bram18k && got.uram <= memory.uram;
    if (!best || (withinMemory != bestWithin ? withinMemory : cycles < bestCycles)) {
      best = std::move(candidate);
      bestCycles = cycles;
      bestWithin = withinMemory;
    }
  }
  design = std::move(*best);
  return {bestCycles, bestWithin};
}

DeviceDesigns compileDevice(const ModelSpec& model, const Platform& platform, CompileOptions options,
                            double decodeBudget) {
  options.maxima.emplace("ctx", model.maxCtx);  // unless the settings pin it
  CompileOptions decode = options, head = options;
  decode.unrollBudget = decodeBudget;
  head.unrollBudget = kHeadShare;
  DeviceDesigns d;
  d.decodeLayer = compileGraph(buildDecodeLayer(model), platform, decode);
  d.head = compileGraph(buildHead(model), platform, head);
  // Memory: the head within its share, the decode layer within what the head and the prefill's share
  // leave.
  sizeDesign(d.head, platform, memoryShare(platform, kHeadShare));
  Resources left = memoryShare(platform, 1 - kPrefillShare);
  left.bram18k -= d.head.report.resources.bram18k;
  left.uram -= d.head.report.resources.uram;
  sizeDesign(d.decodeLayer, platform, left);
  return d;
}

int64_t Estimator::prefillRows(int64_t prompt) const {
  int64_t rows = 1;
  while (rows < prompt && rows < 16) rows *= 2;
  if (prompt > 16) rows = (prompt + 15) / 16 * 16;
  return std::min(rows, std::max(prompt, model_.maxCtx));
}

int64_t Estimator::prefillRowsBelow(int64_t prompt) const {
  int64_t rows = 1;
  while (rows * 2 <= prompt && rows < 16) rows *= 2;
  if (prompt >= 16) rows = std::min<int64_t>(prompt / 16 * 16, 256);
  return std::min(rows, prefillRows(prompt));
}

std::vector<int64_t> Estimator::tailContexts(int64_t prompt, int64_t rows) {
  std::vector<int64_t> at;
  int64_t stride = prompt - rows <= 16 ? 1 : 16;
  for (int64_t c = rows; c < prompt; c += stride) at.push_back(c);
  return at;
}

Estimator::Estimator(const ModelSpec& model, const Platform& platform) : model_(model), platform_(platform) {
  options_ = parseCompileOptions({"quant=" + model.quant}, platform);
  options_.maxima["ctx"] = model.maxCtx;
  options_.unrollBudget = kPrefillShare;
  DeviceDesigns d = compileDevice(model, platform, options_);
  decodeLayer_ = std::move(d.decodeLayer);
  head_ = std::move(d.head);
}

void Estimator::simulateMissing(const std::vector<std::pair<int64_t, int64_t>>& requests) {
  std::vector<int64_t> ctxs, prompts;
  for (auto [prompt, gen] : requests) {
    if (prompt < 1 || gen < 1 || prompt > model_.maxCtx || gen > model_.maxCtx || prompt + gen > model_.maxCtx)
      throw UserError("stc simulate: error: --decode " + std::to_string(prompt) + ":" + std::to_string(gen) +
                      " needs a prompt and a generation of at least 1 token, together at most max_ctx (" +
                      std::to_string(model_.maxCtx) + ")");
    for (int64_t c = prompt; c < prompt + gen; ++c)
      if (!decodeRuns_.count(c) && std::find(ctxs.begin(), ctxs.end(), c) == ctxs.end()) ctxs.push_back(c);
    for (int64_t rows : {prefillRows(prompt), prefillRowsBelow(prompt)})
      if (!prefillCycles_.count(rows) && std::find(prompts.begin(), prompts.end(), rows) == prompts.end())
        prompts.push_back(rows);
    for (int64_t c : tailContexts(prompt, prefillRowsBelow(prompt)))
      if (!decodeRuns_.count(c) && std::find(ctxs.begin(), ctxs.end(), c) == ctxs.end()) ctxs.push_back(c);
  }
  // Prefill networks compile one per padded row count (serially: compiling is fast) and are sized in
  // parallel; every simulation runs in parallel, each into its own slot.
  // Two schedules per prefill of at most 256 rows: the chosen row blocks, and every matmul
  // weight-stationary (one block of every row, each weight read once); the faster one within the memory
  // the decode layer and the head leave is kept (row blocks whose stages run at different paces can need
  // deep FIFOs between them). Longer prompts only weight-stationary: sizing their blocks costs minutes.
  std::vector<CompileResult> prefills;
  std::vector<size_t> firstOf;  // per prompt, its first candidate in prefills
  for (int64_t p : prompts) {
    Graph g = buildPrefillLayer(model_, p);
    CompileOptions stationary = options_;
    for (const Op& op : g.ops)
      if (op.op == "matmul" || op.op == "linear") stationary.pinnedRowBlock[op.name] = 0;
    firstOf.push_back(prefills.size());
    if (p <= 256) prefills.push_back(compileGraph(g, platform_, options_));
    prefills.push_back(compileGraph(g, platform_, stationary));
  }
  firstOf.push_back(prefills.size());
  // The prefill's memory: what the decode layer and the head leave of the device's.
  Resources memory = memoryShare(platform_, 1.0);
  memory.bram18k -= decodeLayer_.report.resources.bram18k + head_.report.resources.bram18k;
  memory.uram -= decodeLayer_.report.resources.uram + head_.report.resources.uram;
  std::vector<SizedDesign> sized(prefills.size());
  tbb::parallel_for(size_t{0}, prefills.size(),
                    [&](size_t j) { sized[j] = sizeDesign(prefills[j], platform_, memory); });
  std::vector<Network> prefillNets;
  for (size_t j = 0; j < prompts.size(); ++j) {
    size_t best = firstOf[j];  // the blocked one first: kept on a tie
    for (size_t c = firstOf[j] + 1; c < firstOf[j + 1]; ++c) {
      const SizedDesign &a = sized[best], &b = sized[c];
      if (a.withinMemory != b.withinMemory ? b.withinMemory : b.cycles < a.cycles) best = c;
    }
    prefillResources_[prompts[j]] = prefills[best].report.resources;
    prefillNets.push_back(std::move(prefills[best].network));
  }
  size_t jobs = ctxs.size() + prompts.size() + (headCycles_ == 0 ? 1 : 0);
  std::vector<DesignRun> runs(jobs);
  tbb::parallel_for(size_t{0}, jobs, [&](size_t j) {
    if (j < ctxs.size())
      runs[j] = simulate(decodeLayer_.network, {{"ctx", ctxs[j]}}, platform_);
    else if (j < ctxs.size() + prompts.size())
      runs[j] = simulate(prefillNets[j - ctxs.size()], {}, platform_);
    else
      runs[j] = simulate(head_.network, {}, platform_);
  });
  for (size_t j = 0; j < ctxs.size(); ++j) decodeRuns_[ctxs[j]] = runs[j];
  for (size_t j = 0; j < prompts.size(); ++j) prefillCycles_[prompts[j]] = runs[ctxs.size() + j].cycles;
  if (headCycles_ == 0) headCycles_ = runs.back().cycles;
}

DecodeResult Estimator::assemble(int64_t prompt, int64_t gen) const {
  DecodeResult r;
  r.model = model_.name;
  r.prompt = prompt;
  r.gen = gen;
  double mhz = platform_.kernelClockMhz;
  double overhead = platform_.invocationOverheadUs * mhz;  // cycles
  double layers = model_.layers;
  double hd = static_cast<double>(headCycles_);
  // The prompt padded into one prefill, or its first rows and the rest as decode steps (each step one call
  // per layer in the host loop, one call in the device loop): the faster for each schedule, a design the
  // device holds (with the decode layer and the head) before one it does not.
  auto ttftWith = [&](int64_t rows, bool host) {
    double t =
        layers * (static_cast<double>(prefillCycles_.at(rows)) + (host ? overhead : 0.0)) + hd + overhead;
    std::vector<int64_t> at = tailContexts(prompt, rows);
    for (size_t i = 0; i < at.size(); ++i) {  // a run of steps at the mean of its first ctx's and the next's
      int64_t steps = (i + 1 < at.size() ? at[i + 1] : prompt) - at[i];
      double cycles = static_cast<double>(decodeRuns_.at(at[i]).cycles);
      if (steps > 1 && i + 1 < at.size())
        cycles = (cycles + static_cast<double>(decodeRuns_.at(at[i + 1]).cycles)) / 2;
      t += static_cast<double>(steps) * (host ? layers * (cycles + overhead) : layers * cycles + overhead);
    }
    return t;
  };
  auto holds = [&](int64_t rows) {
    return add(add(decodeLayer_.report.resources, head_.report.resources), prefillResources_.at(rows))
        .within(platform_.resources);
  };
  auto choose = [&](bool host) {
    int64_t rows = prefillRows(prompt), below = prefillRowsBelow(prompt);
    if (below < rows &&
        (holds(below) != holds(rows) ? holds(below) : ttftWith(below, host) < ttftWith(rows, host)))
      rows = below;
    return rows;
  };
  int64_t hostRows = choose(true), deviceRows = choose(false);
  r.prefillRows = hostRows;
  r.promptDecodeSteps = hostRows < prompt ? prompt - hostRows : 0;
  r.deviceLoopPrefillRows = deviceRows;
  r.deviceLoopPromptDecodeSteps = deviceRows < prompt ? prompt - deviceRows : 0;
  double ttftHost = ttftWith(hostRows, true);
  double ttftDevice = ttftWith(deviceRows, false);
  double stepsHost = 0, stepsDevice = 0, rooflineSeconds = 0;
  double bandwidth = platform_.hbm.channels * platform_.hbm.channelGbps * 1e9;
  double kvBytes = static_cast<double>(kvBytesPerToken(model_));
  for (int64_t c = prompt; c < prompt + gen; ++c) {
    double l = static_cast<double>(decodeRuns_.at(c).cycles);
    stepsHost += layers * (l + overhead) + hd + overhead;
    stepsDevice += layers * l + hd + overhead;
    double bytes =
        layers * (static_cast<double>(layerWeightBytes(model_)) + kvBytes * static_cast<double>(c)) +
        static_cast<double>(headWeightBytes(model_));
    rooflineSeconds += bytes / bandwidth;
  }
  auto schedule = [&](double ttft, double steps) {
    Schedule s;
    s.ttftMs = ttft / mhz / 1000.0;
    s.latencyMs = (ttft + steps) / mhz / 1000.0;
    s.decodeTokensPerS = static_cast<double>(gen) / (steps / mhz / 1e6);
    return s;
  };
  r.hostLoop = schedule(ttftHost, stepsHost);
  r.deviceLoop = schedule(ttftDevice, stepsDevice);
  r.rooflineTokensPerS = static_cast<double>(gen) / rooflineSeconds;
  const DesignRun& first = decodeRuns_.at(prompt);
  r.layerCyclesFirst = first.cycles;
  r.layerCyclesLast = decodeRuns_.at(prompt + gen - 1).cycles;
  r.layerChannelBusyMean = first.busyMean;
  r.layerChannelBusyMax = first.busyMax;
  r.prefillLayerCycles = prefillCycles_.at(r.prefillRows);
  r.deviceLoopPrefillLayerCycles = prefillCycles_.at(deviceRows);
  r.headCycles = headCycles_;
  // The device holds the decode layer, the prefill layer of this prompt and the head.
  r.decodeLayerResources = decodeLayer_.report.resources;
  r.headResources = head_.report.resources;
  // Both schedules' prefill designs held: each count the larger of the two (one design when they agree).
  r.prefillResources = prefillResources_.at(hostRows);
  const Resources& other = prefillResources_.at(deviceRows);
  r.prefillResources.dsp = std::max(r.prefillResources.dsp, other.dsp);
  r.prefillResources.lut = std::max(r.prefillResources.lut, other.lut);
  r.prefillResources.ff = std::max(r.prefillResources.ff, other.ff);
  r.prefillResources.bram18k = std::max(r.prefillResources.bram18k, other.bram18k);
  r.prefillResources.uram = std::max(r.prefillResources.uram, other.uram);
  r.resources = add(add(r.decodeLayerResources, r.headResources), r.prefillResources);
  r.fits = r.resources.within(platform_.resources);
  r.hbmBytes = modelHbmBytes(model_);
  r.fitsHbm = r.hbmBytes <= platform_.hbm.channels * platform_.hbm.channelBytes;
  return r;
}

DecodeResult Estimator::run(int64_t prompt, int64_t gen) { return runAll({{prompt, gen}}).front(); }

std::vector<DecodeResult> Estimator::runAll(const std::vector<std::pair<int64_t, int64_t>>& requests) {
  auto begin = std::chrono::steady_clock::now();
  simulateMissing(requests);
  std::vector<DecodeResult> out;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (auto [prompt, gen] : requests) {
    out.push_back(assemble(prompt, gen));
    out.back().wallSeconds = wall;
  }
  return out;
}

}  // namespace stc::llm
