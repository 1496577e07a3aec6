#pragma once
// Walking a simulation's recorded times without expanding them: a FIFO's cumulative writes and reads
// cycle by cycle, and a task's state changes. What curves, VCD, traces and the HTML report draw from.

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/result.h"

namespace stc::sim {

/// The task states of the VCD (also in its $comment): a task blocked when a deadlocked run ends stays
/// stalled to the end, started or not.
constexpr int kTaskNotStarted = 0, kTaskRunning = 1, kTaskStalledFull = 2, kTaskStalledEmpty = 3,
              kTaskFinished = 4;

struct CurvePoint {
  int64_t cycle, writes, reads;
};

// One FIFO's writes or reads, time after time, walked through their runs without expanding them.
class TimeCursor {
 public:
  explicit TimeCursor(const std::vector<TimeRun>& runs) : runs_(runs) { skipEmpty(); }
  bool done() const { return run_ >= runs_.size(); }
  int64_t peek() const { return runs_[run_].start + k_ * runs_[run_].stride; }
  int64_t taken() const { return taken_; }
  void pop() {
    ++taken_;
    if (++k_ >= runs_[run_].count) {
      ++run_;
      k_ = 0;
      skipEmpty();
    }
  }

 private:
  void skipEmpty() {
    while (run_ < runs_.size() && runs_[run_].count <= 0) ++run_;
  }
  const std::vector<TimeRun>& runs_;
  size_t run_ = 0;
  int64_t k_ = 0, taken_ = 0;
};

// Cumulative writes and reads of a FIFO after each cycle in which either changes, one point at a time:
// what a curve, a VCD or a trace needs, in memory that does not grow with the run.
class Timeline {
 public:
  explicit Timeline(const FifoStats& f) : w_(f.writeTimes), r_(f.readTimes) {}
  bool next(CurvePoint& p) {
    if (w_.done() && r_.done()) return false;
    int64_t c = std::min(w_.done() ? INT64_MAX : w_.peek(), r_.done() ? INT64_MAX : r_.peek());
    while (!w_.done() && w_.peek() == c) w_.pop();
    while (!r_.done() && r_.peek() == c) r_.pop();
    p = {c, w_.taken(), r_.taken()};
    return true;
  }

 private:
  TimeCursor w_, r_;
};

// The state changes of a task, (cycle, state) one at a time: its start, each stall and its end, and the
// end; a task blocked when a deadlocked run ended stays stalled to the end, started or not.
class TaskTimeline {
 public:
  explicit TaskTimeline(const TaskStats& t) : t_(t) {}
  bool next(std::pair<int64_t, int>& change) {
    for (;;) {
      switch (step_) {
        case 0:  // the start
          step_ = 1;
          if (t_.start >= 0) return change = {t_.start, kTaskRunning}, true;
          break;
        case 1:  // a stall's begin
          if (stall_ >= t_.stalls.size()) {
            step_ = 3;
            break;
          }
          if (t_.start < 0 && !t_.stalls[stall_].open) {
            ++stall_;
            break;
          }
          step_ = 2;
          return change = {t_.stalls[stall_].begin,
                           t_.stalls[stall_].full ? kTaskStalledFull : kTaskStalledEmpty},
                 true;
        case 2: {  // its end
          const StallSpan& s = t_.stalls[stall_++];
          step_ = 1;
          if (!s.open) return change = {s.end, kTaskRunning}, true;
          break;
        }
        case 3:
          step_ = 4;
          if (t_.finished) return change = {t_.end, kTaskFinished}, true;
          break;
        default:
          return false;
      }
    }
  }

 private:
  const TaskStats& t_;
  int step_ = 0;
  size_t stall_ = 0;
};

}  // namespace stc::sim
