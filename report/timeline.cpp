#include "report/timeline.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "sim/timeline.h"

namespace stc::report {

namespace {

using nlohmann::json;

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A fraction kept to four decimals: a report's JSON need not carry a double's seventeen digits.
double rounded(double x) {
  return std::round(x * 1e4) / 1e4;
}

json orNull(int64_t v, bool present) {
  return present ? json(v) : json(nullptr);
}

// Cycles of [begin, end) within [0, limit) added to each cell of `cell` cycles that they cover.
void cover(std::vector<int64_t>& cells, int64_t cell, int64_t limit, int64_t begin, int64_t end) {
  begin = std::max<int64_t>(begin, 0);
  end = std::min(end, limit);
  for (int64_t at = begin; at < end;) {
    int64_t k = at / cell, cellEnd = std::min(end, (k + 1) * cell);
    cells[static_cast<size_t>(k)] += cellEnd - at;
    at = cellEnd;
  }
}

// The same for fractional spans (HBM bursts need not start or end on a cycle edge).
void cover(std::vector<double>& cells, int64_t cell, int64_t limit, double begin, double end) {
  double width = static_cast<double>(cell);
  begin = std::max(begin, 0.0);
  end = std::min(end, static_cast<double>(limit));
  for (double at = begin; at < end;) {
    size_t k = std::min(cells.size() - 1, static_cast<size_t>(at / width));
    double cellEnd = std::min(end, static_cast<double>(k + 1) * width);
    if (!(cellEnd > at)) break;  // rounding at huge values: no progress
    cells[k] += cellEnd - at;
    at = cellEnd;
  }
}

enum State { kIdle, kBusy, kFull, kEmpty, kHbm };
const char* stateName(State s) {
  return s == kBusy ? "busy" : s == kFull ? "full" : s == kEmpty ? "empty" : "hbm";
}

// Whether a stall of a task waited for HBM rather than for its FIFO: the engine books a DMA read's wait
// for data as EMPTY on its output, and a DMA write's wait for a free request slot as FULL on its input.
bool waitsForHbm(const Task* task, const sim::StallSpan& s) {
  return task &&
         ((task->kind == TaskKind::kDmaRead && !s.full) || (task->kind == TaskKind::kDmaWrite && s.full));
}

// One task's cells: the state covering most of each, run-length coded; idle stretches left out.
json taskSpans(const sim::TaskStats& t, const Task* task, int64_t cycles, int64_t cell) {
  size_t n = static_cast<size_t>(ceilDiv(cycles, cell));
  std::vector<int64_t> active(n, 0), full(n, 0), empty(n, 0), hbm(n, 0);
  if (t.start >= 0) cover(active, cell, cycles, t.start, t.finished ? t.end : cycles);
  for (const sim::StallSpan& s : t.stalls)
    cover(waitsForHbm(task, s) ? hbm : s.full ? full : empty, cell, cycles, s.begin, s.end);
  json spans = json::array();
  State open = kIdle;
  int64_t openBegin = 0;
  auto close = [&](int64_t at) {
    if (open != kIdle) spans.push_back({openBegin, std::min(at, cycles), stateName(open)});
  };
  for (size_t k = 0; k < n; ++k) {
    // A stall outside [start, end) (a blocked task that never started) still shows.
    int64_t busy = std::max<int64_t>(0, active[k] - full[k] - empty[k] - hbm[k]);
    State s = kIdle;
    int64_t most = 0;
    for (auto [state, c] : {std::pair{kFull, full[k]}, {kEmpty, empty[k]}, {kHbm, hbm[k]}, {kBusy, busy}})
      if (c > most) s = state, most = c;  // ties: the first, a stall before running
    if (s == open) continue;
    int64_t at = static_cast<int64_t>(k) * cell;
    close(at);
    open = s;
    openBegin = at;
  }
  close(cycles);
  return spans;
}

// A FIFO's curve points (see the header), every S cycles at most.
json curvePoints(const sim::FifoStats& f, int64_t cycles, int64_t step) {
  json points = json::array();
  sim::Timeline line(f);
  int64_t bucket = -1, writes = 0, reads = 0, low = 0, high = 0;
  auto flush = [&] {
    if (bucket >= 0) points.push_back({std::min((bucket + 1) * step, cycles) - 1, writes, reads, low, high});
  };
  for (sim::CurvePoint p{}; line.next(p);) {
    int64_t b = p.cycle / step;
    if (b != bucket) {
      flush();
      bucket = b;
      low = high = writes - reads;  // held until this cycle, when it is not the bucket's first
      if (p.cycle == b * step) low = INT64_MAX, high = INT64_MIN;
    }
    high = std::max(high, p.writes - reads);  // the cycle's writes land before its reads leave
    low = std::min(low, p.writes - p.reads);
    writes = p.writes;
    reads = p.reads;
  }
  flush();
  return points;
}

}  // namespace

int layerOf(const std::string& name) {
  // "h" (GPT-2's torch names) only with its number apart: "h1" is a tensor, not a layer.
  static const std::array<const char*, 6> kWords = {"layers", "layer", "blocks", "block", "blk", "h"};
  std::vector<std::string> parts(1);
  for (char c : name) {
    if (c == '.' || c == '_' || c == '/')
      parts.emplace_back();
    else
      parts.back() += c;
  }
  auto number = [](const std::string& s) {
    if (s.empty() || s.size() > 6 ||
        !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
      return -1;
    return std::stoi(s);
  };
  for (size_t i = 0; i < parts.size(); ++i)
    for (const char* word : kWords) {
      std::string w = word;
      if (parts[i] == w && i + 1 < parts.size() && number(parts[i + 1]) >= 0) return number(parts[i + 1]);
      if (w != "h" && parts[i].size() > w.size() && parts[i].compare(0, w.size(), w) == 0 &&
          number(parts[i].substr(w.size())) >= 0)
        return number(parts[i].substr(w.size()));
    }
  return -1;
}

json timelineJson(const Network& net, const sim::SimResult& r, const Resolution& res) {
  int64_t cycles = std::max<int64_t>(r.cycles, 1);
  json out{{"cycles", cycles}};

  // Gantt cells, coarsened until the spans of every task fit the budget.
  int64_t cell = std::max<int64_t>(1, ceilDiv(cycles, res.taskCells));
  std::vector<json> spans;
  for (;; cell *= 2) {
    spans.clear();
    size_t total = 0;
    for (const sim::TaskStats& t : r.tasks) {
      size_t i = spans.size();
      spans.push_back(taskSpans(t, i < net.tasks.size() ? &net.tasks[i] : nullptr, cycles, cell));
      total += spans.back().size();
    }
    if (static_cast<int64_t>(total) <= res.totalSpans || cell >= cycles) break;
  }
  out["task_bucket"] = cell;
  json tasks = json::array();
  std::map<int, std::pair<int64_t, int64_t>> groups;
  for (size_t i = 0; i < r.tasks.size(); ++i) {
    const sim::TaskStats& t = r.tasks[i];
    const Task* task = i < net.tasks.size() ? &net.tasks[i] : nullptr;
    int group = task ? task->group : 0;
    int64_t end = t.finished ? t.end : cycles;
    // Stall cycles as drawn: a DMA's waits for HBM apart; a deadlock's open wait to the run's end.
    int64_t stalled[3] = {0, 0, 0};  // FULL, EMPTY, HBM
    for (const sim::StallSpan& s : t.stalls)
      stalled[waitsForHbm(task, s) ? 2
              : s.full             ? 0
                                   : 1] += std::max<int64_t>(0, std::min(s.end, cycles) - s.begin);
    int64_t busy = 0;
    if (t.start >= 0) {
      int64_t until =
          t.blockedSince >= 0 ? std::min(t.blockedSince, cycles) : end;  // blocked may lie past the end
      busy = std::max<int64_t>(0, until - t.start - t.stallFull - t.stallEmpty);
    }
    int layer = layerOf(t.name);
    tasks.push_back({{"name", t.name},
                     {"kind", task ? taskKindName(task->kind) : "kernel"},
                     {"group", group},
                     {"layer", layer >= 0 ? json(layer) : json(nullptr)},
                     {"start", orNull(t.start, t.start >= 0)},
                     {"end", orNull(t.end, t.finished)},
                     {"blocked_since", orNull(t.blockedSince, t.blockedSince >= 0)},
                     {"busy", busy},
                     {"stall_full", stalled[0]},
                     {"stall_empty", stalled[1]},
                     {"hbm_wait", stalled[2]},
                     {"spans", std::move(spans[i])}});
    if (t.start < 0) continue;
    auto [it, added] = groups.emplace(group, std::make_pair(t.start, end));
    if (!added) it->second = {std::min(it->second.first, t.start), std::max(it->second.second, end)};
  }
  out["tasks"] = std::move(tasks);
  json groupSpans = json::array();
  for (const auto& [g, span] : groups)
    groupSpans.push_back({{"group", g}, {"begin", span.first}, {"end", span.second}});
  out["groups"] = std::move(groupSpans);

  // Curves, and the cycles the tasks stalled on each FIFO as drawn (a deadlock's open wait to the end).
  std::vector<int64_t> stallFull(r.fifos.size(), 0), stallEmpty(r.fifos.size(), 0),
      kernelStall(r.fifos.size(), 0);
  for (size_t i = 0; i < r.tasks.size(); ++i)
    for (const sim::StallSpan& s : r.tasks[i].stalls) {
      const Task* task = i < net.tasks.size() ? &net.tasks[i] : nullptr;
      if (s.fifo < 0 || static_cast<size_t>(s.fifo) >= r.fifos.size() || waitsForHbm(task, s)) continue;
      int64_t length =
          std::max<int64_t>(0, std::min(s.end, cycles) - s.begin);  // a wait may begin past the end
      (s.full ? stallFull : stallEmpty)[static_cast<size_t>(s.fifo)] += length;
      if (!task || !task->isDma()) kernelStall[static_cast<size_t>(s.fifo)] += length;
    }
  int64_t step = std::max<int64_t>(1, ceilDiv(cycles, res.curvePoints));
  out["curve_step"] = step;
  json fifos = json::array();
  for (size_t i = 0; i < r.fifos.size(); ++i) {
    const sim::FifoStats& f = r.fifos[i];
    fifos.push_back({{"name", f.name},
                     {"depth", orNull(f.depth, f.depth != kUnboundedDepth)},
                     {"tokens", f.tokens},
                     {"max_occupancy", f.maxOccupancy},
                     {"stall_full", stallFull[i]},
                     {"stall_empty", stallEmpty[i]},
                     {"kernel_stall", kernelStall[i]},
                     {"points", curvePoints(f, cycles, step)}});
  }
  out["fifos"] = std::move(fifos);

  int64_t sample = std::max<int64_t>(1, ceilDiv(cycles, res.hbmSamples));
  out["hbm_bucket"] = sample;
  json hbm = json::array();
  for (const sim::ChannelStats& c : r.hbm) {
    std::vector<double> busy(static_cast<size_t>(ceilDiv(cycles, sample)), 0.0);
    for (const auto& [begin, end] : c.busySpans) cover(busy, sample, cycles, begin, end);
    json fractions = json::array();
    for (size_t k = 0; k < busy.size(); ++k) {
      int64_t length = std::min<int64_t>(sample, cycles - static_cast<int64_t>(k) * sample);
      fractions.push_back(rounded(busy[k] / static_cast<double>(length)));
    }
    hbm.push_back({{"channel", c.channel},
                   {"bytes_read", c.bytesRead},
                   {"bytes_written", c.bytesWritten},
                   {"busy_fraction", rounded(c.busyFraction)},
                   {"busy", std::move(fractions)}});
  }
  out["hbm"] = std::move(hbm);
  return out;
}

}  // namespace stc::report
