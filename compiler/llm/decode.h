#pragma once
// LLM decode and prefill on the platform: the decoder layer compiled once, simulated cycle by cycle for
// every context length a run meets, and added up over layers and tokens with the host's invocation
// overhead between kernel calls.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/model_spec.h"
#include "compiler/ir/platform.h"
#include "compiler/pipeline.h"

namespace stc::llm {

/// How the layers are invoked for each token.
struct Schedule {
  double latencyMs = 0;
  double ttftMs = 0;
  double decodeTokensPerS = 0;
};

struct DecodeResult {
  std::string model;
  int64_t prompt = 0, gen = 0;
  Schedule hostLoop;      ///< the paper's: one kernel call per layer (and one for the head)
  Schedule deviceLoop;    ///< one call per token, the device stepping through the layers' weights
  double rooflineTokensPerS = 0;  ///< weight and KV bytes per token over the HBM bandwidth
  int64_t layerCyclesFirst = 0, layerCyclesLast = 0;
  int64_t prefillLayerCycles = 0, headCycles = 0;
  Resources resources;
  bool fits = false;
  int64_t hbmBytes = 0;   ///< weights and the KV cache at max_ctx
  bool fitsHbm = false;
  double wallSeconds = 0;
};

/// Compiles and simulates a model's networks; results of identical invocations (same network, same ctx)
/// are computed once and reused. Simulations run in parallel (oneTBB); results do not depend on the
/// number of threads.
class Estimator {
 public:
  Estimator(const ModelSpec& model, const Platform& platform);
  /// One prompt:generation pair.
  DecodeResult run(int64_t prompt, int64_t gen);
  /// Several, sharing their simulations.
  std::vector<DecodeResult> runAll(const std::vector<std::pair<int64_t, int64_t>>& requests);

 private:
  void simulateMissing(const std::vector<std::pair<int64_t, int64_t>>& requests);
  DecodeResult assemble(int64_t prompt, int64_t gen) const;

  ModelSpec model_;
  Platform platform_;
  CompileOptions options_;
  CompileResult decodeLayer_, head_;
  std::map<int64_t, int64_t> decodeCycles_;   // by ctx
  std::map<int64_t, int64_t> prefillCycles_;  // by prompt length
  int64_t headCycles_ = 0;
  std::map<int64_t, Resources> prefillResources_;
};

}  // namespace stc::llm
