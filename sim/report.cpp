// Reports of a simulation. Curves, VCD and traces all walk the same merged timeline of a FIFO: its write
// and read times in cycle order, giving cumulative counts after each cycle with a change.
#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

namespace stc::sim {

namespace {

nlohmann::json depthJson(int64_t depth) { return depth == kUnboundedDepth ? nlohmann::json(nullptr) : nlohmann::json(depth); }

std::string depthText(int64_t depth) { return depth == kUnboundedDepth ? "unbounded" : std::to_string(depth); }

// The task at the other end of a blocked access: the reader of a FULL FIFO, the writer of an EMPTY one.
const TaskStats& waitedOn(const SimResult& r, const WaitEdge& e) {
  const FifoStats& f = r.fifos[static_cast<size_t>(e.fifo)];
  return r.tasks[static_cast<size_t>(e.write ? f.reader : f.writer)];
}

}  // namespace

namespace {

// The search of DepthFix::together. Bounded: a network whose blocked tasks wait on more FIFOs than this
// gets no suggestion rather than hundreds of simulations.
constexpr size_t kMaxFifosTogether = 32;

std::vector<DepthChange> findDepthsTogether(const Program& program, const SimResult& deadlocked,
                                            int64_t& cyclesAfter) {
  std::vector<int64_t> from, depths;
  for (const FifoStats& f : deadlocked.fifos) from.push_back(f.depth);
  depths = from;
  std::vector<int> grown;  // in the order found
  RunConfig trial;
  SimResult r = deadlocked;
  for (int round = 0; round < 8 && r.deadlock; ++round) {  // deepen what blocked tasks wait to write
    bool added = false;
    for (const TaskStats& t : r.tasks)
      for (const WaitEdge& e : t.waits) {
        if (!e.write || std::find(grown.begin(), grown.end(), e.fifo) != grown.end()) continue;
        const FifoStats& f = deadlocked.fifos[static_cast<size_t>(e.fifo)];
        grown.push_back(e.fifo);
        depths[static_cast<size_t>(e.fifo)] = std::max(f.tokens, f.depth + 1);
        added = true;
      }
    if (!added || grown.size() > kMaxFifosTogether) return {};
    trial.depths = depths;
    r = runDirect(program, trial);
  }
  if (r.deadlock) return {};
  auto finishes = [&](int fifo, int64_t depth) {
    trial.depths = depths;
    trial.depths[static_cast<size_t>(fifo)] = depth;
    return !runDirect(program, trial).deadlock;
  };
  for (int fifo : grown) {  // each as shallow as the others allow: binary search, its old depth deadlocks
    int64_t lo = from[static_cast<size_t>(fifo)], hi = depths[static_cast<size_t>(fifo)];
    if (finishes(fifo, lo)) {
      depths[static_cast<size_t>(fifo)] = lo;  // not needed after all
      continue;
    }
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      (finishes(fifo, mid) ? hi : lo) = mid;
    }
    depths[static_cast<size_t>(fifo)] = hi;
  }
  std::vector<DepthChange> together;
  for (size_t f = 0; f < depths.size(); ++f)
    if (depths[f] != from[f]) together.push_back({static_cast<int>(f), from[f], depths[f]});
  trial.depths = depths;
  cyclesAfter = runDirect(program, trial).cycles;
  return together;
}

}  // namespace

DepthFix findDepthFix(const Program& program, const SimResult& deadlocked) {
  DepthFix best;
  std::vector<int64_t> depths;
  for (const FifoStats& f : deadlocked.fifos) depths.push_back(f.depth);
  RunConfig trial;
  // Candidates: the cycle's FULL links. A single change must break this cycle, and a link stays blocked
  // while the next task's blocked group cannot fire, whatever happens to its other accesses.
  for (const WaitEdge& e : deadlocked.deadlockCycle) {
    if (!e.write) continue;
    const FifoStats& f = deadlocked.fifos[static_cast<size_t>(e.fifo)];
    auto finishes = [&](int64_t depth, int64_t* cycles) {
      trial.depths = depths;
      trial.depths[static_cast<size_t>(e.fifo)] = depth;
      SimResult r = runDirect(program, trial);
      if (cycles) *cycles = r.cycles;
      return !r.deadlock;
    };
    int64_t lo = f.depth, hi = std::max<int64_t>(f.tokens, f.depth + 1);  // lo deadlocks
    if (!finishes(hi, nullptr)) continue;                                  // this FIFO alone cannot help
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      (finishes(mid, nullptr) ? hi : lo) = mid;
    }
    int64_t bits = (hi - f.depth) * f.width;
    if (best.fifo < 0 || bits < (best.to - best.from) * deadlocked.fifos[static_cast<size_t>(best.fifo)].width) {
      best.fifo = e.fifo;
      best.from = f.depth;
      best.to = hi;
      finishes(hi, &best.cyclesAfter);
    }
  }
  if (best.fifo < 0) best.together = findDepthsTogether(program, deadlocked, best.cyclesAfter);
  return best;
}

nlohmann::json resultJson(const SimResult& r, const std::optional<DepthFix>& fix, double clockMhz) {
  using nlohmann::json;
  json j;
  j["network"] = r.network;
  j["cycles"] = r.deadlock ? json(nullptr) : json(r.cycles);
  j["deadlock"] = r.deadlock;
  j["events"] = r.events;
  j["jumped_events"] = r.jumpedEvents;
  j["wall_seconds"] = r.wallSeconds;
  j["clock_mhz"] = clockMhz;
  if (!r.deadlock) j["latency_us"] = static_cast<double>(r.cycles) / clockMhz;
  auto waitJson = [&](const WaitEdge& e) {
    const FifoStats& f = r.fifos[static_cast<size_t>(e.fifo)];
    return json{{"task", r.tasks[static_cast<size_t>(e.task)].name},
                {"fifo", f.name},
                {"kind", e.write ? "write" : "read"},
                {"state", e.write ? "FULL" : "EMPTY"},
                {"occupancy", e.occupancy},
                {"depth", depthJson(e.depth)},
                {"needs", waitedOn(r, e).name}};
  };
  json cycle = json::array();
  for (const WaitEdge& e : r.deadlockCycle) cycle.push_back(waitJson(e));
  j["deadlock_cycle"] = cycle;
  if (r.deadlock) {
    json blocked = json::array();  // every blocked stage group, with all its events that are not ready
    for (const TaskStats& t : r.tasks) {
      if (t.waits.empty()) continue;
      json waits = json::array();
      for (const WaitEdge& e : t.waits) waits.push_back(waitJson(e));
      blocked.push_back({{"task", t.name}, {"waits", waits}});
    }
    j["blocked"] = blocked;
    j["stopped_at"] = r.cycles;
    if (fix && fix->fifo >= 0)
      j["fix"] = {{"fifo", r.fifos[static_cast<size_t>(fix->fifo)].name},
                  {"depth_from", fix->from},
                  {"depth_to", fix->to},
                  {"cycles_after", fix->cyclesAfter}};
    else if (fix && !fix->together.empty()) {
      json together = json::array();
      for (const DepthChange& c : fix->together)
        together.push_back({{"fifo", r.fifos[static_cast<size_t>(c.fifo)].name},
                            {"depth_from", c.from},
                            {"depth_to", c.to}});
      j["fix"] = {{"together", together}, {"cycles_after", fix->cyclesAfter}};
    } else if (fix)
      j["fix"] = nullptr;
  }
  json tasks = json::array();
  for (const TaskStats& t : r.tasks) {
    json task{{"name", t.name},
              {"start", t.start >= 0 ? json(t.start) : json(nullptr)},
              {"end", t.finished ? json(t.end) : json(nullptr)},
              {"stall_full", t.stallFull},
              {"stall_empty", t.stallEmpty},
              {"events", t.events}};
    if (t.blockedSince >= 0) task["blocked_since"] = t.blockedSince;
    tasks.push_back(std::move(task));
  }
  j["tasks"] = tasks;
  json fifos = json::array();
  for (const FifoStats& f : r.fifos)
    fifos.push_back({{"name", f.name},
                     {"width", f.width},
                     {"depth", depthJson(f.depth)},
                     {"tokens", f.tokens},
                     {"max_occupancy", f.maxOccupancy}});
  j["fifos"] = fifos;
  json hbm = json::array();
  for (const ChannelStats& c : r.hbm)
    hbm.push_back({{"channel", c.channel},
                   {"bytes_read", c.bytesRead},
                   {"bytes_written", c.bytesWritten},
                   {"busy_fraction", c.busyFraction}});
  j["hbm"] = hbm;
  return j;
}

void printSummary(std::ostream& out, const SimResult& r, const std::optional<DepthFix>& fix, double clockMhz) {
  char line[512];
  if (!r.deadlock) {
    std::snprintf(line, sizeof line, "network %s: %lld cycles (%.3f us at %g MHz), %lld events\n", r.network.c_str(),
                  static_cast<long long>(r.cycles), static_cast<double>(r.cycles) / clockMhz, clockMhz,
                  static_cast<long long>(r.events));
    out << line;
  } else {
    out << "network " << r.network << ": DEADLOCK; progress stopped at cycle " << r.cycles << " after " << r.events
        << " events\n";
    // A link: "A waits to write a_c: FULL, 2/2 tokens; it needs C"; the other events of its stage group
    // that are not ready follow as "and to ...": the group fires only when all of them can.
    auto printWait = [&](const WaitEdge& e, const char* lead) {
      std::snprintf(line, sizeof line, "%s to %s %s: %s, %lld/%s tokens; it needs %s\n", lead,
                    e.write ? "write" : "read", r.fifos[static_cast<size_t>(e.fifo)].name.c_str(),
                    e.write ? "FULL" : "EMPTY", static_cast<long long>(e.occupancy), depthText(e.depth).c_str(),
                    waitedOn(r, e).name.c_str());
      out << line;
    };
    auto printTask = [&](const TaskStats& t, const WaitEdge& first) {
      out << "  " << t.name;
      printWait(first, " waits");
      for (const WaitEdge& e : t.waits)
        if (e.fifo != first.fifo || e.write != first.write) printWait(e, "    and");
    };
    out << "wait-for cycle:\n";
    std::vector<char> inCycle(r.tasks.size(), 0);
    for (const WaitEdge& e : r.deadlockCycle) {
      inCycle[static_cast<size_t>(e.task)] = 1;
      printTask(r.tasks[static_cast<size_t>(e.task)], e);
    }
    bool header = false;
    for (size_t t = 0; t < r.tasks.size(); ++t) {
      if (inCycle[t] || r.tasks[t].waits.empty()) continue;
      if (!header) out << "also blocked:\n";
      header = true;
      printTask(r.tasks[t], r.tasks[t].waits.front());
    }
    if (fix && fix->fifo >= 0) {
      const FifoStats& f = r.fifos[static_cast<size_t>(fix->fifo)];
      out << "fix: depth of " << f.name << " " << fix->from << " -> " << fix->to
          << " is the smallest single change that breaks the cycle (then " << fix->cyclesAfter << " cycles; "
          << fix->to - 1 << " still deadlocks)\n";
    } else if (fix && !fix->together.empty()) {
      out << "fix: no single FIFO depth change breaks this cycle; these together do (then "
          << fix->cyclesAfter << " cycles; each as shallow as the others allow):";
      for (const DepthChange& c : fix->together)
        out << " --set-depth " << r.fifos[static_cast<size_t>(c.fifo)].name << "=" << c.to;
      out << "\n";
    } else if (fix) {
      out << "fix: no single FIFO depth change breaks this cycle";
      bool anyFull = false;
      for (const WaitEdge& e : r.deadlockCycle) anyFull = anyFull || e.write;
      out << (anyFull ? " (several FIFOs must grow together; none found)\n"
                      : " (no FIFO in it is full: a true deadlock)\n");
    }
  }
  out << "tasks:\n";
  for (const TaskStats& t : r.tasks) {
    std::string start = t.start >= 0 ? std::to_string(t.start) : "-";
    std::snprintf(line, sizeof line, "  %-24s start %10s  end %10s  stall full %10lld  empty %10lld",
                  t.name.c_str(), start.c_str(), t.finished ? std::to_string(t.end).c_str() : "-",
                  static_cast<long long>(t.stallFull), static_cast<long long>(t.stallEmpty));
    out << line;
    if (t.blockedSince >= 0) out << "  blocked from " << t.blockedSince << " to the end";
    out << "\n";
  }
  if (!r.hbm.empty()) out << "hbm:\n";
  for (const ChannelStats& c : r.hbm) {
    std::snprintf(line, sizeof line, "  channel %-2d  read %14lld B  written %14lld B  busy %5.1f%%\n", c.channel,
                  static_cast<long long>(c.bytesRead), static_cast<long long>(c.bytesWritten), 100 * c.busyFraction);
    out << line;
  }
  out << "fifos:\n";
  for (const FifoStats& f : r.fifos) {
    std::snprintf(line, sizeof line, "  %-24s width %5lld  depth %9s  tokens %10lld  max occupancy %lld\n",
                  f.name.c_str(), static_cast<long long>(f.width), depthText(f.depth).c_str(),
                  static_cast<long long>(f.tokens), static_cast<long long>(f.maxOccupancy));
    out << line;
  }
}

void writeCurvesCsv(std::ostream& out, const SimResult& r) {
  out << "fifo,cycle,writes,reads\n";
  for (const FifoStats& f : r.fifos) {
    Timeline line(f);
    for (CurvePoint p{}; line.next(p);)
      out << f.name << ',' << p.cycle << ',' << p.writes << ',' << p.reads << '\n';
  }
}

namespace {

// VCD identifiers: printable characters from '!' on, several digits in base 94.
std::string vcdId(size_t n) {
  std::string id;
  do {
    id += static_cast<char>('!' + n % 94);
    n /= 94;
  } while (n);
  return id;
}

std::string binary(int64_t v, int bits) {
  std::string s;
  for (int b = bits - 1; b >= 0; --b) s += ((v >> b) & 1) ? '1' : '0';
  return s;
}

}  // namespace

void writeVcd(std::ostream& out, const SimResult& r, double clockMhz) {
  int64_t periodPs = static_cast<int64_t>(std::llround(1e6 / clockMhz));
  out << "$date streamtensor simulation $end\n$version stc $end\n$timescale 1ps $end\n";
  out << "$comment task states: 0 not started, 1 running, 2 stalled on a FULL FIFO, 3 stalled on an EMPTY "
         "FIFO, 4 finished; a task blocked when a deadlocked run ends stays 2 or 3 to the end. FIFOs: "
         "occupancy in tokens $end\n";
  out << "$scope module " << r.network << " $end\n";
  size_t id = 0;
  out << "$scope module tasks $end\n";
  for (const TaskStats& t : r.tasks) out << "$var reg 3 " << vcdId(id++) << ' ' << t.name << " $end\n";
  out << "$upscope $end\n$scope module fifos $end\n";
  for (const FifoStats& f : r.fifos) out << "$var reg 32 " << vcdId(id++) << ' ' << f.name << " $end\n";
  out << "$upscope $end\n$upscope $end\n$enddefinitions $end\n";
  out << "#0\n$dumpvars\n";
  for (size_t t = 0; t < r.tasks.size(); ++t) out << "b000 " << vcdId(t) << '\n';
  for (size_t f = 0; f < r.fifos.size(); ++f) out << "b0 " << vcdId(r.tasks.size() + f) << '\n';
  out << "$end\n";
  // Every signal's changes merged by (cycle, signal), each signal's in its own order: one pending change
  // per signal in memory, whatever the run's length.
  std::vector<TaskTimeline> tasks;
  std::vector<Timeline> fifos;
  for (const TaskStats& t : r.tasks) tasks.emplace_back(t);
  for (const FifoStats& f : r.fifos) fifos.emplace_back(f);
  using Change = std::tuple<int64_t, size_t, int64_t>;  // cycle, signal, value
  std::priority_queue<Change, std::vector<Change>, std::greater<>> pending;
  auto advance = [&](size_t signal) {
    if (signal < tasks.size()) {
      std::pair<int64_t, int> c;
      if (tasks[signal].next(c)) pending.emplace(c.first, signal, c.second);
    } else {
      CurvePoint p;
      if (fifos[signal - tasks.size()].next(p)) pending.emplace(p.cycle, signal, p.writes - p.reads);
    }
  };
  for (size_t signal = 0; signal < tasks.size() + fifos.size(); ++signal) advance(signal);
  int64_t now = -1;
  while (!pending.empty()) {
    auto [cycle, signal, value] = pending.top();
    pending.pop();
    if (cycle != now) {
      out << '#' << cycle * periodPs << '\n';
      now = cycle;
    }
    out << 'b' << binary(value, signal < r.tasks.size() ? 3 : 32) << ' ' << vcdId(signal) << '\n';
    advance(signal);
  }
  out << '#' << (std::max<int64_t>(now, r.cycles) + 1) * periodPs << '\n';
}

void writeTrace(std::ostream& out, const SimResult& r, double clockMhz) {
  using nlohmann::json;
  double us = 1.0 / clockMhz;  // microseconds per cycle
  // {"displayTimeUnit":"ns","traceEvents":[...]}, each event written as it is made.
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  auto event = [&](const json& e) {
    out << (first ? "" : ",") << e.dump(-1, ' ', false, json::error_handler_t::replace);
    first = false;
  };
  event({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", r.network}}}});
  for (size_t t = 0; t < r.tasks.size(); ++t) {
    const TaskStats& task = r.tasks[t];
    event({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", t}, {"args", {{"name", task.name}}}});
    int64_t end = task.finished ? task.end : std::max(r.cycles, task.blockedSince + 1);
    if (task.start >= 0)
      event({{"name", "busy"},
             {"cat", "task"},
             {"ph", "X"},
             {"pid", 1},
             {"tid", t},
             {"ts", task.start * us},
             {"dur", (end - task.start) * us}});
    for (const StallSpan& s : task.stalls)
      event({{"name", std::string(s.open ? "blocked to the end (deadlock): " : "") +
                          (s.full ? "stalled FULL " : "stalled EMPTY ") +
                          r.fifos[static_cast<size_t>(s.fifo)].name},
             {"cat", "stall"},
             {"ph", "X"},
             {"pid", 1},
             {"tid", t},
             {"ts", s.begin * us},
             {"dur", (s.end - s.begin) * us}});
  }
  for (const FifoStats& f : r.fifos) {
    Timeline line(f);
    for (CurvePoint p{}; line.next(p);)
      event({{"name", f.name},
             {"ph", "C"},
             {"pid", 1},
             {"ts", p.cycle * us},
             {"args", {{"occupancy", p.writes - p.reads}}}});
  }
  out << "]}\n";
}

}  // namespace stc::sim
