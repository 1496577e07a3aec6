// Periodic jumps (RunConfig::periodic): long runs whose cycle counts follow from a formula, and random
// networks long enough to reach a steady state, against the naive reference of reference.cpp and against
// the engine stepping one event at a time: every figure, curve and stall span identical.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "random_networks.h"
#include "reference.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

sim::RunConfig stepByStep(bool record) {
  sim::RunConfig c;
  c.periodic = false;
  c.recordCurves = c.recordStalls = record;
  return c;
}

sim::RunConfig periodic(bool record) {
  sim::RunConfig c = stepByStep(record);
  c.periodic = true;
  return c;
}

// A chain: src (latency 3), m stages (latency 5, the ii `iiOf` gives stage i, none when 0), dst, through
// FIFOs f0..fm of 32 bits at `depth`, `tokens` each.
std::string chainText(int m, int64_t tokens, const std::string& depth, int (*iiOf)(int) = nullptr) {
  std::string trip = "trip: [" + std::to_string(tokens) + "]";
  std::string s = "network: chain\nfifos:\n";
  for (int i = 0; i <= m; ++i)
    s += "  - {name: f" + std::to_string(i) + ", width: 32, depth: " + depth + "}\n";
  s += "tasks:\n  - {name: src, phases: [{" + trip + ", latency: 3, ports: [{fifo: f0, dir: out}]}]}\n";
  for (int i = 1; i <= m; ++i) {
    std::string ii = iiOf ? ", ii: " + std::to_string(iiOf(i)) : "";
    s += "  - {name: s" + std::to_string(i) + ", phases: [{" + trip + ii + ", latency: 5, ports: [{fifo: f" +
         std::to_string(i - 1) + ", dir: in}, {fifo: f" + std::to_string(i) + ", dir: out}]}]}\n";
  }
  s += "  - {name: dst, phases: [{" + trip + ", ports: [{fifo: f" + std::to_string(m) + ", dir: in}]}]}\n";
  return s;
}

// The chain of timing_test.cpp (source latency Ls, m stages of latency Lm, sink; ii 1, depth 2): latency
// Ls + m*(1 + Lm) + T + 1 with no stall, here at 10^7 tokens per FIFO, almost all of them jumped over.
TEST(Periodic, LongChainClosedForm) {
  const int m = 10, ls = 3, lm = 5;
  const int64_t tokens = 10'000'000;
  std::string s = chainText(m, tokens, "2");
  for (bool systemc : {false, true}) {
    sim::SimResult r = simulateText(s, systemc);
    EXPECT_FALSE(r.deadlock);
    EXPECT_EQ(r.cycles, ls + m * (1 + lm) + tokens + 1);
    EXPECT_EQ(r.events, 2LL * (m + 1) * tokens);
    EXPECT_GT(r.jumpedEvents, r.events * 99 / 100);
    for (const auto& t : r.tasks) EXPECT_EQ(t.stallFull + t.stallEmpty, 0) << t.name;
  }
}

// timing_test's LatencyAboveIiWithBackpressure at T tokens: the consumer (ii 3) reads j at 3j + 11; the
// producer's write j waits for read j-2, two cycles of stall for every j >= 3.
TEST(Periodic, BackpressureClosedForm) {
  const int64_t tokens = 5'000'001;
  std::string trip = "trip: [" + std::to_string(tokens) + "]";
  std::string s = "network: n\nfifos: [{name: f, width: 32, depth: 2}]\ntasks:\n"
                  "  - {name: a, phases: [{" + trip + ", ii: 1, latency: 10, ports: [{fifo: f, dir: out}]}]}\n"
                  "  - {name: b, phases: [{" + trip + ", ii: 3, latency: 1, ports: [{fifo: f, dir: in}]}]}\n";
  for (bool systemc : {false, true}) {
    sim::SimResult r = simulateText(s, systemc, {}, periodic(true));
    EXPECT_EQ(r.cycles, 3 * tokens + 9);
    EXPECT_EQ(task(r, "a").stallFull, 2 * (tokens - 3));
    EXPECT_EQ(fifo(r, "f").stallFull, 2 * (tokens - 3));
    EXPECT_EQ(fifo(r, "f").stallEmpty, 0);
    EXPECT_EQ(task(r, "b").stallEmpty, 0);
    EXPECT_EQ(fifo(r, "f").maxOccupancy, 2);
    EXPECT_GT(r.jumpedEvents, r.events * 99 / 100);
    // Curves: the reads one run (3j + 11), and a stall span per write from the third on, kept in full.
    ASSERT_EQ(fifo(r, "f").readTimes.size(), 1u);
    EXPECT_EQ(fifo(r, "f").readTimes[0].start, 11);
    EXPECT_EQ(fifo(r, "f").readTimes[0].stride, 3);
    EXPECT_EQ(fifo(r, "f").readTimes[0].count, tokens);
    EXPECT_EQ(static_cast<int64_t>(task(r, "a").stalls.size()), tokens - 3);
  }
}

void expectSame(const sim::SimResult& got, const sim::SimResult& want, const std::string& text) {
  ASSERT_EQ(got.deadlock, want.deadlock) << text;
  ASSERT_EQ(got.cycles, want.cycles) << text;
  ASSERT_EQ(got.events, want.events) << text;
  for (size_t t = 0; t < got.tasks.size(); ++t) {
    const sim::TaskStats &a = got.tasks[t], &b = want.tasks[t];
    EXPECT_EQ(a.start, b.start) << text;
    EXPECT_EQ(a.end, b.end) << text;
    EXPECT_EQ(a.stallFull, b.stallFull) << text;
    EXPECT_EQ(a.stallEmpty, b.stallEmpty) << text;
    EXPECT_EQ(a.events, b.events) << text;
    EXPECT_EQ(a.blockedSince, b.blockedSince) << text;
    ASSERT_EQ(a.stalls.size(), b.stalls.size()) << text;
    for (size_t k = 0; k < a.stalls.size(); ++k) {
      EXPECT_EQ(a.stalls[k].begin, b.stalls[k].begin) << text;
      EXPECT_EQ(a.stalls[k].end, b.stalls[k].end) << text;
      EXPECT_EQ(a.stalls[k].fifo, b.stalls[k].fifo) << text;
      EXPECT_EQ(a.stalls[k].full, b.stalls[k].full) << text;
    }
    ASSERT_EQ(a.waits.size(), b.waits.size()) << text;
  }
  for (size_t f = 0; f < got.fifos.size(); ++f) {
    const sim::FifoStats &a = got.fifos[f], &b = want.fifos[f];
    EXPECT_EQ(a.maxOccupancy, b.maxOccupancy) << text;
    EXPECT_EQ(a.written, b.written) << text;
    EXPECT_EQ(a.read, b.read) << text;
    EXPECT_EQ(a.stallFull, b.stallFull) << text;
    EXPECT_EQ(a.stallEmpty, b.stallEmpty) << text;
    // The same runs: the greedy run encoding of the same times.
    for (auto [x, y] : {std::pair{&a.writeTimes, &b.writeTimes}, {&a.readTimes, &b.readTimes}}) {
      ASSERT_EQ(x->size(), y->size()) << text;
      for (size_t k = 0; k < x->size(); ++k) {
        EXPECT_EQ((*x)[k].start, (*y)[k].start) << text;
        EXPECT_EQ((*x)[k].count, (*y)[k].count) << text;
        EXPECT_TRUE((*x)[k].count == 1 || (*x)[k].stride == (*y)[k].stride) << text;
      }
    }
  }
  ASSERT_EQ(got.hbm.size(), want.hbm.size()) << text;
  for (size_t c = 0; c < got.hbm.size(); ++c) {
    const sim::ChannelStats &a = got.hbm[c], &b = want.hbm[c];
    EXPECT_EQ(a.busyTicks, b.busyTicks) << text;
    EXPECT_EQ(a.bytesRead, b.bytesRead) << text;
    EXPECT_EQ(a.bytesWritten, b.bytesWritten) << text;
    EXPECT_EQ(a.busySpans, b.busySpans) << text;
  }
  ASSERT_EQ(got.deadlockCycle.size(), want.deadlockCycle.size()) << text;
  for (size_t k = 0; k < got.deadlockCycle.size(); ++k) {
    EXPECT_EQ(got.deadlockCycle[k].task, want.deadlockCycle[k].task) << text;
    EXPECT_EQ(got.deadlockCycle[k].fifo, want.deadlockCycle[k].fifo) << text;
  }
}

// Runs `text` with jumps and step by step, with either scheduler, curves and stalls recorded or not, and
// expects every figure the same; returns whether the direct, unrecorded run jumped over half its events.
bool matchesStepByStep(const std::string& text) {
  bool jumped = false;
  for (bool systemc : {false, true}) {
    for (bool record : {false, true}) {
      sim::SimResult want = simulateText(text, systemc, {}, stepByStep(record));
      sim::SimResult got = simulateText(text, systemc, {}, periodic(record));
      expectSame(got, want, text);
      if (!systemc && !record) jumped = got.jumpedEvents > got.events / 2;
    }
  }
  return jumped;
}

// A writer at ii 1 ahead of its reader at ii 2, through a FIFO of 400,000: the FIFO fills for 800,000 of
// the million tokens, its writes needing no room, then the writer waits on every other read. The reads
// come every other cycle from the first: 2j + the first's time, so the run ends at 2 (T - 1) + that + 1.
// Jumps cover the filling too (before, nothing repeated there: the FIFO's count grew every period).
TEST(Periodic, FillingADeepFifoJumps) {
  const int64_t tokens = 1'000'000;
  std::string trip = "trip: [" + std::to_string(tokens) + "]";
  std::string s =
      "network: n\nfifos: [{name: f, width: 32, depth: 400000}]\ntasks:\n"
      "  - {name: a, phases: [{" +
      trip +
      ", ii: 1, latency: 4, ports: [{fifo: f, dir: out}]}]}\n"
      "  - {name: b, phases: [{" +
      trip + ", ii: 2, latency: 3, ports: [{fifo: f, dir: in}]}]}\n";
  for (bool systemc : {false, true}) {
    sim::SimResult want = simulateText(s, systemc, {}, stepByStep(true));
    sim::SimResult got = simulateText(s, systemc, {}, periodic(true));
    expectSame(got, want, s);
    // a writes token 0 at its latency, 4; b reads it raw = 2 cycles later (a FIFO of over 1024 bits is RAM).
    EXPECT_EQ(fifo(got, "f").readTimes.front().start, 6);
    EXPECT_EQ(got.cycles, 6 + 2 * (tokens - 1) + 1);
    EXPECT_EQ(fifo(got, "f").maxOccupancy, 400000);
    EXPECT_GT(got.jumpedEvents, got.events * 99 / 100);
  }
}

// A writer ahead of its reader by a token a row, each paced a row at a time by a task of its own at the same
// pace: the FIFO between them fills by a token a period, and for its first hundred periods holds fewer
// tokens than a period reads, so the reader takes writes of its own period (a row of 100 written after
// the period began). Every read of the periods to come then finds its token ready (the writes only get
// older against the reads): the reader, which waited for none, reads as it did, and the periods jump
// (before, only once the FIFO held a period's reads, a hundred periods in).
std::string aheadByATokenARow(int64_t rows, int64_t row, int64_t pace, int64_t depth, int latency) {
  std::string n = std::to_string(rows), m = std::to_string(rows * (row + 1) / row), ii = std::to_string(pace);
  return "network: ahead\nfifos:\n  - {name: f, width: 32, depth: " + std::to_string(depth) +
         "}\n  - {name: p, width: 32, depth: 2}\n  - {name: q, width: 32, depth: 2}\ntasks:\n"
         "  - {name: pw, phases: [{trip: [" +
         n + "], ii: " + ii +
         ", latency: 2, ports: [{fifo: q, dir: out}]}]}\n"
         "  - {name: w, phases: [{trip: [" +
         n + ", " + std::to_string(row + 1) + "], ii: 1, latency: " + std::to_string(latency) +
         ", ports: [{fifo: q, dir: in, level: 0}, {fifo: f, dir: out}]}]}\n"
         "  - {name: pr, phases: [{trip: [" +
         m + "], ii: " + ii +
         ", latency: 2, ports: [{fifo: p, dir: out}]}]}\n"
         "  - {name: r, phases: [{trip: [" +
         m + ", " + std::to_string(row) +
         "], ii: 1, latency: 4, ports: [{fifo: p, dir: in, level: 0}, {fifo: f, dir: in}]}]}\n";
}

TEST(Periodic, AReaderTakingWritesOfItsOwnPeriodJumps) {
  std::string text = aheadByATokenARow(400, 100, 103, 100000, 3);
  EXPECT_TRUE(matchesStepByStep(text));
  Network net = parseNetwork(text, "ahead.yaml");
  ReferenceResult ref = referenceSimulate(net, {});
  sim::SimResult got = simulateText(text, false, {}, periodic(false));
  EXPECT_EQ(got.cycles, ref.cycles);
  EXPECT_EQ(fifo(got, "f").maxOccupancy, ref.maxOccupancy[0]);
  // The reader's rows are paced: row k starts a cycle (a shift register's read) after its pacer's token k at
  // 2 + 103 k and reads a token a cycle; its last, of row 403, 99 cycles on.
  EXPECT_EQ(got.cycles, 2 + 103 * (404 - 1) + 1 + 99 + 1);
  EXPECT_GT(got.jumpedEvents, got.events / 2);
}

// The same at random rows, paces, latencies and depths (some below what the writer gets ahead by, so that
// its writes come to need room): every figure as step by step and as the reference.
TEST(Periodic, RandomReadersTakingWritesOfTheirOwnPeriodMatchStepByStep) {
  std::mt19937 rng(20261206);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int jumped = 0;
  for (int iter = 0; iter < 40; ++iter) {
    int64_t row = pick(8, 60), rows = row * pick(3, 6);
    std::string text =
        aheadByATokenARow(rows, row, row + 1 + pick(0, 6), pick(0, 2) ? 1000000 : pick(4, 200), pick(1, 9));
    Network net = parseNetwork(text, "ahead.yaml");
    ReferenceResult ref = referenceSimulate(net, {});
    jumped += matchesStepByStep(text);
    sim::SimResult got = simulateText(text, false, {}, periodic(false));
    ASSERT_EQ(got.cycles, ref.cycles) << text;
    for (size_t f = 0; f < got.fifos.size(); ++f)
      EXPECT_EQ(got.fifos[f].maxOccupancy, ref.maxOccupancy[f]) << text;
  }
  EXPECT_GT(jumped, 10);  // 16 of the 40 here; none without (each jumped run went through it)
}

// A chain through unbounded FIFOs: each task runs alone to its end (the direct scheduler runs a task until
// it blocks), draining what the one before left and filling the next, and each run repeats within itself.
// Recorded, as the sizer measures, the merge of the largest occupancy takes a period's reads from the
// curves; unrecorded, from the last reads an unbounded FIFO keeps for it. Both as step by step.
TEST(Periodic, UnboundedChainRunsAloneAndJumps) {
  std::string s = chainText(6, 1'000'000, "unbounded", [](int i) { return 1 + i % 2; });
  for (bool record : {true, false}) {
    sim::RunConfig jumps = periodic(false), steps = stepByStep(false);
    jumps.recordCurves = steps.recordCurves = record;
    sim::SimResult want = simulateText(s, false, {}, steps);
    sim::SimResult got = simulateText(s, false, {}, jumps);
    expectSame(got, want, s);
    EXPECT_GT(got.jumpedEvents, got.events * 99 / 100) << record;
  }
}

// Two parts of one network at paces whose common period is longer than the run: each of a and b writes 64
// tokens a row, a row each time its pacer (ii 701 and 1013) sends a token, and j reads a token of each a
// cycle. a is the faster: what it writes piles up in the unbounded fa, which j, paced by b, finds ready
// long before it reads it. The whole state never repeats (the two parts' rows drift apart by 312 cycles a
// row), but each part's does: the part that moved by the anchor's period jumps alone, the other left where
// it was, as a scheduler that ran it first would have had it (Engine::jumpFrom, partial).
std::string twoPaces(int64_t rows, int64_t paceA, int64_t paceB, const std::string& depthA) {
  std::string n = std::to_string(rows);
  auto part = [&](const std::string& p, const std::string& w, const std::string& q, const std::string& f,
                  int64_t pace) {
    return "  - {name: " + p + ", phases: [{trip: [" + n + "], ii: " + std::to_string(pace) +
           ", latency: 2, ports: [{fifo: " + q + ", dir: out}]}]}\n  - {name: " + w + ", phases: [{trip: [" +
           n + ", 64], ii: 1, latency: 3, ports: [{fifo: " + q + ", dir: in, level: 0}, {fifo: " + f +
           ", dir: out}]}]}\n";
  };
  return "network: two_paces\nfifos:\n  - {name: qa, width: 32, depth: 2}\n  - {name: qb, width: 32, depth: "
         "2}\n  - {name: fa, width: 32, depth: " +
         depthA + "}\n  - {name: fb, width: 32, depth: 2}\ntasks:\n" + part("pa", "a", "qa", "fa", paceA) +
         part("pb", "b", "qb", "fb", paceB) + "  - {name: j, phases: [{trip: [" + std::to_string(rows * 64) +
         "], ii: 1, latency: 2, ports: [{fifo: fa, dir: in}, {fifo: fb, dir: in}]}]}\n";
}

TEST(Periodic, PartsAtDifferentPacesJumpApart) {
  const int64_t rows = 600;
  std::string text = twoPaces(rows, 701, 1013, "unbounded");
  EXPECT_TRUE(matchesStepByStep(text));
  sim::SimResult got = simulateText(text, false, {}, periodic(false));
  // pb sends its last token at 2 + 1013 (rows - 1); b reads it a cycle later (a shift register) and writes
  // its row's 64 tokens from 3 cycles on, the last 63 cycles after the first; j reads that a cycle later,
  // its last event, and the run ends a cycle after it.
  EXPECT_EQ(got.cycles, 2 + 1013 * (rows - 1) + 1 + 3 + 63 + 1 + 1);
  // a's part jumps alone to its last row (the whole state never repeats while both run), then b's and j's.
  // (70% without partial jumps: the whole state repeats only once a's part has finished.)
  EXPECT_GT(got.jumpedEvents, got.events * 95 / 100);
  Network net = parseNetwork(text, "two_paces.yaml");
  ReferenceResult ref = referenceSimulate(net, {});
  EXPECT_EQ(got.cycles, ref.cycles);
  for (size_t f = 0; f < got.fifos.size(); ++f) EXPECT_EQ(got.fifos[f].maxOccupancy, ref.maxOccupancy[f]);
}

// The same at random paces, rows and depths of fa (some below what a gets ahead by, so that its writes
// come to need j's room and the parts join): every figure as step by step and as the reference.
TEST(Periodic, RandomPartsAtDifferentPacesMatchStepByStep) {
  std::mt19937 rng(20261207);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int jumped = 0;
  for (int iter = 0; iter < 12; ++iter) {
    int64_t paceA = pick(65, 400), paceB = paceA + pick(-40, 40);
    std::string depth = pick(0, 2) ? "unbounded" : std::to_string(pick(2, 3000));
    std::string text = twoPaces(pick(60, 300), paceA, paceB, depth);
    jumped += matchesStepByStep(text);
    Network net = parseNetwork(text, "two_paces.yaml");
    ReferenceResult ref = referenceSimulate(net, {});
    sim::SimResult got = simulateText(text, false, {}, periodic(false));
    ASSERT_EQ(got.cycles, ref.cycles) << text;
    for (size_t f = 0; f < got.fifos.size(); ++f)
      EXPECT_EQ(got.fifos[f].maxOccupancy, ref.maxOccupancy[f]) << text;
  }
  EXPECT_GT(jumped, 6);  // 8 of the 12 here, 5 without partial jumps
}

// Parts fed by DMAs: each of a and b streams a DMA read of its own channel (tokens of 32 to 192 bytes, so
// that the two HBM periods differ) and writes a token per token read, into fa (deep or unbounded) and fb,
// which j reads a token of each a cycle. A part's jump takes its DMA's bursts and channel along; every
// figure as step by step (the reference has no HBM).
TEST(Periodic, RandomDmaFedPartsMatchStepByStep) {
  std::mt19937 rng(20261208);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int widths[] = {32, 64, 96, 128, 192};
  int jumped = 0;
  for (int iter = 0; iter < 10; ++iter) {
    int64_t tokens = 4096 * pick(8, 40);
    std::string text = "network: fed\nfifos:\n";
    std::string tasks;
    for (const char* side : {"a", "b"}) {
      std::string n(side), width = std::to_string(widths[pick(0, 4)] * 8);
      text += "  - {name: d" + n + ", width: " + width + ", depth: " + std::to_string(pick(2, 64)) + "}\n";
      text += "  - {name: f" + n + ", width: 32, depth: " +
              (n == "a" && pick(0, 1) ? std::string("unbounded") : std::to_string(pick(2, 5000))) + "}\n";
      tasks += "  - {name: load_" + n + ", kind: dma_read, channel: " + (n == "a" ? "0" : "1") +
               ", bytes: " + std::to_string(tokens * std::stoi(width) / 8) + ", ports: [{fifo: d" + n +
               ", dir: out}]}\n";
      tasks += "  - {name: " + n + ", phases: [{trip: [" + std::to_string(tokens) +
               "], ii: " + std::to_string(pick(1, 2)) + ", latency: " + std::to_string(pick(1, 6)) +
               ", ports: [{fifo: d" + n + ", dir: in}, {fifo: f" + n + ", dir: out}]}]}\n";
    }
    tasks += "  - {name: j, phases: [{trip: [" + std::to_string(tokens) +
             "], ii: 1, latency: 2, ports: [{fifo: fa, dir: in}, {fifo: fb, dir: in}]}]}\n";
    text += "tasks:\n" + tasks;
    jumped += matchesStepByStep(text);
  }
  EXPECT_GT(jumped, 5);
}

// A DMA read of 64-byte tokens on a U55C channel (57.5 bytes a cycle) into a consumer of ii 1: the HBM sets
// the pace, and its times repeat, shifted by 8,192 cycles, every 115 bursts of 4 KB (7,360 tokens), an odd
// factor that no power-of-two stride of the consumer's marks reaches; its second lattice of marks does
// (Engine::hbmFactor). Before, the marks fell a power of two of tokens apart and matched only once those
// were a multiple of 7,360 tokens.
TEST(Periodic, AStreamAtTheHbmPaceJumpsByItsPeriod) {
  const int64_t tokens = 1 << 20;  // 64 MiB
  std::string text =
      "network: stream\nfifos: [{name: w, width: 512}]\ntasks:\n"
      "  - {name: load, kind: dma_read, channel: 0, bytes: " +
      std::to_string(tokens * 64) +
      ", ports: [{fifo: w, dir: out}]}\n"
      "  - {name: mac, phases: [{trip: [" +
      std::to_string(tokens) + "], ii: 1, latency: 4, ports: [{fifo: w, dir: in}]}]}\n";
  EXPECT_TRUE(matchesStepByStep(text));
  sim::SimResult got = simulateText(text, false, {}, periodic(false));
  EXPECT_LT(got.events - got.jumpedEvents, 16000);  // 10,592 stepped here, 36,352 without the lattice
  // 64 MiB at 57.5 bytes a cycle take 1,167,106.8 cycles of the channel; the run ends past them by the first
  // burst's latency and the consumer's read.
  EXPECT_GE(got.cycles, tokens * 64 * 2 / 115);
  EXPECT_LT(got.cycles, tokens * 64 * 2 / 115 + 100);
  EXPECT_EQ(got.hbm.size(), 1u);
}

// Two DMA writes on one channel: `late`'s producer starts a million cycles in, so its requests come after
// every one of `early`'s, which a producer at ii 4 sends one burst at a time. The direct scheduler runs
// `late` first in event order: its requests wait (parked) on the channel, which must serve `early`'s
// earlier ones first, while `early` and its producer repeat. The periods jump with the parked requests
// where they are, and stop before `early`'s requests reach them (here they never do).
TEST(Periodic, RequestsParkedOnAChannelDoNotStopTheJumps) {
  const int64_t early = 1 << 18, late = 4096;
  std::string text =
      "network: parked\nfifos:\n  - {name: a, width: 64, depth: 4}\n  - {name: b, width: 64, depth: 4}\n"
      "tasks:\n"
      "  - {name: pa, phases: [{trip: [" +
      std::to_string(early) +
      "], ii: 4, latency: 2, ports: [{fifo: a, dir: out}]}]}\n"
      "  - {name: wa, kind: dma_write, channel: 0, bytes: " +
      std::to_string(early * 8) +
      ", ports: [{fifo: a, dir: in}]}\n"
      "  - {name: pb, phases: [{trip: [" +
      std::to_string(late) +
      "], ii: 1, latency: 1000000, ports: [{fifo: b, dir: out}]}]}\n"
      "  - {name: wb, kind: dma_write, channel: 0, bytes: " +
      std::to_string(late * 8) + ", ports: [{fifo: b, dir: in}]}\n";
  EXPECT_TRUE(matchesStepByStep(text));
  sim::SimResult got = simulateText(text, false, {}, periodic(false));
  EXPECT_GT(got.jumpedEvents, got.events * 9 / 10);
  // pa never waits (a burst of 512 tokens takes it 2,048 cycles, the channel 72): it writes token k at
  // 2 + 4k.
  EXPECT_EQ(task(got, "pa").end, 4 * (early - 1) + 2 + 1);
}

// The same on random channels: writes that start late beside writes that run from the start, their
// producers at random paces and latencies, and reads beside them; every figure as step by step.
TEST(Periodic, RandomParkedRequestsMatchStepByStep) {
  std::mt19937 rng(20261205);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int jumped = 0;
  for (int iter = 0; iter < 40; ++iter) {
    std::string fifos, tasks;
    int streams = pick(2, 4);
    for (int k = 0; k < streams; ++k) {
      std::string f = "s" + std::to_string(k), n = std::to_string(k);
      int64_t tokens = 1024LL * pick(4, 64) + pick(0, 1) * pick(1, 63);
      int latency = pick(0, 1) ? pick(1, 6) : pick(100000, 2000000);
      fifos += "  - {name: " + f + ", width: 64, depth: " + std::to_string(pick(1, 16)) + "}\n";
      std::string loop = "phases: [{trip: [" + std::to_string(tokens) +
                         "], ii: " + std::to_string(pick(1, 4)) + ", latency: " + std::to_string(latency) +
                         ", ports: [{fifo: " + f;
      std::string dma = ", channel: " + std::to_string(pick(0, 1)) +
                        ", bytes: " + std::to_string(tokens * 8) + ", ports: [{fifo: " + f;
      if (k == 0 || pick(0, 2) > 0) {
        tasks += "  - {name: p" + n + ", " + loop + ", dir: out}]}]}\n";
        tasks += "  - {name: w" + n + ", kind: dma_write" + dma + ", dir: in}]}\n";
      } else {
        tasks += "  - {name: d" + n + ", kind: dma_read" + dma + ", dir: out}]}\n";
        tasks += "  - {name: c" + n + ", " + loop + ", dir: in}]}]}\n";
      }
    }
    std::string text = "network: parked\nfifos:\n" + fifos + "tasks:\n" + tasks;
    jumped += matchesStepByStep(text);
  }
  EXPECT_GT(jumped, 11);  // 15 of the 40 here; 7 when a parked request stopped every jump
}

// Curves of some FIFOs only (RunConfig::curvesOf, as the channel assignment records its DMAs' streams):
// those are the curves a full recording gives, the others empty, and every other figure the same.
TEST(Periodic, CurvesOfTheFifosAskedFor) {
  std::mt19937 rng(20261129);
  for (int iter = 0; iter < 40; ++iter) {
    std::string text =
        randomNetwork(rng, 2 * std::uniform_int_distribution<int>(100, 500)(rng), true, iter % 2 ? 400 : 0);
    sim::RunConfig all = periodic(true), some = periodic(true);
    sim::SimResult full = simulateText(text, false, {}, all);
    some.curvesOf.assign(full.fifos.size(), 0);
    for (size_t f = 0; f < full.fifos.size(); f += 2) some.curvesOf[f] = 1;
    sim::SimResult got = simulateText(text, false, {}, some);
    ASSERT_EQ(got.cycles, full.cycles) << text;
    for (size_t f = 0; f < full.fifos.size(); ++f) {
      EXPECT_EQ(got.fifos[f].maxOccupancy, full.fifos[f].maxOccupancy) << text;
      for (auto [a, b] : {std::pair{&got.fifos[f].writeTimes, &full.fifos[f].writeTimes},
                          std::pair{&got.fifos[f].readTimes, &full.fifos[f].readTimes}}) {
        ASSERT_EQ(a->size(), f % 2 ? 0 : b->size()) << text;
        for (size_t k = 0; k < a->size(); ++k) {
          EXPECT_EQ((*a)[k].start, (*b)[k].start) << text;
          EXPECT_EQ((*a)[k].count, (*b)[k].count) << text;
        }
      }
    }
    for (size_t t = 0; t < full.tasks.size(); ++t) EXPECT_EQ(got.tasks[t].end, full.tasks[t].end) << text;
  }
}

// Random networks with trips long enough to settle: jumps on against the reference (cycles, ends, stalls,
// occupancy, deadlock) and against step by step (everything, curves and stall spans included), under both
// schedulers.
TEST(Periodic, RandomNetworksMatchStepByStep) {
  std::mt19937 rng(20261126);
  int jumped = 0, deadlocks = 0;
  for (int iter = 0; iter < 300; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(100, 500)(rng);
    std::string text = randomNetwork(rng, n, iter % 3 == 0);
    Network net = parseNetwork(text, "random.yaml");
    ReferenceResult ref = referenceSimulate(net, {});
    for (bool systemc : {false, true}) {
      for (bool record : {false, true}) {
        sim::SimResult want = simulateText(text, systemc, {}, stepByStep(record));
        sim::SimResult got = simulateText(text, systemc, {}, periodic(record));
        expectSame(got, want, text);
        ASSERT_EQ(got.deadlock, ref.deadlock) << text;
        ASSERT_EQ(got.cycles, ref.cycles) << text;
        for (size_t t = 0; t < got.tasks.size(); ++t) {
          EXPECT_EQ(got.tasks[t].end, ref.taskEnd[t]) << text;
          EXPECT_EQ(got.tasks[t].stallFull, ref.stallFull[t]) << text;
          EXPECT_EQ(got.tasks[t].stallEmpty, ref.stallEmpty[t]) << text;
        }
        for (size_t f = 0; f < got.fifos.size(); ++f) EXPECT_EQ(got.fifos[f].maxOccupancy, ref.maxOccupancy[f]) << text;
        if (!systemc && !record) {
          jumped += got.jumpedEvents > got.events / 2;
          deadlocks += got.deadlock;
        }
      }
    }
  }
  // Many networks reach a steady state and jump over most of their events (55 of the 300 here; 171
  // deadlock, and unbounded FIFOs let a task run ahead alone), and many deadlock.
  EXPECT_GT(jumped, 45);
  EXPECT_GT(deadlocks, 100);
}

// Phases whose first loop runs outside the pipeline (outer: 1: a program phase per outer iteration, so
// hundreds of short phases a task): jumps on against step by step and the reference.
TEST(Periodic, RandomNetworksWithOuterLoopsMatchStepByStep) {
  std::mt19937 rng(20261206);
  int drained = 0;
  for (int iter = 0; iter < 60; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(100, 500)(rng);
    std::string text = randomNetwork(rng, n, iter % 2 == 0, iter % 3 ? 0 : n, true);
    drained += text.find("outer: 1") != std::string::npos;
    Network net = parseNetwork(text, "random.yaml");
    ReferenceResult ref = referenceSimulate(net, {});
    sim::SimResult want = simulateText(text, false, {}, stepByStep(true));
    sim::SimResult got = simulateText(text, false, {}, periodic(true));
    expectSame(got, want, text);
    ASSERT_EQ(got.deadlock, ref.deadlock) << text;
    ASSERT_EQ(got.cycles, ref.cycles) << text;
    for (size_t t = 0; t < got.tasks.size(); ++t) EXPECT_EQ(got.tasks[t].end, ref.taskEnd[t]) << text;
  }
  EXPECT_GT(drained, 40);
}

// Triangular nests (trips over the indices of the loops outside the pipeline: a run's length repeats every
// 3 iterations of i0, or of i0 + i1): jumps on against step by step and the reference. (Each run is a
// phase of the program, over which the jumps do not reach: what this checks is that they stay off.)
TEST(Periodic, RandomNetworksWithTriangularNestsMatchStepByStep) {
  std::mt19937 rng(20261207);
  int deadlocks = 0;
  for (int iter = 0; iter < 60; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(100, 500)(rng);
    std::string text = randomNetwork(rng, n, iter % 2 == 0, iter % 3 ? 0 : n, false, true);
    Network net = parseNetwork(text, "random.yaml");
    ReferenceResult ref = referenceSimulate(net, {});
    sim::SimResult want = simulateText(text, false, {}, stepByStep(true));
    sim::SimResult got = simulateText(text, false, {}, periodic(true));
    expectSame(got, want, text);
    deadlocks += got.deadlock;
    ASSERT_EQ(got.deadlock, ref.deadlock) << text;
    ASSERT_EQ(got.cycles, ref.cycles) << text;
    for (size_t t = 0; t < got.tasks.size(); ++t) EXPECT_EQ(got.tasks[t].end, ref.taskEnd[t]) << text;
  }
  EXPECT_GT(deadlocks, 5);
  EXPECT_LT(deadlocks, 55);
}

// Deep FIFOs that fill over many periods (a writer ahead of its reader, below the depth): the period
// repeats while the writes need no room, the reads it jumps over queue up for the writes beyond the depth.
TEST(Periodic, RandomNetworksWithDeepFifosMatchStepByStep) {
  std::mt19937 rng(20261128);
  int jumped = 0;
  for (int iter = 0; iter < 150; ++iter) {
    int n = 2 * std::uniform_int_distribution<int>(100, 500)(rng);
    std::string text = randomNetwork(rng, n, iter % 2 == 0, n);
    Network net = parseNetwork(text, "random.yaml");
    ReferenceResult ref = referenceSimulate(net, {});
    for (bool record : {false, true}) {
      sim::SimResult want = simulateText(text, false, {}, stepByStep(record));
      sim::SimResult got = simulateText(text, false, {}, periodic(record));
      expectSame(got, want, text);
      ASSERT_EQ(got.cycles, ref.cycles) << text;
      for (size_t f = 0; f < got.fifos.size(); ++f)
        EXPECT_EQ(got.fifos[f].maxOccupancy, ref.maxOccupancy[f]) << text;
      if (!record) jumped += got.jumpedEvents > got.events / 2;
    }
  }
  EXPECT_GT(jumped, 10);  // 16 of the 150 here (5 when a FIFO below its depth never repeated)
}

// A DMA write whose data come only at the end (its writer reads a long weight stream first) waits, opened,
// with nothing in flight, while the stream from HBM repeats: the periods jump over it, as over any task
// that does not move, and every figure is the step-by-step run's.
TEST(Periodic, AnIdleDmaWriteDoesNotStopTheJumps) {
  const int64_t tokens = 1 << 20;
  std::string text =
      "network: idle\nfifos:\n  - {name: s, width: 64, depth: 8}\n  - {name: o, width: 64, depth: 2}\n"
      "tasks:\n"
      "  - {name: d, kind: dma_read, channel: 0, bytes: " +
      std::to_string(tokens * 8) +
      ", ports: [{fifo: s, dir: out}]}\n"
      "  - {name: c, phases: [{trip: [" +
      std::to_string(tokens) +
      "], ii: 1, latency: 2, ports: [{fifo: s, dir: in}]},\n"
      "                       {trip: [16], ii: 1, latency: 1, ports: [{fifo: o, dir: out}]}]}\n"
      "  - {name: w, kind: dma_write, channel: 1, bytes: 128, ports: [{fifo: o, dir: in}]}\n";
  for (bool systemc : {false, true}) {
    for (bool record : {false, true}) {
      sim::SimResult want = simulateText(text, systemc, {}, stepByStep(record));
      sim::SimResult got = simulateText(text, systemc, {}, periodic(record));
      expectSame(got, want, text);
      EXPECT_GT(got.jumpedEvents, got.events * 9 / 10) << systemc << record;
    }
  }
}

// DMA writes idle while the streams from HBM run: each read stream's consumer writes its own output only
// after its last read, through a DMA write on a channel a read may share (a port with nothing queued holds
// its channel's service back, so the reads there go through forceServe). Shallow FIFOs leave requests
// waiting on the channels while others are served. Every figure as step by step.
TEST(Periodic, RandomNetworksWithIdleDmaWritesMatchStepByStep) {
  std::mt19937 rng(20261203);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int jumped = 0;
  for (int iter = 0; iter < 40; ++iter) {
    std::string fifos, tasks;
    int streams = pick(1, 3);
    for (int k = 0; k < streams; ++k) {
      std::string s = "s" + std::to_string(k), o = "o" + std::to_string(k), n = std::to_string(k);
      int64_t tokens = 1024LL * pick(8, 64) + pick(0, 1) * pick(1, 63), out = 8 * pick(1, 8);
      fifos += "  - {name: " + s + ", width: 64, depth: " + std::to_string(pick(1, 16)) + "}\n";
      fifos += "  - {name: " + o + ", width: 64, depth: " + std::to_string(pick(1, 4)) + "}\n";
      tasks += "  - {name: d" + n + ", kind: dma_read, channel: " + std::to_string(pick(0, 1)) +
               ", bytes: " + std::to_string(tokens * 8) + ", ports: [{fifo: " + s + ", dir: out}]}\n";
      tasks += "  - {name: c" + n + ", phases: [{trip: [" + std::to_string(tokens) +
               "], ii: " + std::to_string(pick(1, 4)) + ", latency: " + std::to_string(pick(1, 5)) +
               ", ports: [{fifo: " + s + ", dir: in}]}, {trip: [" + std::to_string(out) +
               "], ii: 1, latency: 1, ports: [{fifo: " + o + ", dir: out}]}]}\n";
      tasks += "  - {name: w" + n + ", kind: dma_write, channel: " + std::to_string(pick(0, 1)) +
               ", bytes: " + std::to_string(out * 8) + ", ports: [{fifo: " + o + ", dir: in}]}\n";
    }
    std::string text = "network: idle\nfifos:\n" + fifos + "tasks:\n" + tasks;
    jumped += matchesStepByStep(text);
  }
  EXPECT_GT(jumped, 10);
}

// DMA reads into consumers and producers into DMA writes, several to a channel, of random sizes, token
// widths, paces and depths, some in a second group (gated DMAs on a channel another streams on): the HBM
// model's state (requests, bursts in flight, the channel's time) moves with the rest, and channel
// statistics and busy spans come out the same as step by step.
TEST(Periodic, RandomDmaNetworksMatchStepByStep) {
  std::mt19937 rng(20261127);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int jumped = 0;
  for (int iter = 0; iter < 60; ++iter) {
    std::string fifos, tasks;
    int streams = pick(1, 4);
    for (int k = 0; k < streams; ++k) {
      std::string f = "s" + std::to_string(k);
      int tokenBytes = 8 << pick(0, 3);  // 64 to 512 bits
      int64_t tokens = 1024LL * pick(16, 200) + pick(0, 1) * pick(1, 63);
      int depth = pick(0, 3) == 0 ? 2 : pick(1, 64);
      fifos += "  - {name: " + f + ", width: " + std::to_string(tokenBytes * 8) + ", depth: " + std::to_string(depth) + "}\n";
      // Some pairs run as a second kernel invocation: its DMAs wait, gated, while the first group's stream.
      std::string group = pick(0, 2) == 0 ? "group: 1, " : "";
      std::string dma = group + "kind: " + std::string(k % 3 == 2 ? "dma_write" : "dma_read") +
                        ", channel: " + std::to_string(pick(0, 1)) + ", bytes: " + std::to_string(tokens * tokenBytes);
      std::string loop = group + "phases: [{trip: [" + std::to_string(tokens) + "], ii: " + std::to_string(pick(1, 3)) +
                         ", latency: " + std::to_string(pick(1, 6)) + ", ports: [{fifo: " + f;
      if (k % 3 == 2) {
        tasks += "  - {name: p" + std::to_string(k) + ", " + loop + ", dir: out}]}]}\n";
        tasks += "  - {name: d" + std::to_string(k) + ", " + dma + ", ports: [{fifo: " + f + ", dir: in}]}\n";
      } else {
        tasks += "  - {name: d" + std::to_string(k) + ", " + dma + ", ports: [{fifo: " + f + ", dir: out}]}\n";
        tasks += "  - {name: c" + std::to_string(k) + ", " + loop + ", dir: in}]}]}\n";
      }
    }
    std::string text = "network: dmas\nfifos:\n" + fifos + "tasks:\n" + tasks;
    jumped += matchesStepByStep(text);
  }
  EXPECT_GT(jumped, 20);  // 27 of the 60 here
}

// A network of parts at their own paces joined at the end, as a layer's weight streams and kernels meet:
// each part is a pacer sending a token a row to a worker that writes the row's W tokens, or a DMA read
// (on a channel another part may share) into a worker; a joiner reads a token of every part a cycle, into
// a sink or a DMA write, and sometimes sends a token back to the first worker (which may deadlock);
// sometimes a second group streams a DMA read of its own on a shared channel. Depths from 1 to unbounded,
// rows outside the pipeline or not.
std::string randomPartsNetwork(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto depth = [&](int lo, int hi) {
    return pick(0, 3) == 0 ? std::string("unbounded") : std::to_string(pick(lo, hi));
  };
  int64_t w = 8 << pick(0, 3), rows = pick(100, 2000), tokens = w * rows;
  int parts = pick(1, 3), channels = pick(1, 2), basePace = pick(20, 500);
  bool back = pick(0, 5) == 0;
  std::string fifos, tasks, joinPorts;
  for (int k = 0; k < parts; ++k) {
    std::string n = std::to_string(k), worker = "w" + n, out = "o" + n;
    fifos += "  - {name: " + out + ", width: 32, depth: " + depth(2, 6000) + "}\n";
    std::string feedback = back && k == 0 ? ", {fifo: fb, dir: in, level: -1}" : "";
    std::string outer = pick(0, 2) == 0 ? ", outer: 1" : "";
    if (pick(0, 1) == 0) {  // paced
      int pace = pick(0, 1) ? basePace + pick(-30, 30) : pick(20, 600);
      fifos += "  - {name: q" + n + ", width: 32, depth: " + std::to_string(pick(1, 3)) + "}\n";
      tasks += "  - {name: p" + n + ", phases: [{trip: [" + std::to_string(rows) +
               "], ii: " + std::to_string(std::max(w + 1, static_cast<int64_t>(pace))) +
               ", latency: " + std::to_string(pick(1, 4)) + ", ports: [{fifo: q" + n + ", dir: out}]}]}\n";
      tasks += "  - {name: " + worker + ", phases: [{trip: [" + std::to_string(rows) + ", " +
               std::to_string(w) + "], ii: " + std::to_string(pick(1, 2)) +
               ", latency: " + std::to_string(pick(1, 8)) + outer + ", ports: [{fifo: q" + n +
               ", dir: in, level: 0}, {fifo: " + out + ", dir: out}" + feedback + "]}]}\n";
    } else {  // fed from HBM
      int bytes = 8 * pick(1, 24);
      fifos += "  - {name: s" + n + ", width: " + std::to_string(bytes * 8) +
               ", depth: " + std::to_string(pick(1, 64)) + "}\n";
      tasks += "  - {name: d" + n + ", kind: dma_read, channel: " + std::to_string(pick(0, channels - 1)) +
               ", bytes: " + std::to_string(tokens * bytes) + ", ports: [{fifo: s" + n + ", dir: out}]}\n";
      tasks += "  - {name: " + worker + ", phases: [{trip: [" + std::to_string(rows) + ", " +
               std::to_string(w) + "], ii: " + std::to_string(pick(1, 3)) +
               ", latency: " + std::to_string(pick(1, 8)) + outer + ", ports: [{fifo: s" + n +
               ", dir: in}, {fifo: " + out + ", dir: out}" + feedback + "]}]}\n";
    }
    joinPorts += (k ? ", " : "") + std::string("{fifo: ") + out + ", dir: in}";
  }
  if (back) {
    fifos += "  - {name: fb, width: 32, depth: " + std::to_string(pick(1, 4)) + "}\n";
    joinPorts += ", {fifo: fb, dir: out, level: -1}";
  }
  fifos += "  - {name: r, width: 64, depth: " + depth(1, 64) + "}\n";
  tasks += "  - {name: j, phases: [{trip: [" + std::to_string(tokens) +
           "], ii: " + std::to_string(pick(1, 2)) + ", latency: " + std::to_string(pick(1, 6)) +
           ", ports: [" + joinPorts + ", {fifo: r, dir: out}]}]}\n";
  if (pick(0, 1))
    tasks += "  - {name: store, kind: dma_write, channel: " + std::to_string(pick(0, channels - 1)) +
             ", bytes: " + std::to_string(tokens * 8) + ", ports: [{fifo: r, dir: in}]}\n";
  else
    tasks += "  - {name: sink, phases: [{trip: [" + std::to_string(tokens) +
             "], ii: " + std::to_string(pick(1, 3)) + ", latency: 1, ports: [{fifo: r, dir: in}]}]}\n";
  if (pick(0, 3) == 0) {  // a second invocation streaming on a channel of the first's
    int64_t more = 1024LL * pick(4, 64);
    fifos += "  - {name: g, width: 64, depth: " + std::to_string(pick(1, 16)) + "}\n";
    tasks += "  - {name: gd, group: 1, kind: dma_read, channel: " + std::to_string(pick(0, channels - 1)) +
             ", bytes: " + std::to_string(more * 8) + ", ports: [{fifo: g, dir: out}]}\n";
    tasks += "  - {name: gc, group: 1, phases: [{trip: [" + std::to_string(more) +
             "], ii: " + std::to_string(pick(1, 3)) + ", latency: 2, ports: [{fifo: g, dir: in}]}]}\n";
  }
  return "network: parts\nfifos:\n" + fifos + "tasks:\n" + tasks;
}

// Random networks of parts (randomPartsNetwork) and of randomNetwork's kinds: every figure as step by step,
// and the reference's where no DMA runs. STC_FUZZ_ITERS and STC_FUZZ_SEED run a longer search.
TEST(Periodic, RandomNetworksOfPartsMatchStepByStep) {
  const char* iters = std::getenv("STC_FUZZ_ITERS");
  const char* seed = std::getenv("STC_FUZZ_SEED");
  std::mt19937 rng(seed ? static_cast<unsigned>(std::stoul(seed)) : 20261207u);
  int count = iters ? std::stoi(iters) : 40, jumped = 0;
  for (int iter = 0; iter < count; ++iter) {
    int kind = iter % 4;
    int n = 2 * std::uniform_int_distribution<int>(100, 2000)(rng);
    std::string text = kind < 2
                           ? randomPartsNetwork(rng)
                           : randomNetwork(rng, n, kind == 2, iter % 3 ? 0 : n, iter % 5 == 0, iter % 7 == 0);
    jumped += matchesStepByStep(text);
    if (::testing::Test::HasFailure()) return;
    if (text.find("dma_") != std::string::npos) continue;
    Network net = parseNetwork(text, "random.yaml");
    ReferenceResult ref = referenceSimulate(net, {});
    sim::SimResult got = simulateText(text, false, {}, periodic(false));
    ASSERT_EQ(got.deadlock, ref.deadlock) << text;
    ASSERT_EQ(got.cycles, ref.cycles) << text;
    for (size_t t = 0; t < got.tasks.size(); ++t) ASSERT_EQ(got.tasks[t].end, ref.taskEnd[t]) << text;
  }
  std::printf("%d of %d jumped over half their events\n", jumped, count);
  if (!iters && !seed) {
    EXPECT_GT(jumped, 3);  // 5 of the 40 here
  }
}

}  // namespace
}  // namespace stc::testing
