// The HBM model on figures derived by hand from configs/u55c.yaml: 250 MHz kernel clock, 14.375 GB/s per
// pseudo-channel (57.5 bytes per kernel cycle), 106.7 ns read latency (26.675 cycles), 1 KiB bursts,
// 4 outstanding reads, 4 channels per switch group, half bandwidth across the lateral switch.
#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/platform.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

constexpr double kMhz = 250;
constexpr int64_t k64MiB = 64LL << 20;

double gbps(int64_t bytes, int64_t cycles) { return static_cast<double>(bytes) / (cycles / (kMhz * 1e6)) / 1e9; }

// DMA reads (name, channel, port, bytes) of 512-bit tokens, each into a consumer of the given ii.
std::string reads(const std::vector<std::tuple<int, int, int64_t>>& dmas, int ii = 1) {
  std::string s = "network: reads\nfifos:\n";
  for (size_t d = 0; d < dmas.size(); ++d) s += "  - {name: w" + std::to_string(d) + ", width: 512}\n";
  s += "tasks:\n";
  for (size_t d = 0; d < dmas.size(); ++d) {
    auto [channel, port, bytes] = dmas[d];
    s += "  - {name: load" + std::to_string(d) + ", kind: dma_read, channel: " + std::to_string(channel) +
         ", port: " + std::to_string(port) + ", bytes: " + std::to_string(bytes) + ", ports: [{fifo: w" +
         std::to_string(d) + ", dir: out}]}\n";
    s += "  - {name: use" + std::to_string(d) + ", phases: [{trip: [" + std::to_string(bytes / 64) +
         "], ii: " + std::to_string(ii) + ", latency: 1, ports: [{fifo: w" + std::to_string(d) + ", dir: in}]}]}\n";
  }
  return s;
}

class Hbm : public ::testing::TestWithParam<bool> {};

TEST_P(Hbm, OneChannelStreamsAtItsBandwidth) {
  sim::SimResult r = simulateText(reads({{0, 0, k64MiB}}), GetParam());
  ASSERT_FALSE(r.deadlock);
  EXPECT_NEAR(gbps(k64MiB, r.cycles), 14.375, 14.375 * 0.02);
  ASSERT_EQ(r.hbm.size(), 1u);
  EXPECT_EQ(r.hbm[0].bytesRead, k64MiB);
  EXPECT_GT(r.hbm[0].busyFraction, 0.99);
}

TEST_P(Hbm, ThirtyTwoChannelsReach460) {
  std::vector<std::tuple<int, int, int64_t>> dmas;
  for (int c = 0; c < 32; ++c) dmas.push_back({c, c, k64MiB});
  sim::SimResult r = simulateText(reads(dmas), GetParam());
  EXPECT_NEAR(gbps(32 * k64MiB, r.cycles), 460, 460 * 0.02);
}

TEST_P(Hbm, TwoDmasShareAChannelEvenly) {
  sim::SimResult r = simulateText(reads({{5, 5, k64MiB / 4}, {5, 5, k64MiB / 4}}), GetParam());
  for (const char* name : {"load0", "load1"})
    EXPECT_NEAR(gbps(k64MiB / 4, task(r, name).end), 14.375 / 2, 14.375 / 2 * 0.02) << name;
}

TEST_P(Hbm, ConsumerBound) {  // 64 bytes every 4 cycles at 250 MHz: 4 GB/s
  sim::SimResult r = simulateText(reads({{0, 0, k64MiB}}, 4), GetParam());
  EXPECT_NEAR(gbps(k64MiB, r.cycles), 4.0, 4.0 * 0.02);
}

TEST_P(Hbm, LateralSwitchHalvesBandwidth) {  // port 8 is in group 2, channel 0 in group 0
  sim::SimResult r = simulateText(reads({{0, 8, k64MiB / 4}}), GetParam());
  EXPECT_NEAR(gbps(k64MiB / 4, r.cycles), 14.375 / 2, 14.375 / 2 * 0.02);
}

// One 64-byte read: requested at cycle 0, its data arrives after the read latency plus its transfer,
// 26.675 + 64 / 57.5 = 27.79 cycles, and crosses into the kernel clock at the next edge, cycle 28. The
// DMA writes it then; the consumer reads it a cycle later (a 1024-bit FIFO is a shift register); the
// run is 1 + 29 = 30 cycles long. Across the lateral switch (+9 ns = 2.25 cycles, 2 x 64 / 57.5 = 2.23
// cycles of transfer): 26.675 + 2.25 + 2.226 = 31.15, so cycle 32 and 34 in all.
TEST_P(Hbm, SmallReadIsLatencyPlusTransfer) {
  sim::SimResult r = simulateText(reads({{0, 0, 64}}), GetParam());
  EXPECT_EQ(task(r, "load0").start, 28);
  EXPECT_EQ(r.cycles, 30);
  sim::SimResult lateral = simulateText(reads({{0, 8, 64}}), GetParam());
  EXPECT_EQ(lateral.cycles, 34);
}

// A producer writes 16 MiB through a dma_write: the channel's bandwidth again, and the task ends with
// the acknowledgement of its last burst, at least the write latency after its last read.
TEST_P(Hbm, WritesStreamAndEndWithTheirAcknowledgement) {
  int64_t bytes = 16LL << 20;
  std::string s = "network: store\nfifos: [{name: y, width: 512}]\ntasks:\n"
                  "  - {name: mac, phases: [{trip: [" + std::to_string(bytes / 64) +
                  "], ii: 1, latency: 3, ports: [{fifo: y, dir: out}]}]}\n"
                  "  - {name: save, kind: dma_write, channel: 2, bytes: " + std::to_string(bytes) +
                  ", ports: [{fifo: y, dir: in}]}\n";
  sim::SimResult r = simulateText(s, GetParam());
  ASSERT_FALSE(r.deadlock);
  EXPECT_NEAR(gbps(bytes, r.cycles), 14.375, 14.375 * 0.02);
  EXPECT_EQ(r.hbm[0].bytesWritten, bytes);
  EXPECT_EQ(task(r, "save").end, r.cycles);
  EXPECT_GE(task(r, "save").end, task(r, "mac").end + 26);
}

// A KV cache whose size follows ctx: `bytes: ctx*64` bound to 128 is the same run as 8192 bytes.
TEST_P(Hbm, SymbolicBytes) {
  std::string text = reads({{0, 0, 8192}});
  std::string symbolic = text;
  symbolic.replace(symbolic.find("bytes: 8192"), 11, "bytes: ctx*64");
  symbolic.replace(symbolic.find("trip: [128]"), 11, "trip: [ctx]");
  sim::SimResult a = simulateText(text, GetParam()), b = simulateText(symbolic, GetParam(), {{"ctx", 128}});
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(b.hbm[0].bytesRead, 8192);
}

// Two groups (kernel invocations) passing 4 KiB through HBM. Group 0: a writes tokens at 1..64, the
// dma_write reads them at 2..65 and requests a 1 KiB burst after each 16th token, at cycles 17, 33, 49
// and 65 (tick 1955 for the first); the channel takes 1024 x 2 ticks per burst, back to back, so the last
// ends at tick 1955 + 4 x 2048 = 10147 and is acknowledged 3068 ticks (106.7 ns) later: tick 13215,
// cycle 115, so group 0 ends at 116. Group 1 starts after the host's 50 us (12500 cycles): its dma_read
// requests at 12616; the first token arrives at 12616 x 115 + 3068 + 128 ticks, cycle 12644, the last at
// 12616 x 115 + 3068 + 8192 = 1462100 ticks, cycle 12714; b reads it at 12715.
TEST_P(Hbm, GroupsRunOneAfterAnother) {
  std::string s =
      "network: two_groups\nfifos: [{name: x, width: 512}, {name: y, width: 512}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [64], ports: [{fifo: x, dir: out}]}]}\n"
      "  - {name: save, kind: dma_write, channel: 0, bytes: 4096, ports: [{fifo: x, dir: in}]}\n"
      "  - {name: load, group: 1, kind: dma_read, channel: 0, bytes: 4096, ports: [{fifo: y, dir: out}]}\n"
      "  - {name: b, group: 1, phases: [{trip: [64], ports: [{fifo: y, dir: in}]}]}\n";
  sim::SimResult r = simulateText(s, GetParam());
  ASSERT_FALSE(r.deadlock);
  EXPECT_EQ(task(r, "save").end, 116);
  EXPECT_EQ(task(r, "load").start, 12644);
  EXPECT_EQ(r.cycles, 12716);
  EXPECT_EQ(r.hbm[0].bytesRead, 4096);
  EXPECT_EQ(r.hbm[0].bytesWritten, 4096);
}

INSTANTIATE_TEST_SUITE_P(Schedulers, Hbm, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "SystemC" : "Direct"; });

TEST(Hbm, FifosStayInsideAGroup) {
  try {
    simulateText("network: n\nfifos: [{name: x, width: 32}]\ntasks:\n"
                 "  - {name: a, phases: [{trip: [4], ports: [{fifo: x, dir: out}]}]}\n"
                 "  - {name: b, group: 1, phases: [{trip: [4], ports: [{fifo: x, dir: in}]}]}\n");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "test.yaml:2:9: error: FIFO 'x' connects task 'a' (group 0) to task 'b' (group 1): groups run one after "
                 "another and exchange data through HBM (dma_write, dma_read)");
  }
}

TEST(Hbm, ChannelOutsideThePlatform) {
  try {
    simulateText(reads({{32, 0, 4096}}));
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "test.yaml:5:5: error: field 'channel': 32 is not an HBM channel of platform 'u55c' (0 to 31)");
  }
}

// Ports sharing channels in random mixes of reads and writes: both schedulers, which run tasks in
// different orders, give the same times, so the channels' service order does not depend on run order.
TEST(Hbm, SchedulersAgreeOnSharedChannels) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 40; ++iter) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    int n = pick(2, 5);
    std::string s = "network: mix\nfifos:\n";
    for (int d = 0; d < n; ++d) s += "  - {name: f" + std::to_string(d) + ", width: " + std::to_string(64 << pick(0, 3)) + "}\n";
    s += "tasks:\n";
    for (int d = 0; d < n; ++d) {
      bool write = pick(0, 2) == 0;
      int64_t bytes = 4096LL * pick(1, 40) + 64 * pick(0, 3);
      std::string fifo = "f" + std::to_string(d);
      s += "  - {name: dma" + std::to_string(d) + ", kind: " + (write ? "dma_write" : "dma_read") +
           ", channel: " + std::to_string(pick(0, 1)) + ", port: " + std::to_string(pick(0, 7)) +
           ", bytes: " + std::to_string(bytes) + ", ports: [{fifo: " + fifo + ", dir: " + (write ? "in" : "out") + "}]}\n";
      s += "  - {name: k" + std::to_string(d) + ", phases: [{trip: [TOKENS" + std::to_string(d) + "], ii: " +
           std::to_string(pick(1, 3)) + ", latency: 2, ports: [{fifo: " + fifo + ", dir: " + (write ? "out" : "in") +
           "}]}]}\n";
      // token count depends on the FIFO width chosen above
      size_t at = s.find("{name: " + fifo + ", width: ");
      int width = std::stoi(s.substr(at + fifo.size() + 16));
      std::string key = "TOKENS" + std::to_string(d);
      s.replace(s.find(key), key.size(), std::to_string(bytes * 8 / width));
    }
    sim::SimResult a = simulateText(s, false), b = simulateText(s, true);
    ASSERT_EQ(a.deadlock, b.deadlock) << s;
    ASSERT_EQ(a.cycles, b.cycles) << s;
    for (size_t t = 0; t < a.tasks.size(); ++t) EXPECT_EQ(a.tasks[t].end, b.tasks[t].end) << s;
  }
}

}  // namespace
}  // namespace stc::testing
