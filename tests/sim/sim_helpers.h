#pragma once
// Helpers for simulator tests: run a network text with either scheduler.

#include <string>

#include "compiler/ir/yaml_io.h"
#include "sim/engine.h"
#include "sim/systemc_model.h"

namespace stc::testing {

/// A deadlock with a stage group of two accesses that cannot go: C reads u and v in one stage; A and B
/// each wait for a token that C writes after that stage.
inline const char* const kStarDeadlock =
    "network: star\nfifos: [{name: u, width: 8}, {name: v, width: 8}, {name: c1, width: 8}, {name: c2, width: 8}]\n"
    "tasks:\n"
    "  - {name: A, phases: [{trip: [4], ports: [{fifo: c1, dir: in}, {fifo: u, dir: out}]}]}\n"
    "  - {name: B, phases: [{trip: [4], ports: [{fifo: c2, dir: in}, {fifo: v, dir: out}]}]}\n"
    "  - {name: C, phases: [{trip: [4], ports: [{fifo: u, dir: in}, {fifo: v, dir: in}, {fifo: c1, dir: out},\n"
    "                                          {fifo: c2, dir: out}]}]}\n";

inline sim::SimResult simulateText(const std::string& text, bool systemc = false, const Bindings& b = {},
                                   sim::RunConfig config = {}) {
  Network net = parseNetwork(text, "test.yaml");
  sim::Program prog = sim::compileProgram(net, b);
  return systemc ? sim::runSystemC(prog, config) : sim::runDirect(prog, config);
}

inline const sim::TaskStats& task(const sim::SimResult& r, const std::string& name) {
  for (const auto& t : r.tasks)
    if (t.name == name) return t;
  throw std::runtime_error("no task " + name);
}

inline const sim::FifoStats& fifo(const sim::SimResult& r, const std::string& name) {
  for (const auto& f : r.fifos)
    if (f.name == name) return f;
  throw std::runtime_error("no fifo " + name);
}

}  // namespace stc::testing
