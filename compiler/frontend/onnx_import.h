#pragma once
// The ONNX front end: a model exported by PyTorch (torch.onnx.export, opsets 13 to 17) as a Graph.

#include <cstdint>
#include <map>
#include <string>

#include "compiler/ir/graph.h"

namespace stc {

/// Imports the model at path: initializers become weights (their values, converted to f32, in
/// Graph::values; none for a weight whose data the file keeps outside it), shapes come from ONNX shape
/// inference (symbolic dimensions keep their names as symbols), constant subgraphs (shape arithmetic) are
/// folded, and decomposed LayerNorm, RMSNorm, GELU (erf and tanh forms) and SiLU become one op each.
/// `dims` fixes dynamic axes (a dim_param such as `seq`, by its symbol name) to sizes before shape
/// inference, so that the shape arithmetic computed from them folds to constants (`--set dim.seq=128`).
/// Throws one UserError naming the file for a file that is not ONNX or an opset outside 13..17, for a
/// fixed axis the model does not have, or listing every unsupported node by name and op type.
Graph importOnnx(const std::string& path, const std::map<std::string, int64_t>& dims = {});

}  // namespace stc
