#pragma once
// The baseline users know: a plain SystemC model of a chain of tasks, one SC_THREAD per task and an
// sc_fifo per edge, one wait() per event gap.

#include <cstdint>

namespace stc::bench {

/// Simulates a chain of `tasks` tasks passing `tokens` tokens through sc_fifos of `depth`; returns the
/// number of I/O events (fifo reads and writes) performed.
int64_t runPlainSystemCChain(int tasks, int64_t tokens, int depth);

}  // namespace stc::bench
