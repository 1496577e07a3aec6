#pragma once
// The HBM model: pseudo-channels that serve the burst requests of DMA tasks.
//
// Time inside the model is counted in ticks, chosen so that both a kernel cycle and the transfer of one
// byte on a channel are whole numbers of ticks (at 250 MHz and 14.375 GB/s: 57.5 bytes per cycle, so a
// cycle is 115 ticks and a byte 2). Data crosses into the kernel clock domain at the first kernel cycle
// boundary at or after it arrives (ceil), so no data is seen before it exists.
//
// A channel serves one burst at a time, in order of request time; requests of equal time go round-robin
// over the channel's ports. Serving a burst of b bytes occupies the channel for b * ticksPerByte ticks
// (twice as long for a port in another switch group when the lateral fraction is 0.5) starting when both
// the request and the channel are there; read data then arrives `readLatency` later, byte by byte at the
// channel's rate; a write is acknowledged `writeLatency` after its last byte went out.

#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/ir/platform.h"

namespace stc::sim {

/// The HBM figures of a platform, converted to ticks.
struct HbmTiming {
  int channels = 0;
  int groupChannels = 1;
  int64_t ticksPerCycle = 1;
  int64_t ticksPerByte = 1;
  int64_t lateralTicksPerByte = 1;
  int64_t readLatencyTicks = 0;
  int64_t writeLatencyTicks = 0;
  int64_t lateralLatencyTicks = 0;
  int64_t burstBytes = 4096;
  int outstandingReads = 1;
  int outstandingWrites = 1;

  /// Derives the tick ratios from the platform's channel bandwidth and kernel clock.
  static HbmTiming fromPlatform(const Platform& platform);
  /// The first kernel cycle at or after tick t.
  int64_t cycleAtOrAfter(int64_t tick) const { return (tick + ticksPerCycle - 1) / ticksPerCycle; }
  /// Whether a port and a channel lie in different switch groups.
  bool lateral(int port, int channel) const { return port / groupChannels != channel / groupChannels; }
};

/// One burst request of a DMA port.
struct BurstRequest {
  int64_t tick;    ///< when the request was issued
  int64_t burst;   ///< index within its DMA
  int64_t bytes;
};

/// Per-channel figures of a run.
struct ChannelStats {
  int channel = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  int64_t busyTicks = 0;
  double busyFraction = 0;  ///< busy ticks over the run's length
  /// When curves are recorded: the spans [begin, end) in which it served bursts, in kernel cycles
  /// (fractional: a burst need not start or end on a cycle edge), back-to-back bursts joined.
  std::vector<std::pair<double, double>> busySpans;
};

}  // namespace stc::sim
