// FIFO sizing: the guarantees (no deadlock, within 1% of the unbounded latency, never more bits than
// the maximum-occupancy baseline) on every network, and the expected shape of the answer on each.
#include "compiler/sizing/fifo_sizing.h"

#include <gtest/gtest.h>

#include "compiler/ir/yaml_io.h"
#include "compiler/sizing/lp_solver.h"
#include "sim/engine.h"
#include "sim/random_networks.h"
#include "sim/reference.h"

namespace stc::sizing {
namespace {

struct Sized {
  SizingResult result;
  Network network;
};

Sized size(const std::string& text, Strategy strategy = Strategy::kNormal, const Bindings& b = {}) {
  Network net = parseNetwork(text, "test.yaml");
  Sized s;
  SizingOptions options;
  options.strategy = strategy;
  options.bindings = b;
  s.result = sizeFifos(net, options, s.network);
  return s;
}

int64_t depthOf(const Sized& s, const std::string& fifo) {
  return s.network.fifos[static_cast<size_t>(s.network.findFifo(fifo))].depth;
}

// The guarantees, checked by an independent simulation of the sized network. The conservative strategy
// may spend more bits than the maximum-occupancy baseline (it sizes for the slowest pace), never more than
// every token.
void expectGuarantees(const Sized& s, const Bindings& b = {}, Strategy strategy = Strategy::kNormal) {
  ASSERT_FALSE(s.result.trueDeadlock);
  sim::SimResult again = sim::runDirect(sim::compileProgram(s.network, b), {});
  EXPECT_FALSE(again.deadlock);
  EXPECT_EQ(again.cycles, s.result.cyclesSized);
  EXPECT_LE(s.result.cyclesSized * 100, s.result.cyclesUnbounded * 101);
  EXPECT_LE(s.result.totalBits,
            strategy == Strategy::kNormal ? s.result.baselineMaxOccupancyBits : s.result.baselineFullBits);
  EXPECT_LE(s.result.baselineMaxOccupancyBits, s.result.baselineFullBits);
}

std::string file(const char* name) { return readTextFile(std::string(STC_SOURCE_DIR "/models/networks/") + name); }

TEST(Lp, DifferenceProblemOptimum) {
  // x1 - x0 >= 3, x2 - x1 >= 4, x2 - x0 >= 2 (cost 5): the short edge must span 7.
  DifferenceProblem p{3, {{0, 1, 3, 1}, {1, 2, 4, 1}, {0, 2, 2, 5}}};
  EXPECT_TRUE(p.check().empty());
  DifferenceSolution s = solveDifferenceProblem(p);
  ASSERT_TRUE(s.optimal);
  EXPECT_TRUE(p.verify(s.x));
  EXPECT_NEAR(s.x[2] - s.x[0], 7, 1e-9);
  EXPECT_NEAR(s.objective, 3 + 4 + 5 * 7, 1e-9);
  EXPECT_FALSE(DifferenceProblem({2, {{0, 5, 1, 1}}}).check().empty());
  // A positive cycle is infeasible.
  EXPECT_FALSE(solveDifferenceProblem({2, {{0, 1, 1, 1}, {1, 0, 1, 1}}}).optimal);
}

TEST(Lp, ThousandFifosSolve) {
  DifferenceProblem p;
  p.variables = 1001;
  for (int k = 0; k < 1000; ++k) p.edges.push_back({k, k + 1, static_cast<double>(k % 7), 1.0 + k % 3});
  for (int k = 0; k + 10 < 1000; k += 10) p.edges.push_back({k, k + 10, 1, 2});
  DifferenceSolution s = solveDifferenceProblem(p);
  ASSERT_TRUE(s.optimal);
  EXPECT_TRUE(p.verify(s.x));
}

// A balanced ii-1 chain: every FIFO at the minimal depth of 2 (depth 1 stalls every other cycle).
TEST(Sizing, ChainIsMinimal) {
  Sized s = size(file("chain.yaml"));
  expectGuarantees(s);
  for (const auto& f : s.network.fifos) EXPECT_EQ(f.depth, 2) << f.name;
  EXPECT_EQ(s.result.rounds, 1);
}

// fork_join: only the short path a_c grows, to at least the 64 tokens below which it deadlocks.
TEST(Sizing, ForkJoinGrowsOnlyTheShortPath) {
  Sized s = size(file("fork_join.yaml"));
  expectGuarantees(s);
  EXPECT_EQ(depthOf(s, "a_b"), 2);
  EXPECT_EQ(depthOf(s, "b_c"), 2);
  EXPECT_GE(depthOf(s, "a_c"), 64);
  EXPECT_LE(depthOf(s, "a_c"), 64);
}

// A producer far ahead of a slow consumer (ii 1 into ii 4, 4096 tokens): the unbounded run piles up
// three quarters of the stream; a stalled producer costs nothing, so a few tokens suffice.
TEST(Sizing, ProducerFarAheadNeedsLittle) {
  Sized s = size(
      "network: ahead\nfifos: [{name: w, width: 512}]\ntasks:\n"
      "  - {name: load, phases: [{trip: [4096], ii: 1, latency: 2, ports: [{fifo: w, dir: out}]}]}\n"
      "  - {name: mac, phases: [{trip: [4096], ii: 4, latency: 5, ports: [{fifo: w, dir: in}]}]}\n");
  expectGuarantees(s);
  EXPECT_GT(s.result.fifos[0].maxOccupancy, 3000);
  EXPECT_LE(depthOf(s, "w"), 2);
  EXPECT_EQ(s.result.cyclesSized, s.result.cyclesUnbounded - 1);  // a shift register reads a cycle sooner
}

// The same at 10^8 tokens, which the simulator jumps over and the sizer takes on the runs of times it
// recorded: write k at k + 2, read k at 4k + 4 (ready at write k + 2, RAM), so after the last write
// n - ceil((n - 3) / 4) tokens are queued and the last read ends the run at 4n + 1. Expanded token by
// token, as the sizer did, this took 1.6 GB.
TEST(Sizing, ProducerFarAheadOverAHundredMillionTokens) {
  const int64_t n = 100000000;
  Sized s = size(
      "network: ahead\nfifos: [{name: w, width: 512}]\ntasks:\n"
      "  - {name: load, phases: [{trip: [100000000], ii: 1, latency: 2, ports: [{fifo: w, dir: out}]}]}\n"
      "  - {name: mac, phases: [{trip: [100000000], ii: 4, latency: 5, ports: [{fifo: w, dir: in}]}]}\n");
  EXPECT_EQ(s.result.fifos[0].maxOccupancy, n - (n - 3 + 3) / 4);
  EXPECT_EQ(s.result.cyclesUnbounded, 4 * n + 1);
  EXPECT_LE(depthOf(s, "w"), 2);
  EXPECT_EQ(s.result.cyclesSized, s.result.cyclesUnbounded - 1);
}

// A producer forking into two slow consumers (ii 1 into ii 4 twice, 4096 tokens of 512 bits). With two
// outputs it must not fall behind the unbounded run's schedule, so each FIFO holds three quarters of the
// stream: 2 x 3,072 x 512 bits. Over a budget of 100,000 bits the sizer measures again with the network's
// depths (at least 3): the producer runs at its readers' pace, and 3 tokens each keep the latency.
TEST(Sizing, OverBudgetPacesTheWriters) {
  const std::string text =
      "network: fork_slow\nfifos: [{name: a, width: 512}, {name: b, width: 512}]\ntasks:\n"
      "  - {name: load, phases: [{trip: [4096], ii: 1, latency: 2, ports: [{fifo: a, dir: out}, {fifo: b, "
      "dir: "
      "out}]}]}\n"
      "  - {name: mac_a, phases: [{trip: [4096], ii: 4, latency: 5, ports: [{fifo: a, dir: in}]}]}\n"
      "  - {name: mac_b, phases: [{trip: [4096], ii: 4, latency: 5, ports: [{fifo: b, dir: in}]}]}\n";
  Sized free;
  SizingOptions options;
  options.pacedTrial = false;  // step 6 would take the paced sizing at once (below)
  free.result = sizeFifos(parseNetwork(text, "test.yaml"), options, free.network);
  expectGuarantees(free);
  EXPECT_FALSE(free.result.paced);
  EXPECT_GE(depthOf(free, "a"), 3000);
  EXPECT_GE(depthOf(free, "b"), 3000);

  Sized paced;
  options = SizingOptions();
  options.budgetBits = 100000;
  paced.result = sizeFifos(parseNetwork(text, "test.yaml"), options, paced.network);
  expectGuarantees(paced);
  EXPECT_TRUE(paced.result.paced);
  EXPECT_EQ(paced.result.cyclesUnbounded, free.result.cyclesUnbounded);
  EXPECT_LE(depthOf(paced, "a"), 3);
  EXPECT_LE(depthOf(paced, "b"), 3);
  EXPECT_LE(paced.result.totalBits, 2 * 3 * 512);
  // Forced paced gives the same depths whatever the budget.
  options = SizingOptions();
  options.paced = true;
  Network forced;
  sizeFifos(parseNetwork(text, "test.yaml"), options, forced);
  EXPECT_EQ(forced.fifos[0].depth, depthOf(paced, "a"));
  // Paced measuring with fork_join's own depths deadlocks (a_c needs 64): it is measured unbounded then.
  Sized fj;
  fj.result = sizeFifos(parseNetwork(file("fork_join.yaml"), "fork_join.yaml"), options, fj.network);
  expectGuarantees(fj);
  EXPECT_FALSE(fj.result.paced);
  EXPECT_EQ(depthOf(fj, "a_c"), 64);
}

// A paced design kept for its fewer bits may be slower than the unbounded run's by 1%, and, where the free
// sizing takes more than a 256th of the budget, 2% more for each halving of the bits, at most 5%: log2 of
// the ratio, by hand. A budget of 256,000 bits: over a 256th is over 1,000.
TEST(Sizing, FewerBitsBuyAFewPercentOfCycles) {
  const int64_t budget = 256000;
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(2000, 2000, budget), 0.01);  // no fewer: nothing to buy
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(2000, 4000, budget), 0.01);
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(2000, 1000, budget), 0.03);
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(4000, 1000, budget), 0.05);
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(12000, 1000, budget), 0.05);
  EXPECT_NEAR(fewerBitsTolerance(3000, 2000, budget), 0.01 + 0.02 * 0.5849625007, 1e-9);
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(2000, 0, budget), 0.01);
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(1000, 100, budget), 0.01);  // a 256th or less: 1% whatever it saves
  EXPECT_DOUBLE_EQ(fewerBitsTolerance(1001, 100, budget), 0.05);
}

// Step 6 and step 7 on the same fork: within a budget of 4 Mbit, sized from the unbounded run it takes
// 2 x 3,072 x 512 bits, over a 4096th of it, so the paced sizing runs too and wins with 3 tokens a FIFO at
// the same latency. A device test that refuses FIFOs under 100 deep sends it back to the first design;
// one that refuses them over 100 deep, with a budget the first design is small beside, takes the paced
// one.
TEST(Sizing, PacedWhereItCostsNothingAndTheDeviceDecides) {
  const std::string text =
      "network: fork_slow\nfifos: [{name: a, width: 512}, {name: b, width: 512}]\ntasks:\n"
      "  - {name: load, phases: [{trip: [4096], ii: 1, latency: 2, ports: [{fifo: a, dir: out}, {fifo: b, dir: out}]}]}\n"
      "  - {name: mac_a, phases: [{trip: [4096], ii: 4, latency: 5, ports: [{fifo: a, dir: in}]}]}\n"
      "  - {name: mac_b, phases: [{trip: [4096], ii: 4, latency: 5, ports: [{fifo: b, dir: in}]}]}\n";
  Network net = parseNetwork(text, "test.yaml");
  SizingOptions options;
  options.budgetBits = 4000000;
  Sized six;
  six.result = sizeFifos(net, options, six.network);
  expectGuarantees(six);
  EXPECT_TRUE(six.result.paced);
  EXPECT_EQ(six.result.pacedWhy, PacedReason::kFewerBits);
  EXPECT_LE(depthOf(six, "a"), 3);

  options.fits = [](const Network& n) { return n.fifos[0].depth >= 100; };
  Sized back;
  back.result = sizeFifos(net, options, back.network);
  expectGuarantees(back);
  EXPECT_FALSE(back.result.paced);
  EXPECT_GE(depthOf(back, "a"), 3000);

  options.budgetBits = 100000000000;  // 3.1 Mbit is under a 4096th of it: no step 6
  options.fits = [](const Network& n) { return n.fifos[0].depth < 100; };
  Sized over;
  over.result = sizeFifos(net, options, over.network);
  expectGuarantees(over);
  EXPECT_TRUE(over.result.paced);
  EXPECT_EQ(over.result.pacedWhy, PacedReason::kOverDevice);
  EXPECT_EQ(over.result.cyclesUnbounded, back.result.cyclesUnbounded);
  EXPECT_LE(depthOf(over, "a"), 3);
  options.pacedTrial = false;  // no step 6: bits within the budget keep the first design
  options.fits = nullptr;
  options.budgetBits = 4000000;
  Sized plain;
  plain.result = sizeFifos(net, options, plain.network);
  EXPECT_FALSE(plain.result.paced);
}

// DMA-fed: two 4 MiB weight streams out of HBM into a multiply-accumulate of ii 4. The DMAs run far ahead
// (tens of thousands of tokens pile up unbounded); each has one output, so stalling it costs nothing.
TEST(Sizing, DmaReadsRunAheadInTheirReadBufferOnly) {
  const std::string text =
      "network: dma_fed\nfifos: [{name: w, width: 512}, {name: x, width: 512}, {name: y, width: "
      "32}]\ntasks:\n"
      "  - {name: load_w, kind: dma_read, channel: 0, bytes: 4194304, ports: [{fifo: w, dir: out}]}\n"
      "  - {name: load_x, kind: dma_read, channel: 1, bytes: 4194304, ports: [{fifo: x, dir: out}]}\n"
      "  - {name: mac, phases: [{trip: [65536], ii: 4, latency: 6, ports: [{fifo: w, dir: in}, {fifo: x, "
      "dir: in}, "
      "{fifo: y, dir: out}]}]}\n"
      "  - {name: store, phases: [{trip: [65536], ports: [{fifo: y, dir: in}]}]}\n";
  Sized s = size(text);
  expectGuarantees(s);
  // The loads are four times faster than mac: with every FIFO unbounded they would run 49,152 tokens
  // ahead; measured, their FIFOs hold 3 (the rest waits in the read buffer), and mac's pace is the same.
  sim::Program prog = sim::compileProgram(parseNetwork(text, "test.yaml"), {}, defaultPlatform());
  sim::RunConfig unbounded;
  unbounded.depths.assign(prog.fifos.size(), kUnboundedDepth);
  sim::SimResult free = sim::runDirect(prog, unbounded);
  EXPECT_GT(free.fifos[0].maxOccupancy, 40000);
  EXPECT_EQ(s.result.fifos[0].maxOccupancy, 3);
  EXPECT_EQ(s.result.fifos[1].maxOccupancy, 3);
  EXPECT_EQ(s.result.cyclesUnbounded, free.cycles);
  EXPECT_LE(depthOf(s, "w"), 2);
  EXPECT_LE(depthOf(s, "x"), 2);
}

// A stream from HBM passes through an adapter (beats widened) and a converter (two tasks on a region FIFO)
// before its kernel reads it. Measured with those FIFOs unbounded, the converter would pull the whole
// weight ahead at channel speed (prefetch: the sizer's other mode); measured, every FIFO of that stream
// holds at most 3 tokens, as the DMA's own does. A kernel's stream, through a relay of one input and
// one output, is not from HBM: it still runs ahead unbounded.
TEST(Sizing, StreamsFromHbmArePacedThroughConvertersAndAdapters) {
  const std::string text =
      "network: hbm_through\nfifos: [{name: w.beats, width: 512}, {name: w.wide, width: 1024}, "
      "{name: w.cvt.region, width: 1024}, {name: w>mac, width: 1024}, {name: g, width: 32}, {name: g>mac, width: 32}, "
      "{name: y, width: 32}]\ntasks:\n"
      "  - {name: load_w, kind: dma_read, channel: 0, bytes: 1048576, ports: [{fifo: w.beats, dir: out}]}\n"
      "  - {name: widen_w, phases: [{trip: [8192, 2], ports: [{fifo: w.beats, dir: in}, {fifo: w.wide, dir: out, "
      "level: 0}]}]}\n"
      "  - {name: w.cvt.w, phases: [{trip: [4, 2048], ports: [{fifo: w.wide, dir: in}, "
      "{fifo: w.cvt.region, dir: out, level: 0}]}]}\n"
      "  - {name: w.cvt.r, phases: [{trip: [4, 2048], ports: [{fifo: w.cvt.region, dir: in, level: 0}, "
      "{fifo: w>mac, dir: out}]}]}\n"
      "  - {name: gen, phases: [{trip: [8192], ports: [{fifo: g, dir: out}]}]}\n"
      "  - {name: relay, phases: [{trip: [8192], ports: [{fifo: g, dir: in}, {fifo: g>mac, dir: out}]}]}\n"
      "  - {name: mac, phases: [{trip: [8192], ii: 4, latency: 6, ports: [{fifo: w>mac, dir: in}, "
      "{fifo: g>mac, dir: in}, {fifo: y, dir: out}]}]}\n"
      "  - {name: store, phases: [{trip: [8192], ports: [{fifo: y, dir: in}]}]}\n";
  Sized s = size(text);
  expectGuarantees(s);
  const sim::SimResult& measured = s.result.unbounded;
  for (const char* f : {"w.beats", "w.wide", "w.cvt.region", "w>mac"})
    EXPECT_LE(measured.fifos[static_cast<size_t>(s.network.findFifo(f))].maxOccupancy, 3) << f;
  EXPECT_GT(measured.fifos[static_cast<size_t>(s.network.findFifo("g>mac"))].maxOccupancy, 5000);
  EXPECT_LE(depthOf(s, "w>mac"), 3);

  SizingOptions options;
  options.prefetch = true;
  options.pacedTrial = false;  // the prefetching measurement itself (paced, it would win for its fewer bits)
  Network prefetched;
  SizingResult p = sizeFifos(parseNetwork(text, "test.yaml"), options, prefetched);
  EXPECT_GT(p.unbounded.fifos[static_cast<size_t>(prefetched.findFifo("w>mac"))].maxOccupancy, 3000);

  // Tasks of one input and one output that feed each other, one FIFO named as a region: nothing from
  // HBM reaches them, so they are measured unbounded, as any kernel is (measured at 3, A would fill
  // l.cvt.region before its second phase drains b_a, and the measuring run would deadlock).
  Sized loop = size(
      "network: loop\nfifos: [{name: l.cvt.region, width: 32}, {name: b_a, width: 64}]\ntasks:\n"
      "  - {name: A, phases: [{trip: [8], ports: [{fifo: l.cvt.region, dir: out}]}, "
      "{trip: [8], ports: [{fifo: b_a, dir: in}]}]}\n"
      "  - {name: B, phases: [{trip: [8], ports: [{fifo: l.cvt.region, dir: in}, {fifo: b_a, dir: out}]}]}\n");
  expectGuarantees(loop);
  EXPECT_GT(loop.result.unbounded.fifos[1].maxOccupancy, 3);  // B writes b_a before A reads it
}

// A converter that holds a whole tensor (K, say) reads it as one region token and streams it out again
// for a slow reader. Its region's writer also feeds another FIFO, so it must keep the schedule; but a FIFO
// of one token never holds its writer back, so the converter may fall behind: its output needs only the
// reader's pace (as in ProducerFarAheadNeedsLittle), not the 3,072 tokens the unbounded run piles up.
TEST(Sizing, AWholeTensorsConverterMayFallBehind) {
  Sized s = size(
      "network: whole\nfifos: [{name: k.cvt.region, width: 512}, {name: side, width: 32}, {name: k>mix, width: 512}]\n"
      "tasks:\n"
      "  - {name: src, phases: [{trip: [64], ports: [{fifo: side, dir: out}, {fifo: k.cvt.region, dir: out, "
      "level: -1}]}]}\n"
      "  - {name: sink, phases: [{trip: [64], ports: [{fifo: side, dir: in}]}]}\n"
      "  - {name: k.cvt.r, phases: [{trip: [4096], ports: [{fifo: k.cvt.region, dir: in, level: -1}, "
      "{fifo: k>mix, dir: out}]}]}\n"
      "  - {name: mix, phases: [{trip: [4096], ii: 4, latency: 5, ports: [{fifo: k>mix, dir: in}]}]}\n");
  expectGuarantees(s);
  EXPECT_GT(s.result.fifos[static_cast<size_t>(s.network.findFifo("k>mix"))].maxOccupancy, 3000);
  EXPECT_LE(depthOf(s, "k>mix"), 2);
}

// A network on which the first depths did not hold the latency when the LP could stretch a delay beyond
// the measured one and move a task past the measured latency (found by a random search over 400 DAGs of
// 3 to 6 tasks, where five needed more than one round). With those bounds the first depths hold.
TEST(Sizing, FirstDepthsHold) {
  Sized s = size(
      "network: r\nfifos: [{name: f0, width: 32}, {name: f1, width: 32}, {name: f2, width: 32}, {name: f3, width: 32}, "
      "{name: f4, width: 32}]\ntasks:\n"
      "  - {name: t0, phases: [{trip: [16], ii: 3, latency: 13, ports: [{fifo: f0, dir: out}, {fifo: f1, dir: out}]}]}\n"
      "  - {name: t1, phases: [{trip: [16], ii: 2, latency: 24, ports: [{fifo: f4, dir: out}, {fifo: f1, dir: in}]}]}\n"
      "  - {name: t2, phases: [{trip: [16], ii: 2, latency: 4, ports: [{fifo: f2, dir: out}]}]}\n"
      "  - {name: t3, phases: [{trip: [16], ii: 3, latency: 25, ports: [{fifo: f0, dir: in}, {fifo: f3, dir: out}, "
      "{fifo: f2, dir: in}]}]}\n"
      "  - {name: t4, phases: [{trip: [16], ii: 3, latency: 21, ports: [{fifo: f3, dir: in}, {fifo: f4, dir: in}]}]}\n");
  expectGuarantees(s);
  EXPECT_EQ(s.result.rounds, 1);
}

// Reconvergent paths of different latencies. By hand (unbounded, raw 2): a writes both FIFOs at 1 + j; b
// reads a_b at 3 + j and writes b_d at 43 + j; d reads a_d j and b_d j in one stage, at 45 + j. Write k
// of a_d (at 1 + k) needs read k - depth before it: write 45 (at 46) needs read 0 (at 45), so depth 45
// lets a go unstalled, and a feeds b too, so it must not stall.
TEST(Sizing, ReconvergentPaths) {
  Sized s = size(
      "network: reconverge\nfifos: [{name: a_d, width: 32}, {name: a_b, width: 32}, {name: b_d, width: 32}]\n"
      "tasks:\n"
      "  - {name: a, phases: [{trip: [256], ii: 1, latency: 1, ports: [{fifo: a_d, dir: out}, {fifo: a_b, dir: out}]}]}\n"
      "  - {name: b, phases: [{trip: [256], ii: 1, latency: 40, ports: [{fifo: a_b, dir: in}, {fifo: b_d, dir: out}]}]}\n"
      "  - {name: d, phases: [{trip: [256], ii: 1, latency: 1, ports: [{fifo: a_d, dir: in}, {fifo: b_d, dir: in}]}]}\n");
  expectGuarantees(s);
  EXPECT_EQ(depthOf(s, "a_b"), 2);
  EXPECT_EQ(depthOf(s, "b_d"), 2);
  EXPECT_EQ(depthOf(s, "a_d"), 45);
  EXPECT_EQ(s.result.fifos[0].maxOccupancy, 45);
}

// b reads all n tokens of a_b before it writes b_d, so d reads nothing of a_d until then: a writes both
// FIFOs in one stage, and a_d must hold all n tokens, or a blocks on it with a_b unfinished (by hand:
// depth n). Sized at n = 8 alone, a_d is 8 and n = 32 deadlocks; sized across {32, 8} (the last binding
// the smaller) it is 32 and both run at least as fast as with unbounded FIFOs.
TEST(Sizing, AcrossBindingsHoldsAtEach) {
  Network net = parseNetwork(
      "network: grow\nfifos: [{name: a_d, width: 32}, {name: a_b, width: 32}, {name: b_d, width: "
      "32}]\ntasks:\n"
      "  - {name: a, phases: [{trip: [n], ii: 1, latency: 1, ports: [{fifo: a_d, dir: out}, {fifo: a_b, dir: "
      "out}]}]}\n"
      "  - {name: b, phases: [{trip: [n], ii: 1, latency: 1, ports: [{fifo: a_b, dir: in}]},\n"
      "                       {trip: [n], ii: 1, latency: 1, ports: [{fifo: b_d, dir: out}]}]}\n"
      "  - {name: d, phases: [{trip: [n], ii: 1, latency: 1, ports: [{fifo: a_d, dir: in}, {fifo: b_d, dir: "
      "in}]}]}\n",
      "test.yaml");
  Network one, both;
  SizingOptions options;
  options.bindings = {{"n", 8}};
  sizeFifos(net, options, one);
  EXPECT_EQ(one.fifos[static_cast<size_t>(one.findFifo("a_d"))].depth, 8);
  EXPECT_TRUE(sim::runDirect(sim::compileProgram(one, {{"n", 32}}, defaultPlatform()), {}).deadlock);

  SizingResult r = sizeFifosAcross(net, SizingOptions{}, {{{"n", 32}}, {{"n", 8}}}, both);
  EXPECT_EQ(both.fifos[static_cast<size_t>(both.findFifo("a_d"))].depth, 32);
  ASSERT_EQ(r.cyclesSizedAt.size(), 2u);
  for (int64_t n : {8, 32}) {
    sim::Program prog = sim::compileProgram(both, {{"n", n}}, defaultPlatform());
    sim::RunConfig unbounded;
    unbounded.depths.assign(prog.fifos.size(), kUnboundedDepth);
    sim::SimResult sized = sim::runDirect(prog, {});
    EXPECT_FALSE(sized.deadlock) << n;
    EXPECT_LE(sized.cycles, sim::runDirect(prog, unbounded).cycles)
        << n;  // shift registers read a cycle sooner
    EXPECT_EQ(sized.cycles, r.cyclesSizedAt[n == 32 ? 0 : 1]) << n;
  }
}

TEST(Sizing, ExampleNetworksKeepTheGuarantees) {
  for (const char* name : {"chain.yaml", "fork_join.yaml", "fork_join_fixed.yaml"}) {
    for (Strategy st : {Strategy::kNormal, Strategy::kConservative}) {
      Sized s = size(file(name), st);
      expectGuarantees(s, {}, st);
    }
  }
  Sized s = size(file("attention_row.yaml"), Strategy::kNormal, {{"ctx", 512}});
  expectGuarantees(s, {{"ctx", 512}});
  EXPECT_GE(depthOf(s, "scores_keep"), 500);  // the softmax's second pass reads the row again
}

// Random DAGs with stage groups of several reads and writes: the sizer keeps its guarantees at the first
// verifying run, and the naive reference model (tests/sim/reference.cpp) agrees that the sized network
// runs, in as many cycles.
TEST(Sizing, RandomNetworksKeepTheGuarantees) {
  std::mt19937 rng(7);
  int further = 0;
  for (int iter = 0; iter < 300; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(1, 12)(rng);
    std::string text = testing::randomNetwork(rng, n, true);
    Sized s = size(text);
    expectGuarantees(s);
    testing::ReferenceResult ref = testing::referenceSimulate(s.network, {});
    EXPECT_FALSE(ref.deadlock) << text;
    EXPECT_EQ(ref.cycles, s.result.cyclesSized) << text;
    further += s.result.rounds > 1;
  }
  EXPECT_EQ(further, 0);  // writers that must not fall behind never do (fifo_sizing.cpp, step 3)
}

TEST(Sizing, TrueDeadlockIsReported) {
  Sized s = size(
      "network: loop\nfifos: [{name: x, width: 8}, {name: y, width: 8}]\ntasks:\n"
      "  - {name: p, phases: [{trip: [4], ports: [{fifo: y, dir: in}, {fifo: x, dir: out}]}]}\n"
      "  - {name: q, phases: [{trip: [4], ports: [{fifo: x, dir: in}, {fifo: y, dir: out}]}]}\n");
  EXPECT_TRUE(s.result.trueDeadlock);
}

TEST(Sizing, MemoryBinding) {
  EXPECT_EQ(bindMemory(2, 512).kind, "shift_register");
  EXPECT_EQ(bindMemory(32, 32).kind, "shift_register");  // 1024 bits
  EXPECT_EQ(bindMemory(33, 32).kind, "lutram");
  EXPECT_EQ(bindMemory(512, 36).kind, "bram18k");
  EXPECT_EQ(bindMemory(512, 36).units, 1);
  EXPECT_EQ(bindMemory(1024, 72).units, 4);
  EXPECT_EQ(bindMemory(8192, 512).kind, "uram");
  EXPECT_EQ(bindMemory(8192, 512).units, 8 * 2);
}

}  // namespace
}  // namespace stc::sizing
