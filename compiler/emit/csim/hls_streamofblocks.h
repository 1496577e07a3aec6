// hls_streamofblocks.h for the C simulation of an emitted streamtensor project: hls::stream_of_blocks,
// the ping-pong buffers of converters. A writer fills a block under a write_lock, which hands the block
// to the stream when it goes out of scope; a reader reads the oldest block under a read_lock, which
// frees it when it goes out of scope. Blocks are one-dimensional arrays (typedef float blk_t[N]).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <type_traits>

#ifdef ST_TRACE
#include "st_trace.h"  // make trace: a block written at the end of its write lock, read at its read lock
#endif
#ifdef ST_DFSIM
#include "st_dfsim.h"  // make dfsim: at most Depth blocks held, from a write lock to the end of a read lock
#endif

namespace hls {

template <typename Block, int Depth = 2>
class stream_of_blocks
#ifdef ST_DFSIM
    : public st_dfsim::Chan
#endif
{
  using Elem = typename std::remove_extent<Block>::type;
  static constexpr size_t kSize = std::extent<Block>::value;

 public:
  stream_of_blocks() {
#ifdef ST_DFSIM
    capacity = Depth;
#endif
  }
  stream_of_blocks(const stream_of_blocks&) = delete;
  stream_of_blocks& operator=(const stream_of_blocks&) = delete;
  bool empty() const { return ready_.empty(); }
  bool full() const { return false; }

  Elem* acquireWrite() {
#ifdef ST_DFSIM
    st_dfsim::commit();  // the accesses before the lock fire first
    std::unique_lock<std::mutex> lk(st_dfsim::rt().m);
    st_dfsim::Waiter* me = &st_dfsim::me(*this);
    st_dfsim::rt().wait(lk, *me, true, [this, me] {
      me->on = this;
      return pending_.size() + ready_.size() < static_cast<size_t>(Depth);
    });
#endif
    pending_.emplace_back(new Elem[kSize]());
    return pending_.back().get();
  }
  void releaseWrite() {
#ifdef ST_DFSIM
    st_dfsim::commit();
    std::lock_guard<std::mutex> lk(st_dfsim::rt().m);
    ++st_dfsim::rt().accesses;
    st_dfsim::rt().changed(*this);
#endif
    trace(true);
    ready_.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  Elem* acquireRead() {
#ifdef ST_DFSIM
    st_dfsim::commit();
    std::unique_lock<std::mutex> lk(st_dfsim::rt().m);
    st_dfsim::Waiter* me = &st_dfsim::me(*this);
    st_dfsim::rt().wait(lk, *me, false, [this, me] {
      me->on = this;
      return !ready_.empty();
    });
    ++st_dfsim::rt().accesses;
#endif
    if (ready_.empty()) {
      std::fprintf(stderr, "csim: read_lock on an empty stream of blocks (the design would stall here)\n");
      std::exit(2);
    }
    trace(false);
    return ready_.front().get();
  }
  void releaseRead() {
#ifdef ST_DFSIM
    st_dfsim::commit();
    std::lock_guard<std::mutex> lk(st_dfsim::rt().m);
    st_dfsim::rt().changed(*this);
#endif
    ready_.pop_front();
  }
  /// The FIFO's name in the network, for the trace (the top function sets it under ST_TRACE).
  void trace_name(const char* name) { name_ = name; }
#ifdef ST_DFSIM
  size_t held() const override {
    return pending_.size() + ready_.size();
  }
  void pop(size_t) override {}  // a block is freed by its read lock's end
  const char* unit() const override {
    return "blocks";
  }
#endif

 private:
  void trace(bool write) {
#ifdef ST_TRACE
    if (trace_id_ < 0) trace_id_ = st_trace::recorder().stream(name_, sizeof(Block) * 8);
    st_trace::recorder().access(trace_id_, write);
#else
    (void)write;
#endif
  }

  std::string name_ = "stream_of_blocks";
  int trace_id_ = -1;
  std::deque<std::unique_ptr<Elem[]>> pending_, ready_;
};

template <typename Block>
class write_lock {
  using Elem = typename std::remove_extent<Block>::type;

 public:
  template <int Depth>
  explicit write_lock(stream_of_blocks<Block, Depth>& s)
      : data_(s.acquireWrite()), release_([](void* p) { static_cast<stream_of_blocks<Block, Depth>*>(p)->releaseWrite(); }), owner_(&s) {}
  write_lock(const write_lock&) = delete;
  write_lock& operator=(const write_lock&) = delete;
  ~write_lock() { release_(owner_); }
  operator Block&() { return *reinterpret_cast<Block*>(data_); }  // as Vitis's: indexed as the block

 private:
  Elem* data_;
  void (*release_)(void*);
  void* owner_;
};

template <typename Block>
class read_lock {
  using Elem = typename std::remove_extent<Block>::type;

 public:
  template <int Depth>
  explicit read_lock(stream_of_blocks<Block, Depth>& s)
      : data_(s.acquireRead()), release_([](void* p) { static_cast<stream_of_blocks<Block, Depth>*>(p)->releaseRead(); }), owner_(&s) {}
  read_lock(const read_lock&) = delete;
  read_lock& operator=(const read_lock&) = delete;
  ~read_lock() { release_(owner_); }
  operator Block&() { return *reinterpret_cast<Block*>(data_); }  // as Vitis's: non-const, indexed as the block

 private:
  Elem* data_;
  void (*release_)(void*);
  void* owner_;
};

}  // namespace hls
