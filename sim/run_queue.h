#pragma once
// A FIFO queue of nondecreasing cycle times stored as arithmetic runs (start, stride, count). Streams of a
// pipelined loop produce long runs, so a queue of 250,000 token times usually holds a handful of runs:
// memory follows the shape of the schedule, not the number of events.

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace stc::sim {

/// One arithmetic run of times: start, start + stride, ..., count of them.
struct TimeRun {
  int64_t start;
  int64_t stride;
  int64_t count;
};

/// The least i >= 0 with x0 + i * stride > v (stride >= 0), at most `limit`: where a run of times starting at
/// x0 first passes v.
inline int64_t firstAbove(int64_t x0, int64_t stride, int64_t v, int64_t limit) {
  if (x0 > v) return 0;
  if (stride <= 0) return limit;
  return std::min(limit, (v - x0) / stride + 1);
}

/// How many of the run b, b + stride, ..., `count` times of it, are below x.
inline int64_t countBelow(int64_t b, int64_t stride, int64_t count, int64_t x) {
  if (x <= b) return 0;
  if (count <= 1 || stride <= 0) return count;
  return std::min(count, (x - b + stride - 1) / stride);
}

/// The largest of i + 1 - countBelow(b, readStride, reads, x0 + i * writeStride) over i < n (n >= 1), with
/// the writes x0 + i * writeStride at most the run's last read b + (reads - 1) * readStride: how far the
/// writes get ahead of the reads of one run (the tokens a FIFO holds after write i, past what it held). It
/// rises by one a write while the writes are at most b, then moves one way as the count grows at the reads'
/// pace (up where writes are closer than reads, down where further apart), so the largest is at the end of
/// the first part or at an end of the second.
inline int64_t mostAhead(int64_t x0, int64_t writeStride, int64_t n, int64_t b, int64_t readStride,
                         int64_t reads) {
  int64_t rising = firstAbove(x0, writeStride, b, n), most = INT64_MIN;
  for (int64_t i : {rising - 1, rising, n - 1})
    if (i >= 0 && i < n)
      most = std::max(most, i + 1 - countBelow(b, readStride, reads, x0 + i * writeStride));
  return most;
}

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
  const TimeRun* begin() const { return runs_.data() + head_; }
  const TimeRun* end() const { return runs_.data() + runs_.size(); }
  /// Adds delta to every queued time (a periodic jump moves the whole queue in time).
  void shift(int64_t delta) {
    for (size_t i = head_; i < runs_.size(); ++i) runs_[i].start += delta;
  }
  /// As RunLog::repeatLast, on the queued times (n at most as many as are queued).
  void repeatLast(int64_t n, int64_t delta, int64_t repeats);
  /// Appends `repeats` copies of a period's times, copy k shifted by k * delta.
  void appendPeriods(const std::vector<int64_t>& period, int64_t delta, int64_t repeats);
  /// Drops the first n queued times (n at most as many as are queued).
  void popN(int64_t n);
  /// How many times are queued (walks the runs).
  int64_t size() const;

 private:
  std::vector<TimeRun> runs_;
  size_t head_ = 0;
};

/// An append-only log of nondecreasing times, run-length encoded like RunQueue (for token curves).
class RunLog {
 public:
  void push(int64_t t) {
    appendTime(runs_, t);
    ++size_;
  }
  const std::vector<TimeRun>& runs() const { return runs_; }
  /// The runs, moved out: the log is left empty.
  std::vector<TimeRun> take() {
    size_ = 0;
    return std::move(runs_);
  }
  int64_t size() const { return size_; }
  /// Every time, expanded.
  std::vector<int64_t> times() const;
  /// Appends `repeats` copies of the last n times, copy k shifted by k * delta: what the same n events
  /// repeated once per period give. The runs are those n * repeats pushes would make.
  void repeatLast(int64_t n, int64_t delta, int64_t repeats);

 private:
  std::vector<TimeRun> runs_;
  int64_t size_ = 0;
};

/// The last n times of a run list (all of them when it holds fewer).
std::vector<int64_t> lastTimes(const TimeRun* begin, const TimeRun* end, int64_t n);
/// Appends `repeats` copies of a period's times, copy k shifted by k * delta, as pushing them one by one
/// would; returns how many times it appended.
int64_t appendPeriods(std::vector<TimeRun>& runs, const std::vector<int64_t>& period, int64_t delta,
                      int64_t repeats);

/// How many leading times of b from its bSkip-th on are those of a from its skip-th on, each plus delta.
int64_t matchingPrefix(const TimeRun* a, const TimeRun* aEnd, int64_t skip, const TimeRun* b,
                       const TimeRun* bEnd, int64_t delta, int64_t bSkip = 0);

/// Whether the times of b are those of a, each plus delta (the run boundaries may differ).
bool shiftedEqual(const TimeRun* a, const TimeRun* aEnd, const TimeRun* b, const TimeRun* bEnd, int64_t delta);

}  // namespace stc::sim
