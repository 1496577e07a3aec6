#pragma once
// The SystemC model of a Network: one SystemC method process per task, one event per task to wake it.

#include "sim/engine.h"

namespace stc::sim {

/// Runs a program in the SystemC kernel. Each task is an SC_METHOD that runs its static event list with
/// its own local clock (temporal decoupling, as TLM-2.0 loosely-timed initiators do) and returns to the
/// kernel only when it blocks on a FIFO, sensitive to its wake-up event; the other end of that FIFO
/// notifies it. The kernel's starvation with unfinished tasks is a deadlock. Each call uses a fresh
/// simulation context; calls are serialised (the SystemC kernel is global).
SimResult runSystemC(const Program& program, const RunConfig& config);

}  // namespace stc::sim
