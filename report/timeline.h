#pragma once
// What the HTML report draws over time, taken from a simulation and downsampled to a bounded size: the
// "timeline" member of `stc simulate --json --timeline` (and of size-fifos' and run's "simulation").
//
//   "timeline": {
//     "cycles": N,                      the span drawn, cycles [0, N)
//     "task_bucket": B,                 cycles per Gantt cell (1: every cycle as simulated)
//     "tasks": [{"name", "kind", "group", "layer" (null: none), "start", "end" (null: unfinished),
//                "blocked_since" (a deadlock's blocked task: when its wait began, maybe past the end),
//                "busy", "stall_full", "stall_empty", "hbm_wait",   exact cycle counts as drawn
//                "spans": [[begin, end, "busy"|"full"|"empty"|"hbm"], ...]}],
//     "groups": [{"group", "begin", "end"}],
//     "curve_step": S,                  cycles per curve point
//     "fifos": [{"name", "depth" (null: unbounded), "tokens", "max_occupancy",
//                "stall_full", "stall_empty",   cycles its writer waited on it FULL, its reader EMPTY (HBM
//                waits apart) "kernel_stall",                of those, a kernel's (not a DMA's prefetch or
//                drain) "points": [[cycle, writes, reads, occupancy_min, occupancy_max], ...]}],
//     "hbm_bucket": H,                  cycles per HBM sample
//     "hbm": [{"channel", "bytes_read", "bytes_written", "busy_fraction", "busy": [fraction, ...]}]}
//
// A Gantt cell shows the state that covers most of its cycles (ties: full, empty, hbm, then busy); idle
// cells are left out. "hbm" is a DMA waiting for HBM (a read for its data, a write for a free request slot),
// which the simulator books as a stall on its FIFO; "full" and "empty" are waits on FIFOs alone. A curve
// point stands for the cycles (cycle - S, cycle]: the cumulative writes and reads after `cycle`, and the
// least and most tokens the FIFO held in them (a write and a read in one cycle: the write counted first, as
// the simulator's maximum occupancy counts it). Cells and points with nothing new are left out, so a flat
// stretch costs nothing.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "compiler/ir/network.h"
#include "sim/result.h"

namespace stc::report {

/// How finely the timeline samples a run: at most so many Gantt cells per task (and spans in all, the
/// cells coarsened until they fit), curve points per FIFO, and HBM samples per channel.
struct Resolution {
  int64_t taskCells = 4000;
  int64_t totalSpans = 60000;
  int64_t curvePoints = 300;
  int64_t hbmSamples = 200;
};

/// The layer a task belongs to, read from its name ("layer3.fc1", "layers.3.mlp", "blocks_3.attn",
/// "blk3.q", "/h.3/attn": 3); -1 when the name says none.
int layerOf(const std::string& taskName);

/// The timeline of a run recorded with curves and stalls; `net` is the network simulated (its tasks' kinds
/// and groups, in the run's task order).
nlohmann::json timelineJson(const Network& net, const sim::SimResult& r, const Resolution& resolution = {});

}  // namespace stc::report
