#pragma once
// Design space exploration (stc dse): every combination of a space's compiler settings compiled, its
// FIFOs sized and the sized network simulated, and the points no other point beats on cycles, on-chip
// bytes and DSPs at once (the Pareto front).

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/lower/kernel_graph.h"

namespace stc::dse {

/// The knobs swept and their values: the points are every combination, the last knob varying fastest.
struct Space {
  std::vector<SpaceKnob> knobs;

  /// The number of points.
  size_t size() const;
  /// Point i's settings, KEY=VALUE in the knobs' order.
  std::vector<std::string> settingsAt(size_t i) const;
};

/// 96 points: tile {8, 16, 32} x unroll_budget {0.2, 0.35, 0.5, 0.7} x max_stripe {0 (each weight its
/// stage's share of the channels), 8} x row_block {auto, 0 (weight-stationary)} x onchip_budget_bytes {a
/// quarter of the platform's BRAM and URAM, an eighth}.
Space defaultSpace(const Platform& platform);

/// A space file's knobs, each value checked as `stc compile --set` would take it; UserError at the
/// file's line naming the knob.
Space loadSpace(const std::string& path, const Platform& platform);

/// Each matmul's schedule as the reports print it: {op: {tk, row_block[, tn][, by_heads]}}, tn where
/// wider than the stream's tile, by_heads where written head by head (MatmulSchedule::byHeads).
nlohmann::json schedulesJson(const Schedules& schedules);

/// What one point gave.
struct Point {
  enum class Status { kOk, kRejected, kDeadlock };
  std::vector<std::string> settings;  ///< the space's KEY=VALUE for this point
  Status status = Status::kOk;
  std::string message;            ///< why it was rejected (the compiler's error)
  int sameAs = -1;                ///< an earlier point that compiled to the same network (same results)
  int64_t cycles = 0;             ///< the sized network, simulated
  int64_t cyclesUnbounded = 0;    ///< with every FIFO unbounded
  int64_t onchipBytes = 0;        ///< kernel buffers and sized FIFOs (converters' buffers among them)
  int64_t intermediateBytes = 0;  ///< the compile report's: on streams between kernels
  int64_t unfusedBytes = 0;       ///< the compile report's: the intermediate results kept whole
  int64_t intermediateBytesSized = 0;  ///< the sized design's (intermediateBytesAtDepths): what it holds
  Resources resources;            ///< with the sized depths
  bool fits = false;
  bool paced = false;  ///< sized from the paced run (sizing::SizingResult::paced)
  Schedules schedules;
  int64_t laneIi = 0;                          ///< the lane II chosen (CompileOptions::laneIi)
  std::map<std::string, int64_t> laneIiOf;     ///< and each op's own
  bool pareto = false;
  std::string network;  ///< the fingerprint of the network it compiled to (empty: rejected by the compiler)
};

struct Exploration {
  std::vector<std::string> knobs;  ///< the swept keys, in order
  std::vector<Point> points;
  std::vector<int> front;      ///< the Pareto front: point indices, fastest first
  std::vector<Network> sized;  ///< each point's sized network (empty unless ok)
  int compiledNetworks = 0;    ///< distinct networks sized (the rest were the same as an earlier point's)
};

/// Called as points are compiled and networks sized, from worker threads, one call at a time.
using Progress = std::function<void(int compiled, int sized, int points)>;

/// Compiles every point of the space (`base` settings first, the point's after, so the point wins),
/// sizes each distinct network to hold over its symbols' ranges and at `bindings` (the cycles reported),
/// and marks the front: evaluate over every point, then merge. Points run in parallel (oneTBB) and the
/// result does not depend on the number of threads.
Exploration explore(const Graph& graph, const Platform& platform, const std::vector<std::string>& base,
                    const Space& space, const Bindings& bindings, const Progress& progress = nullptr);

/// The points `indices` of the space compiled, sized and simulated, each as explore would (points of
/// one network among them sized once), in the order of `indices`: unmerged (no same_as, no front). A
/// point's result does not depend on which other points are evaluated with it, so a space evaluated in
/// pieces (stc dse --slurm) merges to explore's result. With `sized`, the sized network of each ok point
/// that is the first of its network here.
std::vector<Point> evaluate(const Graph& graph, const Platform& platform, const std::vector<std::string>& base,
                            const Space& space, const Bindings& bindings, const std::vector<size_t>& indices,
                            const Progress& progress = nullptr, std::vector<Network>* sized = nullptr);

/// A whole space's evaluated points (point i at index i) merged: a point whose network an earlier point
/// compiled to takes that point's results and says same_as, and the front is marked.
Exploration merge(const Space& space, std::vector<Point> points);

/// FNV-1a of text, 128 bits, as 32 hex digits: the same on every machine and build.
std::string fingerprint(const std::string& text);

/// A string as JSON, losslessly: itself when it is UTF-8, else {"bytes": [...]}; stringFromJson reads
/// either back (nlohmann::json exceptions for anything else).
nlohmann::json jsonString(const std::string& s);
std::string stringFromJson(const nlohmann::json& j);

/// A point in full, as a chunk of a distributed sweep stores it (pointFromJson reads it back exactly);
/// UserError naming `where` for a malformed one.
nlohmann::json pointToJson(const Point& p);
Point pointFromJson(const nlohmann::json& j, const std::string& where);

/// Indices of the points that fit the platform and that no other such point dominates (no more cycles,
/// on-chip bytes and DSPs, and fewer of one); of points equal in all three, the first. Fastest first.
std::vector<int> paretoFront(const std::vector<Point>& points);

/// The front point a criterion picks: "cycles" (the fastest), "onchip" (the fewest on-chip bytes),
/// "dsp" (the fewest DSPs), ties broken by the other two; or a point's index, which must be ok (a point
/// the same as an earlier one gives that one). UserError for an unknown criterion or a point that cannot
/// be picked.
int pickPoint(const Exploration& e, const std::string& criterion);
/// Checks a --pick criterion against a space of `points` before exploring it (UserError as pickPoint's);
/// returns the point's index, or `points` for a named criterion.
size_t checkPick(const std::string& criterion, size_t points);

/// Every point, one line each, with its knobs, status, results and whether it is on the front.
std::string pointsCsv(const Exploration& e);
/// The same as JSON, with each point's schedules and the front.
std::string pointsJson(const Exploration& e);
/// The front plotted: cycles against on-chip bytes, every fitting point grey, the front joined in blue,
/// each labelled with its index and DSPs.
std::string frontSvg(const Exploration& e, const std::string& title);

}  // namespace stc::dse
