// Conformance of a C simulation's stream trace to the network (conform.h).
#include "sim/conform.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "compiler/ir/diagnostics.h"

namespace stc::conform {

namespace {

// "12" as an integer; anything else fails at loc naming the field.
int64_t integer(const std::string& word, const SourceLoc& loc, const std::string& field) {
  if (word.empty() || word.size() > 18 || word.find_first_not_of("0123456789") != std::string::npos)
    fail(loc, "field '" + field + "': expected a non-negative integer, got '" + word + "'");
  return std::stoll(word);
}

Symbol symbol(const std::string& word, const SourceLoc& loc, size_t nodesKnown) {
  if (word.size() >= 2 && word[0] == 'n') {
    int64_t n = integer(word.substr(1), loc, "node");
    if (static_cast<size_t>(n) >= nodesKnown) fail(loc, "node '" + word + "' is used before it is defined");
    return -(n + 1);
  }
  if (word.size() >= 2 && (word.back() == 'r' || word.back() == 'w'))
    return integer(word.substr(0, word.size() - 1), loc, "access") * 2 + (word.back() == 'w' ? 1 : 0);
  fail(loc, "expected an access ('3r', '3w') or a node ('n7'), got '" + word + "'");
}

// The accesses of a task's symbols in order, each node expanded as it is reached.
class Expander {
 public:
  Expander(const Trace& trace, const std::vector<Symbol>& top) : trace_(trace) {
    stack_.push_back({&top, 0, 1});
  }
  /// The next access, or -1 at the end.
  Symbol next() {
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      if (f.at == f.pattern->size()) {
        if (--f.left > 0)
          f.at = 0;
        else
          stack_.pop_back();
        continue;
      }
      Symbol s = (*f.pattern)[f.at++];
      if (s >= 0) return s;
      const TraceNode& n = trace_.nodes[static_cast<size_t>(-s - 1)];
      if (n.count > 0 && !n.pattern.empty()) stack_.push_back({&n.pattern, 0, n.count});
    }
    return -1;
  }

 private:
  struct Frame {
    const std::vector<Symbol>* pattern;
    size_t at;
    int64_t left;
  };
  const Trace& trace_;
  std::vector<Frame> stack_;
};

// "read 'x'" or "write 'x'" (access in FIFO space: fifo * 2 + 1 for a write); "reads 'x'" as a verb.
std::string describe(const Network& net, int64_t access, bool verb = false) {
  return std::string(access % 2 ? "write" : "read") + (verb ? "s '" : " '") +
         net.fifos[static_cast<size_t>(access / 2)].name + "'";
}
std::string acts(const Network& net, int64_t access) {
  return describe(net, access, true);
}

std::string vec(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One task of one call: the network's iterations against the code's accesses.
class TaskCheck {
 public:
  TaskCheck(const Network& net, const Task& task, const Bindings& b, Expander code,
            const std::vector<int>& fifoOf, std::string where)
      : net_(net),
        task_(task),
        bindings_(b),
        code_(std::move(code)),
        fifoOf_(fifoOf),
        where_(std::move(where)),
        tokens_(net.fifos.size() * 2, 0) {}

  /// Empty when the task conforms, else the first mismatch.
  std::string run() {
    try {
      if (task_.isDma()) {
        const Port& p = task_.dmaPorts.front();
        int64_t bytes = task_.bytes.eval(bindings_), bits;
        if (__builtin_mul_overflow(bytes, 8, &bits)) return where_ + ": its byte count overflows 64 bits";
        Phase phase;
        phase.trip = {Expr(bits / net_.fifos[static_cast<size_t>(net_.findFifo(p.fifo))].width)};
        phase.ports = {p};
        phase.ports[0].level.reset();
        if (std::string e = checkPhase(phase, 0); !e.empty()) return e;
      } else {
        for (size_t p = 0; p < task_.phases.size(); ++p)
          if (std::string e = checkPhase(task_.phases[p], static_cast<int>(p)); !e.empty()) return e;
      }
    } catch (const UserError& e) {  // a symbol the call does not bind, a division by zero
      return where_ + ": " + e.what();
    }
    int64_t extra = next();
    if (extra >= 0)
      return where_ + ": the code makes " + describe(net_, extra) + " after the network's last phase (" +
             std::to_string(matched_) + " accesses matched)";
    return "";
  }
  int64_t accesses() const { return matched_; }

 private:
  // The code's next access in FIFO space, or -1 at its end.
  int64_t next() {
    Symbol s = code_.next();
    return s < 0 ? -1 : static_cast<int64_t>(fifoOf_[static_cast<size_t>(s / 2)]) * 2 + s % 2;
  }

  // Reads must come exactly at their iterations. A write of iteration t may come once t's reads are taken,
  // and at most latency / ii iterations later: a pipeline whose writes lag its reads (rope writes a row
  // after reading the next) is the network's phase with that lag in its latency. Loops inside every port's
  // level are one step (their first iteration's reads, their last one's writes), so a step always moves
  // a token and the walk is as long as the trace.
  std::string checkPhase(const Phase& phase, int index) {
    struct P {
      int64_t access;  ///< fifo * 2 + 1 for a write
      int level;
    };
    std::vector<P> ports;
    size_t n = 0;  // the loops walked: those up to the deepest port's level
    for (const Port& p : phase.ports) {
      ports.push_back({static_cast<int64_t>(net_.findFifo(p.fifo)) * 2 + (p.dir == PortDir::kOut ? 1 : 0),
                       phase.levelOf(p)});
      n = std::max(
          n, static_cast<size_t>(std::min<int>(phase.levelOf(p) + 1, static_cast<int>(phase.trip.size()))));
    }
    // A triangular nest (trips over the indices of the loops outside the pipeline) is walked down to
    // those loops at least, its trips evaluated again as their indices move.
    const bool indexed = phase.indexed();
    if (indexed) n = std::max(n, static_cast<size_t>(phase.outer));
    std::vector<int64_t> trip(phase.trip.size()), at(n, 0);
    int64_t inner = 1, lag = 0;  // iterations of the loops inside the walked ones; writes' lag in steps
    auto evalTrips = [&](size_t from) -> std::string {
      inner = 1;
      for (size_t k = 0; k < trip.size(); ++k) {
        if (k >= from) trip[k] = phase.trip[k].eval(indexed ? loopBindings(phase, k, at) : bindings_);
        if (trip[k] <= 0) return "-";
        if (k >= n && __builtin_mul_overflow(inner, trip[k], &inner))
          return where_ + ", phase " + std::to_string(index) + ": its trip counts overflow 64 bits";
      }
      lag = (inner - 1 + phase.latency / std::max<int64_t>(phase.ii, 1)) / inner;
      return "";
    };
    if (ports.empty()) return "";
    if (std::string e = evalTrips(0); !e.empty()) return e == "-" ? "" : e;
    Site site{phase, index, trip, n, lag, indexed};
    std::vector<int64_t> reads;
    std::deque<std::pair<int64_t, int64_t>> pending;  // writes due: (access, step), oldest first
    // The code's next access is a write due, or (when `read`) a read of `reads`; "" when it is.
    auto take = [&](int64_t t, bool read) -> std::string {
      int64_t a = last_ = next();
      if (a >= 0 && a % 2 == 1) {
        if (!pending.empty() && pending.front().first == a) {  // the usual case: the oldest write due
          pending.pop_front();
        } else {
          auto due =
              std::find_if(pending.begin(), pending.end(), [&](const auto& w) { return w.first == a; });
          if (due == pending.end()) return mismatch(site, t, a, reads, pending);
          pending.erase(due);
        }
      } else if (!read || a < 0 || std::find(reads.begin(), reads.end(), a) == reads.end()) {
        return mismatch(site, t, a, reads, pending);
      } else {
        reads.erase(std::find(reads.begin(), reads.end(), a));
        if (!pending.empty() && pending.front().second + lag < t) return overdue(site, t, a, pending.front());
      }
      ++tokens_[static_cast<size_t>(a)];
      ++matched_;
      return "";
    };
    int64_t t = 0;
    for (bool more = true; more; ++t) {
      site.lag = lag;
      while (!pending.empty() && pending.front().second + lag < t) {  // writes that cannot wait any longer
        auto front = pending.front();
        if (std::string e = take(t, false); !e.empty())
          return last_ >= 0 ? overdue(site, t, last_, front) : e;
      }
      // Reads of level L fire when the loops inside L are at their first iteration, writes at their last.
      size_t zeroFrom = n, lastFrom = n;
      while (zeroFrom > 0 && at[zeroFrom - 1] == 0) --zeroFrom;
      while (lastFrom > 0 && at[lastFrom - 1] == trip[lastFrom - 1] - 1) --lastFrom;
      reads.clear();
      for (const P& p : ports)
        if (p.access % 2 == 0 && zeroFrom <= static_cast<size_t>(p.level + 1)) reads.push_back(p.access);
      while (!reads.empty())
        if (std::string e = take(t, true); !e.empty()) return e;
      for (const P& p : ports)
        if (p.access % 2 == 1 && lastFrom <= static_cast<size_t>(p.level + 1))
          pending.push_back({p.access, t});
      more = false;
      for (size_t k = n; k-- > 0;) {
        if (++at[k] < trip[k]) {
          more = true;
          if (indexed && k < static_cast<size_t>(phase.outer))
            if (std::string e = evalTrips(k + 1); !e.empty()) return e == "-" ? "" : e;
          break;
        }
        at[k] = 0;
      }
    }
    while (!pending.empty())  // the phase's last writes, before anything of the next phase
      if (std::string e = take(t, false); !e.empty()) return e;
    return "";
  }

  struct Site {
    const Phase& phase;
    int index;
    const std::vector<int64_t>& trip;
    size_t walked;  ///< loops walked; those inside are one step
    int64_t lag;    ///< steps a write may lag
    bool indexed;   ///< a triangular nest: its trips depend on where it is
  };

  // Step t of the phase as loop indices, '*' for a loop inside every port's level ("end" past its last).
  // The bindings of loop k's trip: the call's, and the indices `at` of the loops outside the pipeline
  // around it (Phase::namesLoopIndex).
  Bindings loopBindings(const Phase& phase, size_t k, const std::vector<int64_t>& at) const {
    Bindings b = bindings_;
    for (size_t j = 0;
         j < std::min<size_t>(k, static_cast<size_t>(std::max(0, phase.outer))) && j < at.size(); ++j)
      b["i" + std::to_string(j)] = at[j];
    return b;
  }
  std::string iteration(const Site& site, int64_t t) const {
    std::vector<std::string> at(site.trip.size(), "*");
    if (site.indexed) {  // walked again from its start, its trips evaluated as its indices move
      std::vector<int64_t> index(site.walked, 0);
      for (int64_t step = 0;; ++step) {
        if (step == t) {
          for (size_t k = 0; k < site.walked; ++k) at[k] = std::to_string(index[k]);
          break;
        }
        size_t k = site.walked;
        while (k-- > 0) {
          if (++index[k] < site.phase.trip[k].eval(loopBindings(site.phase, k, index))) break;
          index[k] = 0;
        }
        if (k == static_cast<size_t>(-1)) return "end";
      }
    } else {
      int64_t total = 1;
      for (size_t k = 0; k < site.walked; ++k) total *= site.trip[k];
      if (t >= total) return "end";
      for (size_t k = site.walked; k-- > 0;) {
        at[k] = std::to_string(t % site.trip[k]);
        t /= site.trip[k];
      }
    }
    std::string s = "[";
    for (size_t i = 0; i < at.size(); ++i) s += (i ? ", " : "") + at[i];
    return s + "]";
  }
  std::string head(const Site& site, int64_t t) const {
    std::string at = iteration(site, t);
    return where_ + ", phase " + std::to_string(site.index) +
           (at == "end" ? " (trip " + vec(site.trip) + "), after its last iteration: "
                        : ", iteration " + at + " of " + vec(site.trip) + ": ");
  }
  std::string portOf(const Phase& phase, int64_t access) const {
    for (size_t p = 0; p < phase.ports.size(); ++p)
      if (phase.ports[p].fifo == net_.fifos[static_cast<size_t>(access / 2)].name &&
          (phase.ports[p].dir == PortDir::kOut) == (access % 2 == 1))
        return "port " + std::to_string(p) + " (level " + std::to_string(phase.levelOf(phase.ports[p])) + ")";
    return "";
  }
  std::string token(int64_t access) const {
    return " (token " + std::to_string(tokens_[static_cast<size_t>(access)]) + ")";
  }

  // The code makes access `got` (-1: its accesses end) where the network makes the reads left of
  // iteration t, or a write due.
  std::string mismatch(const Site& site, int64_t t, int64_t got, std::vector<int64_t> reads,
                       const std::deque<std::pair<int64_t, int64_t>>& pending) const {
    std::ostringstream s;
    s << head(site, t);
    std::sort(reads.begin(), reads.end());
    if (got < 0) {
      int64_t due = reads.empty() ? pending.front().first : reads.front();
      s << "the code's accesses end; the network's " << portOf(site.phase, due) << " " << acts(net_, due)
        << token(due) << (reads.empty() ? " before the phase ends" : " here");
    } else {
      std::string port = portOf(site.phase, got);
      s << "the code " << acts(net_, got) << token(got) << ", which "
        << (port.empty() ? std::string("no port of this phase does")
                         : port + (got % 2 ? " does not write yet" : " does not do here"));
    }
    if (!reads.empty()) {
      s << "; the network's reads still due here: ";
      for (size_t i = 0; i < reads.size() && i < 4; ++i) s << (i ? ", " : "") << describe(net_, reads[i]);
      if (reads.size() > 4) s << " and " << reads.size() - 4 << " more";
    }
    s << " (" << matched_ << " accesses of this task matched before)";
    return s.str();
  }

  // A write due since iteration `due.second` is not made by iteration t, where the code makes `got`.
  std::string overdue(const Site& site, int64_t t, int64_t got,
                      const std::pair<int64_t, int64_t>& due) const {
    std::ostringstream s;
    s << head(site, t) << "the network's " << portOf(site.phase, due.first) << " " << acts(net_, due.first)
      << token(due.first) << " at iteration " << iteration(site, due.second) << ", and its latency ("
      << site.phase.latency << " cycles at II " << site.phase.ii << ") lets it lag " << site.lag
      << " iteration(s); the code " << acts(net_, got) << token(got) << " first (" << matched_
      << " accesses of this task matched before)";
    return s.str();
  }

  const Network& net_;
  const Task& task_;
  const Bindings& bindings_;
  Expander code_;
  const std::vector<int>& fifoOf_;
  std::string where_;
  std::vector<int64_t> tokens_;  ///< tokens each FIFO access of the task has moved so far
  int64_t matched_ = 0;
  int64_t last_ = -1;  ///< the code's last access taken
};

std::string bindingsText(const Bindings& b) {
  std::string s;
  for (const auto& [k, v] : b) s += (s.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return s;
}

}  // namespace

Trace parseTrace(const std::string& text, const std::string& file) {
  Trace t;
  std::istringstream lines(text);
  int lineNo = 0;
  bool header = false, ended = false;
  std::map<int64_t, TraceStream> streams;
  for (std::string line; std::getline(lines, line);) {
    ++lineNo;
    SourceLoc loc{file, lineNo, 1};
    if (line.rfind("# streamtensor stream trace 1", 0) == 0) header = true;
    if (line.empty() || line[0] == '#') continue;
    if (!header) fail(loc, "not a streamtensor stream trace (written by `make trace` of an emitted project)");
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    std::vector<std::string> rest;
    for (std::string w; words >> w;) rest.push_back(w);
    if (ended) fail(loc, "a line after the trace's 'end' line");
    if (kind == "stream") {
      if (rest.size() != 3) fail(loc, "field 'stream': expected 'stream ID BITS NAME'");
      int64_t id = integer(rest[0], loc, "stream");
      if (!streams.emplace(id, TraceStream{rest[2], integer(rest[1], loc, "bits")}).second)
        fail(loc, "field 'stream': stream " + rest[0] + " is declared twice");
    } else if (kind == "node") {
      if (rest.size() < 3) fail(loc, "field 'node': expected 'node ID COUNT SYMBOL...'");
      if (integer(rest[0], loc, "node") != static_cast<int64_t>(t.nodes.size()))
        fail(loc, "field 'node': nodes must be numbered 0, 1, ... in order");
      TraceNode n;
      n.count = integer(rest[1], loc, "count");
      if (n.count < 1) fail(loc, "field 'count': a node repeats its pattern at least once");
      for (size_t i = 2; i < rest.size(); ++i) n.pattern.push_back(symbol(rest[i], loc, t.nodes.size()));
      t.nodes.push_back(std::move(n));
    } else if (kind == "call") {
      if (rest.empty()) fail(loc, "field 'call': expected 'call GROUP [SYMBOL=VALUE...]'");
      TraceCall c;
      int64_t group = rest[0] == "-1" ? -1 : integer(rest[0], loc, "call");  // -1: accesses outside any call
      if (group > 1000000) fail(loc, "field 'call': group " + rest[0] + " is out of range");
      c.group = static_cast<int>(group);
      for (size_t i = 1; i < rest.size(); ++i) {
        size_t eq = rest[i].find('=');
        if (eq == std::string::npos || eq == 0)
          fail(loc, "field 'call': expected SYMBOL=VALUE, got '" + rest[i] + "'");
        c.bindings[rest[i].substr(0, eq)] = integer(rest[i].substr(eq + 1), loc, rest[i].substr(0, eq));
      }
      t.calls.push_back(std::move(c));
    } else if (kind == "task") {
      if (rest.empty()) fail(loc, "field 'task': expected 'task NAME SYMBOL...'");
      if (t.calls.empty()) fail(loc, "field 'task': a task before the first call");
      TraceTask task{rest[0], {}, lineNo};
      for (size_t i = 1; i < rest.size(); ++i) task.symbols.push_back(symbol(rest[i], loc, t.nodes.size()));
      t.calls.back().tasks.push_back(std::move(task));
    } else if (kind == "end") {
      if (rest.size() != 1 || integer(rest[0], loc, "end") != static_cast<int64_t>(t.calls.size()))
        fail(loc, "field 'end': expected 'end " + std::to_string(t.calls.size()) + "', the calls recorded");
      ended = true;
    } else {
      fail(loc, "unknown line '" + kind + "' (expected stream, node, call, task or end)");
    }
  }
  if (!header)
    fail({file, 1, 1}, "not a streamtensor stream trace (written by `make trace` of an emitted project)");
  if (!ended)
    fail({file, lineNo, 1},
         "the trace has no 'end' line: the C simulation stopped before it wrote all of it");
  for (const auto& [id, stream] : streams) {
    if (id != static_cast<int64_t>(t.streams.size()))
      fail({file, 0, 0},
           "streams must be numbered 0, 1, ...; stream " + std::to_string(t.streams.size()) + " is missing");
    t.streams.push_back(stream);
  }
  for (const TraceNode& n : t.nodes)
    for (Symbol s : n.pattern)
      if (s >= 0 && static_cast<size_t>(s / 2) >= t.streams.size())
        fail({file, 0, 0},
             "an access to stream " + std::to_string(s / 2) + ", which the trace does not declare");
  for (const TraceCall& c : t.calls)
    for (const TraceTask& task : c.tasks)
      for (Symbol s : task.symbols)
        if (s >= 0 && static_cast<size_t>(s / 2) >= t.streams.size())
          fail({file, task.line, 1},
               "an access to stream " + std::to_string(s / 2) + ", which the trace does not declare");
  return t;
}

std::vector<Symbol> expand(const Trace& trace, const std::vector<Symbol>& symbols) {
  std::vector<Symbol> out;
  Expander e(trace, symbols);
  for (Symbol s = e.next(); s >= 0; s = e.next()) out.push_back(s);
  return out;
}

Result check(const Network& net, const Trace& trace) {
  Result r;
  auto fail = [&](const std::string& message) {
    r.ok = false;
    r.message = message;
    return r;
  };
  // Each stream of the code is a FIFO of the network, with its token width.
  std::vector<int> fifoOf;
  for (const TraceStream& s : trace.streams) {
    int f = net.findFifo(s.name);
    if (f < 0) return fail("the code's stream '" + s.name + "' is not a FIFO of the network");
    const Fifo& fifo = net.fifos[static_cast<size_t>(f)];
    if (!fifo.isRegion() && s.bits != fifo.width)
      return fail("FIFO '" + s.name + "': the code's tokens are " + std::to_string(s.bits) +
                  " bits, the network's " + std::to_string(fifo.width));
    fifoOf.push_back(f);
  }
  // The structure a walk relies on (stc conform does not require the tokens to balance, so that a network
  // changed by hand is checked task by task).
  for (const Task& task : net.tasks) {
    if (task.isDma() && task.dmaPorts.size() != 1)
      return fail("DMA task '" + task.name + "' needs exactly one port");
    for (const Phase& ph : task.phases)
      for (const Port& p : ph.ports)
        if (net.findFifo(p.fifo) < 0)
          return fail("task '" + task.name + "' names FIFO '" + p.fifo +
                      "', which the network does not declare");
    for (const Port& p : task.dmaPorts) {
      int f = net.findFifo(p.fifo);
      if (f < 0)
        return fail("task '" + task.name + "' names FIFO '" + p.fifo +
                    "', which the network does not declare");
      if (net.fifos[static_cast<size_t>(f)].width <= 0) return fail("FIFO '" + p.fifo + "' has no width");
    }
  }
  if (trace.calls.empty()) return fail("the trace records no call of a top function");
  std::set<int> called;
  for (const TraceCall& call : trace.calls) called.insert(call.group);
  if (called.count(-1))
    return fail("the code accesses streams outside any call of a top function (the trace's 'call -1')");
  for (const Task& task : net.tasks)
    if (!called.count(task.group))
      return fail("the trace never calls group " + std::to_string(task.group) + " (task '" + task.name +
                  "')");
  for (size_t c = 0; c < trace.calls.size(); ++c) {
    const TraceCall& call = trace.calls[c];
    std::string callName = "call " + std::to_string(c + 1) + " (group " + std::to_string(call.group) +
                           (call.bindings.empty() ? "" : ", " + bindingsText(call.bindings)) + ")";
    std::map<std::string, const TraceTask*> traced;
    for (const TraceTask& t : call.tasks) {
      const Task* task = nullptr;
      for (const Task& n : net.tasks)
        if (n.name == t.name) task = &n;
      if (!task)
        return fail(callName + ": the code runs task '" + t.name + "', which the network does not have");
      if (task->group != call.group)
        return fail(callName + ": the code runs task '" + t.name + "', which the network puts in group " +
                    std::to_string(task->group));
      if (!traced.emplace(t.name, &t).second)
        return fail(callName + ": the code runs task '" + t.name + "' twice");
    }
    static const std::vector<Symbol> kNone;
    for (const Task& task : net.tasks) {
      if (task.group != call.group) continue;
      auto it = traced.find(task.name);
      Bindings bindings = call.bindings;
      TaskCheck check(net, task, bindings, Expander(trace, it == traced.end() ? kNone : it->second->symbols),
                      fifoOf, callName + ", task '" + task.name + "'");
      if (std::string e = check.run(); !e.empty()) return fail(e);
      r.accesses += check.accesses();
      ++r.tasks;
    }
    ++r.calls;
  }
  r.ok = true;
  std::ostringstream s;
  s << r.calls << " call" << (r.calls == 1 ? "" : "s") << ", " << r.tasks << " task runs, " << r.accesses
    << " stream accesses as the network says";
  r.message = s.str();
  return r;
}

}  // namespace stc::conform
