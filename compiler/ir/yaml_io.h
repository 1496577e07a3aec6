#pragma once
// YAML files of the toolkit: networks, graphs (and platforms, see sim/platform.h). The only place that
// includes yaml-cpp. Errors name the file, line, column and field.

#include <optional>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/network.h"

namespace stc {

/// Reads a whole file; throws UserError naming it when it cannot be read.
std::string readTextFile(const std::string& path);

/// Parses a network file (format in DESIGN.md); `file` names it in errors. Does not run verifyNetwork.
Network parseNetwork(const std::string& text, const std::string& file);
Network loadNetwork(const std::string& path);
/// The network in the file format; parseNetwork(emitNetwork(n)) == n.
std::string emitNetwork(const Network& net);

Graph parseGraph(const std::string& text, const std::string& file);
Graph loadGraph(const std::string& path);
std::string emitGraph(const Graph& graph);

/// One op's line of a schedule file (stc compile --schedule FILE.yaml):
///   schedule:
///     fc1: {tk: 256, row_block: 2}     # row_block 0: every row (weight-stationary)
///     ln1: {lane_ii: 1}                # the II of the op's f32 lanes (lane_ii.OP)
///   lane_ii: 2                         # the layer's (lane_ii): the pin of op ""
struct SchedulePin {
  std::string op;
  std::optional<int64_t> tk, rowBlock, laneIi, tn;
  SourceLoc tkLoc, rowBlockLoc, laneIiLoc, tnLoc;
};
/// The largest reduction tile a pin may ask for or the search may choose.
inline constexpr int64_t kMaxTk = 4096;
std::vector<SchedulePin> parseSchedule(const std::string& text, const std::string& file);
std::vector<SchedulePin> loadSchedule(const std::string& path);
std::string emitSchedule(const std::vector<SchedulePin>& pins);

/// One knob of a design space file (stc dse --space FILE.yaml), its values as `--set KEY=VALUE` takes
/// them; the space is every combination of the knobs' values:
///   space:
///     tile: [8, 16, 32]
///     row_block: [auto, 0]
struct SpaceKnob {
  std::string key;
  std::vector<std::string> values;
  std::vector<SourceLoc> valueLocs;
};
std::vector<SpaceKnob> parseSpace(const std::string& text, const std::string& file);

enum class FileKind { kNetwork, kGraph, kPlatform, kModel, kUnknown };
/// What a YAML file holds, from its top-level key (network:, graph:, platform:, model:).
FileKind detectFileKind(const std::string& text, const std::string& file);

}  // namespace stc
