// Channel assignment by phase. A DMA d that the simulation shows streaming over [s_d, e_d) (the cycles
// of its run it did not wait on a full FIFO, taken at the end of the run) asks for bytes_d / (e_d - s_d)
// bytes per cycle. Taking DMAs largest first, d goes to the channel whose DMAs
// already placed there would move the fewest bytes during d's run,
//
//   cost(c) = sum over d' on c of rate(d') * |[s_d, e_d) and [s_d', e_d')|,
//
// ties going to the channel with the fewest bytes in all, then the lowest index. The simulation is
// repeated on the new assignment (a DMA that waited on a busy channel runs shorter once it has its own),
// unless it moved no DMA: the same network would simulate and assign the same again.
#include "compiler/dse/channels.h"

#include <algorithm>
#include <map>

#include "sim/engine.h"

namespace stc {

void assignChannelsByPhase(Network& net, const Platform& platform, const Bindings& bindings, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    sim::SimResult run = sim::runDirect(sim::compileProgram(net, bindings, platform), {});
    if (run.deadlock) return;
    std::map<std::string, const sim::TaskStats*> stats;
    for (const auto& t : run.tasks) stats[t.name] = &t;
    struct Dma {
      Task* task;
      int64_t start, end, bytes;
      double rate;
    };
    std::map<int, std::vector<Dma>> byGroup;
    bool moved = false;
    for (Task& t : net.tasks) {
      if (!t.isDma()) continue;
      const sim::TaskStats* s = stats.at(t.name);
      int64_t bytes = t.bytes.eval(bindings);
      // A DMA prefetches into its FIFO and then waits (full) for its reader: it streams over the cycles it
      // did not wait, at the end of its run.
      int64_t busy = std::max<int64_t>(1, s->end - s->start - s->stallFull);
      byGroup[t.group].push_back({&t, s->end - busy, s->end, bytes, static_cast<double>(bytes) / static_cast<double>(busy)});
    }
    for (auto& [group, dmas] : byGroup) {
      std::stable_sort(dmas.begin(), dmas.end(), [](const Dma& a, const Dma& b) { return a.bytes > b.bytes; });
      std::vector<std::vector<const Dma*>> on(static_cast<size_t>(platform.hbm.channels));
      std::vector<int64_t> total(on.size(), 0);
      for (const Dma& d : dmas) {
        size_t best = 0;
        double bestCost = 0;
        for (size_t c = 0; c < on.size(); ++c) {
          double cost = 0;
          for (const Dma* o : on[c])
            cost += o->rate * static_cast<double>(std::max<int64_t>(0, std::min(d.end, o->end) - std::max(d.start, o->start)));
          if (c == 0 || cost < bestCost || (cost == bestCost && total[c] < total[best])) {
            best = c;
            bestCost = cost;
          }
        }
        moved = moved || d.task->channel != static_cast<int>(best);
        d.task->channel = static_cast<int>(best);
        on[best].push_back(&d);
        total[best] += d.bytes;
      }
    }
    if (!moved) return;
  }
}

}  // namespace stc
