// FIFO sizing.
//
// 1. Simulate with every FIFO unbounded but a DMA read's, recording token curves. A DMA read runs ahead
//    of its reader by what the m_axi read buffer holds (outstanding bursts, modelled by the HBM), and its
//    FIFO is 3 deep (a token a cycle through RAM): unbounded, every weight stream would
//    race ahead at channel speed, taking the channels from the streams the critical path waits for, and
//    the sized network would follow that slower schedule (Llama's decode layer: 30,030 cycles against
//    27,099). The same holds for the rest of such a stream's way to its kernel, through an adapter or a
//    converter (hbmStreams): unbounded behind a converter, a 128-row decoder layer's weights were read
//    ahead while the attention ran, and the run took 484,217 cycles where pacing them gives 450,509.
//    For FIFO f from task i to task j, with
//    w_k and r_k its write and read times relative to the starts of i and j:
//      D_f = max_k (w_k + raw - r_k)     the smallest start delay s_j - s_i at which every token is
//                                        readable when j wants it
//      T_f tokens, II_source and II_target (mean spacing of writes and of reads).
// 2. LP (GLPK): minimise sum_f width_f / II_source_f * (s_j - s_i) subject to D_f <= s_j - s_i <= M_f,
//    M_f the delay measured in step 1, and 0 <= s_i - z <= C - (end_i - start_i) for every task, C the
//    latency of step 1 and z the schedule's origin (the starts of step 1 satisfy all of them). Producers
//    move as late and consumers as early as their neighbours allow; a reconvergent short path keeps the
//    delay its long twin imposes. The upper bounds keep every FIFO within its maximum occupancy (so the cap
//    of step 3 never breaks the schedule) and the schedule within the latency of step 1.
// 3. Token equations on the measured curves, with delay d = s_j - s_i. A writer must never fall behind
//    the schedule, or the FIFOs of its other outputs and of its inputs, sized for it, stall their other
//    ends: write k needs read k - depth by w_k - 1, so depth_f = max_k (k + 1 - #{m : r_m + d < w_k})
//    (for a faster source T - floor(...), for a slower one ceil((d - D)/II_source): the paper's closed
//    forms). Sized so, every access happens no later than the schedule says (a task ahead of it stalls
//    back to it at most), so the network neither deadlocks nor runs slower than step 1, stage groups of
//    several accesses included. A writer with one output, fed only by such writers, may fall behind (a
//    DMA read; an input of one token, a converter's region of a whole tensor, holds back nothing):
//    depth_f is the smallest depth at which, replaying the writer with back-pressure,
//    every token is still readable when the reader wants it (bisection). Either way at least 1 and at most
//    the maximum occupancy of step 1, which stalls no writer step 1 did not stall (a DMA read's, 3).
// 4. Simulate with those depths. On a deadlock, double the FULL FIFOs of the wait-for cycle; when more
//    than 1% slower than step 1, double the FIFOs whose writers stalled; each capped at the maximum
//    occupancy, so the loop ends at worst on the maximum-occupancy baseline.
// 5. When those depths take more bits than the budget (the platform's BRAM and URAM unless set), the
//    unbounded run was not a schedule any device keeps: a converter replayed a row for every column panel
//    long before the matmul read it, or a fork's writer, which step 3 keeps on schedule, ran ahead of its
//    slowest reader (a 128-row GPT-2 layer asked for 1.6 Gbit). Steps 1 to 4 run again on a run with
//    every FIFO as deep as the network's and at least kDmaReadDepth (a converter's region at 1), in which
//    writers keep their readers' pace; the latency checked is that run's. Kept when it takes fewer bits (16
//    Mbit, 2% slower, there).
// 6. When the depths of step 4 are within the budget but take more than a 4096th of it, and the FIFOs behind
//    converters' readers hold a quarter of their bits or more (rows replayed per column tile, run ahead of
//    a consumer waiting for another input), steps 1 to 4 run again with those FIFOs bounded as the
//    network's (SizingOptions::boundReplays): the rows then wait in front of the converters, once. Kept
//    when it takes fewer bits within 1% of step 1's latency (a 64-row BERT attention: 72.4% -> 28.1% of
//    its intermediate results kept whole, at the same cycles). Then steps 1 to 4
//    run paced too, and that sizing is kept where it takes fewer bits and stays within 1% of step 1's
//    latency, 2% more for each halving of the bits, at most 5% (fewerBitsTolerance): branches that wait for
//    each other then wait in their writers, not in FIFOs (a 128-row GPT-2 prefill layer, W4A8: 10.1 MB of
//    intermediate results sized from the unbounded run, against 88 KB paced, 0.1% slower). Below that share
//    the second sizing is not worth its time.
// 7. Given SizingOptions::fits, a design that does not fit the device is sized the other way (paced when
//    it was not, from the unbounded run when it was paced for its fewer bits), and that one is kept when
//    it fits: bits are not blocks.
#include "compiler/sizing/fifo_sizing.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>

#include "compiler/sizing/lp_solver.h"
#include "compiler/sizing/token_times.h"
#include "sim/engine.h"

namespace stc::sizing {

MemoryBinding bindMemory(int64_t depth, int64_t width) {
  int64_t bits = depth * width;
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (bits <= 1024) return {"shift_register", ceilDiv(depth, 32) * width};  // SRL32: 32 deep per LUT and bit
  if (depth <= 64) return {"lutram", width};                               // RAM64X1D: one LUT per bit
  int64_t bram = ceilDiv(width, 36) * ceilDiv(depth, 512);
  if (bram <= 16) return {"bram18k", bram};
  return {"uram", ceilDiv(width, 72) * ceilDiv(depth, 4096)};
}

namespace {

// The smallest depth that keeps the reader on time, by bisection over [1, cap].
int64_t consumerPacedDepth(const TokenTimes& w, const TokenTimes& r, int64_t delay, int64_t width,
                           int64_t cap) {
  auto ok = [&](int64_t d) { return readsOnTime(w, r, delay, d, sim::readAfterWrite(width, d)); };
  if (!ok(cap)) return cap;
  int64_t lo = 0, hi = cap;  // ok(hi); lo fails or is 0
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (ok(mid) ? hi : lo) = mid;
  }
  return hi;
}

// A DMA read's FIFO in the measuring run: a token a cycle even through a RAM FIFO (read after write 2).
// Its read-ahead beyond that is the m_axi read buffer's (outstanding bursts), which the HBM model holds.
constexpr int64_t kDmaReadDepth = 3;

// Steps 1 to 3 at one binding: out's measurements and each FIFO's depth and cap.
struct Proposal {
  SizingResult out;
  std::vector<int64_t> depths, cap;
};

// The FIFOs that carry a stream read from HBM on to the kernel that uses it: written by a DMA read, or by
// a task with one output that only passes such streams on, one of a converter's two tasks (on either
// side of its region FIFO) or an adapter (one input, one phase, tokens of another width: beats joined,
// split or widened; a row's statistics, too, where a norm reads its input from HBM, which is harmless). The smallest such set: from the DMA reads on, a task joins once every
// task that feeds it has (a loop of tasks fed by nothing else stays out).
std::vector<char> hbmStreams(const sim::Program& prog) {
  size_t nt = prog.tasks.size();
  std::vector<int> outputs(nt, 0), inputs(nt, 0);
  std::vector<int64_t> inWidth(nt, 0), outWidth(nt, 0);
  std::vector<char> region(nt, 0);
  for (const auto& f : prog.fifos) {
    size_t w = static_cast<size_t>(f.writer), r = static_cast<size_t>(f.reader);
    ++outputs[w];
    ++inputs[r];
    outWidth[w] = f.width;
    inWidth[r] = f.width;
    if (isRegionName(f.name)) region[w] = region[r] = 1;
  }
  std::vector<char> fed(nt, 0), mover(nt, 0);
  for (size_t t = 0; t < nt; ++t) {
    const sim::TaskProgram& task = prog.tasks[t];
    if (task.dma) {
      fed[t] = !task.dma->write;
      continue;
    }
    bool adapter = inputs[t] == 1 && task.networkPhases == 1 && inWidth[t] != outWidth[t];
    mover[t] = outputs[t] == 1 && inputs[t] >= 1 && (region[t] || adapter);
  }
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<char> allFed(nt, 1);
    for (const auto& f : prog.fifos)
      if (!fed[static_cast<size_t>(f.writer)]) allFed[static_cast<size_t>(f.reader)] = 0;
    for (size_t t = 0; t < nt; ++t)
      if (mover[t] && !fed[t] && allFed[t]) fed[t] = changed = true;
  }
  std::vector<char> hbm(prog.fifos.size(), 0);
  for (size_t f = 0; f < prog.fifos.size(); ++f) hbm[f] = fed[static_cast<size_t>(prog.fifos[f].writer)];
  return hbm;
}

// The FIFOs a converter's reader writes (it reads a region FIFO and writes one stream): its consumer's
// order, a row replayed for every column tile. Unbounded in the measuring run, the replays run ahead of a
// consumer waiting for another input and pile up there, each row as many times as it is replayed (a
// 64-row BERT attention's q in front of the scores: 86.5 KB for 49 KB of q); SizingOptions::boundReplays.
std::vector<char> converterReads(const sim::Program& prog) {
  std::vector<char> readsRegion(prog.tasks.size(), 0);
  std::vector<int> outputs(prog.tasks.size(), 0);
  for (const auto& f : prog.fifos) {
    if (isRegionName(f.name)) readsRegion[static_cast<size_t>(f.reader)] = 1;
    ++outputs[static_cast<size_t>(f.writer)];
  }
  std::vector<char> out(prog.fifos.size(), 0);
  for (size_t f = 0; f < prog.fifos.size(); ++f) {
    auto w = static_cast<size_t>(prog.fifos[f].writer);
    out[f] = readsRegion[w] && outputs[w] == 1 && !isRegionName(prog.fifos[f].name);
  }
  return out;
}

// `paced`: measure with every FIFO at least kDmaReadDepth deep and at least its depth in the network
// instead of unbounded (step 5), a converter's region at 1: three blocks, one written, one read and one
// waiting, the least that keeps its writer at the reader's pace (at the network's 2, a KV cache's
// converter was filled a region further ahead and sized so: 2.1 Mbit more a cache in a decode layer).
// The measuring run's depths: unbounded; a stream from HBM (hbmStreams) kDmaReadDepth deep, or its
// depth in the network if deeper, unless prefetching; paced ones as above; a pinned FIFO at its pin.
}  // namespace

std::vector<int64_t> measureDepths(const sim::Program& prog, const SizingOptions& options, bool paced) {
  std::vector<int64_t> depths(prog.fifos.size(), kUnboundedDepth);
  std::vector<char> hbm = options.prefetch ? std::vector<char>(prog.fifos.size(), 0) : hbmStreams(prog);
  std::vector<char> replays =
      options.boundReplays ? converterReads(prog) : std::vector<char>(prog.fifos.size(), 0);
  for (size_t f = 0; f < prog.fifos.size(); ++f) {
    const auto& dma = prog.tasks[static_cast<size_t>(prog.fifos[f].writer)].dma;
    if (dma && !dma->write && !options.prefetch) depths[f] = kDmaReadDepth;
    else if (hbm[f] || replays[f])
      depths[f] = std::max(kDmaReadDepth, prog.fifos[f].depth);
    if (paced && prog.fifos[f].depth != kUnboundedDepth)
      depths[f] = isRegionName(prog.fifos[f].name) ? 1 : std::max(kDmaReadDepth, prog.fifos[f].depth);
    auto pin = options.pinned.find(prog.fifos[f].name);
    if (pin != options.pinned.end()) depths[f] = pin->second;
  }
  return depths;
}

namespace {

Proposal propose(const sim::Program& prog, const SizingOptions& options, bool paced) {
  Proposal p;
  SizingResult& out = p.out;
  sim::RunConfig measure;
  measure.depths = measureDepths(prog, options, paced);
  measure.recordCurves = true;
  out.unbounded = sim::runDirect(prog, measure);
  // Unbounded, a deadlock here is a true one: a DMA read, with no input, closes no wait cycle; unless
  // a pinned depth closes it. Paced, the network's depths may be too small; sizeFifosAcross then keeps
  // the unbounded measurement.
  if (out.unbounded.deadlock) {
    out.trueDeadlock = true;
    if (!options.pinned.empty()) {
      sim::RunConfig free = measure;
      free.recordCurves = false;
      for (size_t f = 0; f < prog.fifos.size(); ++f)
        if (options.pinned.count(prog.fifos[f].name)) free.depths[f] = kUnboundedDepth;
      out.pinnedDeadlock = !sim::runDirect(prog, free).deadlock;
      out.trueDeadlock = !out.pinnedDeadlock;
    }
    return p;
  }
  out.cyclesUnbounded = out.unbounded.cycles;
  const auto& tasks = out.unbounded.tasks;
  size_t nf = prog.fifos.size();

  // Step 1: the token model of each FIFO, on the runs of times the run recorded (token_times.h).
  std::vector<double> bound(nf), iiSource(nf), iiTarget(nf);
  auto writeTimes = [&](size_t f) {
    const sim::FifoStats& fs = out.unbounded.fifos[f];
    return TokenTimes(fs.writeTimes, tasks[static_cast<size_t>(fs.writer)].start);
  };
  for (size_t f = 0; f < nf; ++f) {
    const sim::FifoStats& fs = out.unbounded.fifos[f];
    TokenTimes w = writeTimes(f), r(fs.readTimes, tasks[static_cast<size_t>(fs.reader)].start);
    int64_t raw = sim::readAfterWrite(fs.width, measure.depths[f]);  // as measured
    bound[f] = static_cast<double>(leastDelay(w, r, raw));
    iiSource[f] = std::max(1.0, meanSpacing(w));
    iiTarget[f] = std::max(1.0, meanSpacing(r));
  }
  double slowest = 1.0;  // kConservative: every read schedule stretched to the slowest pace
  for (size_t f = 0; f < nf; ++f) slowest = std::max({slowest, iiSource[f], iiTarget[f]});
  auto readTimes = [&](size_t f) {
    const sim::FifoStats& fs = out.unbounded.fifos[f];
    TokenTimes r(fs.readTimes, tasks[static_cast<size_t>(fs.reader)].start);
    if (options.strategy != Strategy::kConservative || r.size() == 0) return r;
    std::vector<sim::TimeRun> stretched;  // no longer equally spaced: a run a few tokens
    double scale = slowest / iiTarget[f];
    int64_t first = r.at(0);
    for (size_t i = 0; i < r.runCount(); ++i)
      for (int64_t k = r.firstIndex(i); k < r.endIndex(i); ++k)
        sim::appendTime(
            stretched,
            first + static_cast<int64_t>(std::ceil(static_cast<double>(r.timeAt(i, k) - first) * scale)));
    return TokenTimes(stretched, 0);
  };

  // Step 2: the LP over task start offsets, and one more variable z, the schedule's origin.
  DifferenceProblem lp;
  int origin = static_cast<int>(prog.tasks.size());
  lp.variables = origin + 1;
  for (size_t f = 0; f < nf; ++f) {
    int writer = prog.fifos[f].writer, reader = prog.fifos[f].reader;
    lp.edges.push_back({writer, reader, bound[f], static_cast<double>(prog.fifos[f].width) / iiSource[f]});
    lp.edges.push_back({reader, writer, -static_cast<double>(tasks[static_cast<size_t>(reader)].start -
                                                             tasks[static_cast<size_t>(writer)].start),
                        0.0});
  }
  for (size_t t = 0; t < prog.tasks.size(); ++t) {
    if (tasks[t].start < 0) continue;  // a task without events
    int v = static_cast<int>(t);
    lp.edges.push_back({origin, v, 0.0, 0.0});
    lp.edges.push_back({v, origin, -static_cast<double>(out.cyclesUnbounded - (tasks[t].end - tasks[t].start)), 0.0});
  }
  auto lpBegin = std::chrono::steady_clock::now();
  DifferenceSolution solution = solveDifferenceProblem(lp);
  out.lpSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - lpBegin).count();
  out.lpFeasible = solution.optimal && lp.verify(solution.x, 1e-6);

  // Step 3: depths from the token equations.
  std::vector<int64_t>& depths = p.depths;
  std::vector<int64_t>& cap = p.cap;
  depths.resize(nf);
  cap.resize(nf);
  std::vector<int64_t> outputs(prog.tasks.size(), 0);
  for (const auto& fp : prog.fifos) ++outputs[static_cast<size_t>(fp.writer)];
  // A writer may fall behind the schedule when it has one output and everything feeding it may too: its
  // stall then holds back only tasks that tolerate it (a DMA read, a chain of single-output tasks). An
  // input of one token holds back nothing: its writer has written it whenever the reader takes it (a
  // converter's region holding a whole tensor, K or V read out again for every query row).
  std::vector<char> mayStall(prog.tasks.size());
  for (size_t t = 0; t < prog.tasks.size(); ++t) mayStall[t] = outputs[t] == 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t f = 0; f < nf; ++f) {
      const auto& fp = prog.fifos[f];
      if (fp.tokens <= 1) continue;
      if (!mayStall[static_cast<size_t>(fp.writer)] && mayStall[static_cast<size_t>(fp.reader)]) {
        mayStall[static_cast<size_t>(fp.reader)] = 0;
        changed = true;
      }
    }
  }
  for (size_t f = 0; f < nf; ++f) {
    const sim::FifoStats& fs = out.unbounded.fifos[f];
    cap[f] = options.strategy == Strategy::kConservative ? fs.tokens : fs.maxOccupancy;
    int64_t delay = out.lpFeasible ? std::llround(solution.x[static_cast<size_t>(fs.reader)] -
                                                  solution.x[static_cast<size_t>(fs.writer)])
                                   : INT64_MAX / 4;
    int64_t depth = cap[f];
    if (out.lpFeasible) {
      const TokenTimes w = writeTimes(f), r = readTimes(f);
      // A shift register (raw 1) lets the reader go a cycle earlier.
      bool stalls = mayStall[static_cast<size_t>(fs.writer)];
      depth = stalls ? consumerPacedDepth(w, r, delay, fs.width, cap[f]) : noStallDepth(w, r, delay);
      if (!stalls) {
        int64_t shiftRegister = noStallDepth(w, r, delay - 1);
        if (shiftRegister * fs.width <= 1024) depth = shiftRegister;
      }
    }
    depths[f] = std::max<int64_t>(1, std::min(cap[f], depth));
    auto pin = options.pinned.find(fs.name);
    if (pin != options.pinned.end()) depths[f] = cap[f] = pin->second;  // never raised
    SizedFifo s;
    s.name = fs.name;
    s.width = fs.width;
    s.maxOccupancy = fs.maxOccupancy;
    s.tokens = fs.tokens;
    s.delay = out.lpFeasible ? static_cast<double>(delay) : 0.0;
    out.fifos.push_back(s);
  }

  return p;
}

// A simulation the depths must pass: no deadlock, at most `limit` cycles.
struct Check {
  const sim::Program* prog;
  int64_t limit;
  int64_t reference = 0;  ///< the measuring run's cycles, which the limit allows 1% over
};

// Step 4: verify at every check, raising what each failing simulation points at; returns the cycles of
// each check's last run.
std::vector<int64_t> verify(const std::vector<Check>& checks, const std::vector<int64_t>& cap, int maxRounds,
                            std::vector<int64_t>& depths, int& rounds) {
  size_t nf = depths.size();
  std::vector<int64_t> cycles(checks.size(), 0);
  sim::RunConfig config;  // stall spans unrecorded: the FIFOs' FULL stall cycles tell what to raise
  for (rounds = 1;; ++rounds) {
    config.depths = depths;
    bool failed = false;
    std::vector<char> raise(nf, 0);
    std::vector<sim::SimResult> runs(checks.size());
    tbb::parallel_for(size_t{0}, checks.size(), [&](size_t c) { runs[c] = sim::runDirect(*checks[c].prog, config); });
    for (size_t c = 0; c < checks.size(); ++c) {
      const sim::SimResult& run = runs[c];
      cycles[c] = run.deadlock ? 0 : run.cycles;
      if (!run.deadlock && run.cycles <= checks[c].limit) continue;
      failed = true;
      if (run.deadlock) {  // one of the cycle's FULL links must grow (see sim::findDepthFix)
        for (const sim::WaitEdge& e : run.deadlockCycle)
          if (e.write) raise[static_cast<size_t>(e.fifo)] = 1;
      } else {
        for (size_t f = 0; f < nf; ++f)
          if (run.fifos[f].stallFull > 0) raise[f] = 1;
      }
    }
    if (!failed) break;
    bool grew = false;
    for (size_t f = 0; f < nf; ++f) {
      if (!raise[f] || depths[f] >= cap[f]) continue;
      depths[f] = std::min(cap[f], depths[f] * 2);
      grew = true;
    }
    if (!grew || rounds >= maxRounds) {  // fall back to the baseline every FIFO at its cap
      if (depths == cap) break;
      depths = cap;
    }
  }
  return cycles;
}

// The bits every FIFO's largest occupancy takes (the maximum-occupancy baseline).
int64_t maxOccupancyBits(const std::vector<SizedFifo>& fifos) {
  int64_t bits = 0;
  for (const SizedFifo& s : fifos) bits += s.maxOccupancy * s.width;
  return bits;
}

// The depths into out's FIFOs, its totals and `sized`.
void settle(const std::vector<int64_t>& depths, SizingResult& out, Network& sized) {
  size_t nf = depths.size();
  for (size_t f = 0; f < nf; ++f) {
    SizedFifo& s = out.fifos[f];
    s.depth = depths[f];
    s.bits = depths[f] * s.width;
    s.memory = bindMemory(s.depth, s.width);
    out.memoryCounts[s.memory.kind] += 1;
    out.totalBits += s.bits;
    out.baselineFullBits += s.tokens * s.width;
    sized.fifos[f].depth = depths[f];
  }
  out.baselineMaxOccupancyBits += maxOccupancyBits(out.fifos);
}

// Step 6 runs where the free sizing takes more than this share of the budget (82 Kbit of the U55C's
// memory): below it a second sizing saves too little to pay for its time. At a sixteenth, attention and
// layers over 64 to 256 prompt rows kept 1.8 to 6.5 Mbit of FIFOs sized from the unbounded run where the
// paced sizing needs 0.9 to 1.4 Mbit within 0.3% of the cycles; at a 256th (1.3 Mbit), decode layers of
// a few unrolled matmuls kept up to 4.4 times their intermediate results kept whole in 0.6 Mbit (a
// SwiGLU MLP's rows read ahead in front of gate and up) where paced they hold 13% at the same cycles.
constexpr int64_t kPacedTrialShare = 4096;

// A paced result gives the unbounded run's figures as its own (steps 5 to 7): that run's cycles and
// maximum occupancies, its verifying rounds added.
void takeUnboundedFigures(SizingResult& paced, const SizingResult& free) {
  paced.cyclesUnbounded = free.cyclesUnbounded;
  paced.baselineMaxOccupancyBits = free.baselineMaxOccupancyBits;
  paced.rounds += free.rounds;
  for (size_t f = 0; f < paced.fifos.size(); ++f) paced.fifos[f].maxOccupancy = free.fifos[f].maxOccupancy;
}

int64_t withinOnePercent(int64_t cycles) {
  return cycles + cycles / 100;
}

int64_t withinTolerance(int64_t cycles, double tolerance) {
  return cycles + static_cast<int64_t>(std::floor(static_cast<double>(cycles) * tolerance));
}

}  // namespace

double fewerBitsTolerance(int64_t freeBits, int64_t pacedBits, int64_t budgetBits) {
  if (pacedBits <= 0 || freeBits <= pacedBits || freeBits <= budgetBits / 256) return 0.01;
  double halvings = std::log2(static_cast<double>(freeBits) / static_cast<double>(pacedBits));
  return std::min(0.05, 0.01 + 0.02 * halvings);
}

std::vector<int64_t> symbolSamples(int64_t maximum, int64_t tile) {
  std::vector<int64_t> at;
  for (int64_t v : {int64_t{1}, tile, tile + 1, int64_t{128}, maximum})
    if (v <= maximum && (at.empty() || at.back() < v)) at.push_back(v);
  return at;
}

std::vector<int64_t> rangeProbes(int64_t low, int64_t high) {
  std::set<int64_t> at;
  for (int64_t p = 1; p <= high; p *= 2)
    for (int64_t v : {p, p + 1})
      if (v >= low && v <= high) at.insert(v);
  return {at.begin(), at.end()};
}

SizingResult sizeFifos(const Network& net, const SizingOptions& options, Network& sized) {
  return sizeFifosAcross(net, options, {Bindings{}}, sized);
}

namespace {

// Steps 1 to 3 at every binding, measured unbounded or paced: the last binding's measurements, every FIFO at
// the largest depth and cap any binding asks for (out.trueDeadlock or pinnedDeadlock: nothing else).
struct Measured {
  Proposal merged;
  std::vector<Check> checks;
  /// The bits of the proposed depths: verifying only deepens them, so the sized total is at least this.
  int64_t proposedBits = 0;
};
Measured measureAll(const std::vector<sim::Program>& progs, const SizingOptions& options, bool paced) {
  std::vector<Proposal> proposals(progs.size());
  tbb::parallel_for(size_t{0}, progs.size(), [&](size_t i) { proposals[i] = propose(progs[i], options, paced); });
  Measured m;
  for (Proposal& p : proposals) {
    if (p.out.trueDeadlock || p.out.pinnedDeadlock) {
      m.merged = std::move(p);
      return m;
    }
  }
  Proposal& last = proposals.back();
  for (size_t i = 0; i < progs.size(); ++i) {
    m.checks.push_back(
        {&progs[i], withinOnePercent(proposals[i].out.cyclesUnbounded), proposals[i].out.cyclesUnbounded});
    for (size_t f = 0; f < last.depths.size(); ++f) {
      last.depths[f] = std::max(last.depths[f], proposals[i].depths[f]);
      last.cap[f] = std::max(last.cap[f], proposals[i].cap[f]);
      last.out.fifos[f].maxOccupancy =
          std::max(last.out.fifos[f].maxOccupancy, proposals[i].out.fifos[f].maxOccupancy);
    }
  }
  for (size_t f = 0; f < last.depths.size(); ++f) m.proposedBits += last.depths[f] * last.out.fifos[f].width;
  m.merged = std::move(last);
  return m;
}

// Step 4 on what measureAll proposed, and the depths into `sized`.
SizingResult finish(const Network& net, Measured& m, int maxRounds, bool paced, Network& sized) {
  sized = net;
  if (m.merged.out.trueDeadlock || m.merged.out.pinnedDeadlock) return m.merged.out;
  Proposal& last = m.merged;
  std::vector<int64_t> cycles = verify(m.checks, last.cap, maxRounds, last.depths, last.out.rounds);
  last.out.cyclesSized = cycles.back();
  last.out.cyclesSizedAt = cycles;
  settle(last.depths, last.out, sized);
  last.out.paced = paced;
  if (paced) last.out.cyclesPaced = last.out.cyclesUnbounded;
  return std::move(last.out);  // the measuring run's curves are large: m.merged.out is not read after this
}

SizingResult sizeWith(const Network& net, const std::vector<sim::Program>& progs,
                      const SizingOptions& options, bool paced, Network& sized) {
  Measured m = measureAll(progs, options, paced);
  return finish(net, m, options.maxRounds, paced, sized);
}

}  // namespace

namespace {

// Steps 1 to 6, by bits alone.
SizingResult sizeForBits(const Network& net, const SizingOptions& options, const std::vector<Bindings>& at,
                         Network& sized) {
  std::vector<sim::Program> progs;
  for (const Bindings& b : at) {
    Bindings all = options.bindings;
    for (const auto& [sym, value] : b) all[sym] = value;
    progs.push_back(sim::compileProgram(net, all, options.platform));
  }
  if (options.paced) {
    SizingResult paced = sizeWith(net, progs, options, true, sized);
    paced.pacedWhy = PacedReason::kAsked;
    // Else the network's depths (or a pin among them) deadlock: measured unbounded below.
    if (!paced.trueDeadlock && !paced.pinnedDeadlock) return paced;
  }
  int64_t budget = options.budgetBits > 0 ? options.budgetBits : options.platform.kernelResources().memoryBits();
  Measured unbounded = measureAll(progs, options, false);
  bool over = !unbounded.merged.out.trueDeadlock && !unbounded.merged.out.pinnedDeadlock &&
              unbounded.proposedBits > budget;
  std::optional<SizingResult> free;
  // Whether a sizing keeps the unbounded run's latency (within 1%, or `tolerance` of its cycles).
  auto keepsLatency = [&](const SizingResult& r, double tolerance) {
    bool keeps = r.cyclesSizedAt.size() == unbounded.checks.size();
    for (size_t i = 0; keeps && i < unbounded.checks.size(); ++i)
      keeps = r.cyclesSizedAt[i] > 0 &&
              r.cyclesSizedAt[i] <= std::max(unbounded.checks[i].limit,
                                             withinTolerance(unbounded.checks[i].reference, tolerance));
    return keeps;
  };
  if (!over) {
    free = finish(net, unbounded, options.maxRounds, false, sized);
    bool failed = free->trueDeadlock || free->pinnedDeadlock;
    // Step 6, first: replays piled up behind converters (a quarter of the bits or more) are measured
    // again bounded, and that sizing kept where it takes fewer bits at the same latency.
    if (!failed && options.pacedTrial && !options.boundReplays &&
        free->totalBits > budget / kPacedTrialShare) {
      std::vector<char> replays = converterReads(progs.front());
      int64_t replayBits = 0;
      for (size_t f = 0; f < replays.size() && f < free->fifos.size(); ++f)
        if (replays[f]) replayBits += free->fifos[f].bits;
      if (4 * replayBits >= free->totalBits) {
        SizingOptions bounded = options;
        bounded.boundReplays = true;
        Network boundedNet;
        SizingResult r = sizeWith(net, progs, bounded, false, boundedNet);
        if (!r.trueDeadlock && !r.pinnedDeadlock && r.totalBits < free->totalBits && keepsLatency(r, 0.01)) {
          takeUnboundedFigures(r, *free);  // as a paced result: the unbounded run's cycles and occupancies
          r.replaysBounded = true;
          free = std::move(r);
          sized = std::move(boundedNet);
        }
      }
    }
    if (failed || free->totalBits <= budget / kPacedTrialShare ||
        (!options.pacedTrial && free->totalBits <= budget))
      return std::move(*free);
  }
  bool within = free && free->totalBits <= budget;
  // Step 5: over the budget. Writers that raced ahead into unbounded FIFOs (a row replayed for every
  // column panel long before the matmul reads it, weights prefetched while their reader waits) set
  // depths no device holds; measured again with every FIFO as deep as the network's and at least
  // kDmaReadDepth, writers are paced by their readers, and the same steps size that run instead. Where
  // the unbounded measurement's proposal is over the budget already, its verification waits: paced
  // sizing below the proposal's bits wins whatever verifying would add to it.
  Network pacedNet;
  SizingResult paced = sizeWith(net, progs, options, true, pacedNet);
  bool pacedFailed = paced.trueDeadlock || paced.pinnedDeadlock;
  if (within) {  // Step 6: the free sizing holds; the paced one must keep its latency, in fewer bits
    bool keeps = !pacedFailed && paced.totalBits < free->totalBits;
    double tolerance = keeps ? fewerBitsTolerance(free->totalBits, paced.totalBits, budget) : 0;
    if (!keeps || !keepsLatency(paced, tolerance)) return std::move(*free);
    paced.pacedWhy = PacedReason::kFewerBits;
    paced.pacedTolerance = tolerance;
  } else {
    paced.pacedWhy = PacedReason::kOverMemory;
  }
  if (!free && (pacedFailed || paced.totalBits >= unbounded.proposedBits))
    free = finish(net, unbounded, options.maxRounds, false, sized);  // still over: verifying only deepens
  if (free && (pacedFailed || paced.totalBits >= free->totalBits)) return std::move(*free);
  if (!free) {  // the unbounded measurement's figures, as its verified result would give them
    free = std::move(unbounded.merged.out);
    free->rounds = 0;
    free->baselineMaxOccupancyBits = maxOccupancyBits(free->fifos);
  }
  takeUnboundedFigures(paced, *free);
  sized = std::move(pacedNet);
  return paced;
}

bool held(const SizingResult& r) {
  return !r.trueDeadlock && !r.pinnedDeadlock && !r.cyclesSizedAt.empty() &&
         std::all_of(r.cyclesSizedAt.begin(), r.cyclesSizedAt.end(), [](int64_t c) { return c > 0; });
}

}  // namespace

SizingResult sizeFifosAcross(const Network& net, const SizingOptions& options,
                             const std::vector<Bindings>& at, Network& sized) {
  if (at.empty()) return sizeFifos(net, options, sized);
  SizingResult r = sizeForBits(net, options, at, sized);
  if (!options.fits || options.paced || r.trueDeadlock || r.pinnedDeadlock || (held(r) && options.fits(sized)))
    return r;
  // Step 7: bits within the memory do not make a design fit the device (each FIFO takes whole BRAM or
  // URAM blocks, or LUTs, beside the kernels' own buffers). Sized from the unbounded run, it is sized
  // paced; kept paced for its fewer bits, it is sized from the unbounded run; the other design is kept
  // when it fits.
  SizingOptions other = options;
  if (!r.paced) {
    other.paced = true;
  } else if (r.pacedWhy == PacedReason::kFewerBits) {
    other.pacedTrial = false;
  } else {
    return r;  // paced over the memory: the unbounded run's depths take more bits than the budget
  }
  Network alternative;
  SizingResult a = sizeForBits(net, other, at, alternative);
  if (!held(a) || (other.paced && !a.paced) || !options.fits(alternative)) return r;
  if (a.paced) {
    a.pacedWhy = PacedReason::kOverDevice;
    takeUnboundedFigures(a, r);
  } else {
    a.rounds += r.rounds;
  }
  sized = std::move(alternative);
  return a;
}

SizingResult sizeFifosOverRange(const Network& net, const SizingOptions& options, const std::string& symbol,
                                int64_t low, int64_t high, int64_t tile, Network& sized,
                                std::vector<RangeCheck>& checks, const std::vector<int64_t>& alsoCheck,
                                int maxPasses) {
  auto inRange = [&](int64_t v) { return v >= low && v <= high; };
  std::set<int64_t> samples{low, high}, probes{low, high};
  for (int64_t v : symbolSamples(high, tile))
    if (inRange(v)) samples.insert(v);
  for (int64_t v : rangeProbes(low, high)) probes.insert(v);
  for (int64_t v : alsoCheck)
    if (inRange(v)) probes.insert(v);
  probes.insert(samples.begin(), samples.end());
  auto bind = [&](int64_t v) {
    Bindings b = options.bindings;
    b[symbol] = v;
    return b;
  };
  SizingResult r;
  for (int pass = 1;; ++pass) {
    std::vector<Bindings> at;  // increasing: the largest, whose run is reported, last
    for (int64_t v : samples) at.push_back({{symbol, v}});
    r = sizeFifosAcross(net, options, at, sized);
    if (r.trueDeadlock || r.pinnedDeadlock) return r;
    checks.clear();
    std::vector<int64_t> failed;
    for (int64_t v : probes) {
      // The reference as the sizer measures: from the network given (paced at its depths), not the sized.
      sim::Program given = sim::compileProgram(net, bind(v), options.platform);
      sim::RunConfig measure;
      // A paced sizing kept for its fewer bits held within its tolerance of the unbounded run: checked
      // against that.
      bool pacedReference = r.paced && r.pacedWhy != PacedReason::kFewerBits;
      measure.depths = measureDepths(given, options, pacedReference);
      sim::SimResult reference = sim::runDirect(given, measure);
      if (reference.deadlock && pacedReference) {  // the network's depths deadlock here: measure it unbounded
        measure.depths = measureDepths(given, options, false);
        reference = sim::runDirect(given, measure);
      }
      sim::SimResult run =
          sim::runDirect(sim::compileProgram(sized, bind(v), options.platform), sim::RunConfig{});
      RangeCheck c;
      c.value = v;
      c.sampled = samples.count(v) > 0;
      c.unbounded = reference.deadlock ? 0 : reference.cycles;
      c.cycles = run.deadlock ? 0 : run.cycles;
      c.ok = !run.deadlock && (reference.deadlock ||
                               run.cycles <= std::max(withinOnePercent(reference.cycles),
                                                      withinTolerance(reference.cycles, r.pacedTolerance)));
      checks.push_back(c);
      if (!c.ok && !c.sampled) failed.push_back(v);
    }
    if (failed.empty() || pass >= maxPasses) return r;
    samples.insert(failed.begin(), failed.end());
  }
}

}  // namespace stc::sizing
