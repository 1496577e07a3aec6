// HBM timing: the platform's figures as whole ticks (see hbm.h).
#include "sim/hbm.h"

#include <cmath>
#include <numeric>

namespace stc::sim {

HbmTiming HbmTiming::fromPlatform(const Platform& platform) {
  const HbmConfig& h = platform.hbm;
  HbmTiming t;
  t.channels = h.channels;
  t.groupChannels = h.groupChannels;
  // bytes per kernel cycle = GB/s * 1000 / MHz; kept as a reduced fraction ticksPerCycle / ticksPerByte.
  int64_t bytesPerMicro = std::llround(h.channelGbps * 1e6);   // bytes per microsecond * 1000
  int64_t cyclesPerMicro = std::llround(platform.kernelClockMhz * 1e3);
  int64_t g = std::gcd(bytesPerMicro, cyclesPerMicro);
  t.ticksPerCycle = bytesPerMicro / g;
  t.ticksPerByte = cyclesPerMicro / g;
  t.lateralTicksPerByte =
      static_cast<int64_t>(std::ceil(static_cast<double>(t.ticksPerByte) / h.lateralBandwidthFraction - 1e-9));
  auto nsToTicks = [&](double ns) {
    return std::llround(ns * platform.kernelClockMhz / 1000.0 * static_cast<double>(t.ticksPerCycle));
  };
  t.readLatencyTicks = nsToTicks(h.readLatencyNs);
  t.writeLatencyTicks = nsToTicks(h.writeLatencyNs);
  t.lateralLatencyTicks = nsToTicks(h.lateralLatencyNs);
  t.burstBytes = h.burstBytesMax;
  t.outstandingReads = h.outstandingReads;
  t.outstandingWrites = h.outstandingWrites;
  return t;
}

}  // namespace stc::sim
