// Compiles a Network to per-port event sequences. For a phase with origin o, tripcounts n_0..n_k-1, ii and
// latency, a port at level L carries N/inner tokens where inner = n_L+1 * ... * n_k-1:
//   read  j at o + j*inner*ii                       (first iteration of the loops inside L)
//   write j at o + (j*inner + inner - 1)*ii + latency (last iteration, latency after its start)
// and the next phase starts at o + (N - 1)*ii + latency + 1. A phase with loops outside its pipeline
// (Phase::outer) is one such phase per iteration of theirs over the inner nest, one after another, each
// with a cycle to enter it before and one to leave it after (Phase::kLoopEntryCycles, kLoopExitCycles);
// the inner nest's trips may depend on the outer loops' indices (Phase::namesLoopIndex, forEachRun).
#include "sim/program.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

namespace stc::sim {

namespace {
// Bounds that keep every cycle of a run far inside int64 and a run finite in practice.
constexpr int64_t kMaxLocalCycle = int64_t{1} << 56;
constexpr int64_t kMaxEvents = int64_t{1} << 40;
}  // namespace

Program compileProgram(const Network& net, const Bindings& bindings, const Platform& platform) {
  verifyNetwork(net, bindings).throwIfAny();
  Program prog;
  prog.name = net.name;
  prog.hbm = HbmTiming::fromPlatform(platform);
  Diagnostics diag;
  for (const Task& t : net.tasks) {
    if (!t.isDma()) continue;
    if (t.channel >= prog.hbm.channels)
      diag.error(t.loc, "field 'channel': " + std::to_string(t.channel) + " is not an HBM channel of platform '" +
                            platform.name + "' (0 to " + std::to_string(prog.hbm.channels - 1) + ")");
    if (t.axiPort >= prog.hbm.channels)
      diag.error(t.loc, "field 'port': " + std::to_string(t.axiPort) + " is not an HBM switch port of platform '" +
                            platform.name + "' (0 to " + std::to_string(prog.hbm.channels - 1) + ")");
  }
  diag.throwIfAny();
  std::set<int> groupIds;
  for (const Task& t : net.tasks) groupIds.insert(t.group);
  std::vector<int> groupOrder(groupIds.begin(), groupIds.end());
  prog.groups = std::max<int>(1, static_cast<int>(groupOrder.size()));
  prog.groupGapCycles = std::llround(platform.invocationOverheadUs * platform.kernelClockMhz);
  auto groupIndex = [&](int id) {
    return static_cast<int>(std::lower_bound(groupOrder.begin(), groupOrder.end(), id) - groupOrder.begin());
  };
  for (const auto& f : net.fifos) prog.fifos.push_back({f.name, f.width, f.depth, 0, -1, -1});
  for (size_t t = 0; t < net.tasks.size(); ++t) {
    const Task& task = net.tasks[t];
    TaskProgram tp;
    tp.name = task.name;
    tp.group = groupIndex(task.group);
    auto attach = [&](const Port& p, int64_t count) {
      int f = net.findFifo(p.fifo);
      FifoProgram& fp = prog.fifos[static_cast<size_t>(f)];
      (p.dir == PortDir::kOut ? fp.writer : fp.reader) = static_cast<int>(t);
      if (p.dir == PortDir::kOut) fp.tokens += count;
      return f;
    };
    if (task.isDma()) {
      const Port& p = task.dmaPorts.front();
      int64_t width = net.fifos[static_cast<size_t>(net.findFifo(p.fifo))].width;
      int64_t bytes = task.bytes.eval(bindings);
      int64_t count = bytes * 8 / width;
      DmaProgram dma;
      dma.write = task.kind == TaskKind::kDmaWrite;
      dma.channel = task.channel;
      dma.port = task.axiPort >= 0 ? task.axiPort : task.channel;
      dma.bytes = bytes;
      dma.tokenBytes = (width + 7) / 8;
      tp.dma = dma;
      PhaseEvents pe;
      pe.ports.push_back({attach(p, count), !dma.write, 0, 1, count});
      tp.phases.push_back(pe);
      tp.events = count;
      prog.events += tp.events;
      prog.tasks.push_back(std::move(tp));
      continue;
    }
    int64_t origin = 0;
    tp.networkPhases = static_cast<int>(task.phases.size());
    for (const auto& ph : task.phases) {
      const std::string what = "the schedule of task '" + task.name + "'";
      // Loops 0..outer-1 around the pipeline: one program phase per iteration of theirs, each a whole
      // phase of the inner nest (its pipeline drains before the next starts), whose trips may depend on
      // their indices (a triangular nest).
      const size_t outer = static_cast<size_t>(ph.outer);
      const int64_t entry = outer > 0 ? Phase::kLoopEntryCycles : 0,
                    exit = outer > 0 ? Phase::kLoopExitCycles : 0;
      int64_t runs = 0;
      forEachRun(ph, bindings, [&](const std::vector<int64_t>& index, const std::vector<int64_t>& trip) {
        if (++runs > kMaxPhaseRuns)
          throw UserError(
              formatError(ph.loc, what + " runs its pipeline more than " + std::to_string(kMaxPhaseRuns) +
                                      " times (its loops outside it), the most a simulation may run"));
        int64_t total = 1;  // iterations of the pipelined nest in this run
        for (size_t k = outer; k < trip.size(); ++k) total = checkedMul(total, trip[k], what);
        const int64_t span = checkedAdd(checkedMul(total - 1, ph.ii, what), ph.latency + 1, what);
        PhaseEvents pe;
        for (int pass = 0; pass < 2; ++pass) {  // writes first, then reads
          for (const auto& p : ph.ports) {
            bool write = p.dir == PortDir::kOut;
            if (write != (pass == 0)) continue;
            int level = ph.levelOf(p);
            int64_t inner = 1;  // iterations of the loops inside the port's level
            for (size_t k = static_cast<size_t>(std::max<int>(level + 1, static_cast<int>(outer)));
                 k < trip.size(); ++k)
              inner = checkedMul(inner, trip[k], what);
            int64_t count = total / inner;
            if (level + 1 < static_cast<int>(outer)) {  // a token per iteration of loops 0..level: at the
              bool at = true;                           // first run of the loops inside (a read), or the last
              for (size_t k = static_cast<size_t>(level + 1); k < outer; ++k)
                at = at && index[k] == (write ? trip[k] - 1 : 0);
              if (!at) continue;
              count = 1;
            }
            PortEvents ev;
            ev.fifo = attach(p, count);
            ev.write = write;
            ev.stride = checkedMul(inner, ph.ii, what);
            ev.first = checkedAdd(
                origin + entry, write ? checkedAdd(checkedMul(inner - 1, ph.ii, what), ph.latency, what) : 0,
                what);
            ev.count = count;
            tp.events += count;
            pe.ports.push_back(ev);
          }
        }
        tp.phases.push_back(pe);
        origin = checkedAdd(origin, span + entry + exit, what);
        if (origin > kMaxLocalCycle) throw UserError(formatError(ph.loc, what + " is too long to simulate"));
        return true;
      });
    }
    prog.events += tp.events;
    prog.tasks.push_back(std::move(tp));
  }
  if (prog.events > kMaxEvents)
    throw UserError(formatError(net.loc, "the network has " + std::to_string(prog.events) + " I/O events, more than the " +
                                             std::to_string(kMaxEvents) + " a simulation may run (check the tripcounts)"));
  return prog;
}

namespace {

// The k-th token's local cycle on a FIFO whose side (writes or reads) is these port sequences in order.
struct Segment {
  int64_t first, stride, count;
};
int64_t offsetOf(const std::vector<Segment>& side, int64_t k) {
  for (const Segment& s : side) {
    if (k < s.count) return s.first + s.stride * k;
    k -= s.count;
  }
  return -1;
}

}  // namespace

int64_t lowerBoundCycles(const Program& program) {
  size_t groups = static_cast<size_t>(program.groups), nt = program.tasks.size(), nf = program.fifos.size();
  std::vector<int64_t> span(nt, 0), hbmTicks(groups, 0);
  std::vector<std::vector<Segment>> writes(nf), reads(nf);
  for (size_t t = 0; t < nt; ++t) {
    const TaskProgram& task = program.tasks[t];
    for (const PhaseEvents& ph : task.phases)
      for (const PortEvents& p : ph.ports) {
        if (p.count <= 0) continue;
        span[t] = std::max(span[t], p.first + p.stride * (p.count - 1) + 1);
        (p.write ? writes : reads)[static_cast<size_t>(p.fifo)].push_back({p.first, p.stride, p.count});
      }
    if (task.dma) hbmTicks[static_cast<size_t>(task.group)] += task.dma->bytes * program.hbm.ticksPerByte;
  }
  // Chains: a task's events keep their order and spacing and only slip later (a stall holds the whole
  // pipeline), so its delay (an event's cycle past its group's start and its local cycle) never falls
  // from one event to the next; and a token is read at least a cycle after it is written. So the reader of
  // token k is at least (writer's delay at its write of k) + write's local cycle + 1 - read's local cycle
  // late from that read on. Held at each FIFO's first and last token and relaxed to a fixed point (every
  // step a valid bound, so any number of rounds is one); a converter's region written whole at its
  // writer's end makes its reader wait for that end, and the chain of stages adds up.
  struct Point {
    int64_t offset = 0, delay = 0;
  };
  std::vector<std::vector<std::pair<size_t, int>>> inputs(nt);  // (fifo, 0 first token | 1 last) per reader
  std::vector<std::array<Point, 2>> points(nf);
  for (size_t f = 0; f < nf; ++f) {
    const FifoProgram& fifo = program.fifos[f];
    if (fifo.writer < 0 || fifo.reader < 0 || fifo.tokens <= 0) continue;
    if (program.tasks[static_cast<size_t>(fifo.writer)].group != program.tasks[static_cast<size_t>(fifo.reader)].group)
      continue;
    for (int end : {0, 1}) {
      int64_t r = offsetOf(reads[f], end == 0 ? 0 : fifo.tokens - 1);
      if (r < 0 || offsetOf(writes[f], end == 0 ? 0 : fifo.tokens - 1) < 0) continue;
      points[f][static_cast<size_t>(end)].offset = r;
      inputs[static_cast<size_t>(fifo.reader)].emplace_back(f, end);
    }
  }
  // A DMA read's token k (its local cycle k) comes no sooner than the read latency and k + 1 tokens' bytes
  // through its channel after the group starts (Engine::dmaReady: a DMA's bursts cross the channel in
  // order, each at least at the channel's rate), a cycle early at most as its reader sees it.
  std::vector<std::vector<Point>> own(nt);
  for (size_t t = 0; t < nt; ++t) {
    const std::optional<DmaProgram>& dma = program.tasks[t].dma;
    if (!dma || dma->write || dma->tokenBytes <= 0) continue;
    int64_t tokens = dma->bytes / dma->tokenBytes;
    for (int64_t k : {int64_t{0}, tokens - 1})
      if (k >= 0)
        own[t].push_back({k, program.hbm.cycleAtOrAfter(program.hbm.readLatencyTicks +
                                                         (k + 1) * dma->tokenBytes * program.hbm.ticksPerByte) -
                                 k - 1});
  }
  auto delayAt = [&](size_t t, int64_t offset) {  // the task's delay at its event of this local cycle
    int64_t d = 0;
    for (const Point& p : own[t])
      if (p.offset <= offset) d = std::max(d, p.delay);
    for (auto [f, end] : inputs[t]) {
      const Point& p = points[f][static_cast<size_t>(end)];
      if (p.offset <= offset) d = std::max(d, p.delay);
    }
    return d;
  };
  for (size_t round = 0; round < 4 * nt + 4; ++round) {
    bool changed = false;
    for (size_t t = 0; t < nt; ++t)
      for (auto [f, end] : inputs[t]) {
        const FifoProgram& fifo = program.fifos[f];
        int64_t k = end == 0 ? 0 : fifo.tokens - 1;
        int64_t w = offsetOf(writes[f], k);
        Point& p = points[f][static_cast<size_t>(end)];
        int64_t need = delayAt(static_cast<size_t>(fifo.writer), w) + w + 1 - p.offset;
        if (need > p.delay) p.delay = need, changed = true;
      }
    if (!changed) break;
  }
  std::vector<int64_t> longest(groups, 0);
  for (size_t t = 0; t < nt; ++t) {
    size_t g = static_cast<size_t>(program.tasks[t].group);
    if (span[t] > 0) longest[g] = std::max(longest[g], span[t] + delayAt(t, span[t]));
  }
  // As the engine runs them: group g opens at the end of group g - 1 and the gap; a group without events
  // ends at 0 (Engine::finishTask); the run lasts to the latest end.
  int64_t channels = std::max(1, program.hbm.channels), end = 0, cycles = 0;
  for (size_t g = 0; g < groups; ++g) {
    int64_t start = g == 0 ? 0 : end + program.groupGapCycles;
    // The busiest channel moves at least the mean of the group's bytes.
    int64_t hbm = program.hbm.cycleAtOrAfter((hbmTicks[g] + channels - 1) / channels);
    end = longest[g] > 0 ? start + std::max(longest[g], hbm) : 0;
    cycles = std::max(cycles, end);
  }
  return cycles;
}

}  // namespace stc::sim
