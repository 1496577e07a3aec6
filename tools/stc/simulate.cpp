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
  std::string input;
  std::string platform;
  std::string fifoDepth = "auto";
  std::optional<int64_t> ctx;
  std::vector<std::string> binds;
  std::string vcd, trace, curves;
  std::string engine = "systemc";
  bool json = false;
};

Bindings parseBindings(const SimulateArgs& a) {
  Bindings b;
  if (a.ctx) {
    if (*a.ctx < 1) throw UserError("stc simulate: error: --ctx must be at least 1");
    b["ctx"] = *a.ctx;
  }
  for (const std::string& kv : a.binds) {
    size_t eq = kv.find('=');
    std::string name = kv.substr(0, eq);
    bool ok = eq != std::string::npos && !name.empty();
    int64_t v = 0;
    if (ok) {
      try {
        size_t used = 0;
        v = std::stoll(kv.substr(eq + 1), &used);
        ok = used == kv.size() - eq - 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) throw UserError("stc simulate: error: --bind expects NAME=INTEGER, got '" + kv + "'");
    b[name] = v;
  }
  return b;
}

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
  Platform platform = a.platform.empty() ? defaultPlatform() : loadPlatform(a.platform);
  std::string text = readTextFile(a.input);
  FileKind kind = detectFileKind(text, a.input);
  if (kind != FileKind::kNetwork)
    throw UserError(a.input + ": error: unsupported: simulating a model needs the compiler (stc compile); "
                              "give a network file (its first key is 'network')");
  Network net = parseNetwork(text, a.input);
  Bindings bindings = parseBindings(a);
  for (const std::string& s : net.symbols())
    if (!bindings.count(s))
      throw UserError(a.input + ": error: the network uses symbol '" + s + "': bind it with " +
                      (s == "ctx" ? std::string("--ctx N") : "--bind " + s + "=N"));
  sim::Program prog = sim::compileProgram(net, bindings);
  sim::RunConfig config;
  config.depths = resolveDepths(prog, a.fifoDepth);
  config.recordCurves = !a.curves.empty() || !a.vcd.empty() || !a.trace.empty();
  config.recordStalls = !a.vcd.empty() || !a.trace.empty();
  sim::SimResult r = a.engine == "direct" ? sim::runDirect(prog, config) : sim::runSystemC(prog, config);
  std::optional<sim::DepthFix> fix;
  if (r.deadlock) fix = sim::findDepthFix(prog, config, r);
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
  app.add_option("input", a->input, "network file (models/networks/*.yaml)")->required();
  app.add_option("-p,--platform", a->platform, "platform config (default: the embedded U55C)");
  app.add_option("--fifo-depth", a->fifoDepth, "auto (the file's depths), unbounded, or N for every FIFO");
  app.add_option("--ctx", a->ctx, "bind the KV-cache length symbol ctx");
  app.add_option("--bind", a->binds, "bind a symbol, NAME=N (repeatable)");
  app.add_option("--vcd", a->vcd, "write FIFO occupancy and task states as VCD");
  app.add_option("--trace", a->trace, "write a Chrome/Perfetto trace-event JSON file");
  app.add_option("--curves", a->curves, "write token curves as CSV (fifo,cycle,writes,reads)");
  app.add_option("--engine", a->engine, "systemc (default) or direct (the same engine without the SystemC kernel)")
      ->check(CLI::IsMember({"systemc", "direct"}));
  app.add_flag("--json", a->json, "print one JSON object");
  return [a]() { return simulate(*a); };
}

}  // namespace stc::cli
