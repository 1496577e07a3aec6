#pragma once
// A FIFO queue of nondecreasing cycle times stored as arithmetic runs (start, stride, count). Streams of a
// pipelined loop produce long runs, so a queue of 250,000 token times usually holds a handful of runs:
// memory follows the shape of the schedule, not the number of events.

#include <cstdint>
#include <vector>

namespace stc::sim {

/// One arithmetic run of times: start, start + stride, ..., count of them.
struct TimeRun {
  int64_t start;
  int64_t stride;
  int64_t count;
};

/// Appends t to a run list, extending the last run when t continues it.
inline void appendTime(std::vector<TimeRun>& runs, int64_t t) {
  if (!runs.empty()) {
    TimeRun& last = runs.back();
    if (last.count == 1) {
      last.stride = t - last.start;
      last.count = 2;
      return;
    }
    if (t == last.start + last.stride * last.count) {
      ++last.count;
      return;
    }
  }
  // Field by field: building the run on the stack and copying it costs a store-forwarding stall per new
  // run, which irregular (HBM-paced) streams pay on most tokens.
  TimeRun& run = runs.emplace_back();
  run.start = t;
  run.stride = 0;
  run.count = 1;
}

class RunQueue {
 public:
  bool empty() const { return head_ == runs_.size(); }
  int64_t front() const { return runs_[head_].start; }

  // pop() clears the vector when the last run is consumed, so the back run is always live.
  void push(int64_t t) { appendTime(runs_, t); }

  void pop() {
    TimeRun& r = runs_[head_];
    r.start += r.stride;
    if (--r.count == 0 && ++head_ == runs_.size()) {
      runs_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= runs_.size()) {
      runs_.erase(runs_.begin(), runs_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  /// The runs still queued, oldest first.
  std::vector<TimeRun> runs() const { return {runs_.begin() + static_cast<std::ptrdiff_t>(head_), runs_.end()}; }

 private:
  std::vector<TimeRun> runs_;
  size_t head_ = 0;
};

/// An append-only log of nondecreasing times, run-length encoded like RunQueue (for token curves).
class RunLog {
 public:
  void push(int64_t t) { appendTime(runs_, t); }
  const std::vector<TimeRun>& runs() const { return runs_; }
  /// Every time, expanded.
  std::vector<int64_t> times() const;

 private:
  std::vector<TimeRun> runs_;
};

}  // namespace stc::sim
