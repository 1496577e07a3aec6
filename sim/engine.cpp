// The event engine (DESIGN.md timing semantics, revision 2). A task's next stage group is the set of its
// ports whose next event has the smallest local cycle (in group order: writes first, then reads, each in
// port order). The group fires whole at
//   T = max(local + offset, max ready over the group), offset = T(prev) - local(prev)
// once every event's ready time is known; nothing is consumed before. A stall of T - (local + offset)
// cycles is charged to the access ready last (FULL for a write, EMPTY for a read; the first in group order
// among equals); a wait before a task's first event is not a stall but its start. When the data an access
// depends on has not been computed yet, the task blocks on it and the other side wakes it; it then checks
// the whole group again. Maximum occupancy is found by merging each FIFO's write and read times in time
// order as soon as the order of the two heads is certain (writes first at equal cycles).
#include "sim/engine.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace stc::sim {

namespace {
// Periodic jumps (see below).
constexpr int64_t kMaxMarkRuns = int64_t{1} << 16;  // queued runs a mark keeps in all, ...
constexpr int64_t kMinMarkQueueRuns = 256;          // ... but at least these of each queue
constexpr int64_t kMarkCost = 8;
constexpr int64_t kMaxBackoff = 16;
constexpr int64_t kMaxPatience = int64_t{1} << 24;  // runs of other tasks an anchor may wait
// Words all marks may take together (a word: a vector or a run).
constexpr size_t kMarkBudget = size_t{1} << 20;
constexpr size_t kMaxKeys = size_t{1} << 16;  // keys of states seen once
constexpr int64_t kKeptRuns = 4096;           // runs of reads an unbounded FIFO keeps (FifoState)
constexpr int64_t kKeptWritesDepth = 64;      // deeper FIFOs keep their last writes (KeptTimes)
constexpr int64_t kMarkQueueRuns = 4096;      // runs of a queue a mark keeps (QueueMark)
constexpr size_t kRecentMarks = 8;            // marks a partial jump may start from (Engine::jumpPart)

// A queue of `size` times as a mark keeps it.
QueueMark queueMark(const RunQueue& q, int64_t size, int64_t runs) {
  const TimeRun* end = q.begin() + std::min<std::ptrdiff_t>(q.end() - q.begin(), runs);
  return {{q.begin(), end}, size, end == q.end()};
}

uint64_t mix(uint64_t h, int64_t v) {
  h ^= static_cast<uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}
}  // namespace

Engine::Engine(const Program& program, const RunConfig& config)
    : program_(program),
      config_(config),
      tasks_(program.tasks.size()),
      fifos_(program.fifos.size()),
      kept_(program.fifos.size()),
      keptWrites_(program.fifos.size()),
      dmas_(program.tasks.size()),
      channels_(static_cast<size_t>(program.hbm.channels)) {
  const HbmTiming& hbm = program.hbm;
  for (size_t c = 0; c < channels_.size(); ++c) channels_[c].stats.channel = static_cast<int>(c);
  for (size_t t = 0; t < program.tasks.size(); ++t) {
    if (!program.tasks[t].dma) continue;
    const DmaProgram& dp = *program.tasks[t].dma;
    DmaState& d = dmas_[t];
    ChannelState& ch = channels_[static_cast<size_t>(dp.channel)];
    d.channel = dp.channel;
    d.slot = ch.ports.size();
    d.write = dp.write;
    d.bytes = dp.bytes;
    d.tokenBytes = dp.tokenBytes;
    d.bursts = (dp.bytes + hbm.burstBytes - 1) / hbm.burstBytes;
    d.outstanding = dp.write ? hbm.outstandingWrites : hbm.outstandingReads;
    bool lateral = hbm.lateral(dp.port, dp.channel);
    d.ticksPerByte = lateral ? hbm.lateralTicksPerByte : hbm.ticksPerByte;
    d.latencyTicks = (dp.write ? hbm.writeLatencyTicks : hbm.readLatencyTicks) + (lateral ? hbm.lateralLatencyTicks : 0);
    d.burstLastToken = d.releaseToken = lastTokenOfBurst(d, 0);
    ch.ports.push_back(static_cast<int>(t));
    ch.pending.emplace_back();
    ch.pendingHead.push_back(0);
  }
  for (size_t f = 0; f < fifos_.size(); ++f) {
    const FifoProgram& fp = program.fifos[f];
    FifoState& fs = fifos_[f];
    fs.depth = config_.depths.empty() ? fp.depth : config_.depths[f];
    fs.raw = readAfterWrite(fp.width, fs.depth);
    fs.tokens = fp.tokens;
    fs.writer = fp.writer;
    fs.reader = fp.reader;
    fs.record = config_.recordCurves &&
                (config_.curvesOf.empty() || (f < config_.curvesOf.size() && config_.curvesOf[f]));
    fs.keepReads = config_.periodic && fs.depth == kUnboundedDepth && !fs.record;
    fs.keepWrites =
        config_.periodic && !fs.record && (fs.depth == kUnboundedDepth || fs.depth > kKeptWritesDepth);
  }
  anchorPatience_ = 4 * static_cast<int64_t>(tasks_.size()) + 16;
  stateWords_ = tasks_.size() + fifos_.size();
  for (const ChannelState& ch : channels_) stateWords_ += ch.ports.size();
  longRun_ = kMarkCost * kMaxBackoff * static_cast<int64_t>(stateWords_);
  groupLeft_.assign(static_cast<size_t>(program.groups), 0);
  groupEnd_.assign(static_cast<size_t>(program.groups), 0);
  groupWaiters_.resize(static_cast<size_t>(program.groups));
  for (size_t t = 0; t < tasks_.size(); ++t) {
    if (program.tasks[t].phases.empty()) {
      tasks_[t].done = true;
    } else {
      enterPhase(tasks_[t], program.tasks[t]);
      ++groupLeft_[static_cast<size_t>(program.tasks[t].group)];
    }
  }
}

void Engine::enterPhase(TaskState& ts, const TaskProgram& tp) {
  ts.cursors.clear();
  for (const PortEvents& p : tp.phases[ts.phase].ports)
    if (p.count > 0) ts.cursors.push_back({p.first, p.stride, p.count, p.fifo, p.write});
}

bool Engine::mergeRuns(FifoState& f) {
  // The front runs of both queues, writes a + i * sw (i < cw) and reads b + j * sr (j < cr). A write
  // comes before every read of the run not earlier than it (writes first at equal times), so the writes up
  // to the run's last read, i < n, have all their earlier reads in the run, and the occupancy after write i
  // is mostAhead's i + 1 less those reads more than now. When no write comes before the run's last read,
  // every read of the run goes first.
  const TimeRun& w = *f.mergeW.begin();
  const TimeRun& r = *f.mergeR.begin();
  const int64_t sw = w.count > 1 ? w.stride : 0, sr = r.count > 1 ? r.stride : 0;
  const int64_t n = firstAbove(w.start, sw, r.start + (r.count - 1) * sr, w.count);
  if (n == 0) {
    f.mergedR += r.count;
    f.mergeR.popN(r.count);
    return true;
  }
  const int64_t occupancy = f.mergedW - f.mergedR + mostAhead(w.start, sw, n, r.start, sr, r.count);
  // A bounded FIFO's merge stops at the write that fills it (occupancySettled): step by step there.
  if (f.depth != kUnboundedDepth && occupancy >= f.depth) return false;
  f.maxOccupancy = std::max(f.maxOccupancy, occupancy);
  const int64_t reads = countBelow(r.start, sr, r.count, w.start + (n - 1) * sw);
  f.mergedW += n;
  f.mergedR += reads;
  f.mergeW.popN(n);
  if (reads > 0) f.mergeR.popN(reads);
  return true;
}

void Engine::mergeOccupancy(FifoState& f) {
  for (;;) {
    bool hw = !f.mergeW.empty(), hr = !f.mergeR.empty();
    // Step by step the merge keeps up with the events, a token or two a call, which the token-by-token
    // step takes faster; runs of both pile up where a jump left its periods' times to merge.
    if (hw && hr && f.mergeW.begin()->count >= 8 && f.mergeR.begin()->count >= 8 && mergeRuns(f)) continue;
    if (hw && (hr ? f.mergeW.front() <= f.mergeR.front() : f.mergedR == f.mergedW)) {
      f.mergeW.pop();
      ++f.mergedW;
      f.maxOccupancy = std::max(f.maxOccupancy, f.mergedW - f.mergedR);
      if (f.maxOccupancy == f.depth) {  // a bounded FIFO never holds more than its depth: stop merging
        f.occupancySettled = true;
        return;
      }
    } else if (hr && (hw || f.mergedW == f.tokens)) {
      f.mergeR.pop();
      ++f.mergedR;
    } else {
      return;
    }
  }
}

int64_t Engine::nextGroup(const TaskState& ts) {
  int64_t local = INT64_MAX;
  for (const Cursor& c : ts.cursors)
    if (c.remaining > 0 && c.next < local) local = c.next;
  return local;
}

bool Engine::known(const Cursor& c) const {
  const FifoState& f = fifos_[static_cast<size_t>(c.fifo)];
  if (!c.write) return f.written > f.read;  // write `read` has happened
  return !needsRoom(f) || f.read > f.written - f.depth;
}

bool Engine::run(int t) {
  if (config_.periodic) observe(t);
  TaskState& ts = tasks_[static_cast<size_t>(t)];
  struct Stepped {  // adds the run's events to stepped_ on every way out, off the per-event path
    int64_t& total;
    const int64_t& events;
    int64_t before;
    ~Stepped() { total += events - before; }
  } stepped{stepped_, ts.events, ts.events};
  const TaskProgram& tp = program_.tasks[static_cast<size_t>(t)];
  DmaState* dma = tp.dma ? &dmas_[static_cast<size_t>(t)] : nullptr;
  if (!ts.opened) {
    if (tp.group > 0) {  // a group is one kernel invocation: it starts when the previous one has ended
      size_t previous = static_cast<size_t>(tp.group - 1);
      if (groupLeft_[previous] > 0) {
        ts.waitFifo = -1;
        groupWaiters_[previous].push_back(t);
        return false;
      }
      ts.offset = groupEnd_[previous] + program_.groupGapCycles;
    }
    ts.opened = true;
    if (dma && !dma->write)  // a DMA read starts with as many bursts in flight as it may have
      for (int64_t b = 0; b < std::min(dma->bursts, dma->outstanding); ++b) issueBurst(t, ts.offset);
  }
  while (!ts.done) {
    int64_t local = nextGroup(ts);
    if (local == INT64_MAX) {  // phase finished
      if (dma && dma->write) {  // a DMA write ends with its last acknowledgement
        if (dma->servedCount < dma->bursts) {
          dma->waitingChannel = true;
          ts.waitFifo = -1;
          ts.blockedAt = ts.lastTime + 1;
          return false;
        }
        ts.lastTime = std::max(ts.lastTime, dma->lastResponseCycle);
      }
      if (++ts.phase == tp.phases.size()) {
        finishTask(t);
        break;
      }
      enterPhase(ts, tp);
      continue;
    }
    if (config_.periodic && t != anchor_ && ts.events - stepped.before > longRun_)
      takeAnchor(t);  // a task that runs long alone: its run may repeat within itself
    if (t == anchor_ && local >= nextMarkLocal_ && config_.periodic) {  // a mark within a long run
      int64_t before = ts.events;
      markPoint(t, stepped_ + ts.events - stepped.before);
      if (ts.events != before) {  // jumped: those events were not stepped
        stepped.before += ts.events - before;
        continue;
      }
    }
    int64_t earliest = local + ts.offset;  // offset is 0 before the first event: no predecessor
    // The stage group fires whole: every event's ready time must be known before any of them happens.
    // The stall goes to the event ready last (the first in group order among equals).
    int64_t ready = INT64_MIN;
    int stallFifo = -1;
    bool full = false;  // what a stall waits for: room (full) or data (empty)
    for (Cursor& c : ts.cursors) {
      if (!inGroup(c, local)) continue;
      FifoState& f = fifos_[static_cast<size_t>(c.fifo)];
      if (!known(c)) {
        ts.waitFifo = c.fifo;
        ts.blockedAt = earliest;
        (c.write ? f.writerWaiting : f.readerWaiting) = true;
        return false;
      }
      int64_t r = c.write ? (needsRoom(f) ? f.readTimes.front() + 1 : INT64_MIN) : f.writeTimes.front() + f.raw;
      if (r > ready) {
        ready = r;
        stallFifo = c.fifo;
        full = c.write;
      }
    }
    if (dma) {  // a DMA read waits for HBM data, a DMA write for a free outstanding slot
      int64_t hbmReady = dmaReady(*dma, ts.events);
      if (hbmReady < 0) {
        ts.waitFifo = -1;
        ts.blockedAt = earliest;
        dma->waitingChannel = true;
        return false;
      }
      if (hbmReady > ready) {
        ready = hbmReady;
        stallFifo = tp.phases.front().ports.front().fifo;
        full = dma->write;
      }
    }
    int64_t time = earliest;
    if (ready > earliest) {
      time = ready;
      if (ts.start >= 0) {  // a wait before the first event delays the start; later ones are stalls
        (full ? ts.stallFull : ts.stallEmpty) += ready - earliest;
        FifoState& charged = fifos_[static_cast<size_t>(stallFifo)];
        (full ? charged.stallFull : charged.stallEmpty) += ready - earliest;
        if (config_.recordStalls) ts.stalls.push_back({earliest, ready, stallFifo, full});
      }
    }
    ts.offset = time - local;
    if (ts.start < 0) ts.start = ts.offset;
    ts.lastTime = time;
    for (Cursor& c : ts.cursors) {
      if (!inGroup(c, local)) continue;
      FifoState& f = fifos_[static_cast<size_t>(c.fifo)];
      ++ts.events;
      c.next += c.stride;
      --c.remaining;
      if (c.write) {
        if (needsRoom(f)) f.readTimes.pop();
        f.writeTimes.push(time);
        ++f.written;
        if (!f.occupancySettled) f.mergeW.push(time);
        if (f.record) f.writeLog.push(time);
        if (f.keepWrites) keptWrites_[static_cast<size_t>(c.fifo)].push(time);
        if (f.readerWaiting) {
          f.readerWaiting = false;
          woken_.push_back(f.reader);
        }
      } else {
        f.writeTimes.pop();
        ++f.read;
        if (f.depth != kUnboundedDepth) f.readTimes.push(time);
        if (!f.occupancySettled) f.mergeR.push(time);
        if (f.record) f.readLog.push(time);
        if (f.keepReads) kept_[static_cast<size_t>(c.fifo)].push(time);
        if (f.writerWaiting) {
          f.writerWaiting = false;
          woken_.push_back(f.writer);
        }
      }
      if (!f.occupancySettled) mergeOccupancy(f);
    }
    if (dma) afterDmaToken(t, ts.events - 1, time);
  }
  return true;
}

void Engine::KeptTimes::push(int64_t time) {
  times.push(time);
  ++count;
  if (times.end() - times.begin() > kKeptRuns) {
    count -= times.begin()->count;
    times.popN(times.begin()->count);
  }
}

// --- Periodic jumps ----------------------------------------------------------------------------------
//
// Every event's time follows from the times it depends on, and the steps of run() depend on the state only
// through differences of times, of cursor positions and of FIFO counts, and through a few absolute
// conditions: a cursor running out, a FIFO's first `depth` writes (which need no room), a group finishing,
// and HBM (DMA) state. So when the state now equals a recorded one with every moving task moved by the
// same delta in time (its cursors by the same local distance) and everything else unchanged, the steps
// between the two repeat, delta later, for as long as none of those conditions can turn: each live cursor
// keeps at least one event, a FIFO's writes stay below its depth or past it, and what a FIFO's next periods
// take from its queues is already queued and repeats (queuePeriod). The engine then applies K repetitions
// at once: counts and statistics grow by K times their change, queued times move or the periods' are
// appended and taken, the largest-occupancy merge moves or is left the periods' times to merge later
// (mergePeriod: O(tokens) then, where a FIFO's count changes over a period), and recorded curves and stall
// spans get K shifted copies of the period's.
// A state repeats only between moments alike for the same task, so marks are taken where one task (the
// anchor) crosses a multiple of a stride of its local cycles, at the start of its runs or within one; an
// anchor that stops running gives way to whichever task runs, and a task that runs long alone takes it.
// Schedulers need not know: a task blocked before a jump is blocked after it, on the same FIFO, and run()
// rechecks a task that was woken.

void Engine::observe(int t) {
  if (t != anchor_) {
    // The anchor gives way when it has finished, or has not run for a while: a patience that doubles at
    // every change, so that a task which runs once a row or less in a steady state keeps it.
    if (anchor_ >= 0 && !tasks_[static_cast<size_t>(anchor_)].done && ++runsSinceMark_ <= anchorPatience_)
      return;
    if (anchor_ >= 0 && !tasks_[static_cast<size_t>(anchor_)].done)
      anchorPatience_ = std::min(anchorPatience_ * 2, kMaxPatience);
    takeAnchor(t);
  }
  runsSinceMark_ = 0;
  const TaskState& ts = tasks_[static_cast<size_t>(t)];
  // INT64_MAX also for a DMA write awaiting its acknowledgements.
  int64_t local = ts.done ? INT64_MAX : nextGroup(ts);
  if (local != INT64_MAX && local >= nextMarkLocal_) markPoint(t, stepped_);
}

void Engine::takeAnchor(int t) {
  anchor_ = t;
  anchorPhase_ = SIZE_MAX;  // its first mark sets the stride, and clears the marks of the one before
  nextMarkLocal_ = 0;
  runsSinceMark_ = 0;
}

void Engine::scheduleMarks(int64_t local, bool all) {
  nextMarkLocal_ = INT64_MAX;
  for (int k = 0; k < 2; ++k) {
    if (markStrides_[k] == 0) continue;
    if (all || local >= nextMarks_[k]) nextMarks_[k] = (local / markStrides_[k] + 1) * markStrides_[k];
    nextMarkLocal_ = std::min(nextMarkLocal_, nextMarks_[k]);
  }
}

void Engine::markPoint(int t, int64_t stepped) {
  // Marks are taken where the anchor's local cycle crosses a multiple of the stride, at first its phase's
  // longest port stride (one iteration of the outermost loop that repeats, which the others' strides divide):
  // a state that repeats every P local cycles of the anchor is marked at positions that repeat too (two
  // marks apart by a multiple of P). A crossing that comes before enough events were stepped since the last
  // mark (a key costs about as much as stepping one event per task and FIFO) doubles the stride instead.
  // A task that streams a DMA's tokens also crosses a second lattice, that stride times the odd factor of
  // the DMA's HBM period (hbmFactor), which no doubling of the first reaches.
  const TaskState& ts = tasks_[static_cast<size_t>(t)];
  int64_t local = nextGroup(ts);
  if (ts.phase != anchorPhase_) {
    anchorPhase_ = ts.phase;
    markStrides_[0] = 1;
    for (const Cursor& c : ts.cursors)  // a port of one event a phase has no period
      if (c.remaining > 1) markStrides_[0] = std::max(markStrides_[0], c.stride);
    int64_t factor = hbmFactor(t);
    markStrides_[1] = factor > 1 ? markStrides_[0] * factor : 0;
    nextMarks_[0] = nextMarks_[1] = 0;
    marks_.clear();
    keys_.clear();
    recent_.clear();
    markWords_ = 0;
  }
  // Each lattice keeps its own cost: the one crossed marks when enough was stepped since its last mark.
  size_t words = stateWords_;
  bool crossed[2] = {false, false}, take = false;
  for (int k = 0; k < 2; ++k) {
    if (markStrides_[k] == 0 || local < nextMarks_[k]) continue;
    if (stepped - steppedAtMark_[k] < kMarkCost * markBackoff_[k] * static_cast<int64_t>(words)) {
      if (markStrides_[k] < (int64_t{1} << 40)) markStrides_[k] *= 2;
      continue;
    }
    crossed[k] = take = true;
    steppedAtMark_[k] = stepped;
  }
  scheduleMarks(local, false);
  if (!take) return;
  // A state's whole mark is kept when first seen while the marks' budget lasts, else its key, and its mark
  // when seen again; the jump is tried when a state with a mark recurs, and a partial one from the last
  // few marks (jumpPart).
  uint64_t key = shapeKey();
  auto found = marks_.find(key);
  if ((found != marks_.end() && jumpFrom(found->second, false)) || jumpPart()) {
    marks_.clear();
    keys_.clear();
    recent_.clear();
    markWords_ = 0;
    markBackoff_[0] = markBackoff_[1] = 1;
    scheduleMarks(nextGroup(ts), true);
    return;
  }
  // A mark keeps the first runs of each queue (a period takes from their fronts), fewer of each where they
  // hold more than kMaxMarkRuns in all: weight streams read far ahead, when the FIFOs are measured unbounded,
  // queue a hundred thousand runs each.
  int64_t runs = 0, queues = 0;
  for (const FifoState& f : fifos_)
    for (const RunQueue* q : {&f.writeTimes, &f.readTimes, &f.mergeW, &f.mergeR}) {
      runs += std::min<int64_t>(q->end() - q->begin(), kMarkQueueRuns);
      queues += q->end() != q->begin();
    }
  markQueueRuns_ = runs <= kMaxMarkRuns ? kMarkQueueRuns : std::max(kMinMarkQueueRuns, kMaxMarkRuns / queues);
  words += static_cast<size_t>(std::min(runs, queues * markQueueRuns_));
  if (recent_.size() == kRecentMarks) recent_.erase(recent_.begin());
  recent_.push_back(mark());
  if (found != marks_.end()) {
    found->second = recent_.back();
    return;
  }
  bool seen = !keys_.insert(key).second;
  if (seen || markWords_ + words <= kMarkBudget) {
    if (markWords_ + words > kMarkBudget) {
      marks_.clear();
      markWords_ = 0;
    }
    markWords_ += words;
    marks_.emplace(key, recent_.back());
  }
  for (int k = 0; k < 2; ++k)  // a run that does not repeat pays less and less
    if (crossed[k]) markBackoff_[k] = seen ? 1 : std::min(markBackoff_[k] * 2, kMaxBackoff);
  if (!seen && keys_.size() > kMaxKeys) keys_.clear();
}

// A DMA's times repeat, shifted, every HBM period: the bursts after which the channel's ticks fall on a
// cycle again, and the tokens that fill them whole. Those of 64 bytes on a U55C's channel (57.5 bytes a
// cycle, 115 ticks a cycle, a burst of 4 KB in 8,192 ticks) repeat every 115 bursts, 7,360 tokens, an odd
// factor that no doubling of a stride reaches: a task that streams a DMA's tokens takes its marks at
// multiples of it.
int64_t Engine::hbmFactor(int t) const {
  int64_t factor = 1;
  auto add = [&](int dmaTask) {
    const DmaState& d = dmas_[static_cast<size_t>(dmaTask)];
    const int64_t burstTicks = program_.hbm.burstBytes * d.ticksPerByte;
    const int64_t bursts = program_.hbm.ticksPerCycle / std::gcd(program_.hbm.ticksPerCycle, burstTicks);
    const int64_t bytes = bursts * program_.hbm.burstBytes;
    int64_t tokens = bytes / std::gcd(bytes, d.tokenBytes);  // lcm(bytes, tokenBytes) / tokenBytes
    while (tokens % 2 == 0) tokens /= 2;
    if (factor <= (int64_t{1} << 20) / tokens) factor = std::lcm(factor, tokens);
  };
  const TaskProgram& tp = program_.tasks[static_cast<size_t>(t)];
  if (tp.dma) add(t);
  for (const PortEvents& p : tp.phases[tasks_[static_cast<size_t>(t)].phase].ports) {
    const FifoState& f = fifos_[static_cast<size_t>(p.fifo)];
    int other = p.write ? f.reader : f.writer;
    if (program_.tasks[static_cast<size_t>(other)].dma) add(other);
  }
  return factor;
}

int64_t Engine::portTicks(const ChannelState& ch) const {
  int64_t last = -1;
  for (int t : ch.ports) last = std::max(last, tasks_[static_cast<size_t>(t)].lastTime);
  return last * program_.hbm.ticksPerCycle;
}

uint64_t Engine::shapeKey() const {
  uint64_t h = 0;
  for (int64_t left : groupLeft_) h = mix(h, left);
  const int64_t ticksPerCycle = program_.hbm.ticksPerCycle;
  for (size_t t = 0; t < tasks_.size(); ++t) {
    const TaskState& ts = tasks_[t];
    h = mix(h, static_cast<int64_t>(ts.phase) * 8 + ts.done * 4 + ts.opened * 2 + (ts.start >= 0));
    if (ts.done) continue;
    h = mix(h, ts.waitFifo);
    int64_t local = nextGroup(ts);
    if (local != INT64_MAX) h = mix(h, local + ts.offset - ts.lastTime);
    for (const Cursor& c : ts.cursors) h = mix(h, c.remaining > 0 ? c.next - local : -1);
    if (!program_.tasks[t].dma || !ts.opened) continue;
    const DmaState& d = dmas_[t];
    h = mix(h, d.servedCount - d.issued);
    h = mix(h, d.burstLastToken - ts.events);
    h = mix(h, d.releaseToken - ts.events);
    h = mix(h, d.waitingChannel);
    if (d.servedHead < d.served.size()) h = mix(h, d.served[d.servedHead] - ts.lastTime * ticksPerCycle);
  }
  for (const FifoState& f : fifos_) {
    // Its count near empty or full, where accesses wait; between, one value (a FIFO that fills or drains
    // over many periods repeats otherwise).
    int64_t count = f.written - f.read;
    h = mix(h, count <= 4                                           ? count
               : f.depth != kUnboundedDepth && f.depth - count <= 4 ? count - f.depth - 1
                                                                    : 5);
    h = mix(h, f.writerWaiting * 2 + f.readerWaiting);  // the merge (the largest occupancy) may differ
    // The next read's data and the next write's room (below its depth a FIFO's writes wait for no read),
    // against the task's last event: all that were ready by then, as ready (a reader that drains what its
    // writer left long before repeats though the writes' times do not).
    if (!f.writeTimes.empty())
      h = mix(h, std::max<int64_t>(
                     0, f.writeTimes.front() + f.raw - tasks_[static_cast<size_t>(f.reader)].lastTime));
    if (needsRoom(f) && !f.readTimes.empty())
      h = mix(h,
              std::max<int64_t>(0, f.readTimes.front() + 1 - tasks_[static_cast<size_t>(f.writer)].lastTime));
  }
  for (const ChannelState& ch : channels_) {
    if (ch.ports.empty()) continue;
    h = mix(h, static_cast<int64_t>(ch.next));
    // Against its ports, which move with it; a channel free before their last events, as free whenever (a
    // channel idle over a period keeps its freeTick while they wait).
    h = mix(h, std::max<int64_t>(0, ch.freeTick - portTicks(ch)));
    for (size_t i = 0; i < ch.ports.size(); ++i) h = mix(h, static_cast<int64_t>(ch.pending[i].size() - ch.pendingHead[i]));
  }
  return h;
}

Engine::Mark Engine::mark() const {
  Mark m;
  m.tasks.reserve(tasks_.size());
  for (const TaskState& ts : tasks_) {
    TaskMark tm{ts.phase,        ts.done,      ts.opened,   ts.start >= 0, ts.offset,   ts.lastTime,
                ts.blockedAt,    ts.events,    ts.stallFull, ts.stallEmpty, ts.waitFifo, ts.stalls.size(),
                {}};
    if (!ts.done)
      for (const Cursor& c : ts.cursors) tm.cursors.push_back({c.next, c.remaining});
    m.tasks.push_back(std::move(tm));
  }
  m.fifos.reserve(fifos_.size());
  for (const FifoState& f : fifos_)
    m.fifos.push_back({f.written, f.read, f.mergedW, f.mergedR, f.writeLog.size(), f.readLog.size(),
                       f.stallFull, f.stallEmpty, f.writerWaiting, f.readerWaiting,
                       queueMark(f.writeTimes, f.queuedWrites(), markQueueRuns_),
                       queueMark(f.readTimes, f.queuedReads(), markQueueRuns_),
                       queueMark(f.mergeW, f.toMergeW(), markQueueRuns_),
                       queueMark(f.mergeR, f.toMergeR(), markQueueRuns_)});
  m.dmas.resize(tasks_.size());
  for (size_t t = 0; t < tasks_.size(); ++t) {
    if (!program_.tasks[t].dma) continue;
    const DmaState& d = dmas_[t];
    m.dmas[t] = {d.issued,          d.released,          d.burst,          d.burstLastToken,
                 d.releaseToken,    d.servedBase,        d.servedCount,    d.lastRequestCycle,
                 d.lastResponseCycle, d.waitingChannel,
                 {d.served.begin() + static_cast<std::ptrdiff_t>(d.servedHead), d.served.end()}};
  }
  for (const ChannelState& ch : channels_) {
    ChannelMark cm{{}, ch.freeTick, ch.stats.busyTicks, ch.stats.bytesRead, ch.stats.bytesWritten, ch.next,
                   ch.busySpanTicks.size(), ch.busySpanTicks.empty() ? -1 : ch.busySpanTicks.back().second};
    for (size_t i = 0; i < ch.ports.size(); ++i)
      cm.pending.emplace_back(ch.pending[i].begin() + static_cast<std::ptrdiff_t>(ch.pendingHead[i]), ch.pending[i].end());
    m.channels.push_back(std::move(cm));
  }
  m.groupLeft = groupLeft_;
  m.forced = forced_;
  return m;
}

// Whether a DMA is where the mark left it: no token moved, no burst issued, released or served, the same
// bursts in flight at the same ticks. It takes no part in the period (a DMA write waiting for its first
// token, a read whose reader is elsewhere) and stays so over the periods that repeat it: its FIFO's period
// (fifoPeriod) has no access either. Requests it has waiting on its channel are parked (hbmPeriod): their
// ticks do not move with the period's, and the periods stop before any request served reaches them.
bool Engine::idleDma(const DmaState& d, const DmaMark& m) {
  return d.issued == m.issued && d.released == m.released && d.burst == m.burst &&
         d.burstLastToken == m.burstLastToken && d.releaseToken == m.releaseToken &&
         d.servedBase == m.servedBase && d.servedCount == m.servedCount &&
         d.lastRequestCycle == m.lastRequestCycle && d.lastResponseCycle == m.lastResponseCycle &&
         d.waitingChannel == m.waitingChannel &&
         std::equal(d.served.begin() + static_cast<std::ptrdiff_t>(d.servedHead), d.served.end(),
                    m.served.begin(), m.served.end());
}

bool Engine::hbmPeriod(const Mark& m, int64_t delta, int64_t& repeats, bool apply,
                       const std::vector<char>& part) {
  const int64_t ticks = delta * program_.hbm.ticksPerCycle;
  auto moved = [&](int64_t now, int64_t was) { return now == was || now - was == delta; };
  std::vector<int64_t> perPeriod(tasks_.size(), 0);  // bursts per period, per moving DMA
  // A partial jump's channels: those of its DMAs, whose other ports must have finished (an idle one may
  // start while the part runs ahead); the rest are left as they are.
  std::vector<char> partChannel(channels_.size(), part.empty());
  for (size_t t = 0; t < part.size(); ++t)
    if (part[t] && program_.tasks[t].dma) partChannel[static_cast<size_t>(dmas_[t].channel)] = 1;
  for (size_t t = 0; t < part.size(); ++t)
    if (!part[t] && program_.tasks[t].dma && !tasks_[t].done &&
        partChannel[static_cast<size_t>(dmas_[t].channel)])
      return false;
  // The earliest parked request, and the latest request of a moving DMA (ticks): every request the periods
  // issue or serve is at most the latter plus a period's ticks per period.
  int64_t parkedTick = INT64_MAX, lastRequest = INT64_MIN;
  for (size_t t = 0; t < tasks_.size(); ++t) {
    const TaskState& ts = tasks_[t];
    if (!program_.tasks[t].dma || ts.done || !ts.opened) continue;
    DmaState& d = dmas_[t];
    if (!partChannel[static_cast<size_t>(d.channel)]) continue;
    const DmaMark& dm = m.dmas[t];
    int64_t tokens = ts.events - m.tasks[t].events, bursts = d.issued - dm.issued;
    if (tokens == 0 && idleDma(d, dm)) {
      if (d.issued == d.servedCount || apply) continue;  // waits on its FIFO with nothing in flight
      // Parked: its requests wait on the channel, as they did at the mark, while the channel serves earlier
      // ones of other ports. They keep waiting as long as every request served is earlier (below); or, where
      // the channel served nothing over the period and no request was forced (forceServe), for good: the
      // channel's other ports are then as still as it is (channels, below), so it serves nothing in the
      // periods that repeat this one either, and none of them forces a request.
      const ChannelState& ch = channels_[static_cast<size_t>(d.channel)];
      const std::vector<BurstRequest>& was = m.channels[static_cast<size_t>(d.channel)].pending[d.slot];
      bool still =
          ch.stats.busyTicks == m.channels[static_cast<size_t>(d.channel)].busyTicks && forced_ == m.forced;
      size_t head = ch.pendingHead[d.slot];
      if (ch.pending[d.slot].size() - head != was.size()) return false;
      for (size_t k = 0; k < was.size(); ++k) {
        const BurstRequest& now = ch.pending[d.slot][head + k];
        if (now.tick != was[k].tick || now.burst != was[k].burst || now.bytes != was[k].bytes) return false;
      }
      if (!still) parkedTick = std::min(parkedTick, ch.pending[d.slot][head].tick);
      continue;
    }
    if (apply) {
      if (!d.write) d.released += repeats * bursts;
      for (int64_t* count : {&d.issued, &d.burst, &d.servedBase, &d.servedCount}) *count += repeats * bursts;
      d.burstLastToken += repeats * tokens;
      d.releaseToken += repeats * tokens;
      if (d.lastRequestCycle != dm.lastRequestCycle) d.lastRequestCycle += repeats * delta;
      if (d.lastResponseCycle != dm.lastResponseCycle) d.lastResponseCycle += repeats * delta;
      for (size_t k = d.servedHead; k < d.served.size(); ++k) d.served[k] += repeats * ticks;
      perPeriod[t] = bursts;
      continue;
    }
    // A started DMA must stream: its burst indices all move by the same count, which covers its tokens
    // exactly (so burst boundaries fall on the same tokens), and it stays clear of its last burst, which
    // may be short.
    if (tokens <= 0 || bursts <= 0 || bursts * program_.hbm.burstBytes != tokens * d.tokenBytes) return false;
    if ((!d.write && d.released - dm.released != bursts) || d.burst - dm.burst != bursts ||
        d.servedBase - dm.servedBase != bursts || d.servedCount - dm.servedCount != bursts ||
        d.burstLastToken - dm.burstLastToken != tokens || d.releaseToken - dm.releaseToken != tokens ||
        d.waitingChannel != dm.waitingChannel || !moved(d.lastRequestCycle, dm.lastRequestCycle) ||
        !moved(d.lastResponseCycle, dm.lastResponseCycle))
      return false;
    if (d.write && dm.burst < d.outstanding) return false;  // its first bursts need no free slot
    if (d.served.size() - d.servedHead != dm.served.size()) return false;
    for (size_t k = 0; k < dm.served.size(); ++k)
      if (d.served[d.servedHead + k] - dm.served[k] != ticks) return false;
    int64_t last = std::max({d.issued, d.released, d.burst, d.servedCount});
    repeats = std::min(repeats, (d.bursts - 1 - last) / bursts - 1);
    perPeriod[t] = bursts;
    lastRequest = std::max(lastRequest, d.lastRequestCycle * program_.hbm.ticksPerCycle);
  }
  // A parked request stays so while every request served before it is earlier: none reaches it, on its
  // channel or at forceServe, which serves the earliest of all.
  if (!apply && parkedTick != INT64_MAX && lastRequest != INT64_MIN) {
    if (lastRequest >= parkedTick) return false;
    repeats = std::min(repeats, (parkedTick - 1 - lastRequest) / ticks);
  }
  for (size_t c = 0; c < channels_.size(); ++c) {
    if (!partChannel[c]) continue;
    ChannelState& ch = channels_[c];
    const ChannelMark& cm = m.channels[c];
    bool busy = ch.stats.busyTicks != cm.busyTicks;  // it served bursts in the period
    if (apply) {
      if (!busy) continue;
      for (size_t i = 0; i < ch.ports.size(); ++i) {
        int64_t bursts = perPeriod[static_cast<size_t>(ch.ports[i])];
        if (bursts == 0) continue;  // a parked port's requests stay
        for (size_t k = ch.pendingHead[i]; k < ch.pending[i].size(); ++k) {
          ch.pending[i][k].tick += repeats * ticks;
          ch.pending[i][k].burst += repeats * bursts;
        }
      }
      ch.freeTick += repeats * ticks;
      ch.stats.busyTicks += repeats * (ch.stats.busyTicks - cm.busyTicks);
      ch.stats.bytesRead += repeats * (ch.stats.bytesRead - cm.bytesRead);
      ch.stats.bytesWritten += repeats * (ch.stats.bytesWritten - cm.bytesWritten);
      if (!config_.recordCurves) continue;
      // The period's busy time: the growth of the span open at the mark, then the spans begun since;
      // replayed with the same joining of back-to-back spans as serveChannel.
      auto& spans = ch.busySpanTicks;
      std::vector<std::pair<int64_t, int64_t>> period;
      if (cm.spans > 0 && spans[cm.spans - 1].second != cm.lastSpanEnd)
        period.emplace_back(cm.lastSpanEnd, spans[cm.spans - 1].second);
      period.insert(period.end(), spans.begin() + static_cast<std::ptrdiff_t>(cm.spans), spans.end());
      for (int64_t k = 1; k <= repeats; ++k)
        for (auto [begin, end] : period) {
          if (!spans.empty() && spans.back().second == begin + k * ticks)
            spans.back().second = end + k * ticks;
          else
            spans.emplace_back(begin + k * ticks, end + k * ticks);
        }
      continue;
    }
    if (ch.next != cm.next || (busy ? ch.freeTick - cm.freeTick != ticks : ch.freeTick != cm.freeTick)) return false;
    for (size_t i = 0; i < ch.ports.size(); ++i) {
      int64_t bursts = perPeriod[static_cast<size_t>(ch.ports[i])];
      size_t queued = ch.pending[i].size() - ch.pendingHead[i];
      if (queued != cm.pending[i].size() || (!busy && bursts > 0)) return false;
      for (size_t k = 0; k < queued; ++k) {
        const BurstRequest &now = ch.pending[i][ch.pendingHead[i] + k], &was = cm.pending[i][k];
        if (now.tick - was.tick != (busy && bursts > 0 ? ticks : 0) || now.burst - was.burst != bursts ||
            now.bytes != was.bytes)
          return false;
      }
    }
  }
  return true;
}

namespace {
// How many leading times of `now` are those of `was`, each plus delta. Past the mark's head, was's times
// are now's own from `consumed` places earlier (now lost `consumed` times at its front since the mark and
// only gained at its back): now[i] against now[i - consumed] + delta.
int64_t shiftedPrefix(const QueueMark& was, const RunQueue& now, int64_t consumed, int64_t delta) {
  const TimeRun *head = was.head.data(), *headEnd = head + was.head.size();
  int64_t m = matchingPrefix(head, headEnd, 0, now.begin(), now.end(), delta);
  if (was.whole || m < consumed || consumed == 0) return m;
  return consumed + matchingPrefix(now.begin(), now.end(), 0, now.begin(), now.end(), delta, consumed);
}

// Whether `now` is the mark's queue moved whole by delta, `consumed` times lost at its front and as many
// gained at its back (so it holds as many as the mark), every time delta later.
bool movedWhole(const QueueMark& was, const RunQueue& now, int64_t consumed, int64_t delta) {
  if (was.whole)
    return shiftedEqual(was.head.data(), was.head.data() + was.head.size(), now.begin(), now.end(), delta);
  return shiftedPrefix(was, now, consumed, delta) >= was.size;
}

// The i-th time of a run list, or INT64_MAX past its end.
int64_t timeAt(const std::vector<TimeRun>& runs, int64_t i) {
  for (const TimeRun& r : runs) {
    if (i < r.count) return r.start + i * r.stride;
    i -= r.count;
  }
  return INT64_MAX;
}

// The most periods k = 1, 2, ... in a row for which q[k c - 1] + after <= limit + k delta: the times the
// k-th next period takes from q (c of them, from its front) all ready by the time that period begins.
int64_t readyPeriods(const TimeRun* q, const TimeRun* qEnd, int64_t c, int64_t after, int64_t limit,
                     int64_t delta, int64_t most) {
  int64_t first = 0;  // index of q's first time in the current run
  for (; q != qEnd; first += q->count, ++q) {
    // Periods whose last time taken, k c - 1, falls in this run: f(k) = start + (k c - 1 - first) stride +
    // after - limit - k delta, linear in k, must stay <= 0.
    int64_t lo = first / c + 1, hi = std::min(most, (first + q->count) / c);
    if (lo > hi) continue;
    int64_t slope = c * q->stride - delta;
    int64_t atLo = q->start + (lo * c - 1 - first) * q->stride + after - limit - lo * delta;
    if (atLo > 0) return lo - 1;
    if (slope > 0 && lo + (-atLo) / slope < hi) return lo + (-atLo) / slope;
    if (hi == most) return most;
  }
  return std::min(most, first / c);
}

// The periods to come whose takes from a queue are ready before they begin (readyPeriods over `now`, at
// most `most`), or 0 unless the measured period's were too: its `consumed` takes were the front of the
// queue at the mark (`was`), the last at most `limit` (the taker's last event then) once `after` is added.
int64_t readyTakes(const QueueMark& was, const RunQueue& now, int64_t consumed, int64_t after, int64_t limit,
                   int64_t delta, int64_t most) {
  int64_t took = timeAt(was.head, consumed - 1);  // the last time the period took, if the mark kept it
  if (took == INT64_MAX || took + after > limit) return 0;
  return readyPeriods(now.begin(), now.end(), consumed, after, limit, delta, most);
}

// Whether a reader that took more than its FIFO held at the mark, q0 of them queued then and c in all,
// finds every token of the next periods ready when it reads it, where the FIFO gains more than it loses (a
// writer ahead of its reader filling a deep FIFO): `gained` the period's a write times, `took` its c read
// times. Read j of period k (k >= 1) comes at took[j] + k delta (the reader repeats) and takes write
// w = j - q0 + k c, counted from the period's first, which is one of the periods' to come (w >= 0, as
// c > q0); those repeat, time(w + a) = time(w) + delta, so psi(w) = a time(w) - delta w repeats with
// period a. It is ready a cycle early at least, time(w) + raw < took[j] + k delta (a token ready just in
// time might take the stall another access was charged, ready last among equals), when psi(w) + a (raw + 1)
// - delta (a - c) k <= a took[j] - delta (j - q0) = rho(j); so for every k >= 1 when the largest psi of a
// period, plus a (raw + 1), less delta (a - c), is at most the least rho (in 128 bits: a times a cycle).
bool readsReady(const std::vector<int64_t>& gained, const std::vector<int64_t>& took, int64_t q0,
                int64_t delta, int64_t raw) {
  __extension__ typedef __int128 Wide;  // (GCC's; -pedantic asks for the marker)
  const Wide a = static_cast<Wide>(gained.size()), c = static_cast<Wide>(took.size());
  Wide high = std::numeric_limits<int64_t>::min(), low = std::numeric_limits<int64_t>::max();
  for (size_t w = 0; w < gained.size(); ++w)
    high = std::max(high, a * gained[w] - static_cast<Wide>(delta) * static_cast<Wide>(w));
  for (size_t j = 0; j < took.size(); ++j)
    low = std::min(low, a * took[j] - static_cast<Wide>(delta) * (static_cast<Wide>(j) - q0));
  return high + a * (raw + 1) - static_cast<Wide>(delta) * (a - c) <= low;
}

// A queue of times over one period: it lost `consumed` times at its front and gained `added` at its back.
// The next periods do the same, moved by delta, when the queue moved whole (as many lost as gained, every
// time delta later); or, what it gains appended, when the times they lose are already queued at its front
// and either each delta after the one lost a period before, or (data and room, whose times only bound an
// access: `after` its time, by a task whose last event at the mark was at `limit`) all ready before the
// period that takes it begins, as those this period took were. Where it took more than it held at the mark
// and gains more than it takes (a writer ahead of its reader filling a deep FIFO), `gained` is the period's
// times when the next periods' reads find their data ready (readsReady; else null), and the periods
// repeat, what they gain appended. Checks and lowers `repeats`; with apply, applies `repeats` periods.
bool queuePeriod(const QueueMark& was, RunQueue& now, int64_t consumed, int64_t added, int64_t delta,
                 int64_t after, int64_t limit, int64_t& repeats, bool apply,
                 const std::vector<int64_t>* gained = nullptr) {
  if (consumed == 0 && added == 0) return true;  // unchanged
  if (consumed == added && movedWhole(was, now, consumed, delta)) {
    if (apply) now.shift(repeats * delta);
    return true;
  }
  int64_t kept = was.size - consumed;  // now holds kept + added: the sizes come from the FIFO's counts
  if (apply) {
    if (kept < 0 && !gained) throw std::logic_error("periodic jump: a period's writes taken but not kept");
    if (kept < 0)
      now.appendPeriods(*gained, delta, repeats);
    else
      now.repeatLast(added, delta, repeats);
    now.popN(repeats * consumed);
    return true;
  }
  if (kept < 0) return gained && added > consumed;
  if (consumed == 0) return true;
  int64_t periodic = std::min(shiftedPrefix(was, now, consumed, delta), kept) / consumed;
  int64_t ready = readyTakes(was, now, consumed, after, limit, delta, kept / consumed);
  repeats = std::min(repeats, std::max(periodic, ready));
  return true;
}
}  // namespace

bool Engine::fifoPeriod(size_t i, const Mark& m, int64_t delta, int64_t& repeats, bool apply) {
  FifoState& f = fifos_[i];
  const FifoMark& fm = m.fifos[i];
  int64_t wrote = f.written - fm.written, read = f.read - fm.read;
  if (!apply && (f.writerWaiting != fm.writerWaiting || f.readerWaiting != fm.readerWaiting)) return false;
  if (!mergePeriod(f, fm, delta, repeats, apply)) return false;
  // Writes past the depth each pop the read they waited for; below it they need no room, and the period
  // repeats while they stay below. A period whose writes cross the depth does not repeat.
  bool bounded = f.depth != kUnboundedDepth;
  int64_t pops = 0;
  if (bounded && wrote > 0) {
    if (fm.written >= f.depth)
      pops = wrote;
    else if (f.written > f.depth)
      return false;
    else if (!apply)
      repeats = std::min(repeats, (f.depth - f.written) / wrote);
  }
  // The reader takes written times (ready raw cycles after), the writer past the depth read times (room one
  // cycle after).
  int64_t readerWas = m.tasks[static_cast<size_t>(f.reader)].lastTime;
  int64_t writerWas = m.tasks[static_cast<size_t>(f.writer)].lastTime;
  // A reader that took more than was queued at the mark took writes of the period: the periods repeat
  // when it waited on none and the next periods' reads find theirs ready (readsReady), the period's write
  // and read times kept.
  std::vector<int64_t> gained, taken;
  bool took = read > fm.written - fm.read && wrote > read && f.stallEmpty == fm.stallEmpty &&
              recentTimes(f, wrote, true, &gained) && recentTimes(f, read, false, &taken) &&
              readsReady(gained, taken, fm.written - fm.read, delta, f.raw);
  if (!queuePeriod(fm.writeTimes, f.writeTimes, read, wrote, delta, f.raw, readerWas, repeats, apply,
                   took ? &gained : nullptr) ||
      (bounded && !queuePeriod(fm.readTimes, f.readTimes, pops, read, delta, 1, writerWas, repeats, apply)))
    return false;
  if (apply && (wrote > 0 || read > 0)) {  // a stall is charged to a FIFO its group accesses
    f.written += repeats * wrote;
    f.read += repeats * read;
    f.writeLog.repeatLast(f.writeLog.size() - fm.logW, delta, repeats);
    f.readLog.repeatLast(f.readLog.size() - fm.logR, delta, repeats);
    f.stallFull += repeats * (f.stallFull - fm.stallFull);
    f.stallEmpty += repeats * (f.stallEmpty - fm.stallEmpty);
  }
  return true;
}

bool Engine::recentTimes(const FifoState& f, int64_t n, bool writes, std::vector<int64_t>* out) const {
  if (n == 0) return true;
  // The last of a queue or log that keeps them (pushes go to its back): each holds a FIFO's latest times.
  // (The merge's queues only while its occupancy is not settled: then they stop taking times.)
  struct Source {
    const TimeRun *begin, *end;
    int64_t size;
  };
  auto queue = [](const RunQueue& q, int64_t size) { return Source{q.begin(), q.end(), size}; };
  auto log = [](const RunLog& l) { return Source{l.runs().data(), l.runs().data() + l.runs().size(), l.size()}; };
  const size_t i = static_cast<size_t>(&f - fifos_.data());
  Source sources[4];
  size_t count = 0;
  if (writes) {
    if (!f.occupancySettled) sources[count++] = queue(f.mergeW, f.toMergeW());
    sources[count++] = queue(f.writeTimes, f.queuedWrites());
    if (f.keepWrites) sources[count++] = queue(keptWrites_[i].times, keptWrites_[i].count);
    if (f.record) sources[count++] = log(f.writeLog);
  } else {
    if (!f.occupancySettled) sources[count++] = queue(f.mergeR, f.toMergeR());
    if (f.depth != kUnboundedDepth) sources[count++] = queue(f.readTimes, f.queuedReads());
    if (f.keepReads) sources[count++] = queue(kept_[i].times, kept_[i].count);
    if (f.record) sources[count++] = log(f.readLog);
  }
  for (const Source* q = sources; q != sources + count; ++q)
    if (q->size >= n) {
      if (out) *out = lastTimes(q->begin, q->end, n);
      return true;
    }
  return false;
}

bool Engine::mergePeriod(FifoState& f, const FifoMark& fm, int64_t delta, int64_t repeats, bool apply) {
  // The merge finds the largest occupancy, which no timing depends on. When as many were written as read
  // (the count ends the period where it began), it took as many times as came and its queues moved whole,
  // the periods repeat its steps at the same counts; else the periods' times are queued for it to
  // merge when it next runs (lazily, as it does anyway), taken from a queue that still holds this period's.
  if (f.occupancySettled) return true;
  int64_t wrote = f.written - fm.written, read = f.read - fm.read;
  int64_t tookW = f.mergedW - fm.mergedW, tookR = f.mergedR - fm.mergedR;
  if (wrote == read && tookW == wrote && tookR == read && movedWhole(fm.mergeW, f.mergeW, tookW, delta) &&
      movedWhole(fm.mergeR, f.mergeR, tookR, delta)) {
    if (apply) {
      f.mergeW.shift(repeats * delta);
      f.mergeR.shift(repeats * delta);
      f.mergedW += repeats * tookW;
      f.mergedR += repeats * tookR;
    }
    return true;
  }
  if (!apply) return recentTimes(f, wrote, true, nullptr) && recentTimes(f, read, false, nullptr);
  std::vector<int64_t> w, r;
  recentTimes(f, wrote, true, &w);
  recentTimes(f, read, false, &r);
  f.mergeW.appendPeriods(w, delta, repeats);
  f.mergeR.appendPeriods(r, delta, repeats);
  return true;
}

bool Engine::jumpPart() {
  for (auto m = recent_.rbegin(); m != recent_.rend(); ++m)
    if (jumpFrom(*m, true)) return true;
  return false;
}

// A partial jump repeats the period of the part of the network that moved by the anchor's delta, where the
// rest moved otherwise (another period, or none): the part runs ahead of the rest, as a scheduler that let
// it run first would have had it, for as long as it takes nothing from the rest that is not already there
// (boundaryPeriod), and the rest is left as it is. Its DMAs must have their channels to themselves, other
// ports idle.
bool Engine::jumpFrom(const Mark& m, bool partial) {
  if (m.groupLeft != groupLeft_) return false;
  int64_t delta = 0;
  std::vector<char> part;  // partial: the tasks that moved by delta
  if (partial) {
    const auto a = static_cast<size_t>(anchor_);
    if (anchor_ < 0 || tasks_[a].done || tasks_[a].events == m.tasks[a].events) return false;
    delta = tasks_[a].lastTime - m.tasks[a].lastTime;
    part.assign(tasks_.size(), 0);
    bool others = false;  // some task moved by another delta
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].events == m.tasks[i].events) continue;
      part[i] = !tasks_[i].done && tasks_[i].lastTime - m.tasks[i].lastTime == delta;
      others = others || !part[i];
    }
    if (!others) return false;  // the whole network's jump, tried by its key
  } else {
    for (size_t i = 0; i < tasks_.size() && delta == 0; ++i)
      if (tasks_[i].events != m.tasks[i].events) delta = tasks_[i].lastTime - m.tasks[i].lastTime;
  }
  if (delta <= 0) return false;
  auto inPart = [&](size_t t) { return part.empty() || part[t]; };
  // Check, and find K: every live cursor that moves keeps at least one event after K more periods.
  int64_t repeats = INT64_MAX;
  std::vector<int64_t> local(tasks_.size(), 0);  // per moving task, its cursors' local advance per period
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!inPart(i)) continue;
    const TaskState& ts = tasks_[i];
    const TaskMark& tm = m.tasks[i];
    if (ts.done != tm.done || ts.opened != tm.opened || ts.phase != tm.phase || (ts.start >= 0) != tm.started ||
        ts.waitFifo != tm.waitFifo)
      return false;
    if (ts.done) continue;
    if (ts.events == tm.events) {  // unchanged
      if (ts.offset != tm.offset || ts.lastTime != tm.lastTime || ts.blockedAt != tm.blockedAt) return false;
      continue;
    }
    if (ts.lastTime - tm.lastTime != delta) return false;
    if (ts.blockedAt != tm.blockedAt && (tm.blockedAt < 0 || ts.blockedAt - tm.blockedAt != delta)) return false;
    int64_t advance = -1;
    for (size_t c = 0; c < ts.cursors.size(); ++c) {
      const Cursor& cur = ts.cursors[c];
      const CursorMark& cm = tm.cursors[c];
      if ((cur.remaining > 0) != (cm.remaining > 0)) return false;
      if (cur.remaining == 0) continue;
      int64_t moved = cur.next - cm.next;
      if (advance < 0) advance = moved;
      if (moved != advance || moved <= 0) return false;
      repeats = std::min(repeats, (cur.remaining - 1) / (cm.remaining - cur.remaining));
    }
    if (advance <= 0 || ts.offset - tm.offset != delta - advance) return false;
    local[i] = advance;
  }
  // A FIFO with both ends in the part (or any, jumping the whole), with one (boundaryPeriod), or none.
  enum class Ends { kBoth, kWriter, kReader, kNone };
  auto ends = [&](size_t i) {
    bool w = inPart(static_cast<size_t>(fifos_[i].writer)), r = inPart(static_cast<size_t>(fifos_[i].reader));
    return w && r ? Ends::kBoth : w ? Ends::kWriter : r ? Ends::kReader : Ends::kNone;
  };
  for (size_t i = 0; i < fifos_.size(); ++i) {
    Ends e = ends(i);
    if (e == Ends::kBoth
            ? !fifoPeriod(i, m, delta, repeats, false)
            : e != Ends::kNone && !boundaryPeriod(i, m, e == Ends::kWriter, delta, repeats, false))
      return false;
  }
  if (!hbmPeriod(m, delta, repeats, false, part) || repeats <= 0 || repeats == INT64_MAX) return false;
  // Apply the period `repeats` times.
  hbmPeriod(m, delta, repeats, true, part);
  for (size_t i = 0; i < tasks_.size(); ++i) {
    TaskState& ts = tasks_[i];
    const TaskMark& tm = m.tasks[i];
    if (!inPart(i) || ts.done || ts.events == tm.events) continue;
    for (size_t c = 0; c < ts.cursors.size(); ++c) {
      Cursor& cur = ts.cursors[c];
      if (cur.remaining == 0) continue;
      int64_t n = tm.cursors[c].remaining - cur.remaining;
      cur.next += repeats * n * cur.stride;
      cur.remaining -= repeats * n;
    }
    ts.offset += repeats * (delta - local[i]);
    ts.lastTime += repeats * delta;
    if (ts.blockedAt != tm.blockedAt) ts.blockedAt += repeats * delta;
    int64_t events = ts.events - tm.events;
    ts.events += repeats * events;
    jumpedEvents_ += repeats * events;
    ts.stallFull += repeats * (ts.stallFull - tm.stallFull);
    ts.stallEmpty += repeats * (ts.stallEmpty - tm.stallEmpty);
    size_t end = ts.stalls.size();
    for (int64_t k = 1; k <= repeats && tm.stalls < end; ++k)
      for (size_t s = tm.stalls; s < end; ++s) {
        StallSpan span = ts.stalls[s];
        span.begin += k * delta;
        span.end += k * delta;
        ts.stalls.push_back(span);
      }
  }
  for (size_t i = 0; i < fifos_.size(); ++i) {
    Ends e = ends(i);
    if (e == Ends::kNone) continue;
    if (e == Ends::kBoth)
      fifoPeriod(i, m, delta, repeats, true);
    else
      boundaryPeriod(i, m, e == Ends::kWriter, delta, repeats, true);
    kept_[i] = KeptTimes();
    keptWrites_[i] = KeptTimes();
  }
  return true;
}

bool Engine::boundaryPeriod(size_t i, const Mark& m, bool partWrites, int64_t delta, int64_t& repeats,
                            bool apply) {
  FifoState& f = fifos_[i];
  const FifoMark& fm = m.fifos[i];
  const int end = partWrites ? f.writer : f.reader;
  // A DMA's waits on HBM are charged to its stream, whichever end waits: its stream stays in its part.
  if (program_.tasks[static_cast<size_t>(end)].dma) return false;
  const int64_t was = m.tasks[static_cast<size_t>(end)].lastTime;  // the part's end, at the mark
  const bool bounded = f.depth != kUnboundedDepth;
  if (partWrites) {
    int64_t wrote = f.written - fm.written;
    if (!apply && (f.writerWaiting || fm.writerWaiting)) return false;
    if (wrote == 0) return true;
    // Below its depth a write needs no room; past it, the room of a read already queued, ready (one cycle
    // after the read) before the period that takes it, as the period's were.
    int64_t pops = 0;
    if (bounded) {
      if (fm.written >= f.depth)
        pops = wrote;
      else if (f.written > f.depth)
        return false;
      else if (!apply)
        repeats = std::min(repeats, (f.depth - f.written) / wrote);
    }
    if (!apply) {
      if (pops > 0)
        repeats = std::min(
            repeats, readyTakes(fm.readTimes, f.readTimes, pops, 1, was, delta, f.queuedReads() / pops));
      return recentTimes(f, wrote, true, nullptr);
    }
    std::vector<int64_t> gained;
    recentTimes(f, wrote, true, &gained);
    if (pops > 0) f.readTimes.popN(repeats * pops);
    f.writeTimes.appendPeriods(gained, delta, repeats);
    if (!f.occupancySettled) f.mergeW.appendPeriods(gained, delta, repeats);
    if (f.record) f.writeLog.repeatLast(f.writeLog.size() - fm.logW, delta, repeats);
    f.written += repeats * wrote;
    if (f.readerWaiting) {
      f.readerWaiting = false;
      woken_.push_back(f.reader);
    }
    return true;
  }
  int64_t read = f.read - fm.read;
  if (!apply && (f.readerWaiting || fm.readerWaiting)) return false;
  if (read == 0) return true;
  // The data of a write already queued, ready (raw cycles after the write) before the period that reads
  // it, as the period's were.
  if (!apply) {
    repeats = std::min(
        repeats, readyTakes(fm.writeTimes, f.writeTimes, read, f.raw, was, delta, f.queuedWrites() / read));
    return recentTimes(f, read, false, nullptr);
  }
  std::vector<int64_t> taken;
  recentTimes(f, read, false, &taken);
  f.writeTimes.popN(repeats * read);
  if (bounded) f.readTimes.appendPeriods(taken, delta, repeats);
  if (!f.occupancySettled) f.mergeR.appendPeriods(taken, delta, repeats);
  if (f.record) f.readLog.repeatLast(f.readLog.size() - fm.logR, delta, repeats);
  f.read += repeats * read;
  if (f.writerWaiting) {
    f.writerWaiting = false;
    woken_.push_back(f.writer);
  }
  return true;
}

// --- HBM ----------------------------------------------------------------------------------------------
//
// Order of service. A channel serves its requests in order of request time (round-robin among equal
// times), so it may serve a request only when no request still unknown could come before it: every port
// of the channel has a request queued, or has issued all it will. When no task can run, forceServe()
// serves the earliest queued request of all channels: every port that has nothing queued is then blocked
// on a FIFO, and whatever unblocks it depends on some HBM service, whose data arrives strictly after that
// earliest request; so its next request comes later still. Either way each channel serves exactly in
// request-time order, whatever order the tasks run in.

bool Engine::gated(int t) const {
  int g = program_.tasks[static_cast<size_t>(t)].group;
  return g > 0 && groupLeft_[static_cast<size_t>(g - 1)] > 0;
}

void Engine::finishTask(int t) {
  TaskState& ts = tasks_[static_cast<size_t>(t)];
  ts.done = true;
  size_t g = static_cast<size_t>(program_.tasks[static_cast<size_t>(t)].group);
  groupEnd_[g] = std::max(groupEnd_[g], ts.lastTime + 1);
  if (--groupLeft_[g] > 0) return;
  for (int w : groupWaiters_[g]) woken_.push_back(w);
  groupWaiters_[g].clear();
}

int64_t Engine::lastTokenOfBurst(const DmaState& d, int64_t burst) const {
  int64_t end = std::min((burst + 1) * program_.hbm.burstBytes, d.bytes);
  return (end - 1) / d.tokenBytes;
}

int64_t Engine::dmaReady(DmaState& d, int64_t token) const {
  while (token > d.burstLastToken) d.burstLastToken = lastTokenOfBurst(d, ++d.burst);  // once per burst
  int64_t burst = d.burst;
  int64_t need = d.write ? burst - d.outstanding : burst;  // a write needs a free slot; a read its data
  if (need < 0) return 0;
  while (d.servedBase < need && d.servedHead < d.served.size()) {  // older bursts are not needed again
    ++d.servedHead;
    ++d.servedBase;
  }
  if (need >= d.servedCount) return -1;
  int64_t tick = d.served[d.servedHead + static_cast<size_t>(need - d.servedBase)];
  if (!d.write) tick += ((token + 1) * d.tokenBytes - burst * program_.hbm.burstBytes) * d.ticksPerByte;
  return program_.hbm.cycleAtOrAfter(tick);
}

void Engine::issueBurst(int task, int64_t cycle) {
  DmaState& d = dmas_[static_cast<size_t>(task)];
  ChannelState& ch = channels_[static_cast<size_t>(d.channel)];
  d.lastRequestCycle = std::max(d.lastRequestCycle + 1, cycle);  // one request per cycle on the address channel
  int64_t bytes = std::min(program_.hbm.burstBytes, d.bytes - d.issued * program_.hbm.burstBytes);
  ch.pending[d.slot].push_back({d.lastRequestCycle * program_.hbm.ticksPerCycle, d.issued, bytes});
  ++d.issued;
  serveChannel(d.channel, false);
}

void Engine::afterDmaToken(int task, int64_t token, int64_t time) {
  DmaState& d = dmas_[static_cast<size_t>(task)];
  if (token < d.releaseToken) return;
  if (d.write) {  // a burst is written once its last token is in
    while (d.issued < d.bursts && d.releaseToken <= token) {
      issueBurst(task, time);
      d.releaseToken = lastTokenOfBurst(d, d.issued);
    }
    return;
  }
  // A read burst's slot frees once its last token has gone into the FIFO; the next burst takes it.
  while (d.released < d.bursts && d.releaseToken <= token) {
    d.releaseToken = lastTokenOfBurst(d, ++d.released);
    if (d.issued < d.bursts) issueBurst(task, time);
  }
}

void Engine::serveChannel(int channel, bool force) {
  ChannelState& ch = channels_[static_cast<size_t>(channel)];
  size_t n = ch.ports.size();
  for (;; force = false) {
    size_t best = n;
    for (size_t k = 0; k < n; ++k) {
      size_t i = (ch.next + k) % n;
      if (ch.pendingHead[i] == ch.pending[i].size()) {
        const DmaState& d = dmas_[static_cast<size_t>(ch.ports[i])];
        // Its next request may come first, unless its group has not begun: then it comes after every
        // request of the groups before, which are the only ones that can be pending.
        if (d.issued < d.bursts && !force && !gated(ch.ports[i])) return;
        continue;
      }
      if (best == n || ch.pending[i][ch.pendingHead[i]].tick < ch.pending[best][ch.pendingHead[best]].tick) best = i;
    }
    if (best == n) return;
    BurstRequest req = ch.pending[best][ch.pendingHead[best]++];
    if (ch.pendingHead[best] == ch.pending[best].size()) {
      ch.pending[best].clear();
      ch.pendingHead[best] = 0;
    }
    int task = ch.ports[best];
    DmaState& d = dmas_[static_cast<size_t>(task)];
    int64_t start = std::max(req.tick, ch.freeTick);
    int64_t busy = req.bytes * d.ticksPerByte;
    ch.freeTick = start + busy;
    ch.stats.busyTicks += busy;
    if (config_.recordCurves) {
      auto& spans = ch.busySpanTicks;
      if (!spans.empty() && spans.back().second == start)
        spans.back().second = start + busy;
      else
        spans.emplace_back(start, start + busy);
    }
    (d.write ? ch.stats.bytesWritten : ch.stats.bytesRead) += req.bytes;
    if (d.write) {
      int64_t response = start + busy + d.latencyTicks;
      d.served.push_back(response);
      d.lastResponseCycle = std::max(d.lastResponseCycle, program_.hbm.cycleAtOrAfter(response));
    } else {
      d.served.push_back(start + d.latencyTicks);
    }
    if (d.servedHead > 1024 && d.servedHead * 2 > d.served.size()) {
      d.served.erase(d.served.begin(), d.served.begin() + static_cast<std::ptrdiff_t>(d.servedHead));
      d.servedHead = 0;
    }
    ++d.servedCount;
    ch.next = (best + 1) % n;
    if (d.waitingChannel) {
      d.waitingChannel = false;
      woken_.push_back(task);
    }
  }
}

bool Engine::forceServe() {
  int bestChannel = -1;
  int64_t bestTick = INT64_MAX;
  for (size_t c = 0; c < channels_.size(); ++c) {
    const ChannelState& ch = channels_[c];
    for (size_t i = 0; i < ch.ports.size(); ++i)
      if (ch.pendingHead[i] < ch.pending[i].size() && ch.pending[i][ch.pendingHead[i]].tick < bestTick) {
        bestTick = ch.pending[i][ch.pendingHead[i]].tick;
        bestChannel = static_cast<int>(c);
      }
  }
  if (bestChannel < 0) return false;
  ++forced_;
  serveChannel(bestChannel, true);
  return true;
}

std::vector<WaitEdge> Engine::notReady(int t) const {
  const TaskState& ts = tasks_[static_cast<size_t>(t)];
  std::vector<WaitEdge> out;
  if (ts.done || ts.waitFifo < 0) return out;  // finished, or waiting for HBM or its group
  int64_t local = nextGroup(ts);
  for (const Cursor& c : ts.cursors) {
    if (!inGroup(c, local) || known(c)) continue;
    const FifoState& f = fifos_[static_cast<size_t>(c.fifo)];
    out.push_back({t, c.fifo, c.write, f.written - f.read, f.depth});
  }
  return out;
}

std::vector<WaitEdge> Engine::waitCycle(const std::vector<TaskStats>& tasks) const {
  // A blocked event waits on the other end of its FIFO, which is unfinished too (a finished end has moved
  // all its tokens) and blocked on a FIFO as well (FIFOs stay inside one group, and nothing waits for HBM
  // at the end of a run). So following from the first blocked task, at each task its first event not
  // ready, must close a cycle; it is listed from its task that comes first in the file.
  int t = -1;
  for (size_t k = 0; k < tasks.size() && t < 0; ++k)
    if (!tasks[k].waits.empty()) t = static_cast<int>(k);
  if (t < 0) return {};
  std::vector<int> seenAt(tasks_.size(), -1);
  std::vector<WaitEdge> path;
  while (t >= 0 && seenAt[static_cast<size_t>(t)] < 0 && !tasks[static_cast<size_t>(t)].waits.empty()) {
    seenAt[static_cast<size_t>(t)] = static_cast<int>(path.size());
    const WaitEdge& e = tasks[static_cast<size_t>(t)].waits.front();
    path.push_back(e);
    const FifoState& f = fifos_[static_cast<size_t>(e.fifo)];
    t = e.write ? f.reader : f.writer;
  }
  if (t < 0 || seenAt[static_cast<size_t>(t)] < 0) return {};  // cannot happen on a verified network
  std::vector<WaitEdge> cycle(path.begin() + seenAt[static_cast<size_t>(t)], path.end());
  auto first = std::min_element(cycle.begin(), cycle.end(),
                                [](const WaitEdge& a, const WaitEdge& b) { return a.task < b.task; });
  std::rotate(cycle.begin(), first, cycle.end());
  return cycle;
}

int64_t Engine::finalMaxOccupancy(const FifoState& f) const {
  if (f.occupancySettled) return f.maxOccupancy;
  RunQueue w = f.mergeW, r = f.mergeR;  // what could not be merged yet: the last few runs
  int64_t occupancy = f.mergedW - f.mergedR, best = f.maxOccupancy;
  while (!w.empty()) {
    if (!r.empty() && r.front() < w.front()) {
      r.pop();
      --occupancy;
    } else {
      w.pop();
      best = std::max(best, ++occupancy);
    }
  }
  return best;
}

SimResult Engine::result(double wallSeconds) {
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
    s.waits = notReady(static_cast<int>(t));
    if (!ts.done) r.deadlock = true;
    last = std::max(last, ts.lastTime);
    r.events += ts.events;
    r.tasks.push_back(std::move(s));
  }
  r.cycles = last + 1;
  r.jumpedEvents = jumpedEvents_;
  for (size_t t = 0; t < tasks_.size() && r.deadlock; ++t) {  // blocked to the end, shown as such
    TaskStats& s = r.tasks[t];
    if (s.finished || s.waits.empty() || tasks_[t].blockedAt < 0) continue;
    s.blockedSince = tasks_[t].blockedAt;
    if (config_.recordStalls)
      s.stalls.push_back({s.blockedSince, std::max(s.blockedSince + 1, r.cycles), s.waits.front().fifo,
                          s.waits.front().write, true});
  }
  for (size_t f = 0; f < fifos_.size(); ++f) {
    FifoState& fs = fifos_[f];
    FifoStats s;
    s.name = program_.fifos[f].name;
    s.width = program_.fifos[f].width;
    s.depth = fs.depth;
    s.tokens = fs.tokens;
    s.maxOccupancy = finalMaxOccupancy(fs);
    s.written = fs.written;
    s.read = fs.read;
    s.writer = fs.writer;
    s.reader = fs.reader;
    s.stallFull = fs.stallFull;
    s.stallEmpty = fs.stallEmpty;
    if (fs.record) {
      s.writeTimes = fs.writeLog.take();
      s.readTimes = fs.readLog.take();
    }
    r.fifos.push_back(std::move(s));
  }
  if (r.deadlock) r.deadlockCycle = waitCycle(r.tasks);
  for (const ChannelState& ch : channels_) {
    if (ch.ports.empty()) continue;
    ChannelStats s = ch.stats;
    // Over the run, or longer when the channel served bursts past its last event (a deadlocked run).
    int64_t window = std::max(r.cycles * program_.hbm.ticksPerCycle, ch.freeTick);
    s.busyFraction = window > 0 ? static_cast<double>(s.busyTicks) / static_cast<double>(window) : 0.0;
    double perCycle = static_cast<double>(program_.hbm.ticksPerCycle);
    for (const auto& [begin, end] : ch.busySpanTicks)
      s.busySpans.emplace_back(static_cast<double>(begin) / perCycle, static_cast<double>(end) / perCycle);
    r.hbm.push_back(s);
  }
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
  for (;;) {
    if (head == queue.size()) {  // nothing can run: let the HBM serve its earliest request, or stop
      if (!engine.forceServe()) break;
      for (int w : engine.woken()) {
        queued[static_cast<size_t>(w)] = 1;
        queue.push_back(w);
      }
      engine.woken().clear();
      continue;
    }
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
