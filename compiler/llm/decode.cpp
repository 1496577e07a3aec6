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
#include <tbb/parallel_invoke.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <set>

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

// Whether a design sized to `a` is preferred to one sized to `b`: within memory before not, then the fewer
// cycles (on a tie, `b`: the one seen first).
bool preferred(const SizedDesign& a, const SizedDesign& b) {
  return a.withinMemory != b.withinMemory ? a.withinMemory : a.cycles < b.cycles;
}

// A share of the block memories the kernels may use (Platform::kernelResources).
Resources memoryShare(const Platform& platform, double share) {
  Resources r;
  const Resources kernels = platform.kernelResources();
  r.bram18k = static_cast<int64_t>(share * static_cast<double>(kernels.bram18k));
  r.uram = static_cast<int64_t>(share * static_cast<double>(kernels.uram));
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
  // (sizing::SizingOptions::paced). The fastest within `memory` wins, or the fastest when none is. The
  // first two are sized at once; the second is dropped (its errors too) when the first went over the
  // device's memory and paced itself.
  struct Sized {
    CompileResult design;
    SizedDesign figures;
    bool paced = false;
  };
  auto sizeMode = [&](int mode) {
    sizing::SizingOptions options;
    options.platform = platform;
    options.prefetch = mode == 1;
    options.paced = mode == 2;
    options.pacedTrial = false;  // the candidates are weighed here, by cycles
    Sized s{design, {}, false};
    sizing::SizingResult r = sizing::sizeFifosAcross(design.network, options, at, s.design.network);
    if (r.trueDeadlock)
      throw UserError("internal: the compiled network '" + design.network.name +
                      "' deadlocks with unbounded FIFOs; please report it");
    updateResources(s.design, platform);
    bool held = true;  // the verification's fallback (every FIFO at its cap) holds; a deadlock is a bug
    for (int64_t c : r.cyclesSizedAt) {
      s.figures.cycles += c;
      held = held && c > 0;
    }
    if (!held)
      throw UserError("internal: the sized network '" + design.network.name + "' deadlocks; please report it");
    s.paced = r.paced;
    const Resources& got = s.design.report.resources;
    s.figures.withinMemory = got.bram18k <= memory.bram18k && got.uram <= memory.uram;
    return s;
  };
  std::optional<Sized> first, second, third;
  std::exception_ptr secondError;
  tbb::parallel_invoke([&] { first = sizeMode(0); },
                       [&] {
                         try {
                           second = sizeMode(1);
                         } catch (...) {
                           secondError = std::current_exception();
                         }
                       });
  Sized* best = &*first;
  auto take = [&](Sized& s) {
    if (preferred(s.figures, best->figures)) best = &s;
  };
  if (!first->paced) {
    if (secondError) std::rethrow_exception(secondError);
    take(*second);
    if (!best->figures.withinMemory && !second->paced) take(*(third = sizeMode(2)));
  }
  design = std::move(best->design);
  return best->figures;
}

namespace {

// `g` compiled and sized within `memory`. The unroll search estimates weight streams over the channels a
// tile needs, or over the beat-aligned stripes the lowering will give it
// (CompileOptions::alignedStripeEstimate). Neither estimate ranks designs as the simulation does every time
// (Gemma-2-2B's decode MLP: 185 tokens/s with the first, 228 with the second; GPT-2's P.V and several
// prefills the other way), so unless the settings give one, both are compiled and sized, and the faster
// kept (the first on a tie; sized once when both give the same network).
CompileResult compileSizedEitherEstimate(const Graph& g, const Platform& platform,
                                         const CompileOptions& options, const Resources& memory) {
  if (options.alignedStripeEstimateGiven) {
    CompileResult design = compileGraph(g, platform, options);
    sizeDesign(design, platform, memory);
    return design;
  }
  CompileOptions estimates[2] = {options, options};
  estimates[0].alignedStripeEstimate = false;
  estimates[1].alignedStripeEstimate = true;
  CompileResult designs[2];
  SizedDesign figures[2];
  tbb::parallel_for(0, 2, [&](int i) { designs[i] = compileGraph(g, platform, estimates[i]); });
  const int count = emitNetwork(designs[0].network) == emitNetwork(designs[1].network) ? 1 : 2;
  tbb::parallel_for(0, count, [&](int i) { figures[i] = sizeDesign(designs[i], platform, memory); });
  return std::move(designs[count == 2 && preferred(figures[1], figures[0]) ? 1 : 0]);
}

}  // namespace

DeviceDesigns compileDevice(const ModelSpec& model, const Platform& platform, CompileOptions options,
                            double decodeBudget) {
  options.maxima.emplace("ctx", model.maxCtx);  // unless the settings pin it
  CompileOptions decode = options, head = options;
  decode.unrollBudget = decodeBudget;
  head.unrollBudget = kHeadShare;
  // A pin of one op (tk.OP, tn.OP, row_block.OP, lane_ii.OP) goes to the design that has the op; one that
  // neither has stays with the decode layer, whose compile refuses it.
  Graph decodeGraph = buildDecodeLayer(model), headGraph = buildHead(model);
  auto has = [](const Graph& g, const std::string& name) {
    return std::any_of(g.ops.begin(), g.ops.end(), [&](const Op& op) { return op.name == name; });
  };
  for (auto pins : {&CompileOptions::pinnedTk, &CompileOptions::pinnedTn, &CompileOptions::pinnedRowBlock,
                    &CompileOptions::laneIiOf}) {
    for (auto it = (decode.*pins).begin(); it != (decode.*pins).end();)
      it = has(headGraph, it->first) && !has(decodeGraph, it->first) ? (decode.*pins).erase(it) : std::next(it);
    for (auto it = (head.*pins).begin(); it != (head.*pins).end();)
      it = has(headGraph, it->first) ? std::next(it) : (head.*pins).erase(it);
  }
  DeviceDesigns d;
  // Memory: the head within its share, the decode layer within what the head and the prefill's share
  // leave.
  d.head = compileSizedEitherEstimate(headGraph, platform, head, memoryShare(platform, kHeadShare));
  Resources left = memoryShare(platform, 1 - kPrefillShare);
  left.bram18k -= d.head.report.resources.bram18k;
  left.uram -= d.head.report.resources.uram;
  d.decodeLayer = compileSizedEitherEstimate(decodeGraph, platform, decode, left);
  return d;
}

int64_t paddedPrefillRows(const ModelSpec& model, int64_t prompt) {
  int64_t rows = 1;
  while (rows < prompt && rows < 16) rows *= 2;
  if (prompt > 16) rows = (prompt + 15) / 16 * 16;
  return std::min(rows, std::max(prompt, model.maxCtx));
}

std::vector<int64_t> Estimator::rowOptions(int64_t prompt) const {
  std::vector<int64_t> rows{prefillRows(prompt)};
  for (int64_t below : prefillRowsBelow(prompt))
    if (below != rows.front()) rows.push_back(below);
  return rows;
}

std::vector<int64_t> Estimator::prefillRowsBelow(int64_t prompt) const {
  if (prompt > 16) {
    std::vector<int64_t> rows;
    for (int64_t r = 1; r < std::min<int64_t>(prompt / 16 * 16, 256); r *= 2) rows.push_back(r);
    rows.push_back(std::min<int64_t>(prompt / 16 * 16, 256));
    return rows;
  }
  std::vector<int64_t> rows{1};
  while (rows.back() * 2 < prompt) rows.push_back(rows.back() * 2);
  return rows;
}

std::vector<int64_t> Estimator::tailContexts(int64_t prompt, int64_t rows) {
  std::vector<int64_t> at;
  for (int64_t c = rows; c < prompt; ++c) at.push_back(c);
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

std::vector<Estimator::PrefillCandidate> Estimator::prefillCandidates(int64_t rows) const {
  Graph g = buildPrefillLayer(model_, rows, options_.onchipBudgetBytes);
  CompileOptions blocked = options_, stationary = options_;
  blocked.phaseChannels = stationary.phaseChannels = false;
  // Every key of every row: a prefill layer of at most 256 rows waits on its projections and MLP, not on
  // its attention (GPT-2's 1023:1 TTFT 1,666.42 ms with the masked half skipped, 1,666.19 without), and a
  // triangular nest's runs are phases of the simulator's program, which its periodic jumps do not cross.
  blocked.causalTriangles = stationary.causalTriangles = false;
  blocked.causalTrianglesGiven = stationary.causalTrianglesGiven = true;
  for (const Op& op : g.ops)
    if (op.op == "matmul" || op.op == "linear") stationary.pinnedRowBlock[op.name] = 0;
  // Row blocks chosen twice, the weights priced over the stripes they get and over the channels their
  // tiles need (CompileOptions::alignedStripeEstimate): as for the decode layer, neither estimate ranks
  // designs as the simulation does every time (Llama's 128-row prefill: 3,084,185 cycles sized the first
  // way, the second's bound 3,232,319; its 16-row one: 559,421 against 490,222), so both are candidates
  // where they differ.
  CompileOptions channels = blocked;
  channels.alignedStripeEstimate = false;
  // The DSPs and LUTs the decode layer and the head leave. The DSP share holds them by construction; the
  // LUTs (AXI masters, converters and lanes, which the unroll search does not count) may not. A design
  // over them at compile time comes with a second candidate compiled at nine tenths of its unroll budget
  // as often as it takes to fit (down to a tenth of the share); sizing decides, since it moves LUTs
  // (FIFOs deepened from LUTRAM into BRAM), and a design the device holds wins (sizePrefills).
  Resources left = platform_.kernelResources();
  left.dsp -= decodeLayer_.report.resources.dsp + head_.report.resources.dsp;
  left.lut -= decodeLayer_.report.resources.lut + head_.report.resources.lut;
  auto over = [&](const CompileResult& r) {
    return r.report.resources.dsp > left.dsp || r.report.resources.lut > left.lut;
  };
  std::vector<PrefillCandidate> out;
  auto keep = [&](CompileResult design) {
    PrefillCandidate c;
    c.design = std::move(design);
    c.bound = sim::lowerBoundCycles(sim::compileProgram(c.design.network, {}, platform_));
    out.push_back(std::move(c));
  };
  std::set<std::string> networks;  // a schedule that gives a network already kept adds nothing (one row:
                                   // every row in one block, weight-stationary or not)
  for (const CompileOptions* o : {&blocked, &channels, &stationary}) {
    if (o != &stationary && rows > 256) continue;
    CompileResult design = compileGraph(g, platform_, *o);
    // (A design over the LUTs comes with its twin at a smaller budget below, which another schedule's
    // twin need not equal: it stays, but where channels gives blocked's network, as before.)
    if (!networks.insert(emitNetwork(design.network)).second && (o == &channels || !over(design))) continue;
    if (!over(design)) {
      keep(std::move(design));
      continue;
    }
    CompileOptions smaller = *o;
    CompileResult fewer;
    do {
      smaller.unrollBudget *= 0.9;
      fewer = compileGraph(g, platform_, smaller);
    } while (over(fewer) && smaller.unrollBudget * 0.9 >= kPrefillShare / 10);
    keep(std::move(design));
    keep(std::move(fewer));
  }
  return out;
}

void Estimator::sizePrefills(std::map<int64_t, std::vector<PrefillCandidate>> batch) {
  // The prefill's memory: what the decode layer and the head leave of the device's.
  Resources memory = memoryShare(platform_, 1.0);
  memory.bram18k -= decodeLayer_.report.resources.bram18k + head_.report.resources.bram18k;
  memory.uram -= decodeLayer_.report.resources.uram + head_.report.resources.uram;
  std::vector<int64_t> rows;
  std::vector<std::vector<PrefillCandidate>> candidates;
  for (auto& [r, c] : batch) {
    rows.push_back(r);
    candidates.push_back(std::move(c));
  }
  // The winner is the first candidate the device holds (with the decode layer and the head) before one it
  // does not, then within memory before not, then of the fewest cycles. A candidate cannot win once a sized
  // one that the device holds within memory has fewer cycles than its bound (or as many, coming before
  // it): it is dropped unsized. Sized in waves, every row count of the batch together: while a row count
  // has no such design, its unsized candidate of the lowest bound alone (the first, then the next when the
  // device does not hold it: a design over the LUTs and its smaller twin have nearly the same bound); once
  // it has one, all it has left that can still win.
  auto held = [&](const PrefillCandidate& c) { return holdsWith(c.design.report.resources); };
  auto better = [&](const PrefillCandidate& a, const PrefillCandidate& b) {
    return held(a) != held(b) ? held(a) : preferred(*a.sized, *b.sized);
  };
  auto size = [&](PrefillCandidate& c) {
    assignPhaseChannels(c.design, platform_);
    drainHeldPipelines(c.design, platform_);
    c.sized = sizeDesign(c.design, platform_, memory);
  };
  auto reference = [&](const PrefillCandidate& c) { return c.sized && held(c) && c.sized->withinMemory; };
  auto beaten = [&](const std::vector<PrefillCandidate>& c, size_t i) {
    for (size_t r = 0; r < c.size(); ++r)
      if (reference(c[r]) && (c[i].bound > c[r].sized->cycles || (c[i].bound == c[r].sized->cycles && i > r)))
        return true;
    return false;
  };
  for (;;) {
    std::vector<std::pair<size_t, size_t>> wave;
    for (size_t j = 0; j < rows.size(); ++j) {
      const std::vector<PrefillCandidate>& c = candidates[j];
      std::vector<size_t> open;  // unsized, and able to win
      for (size_t i = 0; i < c.size(); ++i)
        if (!c[i].sized && !(dropByBound_ && beaten(c, i))) open.push_back(i);
      if (open.empty()) continue;
      if (dropByBound_ && std::none_of(c.begin(), c.end(), reference)) {
        size_t lowest = open.front();
        for (size_t i : open)
          if (c[i].bound < c[lowest].bound) lowest = i;
        open = {lowest};
      }
      for (size_t i : open) wave.emplace_back(j, i);
    }
    if (wave.empty()) break;
    std::string sizing = "sizing prefill designs (" + std::to_string(prefillDesignsSized_) + " sized): ";
    for (size_t w = 0; w < wave.size(); ++w)
      sizing += (w ? ", " : "") + std::to_string(rows[wave[w].first]) +
                (rows[wave[w].first] == 1 ? " row" : " rows");
    tell(sizing);
    tbb::parallel_for(size_t{0}, wave.size(),
                      [&](size_t w) { size(candidates[wave[w].first][wave[w].second]); });
    prefillDesignsSized_ += static_cast<int>(wave.size());
  }
  for (size_t j = 0; j < rows.size(); ++j) {
    const PrefillCandidate* best = nullptr;
    for (const PrefillCandidate& c : candidates[j]) {
      if (c.sized && (!best || better(c, *best))) best = &c;
    }
    // The sizer's last verifying run is this network at its depths: its cycles are the prefill's.
    prefillCycles_[rows[j]] = best->sized->cycles;
    prefillResources_[rows[j]] = best->design.report.resources;
  }
}

void Estimator::simulateMissing(const std::vector<std::pair<int64_t, int64_t>>& requests) {
  std::vector<int64_t> ctxs;  // not simulated yet, each once, in the order met
  std::set<int64_t> listed;
  auto need = [&](int64_t c) {
    if (!decodeRuns_.count(c) && listed.insert(c).second) ctxs.push_back(c);
  };
  for (auto [prompt, gen] : requests) {
    if (prompt < 1 || gen < 1 || prompt > model_.maxCtx || gen > model_.maxCtx || prompt + gen > model_.maxCtx)
      throw UserError("stc simulate: error: --decode " + std::to_string(prompt) + ":" + std::to_string(gen) +
                      " needs a prompt and a generation of at least 1 token, together at most max_ctx (" +
                      std::to_string(model_.maxCtx) + ")");
    for (int64_t c = prompt; c < prompt + gen; ++c) need(c);
    for (int64_t below : prefillRowsBelow(prompt))
      for (int64_t c : tailContexts(prompt, below)) need(c);
  }
  // Decode steps and the head first: the prefill choices below weigh them. A ctx whose bound values
  // (Network::boundValues) equal another's binds the layer to the same program: one simulation for both.
  std::vector<std::vector<int64_t>> values(ctxs.size());
  tbb::parallel_for(size_t{0}, ctxs.size(),
                    [&](size_t j) { values[j] = decodeLayer_.network.boundValues({{"ctx", ctxs[j]}}); });
  std::vector<size_t> fresh;  // the first ctx of each values not simulated yet
  std::set<std::vector<int64_t>> seen;
  for (size_t j = 0; j < ctxs.size(); ++j)
    if (!decodeRunsByValues_.count(values[j]) && seen.insert(values[j]).second) fresh.push_back(j);
  size_t jobs = fresh.size() + (headCycles_ == 0 ? 1 : 0);
  if (jobs > 0)
    tell("simulating the decode layer at " + std::to_string(ctxs.size()) + " contexts (" +
         std::to_string(fresh.size()) + " programs)" + (headCycles_ == 0 ? " and the LM head" : ""));
  std::vector<DesignRun> runs(jobs);
  tbb::parallel_for(size_t{0}, jobs, [&](size_t j) {
    runs[j] = j < fresh.size() ? simulate(decodeLayer_.network, {{"ctx", ctxs[fresh[j]]}}, platform_)
                               : simulate(head_.network, {}, platform_);
  });
  for (size_t j = 0; j < fresh.size(); ++j) decodeRunsByValues_[values[fresh[j]]] = runs[j];
  decodeSimulations_ += static_cast<int>(fresh.size());
  for (size_t j = 0; j < ctxs.size(); ++j) decodeRuns_[ctxs[j]] = decodeRunsByValues_.at(values[j]);
  if (headCycles_ == 0) headCycles_ = runs.back().cycles;
  // Prefill designs: every row count a prompt may run (its rows below and its padded rows), compiled with
  // the cycles no depths beat (their bounds), then sized in waves: each prompt's most promising row count
  // in each schedule (the least TTFT, sized designs at their cycles and the others at their bounds),
  // together; or, when every prompt's are sized, all that are left. Before each wave, a row count is
  // dropped unsized where, for every prompt that may run it, some sized design the device holds beats its
  // TTFT at its bound in both schedules: assemble could never choose it.
  std::vector<int64_t> all;
  for (auto [prompt, gen] : requests)
    for (int64_t rows : rowOptions(prompt))
      if (!prefillCycles_.count(rows) && std::find(all.begin(), all.end(), rows) == all.end()) all.push_back(rows);
  std::map<int64_t, std::vector<PrefillCandidate>> pending;
  std::map<int64_t, int64_t> bounds;  // the lowest of each row count's candidates
  std::vector<std::vector<PrefillCandidate>> compiled(all.size());
  if (!all.empty()) tell("compiling prefill designs of " + std::to_string(all.size()) + " row counts");
  tbb::parallel_for(size_t{0}, all.size(), [&](size_t j) { compiled[j] = prefillCandidates(all[j]); });
  for (size_t j = 0; j < all.size(); ++j) {
    int64_t rows = all[j];
    bounds[rows] = compiled[j].front().bound;
    for (const PrefillCandidate& x : compiled[j]) bounds[rows] = std::min(bounds[rows], x.bound);
    pending[rows] = std::move(compiled[j]);
  }
  auto needless = [&](int64_t rows) {
    for (auto [prompt, gen] : requests) {
      std::vector<int64_t> options = rowOptions(prompt);
      if (std::find(options.begin(), options.end(), rows) == options.end()) continue;
      for (bool host : {true, false}) {
        double at = ttft(prompt, rows, static_cast<double>(bounds.at(rows)), host);
        bool beaten = false;
        for (int64_t other : options)
          beaten = beaten || (other != rows && prefillCycles_.count(other) && holds(other) &&
                              ttft(prompt, other, static_cast<double>(prefillCycles_.at(other)), host) < at);
        if (!beaten) return false;
      }
    }
    return true;
  };
  while (!pending.empty()) {
    if (dropByBound_)
      for (auto it = pending.begin(); it != pending.end();) it = needless(it->first) ? pending.erase(it) : std::next(it);
    if (pending.empty()) break;
    std::set<int64_t> wave;
    for (auto [prompt, gen] : requests)
      for (bool host : {true, false}) {
        int64_t best = 0;
        double bestTtft = 0;
        for (int64_t rows : rowOptions(prompt)) {
          double cycles = static_cast<double>(prefillCycles_.count(rows) ? prefillCycles_.at(rows) : bounds.at(rows));
          double t = prefillCycles_.count(rows) || pending.count(rows) ? ttft(prompt, rows, cycles, host) : -1;
          if (t >= 0 && (best == 0 || t < bestTtft || (t == bestTtft && rows > best))) best = rows, bestTtft = t;
        }
        if (pending.count(best)) wave.insert(best);
      }
    if (wave.empty())
      for (const auto& [rows, c] : pending) wave.insert(rows);
    std::map<int64_t, std::vector<PrefillCandidate>> batch;
    for (int64_t rows : wave) {
      batch[rows] = std::move(pending.at(rows));
      pending.erase(rows);
    }
    sizePrefills(std::move(batch));
  }
}

double Estimator::ttft(int64_t prompt, int64_t rows, double prefillLayerCycles, bool host) const {
  // The prompt padded into one prefill, or its first rows and the rest as decode steps (each step one call
  // per layer in the host loop, one call in the device loop).
  double overhead = platform_.invocationOverheadUs * platform_.kernelClockMhz;  // cycles
  double layers = model_.layers;
  double t = layers * (prefillLayerCycles + (host ? overhead : 0.0)) + static_cast<double>(headCycles_) + overhead;
  for (int64_t c : tailContexts(prompt, rows)) {
    double cycles = static_cast<double>(decodeRuns_.at(c).cycles);
    t += host ? layers * (cycles + overhead) : layers * cycles + overhead;
  }
  return t;
}

bool Estimator::holds(int64_t rows) const { return holdsWith(prefillResources_.at(rows)); }

bool Estimator::holdsWith(const Resources& prefill) const {
  return add(add(decodeLayer_.report.resources, head_.report.resources), prefill).within(platform_.kernelResources());
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
  // For each schedule the fastest of the padded prompt and the designs below with the rest as decode steps, a
  // design the device holds (with the decode layer and the head) before one it does not. Padded rows
  // that simulateMissing dropped unsized lose to the rows below in both.
  auto choose = [&](bool host) {
    auto ttftWith = [&](int64_t r) { return ttft(prompt, r, static_cast<double>(prefillCycles_.at(r)), host); };
    auto better = [&](int64_t a, int64_t b) { return holds(a) != holds(b) ? holds(a) : ttftWith(a) < ttftWith(b); };
    std::vector<int64_t> options;
    for (int64_t r : rowOptions(prompt))
      if (prefillCycles_.count(r)) options.push_back(r);
    int64_t rows = options.front();
    for (int64_t r : options)
      if (better(r, rows)) rows = r;
    return rows;
  };
  int64_t hostRows = choose(true), deviceRows = choose(false);
  r.prefillRows = hostRows;
  r.promptDecodeSteps = hostRows < prompt ? prompt - hostRows : 0;
  r.deviceLoopPrefillRows = deviceRows;
  r.deviceLoopPromptDecodeSteps = deviceRows < prompt ? prompt - deviceRows : 0;
  double ttftHost = ttft(prompt, hostRows, static_cast<double>(prefillCycles_.at(hostRows)), true);
  double ttftDevice = ttft(prompt, deviceRows, static_cast<double>(prefillCycles_.at(deviceRows)), false);
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
  r.fits = r.resources.within(platform_.kernelResources());
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
