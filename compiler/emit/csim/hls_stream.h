// hls_stream.h for the C simulation of an emitted streamtensor project: the part of Vitis HLS's
// hls::stream the kernels use, so that `make csim` needs only g++. Synthesis uses Vitis HLS's own header.
//
// As in Vitis HLS's C simulation, a stream is an unbounded queue (dataflow processes run one after
// another), and reading an empty stream is an error: it means the design would deadlock or a process
// reads more tokens than were written. Depths take effect in synthesis and in streamtensor's simulator,
// and in `make dfsim` (-DST_DFSIM, st_dfsim.h): tasks in threads, streams bounded, iterations gated.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>

#ifdef ST_TRACE
#include "st_trace.h"  // make trace: every access recorded for stc conform
#endif
#ifdef ST_DFSIM
#include "st_dfsim.h"  // make dfsim: the tasks concurrently at the emitted depths
#endif

namespace hls {

template <typename T, int Depth = 0>
class stream
#ifdef ST_DFSIM
    : public st_dfsim::Chan
#endif
{
 public:
  stream() = default;
  explicit stream(const char* name) : name_(name) {
#ifdef ST_DFSIM
    chanName = name;
#endif
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() {
    if (!q_.empty())
      std::fprintf(stderr, "csim: stream '%s' still holds %zu token(s) at the end of the run\n", name_.c_str(),
                   q_.size());
  }

  bool empty() const { return q_.empty(); }
  bool full() const { return false; }
  size_t size() const { return q_.size(); }
  void write(const T& v) {
#ifdef ST_DFSIM
    st_dfsim::write(*this, [this, v] { q_.push_back(v); });  // when the iteration's writes fire
#else
    trace(true);
    q_.push_back(v);
#endif
  }
  T read() {
    T v;
#ifdef ST_DFSIM
    st_dfsim::read(*this, [&](size_t k) { v = q_[k]; });  // the iteration's k-th read, taken when it fires
#else
    if (q_.empty()) {
      std::fprintf(stderr, "csim: read from empty stream '%s' (the design would stall here)\n", name_.c_str());
      std::exit(2);
    }
    trace(false);
    v = q_.front();
    q_.pop_front();
#endif
    return v;
  }
  void read(T& v) { v = read(); }
  bool read_nb(T& v) {
#ifdef ST_DFSIM
    nonBlocking();
#endif
    if (q_.empty()) return false;
    v = read();
    return true;
  }
  bool write_nb(const T& v) {
#ifdef ST_DFSIM
    nonBlocking();
#endif
    write(v);
    return true;
  }
  void operator>>(T& v) { v = read(); }
  void operator<<(const T& v) { write(v); }

#ifdef ST_DFSIM
  size_t held() const override {
    return q_.size();
  }
  void pop(size_t n) override {
    q_.erase(q_.begin(), q_.begin() + static_cast<long>(n));
  }
#endif

 private:
#ifdef ST_DFSIM
  [[noreturn]] void nonBlocking() const {
    std::fprintf(stderr, "dfsim: a non-blocking access to '%s': not modelled\n", name_.c_str());
    std::_Exit(2);
  }
#endif
  void trace(bool write) {
#ifdef ST_TRACE
    if (trace_id_ < 0) trace_id_ = st_trace::recorder().stream(name_, sizeof(T) * 8);
    st_trace::recorder().access(trace_id_, write);
#else
    (void)write;
#endif
  }

  std::string name_ = "stream";
  std::deque<T> q_;
  int trace_id_ = -1;
};

}  // namespace hls
