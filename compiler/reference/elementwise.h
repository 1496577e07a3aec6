#pragma once
// Elementwise ops (ir/graph.h: elementwiseArity) as the emitted kernels compute them, in f32: the value,
// for the references, and the C++ expression, for emission, written side by side so that they cannot
// drift apart (the W4A8 reference must match the C simulation bit for bit).

#include <string>

#include "compiler/ir/graph.h"

namespace stc {

/// op applied to a (and b, for binary ops), as the emitted kernel computes it.
float elementwiseValue(const Op& op, float a, float b);

/// The C++ expression the emitted kernel computes op with, over the expressions a (and b).
std::string elementwiseCode(const Op& op, const std::string& a, const std::string& b);

}  // namespace stc
