// st_dfsim.h for `make dfsim`: the kernels run concurrently, as the dataflow region runs them on the board.
// Built with -DST_DFSIM, each task of a top function runs in its own thread, every stream holds at most the
// depth its `#pragma HLS STREAM` gives in src/ (a stream of blocks its Depth), and the accesses of one
// clock are gated together, as an HLS stall pipeline gates them: an iteration's reads take their tokens,
// with the writes that fall in the same clock, only once every stream written has room. A run in which every
// unfinished task waits is a deadlock: it is reported as `stc simulate` reports one (the wait-for cycle, each
// stream FULL or EMPTY with its occupancy) and the program exits with 3. Synthesis never sees this file.
//
// The code marks its iterations: ST_ITER(lag, split) at the start of each pipelined loop's body
// (streamtensor.h) fires the previous iteration's reads together with the writes of the iteration `lag`
// before it, as a pipeline of latency / II = lag iterations does (the network's timing semantics: one stage
// group); a new loop, a block lock and the end of a task drain the writes still in flight.
#pragma once

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace st_dfsim {

struct Waiter;

/// What the runtime knows of a stream: its name, the tasks at its ends, its capacity and what it holds.
class Chan {
 public:
  virtual ~Chan() = default;
  virtual size_t held() const = 0;  ///< tokens (blocks) in it now
  virtual void pop(size_t n) = 0;   ///< the oldest n taken by its reader
  virtual const char* unit() const { return "tokens"; }
  /// The FIFO's name and the tasks at its ends (the top function says them).
  void dfsim_ends(const char* name, const char* from, const char* to);
  /// A link between two parts of a group split at SLR boundaries (src/parts.h): a top's port, whose depth
  /// is the stream_connect FIFO's, not a pragma's.
  void dfsim_link(const char* name, const char* from, const char* to, long depth);
  std::string chanName = "stream";
  std::string writer, reader;
  long capacity = -1;        ///< set by dfsim_ends (a stream's pragma) or the block stream's Depth
  Waiter* waiter = nullptr;  ///< the task waiting on it, if any
};

struct Waiter {
  std::string task;
  std::condition_variable cv;
  bool waiting = false;
  bool write = false;           ///< waits to write `on` (else to read it)
  Chan* on = nullptr;           ///< the stream it waits on
  std::function<bool()> ready;  ///< whether it may go on now; sets `on` to what stops it
};

using Writes = std::vector<std::pair<Chan*, std::function<void()>>>;

struct Iteration {  // a task's accesses since its last ST_ITER, not fired yet
  std::vector<std::pair<Chan*, size_t>> reads;
  Writes writes;
};

struct Pipeline {  // the loop a task runs: the writes of its last `lag` iterations, still in flight
  std::deque<Writes> inFlight;
  long loop = -1;  ///< the loop's ST_ITER line
  long lag = 0;    ///< iterations from an iteration's reads to its writes (latency / II, rounded down)
  bool split = false;  ///< latency / II is not whole: a write fires after the reads of its clock's iteration
};

class Runtime {
 public:
  std::mutex m;
  std::vector<Waiter*> live;  ///< running task threads
  long pending = 0;           ///< parts started (st_dfsim::parts) whose tasks are not registered yet
  long long accesses = 0, tasks = 0;

  /// The depth of `s` from the STREAM pragmas of src/*.cpp: `hls::stream<...> VAR("NAME");` and
  /// `#pragma HLS STREAM variable=VAR depth=N`.
  long depthOf(const std::string& name) {
    std::call_once(loaded_, [this] { load(); });  // the parts of a split group start together
    auto it = depths_.find(name);
    if (it == depths_.end()) {
      std::fprintf(stderr, "dfsim: no '#pragma HLS STREAM depth=' in src/ for stream '%s'\n", name.c_str());
      std::_Exit(2);
    }
    return it->second;
  }

  /// Waits, holding lk, until `ready` says so; a state where every running task waits is a deadlock.
  template <typename Ready>
  void wait(std::unique_lock<std::mutex>& lk, Waiter& self, bool write, Ready ready) {
    if (ready()) return;  // the usual case, kept free of a std::function
    self.write = write;
    self.ready = ready;
    self.waiting = true;
    for (;;) {
      self.on->waiter = &self;
      if (allWaiting()) deadlock();
      self.cv.wait(lk);
      if (self.ready()) break;
    }
    self.waiting = false;
  }
  /// Wakes the task waiting on c, if any (c changed).
  void changed(Chan& c) {
    if (c.waiter) {
      c.waiter->cv.notify_one();
      c.waiter = nullptr;
    }
  }
  /// A task ended: the others may all be waiting now.
  void ended(Waiter& self) {
    live.erase(std::find(live.begin(), live.end(), &self));
    if (!live.empty() && allWaiting()) deadlock();
  }

 private:
  bool allWaiting() const {
    if (pending > 0) return false;  // a part still to start may feed them
    for (Waiter* w : live)
      if (!w->waiting || w->ready()) return false;
    return true;
  }
  [[noreturn]] void deadlock() const {
    std::fprintf(stdout, "dfsim: DEADLOCK at the emitted depths after %lld stream accesses\n", accesses);
    // Each waiting task needs the task at the other end of its stream: follow those to a cycle.
    std::map<std::string, Waiter*> byTask;
    for (Waiter* w : live) byTask[w->task] = w;
    std::vector<Waiter*> path;
    std::map<Waiter*, size_t> seen;
    Waiter* at = nullptr;
    for (Waiter* start : live) {  // from each waiting task until a chain closes on itself
      path.clear();
      seen.clear();
      at = start;
      while (at && !seen.count(at)) {
        seen[at] = path.size();
        path.push_back(at);
        auto next = byTask.find(at->write ? at->on->reader : at->on->writer);
        at = next == byTask.end() ? nullptr : next->second;
      }
      if (at) break;
    }
    size_t from = at ? seen[at] : 0;
    if (!at) {  // the chain reached a task that is not running (it ended): every waiting task, then
      std::fprintf(stdout, "waiting tasks:\n");
      for (Waiter* w : live) line(*w);
      std::fflush(stdout);
      std::_Exit(3);
    }
    std::fprintf(stdout, "wait-for cycle:\n");
    for (size_t i = from; i < path.size(); ++i) line(*path[i]);
    auto outside = [&](Waiter* w) { return !seen.count(w) || seen[w] < from; };
    if (std::any_of(live.begin(), live.end(), outside)) std::fprintf(stdout, "also blocked:\n");
    for (Waiter* w : live)
      if (outside(w)) line(*w);
    std::fflush(stdout);
    std::_Exit(3);  // the other threads wait on this process's locks: no destructors
  }
  static void line(const Waiter& w) {
    const Chan& c = *w.on;
    std::fprintf(stdout, "  %s waits to %s %s: %s, %zu/%ld %s; it needs %s\n", w.task.c_str(),
                 w.write ? "write" : "read", c.chanName.c_str(), w.write ? "FULL" : "EMPTY", c.held(),
                 c.capacity, c.unit(), (w.write ? c.reader : c.writer).c_str());
  }
  void load() {
#ifdef ST_DFSIM_SRC
    const std::string dir = ST_DFSIM_SRC;  // the Makefile's: the project's src/, wherever the program runs
#else
    const std::string dir = "src";
#endif
    std::error_code ec;
    std::filesystem::directory_iterator files(dir, ec);
    if (ec) {
      std::fprintf(stderr, "dfsim: cannot read the sources' STREAM depths in %s: %s\n", dir.c_str(),
                   ec.message().c_str());
      std::_Exit(2);
    }
    for (const auto& e : files) {
      if (e.path().extension() != ".cpp") continue;
      std::ifstream in(e.path());
      std::map<std::string, std::string> nameOf;  // variable -> stream name
      for (std::string l; std::getline(in, l);) {
        size_t s = l.find("hls::stream<"), q = l.find("(\""), end = l.find("\");");
        if (s != std::string::npos && q != std::string::npos && end != std::string::npos) {
          size_t v = l.rfind(' ', q);
          nameOf[l.substr(v + 1, q - v - 1)] = l.substr(q + 2, end - q - 2);
        }
        // #pragma HLS STREAM variable=V depth=N, its options in any order and case
        std::istringstream words(l);
        std::string w, var;
        long depth = -1;
        bool pragma = false, hls = false, stream = false;
        while (words >> w) {
          std::string lower;
          for (char c : w) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          if (lower == "#pragma")
            pragma = true;
          else if (pragma && lower == "hls")
            hls = true;
          else if (hls && lower == "stream")
            stream = true;
          else if (stream && lower.rfind("variable=", 0) == 0)
            var = w.substr(9);
          else if (stream && lower.rfind("depth=", 0) == 0)
            depth = std::atol(w.c_str() + 6);
        }
        if (stream && depth > 0 && nameOf.count(var)) depths_[nameOf[var]] = depth;
      }
    }
  }
  std::once_flag loaded_;
  std::map<std::string, long> depths_;
};

inline Runtime& rt() {
  static Runtime r;
  return r;
}

inline Waiter*& self() {
  thread_local Waiter* w = nullptr;
  return w;
}
inline Iteration& iteration() {
  thread_local Iteration it;
  return it;
}

inline Pipeline& pipeline() {
  thread_local Pipeline p;
  return p;
}

/// One clock of the calling task's pipeline: its reads take their tokens and its writes go, together, once
/// every stream written has room (the reads' tokens are there: the task has read them).
inline void fire(std::vector<std::pair<Chan*, size_t>>& reads, Writes& writes) {
  if (reads.empty() && writes.empty()) return;
  Runtime& r = rt();
  Waiter* me = self();
  std::unique_lock<std::mutex> lk(r.m);
  if (!writes.empty()) {
    std::vector<std::pair<Chan*, size_t>> need;  // in the order written: the first without room is named
    for (auto& w : writes) {
      auto at = std::find_if(need.begin(), need.end(), [&](const auto& e) { return e.first == w.first; });
      if (at == need.end())
        need.push_back({w.first, 1});
      else
        ++at->second;
    }
    for (auto& [c, n] : need)
      if (n > static_cast<size_t>(c->capacity)) {
        std::fprintf(stderr, "dfsim: one clock writes %zu tokens to '%s' of depth %ld\n", n,
                     c->chanName.c_str(), c->capacity);
        std::_Exit(2);
      }
    r.wait(lk, *me, true, [&need, me] {
      for (auto& [c, n] : need)
        if (c->held() + n > static_cast<size_t>(c->capacity)) {
          me->on = c;
          return false;
        }
      return true;
    });
  }
  for (auto& [c, n] : reads) {
    c->pop(n);
    r.changed(*c);
  }
  for (auto& w : writes) {
    w.second();
    r.changed(*w.first);
  }
  r.accesses += static_cast<long long>(writes.size());
  reads.clear();
  writes.clear();
}

/// The accesses since the last ST_ITER are one iteration of the current loop: its reads fire with the
/// writes of the iteration `lag` before it (a pipeline stalls whole: the group is gated together).
inline void step() {
  Iteration& it = iteration();
  Pipeline& p = pipeline();
  p.inFlight.push_back(std::move(it.writes));
  it.writes.clear();
  Writes due;
  if (static_cast<long>(p.inFlight.size()) > p.lag) {
    due = std::move(p.inFlight.front());
    p.inFlight.pop_front();
  }
  if (p.split) {  // the write falls between two iterations' reads: a stage group of its own
    Writes none;
    fire(it.reads, none);
    std::vector<std::pair<Chan*, size_t>> noReads;
    fire(noReads, due);
  } else {
    fire(it.reads, due);
  }
}

/// The pipeline drains: the writes still in flight go, iteration after iteration.
inline void drain() {
  std::vector<std::pair<Chan*, size_t>> none;
  Pipeline& p = pipeline();
  while (!p.inFlight.empty()) {
    fire(none, p.inFlight.front());
    p.inFlight.pop_front();
  }
}

/// ST_ITER(lag, split): the start of an iteration of the loop at `loop`. A new loop first ends the one
/// before.
inline void iterate(long lag, bool split, long loop) {
  Pipeline& p = pipeline();
  if (!self()) return;
  step();
  if (loop != p.loop) {
    drain();
    p.loop = loop;
    p.lag = lag;
    p.split = split;
  }
}

/// Everything the calling task has done fires: before a block lock, and at the task's end.
inline void commit() {
  if (!self()) return;
  step();
  drain();
  pipeline() = Pipeline{};
}

/// The calling thread runs a task; else stop with what was accessed (every access belongs to one).
inline Waiter& me(const Chan& c) {
  if (!self()) {
    std::fprintf(stderr, "dfsim: stream '%s' accessed outside a task of a top function\n",
                 c.chanName.c_str());
    std::_Exit(2);
  }
  return *self();
}

inline void Chan::dfsim_ends(const char* name, const char* from, const char* to) {
  chanName = name;
  writer = from;
  reader = to;
  if (capacity < 0) capacity = rt().depthOf(name);  // before the tasks start: no lock needed
}

inline void Chan::dfsim_link(const char* name, const char* from, const char* to, long depth) {
  chanName = name;
  writer = from;
  reader = to;
  capacity = depth;
}

/// The calling task's next read of c, once its token is there: copy(k) takes token k of c, under the lock.
template <typename Copy>
inline void read(Chan& c, Copy copy) {
  Runtime& r = rt();
  Iteration& it = iteration();
  Waiter* waiter = &me(c);
  std::unique_lock<std::mutex> lk(r.m);
  size_t* n = nullptr;
  for (auto& e : it.reads)
    if (e.first == &c) n = &e.second;
  if (!n) {
    it.reads.push_back({&c, 0});
    n = &it.reads.back().second;
  }
  size_t k = *n;
  if (k + 1 > static_cast<size_t>(c.capacity)) {
    std::fprintf(stderr, "dfsim: one clock reads %zu tokens of '%s' of depth %ld\n", k + 1,
                 c.chanName.c_str(), c.capacity);
    std::_Exit(2);
  }
  r.wait(lk, *waiter, false, [&c, waiter, k] {
    waiter->on = &c;
    return c.held() > k;
  });
  copy(k);
  ++*n;
  ++r.accesses;
}

/// A write of the calling task's iteration: `push` puts the token in c when the iteration's writes fire.
inline void write(Chan& c, std::function<void()> push) {
  me(c);
  iteration().writes.push_back({&c, std::move(push)});
}

/// Runs a top function's tasks each in its own thread and waits for them all: spawn() each, then the
/// destructor starts them together (all registered first, so none is taken for the last one running).
class Tasks {
 public:
  void spawn(const char* name, std::function<void()> body) {
    waiters_.emplace_back(new Waiter);
    waiters_.back()->task = name;
    bodies_.push_back(std::move(body));
  }
  ~Tasks() {
    {
      std::lock_guard<std::mutex> lk(rt().m);
      for (auto& w : waiters_) rt().live.push_back(w.get());
      rt().tasks += static_cast<long long>(waiters_.size());
      if (rt().pending > 0) --rt().pending;  // a part of a split group: its tasks are in
    }
    std::vector<std::thread> threads;
    for (size_t i = 0; i < waiters_.size(); ++i)
      threads.emplace_back([w = waiters_[i].get(), &body = bodies_[i]] {
        self() = w;
        body();
        commit();
        std::lock_guard<std::mutex> lk(rt().m);
        rt().ended(*w);
      });
    for (std::thread& t : threads) t.join();
  }

 private:
  std::vector<std::unique_ptr<Waiter>> waiters_;
  std::vector<std::function<void()>> bodies_;
};

/// Runs the parts of a group split at SLR boundaries together, each a top function in a thread of its own
/// (src/parts.h), as the board runs its kernels: no state counts as a deadlock until every part's tasks
/// have started.
inline void parts(std::vector<std::function<void()>> calls) {
  {
    std::lock_guard<std::mutex> lk(rt().m);
    rt().pending += static_cast<long>(calls.size());
  }
  std::vector<std::thread> threads;
  for (auto& call : calls) threads.emplace_back(call);
  for (std::thread& t : threads) t.join();
}

}  // namespace st_dfsim
