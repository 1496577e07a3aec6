#pragma once
// A second, deliberately naive implementation of the timing semantics of DESIGN.md, for cross-checking
// the engine: it enumerates every loop iteration of every phase, builds each task's explicit event list,
// and sweeps over the tasks until no stage group (the events of one local cycle, revision 2) can fire.

#include <cstdint>
#include <vector>

#include "compiler/ir/network.h"

namespace stc::testing {

/// An event that cannot happen: `task` waits to write (`write`) or read `fifo`.
struct ReferenceWait {
  int task = -1;
  int fifo = -1;
  bool write = false;
};

struct ReferenceResult {
  bool deadlock = false;
  int64_t cycles = 0;
  std::vector<int64_t> taskEnd;  // one past the last event, -1 if none
  std::vector<int64_t> stallFull, stallEmpty;          // per task
  std::vector<int64_t> fifoStallFull, fifoStallEmpty;  // per FIFO: the stalls charged to it
  std::vector<int64_t> maxOccupancy;
  std::vector<std::vector<ReferenceWait>> waits;  // per task: its blocked stage group's events not ready
  std::vector<ReferenceWait> cycle;               // the wait-for cycle, from its first task in the file
};

/// depths: one per FIFO (kUnboundedDepth allowed), or empty for the file's.
ReferenceResult referenceSimulate(const Network& net, const Bindings& bindings, std::vector<int64_t> depths = {});

}  // namespace stc::testing
