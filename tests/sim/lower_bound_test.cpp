// sim::lowerBoundCycles: by hand on small networks (task schedules, groups and the invocation gap, the
// HBM's bandwidth), and never above a run's cycles on random networks at random depths, DMAs included.
#include <gtest/gtest.h>

#include <random>

#include "random_networks.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

int64_t boundOf(const std::string& text) {
  return sim::lowerBoundCycles(sim::compileProgram(parseNetwork(text, "test.yaml"), {}));
}

// Group 0: a writes 50 tokens at ii 2, latency 3 (last write at local 49*2 + 3 = 101, so 102 cycles) and b
// reads them at ii 1 (local 0 to 49): b reads the last token a cycle after it is written, at 102 at the
// earliest, 102 + 1 - 49 = 53 cycles late, so b ends at 50 + 53 = 103. Group 1: c, trip [10, 4] at ii 3,
// latency 7: 39*3 + 7 + 1 = 125, then a second phase of 5 at ii 1 and the default latency 1 (its last
// write at local 125 + 4 + 1 = 130: 131); d reads h's last token at local 14, so 130 + 1 - 14 = 117 late:
// 15 + 117 = 132. The gap between the groups is the platform's invocation overhead in cycles.
TEST(LowerBound, TaskSchedulesAndGroupsByHand) {
  std::string text =
      "network: n\nfifos: [{name: f, width: 32}, {name: g, width: 32}, {name: h, width: 32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [50], ii: 2, latency: 3, ports: [{fifo: f, dir: out}]}]}\n"
      "  - {name: b, phases: [{trip: [50], ports: [{fifo: f, dir: in}]}]}\n"
      "  - {name: c, group: 1, phases: [{trip: [10, 4], ii: 3, latency: 7, ports: [{fifo: g, level: 0, dir: out}]},\n"
      "                                {trip: [5], ports: [{fifo: h, dir: out}]}]}\n"
      "  - {name: d, group: 1, phases: [{trip: [10], ports: [{fifo: g, dir: in}]}, {trip: [5], ports: [{fifo: h, dir: in}]}]}\n";
  const Platform& p = defaultPlatform();
  int64_t gap = std::llround(p.invocationOverheadUs * p.kernelClockMhz);
  EXPECT_EQ(boundOf(text), 103 + gap + 132);
  for (bool systemc : {false, true}) EXPECT_GE(simulateText(text, systemc).cycles, boundOf(text));
}

// A group without events ends at 0 in the engine: after it, group 2 opens one gap after cycle 0, and the
// run lasts to the latest end (group 0's 103 cycles, as above, or group 2's gap + 51: d reads each token
// of c's, written at the local cycle d reads it, a cycle late).
TEST(LowerBound, AGroupWithoutEventsEndsAtZero) {
  std::string groups01 =
      "network: n\nfifos: [{name: f, width: 32}, {name: g, width: 32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [50], ii: 2, latency: 3, ports: [{fifo: f, dir: out}]}]}\n"
      "  - {name: b, phases: [{trip: [50], ports: [{fifo: f, dir: in}]}]}\n"
      "  - {name: idle, group: 1, phases: [{trip: [1000], ports: []}]}\n";
  std::string text = groups01 +
                     "  - {name: c, group: 2, phases: [{trip: [50], latency: 0, ports: [{fifo: g, dir: out}]}]}\n"
                     "  - {name: d, group: 2, phases: [{trip: [50], ports: [{fifo: g, dir: in}]}]}\n";
  const Platform& p = defaultPlatform();
  int64_t gap = std::llround(p.invocationOverheadUs * p.kernelClockMhz);
  std::string trailing = groups01;
  trailing.replace(trailing.find(", {name: g, width: 32}"), std::string(", {name: g, width: 32}").size(), "");
  EXPECT_EQ(boundOf(trailing), 103);
  EXPECT_EQ(simulateText(trailing).cycles, 103);
  EXPECT_EQ(boundOf(text), std::max<int64_t>(103, gap + 51));
  EXPECT_GE(simulateText(text).cycles, boundOf(text));
}

// 33 DMA reads of 1,000 512-bit tokens each: a token a cycle each, but the 32 channels move 57.5 bytes a
// cycle each (a cycle 115 ticks, a byte 2, sim/hbm.h), so the busiest moves at least 33 * 64,000 / 32
// bytes: ceil(66,000 * 2 / 115) = 1,148 cycles, more than the 1,000 of any task's schedule.
TEST(LowerBound, TheBusiestChannelMovesAtLeastTheMean) {
  std::string fifos, tasks;
  for (int k = 0; k < 33; ++k) {
    std::string f = "s" + std::to_string(k);
    fifos += "  - {name: " + f + ", width: 512}\n";
    tasks += "  - {name: d" + std::to_string(k) + ", kind: dma_read, channel: " + std::to_string(k % 32) +
             ", bytes: 64000, ports: [{fifo: " + f + ", dir: out}]}\n";
    tasks += "  - {name: c" + std::to_string(k) + ", phases: [{trip: [1000], ports: [{fifo: " + f + ", dir: in}]}]}\n";
  }
  std::string text = "network: dmas\nfifos:\n" + fifos + "tasks:\n" + tasks;
  EXPECT_EQ(boundOf(text), 1148);
  EXPECT_GE(simulateText(text).cycles, 1148);
}

// One DMA read of 1,000 512-bit tokens into a consumer of ii 1: token k reaches the FIFO no sooner than the
// read latency and k + 1 tokens' bytes through the channel (2 ticks a byte, 115 a cycle), so the last
// comes at ready = ceil((latency + 64,000 * 2) / 115) at the earliest, is read a cycle later, and the run
// lasts a cycle more: ready + 1, where the channel's mean alone gave 1,114 and the schedule 1,000.
TEST(LowerBound, ADmaReadIsNoFasterThanItsChannel) {
  std::string text =
      "network: n\nfifos: [{name: s, width: 512}]\ntasks:\n"
      "  - {name: d, kind: dma_read, channel: 0, bytes: 64000, ports: [{fifo: s, dir: out}]}\n"
      "  - {name: c, phases: [{trip: [1000], ports: [{fifo: s, dir: in}]}]}\n";
  sim::HbmTiming hbm = sim::HbmTiming::fromPlatform(defaultPlatform());
  ASSERT_EQ(hbm.ticksPerByte, 2);
  ASSERT_EQ(hbm.ticksPerCycle, 115);
  int64_t ready = (hbm.readLatencyTicks + 64000 * 2 + 114) / 115;
  EXPECT_GT(ready, 1114);
  EXPECT_EQ(boundOf(text), ready + 1);
  EXPECT_GE(simulateText(text).cycles, ready + 1);
}

// Random networks (deadlocking ones aside) at their own depths and at random ones: the bound holds.
TEST(LowerBound, NeverAboveARunsCycles) {
  std::mt19937 rng(20261128);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int runs = 0;
  for (int iter = 0; iter < 300; ++iter) {
    std::string text = randomNetwork(rng, 2 * pick(4, 60), iter % 2 == 0);
    sim::Program prog = sim::compileProgram(parseNetwork(text, "random.yaml"), {});
    int64_t bound = sim::lowerBoundCycles(prog);
    for (int k = 0; k < 3; ++k) {
      sim::RunConfig config;
      if (k > 0)
        for (size_t f = 0; f < prog.fifos.size(); ++f) config.depths.push_back(pick(1, 9));
      sim::SimResult r = sim::runDirect(prog, config);
      if (r.deadlock) continue;
      ++runs;
      ASSERT_GE(r.cycles, bound) << text;
    }
  }
  EXPECT_GT(runs, 300);
  // DMA reads and writes, several to a channel, some in a second group.
  for (int iter = 0; iter < 60; ++iter) {
    std::string fifos, tasks;
    for (int k = 0, streams = pick(1, 40); k < streams; ++k) {
      std::string f = "s" + std::to_string(k), id = std::to_string(k);
      int tokenBytes = 8 << pick(0, 3);
      int tokens = pick(1, 3000);
      std::string group = pick(0, 2) == 0 ? "group: 1, " : "";
      fifos += "  - {name: " + f + ", width: " + std::to_string(tokenBytes * 8) + ", depth: " + std::to_string(pick(1, 64)) + "}\n";
      std::string dma = group + "channel: " + std::to_string(pick(0, 3)) + ", bytes: " + std::to_string(tokens * tokenBytes);
      std::string loop = group + "phases: [{trip: [" + std::to_string(tokens) + "], ii: " + std::to_string(pick(1, 3)) +
                         ", latency: " + std::to_string(pick(1, 6)) + ", ports: [{fifo: " + f;
      if (k % 3 == 2) {
        tasks += "  - {name: p" + id + ", " + loop + ", dir: out}]}]}\n";
        tasks += "  - {name: d" + id + ", kind: dma_write, " + dma + ", ports: [{fifo: " + f + ", dir: in}]}\n";
      } else {
        tasks += "  - {name: d" + id + ", kind: dma_read, " + dma + ", ports: [{fifo: " + f + ", dir: out}]}\n";
        tasks += "  - {name: c" + id + ", " + loop + ", dir: in}]}]}\n";
      }
    }
    std::string text = "network: dmas\nfifos:\n" + fifos + "tasks:\n" + tasks;
    sim::SimResult r = simulateText(text);
    ASSERT_FALSE(r.deadlock) << text;
    ASSERT_GE(r.cycles, boundOf(text)) << text;
  }
}

}  // namespace
}  // namespace stc::testing
