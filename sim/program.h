#pragma once
// A Network compiled for simulation: symbols bound, every port turned into an arithmetic sequence of
// task-local event cycles (DESIGN.md, timing semantics).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <optional>

#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"
#include "sim/hbm.h"

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

/// A DMA task: its tokens move between its FIFO and an HBM channel (sim/hbm.h), at most one per cycle.
struct DmaProgram {
  bool write = false;  ///< dma_write: reads its FIFO, writes HBM
  int channel = 0;
  int port = 0;        ///< the switch port of its AXI master
  int64_t bytes = 0;
  int64_t tokenBytes = 0;
};

struct TaskProgram {
  std::string name;
  std::vector<PhaseEvents> phases;  ///< a DMA has one phase with one port: token k at local cycle k
  int networkPhases = 1;            ///< the task's phases in the network (an outer loop makes several here)
  int64_t events = 0;
  std::optional<DmaProgram> dma;
  int group = 0;  ///< index among the network's groups in order; group g starts after group g-1 ends
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
  HbmTiming hbm;
  int groups = 1;
  int64_t groupGapCycles = 0;  ///< host cost of invoking the next group (the platform's invocation overhead)
};

/// Verifies net under bindings (throws UserError listing every problem) and builds its Program for the
/// platform's HBM (channels and ports must exist on it).
Program compileProgram(const Network& net, const Bindings& bindings, const Platform& platform = defaultPlatform());

/// Cycles no run of the program that finishes takes fewer of, whatever its FIFO depths and its DMAs'
/// channels: group g starts after group g - 1 has ended and the invocation gap, and lasts at least as
/// long as each of its tasks' schedules with no stall (1 + the last event's local cycle) and as the
/// busiest channel takes to move its share of the group's DMA bytes (at least the mean over the
/// channels); a group without events ends at 0, as the engine has it.
int64_t lowerBoundCycles(const Program& program);

/// Read latency after a write: 1 cycle for a FIFO of at most 1024 bits in all (shift register), else 2;
/// an unbounded FIFO counts as 2.
inline int readAfterWrite(int64_t width, int64_t depth) {
  return depth != kUnboundedDepth && depth <= 1024 / std::max<int64_t>(width, 1) ? 1 : 2;
}

}  // namespace stc::sim
