#pragma once
// A second, deliberately naive implementation of the timing semantics of DESIGN.md, for cross-checking
// the engine: it enumerates every loop iteration of every phase, builds each task's explicit event list,
// and sweeps over the tasks until no event can be computed.

#include <cstdint>
#include <vector>

#include "compiler/ir/network.h"

namespace stc::testing {

struct ReferenceResult {
  bool deadlock = false;
  int64_t cycles = 0;
  std::vector<int64_t> taskEnd;  // one past the last event, -1 if none
  std::vector<int64_t> stallFull, stallEmpty;
  std::vector<int64_t> maxOccupancy;
};

/// depths: one per FIFO (kUnboundedDepth allowed), or empty for the file's.
ReferenceResult referenceSimulate(const Network& net, const Bindings& bindings, std::vector<int64_t> depths = {});

}  // namespace stc::testing
