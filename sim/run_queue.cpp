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

void RunLog::repeatLast(int64_t n, int64_t delta, int64_t repeats) {
  if (n <= 0 || repeats <= 0) return;
  std::vector<int64_t> period;  // the last n times (a period's events of one FIFO end: few)
  period.reserve(static_cast<size_t>(n));
  for (auto r = runs_.rbegin(); r != runs_.rend() && static_cast<int64_t>(period.size()) < n; ++r)
    for (int64_t k = r->count - 1; k >= 0 && static_cast<int64_t>(period.size()) < n; --k)
      period.push_back(r->start + k * r->stride);
  std::reverse(period.begin(), period.end());
  for (int64_t k = 1; k <= repeats; ++k) {
    // Once the last run holds a whole period and a period continues it, the rest extends that run: what
    // pushing them one by one would do.
    const TimeRun& last = runs_.back();
    if (last.count >= std::max<int64_t>(n, 2) && last.stride * n == delta &&
        period.front() + k * delta == last.start + last.count * last.stride) {
      int64_t more = (repeats - k + 1) * n;
      runs_.back().count += more;
      size_ += more;
      return;
    }
    for (int64_t t : period) push(t + k * delta);
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
