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

namespace stc::emit {

/// What a task body needs to know about the project.
struct EmitContext {
  const Graph* graph = nullptr;
  const CompileResult* compiled = nullptr;
  std::map<std::string, const Fifo*> fifos;  ///< by name
  std::map<std::string, std::string> fifoIds;  ///< a unique identifier per FIFO
  std::string fifoVar(const std::string& fifo) const { return "s_" + fifoIds.at(fifo); }
  /// f32 elements per token of a FIFO.
  int64_t elements(const std::string& fifo) const { return fifos.at(fifo)->width / 32; }
  /// The C++ block type of a converter's region FIFO.
  std::string blockType(const std::string& fifo) const { return "blk_" + fifoIds.at(fifo); }
};

/// Appends the statements of `task` (its role `role`) to code; memory is the DMA's pointer argument.
/// Throws UserError for an op it cannot emit.
void emitTaskBody(const EmitContext& ctx, const Task& task, const TaskRole& role, const std::string& memory,
                  Code& code);

/// The region block's element count of a converter task.
int64_t regionElements(const TaskRole& role);

}  // namespace stc::emit
