// Network queries and verification. Token counts follow DESIGN.md: a port at level L carries one token per
// iteration of loops 0..L (one per phase at level -1).
#include "compiler/ir/network.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace stc {

const char* taskKindName(TaskKind kind) {
  switch (kind) {
    case TaskKind::kKernel: return "kernel";
    case TaskKind::kDmaRead: return "dma_read";
    case TaskKind::kDmaWrite: return "dma_write";
  }
  return "kernel";
}

int Network::findFifo(const std::string& fifoName) const {
  for (size_t k = 0; k < fifos.size(); ++k)
    if (fifos[k].name == fifoName) return static_cast<int>(k);
  return -1;
}

bool Phase::namesLoopIndex(size_t loop, const std::string& symbol) const {
  if (symbol.size() < 2 || symbol[0] != 'i' || symbol.size() > 8) return false;
  int k = 0;
  for (size_t c = 1; c < symbol.size(); ++c) {
    if (!std::isdigit(static_cast<unsigned char>(symbol[c])) ||
        (c == 1 && symbol[c] == '0' && symbol.size() > 2))
      return false;
    k = k * 10 + (symbol[c] - '0');
  }
  return k < outer && static_cast<size_t>(k) < loop;
}

bool Phase::indexed() const {
  for (size_t k = 0; k < trip.size(); ++k)
    for (const auto& s : trip[k].symbols())
      if (namesLoopIndex(k, s)) return true;
  return false;
}

std::set<std::string> Network::symbols() const {
  std::set<std::string> out;
  for (const auto& t : tasks)
    for (const auto& p : t.phases)
      for (size_t k = 0; k < p.trip.size(); ++k)
        for (const auto& s : p.trip[k].symbols())
          if (!p.namesLoopIndex(k, s)) out.insert(s);
  for (const auto& t : tasks) out.insert(t.bytes.symbols().begin(), t.bytes.symbols().end());
  return out;
}

std::vector<int64_t> Network::boundValues(const Bindings& bindings) const {
  std::vector<int64_t> out;
  for (const auto& t : tasks) {
    for (const auto& p : t.phases)
      for (size_t k = 0; k < p.trip.size(); ++k) {
        const Expr& e = p.trip[k];
        bool indexed = false;
        for (const auto& s : e.symbols()) indexed = indexed || p.namesLoopIndex(k, s);
        if (!indexed) {
          if (!e.isConstant()) out.push_back(e.eval(bindings));
          continue;
        }
        for (const auto& s : e.symbols())  // a trip over loop indices: the values of the symbols it binds
          if (!p.namesLoopIndex(k, s)) out.push_back(bindings.at(s));
      }
    if (!t.bytes.isConstant()) out.push_back(t.bytes.eval(bindings));
  }
  return out;
}

void forEachRun(
    const Phase& phase, const Bindings& bindings,
    const std::function<bool(const std::vector<int64_t>& index, const std::vector<int64_t>& trip)>& visit) {
  const size_t n = phase.trip.size(),
               outer = static_cast<size_t>(std::clamp<int>(phase.outer, 0, static_cast<int>(n)));
  std::vector<int64_t> index(outer, 0), trip(n, 0);
  Bindings b = bindings;
  bool go = true;
  // Loop k: its trip under the indices of the loops around it, then each of its iterations.
  std::function<void(size_t)> loop = [&](size_t k) {
    if (k == outer) {
      for (size_t j = outer; j < n; ++j) trip[j] = phase.trip[j].eval(b);
      go = visit(index, trip);
      return;
    }
    trip[k] = phase.trip[k].eval(b);
    if (trip[k] < 1) {  // no run inside it would tell
      std::string at;
      for (size_t j = 0; j < k; ++j)
        at += (j ? ", i" : " at i") + std::to_string(j) + " = " + std::to_string(index[j]);
      throw UserError("tripcount '" + phase.trip[k].str() + "' is " + std::to_string(trip[k]) + at +
                      ", must be at least 1");
    }
    const std::string name = "i" + std::to_string(k);
    for (index[k] = 0; go && index[k] < trip[k]; ++index[k]) {
      b[name] = index[k];
      loop(k + 1);
    }
    b.erase(name);
    if (bindings.count(name)) b[name] = bindings.at(name);
  };
  loop(0);
}

int64_t portTokens(const Phase& phase, const Port& port, const Bindings& bindings) {
  const int level = phase.levelOf(port);
  const std::string what = "the token count of FIFO '" + port.fifo + "'";
  if (!phase.indexed()) {  // a token per iteration of loops 0..level, however many run outside the pipeline
    int64_t n = 1;
    for (int k = 0; k <= level && k < static_cast<int>(phase.trip.size()); ++k)
      n = checkedMul(n, phase.trip[k].eval(bindings), what);
    return n;
  }
  const size_t outer =
      static_cast<size_t>(std::clamp<int>(phase.outer, 0, static_cast<int>(phase.trip.size())));
  int64_t n = 0, runs = 0;
  forEachRun(phase, bindings, [&](const std::vector<int64_t>& index, const std::vector<int64_t>& trip) {
    if (++runs > kMaxPhaseRuns)
      throw UserError(what + ": its loops outside the pipeline run more than " +
                      std::to_string(kMaxPhaseRuns) + " times");
    if (static_cast<size_t>(level + 1) <=
        outer) {  // a token per iteration of loops 0..level: at its first run
      bool first = true;
      for (size_t k = static_cast<size_t>(level + 1); k < outer; ++k) first = first && index[k] == 0;
      n = checkedAdd(n, first ? 1 : 0, what);
      return true;
    }
    int64_t run = 1;
    for (size_t k = outer; k <= static_cast<size_t>(level) && k < trip.size(); ++k)
      run = checkedMul(run, trip[k], what);
    n = checkedAdd(n, run, what);
    return true;
  });
  return n;
}

namespace {

struct Endpoint {
  const Task* task = nullptr;
  SourceLoc loc;
  int count = 0;
  std::vector<int64_t> tokens;  // one per sample binding
};

// Sample bindings: the user's, with each unbound symbol tried at two values so that token counts that
// agree only by accident are caught.
std::vector<Bindings> sampleBindings(const Network& net, const Bindings& given) {
  std::vector<Bindings> out(1, given);
  bool anyUnbound = false;
  for (const auto& s : net.symbols())
    if (!given.count(s)) anyUnbound = true;
  if (!anyUnbound) return out;
  out.assign(2, given);
  int64_t base[2] = {256, 1536};
  int index = 0;
  for (const auto& s : net.symbols()) {
    if (given.count(s)) continue;
    out[0][s] = base[0] + 16 * index;
    out[1][s] = base[1] + 48 * index;
    ++index;
  }
  return out;
}

}  // namespace

Diagnostics verifyNetwork(const Network& net, const Bindings& bindings) {
  Diagnostics diag;
  std::map<std::string, const Fifo*> fifos;
  for (const auto& f : net.fifos) {
    if (f.name.empty()) diag.error(f.loc, "field 'name': a FIFO needs a name");
    if (!fifos.emplace(f.name, &f).second) diag.error(f.loc, "field 'name': FIFO '" + f.name + "' is declared twice");
    if (f.width <= 0) diag.error(f.loc, "field 'width': FIFO '" + f.name + "' needs a positive width in bits");
    if (f.depth <= 0 && f.depth != kUnboundedDepth)
      diag.error(f.loc, "field 'depth': FIFO '" + f.name + "' needs a positive depth or 'unbounded'");
  }
  std::vector<Bindings> samples = sampleBindings(net, bindings);
  std::map<std::string, Endpoint> writers, readers;
  std::map<std::string, const Task*> tasks;
  // Registers p as its FIFO's writer or reader and, when countable, its token count under each sample.
  auto visitPort = [&](const Task& t, const Port& p, const Phase* phase, bool countable) {
    if (!fifos.count(p.fifo)) {
      diag.error(p.loc, "field 'fifo': task '" + t.name + "' uses unknown FIFO '" + p.fifo + "'");
      return;
    }
    Endpoint& end = (p.dir == PortDir::kOut ? writers : readers)[p.fifo];
    if (end.count++ == 0) {
      end.task = &t;
      end.loc = p.loc;
    } else {
      diag.error(p.loc, "field 'fifo': FIFO '" + p.fifo + "' has a second " +
                            (p.dir == PortDir::kOut ? "writer" : "reader") + " in task '" + t.name +
                            "' (first in task '" + end.task->name + "' at " + end.loc.str() + ")");
      return;
    }
    for (const Bindings& b : samples) {
      if (!countable) break;
      try {
        if (phase) end.tokens.push_back(portTokens(*phase, p, b));
        else {
          const Fifo& f = *fifos[p.fifo];
          if (&b == &samples.front() && f.width % 8 != 0)
            diag.error(t.loc, "field 'ports': FIFO '" + f.name + "' of DMA task '" + t.name +
                                  "' must carry whole bytes, but its width is " + std::to_string(f.width) + " bits");
          int64_t bytes = t.bytes.eval(b);
          if (&b == &samples.front() && bytes <= 0)
            diag.error(t.loc, "field 'bytes': DMA task '" + t.name + "' needs a positive byte count, got " +
                                  std::to_string(bytes));
          else if (&b == &samples.front() && bytes > kMaxNumber)
            diag.error(t.loc, "field 'bytes': " + std::to_string(bytes) + " is too large (at most 2^40)");
          else if (&b == &samples.front() && bytes * 8 % f.width != 0)
            diag.error(t.loc, "field 'bytes': " + std::to_string(bytes) + " bytes are not a whole number of " +
                                  std::to_string(f.width) + "-bit tokens of FIFO '" + f.name + "'");
          end.tokens.push_back(std::min(bytes, kMaxNumber) * 8 / f.width);
        }
      } catch (const UserError& e) {
        diag.error(phase ? phase->loc : t.loc, std::string(phase ? "field 'trip': " : "field 'bytes': ") + e.what());
        return;
      }
    }
  };
  for (const auto& t : net.tasks) {
    if (t.name.empty()) diag.error(t.loc, "field 'name': a task needs a name");
    if (!tasks.emplace(t.name, &t).second) diag.error(t.loc, "field 'name': task '" + t.name + "' is declared twice");
    if (t.isDma()) {
      if (t.channel < 0) diag.error(t.loc, "field 'channel': DMA task '" + t.name + "' needs a channel >= 0");
      if (t.axiPort < -1) diag.error(t.loc, "field 'port': DMA task '" + t.name + "' needs a port >= 0");
      if (t.dmaPorts.size() != 1) {
        diag.error(t.loc, "field 'ports': DMA task '" + t.name + "' needs exactly one port");
        continue;
      }
      const Port& p = t.dmaPorts.front();
      PortDir want = t.kind == TaskKind::kDmaRead ? PortDir::kOut : PortDir::kIn;
      if (p.dir != want)
        diag.error(p.loc, std::string("field 'dir': the port of a ") + taskKindName(t.kind) + " must be '" +
                              (want == PortDir::kOut ? "out" : "in") + "'");
      visitPort(t, p, nullptr, p.dir == want && fifos.count(p.fifo) && fifos[p.fifo]->width > 0);
      continue;
    }
    if (t.phases.empty()) diag.error(t.loc, "field 'phases': task '" + t.name + "' has no phases");
    for (const auto& ph : t.phases) {
      if (ph.trip.empty()) diag.error(ph.loc, "field 'trip': a phase needs at least one loop");
      if (ph.ii < 1) diag.error(ph.loc, "field 'ii': must be at least 1, got " + std::to_string(ph.ii));
      if (ph.latency < 0)
        diag.error(ph.loc, "field 'latency': must not be negative, got " + std::to_string(ph.latency));
      int rank = static_cast<int>(ph.trip.size());
      bool outerOk = !(ph.outer < 0 || (ph.outer > 0 && ph.outer >= rank));
      if (!outerOk)
        diag.error(ph.loc, "field 'outer': " + std::to_string(ph.outer) +
                               " loops outside the pipeline of a nest of " + std::to_string(rank) +
                               " (0 to " + std::to_string(std::max(0, rank - 1)) +
                               "; the pipeline keeps the innermost loop)");
      const bool indexed =
          outerOk && ph.indexed();  // a trip over the indices of the loops outside the pipeline
      if (!indexed) {
        for (const auto& e : ph.trip) {
          try {
            int64_t v = e.eval(samples.front());
            if (v < 1)
              diag.error(ph.loc, "field 'trip': tripcount '" + e.str() + "' is " + std::to_string(v) +
                                     ", must be at least 1");
          } catch (const UserError& err) {
            diag.error(ph.loc, std::string("field 'trip': ") + err.what());
          }
        }
      } else {  // every run's trips, as the simulator runs them
        std::string bad;
        int64_t runs = 0;
        try {
          forEachRun(
              ph, samples.front(), [&](const std::vector<int64_t>& index, const std::vector<int64_t>& trip) {
                for (size_t k = 0; k < trip.size() && bad.empty(); ++k)
                  if (trip[k] < 1) {
                    std::string at;
                    for (size_t j = 0; j < index.size(); ++j)
                      at += (j ? ", i" : " at i") + std::to_string(j) + " = " + std::to_string(index[j]);
                    bad = "tripcount '" + ph.trip[k].str() + "' is " + std::to_string(trip[k]) + at +
                          ", must be at least 1";
                  }
                return bad.empty() && ++runs <= kMaxPhaseRuns;
              });
          if (bad.empty() && runs > kMaxPhaseRuns)
            bad = "its loops outside the pipeline run more than " + std::to_string(kMaxPhaseRuns) + " times";
        } catch (const UserError& err) {
          bad = err.what();
        }
        if (!bad.empty()) diag.error(ph.loc, "field 'trip': " + bad);
      }
      for (const auto& p : ph.ports) {
        bool levelOk = !p.level || (*p.level >= -1 && *p.level < rank);
        if (!levelOk)
          diag.error(p.loc, "field 'level': " + std::to_string(*p.level) + " is out of range for a nest of " +
                                std::to_string(rank) + " loops (-1 to " + std::to_string(rank - 1) + ")");
        visitPort(t, p, &ph, levelOk);
      }
    }
  }
  for (const auto& f : net.fifos) {
    bool hasW = writers.count(f.name), hasR = readers.count(f.name);
    if (!hasW) diag.error(f.loc, "FIFO '" + f.name + "' has no writer (no port with dir: out)");
    if (!hasR) diag.error(f.loc, "FIFO '" + f.name + "' has no reader (no port with dir: in)");
    if (!hasW || !hasR) continue;
    const Endpoint& w = writers[f.name];
    const Endpoint& r = readers[f.name];
    if (w.task->group != r.task->group)
      diag.error(f.loc, "FIFO '" + f.name + "' connects task '" + w.task->name + "' (group " +
                            std::to_string(w.task->group) + ") to task '" + r.task->name + "' (group " +
                            std::to_string(r.task->group) +
                            "): groups run one after another and exchange data through HBM (dma_write, dma_read)");
    if (w.tokens.size() == r.tokens.size() && w.tokens != r.tokens && !w.tokens.empty())
      diag.error(f.loc, "FIFO '" + f.name + "': writer '" + w.task->name + "' moves " + std::to_string(w.tokens[0]) +
                            " tokens but reader '" + r.task->name + "' moves " + std::to_string(r.tokens[0]) +
                            (samples.size() > 1 ? " (with sample values for unbound symbols)" : ""));
  }
  return diag;
}

}  // namespace stc
