#pragma once
// LLM decode and prefill on the platform: the decoder layer compiled once, simulated cycle by cycle for
// every context length a run meets, and added up over layers and tokens with the host's invocation
// overhead between kernel calls.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/model_spec.h"
#include "compiler/ir/platform.h"
#include "compiler/pipeline.h"

namespace stc::llm {

/// The device holds the decode layer, the head and a prefill layer at once, so they share its DSPs: each
/// design's kernels, all of them (dse/tiling.cpp), fit these shares, together all. The head needs 2,048
/// DSPs to stream GPT-2's LM head over all 32 channels (a 256 x 16 int4 tile a cycle); the decode layer
/// takes most of the rest, since decode speed is what the device loop repeats: at 55% Llama's decode
/// layer runs its MLP at 2,048 lanes (1,024 at 48%; the layer at ctx 32 27,871 -> 18,387 cycles, with
/// dse/tiling.cpp's layer estimate), while the prefill at 20% keeps TTFT under the paper's board figures.
inline constexpr double kDecodeShare = 0.55, kHeadShare = 0.25, kPrefillShare = 0.20;

/// The contexts at which a decode layer's FIFOs are sized: sizing::symbolSamples of ctx.
std::vector<Bindings> sizingContexts(int64_t maxCtx, int64_t tile);

/// Sizes a compiled design's FIFOs with the LP sizer, in place: a network over ctx to hold at every
/// context of sizingContexts(its max_ctx, its tile), any other at once; weight prefetch into deep FIFOs where
/// it is faster and the design's BRAM and URAM stay within `memory`'s. These are the depths predictions
/// simulate and the emitted project gets; the report's resources follow them.
/// Returns the sized cycles summed over those contexts and whether the memory held.
struct SizedDesign {
  int64_t cycles = 0;
  bool withinMemory = false;
};
SizedDesign sizeDesign(CompileResult& design, const Platform& platform, const Resources& memory);

/// The decode layer and the head as the device holds them, sized (the estimator's and the emitted
/// project's): compiled with `options` (quant, tiles, stripes), the decode layer into `decodeBudget` of
/// the DSPs and the head into kHeadShare; ctx up to the model's max_ctx unless options.maxima pins it.
struct DeviceDesigns {
  CompileResult decodeLayer, head;
};
DeviceDesigns compileDevice(const ModelSpec& model, const Platform& platform, CompileOptions options,
                            double decodeBudget = kDecodeShare);

/// One simulation of a design: its cycles and its HBM channels' busy fractions (the mean over all the
/// platform's channels, idle ones included, and the busiest).
struct DesignRun {
  int64_t cycles = 0;
  double busyMean = 0, busyMax = 0;
};

/// How the layers are invoked for each token.
struct Schedule {
  double latencyMs = 0;
  double ttftMs = 0;
  double decodeTokensPerS = 0;
};

struct DecodeResult {
  std::string model;
  int64_t prompt = 0, gen = 0;
  int64_t prefillRows = 0;        ///< the rows of the prefill layer that runs the prompt (or its first part)
  int64_t promptDecodeSteps = 0;  ///< the prompt's tokens past prefillRows, run as decode steps
  /// The same for the device loop, whose steps cost one call each, not one a layer: its choice may differ.
  int64_t deviceLoopPrefillRows = 0, deviceLoopPromptDecodeSteps = 0, deviceLoopPrefillLayerCycles = 0;
  Schedule hostLoop;      ///< the paper's: one kernel call per layer (and one for the head)
  Schedule deviceLoop;    ///< one call per token, the device stepping through the layers' weights
  double rooflineTokensPerS = 0;  ///< weight and KV bytes per token over the HBM bandwidth
  /// deviceLoop.decodeTokensPerS over rooflineTokensPerS (at most 1)
  double rooflineFraction() const {
    return rooflineTokensPerS > 0 ? deviceLoop.decodeTokensPerS / rooflineTokensPerS : 0;
  }
  int64_t layerCyclesFirst = 0, layerCyclesLast = 0;
  /// The decode layer's HBM channels at the first step: busy time over the layer's, the mean over all
  /// the platform's channels (idle ones count 0) and the busiest one's.
  double layerChannelBusyMean = 0, layerChannelBusyMax = 0;
  int64_t prefillLayerCycles = 0, headCycles = 0;
  Resources resources;  ///< the device: the three designs below
  Resources decodeLayerResources, headResources, prefillResources;
  bool fits = false;
  int64_t hbmBytes = 0;   ///< weights and the KV cache at max_ctx
  bool fitsHbm = false;
  double wallSeconds = 0;
};

/// The rows a prompt's prefill runs: the prompt padded to a power of two up to 16 rows, beyond that to a
/// multiple of 16 (the host pads the prompt; the padded rows come after it, where its causal attention
/// never looks), at most max_ctx; so a prompt of 127 runs as 128, in row blocks, instead of
/// weight-stationary (127 rows have no block but 1), and TTFT never falls as the prompt grows. `stc dse
/// MODEL --prompt N` explores the layer of these rows.
int64_t paddedPrefillRows(const ModelSpec& model, int64_t prompt);

/// Compiles and simulates a model's networks; results of identical invocations (the same network bound to
/// the same values, Network::boundValues) are computed once and reused. Simulations run in parallel
/// (oneTBB); results do not depend on the number of threads.
class Estimator {
 public:
  Estimator(const ModelSpec& model, const Platform& platform);
  /// One prompt:generation pair.
  DecodeResult run(int64_t prompt, int64_t gen);
  /// Several, sharing their simulations.
  std::vector<DecodeResult> runAll(const std::vector<std::pair<int64_t, int64_t>>& requests);
  /// Off: every prefill candidate is sized, none dropped at its lower bound (for tests: the figures are
  /// the same).
  void setDropByBound(bool on) { dropByBound_ = on; }
  /// Told what runAll is doing, from the calling thread, before each stage (decode steps simulated,
  /// prefill designs compiled, each wave of prefill designs sized): `stc simulate`'s progress line.
  using Progress = std::function<void(const std::string&)>;
  void setProgress(Progress progress) { progress_ = std::move(progress); }
  /// Prefill designs sized so far (candidates of every row count).
  int prefillDesignsSized() const { return prefillDesignsSized_; }
  /// Decode-layer simulations so far: one per distinct program, not per ctx (a KV cache padded to tiles
  /// of 16 binds 16 consecutive ctx to the same one).
  int decodeSimulations() const { return decodeSimulations_; }
  /// The decode layer it simulates at every ctx (its FIFOs sized), as `stc run MODEL` emits it.
  const Network& decodeLayer() const { return decodeLayer_.network; }

 private:
  /// The rows a prompt's prefill runs (paddedPrefillRows).
  int64_t prefillRows(int64_t prompt) const { return paddedPrefillRows(model_, prompt); }
  /// The rows of the smaller prefill designs a prompt may run, its other tokens as decode steps: up to 16
  /// tokens every power of two below the prompt (1 for one token), so that a prompt of 3 may run 1 row and
  /// two steps where the 2-row design is slower than a step; beyond, the same powers of two up to 8 and
  /// 16, 32, 64 and 128 below it, and the largest multiple of 16 at most the prompt, up to 256 (longer
  /// designs are weight-stationary only): where a prefill row costs more than a decode step (Mistral-7B's
  /// 256-row design; GPT-2's in the device loop, whose step is one call), fewer rows win. Each schedule's
  /// TTFT is the fastest of these and prefillRows, so it rises by at most a step's time from one prompt
  /// length to the next where padding or a design change would make it jump: every design a prompt of up
  /// to 32 tokens runs is a choice of the next prompt's, by construction (a prompt of 16 that ran 1 row and
  /// 15 steps runs 1 row and 16 steps at 17, not 16 rows and a step or 32 rows, 29% slower in GPT-2's
  /// device loop).
  std::vector<int64_t> prefillRowsBelow(int64_t prompt) const;
  /// Every row count a prompt may run: prefillRows, then prefillRowsBelow (without it again).
  std::vector<int64_t> rowOptions(int64_t prompt) const;
  /// The ctx of each of the prompt's tokens past `rows`, run as decode steps: rows .. prompt - 1.
  static std::vector<int64_t> tailContexts(int64_t prompt, int64_t rows);
  void simulateMissing(const std::vector<std::pair<int64_t, int64_t>>& requests);
  /// A prefill design of some rows, compiled without its channel simulations, and the cycles no depths
  /// make it beat (sim::lowerBoundCycles); sized once it is worth it.
  struct PrefillCandidate {
    CompileResult design;
    int64_t bound = 0;
    std::optional<SizedDesign> sized;
  };
  /// The row blocks (up to 256 rows: sizing longer ones costs minutes) as the unroll search chooses them
  /// with each of its HBM estimates (one candidate where both give the same network), then every matmul
  /// weight-stationary (one block of every row, each weight read once). Row blocks are usually faster, but
  /// blocks whose stages run at different paces can need FIFOs deeper than the memory left.
  std::vector<PrefillCandidate> prefillCandidates(int64_t rows) const;
  /// For each row count of the batch (in parallel): its candidates sized where they can still win, the
  /// winner into prefillCycles_ and prefillResources_.
  void sizePrefills(std::map<int64_t, std::vector<PrefillCandidate>> batch);
  /// The time to the first token in cycles, with the prompt's first `rows` in a prefill layer of
  /// `prefillLayerCycles` and the rest as decode steps, in the host loop or the device loop.
  double ttft(int64_t prompt, int64_t rows, double prefillLayerCycles, bool host) const;
  /// Whether the device holds the decode layer, the head and the prefill design of `rows` together.
  bool holds(int64_t rows) const;
  /// The same for a prefill design of these resources.
  bool holdsWith(const Resources& prefill) const;
  DecodeResult assemble(int64_t prompt, int64_t gen) const;

  ModelSpec model_;
  Platform platform_;
  CompileOptions options_;
  CompileResult decodeLayer_, head_;
  std::map<int64_t, DesignRun> decodeRuns_;   // by ctx
  std::map<std::vector<int64_t>, DesignRun> decodeRunsByValues_;  // by the layer's bound values at a ctx
  int decodeSimulations_ = 0;
  std::map<int64_t, int64_t> prefillCycles_;  // by prefill rows (prefillRows)
  int64_t headCycles_ = 0;
  std::map<int64_t, Resources> prefillResources_;  // by prefill rows
  bool dropByBound_ = true;
  int prefillDesignsSized_ = 0;
  Progress progress_;
  void tell(const std::string& what) const {
    if (progress_) progress_(what);
  }
};

}  // namespace stc::llm
