// stc simulate NETWORK: runs the cycle-level simulator and reports latency, stalls, FIFO occupancy and,
// on deadlock, the wait-for cycle with the smallest depth change that breaks it (exit 3).
#include <iostream>
#include <optional>
#include <sstream>

#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "sim/report.h"
#include "sim/systemc_model.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

struct SimulateArgs {
  NetworkInput network;
  std::string fifoDepth = "auto";
  std::string vcd, trace, curves;
  std::string engine = "systemc";
  bool json = false;
};

std::vector<int64_t> resolveDepths(const sim::Program& prog, const std::string& mode) {
  std::vector<int64_t> depths;
  if (mode == "auto") return depths;
  int64_t fixed = kUnboundedDepth;
  if (mode != "unbounded") {
    size_t used = 0;
    try {
      fixed = std::stoll(mode, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != mode.size() || used == 0 || fixed < 1)
      throw UserError("stc simulate: error: --fifo-depth expects auto, unbounded or a positive integer, got '" + mode +
                      "'");
  }
  depths.assign(prog.fifos.size(), fixed);
  return depths;
}

int simulate(const SimulateArgs& a) {
  Platform platform = a.network.loadPlatformArg();
  Bindings bindings;
  Network net = a.network.load("stc simulate", platform, bindings);
  sim::Program prog = sim::compileProgram(net, bindings, platform);
  sim::RunConfig config;
  config.depths = resolveDepths(prog, a.fifoDepth);
  config.recordCurves = !a.curves.empty() || !a.vcd.empty() || !a.trace.empty();
  config.recordStalls = !a.vcd.empty() || !a.trace.empty();
  sim::SimResult r = a.engine == "direct" ? sim::runDirect(prog, config) : sim::runSystemC(prog, config);
  std::optional<sim::DepthFix> fix;
  if (r.deadlock) fix = sim::findDepthFix(prog, r);
  double mhz = platform.kernelClockMhz;
  if (!a.curves.empty()) {
    std::ostringstream s;
    sim::writeCurvesCsv(s, r);
    writeFileAtomic(a.curves, s.str());
  }
  if (!a.vcd.empty()) {
    std::ostringstream s;
    sim::writeVcd(s, r, mhz);
    writeFileAtomic(a.vcd, s.str());
  }
  if (!a.trace.empty()) {
    std::ostringstream s;
    sim::writeTrace(s, r, mhz);
    writeFileAtomic(a.trace, s.str());
  }
  if (a.json) {
    std::cout << sim::resultJson(r, fix, mhz).dump(2) << "\n";
    if (r.deadlock) sim::printSummary(std::cerr, r, fix, mhz);
  } else {
    sim::printSummary(std::cout, r, fix, mhz);
  }
  return r.deadlock ? 3 : 0;
}

}  // namespace

Runner addSimulate(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  a->network.addOptions(app);
  app.add_option("--fifo-depth", a->fifoDepth, "auto (the file's depths), unbounded, or N for every FIFO");
  app.add_option("--vcd", a->vcd, "write FIFO occupancy and task states as VCD");
  app.add_option("--trace", a->trace, "write a Chrome/Perfetto trace-event JSON file");
  app.add_option("--curves", a->curves, "write token curves as CSV (fifo,cycle,writes,reads)");
  app.add_option("--engine", a->engine, "systemc (default) or direct (the same engine without the SystemC kernel)")
      ->check(CLI::IsMember({"systemc", "direct"}));
  app.add_flag("--json", a->json, "print one JSON object");
  return [a]() { return simulate(*a); };
}

}  // namespace stc::cli
