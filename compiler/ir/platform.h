#pragma once
// The platform model: clock, HBM, resources and host costs, read from a config (configs/u55c.yaml is
// compiled in as the default). No platform figure lives in code.

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/diagnostics.h"

namespace stc {

struct HbmConfig {
  int channels = 0;
  int64_t channelBytes = 0;
  int busBits = 0;
  double clockMhz = 0;
  double channelGbps = 0;   ///< bandwidth of one pseudo-channel the model uses, GB/s
  double readLatencyNs = 0;
  double writeLatencyNs = 0;
  int64_t burstBytesMax = 0;
  int outstandingReads = 0;
  int outstandingWrites = 0;
  int groupChannels = 0;    ///< channels reached without crossing the lateral switch
  double lateralLatencyNs = 0;
  double lateralBandwidthFraction = 0;
};

/// Bits of one BRAM_18K and of one URAM block.
inline constexpr int64_t kBram18kBits = 18 * 1024, kUramBits = 288 * 1024;

struct Resources {
  int64_t lut = 0, ff = 0, dsp = 0, bram18k = 0, uram = 0;
  int slrs = 0;
  /// Bits of its BRAM_18K and URAM.
  int64_t memoryBits() const { return bram18k * kBram18kBits + uram * kUramBits; }
  /// Adds o's counts (SLRs aside).
  Resources& operator+=(const Resources& o) {
    lut += o.lut, ff += o.ff, dsp += o.dsp, bram18k += o.bram18k, uram += o.uram;
    return *this;
  }
  /// Every count at most cap's (SLRs aside).
  bool within(const Resources& cap) const {
    return lut <= cap.lut && ff <= cap.ff && dsp <= cap.dsp && bram18k <= cap.bram18k && uram <= cap.uram;
  }
};

struct Platform {
  std::string name;
  std::string shell;
  std::string part;
  double kernelClockMhz = 0;
  HbmConfig hbm;
  Resources resources;
  /// What each SLR leaves to kernels once the shell has its share, SLR0 first (`resources.per_slr`;
  /// without it, the device's totals split evenly).
  std::vector<Resources> slrBudgets;
  bool slrShares = false;  ///< slrBudgets came from `resources.per_slr`
  double invocationOverheadUs = 0;
  /// What the kernels may use in all: the per-SLR shares summed when the platform file gives them (the
  /// shell keeps the rest), else the device's totals. Budgets and `fits` count against it.
  Resources kernelResources() const {
    if (!slrShares) return resources;
    Resources sum;
    for (const Resources& r : slrBudgets) sum += r;
    sum.slrs = resources.slrs;
    return sum;
  }
  SourceLoc loc;
};

/// Parses and checks a platform file: every field present and sensible, or a UserError naming it.
Platform parsePlatform(const std::string& text, const std::string& file);
Platform loadPlatform(const std::string& path);
/// The embedded default (configs/u55c.yaml).
const Platform& defaultPlatform();
/// The text of the embedded default.
const char* defaultPlatformText();
/// The platforms built into stc, by name: u55c (the default) and u280 (configs/NAME.yaml).
const std::vector<std::string>& builtinPlatforms();
/// Whether -p names a built-in platform: a bare name of builtinPlatforms() (a file of that name is
/// ./u280, say).
bool isBuiltinPlatform(const std::string& arg);
/// What -p names: nothing (the default), a built-in platform, or a platform file. A UserError naming
/// the file, and the built-in names, otherwise.
Platform platformFromArg(const std::string& arg);

}  // namespace stc
