// Parser and printer of affine maps in MLIR syntax. Results are kept as linear forms (one coefficient
// per dim plus a constant), so `d1 + d0 * 2` and `d0 * 2 + d1` are the same result and print the same.
#include "compiler/ir/affine_map.h"

#include <cctype>

#include "compiler/ir/diagnostics.h"

namespace stc {

int AffineExpr::singleDim() const {
  int found = -1;
  for (size_t k = 0; k < coeffs.size(); ++k) {
    if (coeffs[k] == 0) continue;
    if (found >= 0) return -1;
    found = static_cast<int>(k);
  }
  return found;
}

AffineMap AffineMap::permutation(int numDims, const std::vector<int>& dims) {
  std::vector<AffineExpr> results;
  for (int d : dims) {
    AffineExpr e{std::vector<int64_t>(numDims, 0), 0};
    e.coeffs[d] = 1;
    results.push_back(e);
  }
  return AffineMap(numDims, results);
}

namespace {

class MapParser {
 public:
  explicit MapParser(const std::string& s) : s_(s) {}

  AffineMap run() {
    expect('(');
    std::vector<std::string> dims;
    skip();
    if (peek() != ')') {
      do {
        dims.push_back(identifier());
        for (size_t k = 0; k + 1 < dims.size(); ++k)
          if (dims[k] == dims.back()) error("dimension '" + dims.back() + "' declared twice");
      } while (accept(','));
    }
    expect(')');
    expect('-');
    if (s_.compare(pos_, 1, ">") != 0) error("expected '->'");
    ++pos_;
    expect('(');
    std::vector<AffineExpr> results;
    skip();
    if (peek() != ')') {
      do results.push_back(expr(dims));
      while (accept(','));
    }
    expect(')');
    skip();
    if (pos_ != s_.size()) error("unexpected text after the map");
    return AffineMap(static_cast<int>(dims.size()), results);
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    throw UserError("column " + std::to_string(pos_ + 1) + ": " + what);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() {
    skip();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) error(std::string("expected '") + c + "'");
  }
  std::string identifier() {
    skip();
    size_t begin = pos_;
    if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (begin == pos_) error("expected a dimension name");
    return s_.substr(begin, pos_ - begin);
  }
  int64_t number() {
    skip();
    size_t begin = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (v > 1'000'000'000'000LL) error("number too large");
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (begin == pos_) error("expected a number");
    return v;
  }
  // term := [num '*'] dim ['*' num] | num
  void term(const std::vector<std::string>& dims, int64_t sign, AffineExpr& e) {
    skip();
    int64_t coeff = sign;
    if (std::isdigit(static_cast<unsigned char>(peek()))) {
      int64_t n = number();
      if (!accept('*')) {
        e.constant += sign * n;
        return;
      }
      coeff *= n;
    }
    size_t at = pos_;
    std::string name = identifier();
    int dim = -1;
    for (size_t k = 0; k < dims.size(); ++k)
      if (dims[k] == name) dim = static_cast<int>(k);
    if (dim < 0) {
      pos_ = at;
      error("unknown dimension '" + name + "'");
    }
    if (accept('*')) coeff *= number();
    e.coeffs[dim] += coeff;
  }
  AffineExpr expr(const std::vector<std::string>& dims) {
    AffineExpr e{std::vector<int64_t>(dims.size(), 0), 0};
    int64_t sign = accept('-') ? -1 : 1;
    term(dims, sign, e);
    for (;;) {
      if (accept('+')) term(dims, 1, e);
      else if (peek() == '-' && s_.compare(pos_, 2, "->") != 0) {
        ++pos_;
        term(dims, -1, e);
      } else break;
    }
    return e;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

AffineMap AffineMap::parse(const std::string& text) { return MapParser(text).run(); }

std::vector<int64_t> AffineMap::apply(const std::vector<int64_t>& dims) const {
  std::vector<int64_t> out;
  out.reserve(results_.size());
  for (const auto& r : results_) {
    int64_t v = r.constant;
    for (size_t k = 0; k < r.coeffs.size() && k < dims.size(); ++k) v += r.coeffs[k] * dims[k];
    out.push_back(v);
  }
  return out;
}

std::string AffineMap::str(bool compact) const {
  const char* sep = compact ? "," : ", ";
  std::string out = "(";
  for (int k = 0; k < numDims_; ++k) out += (k ? sep : "") + std::string("d") + std::to_string(k);
  out += compact ? ")->(" : ") -> (";
  for (size_t r = 0; r < results_.size(); ++r) {
    if (r) out += sep;
    const AffineExpr& e = results_[r];
    std::string term;
    for (size_t k = 0; k < e.coeffs.size(); ++k) {
      int64_t c = e.coeffs[k];
      if (c == 0) continue;
      std::string dim = "d" + std::to_string(k);
      if (term.empty()) term = c < 0 ? "-" : "";
      else term += c < 0 ? " - " : " + ";
      term += dim;
      if (c != 1 && c != -1) term += " * " + std::to_string(c < 0 ? -c : c);
    }
    if (e.constant != 0 || term.empty()) {
      if (term.empty()) term = std::to_string(e.constant);
      else term += (e.constant < 0 ? " - " : " + ") + std::to_string(e.constant < 0 ? -e.constant : e.constant);
    }
    out += term;
  }
  return out + ")";
}

}  // namespace stc
