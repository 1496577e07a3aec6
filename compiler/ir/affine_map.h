#pragma once
// Affine maps in MLIR syntax, `(d0, d1, d2) -> (d2, d0 * 2 + d1)`, restricted to the forms a stream
// order needs: each result is a sum of dims times constants plus a constant.

#include <cstdint>
#include <string>
#include <vector>

namespace stc {

/// One result of an affine map: sum_k coeffs[k] * d_k + constant.
struct AffineExpr {
  std::vector<int64_t> coeffs;  ///< one coefficient per map dimension
  int64_t constant = 0;

  bool operator==(const AffineExpr& o) const { return coeffs == o.coeffs && constant == o.constant; }
  /// The only dim with a nonzero coefficient, or -1 when there are none or several.
  int singleDim() const;
};

/// A map from an iteration vector to data-space offsets.
class AffineMap {
 public:
  AffineMap() = default;
  AffineMap(int numDims, std::vector<AffineExpr> results) : numDims_(numDims), results_(std::move(results)) {}
  /// The map (d0..dn-1) -> (d_perm[0], ...).
  static AffineMap permutation(int numDims, const std::vector<int>& dims);
  /// Parses MLIR syntax; throws UserError("column N: ...") relative to text.
  static AffineMap parse(const std::string& text);

  int numDims() const { return numDims_; }
  int numResults() const { return static_cast<int>(results_.size()); }
  const std::vector<AffineExpr>& results() const { return results_; }
  /// Applies the map to an iteration vector.
  std::vector<int64_t> apply(const std::vector<int64_t>& dims) const;

  /// MLIR text; compact drops the spaces after commas and around the arrow.
  std::string str(bool compact = false) const;
  bool operator==(const AffineMap& o) const { return numDims_ == o.numDims_ && results_ == o.results_; }
  bool operator!=(const AffineMap& o) const { return !(*this == o); }

 private:
  int numDims_ = 0;
  std::vector<AffineExpr> results_;
};

}  // namespace stc
