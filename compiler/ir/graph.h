#pragma once
// The Graph: tensor-level ops of a model, with shapes that may be symbolic (`ctx`, `seq`).

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/diagnostics.h"
#include "compiler/ir/expr.h"

namespace stc {

/// A named tensor: a graph input, a weight or an op's result.
struct TensorDecl {
  std::string name;
  std::vector<Expr> shape;
  std::string dtype = "f32";
  SourceLoc loc;
  bool operator==(const TensorDecl& o) const { return name == o.name && shape == o.shape && dtype == o.dtype; }
};

/// An attribute value: integer, real, string or integer list.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

struct Op {
  std::string name;
  std::string op;  ///< matmul, add, softmax, ...
  std::vector<std::string> inputs;
  std::string output;
  std::map<std::string, AttrValue> attrs;
  SourceLoc loc;
  bool operator==(const Op& o) const {
    return name == o.name && op == o.op && inputs == o.inputs && output == o.output && attrs == o.attrs;
  }
};

struct Graph {
  std::string name;
  std::vector<TensorDecl> inputs;
  std::vector<TensorDecl> weights;
  std::vector<Op> ops;
  std::vector<std::string> outputs;
  std::map<std::string, std::vector<float>> values;  ///< known values of weights (row-major f32), e.g. ONNX initializers
  SourceLoc loc;
  std::vector<std::string> notes;  ///< what the front end found the user should know (not compared)
  /// The largest value a symbol may take in the model where it has one (an ONNX mask buffer's positions):
  /// compiling takes it as max_SYMBOL. (Not compared, and not in the YAML.)
  std::map<std::string, int64_t> maxima;
  /// Compares structure only, not `values` (the YAML format carries only a weight's one value, `fill`).
  bool operator==(const Graph& o) const {
    return name == o.name && inputs == o.inputs && weights == o.weights && ops == o.ops && outputs == o.outputs;
  }
};

/// A list of sizes as an attribute: an integer list where every size is constant, else the text
/// "[e1, e2, ...]" of the expressions (a reshape's `shape: [seq, 16, 64]` over a symbolic `seq`).
AttrValue sizesAttr(const std::vector<Expr>& sizes);
/// The sizes of an attribute sizesAttr made (or a graph file wrote); a UserError naming the op and the field
/// where it is neither form.
std::vector<Expr> sizesOf(const Op& op, const std::string& key);

/// A numeric attribute of op (integer or real), or fallback when it has none.
double numberAttr(const Op& op, const std::string& key, double fallback);

/// rope rotates each head of head_dim elements (attribute `head_dim`; without it the whole row) by pairs
/// (i, i + head_dim / 2), by the angle pos * theta^(-2i / head_dim) (attribute `theta`, the base: 10000
/// without it), where pos is the row's index along the second-to-last dimension plus `offset` (an
/// expression over symbols, such as `ctx` for the token a decode step adds after ctx cached ones; "0"
/// without it).
int64_t ropeHeadDim(const Op& op, int64_t rowLength);
double ropeTheta(const Op& op);
std::string ropeOffset(const Op& op);

/// softmax's `causal: 1` (or `true`) is attention's causal mask: row r of scores [.., R, K] (r counted along the
/// second-to-last dimension) keeps keys 0 .. r + K - R, its own position and those before it when the R
/// rows are the last R of the K positions (a prompt after K - R cached ones); the other keys weigh 0.
bool isCausal(const Op& op);
/// The keys row r of R keeps, of K (all K without the attribute).
int64_t keptKeys(const Op& op, int64_t r, int64_t R, int64_t K);
/// Whether a reshape from shape `from` to `to` keeps every row's keys where they were: both of rank 2 or
/// more, the last two dims the same (OPT's scores [b * h, R, K] viewed as [b, h, R, K] and back), so that a
/// causal mask or a held key means the same on either side.
bool keepsRows(const std::vector<Expr>& from, const std::vector<Expr>& to);

/// Whether weight `weight` of g has known values, all zero (an ONNX initializer's, or a graph file's
/// `fill: 0`): repeat_kv's copies of KV heads add such a weight.
bool knownZeros(const Graph& g, const std::string& weight);

/// The row of a table of V rows an embedding takes for token id `id`: -V .. -1 count from the end (ONNX's
/// Gather, torch's indexing); past the table, its first or last row. (The emitted lookup computes the same.)
int64_t embeddingRow(float id, int64_t V);

/// kv_append's cache axis, 1 or 2 (`axis`, -1 meaning 2); other values are left for shape inference to refuse.
int64_t kvAppendAxis(const Op& op);

/// The op names the toolkit knows.
const std::vector<std::string>& knownOps();

/// Elementwise ops, with numpy broadcasting of their inputs: 1 for unary (gelu, silu, relu, sigmoid, exp,
/// tanh, erf, sqrt, reciprocal, abs, log, softplus, floor, ceil, round (half to even), sign, sin, cos), 2 for
/// binary (add, sub, mul, div, max, min, pow, fmod (C's: the dividend's sign), and the comparisons greater,
/// less, equal, greater_equal, less_equal: 1 where it holds, else 0); 0 for any other op. Every stage (shape
/// rules, lowering, cost, references, emission) takes the list from here.
int elementwiseArity(const std::string& op);

/// Checks names and references: known ops, unique tensor names, every input defined before use,
/// every output produced, known dtypes. Reports every problem found.
Diagnostics verifyGraph(const Graph& graph);

}  // namespace stc
