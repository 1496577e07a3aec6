#pragma once
// A Network compiled for simulation: symbols bound, every port turned into an arithmetic sequence of
// task-local event cycles (DESIGN.md, timing semantics).

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/network.h"

namespace stc::sim {

/// The events of one port in one phase: local cycles first, first + stride, ..., count of them.
struct PortEvents {
  int fifo = 0;
  bool write = false;
  int64_t first = 0;
  int64_t stride = 0;
  int64_t count = 0;
};

/// One phase: its ports ordered writes first, then reads, each in file order, so that among events of
/// equal local cycle the lower index goes first.
struct PhaseEvents {
  std::vector<PortEvents> ports;
};

struct TaskProgram {
  std::string name;
  std::vector<PhaseEvents> phases;
  int64_t events = 0;
};

struct FifoProgram {
  std::string name;
  int64_t width = 0;
  int64_t depth = kDefaultDepth;  ///< as in the file; the run may override it
  int64_t tokens = 0;
  int writer = -1;
  int reader = -1;
};

struct Program {
  std::string name;
  std::vector<TaskProgram> tasks;
  std::vector<FifoProgram> fifos;
  int64_t events = 0;
};

/// Verifies net under bindings (throws UserError listing every problem) and builds its Program. DMA tasks
/// are refused as unsupported until the HBM model times them.
Program compileProgram(const Network& net, const Bindings& bindings);

/// Read latency after a write: 1 cycle for a FIFO of at most 1024 bits in all (shift register), else 2;
/// an unbounded FIFO counts as 2.
inline int readAfterWrite(int64_t width, int64_t depth) {
  return depth != kUnboundedDepth && width * depth <= 1024 ? 1 : 2;
}

}  // namespace stc::sim
