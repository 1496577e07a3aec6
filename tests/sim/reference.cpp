#include "reference.h"

#include <algorithm>
#include <functional>
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
      // Each iteration of the loops outside the pipeline runs the inner nest as a phase of its own, with a
      // cycle more on each side of it (entering the pipelined loop, leaving it); a trip may name the index
      // iK of a loop K outside the pipeline and around it, evaluated at that loop's iteration.
      const size_t n = ph.trip.size(), outer = static_cast<size_t>(ph.outer);
      const int64_t enter = ph.outer > 0 ? 1 : 0;
      std::vector<int64_t> idx(n, 0), trip(n, 0);
      auto tripOf = [&](size_t k) {
        Bindings b = bindings;
        for (size_t j = 0; j < std::min(k, outer); ++j) b["i" + std::to_string(j)] = idx[j];
        return ph.trip[k].eval(b);
      };
      std::vector<Ev> evs;
      int64_t runOrigin = 0, pos = 0;
      auto iteration = [&] {
        int64_t start = runOrigin + enter + pos++ * ph.ii;
        for (size_t p = 0; p < ph.ports.size(); ++p) {
          const Port& port = ph.ports[p];
          int level = port.level ? *port.level : static_cast<int>(n) - 1;
          bool first = true, last = true;
          for (size_t k = static_cast<size_t>(level + 1); k < n; ++k) {
            first = first && idx[k] == 0;
            last = last && idx[k] == trip[k] - 1;
          }
          int f = net.findFifo(port.fifo);
          if (port.dir == PortDir::kIn && first) evs.push_back({start, 1, static_cast<int>(p), f});
          if (port.dir == PortDir::kOut && last)
            evs.push_back({start + ph.latency, 0, static_cast<int>(p), f});
        }
      };
      std::function<void(size_t)> inside = [&](size_t k) {
        if (k == n) return iteration();
        for (idx[k] = 0; idx[k] < trip[k]; ++idx[k]) inside(k + 1);
      };
      std::function<void(size_t)> around = [&](size_t k) {
        if (k == outer) {  // one run of the pipelined nest
          int64_t inner = 1;
          for (size_t j = outer; j < n; ++j) inner *= trip[j] = tripOf(j);
          runOrigin = origin;
          pos = 0;
          inside(outer);
          origin += (inner - 1) * ph.ii + ph.latency + 1 + 2 * enter;
          return;
        }
        trip[k] = tripOf(k);
        for (idx[k] = 0; idx[k] < trip[k]; ++idx[k]) around(k + 1);
      };
      around(0);
      std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
        return std::tie(a.local, a.order, a.port) < std::tie(b.local, b.order, b.port);
      });
      lists[t].insert(lists[t].end(), evs.begin(), evs.end());
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
  r.fifoStallFull.assign(nf, 0);
  r.fifoStallEmpty.assign(nf, 0);
  // The time the event's dependency allows, or -1 when that dependency has not happened yet.
  auto readyOf = [&](const Ev& e) -> int64_t {
    size_t f = static_cast<size_t>(e.fifo);
    int64_t d = depths[f];
    if (e.order == 0) {
      size_t k = wt[f].size();
      if (d == kUnboundedDepth || static_cast<int64_t>(k) < d) return 0;
      size_t need = k - static_cast<size_t>(d);
      return rt[f].size() > need ? rt[f][need] + 1 : -1;
    }
    size_t k = rt[f].size();
    int64_t raw = (d != kUnboundedDepth && net.fifos[f].width * d <= 1024) ? 1 : 2;
    return wt[f].size() > k ? wt[f][k] + raw : -1;
  };
  // The task's next stage group: [pos, end) with one local cycle.
  auto groupEnd = [&](size_t t) {
    size_t e = pos[t];
    while (e < lists[t].size() && lists[t][e].local == lists[t][pos[t]].local) ++e;
    return e;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t t = 0; t < net.tasks.size(); ++t) {
      while (pos[t] < lists[t].size()) {
        size_t end = groupEnd(t);
        const Ev& head = lists[t][pos[t]];
        int64_t earliest = pos[t] == 0 ? head.local : prevT[t] + (head.local - prevLocal[t]);
        int64_t ready = earliest;
        int stallOrder = -1, stallFifo = -1;  // the event ready last, the first of equals, takes the stall
        bool blocked = false;
        for (size_t i = pos[t]; i < end; ++i) {
          int64_t x = readyOf(lists[t][i]);
          if (x < 0) blocked = true;
          if (x > ready) {
            ready = x;
            stallOrder = lists[t][i].order;
            stallFifo = lists[t][i].fifo;
          }
        }
        if (blocked) break;
        if (pos[t] > 0 && stallOrder >= 0) {
          (stallOrder == 0 ? r.stallFull : r.stallEmpty)[t] += ready - earliest;
          (stallOrder == 0 ? r.fifoStallFull : r.fifoStallEmpty)[static_cast<size_t>(stallFifo)] +=
              ready - earliest;
        }
        for (size_t i = pos[t]; i < end; ++i)
          (lists[t][i].order == 0 ? wt : rt)[static_cast<size_t>(lists[t][i].fifo)].push_back(ready);
        prevT[t] = ready;
        prevLocal[t] = head.local;
        r.taskEnd[t] = ready + 1;
        pos[t] = end;
        progress = true;
      }
    }
  }
  // Deadlock: every unfinished task's group events that are not ready, and the wait-for cycle reached
  // from the first of them through each task's first such event, listed from its first task in the file.
  std::vector<std::vector<ReferenceWait>> waits(net.tasks.size());
  std::vector<int> writerOf(nf, -1), readerOf(nf, -1);
  for (size_t t = 0; t < net.tasks.size(); ++t)
    for (const Ev& e : lists[t]) (e.order == 0 ? writerOf : readerOf)[static_cast<size_t>(e.fifo)] = static_cast<int>(t);
  for (size_t t = 0; t < net.tasks.size(); ++t) {
    if (pos[t] == lists[t].size()) continue;
    r.deadlock = true;
    for (size_t i = pos[t], end = groupEnd(t); i < end; ++i)
      if (readyOf(lists[t][i]) < 0) waits[t].push_back({static_cast<int>(t), lists[t][i].fifo, lists[t][i].order == 0});
  }
  r.waits = waits;
  int t = -1;
  for (size_t k = 0; k < waits.size() && t < 0; ++k)
    if (!waits[k].empty()) t = static_cast<int>(k);
  std::vector<ReferenceWait> path;
  while (t >= 0) {
    auto seen = std::find_if(path.begin(), path.end(), [&](const ReferenceWait& w) { return w.task == t; });
    if (seen != path.end()) {
      r.cycle.assign(seen, path.end());
      std::rotate(r.cycle.begin(),
                  std::min_element(r.cycle.begin(), r.cycle.end(), [](auto& a, auto& b) { return a.task < b.task; }),
                  r.cycle.end());
      break;
    }
    if (waits[static_cast<size_t>(t)].empty()) break;
    ReferenceWait w = waits[static_cast<size_t>(t)].front();
    path.push_back(w);
    t = w.write ? readerOf[static_cast<size_t>(w.fifo)] : writerOf[static_cast<size_t>(w.fifo)];
  }
  for (size_t t = 0; t < net.tasks.size(); ++t) r.cycles = std::max(r.cycles, r.taskEnd[t]);
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
