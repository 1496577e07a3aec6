#pragma once
// Tiling space exploration: each matmul's reduction tile (its unroll), raised for the slowest kernel
// first under the platform's DSP budget.

#include <map>
#include <string>

#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/platform.h"
#include "compiler/lower/kernel_graph.h"

namespace stc {

/// The reduction tile Tk of every matmul op, by name.
std::map<std::string, int64_t> chooseUnroll(const TypedGraph& graph, const Platform& platform,
                                            const CompileOptions& options);

/// Kernel cycles of a matmul with reduction tile tk: its iterations, or, when its right side streams from
/// HBM, the cycles the channels need to deliver it, whichever is larger (symbols at their maxima).
double matmulCycles(const TypedGraph& graph, const Op& op, int64_t tk, const Platform& platform,
                    const CompileOptions& options);

/// HBM channels one weight stream of tokenBytes per cycle is striped over (at most the weight's cap in
/// options.stripeCap, else options.maxStripe, else 8).
int stripesFor(int64_t tokenBytes, const Platform& platform, const CompileOptions& options, const std::string& weight);

/// Each weight's stripe cap: options.maxStripe when set; otherwise the platform's channels shared among
/// the weight matmuls of its stage. Stages: a one-row norm (its second pass waits for the whole row) or a
/// matmul whose output comes at once (an input-streaming GEMV, a prefill matmul's panels) starts the
/// next; the weight matmuls of one stage stream together (q, k, v and o of a decode layer; its up and
/// down projections), those of different stages one after another, so each stage may use every channel.
std::map<std::string, int> stripeCaps(const TypedGraph& graph, const Platform& platform, const CompileOptions& options);

}  // namespace stc
