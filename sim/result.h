#pragma once
// What a simulation tells its user: latency, per-task and per-FIFO statistics, token curves, stall spans
// and, on deadlock, the wait-for cycle.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/hbm.h"
#include "sim/run_queue.h"

namespace stc::sim {

/// A span [begin, end) in which a task waited on a FIFO.
struct StallSpan {
  int64_t begin;
  int64_t end;
  int fifo;
  bool full;          ///< waiting to write a full FIFO (else to read an empty one)
  bool open = false;  ///< never resolved: the task was blocked when a deadlocked run ended (end: the run's)
};

/// An event that cannot happen: `task` waits to `write` a FULL `fifo` or to read an EMPTY one. A link of
/// a wait-for cycle, or one of a blocked stage group's events that are not ready.
struct WaitEdge {
  int task = -1;
  int fifo = -1;
  bool write = false;
  int64_t occupancy = 0;
  int64_t depth = 0;
};

struct TaskStats {
  std::string name;
  int64_t start = -1;  ///< global cycle of the task's local cycle 0, after any stall before its first event
  int64_t end = -1;    ///< one past its last event
  int64_t stallFull = 0;   ///< cycles stalled on full FIFOs after the start
  int64_t stallEmpty = 0;  ///< cycles stalled on empty FIFOs after the start
  int64_t events = 0;
  bool finished = false;
  std::vector<StallSpan> stalls;  ///< when recorded
  /// Unfinished at the end of a deadlocked run: the events of its blocked stage group that are not ready,
  /// in group order (writes first, then reads, each in port order). Empty otherwise.
  std::vector<WaitEdge> waits;
  /// Unfinished at the end of a deadlocked run: the earliest cycle its blocked stage group could have by
  /// the task's own clock (it may lie past the run's last event); it waits from then on (-1 otherwise). Its
  /// open wait is the last of `stalls`, when stalls are recorded; stallFull and stallEmpty count resolved
  /// stalls only.
  int64_t blockedSince = -1;
};

struct FifoStats {
  std::string name;
  int64_t width = 0;
  int64_t depth = 0;  ///< as simulated; kUnboundedDepth = -1
  int64_t tokens = 0;
  int64_t maxOccupancy = 0;
  int64_t written = 0;
  int64_t read = 0;
  int writer = -1, reader = -1;
  /// Stall cycles charged to this FIFO (to the access of a stage group ready last, the first in group
  /// order among equals: Engine::run): its writer's waits for room and its reader's for data; a DMA's
  /// waits on HBM go to its stream, FULL for a write (its reader) waiting for an outstanding slot, EMPTY
  /// for a read (its writer) waiting for data. Over the FIFOs they add up to the tasks' stallFull and
  /// stallEmpty; kept whether stall spans are recorded or not. (The timeline's per-FIFO stalls differ:
  /// HBM waits apart, a deadlock's open waits in.)
  int64_t stallFull = 0, stallEmpty = 0;
  std::vector<TimeRun> writeTimes, readTimes;  ///< token curves, when recorded
};

struct SimResult {
  std::string network;
  bool deadlock = false;
  int64_t cycles = 0;     ///< 1 + the last event's cycle; on deadlock, the cycle at which progress stopped
  int64_t events = 0;     ///< I/O events simulated
  int64_t jumpedEvents = 0;  ///< of those, events advanced by periodic jumps (RunConfig::periodic)
  double wallSeconds = 0;
  std::vector<TaskStats> tasks;
  std::vector<FifoStats> fifos;
  std::vector<WaitEdge> deadlockCycle;
  std::vector<ChannelStats> hbm;  ///< channels that serve a DMA
};

}  // namespace stc::sim
