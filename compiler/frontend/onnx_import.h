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
/// With `overFreeAxes`, a model whose shape arithmetic over its dynamic axes left free reaches the data
/// only as reshape and expand targets is imported at two sizes of each such axis, and the two graphs, alike
/// but for those sizes, make one graph over the axes as symbols (a reshape's target saying them: [1, seq, 4,
/// 16]), with a note saying so (Graph::notes).
Graph importOnnx(const std::string& path, const std::map<std::string, int64_t>& dims = {},
                 bool overFreeAxes = false);

}  // namespace stc
