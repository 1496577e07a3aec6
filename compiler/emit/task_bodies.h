#pragma once
// The body of one task's HLS function, by what the task does (lower/streams.h TaskRole): kernels by their
// op, converters, DMAs and width adapters by their stream orders.

#include <map>
#include <string>
#include <vector>

#include "compiler/emit/codegen_utils.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/network.h"
#include "compiler/pipeline.h"
#include "compiler/reference/quantized.h"

namespace stc::emit {

/// What a task body needs to know about the project.
struct EmitContext {
  const Graph* graph = nullptr;
  const CompileResult* compiled = nullptr;
  const QuantPlan* quant = nullptr;  ///< W4A8 scales; null: every stream carries f32
  std::map<std::string, const Fifo*> fifos;  ///< by name
  std::map<std::string, std::string> fifoIds;  ///< a unique identifier per FIFO
  /// The dtype of each FIFO's elements: its order's, f32 throughout an unquantised design (compileGraph types
  /// every tensor f32 there, pipeline.cpp: holdInF32).
  std::map<std::string, std::string> fifoDtypes;
  std::string fifoVar(const std::string& fifo) const { return "s_" + fifoIds.at(fifo); }
  std::string fifoDtype(const std::string& fifo) const;
  /// Storage units per token of a FIFO (f32, int8 or int32 elements; bytes of two int4 weights).
  int64_t elements(const std::string& fifo) const;
  /// The C++ token type of a FIFO.
  std::string tokenType(const std::string& fifo) const;
  /// The C++ block type of a converter's region FIFO.
  std::string blockType(const std::string& fifo) const { return "blk_" + fifoIds.at(fifo); }
  /// The int8 scale of a tensor (a matmul's column panels share its output's).
  const QuantScale& scale(const std::string& tensor) const;
};

/// The C++ type holding elements of `dtype` (int4 pairs as bytes) and its bits.
struct Storage {
  std::string type;
  int64_t bits = 32;
};
Storage storageOf(const std::string& dtype);

/// The token type of `units` storage units of dtype.
std::string tokenOf(int64_t units, const std::string& dtype);

/// Storage units of one token of order.
int64_t storageUnits(const StreamOrder& order);

/// How a DMA's m_axi port is accessed. A port whose every access is one whole 512-bit beat at a beat's
/// address is typed as the beat, `Tok<per, T>` (UG1399: an aggregate on an m_axi interface is one wide
/// word), so the width does not hang on HLS inferring a burst: a packed stream whose tokens are whole
/// beats or are widened to 512 bits, and a row-major tensor whose tokens (or the tokens one 512-bit DMA
/// token collects) are contiguous, unpadded and beat-aligned. Any other port is typed as its elements.
struct DmaPort {
  int64_t per = 0;     ///< storage units of a beat; 0: an element port
  std::string reason;  ///< an element port: why not beats
  std::string dtype;    ///< the dtype of its elements in the emitted code
  bool beats() const { return per > 0; }
  /// The pointee type of the top function's argument: tokenOf(per, dtype), or the element's storage type.
  std::string type() const;
};
DmaPort dmaPort(const CompileResult& compiled, const TaskRole& role);

/// An f32 literal that reads back as exactly v (infinities and NaN through std::numeric_limits).
std::string floatLiteral(float v);

/// Appends the statements of `task` (its role `role`) to code; memory is the DMA's pointer argument.
/// Throws UserError for an op it cannot emit.
void emitTaskBody(const EmitContext& ctx, const Task& task, const TaskRole& role, const std::string& memory,
                  Code& code);

/// The region block's element count of a converter task.
int64_t regionElements(const TaskRole& role);
/// Storage units of a converter's region block (two int4 weights a byte).
int64_t regionUnits(const TaskRole& role);
/// The cyclic partition factor of a converter's region block under which every token its writer stores
/// and every token its reader loads touches each bank once, so that both run at II=1: the smallest
/// factor that separates the storage units of one token in both orders (a bank per unit when none does).
int64_t regionBanks(const TaskRole& role);

}  // namespace stc::emit
