// SystemC scheduler of the event engine. The only file of the project that includes SystemC.
//
//   task process (SC_METHOD):  engine.run(t) -> notify the events of the tasks it woke
//                              statically sensitive to wake[t]; a finished task is never notified again
//
// The kernel runs until no process is runnable (sc_start() returns on starvation). Simulated time stays
// at zero: cycle times are carried by the engine, and the kernel only orders the processes' runs.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/systemc_model.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <systemc>

namespace stc::sim {

namespace {

std::mutex& kernelMutex() {
  static std::mutex m;
  return m;
}

// A fresh kernel for each run; SystemC keeps one global context and offers no other way to restart.
// The previous context is left to the process (SystemC's own objects refer to it until exit).
void freshKernel() {
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  // sc_start() with nothing left to run is how a run ends here, not a mistake worth a warning.
  sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
  static std::vector<std::unique_ptr<sc_core::sc_simcontext>> contexts;
  contexts.push_back(std::make_unique<sc_core::sc_simcontext>());
  sc_core::sc_curr_simcontext = contexts.back().get();
  sc_core::sc_default_global_context = contexts.back().get();
}

}  // namespace

SimResult runSystemC(const Program& program, const RunConfig& config) {
  std::lock_guard<std::mutex> lock(kernelMutex());
  auto begin = std::chrono::steady_clock::now();
  freshKernel();
  Engine engine(program, config);
  int n = engine.taskCount();
  std::vector<std::unique_ptr<sc_core::sc_event>> wake;
  for (int t = 0; t < n; ++t)
    wake.push_back(std::make_unique<sc_core::sc_event>(sc_core::sc_gen_unique_name("wake")));
  for (int t = 0; t < n; ++t) {
    sc_core::sc_spawn_options options;
    options.spawn_method();
    options.set_sensitivity(wake[static_cast<size_t>(t)].get());  // static: no per-block next_trigger
    sc_core::sc_spawn(
        [&engine, &wake, t]() {
          engine.run(t);
          for (int w : engine.woken()) wake[static_cast<size_t>(w)]->notify();
          engine.woken().clear();
        },
        sc_core::sc_gen_unique_name("task"),
        &options);
  }
  sc_core::sc_start();
  while (engine.forceServe()) {  // starvation with HBM requests queued: serve the earliest, run on
    for (int w : engine.woken()) wake[static_cast<size_t>(w)]->notify(sc_core::SC_ZERO_TIME);
    engine.woken().clear();
    sc_core::sc_start();
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return engine.result(wall);
}

}  // namespace stc::sim

// libsystemc ships its own main() that calls sc_main(); stc has its own main() and drives the kernel
// directly, but the library's reference must still resolve.
int sc_main(int, char**) { return 0; }
