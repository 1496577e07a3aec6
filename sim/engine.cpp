// The event engine. A task's next event is the earliest pending event among its ports' arithmetic
// sequences (ties: lower port index, which puts writes before reads). Its time is
//   T = max(local + offset, ready), offset = T(prev) - local(prev)
// and a stall of T - (local + offset) cycles is charged to FULL (write) or EMPTY (read); a wait before a
// task's first event is not a stall but its start. When the data
// an event depends on has not been computed yet, the task blocks and records what it waits on; the other
// side wakes it. Maximum occupancy is found by merging each FIFO's write and read times in time order
// as soon as the order of the two heads is certain (writes first at equal cycles).
#include "sim/engine.h"

#include <algorithm>
#include <chrono>

namespace stc::sim {

Engine::Engine(const Program& program, const RunConfig& config)
    : program_(program), config_(config), tasks_(program.tasks.size()), fifos_(program.fifos.size()) {
  for (size_t f = 0; f < fifos_.size(); ++f) {
    const FifoProgram& fp = program.fifos[f];
    FifoState& fs = fifos_[f];
    fs.depth = config_.depths.empty() ? fp.depth : config_.depths[f];
    fs.raw = readAfterWrite(fp.width, fs.depth);
    fs.tokens = fp.tokens;
    fs.writer = fp.writer;
    fs.reader = fp.reader;
  }
  for (size_t t = 0; t < tasks_.size(); ++t) {
    if (program.tasks[t].phases.empty()) tasks_[t].done = true;
    else enterPhase(tasks_[t], program.tasks[t]);
  }
}

void Engine::enterPhase(TaskState& ts, const TaskProgram& tp) {
  ts.cursors.clear();
  for (const PortEvents& p : tp.phases[ts.phase].ports)
    if (p.count > 0) ts.cursors.push_back({p.first, p.stride, p.count, p.fifo, p.write});
}

void Engine::mergeOccupancy(FifoState& f) {
  for (;;) {
    bool hw = !f.mergeW.empty(), hr = !f.mergeR.empty();
    if (hw && (hr ? f.mergeW.front() <= f.mergeR.front() : f.mergedR == f.mergedW)) {
      f.mergeW.pop();
      ++f.mergedW;
      f.maxOccupancy = std::max(f.maxOccupancy, f.mergedW - f.mergedR);
    } else if (hr && (hw || f.mergedW == f.tokens)) {
      f.mergeR.pop();
      ++f.mergedR;
    } else {
      return;
    }
  }
}

bool Engine::run(int t) {
  TaskState& ts = tasks_[static_cast<size_t>(t)];
  const TaskProgram& tp = program_.tasks[static_cast<size_t>(t)];
  while (!ts.done) {
    int pick = ts.pending;
    if (pick < 0) {
      int64_t best = INT64_MAX;
      for (size_t k = 0; k < ts.cursors.size(); ++k)
        if (ts.cursors[k].remaining > 0 && ts.cursors[k].next < best) {
          best = ts.cursors[k].next;
          pick = static_cast<int>(k);
        }
      if (pick < 0) {  // phase finished
        if (++ts.phase == tp.phases.size()) {
          ts.done = true;
          break;
        }
        enterPhase(ts, tp);
        continue;
      }
    }
    Cursor& c = ts.cursors[static_cast<size_t>(pick)];
    FifoState& f = fifos_[static_cast<size_t>(c.fifo)];
    int64_t earliest = c.next + ts.offset;  // offset is 0 before the first event: no predecessor
    int64_t ready;
    if (c.write) {
      int64_t k = f.written;
      if (f.depth != kUnboundedDepth && k >= f.depth) {
        if (f.read <= k - f.depth) {
          ts.pending = pick;
          ts.waitFifo = c.fifo;
          ts.waitWrite = true;
          f.writerWaiting = true;
          return false;
        }
        ready = f.readTimes.front() + 1;
        f.readTimes.pop();
      } else {
        ready = earliest;
      }
    } else {
      if (f.written <= f.read) {
        ts.pending = pick;
        ts.waitFifo = c.fifo;
        ts.waitWrite = false;
        f.readerWaiting = true;
        return false;
      }
      ready = f.writeTimes.front() + f.raw;
    }
    ts.pending = -1;
    int64_t time = earliest;
    if (ready > earliest) {
      time = ready;
      if (ts.start >= 0) {  // a wait before the first event delays the start; later ones are stalls
        (c.write ? ts.stallFull : ts.stallEmpty) += ready - earliest;
        if (config_.recordStalls) ts.stalls.push_back({earliest, ready, c.fifo, c.write});
      }
    }
    ts.offset = time - c.next;
    if (ts.start < 0) ts.start = ts.offset;
    ts.lastTime = time;
    ++ts.events;
    c.next += c.stride;
    --c.remaining;
    if (c.write) {
      f.writeTimes.push(time);
      ++f.written;
      f.mergeW.push(time);
      if (config_.recordCurves) f.writeLog.push(time);
      if (f.readerWaiting) {
        f.readerWaiting = false;
        woken_.push_back(f.reader);
      }
    } else {
      f.writeTimes.pop();
      ++f.read;
      if (f.depth != kUnboundedDepth) f.readTimes.push(time);
      f.mergeR.push(time);
      if (config_.recordCurves) f.readLog.push(time);
      if (f.writerWaiting) {
        f.writerWaiting = false;
        woken_.push_back(f.writer);
      }
    }
    mergeOccupancy(f);
  }
  return true;
}

std::vector<WaitEdge> Engine::waitCycle() const {
  // Every unfinished task waits on exactly one FIFO whose other end is unfinished too (a finished end
  // has moved all its tokens), so following the waits from any unfinished task must close a cycle.
  int startTask = -1;
  for (size_t t = 0; t < tasks_.size() && startTask < 0; ++t)
    if (!tasks_[t].done) startTask = static_cast<int>(t);
  if (startTask < 0) return {};
  std::vector<int> seenAt(tasks_.size(), -1);
  std::vector<WaitEdge> path;
  int t = startTask;
  while (t >= 0 && seenAt[static_cast<size_t>(t)] < 0 && !tasks_[static_cast<size_t>(t)].done) {
    seenAt[static_cast<size_t>(t)] = static_cast<int>(path.size());
    const TaskState& ts = tasks_[static_cast<size_t>(t)];
    const FifoState& f = fifos_[static_cast<size_t>(ts.waitFifo)];
    path.push_back({t, ts.waitFifo, ts.waitWrite, f.written - f.read, f.depth});
    t = ts.waitWrite ? f.reader : f.writer;
  }
  if (t < 0 || tasks_[static_cast<size_t>(t)].done) return path;  // cannot happen on a verified network
  return {path.begin() + seenAt[static_cast<size_t>(t)], path.end()};
}

SimResult Engine::result(double wallSeconds) const {
  SimResult r;
  r.network = program_.name;
  r.wallSeconds = wallSeconds;
  int64_t last = -1;
  for (size_t t = 0; t < tasks_.size(); ++t) {
    const TaskState& ts = tasks_[t];
    TaskStats s;
    s.name = program_.tasks[t].name;
    s.start = ts.start;
    s.end = ts.lastTime < 0 ? -1 : ts.lastTime + 1;
    s.stallFull = ts.stallFull;
    s.stallEmpty = ts.stallEmpty;
    s.events = ts.events;
    s.finished = ts.done;
    s.stalls = ts.stalls;
    if (!ts.done) r.deadlock = true;
    last = std::max(last, ts.lastTime);
    r.events += ts.events;
    r.tasks.push_back(std::move(s));
  }
  r.cycles = last + 1;
  for (size_t f = 0; f < fifos_.size(); ++f) {
    const FifoState& fs = fifos_[f];
    FifoStats s;
    s.name = program_.fifos[f].name;
    s.width = program_.fifos[f].width;
    s.depth = fs.depth;
    s.tokens = fs.tokens;
    s.maxOccupancy = fs.maxOccupancy;
    s.written = fs.written;
    s.read = fs.read;
    s.writer = fs.writer;
    s.reader = fs.reader;
    if (config_.recordCurves) {
      s.writeTimes = fs.writeLog.runs();
      s.readTimes = fs.readLog.runs();
    }
    r.fifos.push_back(std::move(s));
  }
  if (r.deadlock) r.deadlockCycle = waitCycle();
  return r;
}

SimResult runDirect(const Program& program, const RunConfig& config) {
  auto begin = std::chrono::steady_clock::now();
  Engine engine(program, config);
  int n = engine.taskCount();
  std::vector<int> queue(static_cast<size_t>(n));
  std::vector<char> queued(static_cast<size_t>(n), 1);
  for (int t = 0; t < n; ++t) queue[static_cast<size_t>(t)] = t;
  size_t head = 0;
  while (head < queue.size()) {
    int t = queue[head++];
    queued[static_cast<size_t>(t)] = 0;
    engine.run(t);
    for (int w : engine.woken()) {
      if (!queued[static_cast<size_t>(w)]) {
        queued[static_cast<size_t>(w)] = 1;
        queue.push_back(w);
      }
    }
    engine.woken().clear();
    if (head > 4096 && head * 2 > queue.size()) {
      queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(head));
      head = 0;
    }
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return engine.result(wall);
}

}  // namespace stc::sim
