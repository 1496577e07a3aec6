#include "compiler/sizing/token_times.h"

#include <algorithm>
#include <climits>

namespace stc::sizing {

using sim::firstAbove;
using sim::mostAhead;

TokenTimes::TokenTimes(const std::vector<sim::TimeRun>& runs, int64_t base) {
  firsts_.push_back(0);
  for (const sim::TimeRun& r : runs) {
    if (r.count <= 0) continue;
    runs_.push_back({r.start - base, r.count > 1 ? r.stride : 0, r.count});
    size_ += r.count;
    firsts_.push_back(size_);
  }
}

int64_t TokenTimes::at(int64_t k) const {
  size_t i = static_cast<size_t>(std::upper_bound(firsts_.begin(), firsts_.end(), k) - firsts_.begin()) - 1;
  return timeAt(i, k);
}

namespace {

// A sequence read at index k - shift, and the run that holds it at the piece being visited.
struct Cursor {
  const TokenTimes* times;
  int64_t shift;
  size_t run = 0;
  int64_t operator()(int64_t k) const { return times->timeAt(run, k - shift); }
};

// Calls piece(k0, k1) for consecutive pieces covering [lo, hi) on which every cursor stays within one run
// (each cursor's index k - shift within its sequence over [lo, hi)).
template <class Piece>
void forPieces(std::vector<Cursor>& cursors, int64_t lo, int64_t hi, Piece piece) {
  for (int64_t k = lo; k < hi;) {
    int64_t end = hi;
    for (Cursor& c : cursors) {
      while (c.times->endIndex(c.run) <= k - c.shift) ++c.run;
      end = std::min(end, c.times->endIndex(c.run) + c.shift);
    }
    piece(k, end);
    k = end;
  }
}

}  // namespace

int64_t leastDelay(const TokenTimes& w, const TokenTimes& r, int64_t raw) {
  int64_t most = INT64_MIN;
  std::vector<Cursor> c{{&w, 0}, {&r, 0}};
  forPieces(c, 0, std::min(w.size(), r.size()), [&](int64_t k0, int64_t k1) {
    for (int64_t k : {k0, k1 - 1}) most = std::max(most, c[0](k) + raw - c[1](k));  // linear: its ends
  });
  return most;
}

double meanSpacing(const TokenTimes& t) {
  if (t.size() < 2) return 1.0;
  return static_cast<double>(t.at(t.size() - 1) - t.at(0)) / static_cast<double>(t.size() - 1);
}

int64_t noStallDepth(const TokenTimes& w, const TokenTimes& r, int64_t delay) {
  // f(k) = k + 1 - N(w(k) - delay), N(x) = #{m : r(m) < x} (r never decreases). x moves through the
  // regions of r's runs, run j's (last(j - 1), last(j)]: there N is the tokens of the runs before j and
  // those of run j below x, so over a run of w within one region f is k + 1 less those before j less
  // sim::mostAhead's count, whose largest value it finds; past r's last run, at the run's end.
  int64_t best = 1;
  size_t j = 0;        // the region of x
  int64_t before = 0;  // r's tokens in the runs before j
  const size_t runs = r.runCount();
  auto lastOf = [&](size_t i) { return r.timeAt(i, r.endIndex(i) - 1); };
  for (size_t i = 0; i < w.runCount(); ++i) {
    const int64_t stride = w.stride(i);
    for (int64_t k = w.firstIndex(i), runEnd = w.endIndex(i); k < runEnd;) {
      const int64_t x0 = w.timeAt(i, k) - delay;
      while (j < runs && lastOf(j) < x0) before += r.endIndex(j) - r.firstIndex(j), ++j;
      int64_t end = runEnd, ahead = runEnd - k;  // [k, end): x within region j
      if (j < runs) {
        end = k + firstAbove(x0, stride, lastOf(j), runEnd - k);
        ahead = mostAhead(x0, stride, end - k, r.timeAt(j, r.firstIndex(j)), r.stride(j),
                          r.endIndex(j) - r.firstIndex(j));
      }
      best = std::max(best, k + ahead - before);
      k = end;
    }
  }
  return best;
}

bool readsOnTime(const TokenTimes& w, const TokenTimes& r, int64_t delay, int64_t d, int64_t raw) {
  // Write k goes at w(k) + L(k), L(k) = max(0, max over d <= j <= k of lag(j)), lag(j) = r(j - d) + delay +
  // 1 - w(j), and must leave slack(k) = r(k) + delay - raw - w(k) >= L(k). Both are linear over a piece;
  // the running maximum of lag before it is carried.
  const int64_t n = std::min(w.size(), r.size()), from = std::clamp<int64_t>(d, 0, n);
  bool ok = true;
  std::vector<Cursor> c{{&w, 0}, {&r, 0}};
  auto slack = [&](int64_t k) { return c[1](k) + delay - raw - c[0](k); };
  forPieces(c, 0, from, [&](int64_t k0, int64_t k1) { ok = ok && slack(k0) >= 0 && slack(k1 - 1) >= 0; });
  if (!ok) return false;
  c.push_back({&r, d});
  int64_t lagBefore = INT64_MIN;
  forPieces(c, from, n, [&](int64_t k0, int64_t k1) {
    if (!ok) return;
    auto lag = [&](int64_t k) { return c[2](k) + delay + 1 - c[0](k); };
    int64_t least = std::min(slack(k0), slack(k1 - 1));
    ok = least >= 0 && lagBefore <= least;
    if (lag(k1 - 1) >= lag(k0))  // L(k) = max(before, lag(k)): lag - slack is linear, its ends
      ok = ok && lag(k0) <= slack(k0) && lag(k1 - 1) <= slack(k1 - 1);
    else  // L(k) = max(before, lag(k0))
      ok = ok && lag(k0) <= least;
    lagBefore = std::max({lagBefore, lag(k0), lag(k1 - 1)});
  });
  return ok;
}

}  // namespace stc::sizing
