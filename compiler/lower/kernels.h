#pragma once
// Lowering: each op of a typed graph becomes one or more pipelined loop nests (kernels) whose ports name
// the stream order they read or write.

#include <map>

#include "compiler/lower/kernel_graph.h"

namespace stc {

/// Elements per token along a dimension of size `last`: gcd(tile, last) where that is at least half the tile,
/// else last's largest divisor up to the tile (even where last is), or the tile itself when the size
/// is symbolic: the dimension is then padded to a multiple of the tile (`tilesOf`), and kernels mask the
/// padded positions (zeros from HBM; reductions and softmax skip them).
int64_t tileFor(const Expr& last, int64_t tile);

/// Whether a reshape from a last dimension `from` to `to` keeps the row-major token sequence at `tile`, up to
/// an adapter: both sides stream the same tile, or both are constant and one side's tile divides the
/// other's (`[S] -> [S, 1]` at 64: a token of 64 split into 64 of one; a token never spans a padded row).
bool reshapeStreams(const Expr& from, const Expr& to, int64_t tile);

/// Tiles of `tile` elements over a dimension of `size`: size / tile, rounding up when symbolic.
Expr tilesOf(const Expr& size, int64_t tile);

/// The canonical order of a tensor: row-major over its shape, `tileFor` elements per token on the last
/// dimension.
StreamOrder canonicalOrder(const TensorInfo& t, int64_t tile);

/// The dims of `t` that the loops of `o` walk, outermost first, when `o` walks each dim once in its own loop
/// (whole, or in tiles of the token's elements, which only the innermost loop's dim may have) and repeats
/// nothing: a row-major order over a permutation of the dims. Empty for any other order.
std::vector<int> loopDims(const StreamOrder& o, const TensorInfo& t);

/// The order walking `t`'s dims as `dims` (loopDims) lists them, the innermost `t`'s last, tiled as the
/// canonical order tiles it.
StreamOrder layoutOrder(const TensorInfo& t, const std::vector<int>& dims, int64_t tile);

/// Whether matmul `op` runs column panel by column panel (n outer: several rows and a right side from
/// HBM), writing its output only once each row's panels are in (a copy kernel then reads them row-major).
bool writesPanels(const TypedGraph& graph, const Op& op);
/// The head size D when a matmul that writes panels (writesPanels) reads its rows from HBM and its output
/// [.., M, H * D] has one reader, a reshape into heads [.., M, H, D] that only transposes read, each
/// taking the heads before the rows (attention's projections): weight-stationary in column panels of D,
/// its output can stream head by head (no converter holds the tensor; a product holding its keys
/// causally then holds one head's). 0 otherwise.
int64_t headDimOf(const TypedGraph& graph, const Op& op);
/// The op whose output `tensor` is, or null (a graph input or weight).
const Op* producerOf(const TypedGraph& graph, const std::string& tensor);

/// Whether matmul `op` streams its input (k outer, two phases): a GEMV (one row) over a weight whose
/// input arrives spread over the run of an output-stationary matmul (directly or through elementwise ops).
bool streamsInput(const TypedGraph& graph, const Op& op);

/// Kernel::HeldKeys of matmul `op`: a product of as many keys as rows over a right side made on chip
/// (self-attention over a prompt, no cached keys, not an input from HBM) under a causal softmax. P.V reads
/// the softmax's output (keys along K); the scores reach the softmax through elementwise ops alone, each
/// tensor on the way read by nothing else (the keys past a row come out 0, which only the softmax may read:
/// it weighs them 0).
Kernel::HeldKeys heldKeysOf(const TypedGraph& graph, const Op& op);

/// Of a product whose right side is held whole (Kernel::heldKeys), the dim of that side's element (its
/// order `right`, the kernel's first phase's second port) that advances with the row loop: its key dim,
/// the second last where that one moves, else the last.
size_t heldKeyDim(const StreamOrder& right);

/// Whether dim `dim` of `tensor` holds copies: its index i reads the same values as (i / group) * group
/// does, the tensor made by reshapes and transposes of an add of zeros broadcast over one dim (repeat_kv's
/// expand of a KV head to the query heads that share it), that dim the inner part of `dim`. The group
/// (>= 2), or 1.
int64_t copiesGroup(const TypedGraph& graph, const std::string& tensor, size_t dim);

/// Lowers every op; schedules give each matmul's reduction tile and row block (from dse/tiling.cpp).
/// Throws UserError naming an op it cannot lower.
KernelGraph lowerToKernels(const TypedGraph& graph, const CompileOptions& options,
                           const Schedules& schedules);

}  // namespace stc
