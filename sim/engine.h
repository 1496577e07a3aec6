#pragma once
// The event engine of the simulator: the state of every task and FIFO, and `run(task)`, which advances
// one task through its static event list until it blocks on a FIFO or finishes. Schedulers (the SystemC
// model in systemc_model.cpp, the direct worklist in direct.cpp) decide which task runs next; because
// every event's time follows from the times it depends on, any order gives the same times.
//
// Timing (DESIGN.md, normative, revision 2): a task's events with equal local cycle form a stage group
// that fires whole at T(G) = max(T(prev) + local(G) - local(prev), max over e in G of ready(e)), with
//   read k of f ready at T(write k of f) + raw(f); write k of f ready at T(read k-d of f) + 1 when k >= d.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/hbm.h"
#include "sim/program.h"
#include "sim/result.h"
#include "sim/run_queue.h"

namespace stc::sim {

/// A queue of times as a periodic jump's mark keeps it: its first runs and its size. Between marks a queue
/// changes only at its ends, so the rest is the queue's own later times (engine.cpp).
struct QueueMark {
  std::vector<TimeRun> head;
  int64_t size;
  bool whole;  // head holds every time
};

/// How one run treats the program: FIFO depths and what to record.
struct RunConfig {
  std::vector<int64_t> depths;  ///< one per FIFO (kUnboundedDepth allowed); empty = the program's
  bool recordCurves = false;    ///< keep every write and read time (token curves)
  std::vector<char>
      curvesOf;  ///< with recordCurves, the FIFOs whose curves to keep (a flag per FIFO); empty = all
  bool recordStalls = false;    ///< keep every stall span (traces, VCD)
  bool periodic = true;         ///< jump over periods of a periodic steady state (same results, fewer steps)
};

class Engine {
 public:
  Engine(const Program& program, const RunConfig& config);

  /// Advances task t until it blocks or finishes; returns true when it finished. Tasks it unblocked are
  /// appended to woken().
  bool run(int t);
  std::vector<int>& woken() { return woken_; }
  bool finished(int t) const { return tasks_[static_cast<size_t>(t)].done; }
  /// For a scheduler with no task left to run: serves the earliest pending HBM request of all channels
  /// (no request still unknown can precede it, see engine.cpp) and appends the tasks it unblocks to
  /// woken(). False when nothing is pending: the run is over, finished or deadlocked.
  bool forceServe();
  int taskCount() const { return static_cast<int>(tasks_.size()); }
  /// Events advanced by periodic jumps rather than one by one.
  int64_t jumpedEvents() const { return jumpedEvents_; }

  /// The outcome: times, statistics, curves and, if some task never finished, the wait-for cycle. Called
  /// once, at the end: the curves are moved out.
  SimResult result(double wallSeconds);

 private:
  struct Cursor {  // the next event of one port in the current phase
    int64_t next;
    int64_t stride;
    int64_t remaining;
    int fifo;
    bool write;
  };
  struct TaskState {
    size_t phase = 0;
    std::vector<Cursor> cursors;  // writes first, then reads, in port order: the order within a group
    int64_t offset = 0;    // T(prev) - local(prev)
    int64_t lastTime = -1;
    int64_t start = -1;
    int64_t stallFull = 0, stallEmpty = 0, events = 0;
    bool done = false;
    bool opened = false;  // its group may start (the previous group has ended)
    int waitFifo = -1;    // the first event of its stage group found not ready; -1 for HBM or its group
    int64_t blockedAt = -1;  // the earliest cycle of the stage group it last found not ready
    std::vector<StallSpan> stalls;
  };
  struct FifoState {
    int64_t depth;
    int64_t raw;
    int64_t tokens;
    int64_t written = 0, read = 0;
    RunQueue writeTimes;  // writes [read, written)
    RunQueue readTimes;   // reads [written - depth, read), bounded FIFOs only
    RunQueue mergeW, mergeR;
    int64_t mergedW = 0, mergedR = 0, maxOccupancy = 0;
    int64_t stallFull = 0, stallEmpty = 0;  // stall cycles charged to it
    bool occupancySettled = false;  // maxOccupancy reached the depth, which no write can exceed
    bool writerWaiting = false, readerWaiting = false;
    bool record = false;  // keeps its curves
    bool keepReads = false;   // keeps its last reads (KeptTimes)
    bool keepWrites = false;  // and its last writes
    // How many times the queues hold, from the counts (RunQueue::size walks the runs); the merge's while
    // the occupancy is not settled.
    int64_t queuedWrites() const { return written - read; }
    int64_t queuedReads() const {
      return depth == kUnboundedDepth ? 0 : read - std::max<int64_t>(0, written - depth);
    }
    int64_t toMergeW() const { return written - mergedW; }
    int64_t toMergeR() const { return read - mergedR; }
    int writer, reader;
    RunLog writeLog, readLog;
  };

  // An unbounded FIFO not recorded keeps its last reads (at most kKeptRuns runs), which no other queue
  // keeps once merged: a period's reads, for mergePeriod; and a deep one (unbounded, or deeper than
  // kKeptWritesDepth) its last writes, which its reader took from writeTimes once merged (a FIFO that fills
  // over many periods, a whole tensor behind a converter, writes more in a period than it holds). Cleared at
  // a jump, whose times they lack. Apart from FifoState, which every event touches.
  struct KeptTimes {
    RunQueue times;
    int64_t count = 0;
    void push(int64_t time);
  };
  struct DmaState {  // the HBM side of a DMA task
    int channel = -1;
    size_t slot = 0;  // its index among the channel's ports
    bool write = false;
    int64_t bytes = 0, tokenBytes = 0, bursts = 0, outstanding = 0;
    int64_t ticksPerByte = 0, latencyTicks = 0;
    int64_t issued = 0, released = 0, lastRequestCycle = -1;
    int64_t burst = 0, burstLastToken = 0;  // the burst holding the next token's last byte, and its last token
    int64_t releaseToken = 0;               // the last token of burst `released` (reads) or `issued` (writes)
    std::vector<int64_t> served;  // per served burst from servedBase: data base tick (read), response tick (write)
    size_t servedHead = 0;
    int64_t servedBase = 0, servedCount = 0, lastResponseCycle = -1;
    bool waitingChannel = false;
  };
  struct ChannelState {
    std::vector<int> ports;  // DMA tasks in task order, which is also the round-robin order
    std::vector<std::vector<BurstRequest>> pending;
    std::vector<size_t> pendingHead;
    int64_t freeTick = 0;
    size_t next = 0;  // round-robin pointer
    ChannelStats stats;
    std::vector<std::pair<int64_t, int64_t>>
        busySpanTicks;  // [begin, end) of its bursts, when curves are recorded
  };

  void enterPhase(TaskState& ts, const TaskProgram& tp);
  /// Local cycle of the task's next stage group in its current phase, INT64_MAX when the phase is over.
  static int64_t nextGroup(const TaskState& ts);
  /// Whether a cursor's next event belongs to the stage group at local cycle `local`.
  static bool inGroup(const Cursor& c, int64_t local) { return c.remaining > 0 && c.next == local; }
  /// Whether the FIFO's next write needs room, i.e. an earlier read (k >= depth).
  static bool needsRoom(const FifoState& f) { return f.depth != kUnboundedDepth && f.written >= f.depth; }
  /// Whether the dependency of a cursor's next event has happened (its ready time is known).
  bool known(const Cursor& c) const;
  /// The events of a blocked task's stage group that are not ready (empty unless it waits on FIFOs).
  std::vector<WaitEdge> notReady(int t) const;
  /// Maximum occupancy once no event is left to come (a deadlocked run): the merge finishes its queues.
  int64_t finalMaxOccupancy(const FifoState& f) const;
  /// Whether task t waits for its group to start.
  bool gated(int t) const;
  void finishTask(int t);
  int64_t lastTokenOfBurst(const DmaState& d, int64_t burst) const;
  /// Cycle from which DMA token k can move, or -1 while the burst it needs has not been served.
  int64_t dmaReady(DmaState& d, int64_t token) const;
  void issueBurst(int task, int64_t cycle);
  void afterDmaToken(int task, int64_t token, int64_t time);
  /// Serves the channel's requests while their order is certain (every port has a request queued or has
  /// issued all it will); with force, serves the first one regardless.
  void serveChannel(int channel, bool force);
  void mergeOccupancy(FifoState& f);
  /// One step of the merge over the front runs of both queues at once; false where it leaves it to the
  /// token-by-token step.
  bool mergeRuns(FifoState& f);
  /// The wait-for cycle reached from the first blocked task, each task by the first event of its group
  /// that is not ready (TaskStats::waits).
  std::vector<WaitEdge> waitCycle(const std::vector<TaskStats>& tasks) const;

  // Periodic jumps. At a task's run the engine may record its state; when the state equals a recorded one
  // moved by some delta in time (every task that moved since, moved by the same delta; the rest did not
  // change), the same steps repeat, so it applies them K times at once, K as large as no phase ends.
  struct CursorMark {
    int64_t next, remaining;
  };
  struct TaskMark {
    size_t phase;
    bool done, opened, started;
    int64_t offset, lastTime, blockedAt, events, stallFull, stallEmpty;
    int waitFifo;
    size_t stalls;
    std::vector<CursorMark> cursors;
  };
  struct FifoMark {
    int64_t written, read, mergedW, mergedR, logW, logR, stallFull, stallEmpty;
    bool writerWaiting, readerWaiting;
    QueueMark writeTimes, readTimes, mergeW, mergeR;
  };
  struct DmaMark {
    int64_t issued, released, burst, burstLastToken, releaseToken, servedBase, servedCount;
    int64_t lastRequestCycle, lastResponseCycle;
    bool waitingChannel;
    std::vector<int64_t> served;  // from servedHead
  };
  struct ChannelMark {
    std::vector<std::vector<BurstRequest>> pending;  // per port, from its head
    int64_t freeTick, busyTicks, bytesRead, bytesWritten;
    size_t next, spans;
    int64_t lastSpanEnd;  // the end of the last busy span (curves), -1 if none
  };
  struct Mark {
    std::vector<TaskMark> tasks;
    std::vector<FifoMark> fifos;
    std::vector<DmaMark> dmas;  // per task; DMA tasks only
    std::vector<ChannelMark> channels;
    std::vector<int64_t> groupLeft;
    int64_t forced;  // forceServe calls so far
  };
  /// Whether a DMA took no part in the period since its mark (hbmPeriod leaves it as it is).
  static bool idleDma(const DmaState& d, const DmaMark& m);
  /// The HBM part of jumpFrom: checks the DMAs and channels, lowers `repeats`, or false when they are not
  /// the mark's moved by delta. With apply, applies `repeats` periods instead.
  /// With `part` (a flag per task; empty: every task), only its DMAs and the channels they use.
  bool hbmPeriod(const Mark& m, int64_t delta, int64_t& repeats, bool apply, const std::vector<char>& part);
  /// The FIFO's last n write (or read) times, into out unless it is null: from a queue that holds them (the
  /// merge's, the queued writes or reads), those it keeps (KeptTimes) or its curve; false when none does.
  bool recentTimes(const FifoState& f, int64_t n, bool writes, std::vector<int64_t>* out) const;
  /// The FIFO part of jumpFrom, for FIFO i: checks and lowers `repeats`, or with apply applies them.
  bool fifoPeriod(size_t i, const Mark& m, int64_t delta, int64_t& repeats, bool apply);
  /// The maximum-occupancy merge's part of fifoPeriod.
  bool mergePeriod(FifoState& f, const FifoMark& fm, int64_t delta, int64_t repeats, bool apply);
  /// The part of a partial jump for FIFO i, one of whose ends is in the part (the writer's when
  /// `partWrites`): that end's periods repeat while what they take from the other end is already queued
  /// and was ready before the period that takes it; checks and lowers `repeats`, or with apply applies them.
  bool boundaryPeriod(size_t i, const Mark& m, bool partWrites, int64_t delta, int64_t& repeats, bool apply);
  /// Called as task t starts a run: chooses the anchor, and takes a mark at its run when one is due.
  void observe(int t);
  /// The odd factor of the HBM periods, in tokens, of the DMAs task t streams to or from (1 if none).
  int64_t hbmFactor(int t) const;
  /// The next crossings from local cycle `local`: of every lattice (all), or of those it has reached.
  void scheduleMarks(int64_t local, bool all);
  /// Makes task t the anchor, its marks to start afresh.
  void takeAnchor(int t);
  /// At the anchor t, `stepped` events stepped so far: records the state now and then, jumps when it repeats.
  void markPoint(int t, int64_t stepped);
  Mark mark() const;
  /// A hash of the state that a move in time does not change (differences of times, counts and
  /// positions): equal for a state and the same state one period later. Marks are looked up by it.
  uint64_t shapeKey() const;
  /// The last event of a channel's ports, in ticks: what shapeKey measures the channel's free tick against.
  int64_t portTicks(const ChannelState& ch) const;
  /// The jump from m to now repeated as often as it can be, or false when the state is not m moved. With
  /// `partial`, of the tasks that moved by the anchor's delta alone (jumpPart).
  bool jumpFrom(const Mark& m, bool partial);
  /// A partial jump from one of the recent marks, newest first.
  bool jumpPart();

  const Program& program_;
  RunConfig config_;
  std::unordered_map<uint64_t, Mark> marks_;  // by shapeKey, of states seen more than once
  std::unordered_set<uint64_t> keys_;         // shapeKeys of states seen
  std::vector<Mark> recent_;                  // the last marks taken, oldest first, for partial jumps
  size_t markWords_ = 0;                      // the size of the marks kept (words: vectors and runs)
  int anchor_ = -1;                           // the task whose runs take marks
  int64_t runsSinceMark_ = 0, anchorPatience_ = 64;
  int64_t longRun_ = 0;    // events of one run after which its task takes the anchor
  size_t stateWords_ = 0;  // tasks, FIFOs and channel ports: what a key or a mark costs, queued runs aside
  int64_t markQueueRuns_ = 0;  // runs of each queue a mark keeps (markPoint)
  // Marks where the anchor's local cycle crosses a multiple of either stride (the second 0 if none), the
  // next crossing of each and the first of both.
  int64_t markStrides_[2] = {1, 0}, nextMarks_[2] = {0, 0}, nextMarkLocal_ = 0;
  size_t anchorPhase_ = SIZE_MAX;  // the anchor's phase the stride is of
  int64_t jumpedEvents_ = 0;
  int64_t forced_ = 0;   // forceServe calls that served a request
  int64_t stepped_ = 0;  // events stepped one by one
  // Per lattice: marks wait this many times longer after each that found no repeat; stepped_ at its last.
  int64_t markBackoff_[2] = {1, 1}, steppedAtMark_[2] = {0, 0};
  std::vector<TaskState> tasks_;
  std::vector<FifoState> fifos_;
  std::vector<KeptTimes> kept_, keptWrites_;  // one per FIFO
  std::vector<DmaState> dmas_;          // one per task; used by DMA tasks only
  std::vector<ChannelState> channels_;  // one per HBM channel
  std::vector<int64_t> groupLeft_, groupEnd_;  // unfinished tasks and the last end, per group
  std::vector<std::vector<int>> groupWaiters_;
  std::vector<int> woken_;
};

/// Runs a program with the direct worklist scheduler: reentrant, no SystemC, used for repeated runs.
SimResult runDirect(const Program& program, const RunConfig& config);

}  // namespace stc::sim
