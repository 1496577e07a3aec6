#pragma once
// Integer expressions over symbols, for tripcounts such as `ctx` or `ctx/16 + 1` that are bound when a
// simulation starts.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace stc {

/// The largest number a file or flag may give (2^40): sizes, counts and products stay far from overflow.
constexpr int64_t kMaxNumber = int64_t{1} << 40;

/// a * b and a + b, or a UserError saying `what` is too large when the result leaves int64.
int64_t checkedMul(int64_t a, int64_t b, const std::string& what);
int64_t checkedAdd(int64_t a, int64_t b, const std::string& what);

/// Values of the symbols of a network or graph (`ctx`, `seq`, ...).
using Bindings = std::map<std::string, int64_t>;

/// An integer expression: literals, symbols, + - * / % and parentheses; `/` divides rounding down.
class Expr {
 public:
  Expr() = default;
  /// A constant expression.
  explicit Expr(int64_t value);
  /// Parses text; throws UserError whose message gives the 1-based column of the fault.
  static Expr parse(const std::string& text);

  /// The source text, canonical for constants.
  const std::string& str() const { return text_; }
  bool isConstant() const { return symbols_.empty(); }
  /// The symbols the expression mentions.
  const std::set<std::string>& symbols() const { return symbols_; }
  /// Evaluates under bindings; throws UserError naming an unbound symbol or a division by zero.
  int64_t eval(const Bindings& bindings = {}) const;

  bool operator==(const Expr& other) const { return text_ == other.text_; }
  bool operator!=(const Expr& other) const { return !(*this == other); }

 private:
  struct Op {
    enum Kind { kConst, kSymbol, kAdd, kSub, kMul, kDiv, kMod, kNeg } kind;
    int64_t value = 0;
    std::string symbol;
  };
  std::string text_ = "0";
  std::vector<Op> program_;  // reverse Polish
  std::set<std::string> symbols_;
  friend class ExprParser;
};

}  // namespace stc
