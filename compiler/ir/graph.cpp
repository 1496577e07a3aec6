// Graph verification: every tensor is defined once, before use, by an input, a weight or an op.
#include "compiler/ir/graph.h"

#include <algorithm>
#include <set>

#include "compiler/ir/itensor.h"

namespace stc {

namespace {

const std::vector<std::pair<std::string, int>>& elementwiseOps() {
  static const std::vector<std::pair<std::string, int>> ops = {
      {"add", 2},     {"sub", 2},        {"mul", 2},   {"div", 2},           {"max", 2},
      {"min", 2},     {"select", 2},     {"pow", 2},   {"gelu", 1},          {"silu", 1},
      {"relu", 1},    {"sigmoid", 1},    {"exp", 1},   {"tanh", 1},          {"erf", 1},
      {"sqrt", 1},    {"reciprocal", 1}, {"abs", 1},   {"log", 1},           {"softplus", 1},
      {"greater", 2}, {"less", 2},       {"equal", 2}, {"greater_equal", 2}, {"less_equal", 2},
      {"floor", 1},   {"ceil", 1},       {"round", 1}, {"sign", 1},          {"fmod", 2},
      {"sin", 1},     {"cos", 1}};
  return ops;
}

}  // namespace

int elementwiseArity(const std::string& op) {
  for (const auto& [name, arity] : elementwiseOps())
    if (name == op) return arity;
  return 0;
}

const std::vector<std::string>& knownOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v = {"matmul", "linear", "softmax", "layernorm", "rmsnorm", "rope", "transpose", "reshape",
                                  "slice", "concat", "reduce_sum", "reduce_max", "reduce_mean", "embedding", "kv_append"};
    for (const auto& op : elementwiseOps()) v.push_back(op.first);
    return v;
  }();
  return ops;
}

Diagnostics verifyGraph(const Graph& graph) {
  Diagnostics diag;
  std::set<std::string> defined;
  auto declare = [&](const std::string& name, const SourceLoc& loc, const char* field) {
    if (name.empty()) diag.error(loc, std::string("field '") + field + "': a tensor needs a name");
    else if (!defined.insert(name).second)
      diag.error(loc, std::string("field '") + field + "': tensor '" + name + "' is defined twice");
  };
  for (const auto* list : {&graph.inputs, &graph.weights}) {
    for (const auto& t : *list) {
      declare(t.name, t.loc, "name");
      if (dtypeBits(t.dtype) == 0) diag.error(t.loc, "field 'dtype': unknown dtype '" + t.dtype + "'");
      for (const auto& d : t.shape)
        if (d.isConstant() && d.eval() < 1)
          diag.error(t.loc, "field 'shape': dimension " + d.str() + " of '" + t.name + "' must be positive");
    }
  }
  const auto& ops = knownOps();
  std::set<std::string> opNames;
  for (const auto& op : graph.ops) {
    if (!opNames.insert(op.name).second) diag.error(op.loc, "field 'name': op '" + op.name + "' is defined twice");
    if (std::find(ops.begin(), ops.end(), op.op) == ops.end())
      diag.error(op.loc, "field 'op': unsupported op '" + op.op + "' in '" + op.name + "'");
    for (const auto& in : op.inputs)
      if (!defined.count(in))
        diag.error(op.loc, "field 'inputs': op '" + op.name + "' uses '" + in + "', which is not defined before it");
    declare(op.output, op.loc, "output");
  }
  std::set<std::string> computed;
  for (const auto& op : graph.ops) computed.insert(op.output);
  for (const auto& out : graph.outputs)
    if (!defined.count(out))
      diag.error(graph.loc, "field 'outputs': '" + out + "' is not produced by the graph");
    else if (!computed.count(out))  // no kernel makes it, so no DMA would write it back
      diag.error(graph.loc, "field 'outputs': '" + out +
                                "' is an input or weight of the graph, not computed by an "
                                "op: the host has it already");
  return diag;
}

AttrValue sizesAttr(const std::vector<Expr>& sizes) {
  std::vector<int64_t> constant;
  std::string text;
  for (const Expr& e : sizes) {
    if (e.isConstant()) constant.push_back(e.eval());
    text += (text.empty() ? "[" : ", ") + e.str();
  }
  if (constant.size() == sizes.size()) return constant;
  return text + "]";
}

std::vector<Expr> sizesOf(const Op& op, const std::string& key) {
  auto it = op.attrs.find(key);
  auto bad = [&](const std::string& what) {
    return UserError(
        formatError(op.loc, "field '" + key + "': op '" + op.name + "' (" + op.op + ") " + what));
  };
  if (it == op.attrs.end()) throw bad("needs it");
  std::vector<Expr> sizes;
  if (const auto* list = std::get_if<std::vector<int64_t>>(&it->second)) {
    for (int64_t v : *list) sizes.push_back(Expr(v));
    return sizes;
  }
  const auto* text = std::get_if<std::string>(&it->second);
  if (!text || text->size() < 2 || text->front() != '[' || text->back() != ']')
    throw bad("expects a list of sizes (integers, or expressions over symbols such as seq)");
  std::string items = text->substr(1, text->size() - 2);
  for (size_t at = 0; at <= items.size();) {
    size_t comma = items.find(',', at);
    if (comma == std::string::npos) comma = items.size();
    try {
      std::string item = items.substr(at, comma - at);
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      sizes.push_back(Expr::parse(item));
    } catch (const UserError& e) {
      throw bad("has a size that does not parse: " + std::string(e.what()));
    }
    at = comma + 1;
  }
  return sizes;
}

double numberAttr(const Op& op, const std::string& key, double fallback) {
  auto it = op.attrs.find(key);
  if (it == op.attrs.end()) return fallback;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  return fallback;
}

int64_t kvAppendAxis(const Op& op) {
  int64_t axis = static_cast<int64_t>(numberAttr(op, "axis", -1));
  return axis < 0 ? axis + 3 : axis;
}

bool isCausal(const Op& op) {
  if (op.op != "softmax") return false;
  auto it = op.attrs.find("causal");
  if (it != op.attrs.end())
    if (auto* text = std::get_if<std::string>(&it->second)) return *text == "true";
  return numberAttr(op, "causal", 0) != 0;
}

int64_t keptKeys(const Op& op, int64_t r, int64_t R, int64_t K) {
  return isCausal(op) ? std::max<int64_t>(0, std::min(K, r + K - R + 1)) : K;
}

bool keepsRows(const std::vector<Expr>& from, const std::vector<Expr>& to) {
  return from.size() >= 2 && to.size() >= 2 && from.back() == to.back() &&
         from[from.size() - 2] == to[to.size() - 2];
}

bool knownZeros(const Graph& g, const std::string& weight) {
  auto it = g.values.find(weight);
  return it != g.values.end() &&
         std::all_of(it->second.begin(), it->second.end(), [](float v) { return v == 0.0f; });
}

int64_t embeddingRow(float id, int64_t V) {
  float wrapped = id < 0 ? id + static_cast<float>(V) : id;
  return wrapped < 0 ? 0 : wrapped > static_cast<float>(V - 1) ? V - 1 : static_cast<int64_t>(wrapped);
}

int64_t ropeHeadDim(const Op& op, int64_t rowLength) {
  return static_cast<int64_t>(numberAttr(op, "head_dim", static_cast<double>(rowLength)));
}

double ropeTheta(const Op& op) {
  return numberAttr(op, "theta", 10000.0);
}

std::string ropeOffset(const Op& op) {
  auto it = op.attrs.find("offset");
  if (it == op.attrs.end()) return "0";
  if (auto* text = std::get_if<std::string>(&it->second)) return *text;
  return std::to_string(static_cast<int64_t>(numberAttr(op, "offset", 0)));
}

}  // namespace stc
