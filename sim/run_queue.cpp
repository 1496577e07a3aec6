// Run-length encoded time lists: expansion, periodic repetition and comparison under a shift.
#include "sim/run_queue.h"

#include <algorithm>

namespace stc::sim {

std::vector<int64_t> RunLog::times() const {
  std::vector<int64_t> out;
  for (const TimeRun& r : runs_)
    for (int64_t k = 0; k < r.count; ++k) out.push_back(r.start + k * r.stride);
  return out;
}

std::vector<int64_t> lastTimes(const TimeRun* begin, const TimeRun* end, int64_t n) {
  std::vector<int64_t> out;  // a period's times at one FIFO end: few
  out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (const TimeRun* r = end; r != begin && static_cast<int64_t>(out.size()) < n;) {
    --r;
    for (int64_t k = r->count - 1; k >= 0 && static_cast<int64_t>(out.size()) < n; --k)
      out.push_back(r->start + k * r->stride);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

int64_t appendPeriods(std::vector<TimeRun>& runs, const std::vector<int64_t>& period, int64_t delta,
                      int64_t repeats) {
  int64_t n = static_cast<int64_t>(period.size());
  if (n == 0 || repeats <= 0) return 0;
  for (int64_t k = 1; k <= repeats; ++k) {
    // Once the last run holds a whole period and a period continues it, the rest extends that run: what
    // pushing them one by one would do.
    if (!runs.empty()) {
      const TimeRun& last = runs.back();
      if (last.count >= std::max<int64_t>(n, 2) && last.stride * n == delta &&
          period.front() + k * delta == last.start + last.count * last.stride) {
        runs.back().count += (repeats - k + 1) * n;
        break;
      }
    }
    for (int64_t t : period) appendTime(runs, t + k * delta);
  }
  return repeats * n;
}

void RunLog::repeatLast(int64_t n, int64_t delta, int64_t repeats) {
  if (n > 0 && repeats > 0)
    size_ += appendPeriods(runs_, lastTimes(runs_.data(), runs_.data() + runs_.size(), n), delta, repeats);
}

void RunQueue::repeatLast(int64_t n, int64_t delta, int64_t repeats) {
  if (n > 0 && repeats > 0) stc::sim::appendPeriods(runs_, lastTimes(begin(), end(), n), delta, repeats);
}

void RunQueue::appendPeriods(const std::vector<int64_t>& period, int64_t delta, int64_t repeats) {
  stc::sim::appendPeriods(runs_, period, delta, repeats);
}

void RunQueue::popN(int64_t n) {
  while (n > 0) {
    TimeRun& r = runs_[head_];
    int64_t k = std::min(n, r.count);
    r.start += k * r.stride;
    r.count -= k;
    n -= k;
    if (r.count == 0) ++head_;
  }
  if (head_ == runs_.size()) {
    runs_.clear();
    head_ = 0;
  } else if (head_ >= 64 && head_ * 2 >= runs_.size()) {
    runs_.erase(runs_.begin(), runs_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

int64_t RunQueue::size() const {
  int64_t n = 0;
  for (size_t i = head_; i < runs_.size(); ++i) n += runs_[i].count;
  return n;
}

namespace {
// Moves a run pointer past `skip` times: the run holding the next, and how many of it are passed.
void skipTimes(const TimeRun*& r, const TimeRun* end, int64_t skip, int64_t& within) {
  for (; r != end && skip > 0; ++r) {
    if (skip < r->count) {
      within = skip;
      return;
    }
    skip -= r->count;
  }
}
}  // namespace

int64_t matchingPrefix(const TimeRun* a, const TimeRun* aEnd, int64_t skip, const TimeRun* b,
                       const TimeRun* bEnd, int64_t delta, int64_t bSkip) {
  int64_t ai = 0, bi = 0, matched = 0;  // times of the current runs passed
  skipTimes(a, aEnd, skip, ai);
  skipTimes(b, bEnd, bSkip, bi);
  for (;;) {
    while (a != aEnd && ai == a->count) a++, ai = 0;
    while (b != bEnd && bi == b->count) b++, bi = 0;
    if (a == aEnd || b == bEnd || a->start + ai * a->stride + delta != b->start + bi * b->stride)
      return matched;
    int64_t n = std::min(a->count - ai, b->count - bi);
    if (n > 1 && a->stride != b->stride) n = 1;  // they part after this time
    matched += n;
    ai += n;
    bi += n;
  }
}

bool shiftedEqual(const TimeRun* a, const TimeRun* aEnd, const TimeRun* b, const TimeRun* bEnd, int64_t delta) {
  int64_t ai = 0, bi = 0;  // times of the current runs already matched
  for (;;) {
    while (a != aEnd && ai == a->count) a++, ai = 0;
    while (b != bEnd && bi == b->count) b++, bi = 0;
    if (a == aEnd || b == bEnd) return a == aEnd && b == bEnd;
    if (a->start + ai * a->stride + delta != b->start + bi * b->stride) return false;
    int64_t n = std::min(a->count - ai, b->count - bi);
    if (n > 1 && a->stride != b->stride) return false;
    ai += n;
    bi += n;
  }
}

}  // namespace stc::sim
