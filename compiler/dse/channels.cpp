// Channel assignment by phase. The simulation records every DMA's token curve (the times its stream's
// tokens were written, for a read, or read, for a write); cut into kBuckets equal spans of the run, it
// gives the bytes the DMA moved in each span, its demand. Taking DMAs largest first, d goes to the channel
// whose DMAs already placed there move the most bytes when d does,
//
//   cost(c) = sum over spans k of load_c[k] * demand_d[k],   load_c = sum of the demands of c's DMAs,
//
// the least of it, ties going to the channel with the fewest bytes in all, then the lowest index. A DMA
// paced by its reader all through the run (a weight re-read per row block) and one that streams in a
// burst at the end (a decode step's weight, prefetched and waiting for its matmul) are both seen as they
// move. The simulation is repeated on the new assignment (a DMA that waited on a busy channel runs
// shorter once it has its own), unless it moved no DMA: the same network would simulate and assign the
// same again.
#include "compiler/dse/channels.h"

#include <algorithm>
#include <map>

#include "sim/engine.h"

namespace stc {

namespace {

constexpr int64_t kBuckets = 64;

// Tokens per span of `width` cycles in these runs of times (TimeRun: start, stride, count).
std::vector<double> tokensPerSpan(const std::vector<sim::TimeRun>& runs, int64_t width) {
  std::vector<double> spans(static_cast<size_t>(kBuckets), 0.0);
  auto add = [&](int64_t time, double tokens) {
    spans[static_cast<size_t>(std::clamp<int64_t>(time / width, 0, kBuckets - 1))] += tokens;
  };
  for (const sim::TimeRun& r : runs) {
    if (r.count <= 0) continue;
    if (r.stride <= 0 || r.count == 1) {  // (a FIFO's times never decrease: a stride is at least 0)
      add(r.start, static_cast<double>(r.count));
      continue;
    }
    // Token i at r.start + i * r.stride: the tokens in each span the run crosses.
    for (int64_t i = 0; i < r.count;) {
      int64_t time = r.start + i * r.stride;
      int64_t spanEnd = (time / width + 1) * width;  // the first time of the next span
      int64_t upto = std::min(r.count, i + (spanEnd - time + r.stride - 1) / r.stride);
      add(time, static_cast<double>(upto - i));
      i = upto;
    }
  }
  return spans;
}

}  // namespace

void assignChannelsByPhase(Network& net, const Platform& platform, const Bindings& bindings, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    sim::Program program = sim::compileProgram(net, bindings, platform);
    sim::RunConfig config;
    config.recordCurves = true;  // of the DMAs' streams only
    config.curvesOf.assign(program.fifos.size(), 0);
    for (size_t f = 0; f < program.fifos.size(); ++f) {
      const sim::FifoProgram& fp = program.fifos[f];
      config.curvesOf[f] = program.tasks[static_cast<size_t>(fp.writer)].dma.has_value() ||
                           program.tasks[static_cast<size_t>(fp.reader)].dma.has_value();
    }
    sim::SimResult run = sim::runDirect(program, config);
    if (run.deadlock) return;
    const int64_t width = std::max<int64_t>(1, (run.cycles + kBuckets - 1) / kBuckets);
    std::map<std::string, size_t> taskIndex;
    for (size_t i = 0; i < run.tasks.size(); ++i) taskIndex[run.tasks[i].name] = i;
    struct Dma {
      Task* task;
      int64_t bytes;
      std::vector<double> demand;  // bytes per span
    };
    std::map<int, std::vector<Dma>> byGroup;
    bool moved = false;
    for (Task& t : net.tasks) {
      if (!t.isDma()) continue;
      int index = static_cast<int>(taskIndex.at(t.name));
      bool read = t.kind == TaskKind::kDmaRead;
      int64_t bytes = t.bytes.eval(bindings);
      std::vector<double> demand(static_cast<size_t>(kBuckets), 0.0);
      // A DMA has one port: its FIFO.
      const sim::FifoStats& f = run.fifos[static_cast<size_t>(
          program.tasks[static_cast<size_t>(index)].phases.front().ports.front().fifo)];
      if (f.tokens > 0) {
        std::vector<double> tokens = tokensPerSpan(read ? f.writeTimes : f.readTimes, width);
        for (size_t k = 0; k < demand.size(); ++k)
          demand[k] += tokens[k] * static_cast<double>(bytes) / static_cast<double>(f.tokens);
      }
      byGroup[t.group].push_back({&t, bytes, std::move(demand)});
    }
    for (auto& [group, dmas] : byGroup) {
      std::stable_sort(dmas.begin(), dmas.end(), [](const Dma& a, const Dma& b) { return a.bytes > b.bytes; });
      const size_t channels = static_cast<size_t>(platform.hbm.channels);
      std::vector<std::vector<double>> load(channels,
                                            std::vector<double>(static_cast<size_t>(kBuckets), 0.0));
      std::vector<int64_t> total(channels, 0);
      for (const Dma& d : dmas) {
        size_t best = 0;
        double bestCost = 0;
        for (size_t c = 0; c < channels; ++c) {
          double cost = 0;
          for (size_t k = 0; k < d.demand.size(); ++k) cost += load[c][k] * d.demand[k];
          if (c == 0 || cost < bestCost || (cost == bestCost && total[c] < total[best])) {
            best = c;
            bestCost = cost;
          }
        }
        moved = moved || d.task->channel != static_cast<int>(best);
        d.task->channel = static_cast<int>(best);
        for (size_t k = 0; k < d.demand.size(); ++k) load[best][k] += d.demand[k];
        total[best] += d.bytes;
      }
    }
    if (!moved) return;
  }
}

}  // namespace stc
