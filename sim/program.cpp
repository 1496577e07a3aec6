// Compiles a Network to per-port event sequences. For a phase with origin o, tripcounts n_0..n_k-1, ii and
// latency, a port at level L carries N/inner tokens where inner = n_L+1 * ... * n_k-1:
//   read  j at o + j*inner*ii                       (first iteration of the loops inside L)
//   write j at o + (j*inner + inner - 1)*ii + latency (last iteration, latency after its start)
// and the next phase starts at o + (N - 1)*ii + latency + 1.
#include "sim/program.h"

#include <algorithm>
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
      if (p.dir == PortDir::kOut) fp.tokens = count;
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
    for (const auto& ph : task.phases) {
      std::vector<int64_t> trip;
      for (const auto& e : ph.trip) trip.push_back(e.eval(bindings));
      const std::string what = "the schedule of task '" + task.name + "'";
      int64_t total = 1;
      for (int64_t n : trip) total = checkedMul(total, n, what);
      PhaseEvents pe;
      for (int pass = 0; pass < 2; ++pass) {  // writes first, then reads
        for (const auto& p : ph.ports) {
          bool write = p.dir == PortDir::kOut;
          if (write != (pass == 0)) continue;
          int level = ph.levelOf(p);
          int64_t inner = 1;
          for (size_t k = static_cast<size_t>(level + 1); k < trip.size(); ++k) inner = checkedMul(inner, trip[k], what);
          int64_t count = total / inner;
          PortEvents ev;
          ev.fifo = attach(p, count);
          ev.write = write;
          ev.stride = checkedMul(inner, ph.ii, what);
          ev.first = checkedAdd(origin, write ? checkedAdd(checkedMul(inner - 1, ph.ii, what), ph.latency, what) : 0, what);
          ev.count = count;
          tp.events += count;
          pe.ports.push_back(ev);
        }
      }
      tp.phases.push_back(pe);
      origin = checkedAdd(origin, checkedAdd(checkedMul(total - 1, ph.ii, what), ph.latency + 1, what), what);
      if (origin > kMaxLocalCycle) throw UserError(formatError(ph.loc, what + " is too long to simulate"));
    }
    prog.events += tp.events;
    prog.tasks.push_back(std::move(tp));
  }
  if (prog.events > kMaxEvents)
    throw UserError(formatError(net.loc, "the network has " + std::to_string(prog.events) + " I/O events, more than the " +
                                             std::to_string(kMaxEvents) + " a simulation may run (check the tripcounts)"));
  return prog;
}

int64_t lowerBoundCycles(const Program& program) {
  size_t groups = static_cast<size_t>(program.groups);
  std::vector<int64_t> span(groups, 0), hbmTicks(groups, 0);
  for (const TaskProgram& t : program.tasks) {
    size_t g = static_cast<size_t>(t.group);
    for (const PhaseEvents& ph : t.phases)
      for (const PortEvents& p : ph.ports)
        if (p.count > 0) span[g] = std::max(span[g], p.first + p.stride * (p.count - 1) + 1);
    if (t.dma) hbmTicks[g] += t.dma->bytes * program.hbm.ticksPerByte;
  }
  // As the engine runs them: group g opens at the end of group g - 1 and the gap; a group without events
  // ends at 0 (Engine::finishTask); the run lasts to the latest end.
  int64_t channels = std::max(1, program.hbm.channels), end = 0, cycles = 0;
  for (size_t g = 0; g < groups; ++g) {
    int64_t start = g == 0 ? 0 : end + program.groupGapCycles;
    // The busiest channel moves at least the mean of the group's bytes.
    int64_t hbm = program.hbm.cycleAtOrAfter((hbmTicks[g] + channels - 1) / channels);
    end = span[g] > 0 ? start + std::max(span[g], hbm) : 0;
    cycles = std::max(cycles, end);
  }
  return cycles;
}

}  // namespace stc::sim
