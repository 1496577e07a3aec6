// st_trace.h for `make trace`: the C simulation built with -DST_TRACE records every stream access of every
// task, in order, and writes them at exit to build/trace.txt (or $ST_TRACE_FILE), the file `stc conform`
// checks against the network the project was emitted from. Synthesis never sees it.
//
// A task's accesses are compressed as they come: a symbol is an access (stream, read or write) or a node,
// "count x (symbols)"; a sequence that repeats a pattern of up to kMaxPeriod symbols becomes a node, and
// the nodes are compressed again, kLevels deep, so a loop nest's accesses take a few lines:
//
//   stream 0 128 x                      stream id, token bits, FIFO name
//   node 0 64 0r 1w                     node 0: 64 times (read stream 0, write stream 1)
//   call 0 ctx=16                       one call of the top function of fused group 0, its symbols
//   task mm n0 1w                       a task's accesses in that call
//   end 1                               the calls recorded: the file is whole
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace st_trace {

constexpr size_t kMaxPeriod = 128;  // a converter reads up to 32 stripes, a node one of each per token
constexpr int kLevels = 3;

// A symbol: an access (stream * 2 + 1 for a write) when >= 0, node -(n + 1) otherwise.
using Symbol = int64_t;

struct Node {
  int64_t count;
  std::vector<Symbol> pattern;
};

struct Nodes {
  std::vector<Node> all;
  std::map<std::pair<int64_t, std::vector<Symbol>>, Symbol> ids;
  Symbol intern(int64_t count, const std::vector<Symbol>& pattern) {
    if (count == 1 && pattern.size() == 1) return pattern[0];
    auto key = std::make_pair(count, pattern);
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    all.push_back({count, pattern});
    Symbol id = -static_cast<Symbol>(all.size());
    ids.emplace(std::move(key), id);
    return id;
  }
};

// One level of compression: symbols in, nodes out to the next level (or to `out` at the last one).
class Level {
 public:
  Level(Nodes& nodes, Level* next, std::vector<Symbol>* out) : nodes_(nodes), next_(next), out_(out) {}

  void push(Symbol s) {
    if (count_ > 0) {
      if (s == pattern_[pos_]) {
        if (++pos_ == pattern_.size()) ++count_, pos_ = 0;
        return;
      }
      std::vector<Symbol> partial(pattern_.begin(), pattern_.begin() + static_cast<long>(pos_));
      emit(nodes_.intern(count_, pattern_));
      count_ = 0;
      for (Symbol p : partial) literal(p);
    }
    literal(s);
  }

  void finish() {
    if (count_ > 0) {
      emit(nodes_.intern(count_, pattern_));
      for (size_t i = 0; i < pos_; ++i) emit(pattern_[i]);
      count_ = 0;
    }
    for (Symbol s : tail_) emit(s);
    tail_.clear();
    if (next_) next_->finish();
  }

 private:
  void literal(Symbol s) {
    tail_.push_back(s);
    size_t n = tail_.size();
    for (size_t period = 1; period <= kMaxPeriod && 2 * period <= n; ++period) {
      bool repeats = true;
      for (size_t i = 0; i < period && repeats; ++i)
        repeats = tail_[n - 2 * period + i] == tail_[n - period + i];
      if (!repeats) continue;
      for (size_t i = 0; i + 2 * period < n; ++i) emit(tail_[i]);
      pattern_.assign(tail_.end() - static_cast<long>(period), tail_.end());
      count_ = 2;
      pos_ = 0;
      tail_.clear();
      return;
    }
    if (n >= 4 * kMaxPeriod) {  // no period can reach back past the last 2 * kMaxPeriod any more
      for (size_t i = 0; i < 2 * kMaxPeriod; ++i) emit(tail_[i]);
      tail_.erase(tail_.begin(), tail_.begin() + 2 * kMaxPeriod);
    }
  }
  void emit(Symbol s) {
    if (next_)
      next_->push(s);
    else
      out_->push_back(s);
  }

  Nodes& nodes_;
  Level* next_;
  std::vector<Symbol>* out_;
  std::vector<Symbol> tail_;     // symbols not in a run yet
  std::vector<Symbol> pattern_;  // the run being repeated, while count_ > 0
  int64_t count_ = 0;
  size_t pos_ = 0;  // symbols of the next repetition matched so far
};

class TaskTrace {
 public:
  explicit TaskTrace(Nodes& nodes) {
    for (int k = kLevels - 1; k >= 0; --k)
      levels_[k].reset(new Level(nodes, k + 1 < kLevels ? levels_[k + 1].get() : nullptr, &out_));
  }
  void push(Symbol s) { levels_[0]->push(s); }
  const std::vector<Symbol>& finish() {
    levels_[0]->finish();
    return out_;
  }

 private:
  std::unique_ptr<Level> levels_[kLevels];
  std::vector<Symbol> out_;
};

struct Call {
  int group;
  std::string bindings;
  std::vector<std::pair<std::string, std::unique_ptr<TaskTrace>>> tasks;
};

class Recorder {
 public:
  ~Recorder() { write(); }

  void call(int group, const std::string& bindings) {
    calls_.push_back({group, bindings, {}});
    task_ = nullptr;
  }
  void task(const char* name) {
    if (calls_.empty()) call(-1, "");  // accesses outside any call: stc conform says so
    calls_.back().tasks.emplace_back(name, std::unique_ptr<TaskTrace>(new TaskTrace(nodes_)));
    task_ = calls_.back().tasks.back().second.get();
  }
  int stream(const std::string& name, size_t bits) {
    auto it = streams_.find(name);
    if (it != streams_.end()) return it->second.first;
    int id = static_cast<int>(streams_.size());
    streams_.emplace(name, std::make_pair(id, bits));
    return id;
  }
  void access(int stream, bool write) {
    if (!task_) task("outside_any_task");
    task_->push(static_cast<Symbol>(stream) * 2 + (write ? 1 : 0));
  }

 private:
  static std::string text(Symbol s) {
    return s >= 0 ? std::to_string(s / 2) + (s % 2 ? "w" : "r") : "n" + std::to_string(-s - 1);
  }
  void write() {
    const char* path = std::getenv("ST_TRACE_FILE");
    std::FILE* f = std::fopen(path ? path : "build/trace.txt", "w");
    if (!f) {
      std::fprintf(stderr, "trace: cannot write %s\n", path ? path : "build/trace.txt");
      return;
    }
    std::fprintf(f, "# streamtensor stream trace 1\n");
    for (const auto& [name, s] : streams_)
      std::fprintf(f, "stream %d %zu %s\n", s.first, s.second, name.c_str());
    std::vector<std::vector<std::pair<std::string, const std::vector<Symbol>*>>> lists;
    for (auto& c : calls_) {  // finishing may make nodes, which must be written before their use
      lists.emplace_back();
      for (auto& [name, t] : c.tasks) lists.back().emplace_back(name, &t->finish());
    }
    for (size_t n = 0; n < nodes_.all.size(); ++n) {
      std::fprintf(f, "node %zu %lld", n, static_cast<long long>(nodes_.all[n].count));
      for (Symbol s : nodes_.all[n].pattern) std::fprintf(f, " %s", text(s).c_str());
      std::fprintf(f, "\n");
    }
    for (size_t c = 0; c < calls_.size(); ++c) {
      std::fprintf(f, "call %d%s\n", calls_[c].group, calls_[c].bindings.c_str());
      for (const auto& [name, symbols] : lists[c]) {
        std::fprintf(f, "task %s", name.c_str());
        for (Symbol s : *symbols) std::fprintf(f, " %s", text(s).c_str());
        std::fprintf(f, "\n");
      }
    }
    std::fprintf(f, "end %zu\n", calls_.size());  // stc conform refuses a trace without it: a cut-off run
    if (std::ferror(f) != 0 || std::fclose(f) != 0)
      std::fprintf(stderr, "trace: cannot write %s\n", path ? path : "build/trace.txt");
  }

  Nodes nodes_;
  std::map<std::string, std::pair<int, size_t>> streams_;
  std::vector<Call> calls_;
  TaskTrace* task_ = nullptr;
};

inline Recorder& recorder() {
  static Recorder r;
  return r;
}

inline std::string binding(const char* name, long value) {
  return std::string(" ") + name + "=" + std::to_string(value);
}

}  // namespace st_trace
