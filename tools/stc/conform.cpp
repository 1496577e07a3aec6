// stc conform NETWORK TRACE: checks a C simulation's stream trace (make trace in an emitted project) against
// the network the project was emitted from (its network.yaml): every task's accesses, iteration by
// iteration, phase by phase, and the token widths. Exit 0 with a one-line summary, or 1 with the first
// mismatch: task, phase, iteration and port.
#include "sim/conform.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/ir/yaml_io.h"
#include "tools/stc/commands.h"

namespace stc::cli {

Runner addConform(CLI::App& app) {
  auto network = std::make_shared<std::string>();
  auto trace = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app.add_option("network", *network, "the network the project was emitted from (its network.yaml)")
      ->required();
  app.add_option("trace", *trace, "the trace `make trace` wrote (build/trace.txt)")->required();
  app.add_flag("--json", *json, "print one JSON object: ok, calls, tasks, accesses and the message");
  return [network, trace, json]() {
    Network net = loadNetwork(*network);  // not verified: a task is checked alone, as its code runs
    conform::Result r = conform::check(net, conform::parseTrace(readTextFile(*trace), *trace));
    if (*json) {
      nlohmann::json out{{"network", *network}, {"trace", *trace},  {"ok", r.ok},
                         {"calls", r.calls},    {"tasks", r.tasks}, {"accesses", r.accesses},
                         {"message", r.message}};
      std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else if (r.ok) {
      std::cout << "conform: PASS: " << r.message << "\n";
    } else {
      std::cerr << "conform: " << *trace << " does not follow " << *network << ": " << r.message << "\n";
    }
    return r.ok ? 0 : 1;
  };
}

}  // namespace stc::cli
