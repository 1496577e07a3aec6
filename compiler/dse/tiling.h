#pragma once
// Tiling space exploration: each matmul's reduction tile (its unroll), raised where the layer waits
// (the matmuls on its critical path, those side by side together) under the platform's DSP budget.

#include <map>
#include <optional>
#include <string>

#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/platform.h"
#include "compiler/lower/kernel_graph.h"

namespace stc {

/// Why a setting naming an op (tk.OP, tn.OP, row_block.OP: a matmul; lane_ii.OP: any op) names none of the
/// graph's: "the graph has no matmul named 'OP'"; "" when it does, or names no op.
std::string missingOp(const std::string& key, const Graph& graph);

/// Attention written head by head where the rows-outer design was kept for its cycles: its schedules and
/// options, for the compiler to take when the rows-outer design holds too much on chip (kOnchipShareGoal).
struct HeadsAlternative {
  Schedules schedules;
  CompileOptions options;
};

/// Where the rows-outer design keeps more than this share of its intermediate results on chip (at the
/// compiler's bounds, against every one kept whole: the paper's fused designs keep 15-17%), the compiler
/// takes attention written head by head instead, when that keeps at most this share and its estimate is at
/// most kHeadsMemoryRatio times the rows-outer one's.
inline constexpr double kOnchipShareGoal = 0.20;
inline constexpr double kHeadsMemoryRatio = 1.6;

/// The schedule of every matmul op, by name: its reduction tile Tk and its row block; and, where
/// options.laneIi is 0, the lane II it was chosen with (set in options). Where attention's projections
/// could be written head by head but the rows-outer design was kept, within kHeadsMemoryRatio of its
/// estimate and no further over the DSPs, `heads` (if given) gets that design.
Schedules chooseSchedules(const TypedGraph& graph, const Platform& platform, CompileOptions& options,
                          std::optional<HeadsAlternative>* heads = nullptr);

/// Kernel cycles of a matmul with reduction tile tk and row block rowBlock (0: every row): its
/// iterations, or, when its right side streams from HBM, the cycles the channels need to deliver it
/// (once per block), whichever is larger (symbols at their maxima).
double matmulCycles(const TypedGraph& graph, const Op& op, int64_t tk, int64_t rowBlock,
                    const Platform& platform, const CompileOptions& options);

/// The row block a matmul of M rows takes after b: 2b where that divides M, else the smallest divisor of M
/// in (2b, 4b] (129 = 3 * 43 rows: 1 -> 3, where doubling left every block at 1 row); 0 where none is.
int64_t nextRowBlock(int64_t M, int64_t b);

/// The row block of a matmul over a right side from HBM with several rows (writesPanels) at reduction
/// tile tk: the fewest rows (a power of two dividing M) for which streaming the right side once per
/// block takes no more cycles than the matmul's iterations (fewer rows hold less on chip: the block
/// of A, the block of output); every row (0) when no block does, or when the matmul does not write
/// panels.
int64_t chooseRowBlock(const TypedGraph& graph, const Op& op, int64_t tk, const Platform& platform,
                       const CompileOptions& options);

/// HBM channels one weight stream of tokenBytes per cycle is striped over (at most the weight's cap in
/// options.stripeCap, else options.maxStripe, else 8).
int stripesFor(int64_t tokenBytes, const Platform& platform, const CompileOptions& options, const std::string& weight);
/// Whether a DMA stripe of `stripeBytes` per token moves in whole 512-bit beats (a multiple of 64 bytes,
/// joined into tokens after the DMA) or in parts of one (a divisor of 64, widened into beats): a stripe of
/// 96 or 48 bytes could only be read element by element, or a beat and a half at a time.
bool beatAligned(int64_t stripeBytes);
/// The stripes the lowering gives such a stream, each a beat-aligned whole number of the token's bytes:
/// the fewest of at least stripesFor's, when within the cap and at most a quarter above the channels the
/// token needs; else the most below it (a 1,024-byte tile needing 17.8 channels of a cap of 32 gets 16 of
/// 64 bytes, a 768-byte tile capped at 10 gets 6 of 128, not 8 of 96; every DMA costs an AXI master, and a
/// stripe more than the stream needs only costs); whole bytes where nothing is beat-aligned. The unroll
/// search's estimate keeps stripesFor's count: estimating with these steered it away from larger tiles
/// that the simulation finds faster all the same (GPT-2's P.V, Qwen's MLP: 32:32 at 48.9% and 50.7% of
/// the roofline instead of 50.3% and 58.3%). A stripe holds whole elements of `unitBytes` (4 for f32 and
/// int32; a byte holds two int4 weights): a token of 27 floats is one stripe, not two of 54 bytes.
int wholeStripes(int64_t tokenBytes, const Platform& platform, const CompileOptions& options, const std::string& weight,
                 int64_t unitBytes = 1);

/// Each weight's stripe cap: options.maxStripe when set; otherwise the platform's channels shared among
/// the weight matmuls of its stage. Stages: a one-row norm (its second pass waits for the whole row) or a
/// matmul whose output comes at once (an input-streaming GEMV, or one whose right side is made on chip
/// and held whole, like attention's keys in a prefill) starts the next; the weight matmuls of one stage
/// stream together (q, k, v and o of a decode layer; its up and down projections), those of different stages
/// one after another, so each stage may use every channel.
std::map<std::string, int> stripeCaps(const TypedGraph& graph, const Platform& platform, const CompileOptions& options);

}  // namespace stc
