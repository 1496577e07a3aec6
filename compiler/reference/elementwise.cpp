#include "compiler/reference/elementwise.h"

#include <cmath>
#include <map>

#include "compiler/emit/runtime/st_numeric.h"
#include "compiler/ir/diagnostics.h"

namespace stc {

namespace {

bool tanhGelu(const Op& op) {
  auto it = op.attrs.find("approximate");
  return it != op.attrs.end() && std::holds_alternative<std::string>(it->second) &&
         std::get<std::string>(it->second) == "tanh";
}

}  // namespace

float elementwiseValue(const Op& op, float a, float b) {
  const std::string& k = op.op;
  if (k == "add") return a + b;
  if (k == "sub") return a - b;
  if (k == "mul") return a * b;
  if (k == "div") return a / b;
  if (k == "max") return st_max(a, b);
  if (k == "min") return st_min(a, b);
  if (k == "select") return b != 0.0f ? a : 0.0f;  // a where b holds, else 0 (not a * b: inf * 0 is NaN)
  if (k == "pow") return std::pow(a, b);
  if (k == "fmod") return std::fmod(a, b);
  if (k == "greater") return a > b ? 1.0f : 0.0f;  // a comparison: 1 where it holds (never for NaN), else 0
  if (k == "less") return a < b ? 1.0f : 0.0f;
  if (k == "equal") return a == b ? 1.0f : 0.0f;
  if (k == "greater_equal") return a >= b ? 1.0f : 0.0f;
  if (k == "less_equal") return a <= b ? 1.0f : 0.0f;
  if (k == "exp") return std::exp(a);
  if (k == "tanh") return std::tanh(a);
  if (k == "erf") return std::erf(a);
  if (k == "sqrt") return std::sqrt(a);
  if (k == "log") return std::log(a);
  if (k == "sin") return std::sin(a);
  if (k == "cos") return std::cos(a);
  if (k == "softplus") return st_softplus(a);
  if (k == "reciprocal") return 1.0f / a;
  if (k == "abs") return std::fabs(a);
  if (k == "floor") return std::floor(a);
  if (k == "ceil") return std::ceil(a);
  if (k == "round") return std::nearbyint(a);  // half to even (the default rounding mode), as torch.round
  if (k == "sign") return a > 0.0f ? 1.0f : a < 0.0f ? -1.0f : a;  // 0 and NaN stay themselves
  if (k == "silu") return st_silu(a);
  if (k == "relu") return a < 0.0f ? 0.0f : a;  // NaN stays NaN, as in torch
  if (k == "sigmoid") return st_sigmoid(a);
  if (k == "gelu") return tanhGelu(op) ? st_gelu_tanh(a) : st_gelu(a);
  throw UserError(formatError(op.loc, "internal: '" + op.name + "' (" + k + ") is not elementwise"));
}

std::string elementwiseCode(const Op& op, const std::string& a, const std::string& b) {
  const std::string& k = op.op;
  if (k == "add") return a + " + " + b;
  if (k == "sub") return a + " - " + b;
  if (k == "mul") return a + " * " + b;
  if (k == "div") return a + " / " + b;
  if (k == "max") return "st_max(" + a + ", " + b + ")";
  if (k == "min") return "st_min(" + a + ", " + b + ")";
  if (k == "select") return "(" + b + " != 0.0f ? " + a + " : 0.0f)";
  if (k == "pow") return "std::pow(" + a + ", " + b + ")";
  if (k == "fmod") return "std::fmod(" + a + ", " + b + ")";
  static const std::map<std::string, std::string> compare = {
      {"greater", " > "}, {"less", " < "}, {"equal", " == "}, {"greater_equal", " >= "}, {"less_equal", " <= "}};
  if (auto c = compare.find(k); c != compare.end()) return "(" + a + c->second + b + " ? 1.0f : 0.0f)";
  if (k == "exp" || k == "tanh" || k == "erf" || k == "sqrt" || k == "log" || k == "sin" || k == "cos")
    return "std::" + k + "(" + a + ")";
  if (k == "softplus") return "st_softplus(" + a + ")";
  if (k == "reciprocal") return "1.0f / " + a;
  if (k == "abs") return "std::fabs(" + a + ")";
  if (k == "floor" || k == "ceil") return "std::" + k + "(" + a + ")";
  if (k == "round") return "std::nearbyint(" + a + ")";
  if (k == "sign") return "(" + a + " > 0.0f ? 1.0f : " + a + " < 0.0f ? -1.0f : " + a + ")";
  if (k == "silu") return "st_silu(" + a + ")";
  if (k == "relu") return a + " < 0.0f ? 0.0f : " + a;
  if (k == "sigmoid") return "st_sigmoid(" + a + ")";
  if (k == "gelu") return (tanhGelu(op) ? "st_gelu_tanh(" : "st_gelu(") + a + ")";
  throw UserError(formatError(op.loc, "internal: '" + op.name + "' (" + k + ") is not elementwise"));
}

}  // namespace stc
