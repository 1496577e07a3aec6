// The GLPK adapter. Builds one row per edge (x_to - x_from >= bound), one column per variable (x >= 0),
// objective coefficients summed from the edges' costs, and runs the primal simplex with presolve. The
// glp_prob lives in a unique_ptr with glp_delete_prob as its deleter.
#include "compiler/sizing/lp_solver.h"

#include <glpk.h>

#include <cmath>
#include <memory>
#include <mutex>

namespace stc::sizing {

std::vector<std::string> DifferenceProblem::check() const {
  std::vector<std::string> problems;
  for (size_t k = 0; k < edges.size(); ++k) {
    const DifferenceEdge& e = edges[k];
    if (e.from < 0 || e.from >= variables || e.to < 0 || e.to >= variables)
      problems.push_back("edge " + std::to_string(k) + " names a variable out of range");
    if (!std::isfinite(e.bound)) problems.push_back("edge " + std::to_string(k) + " has a non-finite bound");
    if (!std::isfinite(e.cost) || e.cost < 0)
      problems.push_back("edge " + std::to_string(k) + " has a negative or non-finite cost");
  }
  return problems;
}

bool DifferenceProblem::verify(const std::vector<double>& x, double tolerance) const {
  if (static_cast<int>(x.size()) != variables) return false;
  for (double v : x)
    if (v < -tolerance) return false;
  for (const DifferenceEdge& e : edges)
    if (x[static_cast<size_t>(e.to)] - x[static_cast<size_t>(e.from)] < e.bound - tolerance) return false;
  return true;
}

DifferenceSolution solveDifferenceProblem(const DifferenceProblem& problem) {
  DifferenceSolution out;
  out.x.assign(static_cast<size_t>(problem.variables), 0.0);
  if (problem.variables == 0) {
    out.optimal = true;
    return out;
  }
  // GLPK keeps its environment in a global unless built thread-local; designs are sized in parallel
  // (llm/decode.cpp), so one LP at a time (each takes milliseconds).
  static std::mutex glpk;
  std::lock_guard<std::mutex> lock(glpk);
  std::unique_ptr<glp_prob, decltype(&glp_delete_prob)> lp(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MIN);
  glp_add_cols(lp.get(), problem.variables);
  std::vector<double> objective(static_cast<size_t>(problem.variables), 0.0);
  for (const DifferenceEdge& e : problem.edges) {
    objective[static_cast<size_t>(e.to)] += e.cost;
    objective[static_cast<size_t>(e.from)] -= e.cost;
  }
  for (int v = 0; v < problem.variables; ++v) {
    glp_set_col_bnds(lp.get(), v + 1, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp.get(), v + 1, objective[static_cast<size_t>(v)]);
  }
  if (!problem.edges.empty()) glp_add_rows(lp.get(), static_cast<int>(problem.edges.size()));
  std::vector<int> ia(1), ja(1);
  std::vector<double> ar(1);
  for (size_t k = 0; k < problem.edges.size(); ++k) {
    const DifferenceEdge& e = problem.edges[k];
    int row = static_cast<int>(k) + 1;
    glp_set_row_bnds(lp.get(), row, GLP_LO, e.bound, 0.0);
    if (e.from == e.to) continue;  // 0 >= bound: GLPK reports it infeasible when bound > 0
    ia.push_back(row), ja.push_back(e.to + 1), ar.push_back(1.0);
    ia.push_back(row), ja.push_back(e.from + 1), ar.push_back(-1.0);
  }
  glp_load_matrix(lp.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_smcp params;
  glp_init_smcp(&params);
  params.msg_lev = GLP_MSG_OFF;
  params.presolve = GLP_ON;
  int rc = glp_simplex(lp.get(), &params);
  int status = glp_get_status(lp.get());
  if (rc != 0 || status != GLP_OPT) {
    out.status = status == GLP_NOFEAS ? "infeasible" : status == GLP_UNBND ? "unbounded" : "no optimum found";
    return out;
  }
  out.optimal = true;
  out.objective = glp_get_obj_val(lp.get());
  for (int v = 0; v < problem.variables; ++v) out.x[static_cast<size_t>(v)] = glp_get_col_prim(lp.get(), v + 1);
  return out;
}

}  // namespace stc::sizing
