#pragma once
// The compiler's map: a graph, through every pass, to a Network and a report (one file reads as the
// whole pipeline: pipeline.cpp).

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/lower/kernel_graph.h"
#include "compiler/lower/streams.h"

namespace stc {

/// A symbol's largest value when the settings give no max_SYMBOL: the kernels' buffers hold it.
inline constexpr int64_t kDefaultSymbolMaximum = 4096;

struct CompileReport {
  int kernels = 0, converters = 0, dmas = 0, adapters = 0, fifos = 0, groups = 0;
  int64_t onchipBytesFused = 0;         ///< every buffer and FIFO of the groups (what the budget bounds)
  int64_t onchipBytesIntermediate = 0;  ///< of which on streams between kernels (intermediate results)
  int64_t onchipBytesUnfused = 0;       ///< the intermediate results kept whole instead
  /// "file:line:col: warning: ..." for what compiles but will run far below what the platform can do (a
  /// width that streams one element a token), in the file's order.
  std::vector<std::string> warnings;
  /// Kernel tasks whose pipelines drain at the end of each iteration of their outer loop (Phase::outer;
  /// drainHeldPipelines), in network order.
  std::vector<std::string> drainedPipelines;
  /// Tasks of causal attentions that skip the masked half (lower/triangles.h: their key loops stop at the
  /// row's block of triangleKeyBlock keys), in chain order; triangleSkipped says why a causal attention over
  /// held keys kept every key.
  std::vector<std::string> triangularTasks;
  int64_t triangleKeyBlock = 0;
  std::string triangleSkipped;
  Resources resources;
  bool fits = false;
  double compileSeconds = 0;
};

/// Where a network over symbols is sized so that its depths hold over each symbol's range, as the decode
/// estimator sizes its layer: each symbol at its samples (sizing::symbolSamples), the others as bound; then
/// the bindings themselves, last.
std::vector<Bindings> sizingBindings(const Network& net, const CompileOptions& options,
                                     const Bindings& bound);

struct CompileResult;
/// A stall pipeline at least as deep as an iteration of its outer loop holds that iteration's writes
/// until the next one's reads come (a decode layer's scores, softmax and P.V, one head after another at
/// the pace of the projections making q and K): where simulating the network at its symbols' samples
/// (sizing::symbolSamples) finds their cycles summed over them at least 1% fewer, such kernels' pipelines
/// drain at the end of each outer iteration instead (Phase::outer = 1; the emitted loop is not flattened into
/// it). Networks of more than a few million events are left as they are.
void drainHeldPipelines(CompileResult& c, const Platform& platform);

struct CompileResult {
  Network network;
  CompileReport report;
  KernelGraph kernels;  ///< what the network's kernel tasks compute
  NetworkRoles roles;   ///< what each task does with data (for emission)
  CompileOptions options;  ///< the options used, symbol maxima filled in
  Schedules schedules;     ///< each matmul's reduction tile and row block
};

/// Parses `--set KEY=VALUE` settings (tile, unroll_budget, onchip_budget_bytes, quant, max_stripe,
/// max_SYMBOL, row_block (every matmul's loop order: auto, 0 weight-stationary, N rows per block), and a
/// matmul's schedule pinned: tk.OP, tn.OP, row_block.OP) into options; UserError naming an
/// unknown key or a bad value.
CompileOptions parseCompileOptions(const std::vector<std::string>& settings, const Platform& platform);
/// Pins each op of a schedule file (stc compile --schedule), remembering where for error messages; a
/// knob already pinned (--set) keeps its value. Returns the pins it applied as KEY=VALUE settings.
std::vector<std::string> applySchedule(const std::vector<SchedulePin>& pins, CompileOptions& options);
/// The schedules and the lane IIs chosen (the layer's and each op's own) as a schedule file's pins (stc
/// compile --write-schedule), so that compiling with them gives the same design.
std::vector<SchedulePin> schedulePins(const Schedules& schedules, const CompileOptions& chosen);

/// The resource estimate of each fused group (a compute unit), from the network's FIFO depths; the
/// report's resources are their sum.
std::vector<Resources> groupResources(const CompileResult& c, const Platform& platform);

/// Compute units onto SLRs: each unit with a `pinned` SLR (>= 0) there, then each other unit, in order,
/// into the first SLR (SLR0 first, beside the HBM) whose budget, less the units already there, holds it
/// whole; -1 for a unit no SLR holds, which has to span SLRs.
struct Placement {
  std::vector<int> slrOf;       ///< per unit
  std::vector<Resources> used;  ///< per SLR: the units placed there
};
Placement placeUnits(const std::vector<Resources>& units, const std::vector<Resources>& budgets,
                     const std::vector<int>& pinned = {});

/// One compute unit (one kernel of the project): a fused group, or the part of a group split at SLR
/// boundaries that one SLR holds.
struct ComputeUnit {
  int group = 0;
  int slr = -1;  ///< the SLR of a split group's part; -1: the whole group
  Resources resources;
};
/// The network's compute units, group after group (a split group's parts SLR after SLR), each with its
/// resource estimate from the network's FIFO depths.
std::vector<ComputeUnit> computeUnits(const CompileResult& c, const Platform& platform);

/// The widest stream a cut between SLRs may carry (an AXI4-Stream link between two kernels), and the
/// deepest: the largest AXI4-Stream Data FIFO that stream_connect inserts holds 32,768 entries (PG085).
inline constexpr int64_t kMaxCrossingBits = 1024, kMaxCrossingDepth = 32768;

/// Splits each fused group that no SLR's remaining share holds (the groups an SLR holds placed first fit
/// first, as placeUnits) into one part per SLR: each task gets its part's SLR (Task::slr). The cut runs in
/// topological order at the positions whose fullest part is least full, never through a converter's
/// region, a stream wider than kMaxCrossingBits or deeper than kMaxCrossingDepth, a FIFO going back in
/// that order, or a FIFO of a DMA or an adapter (they stay with their kernel). A FIFO between parts is an AXI4-Stream link between their kernels (stc emit); the
/// network is otherwise unchanged, so the cut may move when FIFO depths change (updateResources runs it
/// again, unless options.splitSlrs is off). A group no cut fits keeps the parts it had (over their shares)
/// where every stream between them may still cross, or becomes whole. Returns the groups split.
int splitAtSlrs(CompileResult& c, const Platform& platform);

/// One FIFO's memory (a converter's region: its ping-pong buffer and control), as every estimate counts it.
Resources fifoResources(const Fifo& f);
/// The on-chip bytes of the intermediate results at the network's FIFO depths: the kernels' buffers and
/// every FIFO on a stream from one kernel to another (a converter's regions at Fifo::storedTokens among
/// them; not the streams of inputs, weights and tensors through HBM). compileGraph's report gives the
/// same count at the compiled depths, before sizing (onchipBytesIntermediate, an upper bound where a
/// join keeps a whole tensor); after sizing, this is what the design holds.
int64_t intermediateBytesAtDepths(const CompileResult& c);
/// The report's resources and fit, again from the network's FIFO depths (after sizing changed them), and
/// the groups no SLR holds cut again for them (splitAtSlrs). compileGraph runs it last.
void updateResources(CompileResult& c, const Platform& platform);
/// Whether the design fits the platform with `sized`'s FIFO depths (the network of c sized): its
/// resources counted again (updateResources) on a copy (a sizer's SizingOptions::fits).
bool fitsWithDepths(const CompileResult& c, const Network& sized, const Platform& platform);

/// Every DMA onto a channel by the phases in which it streams (dse/channels.h), from simulations with each
/// symbol at its maximum, at most 128 (the phases, not the length of the attention, decide who overlaps
/// whom). compileGraph ends with it unless options.phaseChannels is off.
void assignPhaseChannels(CompileResult& c, const Platform& platform);

/// Runs every pass: shape inference, tiling, lowering, costing, fusion, streams, channels by phase,
/// verification.
CompileResult compileGraph(const Graph& graph, const Platform& platform, const CompileOptions& options);

}  // namespace stc
