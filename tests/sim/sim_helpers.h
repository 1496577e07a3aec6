#pragma once
// Helpers for simulator tests: run a network text with either scheduler.

#include <string>

#include "compiler/ir/yaml_io.h"
#include "sim/engine.h"
#include "sim/systemc_model.h"

namespace stc::testing {

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
