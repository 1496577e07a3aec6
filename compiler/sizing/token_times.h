#pragma once
// A FIFO's measured write or read times as the simulator records them, runs of equally spaced times, and
// the token equations of the sizer (fifo_sizing.cpp, steps 1 and 3) evaluated on the runs themselves. Over
// a piece of token indices where every sequence involved stays within one run, each time is linear in the
// index, so a maximum over the piece sits at its ends (or, for a count of earlier times, where the count
// starts to grow): the cost follows the runs, not the tokens. A chain of 10^9 events, which the
// simulator jumps over in a few runs a FIFO, is sized without expanding 25 million times per FIFO.
#include <cstdint>
#include <vector>

#include "sim/run_queue.h"

namespace stc::sizing {

/// The times of a FIFO's tokens less `base` (its task's start): token k at at(k).
class TokenTimes {
 public:
  TokenTimes(const std::vector<sim::TimeRun>& runs, int64_t base);

  int64_t size() const { return size_; }
  /// The time of token k, 0 <= k < size().
  int64_t at(int64_t k) const;

  // Run i: its first token's index, its time there, its spacing.
  size_t runCount() const { return runs_.size(); }
  int64_t firstIndex(size_t i) const { return firsts_[i]; }
  int64_t endIndex(size_t i) const { return firsts_[i + 1]; }
  int64_t timeAt(size_t i, int64_t k) const { return runs_[i].start + (k - firsts_[i]) * runs_[i].stride; }
  int64_t stride(size_t i) const { return runs_[i].stride; }

 private:
  std::vector<sim::TimeRun> runs_;  // count > 0 each, base taken off, stride 0 where count is 1
  std::vector<int64_t> firsts_;     // runs_.size() + 1 entries, the last size_
  int64_t size_ = 0;
};

/// max_k (w(k) + raw - r(k)) over the tokens of w (INT64_MIN for none): the least start delay of the reader
/// at which every token is readable when it wants it.
int64_t leastDelay(const TokenTimes& w, const TokenTimes& r, int64_t raw);

/// (last - first) / (tokens - 1), the mean spacing; 1 for fewer than two tokens.
double meanSpacing(const TokenTimes& t);

/// The depth at which no write waits: max(1, max_k (k + 1 - #{m : r(m) + delay < w(k)})).
int64_t noStallDepth(const TokenTimes& w, const TokenTimes& r, int64_t delay);

/// Whether depth d keeps every read on time when the writer may stall: write k goes at
/// W_k = max(W_(k-1) + (w(k) - w(k-1)), r(k-d) + delay + 1) (W_0 = w(0) when d > 0) and must be
/// readable (W_k + raw) by r(k) + delay.
bool readsOnTime(const TokenTimes& w, const TokenTimes& r, int64_t delay, int64_t d, int64_t raw);

}  // namespace stc::sizing
