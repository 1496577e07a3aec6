// Baseline: the textbook SystemC model of a pipelined chain. Each task is an SC_THREAD that waits one
// cycle per iteration and reads or writes an sc_fifo<int>, which blocks (and context-switches) on full or
// empty: the way a hand-written SystemC model of a dataflow design usually looks.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "plain_systemc.h"

#include <cstdlib>
#include <memory>
#include <systemc>
#include <vector>

namespace stc::bench {

int64_t runPlainSystemCChain(int tasks, int64_t tokens, int depth) {
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  static std::vector<std::unique_ptr<sc_core::sc_simcontext>> contexts;  // one fresh kernel per run
  contexts.push_back(std::make_unique<sc_core::sc_simcontext>());
  sc_core::sc_curr_simcontext = contexts.back().get();
  sc_core::sc_default_global_context = contexts.back().get();

  std::vector<std::unique_ptr<sc_core::sc_fifo<int>>> fifos;
  for (int f = 0; f + 1 < tasks; ++f)
    fifos.push_back(std::make_unique<sc_core::sc_fifo<int>>(sc_core::sc_gen_unique_name("fifo"), depth));
  const sc_core::sc_time cycle(4, sc_core::SC_NS);
  for (int t = 0; t < tasks; ++t) {
    sc_core::sc_fifo<int>* in = t > 0 ? fifos[static_cast<size_t>(t - 1)].get() : nullptr;
    sc_core::sc_fifo<int>* out = t + 1 < tasks ? fifos[static_cast<size_t>(t)].get() : nullptr;
    sc_core::sc_spawn(
        [in, out, tokens, cycle]() {
          for (int64_t j = 0; j < tokens; ++j) {
            int v = in ? in->read() : static_cast<int>(j);
            sc_core::wait(cycle);
            if (out) out->write(v + 1);
          }
        },
        sc_core::sc_gen_unique_name("task"));
  }
  sc_core::sc_start();
  return 2 * static_cast<int64_t>(tasks - 1) * tokens;
}

}  // namespace stc::bench
