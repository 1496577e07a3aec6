#pragma once
// Difference-constraint linear programs, solved with GLPK (lp_solver.cpp is the only file that includes
// glpk.h):  minimise sum_k cost_k * (x_to(k) - x_from(k))  subject to  x_to(k) - x_from(k) >= bound_k,
// x >= 0.

#include <cstdint>
#include <string>
#include <vector>

namespace stc::sizing {

/// One edge of the problem: x[to] - x[from] >= bound, costing `cost` per unit of difference.
struct DifferenceEdge {
  int from = 0;
  int to = 0;
  double bound = 0;
  double cost = 0;
};

struct DifferenceProblem {
  int variables = 0;
  std::vector<DifferenceEdge> edges;

  /// Problems with the inputs (indices out of range, negative or non-finite costs); empty when valid.
  std::vector<std::string> check() const;
  /// Whether x satisfies every constraint (within tolerance).
  bool verify(const std::vector<double>& x, double tolerance = 1e-6) const;
};

struct DifferenceSolution {
  bool optimal = false;
  std::vector<double> x;
  double objective = 0;
  std::string status;  ///< GLPK's status when not optimal
};

/// Solves with GLPK's simplex method; the problem must pass check().
DifferenceSolution solveDifferenceProblem(const DifferenceProblem& problem);

}  // namespace stc::sizing
