#pragma once
// The Network: the dataflow IR every stage after the front end reads or writes. Tasks run phases of
// pipelined loop nests whose ports read and write FIFOs (DESIGN.md, "Network files").

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/diagnostics.h"
#include "compiler/ir/expr.h"
#include "compiler/ir/itensor.h"

namespace stc {

/// Depth value of a FIFO without a bound.
constexpr int64_t kUnboundedDepth = -1;
/// Depth of a FIFO whose file gives none.
constexpr int64_t kDefaultDepth = 2;

/// Whether a FIFO of this name is a converter's region FIFO (the compiler names it `<converter>.region`).
inline bool isRegionName(const std::string& name) {
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".region") == 0;
}

struct Fifo {
  std::string name;
  int64_t width = 0;              ///< bits per token
  int64_t depth = kDefaultDepth;  ///< tokens, or kUnboundedDepth
  SourceLoc loc;

  bool unbounded() const { return depth == kUnboundedDepth; }
  /// A converter's region FIFO (the compiler names it `<converter>.region`): tokens are whole regions.
  bool isRegion() const { return isRegionName(name); }
  /// Tokens of on-chip storage at its depth. A region FIFO keeps two blocks more. In the network a region
  /// is freed when its reader reads the token, at the start of the region, and taken when its writer
  /// writes it, at the end: the writer may be filling region k + 1 while the reader streams region k - depth.
  /// In hardware (hls::stream_of_blocks) a block is held from the write lock to the end of the read lock,
  /// so the buffer needs depth + 2 blocks to let the tasks run as simulated; never more than the regions
  /// one call moves (`regionsPerCall`): a converter of one region per call (a whole tensor) keeps one.
  int64_t storedTokens() const {
    if (!isRegion()) return depth;
    return regionsPerCall > 0 ? std::min(depth + 2, regionsPerCall) : depth + 2;
  }
  /// A region FIFO's tokens in one call at the symbols' maxima (compileGraph sets it; 0: not known, as in
  /// a network read from a file). Not part of the network file: it follows from the tripcounts.
  int64_t regionsPerCall = 0;
  bool operator==(const Fifo& o) const { return name == o.name && width == o.width && depth == o.depth; }
};

enum class PortDir { kIn, kOut };

struct Port {
  std::string fifo;
  PortDir dir = PortDir::kIn;
  std::optional<int> level;            ///< loop the port advances with; unset = innermost; -1 = per phase
  std::optional<ITensorType> type;     ///< stream order, written by the compiler
  SourceLoc loc;

  bool operator==(const Port& o) const {
    return fifo == o.fifo && dir == o.dir && level == o.level && type == o.type;
  }
};

/// The most iterations a phase's loops outside its pipeline may make (Phase::outer): each is a phase of the
/// simulator's program.
inline constexpr int64_t kMaxPhaseRuns = int64_t{1} << 20;

struct Phase {
  std::vector<Expr> trip;  ///< tripcounts, outermost first
  int64_t ii = 1;
  int64_t latency = 1;
  std::vector<Port> ports;
  SourceLoc loc;
  /// Loops 0..outer-1 run outside the pipeline, which drains at the end of each of their iterations (HLS:
  /// a pipelined loop nest inside loops it is not flattened into); 0: the whole nest is one pipeline.
  int outer = 0;
  /// What an iteration of those loops adds to the pipelined nest it runs: a cycle to enter it and one to
  /// leave it (UG1399, LOOP_FLATTEN: a sequential loop above a pipelined one takes a clock cycle to move
  /// into the inner loop and one to move back, besides the inner loop's whole latency).
  static constexpr int64_t kLoopEntryCycles = 1, kLoopExitCycles = 1;

  /// The level a port really advances with (its own, or the innermost loop).
  int levelOf(const Port& p) const { return p.level ? *p.level : static_cast<int>(trip.size()) - 1; }
  /// Whether `symbol` in the trip of loop `loop` is the index of a loop around it outside the pipeline:
  /// `iK` with K < outer and K < loop (a triangular nest, trip [4, "i0 + 1"] with outer 1: 1 to 4 iterations
  /// of the inner loop, as `for (i0 ..) for (i1 = 0; i1 <= i0; ..)` runs). Any other symbol is bound by the
  /// run (ctx).
  bool namesLoopIndex(size_t loop, const std::string& symbol) const;
  /// Whether some trip names a loop index (a triangular nest).
  bool indexed() const;
  bool operator==(const Phase& o) const {
    return trip == o.trip && ii == o.ii && latency == o.latency && outer == o.outer && ports == o.ports;
  }
};

enum class TaskKind { kKernel, kDmaRead, kDmaWrite };

/// "kernel", "dma_read" or "dma_write".
const char* taskKindName(TaskKind kind);

struct Task {
  std::string name;
  TaskKind kind = TaskKind::kKernel;
  std::vector<Phase> phases;  ///< kernels
  int channel = 0;            ///< DMA: HBM pseudo-channel
  int axiPort = -1;           ///< DMA: the HBM switch port its AXI master attaches to; -1 = `channel`'s own
  Expr bytes;                 ///< DMA: bytes moved (may use symbols, such as a KV cache of `ctx` rows)
  std::vector<Port> dmaPorts; ///< DMA: its one port
  int group = 0;              ///< kernel invocation it belongs to: group g starts after group g-1 ends
  /// The SLR of its compute unit when its group is split into one kernel per SLR (stc compile, where no
  /// SLR's share holds the group whole); -1: the group is one kernel. Timing ignores it: the parts of a
  /// group run together, a FIFO between two parts being an AXI4-Stream link between their kernels.
  int slr = -1;
  SourceLoc loc;

  bool isDma() const { return kind != TaskKind::kKernel; }
  bool operator==(const Task& o) const {
    return name == o.name && kind == o.kind && phases == o.phases && channel == o.channel && axiPort == o.axiPort &&
           bytes == o.bytes && dmaPorts == o.dmaPorts && group == o.group && slr == o.slr;
  }
};

struct Network {
  std::string name;
  /// The graph or ONNX file `stc compile` made it from, and its --set settings: what emission recompiles
  /// to know what the kernels compute (timing alone does not say). Empty for a hand-written network.
  std::string sourceFile;
  std::vector<std::string> sourceSettings;
  /// The range of each symbol the FIFO depths were sized and verified over (`sized_for: {ctx: [1, 512]}`,
  /// written by stc size-fifos); outside it they may deadlock or stall. Empty: not recorded.
  std::map<std::string, std::pair<int64_t, int64_t>> sizedFor;
  /// The largest value of each symbol its kernels' buffers hold (`maxima: {seq: 8}`, written by stc
  /// compile from max_SYMBOL or the model's own bound); a binding past it is refused. Empty: not recorded.
  std::map<std::string, int64_t> maxima;
  std::vector<Fifo> fifos;
  std::vector<Task> tasks;
  SourceLoc loc;

  /// Index of the FIFO named name, or -1.
  int findFifo(const std::string& name) const;
  /// Symbols its tripcounts use.
  std::set<std::string> symbols() const;
  /// Its symbolic tripcounts and DMA byte counts evaluated under `bindings`, in file order. Nothing else
  /// of a network depends on its symbols, so two bindings with equal values bind it to the same timing
  /// (sim::compileProgram): a KV cache padded to tiles of 16 gives the same values for ctx 512 to 527.
  std::vector<int64_t> boundValues(const Bindings& bindings) const;
  bool operator==(const Network& o) const { return name == o.name && fifos == o.fifos && tasks == o.tasks; }
};

/// Checks the rules of DESIGN.md: unique names, known FIFOs, one writer and one reader per FIFO moving
/// the same number of tokens, ii >= 1, latency >= 0, levels in range, positive widths, depths and
/// tripcounts. Symbolic tripcounts are checked under `bindings`, or, when a symbol is unbound, under
/// sample values. Reports every problem found.
Diagnostics verifyNetwork(const Network& net, const Bindings& bindings = {});

/// Tokens a port moves in one run of its phase, under bindings.
int64_t portTokens(const Phase& phase, const Port& port, const Bindings& bindings);

/// The runs of a phase's pipeline: for each iteration of its loops outside the pipeline (Phase::outer; a
/// single run when there are none), in row-major order, visit(index, trip) with those loops' indices and
/// every loop's tripcount at that iteration (a trip may name the indices of outer loops around it:
/// Phase::namesLoopIndex). Stops when visit returns false. Throws UserError as Expr::eval does.
void forEachRun(
    const Phase& phase, const Bindings& bindings,
    const std::function<bool(const std::vector<int64_t>& index, const std::vector<int64_t>& trip)>& visit);

}  // namespace stc
