// Decode estimation.
//
//   per layer invocation at context c:  L(c) cycles, simulated on the compiled decoder layer (ctx = c)
//   head (final norm, LM head):         Hd cycles
//   prefill of P tokens:                Lp(P) per layer, on the layer compiled for P rows
//   host overhead per kernel call:      O = invocation_overhead_us * clock
//
//   host loop    TTFT = layers * (Lp(P) + O) + Hd + O;   step(c) = layers * (L(c) + O) + Hd + O
//   device loop  TTFT = layers * Lp(P) + Hd + O;          step(c) = layers * L(c) + Hd + O
//   latency = TTFT + sum of step(P + i), i = 0 .. G-1;   decode speed = G / (latency - TTFT)
//   roofline: per step, (layers * (weight bytes + KV bytes at c) + head bytes) / (channels * GB/s)
//
// KV bytes at c: 2 * kv_heads * head_dim * c bytes per layer (8-bit) or 4x that in f32.
#include "compiler/llm/decode.h"

#include <tbb/parallel_for.h>

#include <chrono>

#include "compiler/frontend/model_builder.h"
#include "sim/engine.h"

namespace stc::llm {

namespace {

// The head needs 2,048 DSPs to stream GPT-2's LM head over all 32 channels (a 256 x 16 int4 tile a
// cycle); the decode layer takes most of the rest, since decode speed is what the device loop repeats.
constexpr double kDecodeShare = 0.48, kHeadShare = 0.25, kPrefillShare = 0.27;

int64_t simulateCycles(const Network& net, const Bindings& b, const Platform& platform) {
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, b, platform), {});
  if (r.deadlock)
    throw UserError("internal: the compiled network '" + net.name + "' deadlocked; please report it");
  return r.cycles;
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

bool within(const Resources& r, const Resources& cap) {
  return r.lut <= cap.lut && r.ff <= cap.ff && r.dsp <= cap.dsp && r.bram18k <= cap.bram18k && r.uram <= cap.uram;
}

}  // namespace

Estimator::Estimator(const ModelSpec& model, const Platform& platform) : model_(model), platform_(platform) {
  options_ = parseCompileOptions({"quant=" + model.quant}, platform);
  options_.maxima["ctx"] = model.maxCtx;
  // The device holds the three designs at once, so they share its DSPs: each design's kernels, all of
  // them (dse/tiling.cpp), fit kDecodeShare, kHeadShare and kPrefillShare of the DSPs, together all.
  CompileOptions decode = options_, head = options_;
  decode.unrollBudget = kDecodeShare;
  head.unrollBudget = kHeadShare;
  options_.unrollBudget = kPrefillShare;
  decodeLayer_ = compileGraph(buildDecodeLayer(model), platform, decode);
  head_ = compileGraph(buildHead(model), platform, head);
}

void Estimator::simulateMissing(const std::vector<std::pair<int64_t, int64_t>>& requests) {
  std::vector<int64_t> ctxs, prompts;
  for (auto [prompt, gen] : requests) {
    if (prompt < 1 || gen < 1 || prompt > model_.maxCtx || gen > model_.maxCtx || prompt + gen > model_.maxCtx)
      throw UserError("stc simulate: error: --decode " + std::to_string(prompt) + ":" + std::to_string(gen) +
                      " needs a prompt and a generation of at least 1 token, together at most max_ctx (" +
                      std::to_string(model_.maxCtx) + ")");
    for (int64_t c = prompt; c < prompt + gen; ++c)
      if (!decodeCycles_.count(c) && std::find(ctxs.begin(), ctxs.end(), c) == ctxs.end()) ctxs.push_back(c);
    if (!prefillCycles_.count(prompt) && std::find(prompts.begin(), prompts.end(), prompt) == prompts.end())
      prompts.push_back(prompt);
  }
  // Prefill networks compile one per prompt length (serially: compiling is fast); every simulation runs
  // in parallel, each into its own slot.
  std::vector<Network> prefillNets;
  for (int64_t p : prompts) {
    CompileResult c = compileGraph(buildPrefillLayer(model_, p), platform_, options_);
    prefillResources_[p] = c.report.resources;
    prefillNets.push_back(std::move(c.network));
  }
  size_t jobs = ctxs.size() + prompts.size() + (headCycles_ == 0 ? 1 : 0);
  std::vector<int64_t> cycles(jobs, 0);
  tbb::parallel_for(size_t{0}, jobs, [&](size_t j) {
    if (j < ctxs.size()) cycles[j] = simulateCycles(decodeLayer_.network, {{"ctx", ctxs[j]}}, platform_);
    else if (j < ctxs.size() + prompts.size()) cycles[j] = simulateCycles(prefillNets[j - ctxs.size()], {}, platform_);
    else cycles[j] = simulateCycles(head_.network, {}, platform_);
  });
  for (size_t j = 0; j < ctxs.size(); ++j) decodeCycles_[ctxs[j]] = cycles[j];
  for (size_t j = 0; j < prompts.size(); ++j) prefillCycles_[prompts[j]] = cycles[ctxs.size() + j];
  if (headCycles_ == 0) headCycles_ = cycles.back();
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
  double lp = static_cast<double>(prefillCycles_.at(prompt));
  double ttftHost = layers * (lp + overhead) + hd + overhead;
  double ttftDevice = layers * lp + hd + overhead;
  double stepsHost = 0, stepsDevice = 0, rooflineSeconds = 0;
  double bandwidth = platform_.hbm.channels * platform_.hbm.channelGbps * 1e9;
  double kvBytesPerToken = 2.0 * model_.kvHeads * static_cast<double>(model_.headDim) * (model_.quant == "w4a8" ? 1 : 4);
  for (int64_t c = prompt; c < prompt + gen; ++c) {
    double l = static_cast<double>(decodeCycles_.at(c));
    stepsHost += layers * (l + overhead) + hd + overhead;
    stepsDevice += layers * l + hd + overhead;
    double bytes = layers * (static_cast<double>(layerWeightBytes(model_)) + kvBytesPerToken * static_cast<double>(c)) +
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
  r.layerCyclesFirst = decodeCycles_.at(prompt);
  r.layerCyclesLast = decodeCycles_.at(prompt + gen - 1);
  r.prefillLayerCycles = prefillCycles_.at(prompt);
  r.headCycles = headCycles_;
  // The device holds the decode layer, the prefill layer of this prompt and the head.
  r.resources = add(add(decodeLayer_.report.resources, head_.report.resources), prefillResources_.at(prompt));
  r.fits = within(r.resources, platform_.resources);
  r.hbmBytes = model_.layers * (layerWeightBytes(model_) + static_cast<int64_t>(kvBytesPerToken) * model_.maxCtx) +
               headWeightBytes(model_);
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
