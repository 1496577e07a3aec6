#include "compiler/ir/platform.h"

#include <gtest/gtest.h>

#include "compiler/ir/yaml_io.h"

namespace stc {
namespace {

TEST(Platform, EmbeddedDefaultIsTheU55C) {
  const Platform& p = defaultPlatform();
  EXPECT_EQ(p.name, "u55c");
  EXPECT_EQ(p.shell, "xilinx_u55c_gen3x16_xdma_3_202210_1");
  EXPECT_DOUBLE_EQ(p.kernelClockMhz, 250);
  EXPECT_EQ(p.hbm.channels, 32);
  EXPECT_EQ(p.hbm.channelBytes, 512LL << 20);
  EXPECT_NEAR(p.hbm.channelGbps * p.hbm.channels, 460, 1e-9);
  EXPECT_EQ(p.resources.dsp, 9024);
  EXPECT_EQ(p.resources.bram18k, 4032);
  EXPECT_EQ(p.resources.uram, 960);
  EXPECT_EQ(p.resources.lut, 1303680);
  EXPECT_EQ(p.resources.ff, 2607360);
  EXPECT_EQ(p.resources.slrs, 3);
  EXPECT_EQ(readTextFile(STC_SOURCE_DIR "/configs/u55c.yaml"), defaultPlatformText());
}

TEST(Platform, U280) {
  Platform p = loadPlatform(STC_SOURCE_DIR "/configs/u280.yaml");
  EXPECT_EQ(p.hbm.channelBytes, 256LL << 20);
}

std::string errorOf(const std::string& from, const std::string& to) {
  std::string text = defaultPlatformText();
  size_t at = text.find(from);
  if (at == std::string::npos) return "pattern not found: " + from;
  text.replace(at, from.size(), to);
  try {
    parsePlatform(text, "bad.yaml");
  } catch (const UserError& e) {
    std::string m = e.what();
    return m.substr(m.find("error:"));
  }
  return "no error";
}

TEST(Platform, BadFieldsAreNamed) {
  EXPECT_EQ(errorOf("kernel_clock_mhz: 250", "kernel_clock_mhz: -5"), "error: field 'kernel_clock_mhz': must be positive, got -5");
  EXPECT_EQ(errorOf("kernel_clock_mhz: 250", "kernel_clock: 250"),
            "error: field 'kernel_clock': unknown field of a platform (known: platform, shell, part, kernel_clock_mhz, hbm, "
            "resources, host)");
  EXPECT_EQ(errorOf("channel_gbps: 14.375", "channel_gbps: 99"),
            "error: field 'channel_gbps': exceeds what bus_bits at clock_mhz can carry (14.400000 GB/s)");
  EXPECT_EQ(errorOf("dsp: 9024", "dsp: lots"), "error: field 'dsp': expected an integer, got 'lots'");
  const char* burst =
      "error: field 'burst_bytes_max': must be a whole number of 64-byte words (the kernels' 512-bit ports) "
      "and at "
      "most 4096 (an AXI burst never crosses a 4 KiB boundary)";
  EXPECT_EQ(errorOf("burst_bytes_max: 1024", "burst_bytes_max: 8192"), burst);
  EXPECT_EQ(errorOf("burst_bytes_max: 1024", "burst_bytes_max: 96"), burst);
  EXPECT_EQ(errorOf("    - {lut: 434560, ff: 869120, dsp: 3008, bram18k: 1344, uram: 320}\n", ""),
            "error: field 'per_slr': must list one entry per SLR (3)");
  EXPECT_EQ(errorOf("{lut: 434560, ff: 869120, dsp: 3008, bram18k: 1344, uram: 320}",
                    "{lut: 434560, ff: 869120, dsp: 3300, bram18k: 1344, uram: 320}"),
            "error: field 'per_slr': adds up to more than the device's totals");
  EXPECT_EQ(errorOf("{lut: 434560, ff: 869120, dsp: 3008, bram18k: 1344, uram: 320}",
                    "{lut: 434560, ff: 869120, dsp: 3008}"),
            "error: field 'bram18k': missing in per_slr");
}

// Each SLR's share for kernels: the U55C's from its file (SLR0 less the shell's static region and HBM
// interconnect); a platform without per_slr splits the device's totals evenly, and its kernels may use them
// all.
TEST(Platform, SlrBudgets) {
  const Platform& p = defaultPlatform();
  ASSERT_EQ(p.slrBudgets.size(), 3u);
  EXPECT_EQ(p.slrBudgets[0].dsp, 2736);
  EXPECT_EQ(p.slrBudgets[0].lut, 289000);
  EXPECT_EQ(p.slrBudgets[2].dsp, 3008);
  std::string text = defaultPlatformText();
  text.erase(text.find("  per_slr:"), text.find("\n# Host side.") - text.find("  per_slr:"));
  Platform even = parsePlatform(text, "even.yaml");
  ASSERT_EQ(even.slrBudgets.size(), 3u);
  for (const Resources& r : even.slrBudgets) {
    EXPECT_EQ(r.dsp, 3008);
    EXPECT_EQ(r.lut, 434560);
    EXPECT_EQ(r.bram18k, 1344);
    EXPECT_EQ(r.uram, 320);
  }
  // What kernels may use in all, which budgets and `fits` count against: the shares summed (2736 + 3008 +
  // 3008 DSPs; 1000 + 1320 + 1344 BRAM_18K; 288 + 320 + 320 URAM), or the totals without per_slr.
  Resources kernels = p.kernelResources();
  EXPECT_EQ(kernels.dsp, 8752);
  EXPECT_EQ(kernels.bram18k, 3664);
  EXPECT_EQ(kernels.uram, 928);
  EXPECT_EQ(kernels.lut, 289000 + 420000 + 434560);
  EXPECT_EQ(even.kernelResources().dsp, 9024);
  EXPECT_EQ(even.kernelResources().bram18k, 4032);
}

}  // namespace
}  // namespace stc
