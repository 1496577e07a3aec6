#include "reference.h"

#include <algorithm>
#include <tuple>

namespace stc::testing {

namespace {

struct Ev {
  int64_t local;
  int order;  // 0 write, 1 read
  int port;   // index in the phase's port list (file order)
  int fifo;
};

}  // namespace

ReferenceResult referenceSimulate(const Network& net, const Bindings& bindings, std::vector<int64_t> depths) {
  if (depths.empty())
    for (const auto& f : net.fifos) depths.push_back(f.depth);
  std::vector<std::vector<Ev>> lists(net.tasks.size());
  for (size_t t = 0; t < net.tasks.size(); ++t) {
    int64_t origin = 0;
    for (const Phase& ph : net.tasks[t].phases) {
      std::vector<int64_t> trip;
      for (const auto& e : ph.trip) trip.push_back(e.eval(bindings));
      int64_t total = 1;
      for (int64_t n : trip) total *= n;
      std::vector<Ev> evs;
      std::vector<int64_t> idx(trip.size(), 0);
      for (int64_t it = 0; it < total; ++it) {
        for (size_t p = 0; p < ph.ports.size(); ++p) {
          const Port& port = ph.ports[p];
          int level = port.level ? *port.level : static_cast<int>(trip.size()) - 1;
          bool first = true, last = true;
          for (size_t k = static_cast<size_t>(level + 1); k < trip.size(); ++k) {
            first = first && idx[k] == 0;
            last = last && idx[k] == trip[k] - 1;
          }
          int f = net.findFifo(port.fifo);
          if (port.dir == PortDir::kIn && first) evs.push_back({origin + it * ph.ii, 1, static_cast<int>(p), f});
          if (port.dir == PortDir::kOut && last)
            evs.push_back({origin + it * ph.ii + ph.latency, 0, static_cast<int>(p), f});
        }
        for (size_t k = trip.size(); k-- > 0;) {  // next index, row-major
          if (++idx[k] < trip[k]) break;
          idx[k] = 0;
        }
      }
      std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
        return std::tie(a.local, a.order, a.port) < std::tie(b.local, b.order, b.port);
      });
      lists[t].insert(lists[t].end(), evs.begin(), evs.end());
      origin += (total - 1) * ph.ii + ph.latency + 1;
    }
  }
  size_t nf = net.fifos.size();
  std::vector<std::vector<int64_t>> wt(nf), rt(nf);
  std::vector<size_t> pos(net.tasks.size(), 0);
  std::vector<int64_t> prevT(net.tasks.size(), 0), prevLocal(net.tasks.size(), 0);
  ReferenceResult r;
  r.taskEnd.assign(net.tasks.size(), -1);
  r.stallFull.assign(net.tasks.size(), 0);
  r.stallEmpty.assign(net.tasks.size(), 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t t = 0; t < net.tasks.size(); ++t) {
      while (pos[t] < lists[t].size()) {
        const Ev& e = lists[t][pos[t]];
        int64_t earliest = pos[t] == 0 ? e.local : prevT[t] + (e.local - prevLocal[t]);
        int64_t ready = earliest;
        int64_t d = depths[static_cast<size_t>(e.fifo)];
        int64_t width = net.fifos[static_cast<size_t>(e.fifo)].width;
        if (e.order == 0) {
          size_t k = wt[static_cast<size_t>(e.fifo)].size();
          if (d != kUnboundedDepth && static_cast<int64_t>(k) >= d) {
            size_t need = k - static_cast<size_t>(d);
            if (rt[static_cast<size_t>(e.fifo)].size() <= need) break;
            ready = rt[static_cast<size_t>(e.fifo)][need] + 1;
          }
        } else {
          size_t k = rt[static_cast<size_t>(e.fifo)].size();
          if (wt[static_cast<size_t>(e.fifo)].size() <= k) break;
          int64_t raw = (d != kUnboundedDepth && width * d <= 1024) ? 1 : 2;
          ready = wt[static_cast<size_t>(e.fifo)][k] + raw;
        }
        int64_t time = std::max(earliest, ready);
        if (pos[t] > 0) (e.order == 0 ? r.stallFull : r.stallEmpty)[t] += time - earliest;
        (e.order == 0 ? wt : rt)[static_cast<size_t>(e.fifo)].push_back(time);
        prevT[t] = time;
        prevLocal[t] = e.local;
        r.taskEnd[t] = time + 1;
        ++pos[t];
        progress = true;
      }
    }
  }
  for (size_t t = 0; t < net.tasks.size(); ++t) {
    if (pos[t] < lists[t].size()) r.deadlock = true;
    r.cycles = std::max(r.cycles, r.taskEnd[t]);
  }
  for (size_t f = 0; f < nf; ++f) {
    int64_t best = 0;
    for (size_t k = 0; k < wt[f].size(); ++k) {
      int64_t before = 0;
      for (int64_t x : rt[f]) before += x < wt[f][k];
      best = std::max(best, static_cast<int64_t>(k + 1) - before);
    }
    r.maxOccupancy.push_back(best);
  }
  return r;
}

}  // namespace stc::testing
