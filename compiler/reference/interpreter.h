#pragma once
// The reference interpreter: evaluates a Graph in f32, the golden model the emitted HLS C simulation is
// compared with.

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace stc {

/// A dense row-major f32 tensor.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t size() const;
};

/// Evaluates every op of graph in order, from values for its inputs and weights (symbols bound by
/// bindings), and returns every tensor it computed by name. Semantics (numpy's where the op is
/// numpy's): layernorm eps 1e-5 (attribute `eps`), rmsnorm eps 1e-6; gelu exact (erf), or tanh with
/// `approximate: tanh`; rope rotates the two halves of the last dimension by angle pos * 10000^(-2i/d),
/// pos the index of the row (the dimension before the last). Throws UserError for a missing value or a
/// value of the wrong size.
std::map<std::string, Tensor> interpret(const Graph& graph, const std::map<std::string, Tensor>& values,
                                        const Bindings& bindings = {});

}  // namespace stc
