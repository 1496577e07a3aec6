#pragma once
// Stream construction: the kernel graph becomes a Network. One task per kernel; a FIFO where producer
// and consumer orders agree, a converter (two tasks and a region FIFO) where they differ, shared by the
// consumers that want the same order; DMA reads for inputs, weights and tensors of earlier groups, DMA
// writes for outputs and tensors later groups read; weights striped over HBM channels and narrow DMA
// streams widened to 512-bit tokens; channels balanced by the bytes they serve.

#include <map>

#include "compiler/dse/fusion.h"
#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"
#include "compiler/lower/kernel_graph.h"

namespace stc {

/// The data width of every DMA's m_axi port and of its widened tokens: one kernel-side AXI word (two
/// 256-bit HBM beats).
constexpr int64_t kDmaTokenBits = 512;

/// The m_axi adapter's buffer of one DMA in words of kDmaTokenBits: outstanding bursts of
/// burst_bytes_max each (UG1399, "Controlling AXI4 Burst Behavior": num_*_outstanding x
/// max_*_burst_length words).
inline int64_t dmaBufferWords(const HbmConfig& hbm, bool write) {
  return (write ? hbm.outstandingWrites : hbm.outstandingReads) * hbm.burstBytesMax / (kDmaTokenBits / 8);
}

struct StreamCounts {
  int kernels = 0;
  int converters = 0;
  int dmas = 0;
  int adapters = 0;
  int64_t converterBytes = 0;
};

/// What each task of a built network does with data: the network keeps timing only, HLS emission
/// (compiler/emit) needs the rest.
struct TaskRole {
  enum Kind {
    kKernel,          ///< a kernel of the kernel graph
    kConverterWrite,  ///< fills one region per iteration of the shared loops, from `order`
    kConverterRead,   ///< streams each region in `target` order
    kLoad,            ///< DMA read of `tensor` in `order`
    kStore,           ///< DMA write of `tensor` in `order`
    kSplit,           ///< a wide token into `ratio` narrow ones (a DMA's beat, a kernel's wide tile, or a
                      ///< token of several beats into the beats a DMA writes)
    kPack,            ///< `ratio` narrow tokens into one 512-bit token
    kJoin,            ///< `ratio` 512-bit beats of a DMA read into one token of several beats
    kGather,          ///< an embedding lookup's DMA read of table rows
  } kind = kKernel;
  int kernel = -1;              ///< kKernel, kGather: index in KernelGraph::kernels
  /// kKernel: the FIFOs of each kernel port, [phase][port] (several: a striped input, or an output with
  /// several readers).
  std::vector<std::vector<std::vector<std::string>>> portFifos;
  std::string tensor;           ///< the tensor moved
  StreamOrder order;            ///< the (narrow) stream order; a converter's source order
  StreamOrder target;           ///< a converter's consumer order
  int sharedLoops = 0;          ///< a converter's shared outer loops
  std::vector<int64_t> region;  ///< a converter's region shape (at the symbols' maxima)
  int stripe = 0, stripes = 1;  ///< kLoad: the slice of each token it moves
  int64_t ratio = 1;            ///< narrow tokens per wide one (beats per token where the wide side is a token of several beats); 1 = not widened
  bool packed = false;          ///< kLoad: HBM holds exactly this stream (inputs, weights), not a row-major tensor
};

struct NetworkRoles {
  std::map<std::string, TaskRole> tasks;  ///< by task name
};

Network buildNetwork(const KernelGraph& graph, const FusionResult& fusion, const Platform& platform,
                     const CompileOptions& options, StreamCounts& counts, NetworkRoles* roles = nullptr);

// The beats of a row-major tensor that a DMA's tokens (or, `group` > 1, the `group` consecutive tokens one
// 512-bit DMA token collects) cover: contiguous, unpadded, beat-aligned, so that each access is one whole
// beat. Then the beat address of loop variables i_k is sum_k coeff[k] * i_k + first (+ the beat within
// the token), the innermost loop of more than one iteration counting groups when group > 1.
struct RowMajorBeats {
  std::string reason;  ///< empty: whole beats
  std::vector<int64_t> coeff;
  int64_t first = 0;
  int64_t beatsPerToken = 1;
  int groupLoop = -1;  ///< the loop whose iterations `group` tokens a beat take
};
RowMajorBeats rowMajorBeats(const TensorInfo& t, const StreamOrder& o, int64_t group, int64_t per, int stripes);
/// Whether the emitted DMA of row-major `t` in `o` moves its tokens as aligned 512-bit beats (rowMajorBeats;
/// tokens narrower than a beat packed `512 / bits` to a beat, as a store's pack adapter does; compiler/emit
/// stores f32 unless W4A8, int8 a byte, int4 not as whole elements).
bool dmaWholeBeats(const TensorInfo& t, const StreamOrder& o);

}  // namespace stc
