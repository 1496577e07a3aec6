// itensor types: parse, print, verify, and converter inference.
//
// Converter inference (DESIGN.md): walk the two loop nests from the outermost loop while both loops have
// the same tripcount and step, and map to the same data dimension (or to none) in both maps with the same
// element size along it. Those shared loops fix one region at a time; inside a region each data
// dimension bound by a shared loop spans one element, every other dimension its full size.
// Row blocks extend this: a loop walking rows [M]*[1] against a block loop [M/B]*[B] of the other side is
// split into [M/B, B]*[B, 1] (the same tokens), the block loop is shared, and the rows dimension, bound by
// it but moved again by the B loop inside, spans B rows instead of one.
//   (b) [4,2]*[2,4] (d0,d1)->(d1,d0)  to  (c) [4,2,2]*[2,1,4] (d0,d1,d2)->(d2,d0), tiles 4x2 on 8x8:
//   loop 0 shared (trip 4, step 2, data dim 1, element 2); loop 1 not (data dim 0 versus repeat)
//   -> region 8 x 2, buffer 2 * 8 * 2 * 4 B = 128 B.
#include "compiler/ir/itensor.h"

#include <algorithm>
#include <cctype>

#include "compiler/ir/diagnostics.h"
#include "compiler/ir/expr.h"

namespace stc {

int dtypeBits(const std::string& dtype) {
  if (dtype == "f64" || dtype == "i64") return 64;
  if (dtype == "f32" || dtype == "i32") return 32;
  if (dtype == "f16" || dtype == "bf16" || dtype == "i16") return 16;
  if (dtype == "i8" || dtype == "u8") return 8;
  if (dtype == "i4" || dtype == "u4") return 4;
  if (dtype == "i1") return 1;
  return 0;
}

namespace {

class TypeParser {
 public:
  explicit TypeParser(const std::string& s) : s_(s) {}

  ITensorType run() {
    ITensorType t;
    keyword("itensor");
    expect('<');
    // element: 4x2xf32 (dims, then the dtype)
    for (;;) {
      skip();
      if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        t.elementShape.push_back(number());
        if (s_.compare(pos_, 1, "x") != 0) error("expected 'x' after an element dimension");
        ++pos_;
      } else {
        size_t at = pos_;
        t.dtype = word();
        if (dtypeBits(t.dtype) == 0) {
          pos_ = at;
          error("unknown element type '" + t.dtype + "'");
        }
        break;
      }
    }
    expect(',');
    keyword("iter_space");
    expect(':');
    t.tripcounts = list();
    expect('*');
    t.steps = list();
    expect(',');
    keyword("iter_map");
    expect(':');
    skip();
    size_t mapBegin = pos_;
    // The map runs to the last '>' of the text.
    size_t close = s_.rfind('>');
    if (close == std::string::npos || close < mapBegin) error("expected '>' closing the type");
    try {
      t.iterMap = AffineMap::parse(s_.substr(mapBegin, close - mapBegin));
    } catch (const UserError& e) {
      // Re-base "column N" onto the whole text.
      std::string msg = e.what();
      size_t col = 0, colon = msg.find(':');
      if (msg.rfind("column ", 0) == 0 && colon != std::string::npos) col = std::stoul(msg.substr(7, colon - 7));
      pos_ = mapBegin + (col ? col - 1 : 0);
      error(colon != std::string::npos ? msg.substr(colon + 2) : msg);
    }
    pos_ = close + 1;
    skip();
    if (pos_ != s_.size()) error("unexpected text after the type");
    return t;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    throw UserError("column " + std::to_string(pos_ + 1) + ": " + what);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip();
    if (pos_ >= s_.size() || s_[pos_] != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string word() {
    skip();
    size_t begin = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    return s_.substr(begin, pos_ - begin);
  }
  void keyword(const char* kw) {
    skip();
    size_t at = pos_;
    if (word() != kw) {
      pos_ = at;
      error(std::string("expected '") + kw + "'");
    }
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
  std::vector<int64_t> list() {
    expect('[');
    std::vector<int64_t> out;
    skip();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return out;
    }
    for (;;) {
      skip();
      bool negative = pos_ < s_.size() && s_[pos_] == '-';
      if (negative) ++pos_;
      int64_t v = number();
      out.push_back(negative ? -v : v);
      skip();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return out;
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

std::string joinDims(const std::vector<int64_t>& v, const char* sep) {
  std::string out;
  for (size_t k = 0; k < v.size(); ++k) out += (k ? sep : "") + std::to_string(v[k]);
  return out;
}

}  // namespace

ITensorType ITensorType::parse(const std::string& text) {
  ITensorType t = TypeParser(text).run();
  auto problems = t.verify();
  if (!problems.empty()) throw UserError("invalid itensor type: " + problems.front());
  return t;
}

std::string ITensorType::str() const {
  std::string out = "itensor<";
  for (int64_t d : elementShape) out += std::to_string(d) + "x";
  out += dtype + ", iter_space: [" + joinDims(tripcounts, ",") + "]*[" + joinDims(steps, ",") +
         "], iter_map: " + iterMap.str(true) + ">";
  return out;
}

std::vector<std::string> ITensorType::verify() const {
  std::vector<std::string> problems;
  if (dtypeBits(dtype) == 0) problems.push_back("unknown element type '" + dtype + "'");
  for (int64_t d : elementShape)
    if (d <= 0) problems.push_back("element dimensions must be positive, got " + std::to_string(d));
  if (tripcounts.size() != steps.size())
    problems.push_back("iter_space has " + std::to_string(tripcounts.size()) + " tripcounts but " +
                       std::to_string(steps.size()) + " steps");
  for (int64_t v : tripcounts)
    if (v <= 0) problems.push_back("tripcounts must be positive, got " + std::to_string(v));
  for (int64_t v : steps)
    if (v <= 0) problems.push_back("steps must be positive, got " + std::to_string(v));
  if (static_cast<size_t>(iterMap.numDims()) != tripcounts.size())
    problems.push_back("iter_map has " + std::to_string(iterMap.numDims()) + " dims but iter_space has " +
                       std::to_string(tripcounts.size()) + " loops");
  if (static_cast<size_t>(iterMap.numResults()) != elementShape.size())
    problems.push_back("iter_map has " + std::to_string(iterMap.numResults()) + " results but the element has rank " +
                       std::to_string(elementShape.size()));
  for (const auto& r : iterMap.results())
    for (int64_t c : r.coeffs)
      if (c < 0) problems.push_back("iter_map coefficients must not be negative");
  if (problems.empty()) {
    try {  // every size derived from the type stays within bounds
      int64_t elements = 1;
      for (int64_t d : elementShape) elements = checkedMul(elements, d, "the element");
      for (int64_t d : dataShape()) elements = checkedMul(elements, d, "the data shape");
      checkedMul(tokenCount(), std::max<int64_t>(1, tokenBits()), "the stream");
    } catch (const UserError& e) {
      problems.push_back(std::string(e.what()) + " (sizes too large)");
    }
  }
  return problems;
}

int64_t ITensorType::tokenCount() const {
  int64_t n = 1;
  for (int64_t t : tripcounts) n = checkedMul(n, t, "the token count");
  return n;
}

int64_t ITensorType::tokenBits() const {
  int64_t n = dtypeBits(dtype);
  for (int64_t d : elementShape) n *= d;
  return n;
}

std::vector<int64_t> ITensorType::dataShape() const {
  std::vector<int64_t> shape;
  for (size_t r = 0; r < elementShape.size(); ++r) {
    const AffineExpr& e = iterMap.results()[r];
    int64_t last = e.constant;
    for (size_t k = 0; k < e.coeffs.size(); ++k)
      last = checkedAdd(last, checkedMul(checkedMul(e.coeffs[k], tripcounts[k] - 1, "the data shape"), steps[k], "the data shape"),
                        "the data shape");
    shape.push_back(checkedAdd(last, elementShape[r], "the data shape"));
  }
  return shape;
}

void splitLoopIndexing(std::vector<int64_t>& steps, AffineMap& map, const LoopSplit& s, int64_t inner) {
  auto k = static_cast<size_t>(s.loop);
  auto at = static_cast<std::ptrdiff_t>(k + 1);
  steps.insert(steps.begin() + at, steps[k]);
  steps[k] *= inner;
  std::vector<AffineExpr> results = map.results();
  for (auto& r : results) r.coeffs.insert(r.coeffs.begin() + at, r.coeffs[k]);
  map = AffineMap(map.numDims() + 1, results);
}

ITensorType splitLoops(ITensorType t, const std::vector<LoopSplit>& splits) {
  for (const LoopSplit& s : splits) {
    auto k = static_cast<size_t>(s.loop);
    int64_t inner = t.tripcounts[k] / s.outer;
    t.tripcounts[k] = s.outer;
    t.tripcounts.insert(t.tripcounts.begin() + static_cast<std::ptrdiff_t>(k + 1), inner);
    splitLoopIndexing(t.steps, t.iterMap, s, inner);
  }
  return t;
}

ConverterPlan inferConverter(const ITensorType& producer, const ITensorType& consumer, bool consumerReadsPart) {
  ConverterPlan plan;
  if (producer == consumer) {
    plan.compatible = true;
    return plan;
  }
  std::vector<int64_t> shape = producer.dataShape();
  if (producer.dtype != consumer.dtype)
    throw UserError("the streams carry different element types (" + producer.dtype + " and " + consumer.dtype + ")");
  std::vector<int64_t> consumerShape = consumer.dataShape();
  bool inside = consumerShape.size() == shape.size();
  for (size_t r = 0; inside && r < shape.size(); ++r) inside = consumerShape[r] <= shape[r];
  if (shape != consumerShape && !(consumerReadsPart && inside))
    throw UserError("the streams cover different data shapes ([" + joinDims(shape, ", ") + "] and [" +
                    joinDims(consumer.dataShape(), ", ") + "])");

  std::vector<bool> bound(shape.size(), false);
  ITensorType p = producer, c = consumer;  // split as the walk goes
  // The data dimension loop k of t moves: the one result it appears in, with its coefficient (-1: none,
  // -2: several, not shareable).
  auto dimOf = [](const ITensorType& t, size_t k, int64_t& coeff) -> int {
    int found = -1;
    for (int r = 0; r < t.iterMap.numResults(); ++r) {
      int64_t cf = t.iterMap.results()[r].coeffs[k];
      if (cf == 0) continue;
      if (found >= 0) return -2;
      found = r;
      coeff = cf;
    }
    return found;
  };
  // Splits loop k of t (side's splits record it) when `other` is the outer part of it.
  auto splitToMatch = [](ITensorType& t, std::vector<LoopSplit>& splits, size_t k, const ITensorType& other) {
    int64_t trip = t.tripcounts[k], outer = other.tripcounts[k];
    if (outer >= trip || trip % outer != 0 || other.steps[k] != t.steps[k] * (trip / outer)) return false;
    splits.push_back({static_cast<int>(k), outer});
    t = splitLoops(t, {splits.back()});
    return true;
  };
  for (size_t k = 0; k < std::min(p.tripcounts.size(), c.tripcounts.size()); ++k) {
    int64_t pc = 0, cc = 0;
    int pd = dimOf(p, k, pc), cd = dimOf(c, k, cc);
    if (pd == -2 || cd == -2 || pd != cd || pc != cc) break;
    if (pd >= 0 && p.elementShape[pd] != c.elementShape[pd]) break;
    if (p.tripcounts[k] != c.tripcounts[k] || p.steps[k] != c.steps[k]) {
      if (pd < 0 ||
          !(splitToMatch(p, plan.producerSplits, k, c) || splitToMatch(c, plan.consumerSplits, k, p)))
        break;
    }
    if (pd >= 0) bound[pd] = true;
    plan.sharedLoops = static_cast<int>(k + 1);
  }
  for (int k = 0; k < plan.sharedLoops; ++k)
    plan.regions = checkedMul(plan.regions, p.tripcounts[static_cast<size_t>(k)], "the converter's regions");
  // A bound dimension spans its element plus what the unshared loops inside move it by, on either side.
  auto innerExtent = [&](const ITensorType& t, size_t r) {
    int64_t extent = 0;
    const AffineExpr& e = t.iterMap.results()[r];
    for (size_t k = static_cast<size_t>(plan.sharedLoops); k < e.coeffs.size(); ++k)
      extent = checkedAdd(extent,
                          checkedMul(checkedMul(e.coeffs[k], t.tripcounts[k] - 1, "the converter buffer"),
                                     t.steps[k], "the converter buffer"),
                          "the converter buffer");
    return extent;
  };
  int64_t elements = 1;
  for (size_t r = 0; r < shape.size(); ++r) {
    plan.bufferShape.push_back(
        bound[r]
            ? std::min(shape[r], producer.elementShape[r] + std::max(innerExtent(p, r), innerExtent(c, r)))
            : shape[r]);
    elements = checkedMul(elements, plan.bufferShape.back(), "the converter buffer");
  }
  plan.bufferBytes = checkedMul(2, (checkedMul(elements, dtypeBits(producer.dtype), "the converter buffer") + 7) / 8,
                                "the converter buffer");
  return plan;
}

}  // namespace stc
