#pragma once
// Presenting a simulation: JSON, the human summary and deadlock report, token-curve CSV, VCD and
// Chrome/Perfetto traces; and the search for the smallest depth change that breaks a deadlock.

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "sim/engine.h"
#include "sim/timeline.h"

namespace stc::sim {

/// The smallest single-FIFO depth change that lets a deadlocked network finish.
struct DepthChange {
  int fifo;
  int64_t from, to;
};

struct DepthFix {
  int fifo = -1;        ///< -1: no single FIFO of the cycle breaks it
  int64_t from = 0;
  int64_t to = 0;
  int64_t cyclesAfter = 0;  ///< with the single change, or with `together`
  /// When no single change breaks the cycle: FIFOs whose depths break it together (empty when none
  /// was found). Found by a search: every FIFO a blocked task waits to write deepened to its tokens (and
  /// again for the FULL FIFOs of any deadlock that follows), then each in turn made as shallow as it can
  /// be with the others as they are; one FIFO fewer, or one token less in any, deadlocks.
  std::vector<DepthChange> together;
};

/// Re-simulates with each FULL FIFO of the wait-for cycle deepened (binary search on its depth), and
/// returns the change adding the fewest bits; when none breaks it, the FIFOs that do together.
DepthFix findDepthFix(const Program& program, const SimResult& deadlocked);

/// The JSON object of `stc simulate --json` (DESIGN.md and the simulator issue list the fields).
nlohmann::json resultJson(const SimResult& r, const std::optional<DepthFix>& fix, double clockMhz);

/// The human summary: latency, then a line per task and per FIFO; on deadlock, the report.
void printSummary(std::ostream& out, const SimResult& r, const std::optional<DepthFix>& fix, double clockMhz);

/// Token curves as CSV rows `fifo,cycle,writes,reads` (cumulative counts after each cycle with a change).
void writeCurvesCsv(std::ostream& out, const SimResult& r);
/// FIFO occupancy (tokens) and task state (the codes above) as VCD.
void writeVcd(std::ostream& out, const SimResult& r, double clockMhz);
/// Chrome/Perfetto trace-event JSON: a track per task with busy and stalled spans, a counter per FIFO.
void writeTrace(std::ostream& out, const SimResult& r, double clockMhz);

}  // namespace stc::sim
