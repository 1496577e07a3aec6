// The sizer's token equations on runs of times (compiler/sizing/token_times.h) against the same
// equations evaluated token by token, as the sizer did before, on random curves cut into runs at random
// (runs of one token, of equal times, runs that could have been one), and in closed form on a curve of 10^9
// tokens that only the runs can hold.
#include "compiler/sizing/token_times.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>

namespace stc::sizing {
namespace {

// Token by token: the definitions of token_times.h.
int64_t leastDelayByToken(const std::vector<int64_t>& w, const std::vector<int64_t>& r, int64_t raw) {
  int64_t d = INT64_MIN;
  for (size_t k = 0; k < w.size(); ++k) d = std::max(d, w[k] + raw - r[k]);
  return d;
}

int64_t noStallDepthByToken(const std::vector<int64_t>& w, const std::vector<int64_t>& r, int64_t delay) {
  int64_t best = 1;
  size_t m = 0;
  for (size_t k = 0; k < w.size(); ++k) {
    while (m < r.size() && r[m] + delay < w[k]) ++m;
    best = std::max(best, static_cast<int64_t>(k + 1) - static_cast<int64_t>(m));
  }
  return best;
}

bool readsOnTimeByToken(const std::vector<int64_t>& w, const std::vector<int64_t>& r, int64_t delay,
                        int64_t d, int64_t raw) {
  int64_t prev = 0;
  for (size_t k = 0; k < w.size(); ++k) {
    int64_t t = k == 0 ? w[0] : prev + (w[k] - w[k - 1]);
    if (static_cast<int64_t>(k) >= d) t = std::max(t, r[k - static_cast<size_t>(d)] + delay + 1);
    if (t + raw > r[k] + delay) return false;
    prev = t;
  }
  return true;
}

// A non-decreasing curve of `tokens` times from `start`, as runs cut at random, and its times less `base`.
struct Curve {
  std::vector<sim::TimeRun> runs;
  std::vector<int64_t> times;
};

Curve randomCurve(std::mt19937& rng, int64_t tokens, int64_t start, int64_t base) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Curve c;
  int64_t t = start;
  while (static_cast<int64_t>(c.times.size()) < tokens) {
    if (pick(0, 9) == 0) c.runs.push_back({t, pick(0, 3), 0});  // an empty run
    int64_t count = std::min(tokens - static_cast<int64_t>(c.times.size()), pick(1, 12));
    int64_t stride = pick(0, 3) == 0 ? 0 : pick(1, 5);
    c.runs.push_back({t, count == 1 ? pick(0, 7) : stride, count});  // one token: its stride says nothing
    for (int64_t k = 0; k < count; ++k) c.times.push_back(t + k * stride - base);
    t += (count - 1) * stride + (pick(0, 4) == 0 ? 0 : pick(1, 9));
    if (count == 1) t = c.times.back() + base + pick(0, 6);
  }
  return c;
}

TEST(TokenTimes, EveryEquationMatchesTheTokenByTokenForm) {
  std::mt19937 rng(20261205);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int checks = 0, onTime = 0, late = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    int64_t tokens = pick(0, 3) == 0 ? pick(0, 3) : pick(4, 80);
    int64_t wBase = pick(0, 20), rBase = pick(0, 20);
    Curve w = randomCurve(rng, tokens, pick(0, 30), wBase);
    Curve r = randomCurve(rng, tokens, pick(0, 60), rBase);
    TokenTimes tw(w.runs, wBase), tr(r.runs, rBase);
    ASSERT_EQ(tw.size(), tokens);
    for (int64_t k = 0; k < tokens; ++k) ASSERT_EQ(tw.at(k), w.times[static_cast<size_t>(k)]);
    for (int64_t raw : {1, 2}) EXPECT_EQ(leastDelay(tw, tr, raw), leastDelayByToken(w.times, r.times, raw));
    double spacing =
        tokens > 1 ? static_cast<double>(w.times.back() - w.times.front()) / static_cast<double>(tokens - 1)
                   : 1.0;
    EXPECT_DOUBLE_EQ(meanSpacing(tw), spacing);
    for (int trial = 0; trial < 6; ++trial) {
      int64_t delay = pick(-40, 80);
      ASSERT_EQ(noStallDepth(tw, tr, delay), noStallDepthByToken(w.times, r.times, delay))
          << "iteration " << iter << ", delay " << delay;
      for (int64_t d = 0; d <= tokens + 1; d += pick(1, 3)) {
        int64_t raw = pick(1, 2);
        bool want = readsOnTimeByToken(w.times, r.times, delay, d, raw);
        ASSERT_EQ(readsOnTime(tw, tr, delay, d, raw), want)
            << "iteration " << iter << ", delay " << delay << ", depth " << d << ", raw " << raw;
        ++checks;
        (want ? onTime : late) += 1;
      }
    }
  }
  // Both answers come up often enough for the comparison to mean something.
  EXPECT_GT(onTime, checks / 10);
  EXPECT_GT(late, checks / 10);
}

// A writer of 10^9 tokens a cycle into a reader of one every 2 cycles, 5 cycles behind: the depth at which
// no write waits is reached at the last write (k = n - 1 at w = n - 1, the reads before it those with
// 2m + 5 + delay < n - 1). With the writer waiting for room, at depth d write k goes at read k - d plus 1,
// 2k - 2d + 6, and must be readable (plus raw) by read k, 2k + 5: depth 1 keeps the pace through a shift
// register (raw 1), not through RAM (raw 2), which needs depth 2; a read that comes before the first
// token is readable (delay -4: at 1, the token at 0 + 2) is late at any depth.
TEST(TokenTimes, ACurveOfABillionTokensInClosedForm) {
  const int64_t n = 1000000000;
  std::vector<sim::TimeRun> w{{0, 1, n}}, r{{5, 2, n}};
  TokenTimes tw(w, 0), tr(r, 0);
  EXPECT_EQ(leastDelay(tw, tr, 1), 1 - 5);  // at k = 0: 0 + 1 - 5
  EXPECT_DOUBLE_EQ(meanSpacing(tr), 2.0);
  for (int64_t delay : {0, 3, 1000}) {
    int64_t reads = std::clamp<int64_t>((n - 1 - 5 - delay + 1) / 2, 0, n);  // #{m : 2m < n - 6 - delay}
    EXPECT_EQ(noStallDepth(tw, tr, delay), n - reads) << "delay " << delay;
  }
  EXPECT_TRUE(readsOnTime(tw, tr, 0, 1, 1));
  EXPECT_FALSE(readsOnTime(tw, tr, 0, 1, 2));
  EXPECT_TRUE(readsOnTime(tw, tr, 0, 2, 2));
  EXPECT_FALSE(readsOnTime(tw, tr, -4, 1000, 2));
  // Split into runs that could have been one: the same answers.
  std::vector<sim::TimeRun> split{{0, 1, 3}, {3, 7, 1}, {4, 1, n - 4}};
  TokenTimes ts(split, 0);
  EXPECT_EQ(noStallDepth(ts, tr, 3), noStallDepth(tw, tr, 3));
  EXPECT_EQ(leastDelay(ts, tr, 2), leastDelay(tw, tr, 2));
}

}  // namespace
}  // namespace stc::sizing
