// stc size-fifos NETWORK -o SIZED: LP-based FIFO sizing, verified by re-simulation. The output network is
// the input with new depths and nothing else changed.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/report.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

struct SizeArgs {
  NetworkInput network;
  std::string output, strategy = "normal";
  bool json = false;
};

int sizeCommand(const SizeArgs& a) {
  checkOutputPaths({a.output});
  Platform platform = a.network.loadPlatformArg();
  sizing::SizingOptions options;
  options.platform = platform;
  Network net = a.network.load("stc size-fifos", platform, options.bindings);
  options.strategy = a.strategy == "conservative" ? sizing::Strategy::kConservative : sizing::Strategy::kNormal;
  Network sized;
  sizing::SizingResult r = sizing::sizeFifos(net, options, sized);
  if (r.trueDeadlock) {
    std::cerr << "stc size-fifos: the network deadlocks even with unbounded FIFOs: no depth can fix it\n";
    sim::printSummary(std::cerr, r.unbounded, std::nullopt, platform.kernelClockMhz);
    return 3;
  }
  writeFileAtomic(a.output, emitNetwork(sized));
  if (a.json) {
    nlohmann::json fifos = nlohmann::json::array();
    for (const auto& f : r.fifos)
      fifos.push_back({{"name", f.name}, {"depth", f.depth}, {"bits", f.bits}, {"memory", f.memory.kind},
                       {"max_occupancy", f.maxOccupancy}});
    nlohmann::json j{{"fifos", fifos},
                     {"total_bits", r.totalBits},
                     {"baseline_max_occupancy_bits", r.baselineMaxOccupancyBits},
                     {"baseline_full_bits", r.baselineFullBits},
                     {"cycles_unbounded", r.cyclesUnbounded},
                     {"cycles_sized", r.cyclesSized},
                     {"paced", r.paced},
                     {"cycles_paced", r.cyclesPaced},
                     {"rounds", r.rounds},
                     {"lp_seconds", r.lpSeconds},
                     {"lp_feasible", r.lpFeasible},
                     {"memory", r.memoryCounts}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof line, "%s: %zu FIFOs sized in %d round(s); %lld cycles (unbounded %lld)\n",
                  net.name.c_str(), r.fifos.size(), r.rounds, static_cast<long long>(r.cyclesSized),
                  static_cast<long long>(r.cyclesUnbounded));
    std::cout << line;
    if (r.paced) std::cout << "paced: " << pacedLine(r.cyclesPaced);
    std::snprintf(line, sizeof line, "bits: %lld sized, %lld at maximum occupancy, %lld holding every token\n",
                  static_cast<long long>(r.totalBits), static_cast<long long>(r.baselineMaxOccupancyBits),
                  static_cast<long long>(r.baselineFullBits));
    std::cout << line;
    for (const auto& f : r.fifos) {
      std::snprintf(line, sizeof line, "  %-24s depth %8lld  (max occupancy %8lld)  %8lld bits  %s\n", f.name.c_str(),
                    static_cast<long long>(f.depth), static_cast<long long>(f.maxOccupancy),
                    static_cast<long long>(f.bits), f.memory.kind.c_str());
      std::cout << line;
    }
    std::cout << "wrote " << a.output << "\n";
  }
  return 0;
}

}  // namespace

Runner addSizeFifos(CLI::App& app) {
  auto a = std::make_shared<SizeArgs>();
  a->network.addOptions(app);
  app.add_option("-o,--output", a->output, "sized network file to write")->required();
  app.add_option("--strategy", a->strategy, "normal or conservative (every pace scaled to the slowest task)")
      ->check(CLI::IsMember({"normal", "conservative"}));
  app.add_flag("--json", a->json, "print one JSON object");
  return [a]() { return sizeCommand(*a); };
}

}  // namespace stc::cli
