#pragma once
// The reference interpreter: evaluates a Graph in f32, the golden model the emitted HLS C simulation is
// compared with.

#include <functional>
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

/// Elements of a tensor of `shape`.
int64_t elementCount(const std::vector<int64_t>& shape);

/// `shape` with its symbols bound.
std::vector<int64_t> bindShape(const std::vector<Expr>& shape, const Bindings& b);

/// Element strides of a tensor of `shape` read from an output of shape `out` (right-aligned, numpy
/// broadcasting: a size-1 dimension has stride 0).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& out);

/// The offset of element `index` through `strides`.
int64_t offsetOf(const std::vector<int64_t>& index, const std::vector<int64_t>& strides);

/// Calls f with every index of `shape`, in row-major order.
void forEachIndex(const std::vector<int64_t>& shape, const std::function<void(const std::vector<int64_t>&)>& f);

/// kv_append's slots: calls f(cache index, new index) for each element of the last position along
/// `axis` (1 or 2) of a cache of `shape` [H, A, B], with the new row's element that takes it (the row is
/// [1, H * X], X the cache's other dim).
void forEachAppendSlot(const std::vector<int64_t>& shape, int64_t axis,
                       const std::function<void(int64_t, int64_t)>& f);

/// Evaluates every op of graph in order, from values for its inputs and weights (symbols bound by
/// bindings), and returns every tensor it computed by name. Semantics (numpy's where the op is
/// numpy's): layernorm eps 1e-5 (attribute `eps`), rmsnorm eps 1e-6; gelu exact (erf), or tanh with
/// `approximate: tanh`; rope rotates the two halves of the last dimension by angle pos * theta^(-2i/d)
/// (graph.h), pos the index of the row (the dimension before the last); kv_append is its cache with the new
/// row in its last position along `axis`. Throws UserError for a missing value or a value of the wrong size.
std::map<std::string, Tensor> interpret(const Graph& graph, const std::map<std::string, Tensor>& values,
                                        const Bindings& bindings = {});

}  // namespace stc
