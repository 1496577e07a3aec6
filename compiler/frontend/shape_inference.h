#pragma once
// Shape inference over a Graph: the shape and dtype of every tensor, checked op by op.

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace stc {

enum class TensorRole { kInput, kWeight, kIntermediate, kOutput };

struct TensorInfo {
  std::string name;
  std::vector<Expr> shape;
  std::string dtype;
  TensorRole role = TensorRole::kIntermediate;
  int producer = -1;  ///< index of the op that writes it, -1 for inputs and weights
  SourceLoc loc;
};

struct TypedGraph {
  const Graph* graph = nullptr;
  std::map<std::string, TensorInfo> tensors;
  /// The symbols shapes use.
  std::set<std::string> symbols() const;
};

/// Infers every tensor's shape; throws one UserError listing every problem, each naming the op, its line
/// and the shapes that disagree.
TypedGraph inferShapes(const Graph& graph);

/// "[1, 1024]"-style text of a shape.
std::string shapeText(const std::vector<Expr>& shape);

}  // namespace stc
