#pragma once
// The kernel graph: a Graph lowered to pipelined loop nests whose ports read and write tensors in
// explicit stream orders (itensor types whose tripcounts may be symbolic). lower/streams.cpp turns it
// into a Network, adding FIFOs, converters and DMAs.

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/itensor.h"

namespace stc {

/// What the compiler may be asked (stc compile --set KEY=VALUE).
struct CompileOptions {
  int64_t tile = 16;                 ///< elements per token along a tensor's last dimension
  double unrollBudget = 0.7;         ///< share of the platform's DSPs the unrolling may use
  int64_t onchipBudgetBytes = 0;     ///< on-chip memory a fused group may use; 0 = a quarter of the platform's
  std::string quant = "none";        ///< "w4a8": 4-bit weights, 8-bit activations; "none": dtypes as given
  /// lane_ii=N: the II of the kernels that compute in f32 lanes (norms, softmax, activations, elementwise
  /// ops), whose operators HLS then shares over N cycles; 0: chosen (dse/cost_model.cpp: laneIi)
  int64_t laneIi = 0;
  /// lane_ii.OP=N: an op whose f32 lanes run at an II of their own (the search's refinement, or pinned)
  std::map<std::string, int64_t> laneIiOf;
  int maxStripe = 0;                 ///< most HBM channels one weight stream is striped across; 0: its
                                     ///< share of the channels among the weight streams of its stage
  std::map<std::string, int> stripeCap;  ///< derived (dse/tiling.cpp, stripeCaps): each weight's cap
  /// The unroll search's estimate of a weight's HBM cycles: on (stripe_estimate=aligned, the default),
  /// over the beat-aligned stripes the lowering gives it (wholeStripes); off (stripe_estimate=channels),
  /// over the channels its tile needs (stripesFor), which may be more than it gets (a 1,024-byte tile
  /// needs 18 channels of a cap of 10, and the lowering splits it into 8 beat-aligned stripes: its 2-row
  /// blocks then wait on HBM). An LLM's decode layer and head are compiled both ways and the faster sized
  /// design kept (llm/decode.cpp), unless the settings give the estimate (alignedStripeEstimateGiven).
  bool alignedStripeEstimate = true;
  bool alignedStripeEstimateGiven = false;        ///< stripe_estimate was set: one estimate, as given
  std::map<std::string, int64_t> pinnedTk;        ///< tk.OP=N: a matmul's reduction tile, as given
  std::map<std::string, int64_t> pinnedTn;        ///< tn.OP=N: a matmul's output tile, as given
  std::map<std::string, int64_t> pinnedRowBlock;  ///< row_block.OP=N: a matmul's row block (0: every row)
  /// row_block=N, the loop order of every matmul that writes panels and is not pinned: -1 (auto) the
  /// search's row block; 0 every row (weight-stationary: column panels outer); N blocks of gcd(N, M) rows
  int64_t rowBlockPolicy = -1;
  /// An f32 matmul over a weight whose K has no tile between the stream tile and 4 times it grows its
  /// output tile (dse/tiling.cpp, dimsOf). chooseSchedules turns it off where the design is over the DSP
  /// budget with it: such a matmul's reduction tile cannot then be halved below the stream tile.
  bool f32OutputTiles = true;
  std::map<std::string, SourceLoc> pinOrigin;     ///< "tk.OP", "row_block.OP": where a schedule file set it
  Bindings maxima;                   ///< the largest value of each symbol, for buffer sizes (default 4096)
  /// dim.NAME=N: an ONNX model's dynamic axis NAME fixed to N at import (frontend/onnx_import.h), so that
  /// the shape arithmetic an export computes from it folds; a graph file writes its sizes itself.
  std::map<std::string, int64_t> importDims;
  /// Off: compileGraph leaves every DMA on the lowering's channel, for a caller that may drop the design
  /// before paying assignPhaseChannels' simulations (pipeline.h).
  bool phaseChannels = true;
  /// slr_split=off: a fused group that no SLR holds stays one kernel (unpinned) instead of one per SLR
  /// (pipeline.h, splitAtSlrs).
  bool splitSlrs = true;
  /// fusion_joins=trimmed (off): fusion counts a joined stream's kept tokens (KernelPort::joinKeep) at
  /// its FIFO's least depth instead of its bound, the whole tensor until FIFO sizing trims it
  /// (dse/fusion.cpp): fewer groups, without their HBM round trips, where the sized streams are short
  /// (a long prompt's probabilities waiting for V). The sized figures then tell the design's memory.
  bool joinsAtBounds = true;
  /// causal_triangles=off: a causal attention over held keys runs every key of every row, the keys past
  /// the row weighed 0, instead of skipping the masked half (lower/triangles.h).
  bool causalTriangles = true;
  /// causal_triangles was set: as given. Unset, compileGraph keeps the triangles where the network runs
  /// faster with them (measured as the sizer measures it) or is too large to run at compile time.
  bool causalTrianglesGiven = false;
};

/// The schedule of one matmul: dse/tiling.cpp chooses it, lower/kernels.cpp applies it.
struct MatmulSchedule {
  int64_t tk = 0;  ///< reduction tile: MACs deep per output lane (0: the stream tile)
  int64_t rowBlock =
      0;  ///< a matmul over a right side from HBM with several rows (writesPanels): rows per
          ///< block. Loops (batch.., block, n, row, k): the right side streams from HBM once per
          ///< block, a column panel held while the block's rows use it; the block's rows are
          ///< held while its column panels pass, and its output is reordered a block at a
          ///< time. 0 or every row: one block, loops (batch.., n, m, k), the right side read once
  /// output tile: lanes wide along N (0: the stream tile). Wider, the output tokens are split to the
  /// stream tile for their readers; the search widens it where K is symbolic (P.V over ctx), whose
  /// reduction tile stays the stream tile the dimension is padded to.
  int64_t tn = 0;
  /// Written head by head (every row, tn the head size, rows from HBM: dse/tiling.cpp, chooseSchedules):
  /// the output streams through the reshape into heads in panel order, and its rows are read from HBM
  /// again for each panel.
  bool byHeads = false;
};
using Schedules = std::map<std::string, MatmulSchedule>;

/// An itensor type with symbolic tripcounts.
struct StreamOrder {
  std::vector<int64_t> element;
  std::string dtype;
  std::vector<Expr> trips;
  std::vector<int64_t> steps;
  AffineMap map;

  int64_t tokenBits() const;
  /// The number of tokens, as an expression.
  Expr tokens() const;
  /// The concrete type with symbols bound.
  ITensorType bind(const Bindings& b) const;
  bool isSymbolic() const;
  /// Whether some loop of more than one iteration moves no data dimension (the stream repeats data).
  bool repeats() const;
  bool operator==(const StreamOrder& o) const {
    return element == o.element && dtype == o.dtype && trips == o.trips && steps == o.steps && map == o.map;
  }
  bool operator!=(const StreamOrder& o) const { return !(*this == o); }
};

/// Elements of one of the order's tokens.
int64_t tokenElements(const StreamOrder& order);

struct KernelPort {
  std::string tensor;
  StreamOrder order;
  bool out = false;
  int level = -2;         ///< loop it advances with; -2 = innermost
  int64_t keepTokens = 0; ///< tokens its FIFO must hold for the kernel not to deadlock (a row kept for a second pass)
  bool joinKeep = false;  ///< keepTokens for a join whose streams are linked upstream (kept where the stream forks)
  bool weight = false;    ///< a weight or input (a KV cache) read straight from HBM, striped over channels
  bool restream = false;  ///< from HBM: read again at each iteration of the repeat loops outside its first
                          ///< data loop (a right side streamed once per row block), not held on chip
};

struct KernelPhase {
  std::vector<Expr> trip;
  std::vector<KernelPort> ports;
};

struct Kernel {
  std::string name;
  std::string op;           ///< the graph op it implements ("matmul", "softmax.stats", ...)
  std::string opName;       ///< that op's name in the graph
  int opIndex = -1;         ///< that op's index in the graph
  SourceLoc loc;
  std::vector<KernelPhase> phases;
  int64_t ii = 1;
  int64_t latency = 1;
  int64_t lanes = 1;         ///< operations per iteration (MACs for a matmul)
  /// A kernel of kEpilogueOp: the II its lanes share their operators over, its matmul's iterations per
  /// output token (at most its lanes).
  int64_t shareIi = 0;
  /// A rope kernel: the cos/sin pairs of its row's table it computes an iteration (ropeTableUnits).
  int64_t tableUnits = 0;
  std::string arithmetic;    ///< dtype its arithmetic runs in
  int64_t bufferBytes = 0;   ///< internal buffer (a concat's collected output, a held right side)
  /// Memories the buffer is partitioned into, of bufferBytes / bufferBanks each (a held right side: a bank
  /// per element of a key and per key of a tile, so that a key is stored and a [Tk, Tn] tile read a cycle).
  int64_t bufferBanks = 1;
  /// A matmul whose right side is a KV cache with the token's own row (kv_append): phase 0's port
  /// appendPort reads that row, a head's slice per iteration of the head loop (loop 0), and the kernel puts
  /// it into the right side's tiles at the cache's last position along its data dim appendAxis; -1: none.
  int appendPort = -1;
  int appendAxis = 0;
  /// A matmul whose right side is made on chip and held whole in the kernel (bufferBytes) under a causal
  /// softmax with as many keys as rows (self-attention over a prompt): phase 0's port 1 reads one key's row
  /// of the right side (a head's) at the first iteration of the (batch.., m) loops, the key whose index is
  /// the row's, so that row r's product waits only on keys 0 .. r, the ones the causal softmax keeps (the
  /// others count 0). Keys along N: the scores Q.K^T; along K: P.V. kNone: the right side streams in
  /// [Tk, Tn] tiles.
  enum class HeldKeys { kNone, kAlongN, kAlongK };
  HeldKeys heldKeys = HeldKeys::kNone;
  /// A held right side whose dim heldGroupDim (a head dim) comes in groups of heldGroup heads that share a
  /// slot of the buffer (bufferBytes): repeat_kv's copies of a KV head (lower/kernels.cpp: copiesGroup), the
  /// copies arriving after the first storing the same values again; or every head, where the product runs
  /// the heads outside its rows (attention written head by head), each head's keys overwriting the last's.
  /// 1: every head its own.
  int64_t heldGroup = 1;
  int heldGroupDim = -1;
  bool gather = false;       ///< an embedding lookup: a DMA read of table rows, no compute
  int64_t gatherBytes = 0;
  std::string gatherTable;
  // Estimates (dse/cost_model.cpp).
  int64_t dsp = 0, lut = 0;
};

/// The lane II of an op's f32 lanes: its own (lane_ii.OP) or the layer's (lane_ii).
inline int64_t laneIiOf(const CompileOptions& options, const std::string& op) {
  auto own = options.laneIiOf.find(op);
  return own != options.laneIiOf.end() ? own->second : options.laneIi;
}

/// The op of a kernel that applies a W4A8 matmul's epilogue apart from it (lower/kernels.cpp: lowerMatmul):
/// phase 0 reads a token of int32 sums and the epilogue's [Tn, 2] tile and writes the int8 output token.
inline constexpr const char* kEpilogueOp = "epilogue";

/// A rope kernel computes the cos and sin of each of its row's head_dim / 2 angles once, into a table its
/// lanes read, this many an iteration: the table is whole by half the row's `tiles` iterations, so the
/// next row's first output (tiles iterations after the row's first input) never waits on it.
inline int64_t ropeTableUnits(int64_t headDim, int64_t tiles) {
  int64_t half = headDim / 2, within = std::max<int64_t>(1, tiles / 2);
  return std::max<int64_t>(1, std::min(half, (half + within - 1) / within));
}

/// The ports of a kernel's last phase that are not the kv_append row (a matmul's bias is told by their count;
/// only an output-stationary matmul, of one phase, takes the row: lowerMatmul refuses it otherwise).
inline size_t operandPorts(const Kernel& k) { return k.phases.back().ports.size() - (k.appendPort >= 0 ? 1 : 0); }

struct KernelGraph {
  std::vector<Kernel> kernels;
  std::map<std::string, TensorInfo> tensors;  ///< every tensor, views included
  std::vector<std::string> inputs, weights, outputs;
  /// Where each tensor produced by a kernel is written (graph inputs and weights have no entry).
  struct PortRef {
    int kernel = -1, phase = 0, port = 0;
  };
  std::map<std::string, PortRef> producer;
  /// Tensors that are views of another (transpose, reshape): the base tensor's name.
  std::map<std::string, std::string> viewOf;
  /// Reshape views read in an order of their own: the order their base's producer writes them in.
  std::map<std::string, StreamOrder> viewOrder;
};

}  // namespace stc
