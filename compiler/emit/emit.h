#pragma once
// HLS emission: a compiled, sized network becomes a Vitis HLS project for the U55C (DESIGN.md, "HLS
// emission"): src/ (one top function per fused group), host/ (XRT), connectivity.cfg, hls_config.cfg,
// a Makefile, csim/ (a test bench and stream headers that need only g++) and data/ (inputs, weights and
// the reference interpreter's expected outputs).

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/platform.h"
#include "compiler/pipeline.h"
#include "compiler/reference/quantized.h"

namespace stc {

/// A cache the host extends after every token (a decode layer's keys and values): input `cache` grows by
/// one position along its axis of extent `symbol`, filled from output `fresh` (the new position's elements
/// in the cache's row-major order), and the symbol then advances, up to its maximum.
struct CacheAppend {
  std::string cache, fresh, symbol;
};

struct EmitOptions {
  std::string dir;          ///< the project folder
  bool force = false;       ///< replace a non-empty folder
  uint64_t seed = 1;        ///< random inputs and weights
  std::string inputsFile;   ///< raw little-endian f32 graph inputs, in order; empty = random from seed
  Bindings bindings;        ///< symbol values of the C simulation (`ctx`)
  int layers = 1;           ///< invocations the C simulation chains (a model's layers): output 0 feeds input 0
  double rtol = 1e-3, atol = 1e-3;  ///< the C simulation's tolerance: |out - expected| <= atol + rtol*|expected|
  std::vector<CacheAppend> caches;  ///< what the host's decode loop appends to, token after token
};

struct EmitSummary {
  std::vector<std::string> tops;  ///< one kernel per fused group
  std::vector<std::string> notes;  ///< what the user should know: a unit larger than any SLR's share
  int files = 0;
  int64_t bytes = 0;
};

/// One generated file: path relative to the project folder, and contents.
struct ProjectFile {
  std::string path;
  std::string text;
};

/// The kernel sources of a compiled network (src/*.cpp, src/*.h): one function per task, one top per
/// group. Throws UserError naming the op or task it cannot emit.
/// With quant (W4A8 scales), streams carry the compiled network's dtypes and kernels compute as
/// reference/quantized.h describes; without, every stream carries f32.
/// DMA ports get the bursts and outstanding requests of `hbm`, as the HBM model simulates them.
std::vector<ProjectFile> emitKernels(const Graph& graph, const CompileResult& compiled, const HbmConfig& hbm,
                                     const QuantPlan* quant = nullptr);

/// The symbols a project's code uses: the network's tripcounts and the tensors' shapes.
std::set<std::string> projectSymbols(const CompileResult& compiled);

/// `given` with every project symbol it lacks bound to 16 (at most the symbol's maximum): the values the
/// C simulation and the sizing simulation run at.
Bindings completeBindings(const CompileResult& compiled, Bindings given);

/// The top function of fused group `group`, or of its part in SLR `slr` (a group split at SLR boundaries).
std::string topFunctionName(const Graph& graph, int group, int slr = -1);

/// Writes the whole project to options.dir atomically (a temporary folder renamed into place); refuses a
/// non-empty folder without force. compiled.network carries the FIFO depths to emit.
EmitSummary emitProject(const Graph& graph, const CompileResult& compiled, const Platform& platform,
                        const EmitOptions& options);

}  // namespace stc
