// Symbolic integer expressions: a recursive-descent parser to reverse Polish, and a stack evaluator.
//   "ctx/16 + 1"  ->  [ctx, 16, /, 1, +]
#include "compiler/ir/expr.h"

#include <cctype>

#include "compiler/ir/diagnostics.h"

namespace stc {

class ExprParser {
 public:
  ExprParser(const std::string& text, Expr& out) : s_(text), out_(out) {}

  void run() {
    skip();
    if (pos_ == s_.size()) error("empty expression");
    sum();
    skip();
    if (pos_ != s_.size()) error(std::string("unexpected '") + s_[pos_] + "'");
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    throw UserError("column " + std::to_string(pos_ + 1) + " of expression '" + s_ + "': " + what);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void emit(Expr::Op::Kind kind) { out_.program_.push_back({kind, 0, {}}); }
  void sum() {
    product();
    for (skip(); pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-'); skip()) {
      char op = s_[pos_++];
      product();
      emit(op == '+' ? Expr::Op::kAdd : Expr::Op::kSub);
    }
  }
  void product() {
    unary();
    for (skip(); pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/' || s_[pos_] == '%'); skip()) {
      char op = s_[pos_++];
      unary();
      emit(op == '*' ? Expr::Op::kMul : op == '/' ? Expr::Op::kDiv : Expr::Op::kMod);
    }
  }
  void unary() {
    skip();
    if (++depth_ > kMaxDepth) error("nested too deeply (at most " + std::to_string(kMaxDepth) + " levels)");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (pos_ < s_.size() && s_[pos_] == '-') {
      ++pos_;
      unary();
      emit(Expr::Op::kNeg);
      return;
    }
    atom();
  }
  void atom() {
    skip();
    if (pos_ == s_.size()) error("expected a number, a symbol or '('");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      sum();
      skip();
      if (pos_ == s_.size() || s_[pos_] != ')') error("expected ')'");
      ++pos_;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v > kMaxNumber / 10) error("number too large (at most 2^40)");
        v = v * 10 + (s_[pos_++] - '0');
      }
      out_.program_.push_back({Expr::Op::kConst, v, {}});
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t begin = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      std::string name = s_.substr(begin, pos_ - begin);
      out_.program_.push_back({Expr::Op::kSymbol, 0, name});
      out_.symbols_.insert(name);
    } else {
      error(std::string("unexpected '") + c + "'");
    }
  }

  static constexpr int kMaxDepth = 200;
  const std::string& s_;
  Expr& out_;
  size_t pos_ = 0;
  int depth_ = 0;
};

int64_t checkedMul(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw UserError(what + " is too large");
  return r;
}

int64_t checkedAdd(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw UserError(what + " is too large");
  return r;
}

Expr::Expr(int64_t value) : text_(std::to_string(value)), program_{{Op::kConst, value, {}}} {}

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.program_.clear();
  ExprParser(text, e).run();
  if (e.symbols_.empty()) return Expr(e.eval());  // canonical text for constants
  return e;
}

int64_t Expr::eval(const Bindings& bindings) const {
  if (program_.empty()) return 0;
  std::vector<int64_t> stack;
  stack.reserve(program_.size());
  for (const Op& op : program_) {
    if (op.kind == Op::kConst) {
      stack.push_back(op.value);
      continue;
    }
    if (op.kind == Op::kSymbol) {
      auto it = bindings.find(op.symbol);
      if (it == bindings.end())
        throw UserError("symbol '" + op.symbol + "' in '" + text_ + "' is not bound (use --ctx N or --bind " +
                        op.symbol + "=N)");
      stack.push_back(it->second);
      continue;
    }
    if (op.kind == Op::kNeg) {
      if (stack.back() == INT64_MIN) throw UserError("a value of '" + text_ + "' is too large");
      stack.back() = -stack.back();
      continue;
    }
    int64_t b = stack.back();
    stack.pop_back();
    int64_t& a = stack.back();
    const std::string what = "a value of '" + text_ + "'";
    switch (op.kind) {
      case Op::kAdd: a = checkedAdd(a, b, what); break;
      case Op::kSub: a = checkedAdd(a, -b, what); break;
      case Op::kMul: a = checkedMul(a, b, what); break;
      case Op::kDiv:
      case Op::kMod: {
        if (b == 0) throw UserError("division by zero in '" + text_ + "'");
        int64_t q = a / b, r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) {  // round toward negative infinity
          q -= 1;
          r += b;
        }
        a = op.kind == Op::kDiv ? q : r;
        break;
      }
      default: break;
    }
  }
  return stack.back();
}

}  // namespace stc
