#pragma once
// Conformance of emitted code to its network: the stream accesses the C simulation recorded (make trace,
// csim/st_trace.h) against the ports of the network's tasks (DESIGN.md, "Timing semantics"). Every
// iteration of every phase of a task must access exactly the ports that fire in it, in the network's
// order of iterations, phase after phase; the order of accesses within one iteration is free (they fire
// together). Token widths must be the FIFOs'.

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/network.h"

namespace stc::conform {

/// A symbol of a trace: an access (stream * 2 + 1 for a write) when >= 0, node -(n + 1) otherwise.
using Symbol = int64_t;

struct TraceStream {
  std::string name;  ///< the FIFO's
  int64_t bits = 0;  ///< of one token, as the code declares it
};

struct TraceNode {
  int64_t count = 0;
  std::vector<Symbol> pattern;
};

struct TraceTask {
  std::string name;
  std::vector<Symbol> symbols;
  int line = 0;
};

struct TraceCall {
  int group = 0;
  Bindings bindings;
  std::vector<TraceTask> tasks;
};

struct Trace {
  std::vector<TraceStream> streams;  ///< by id
  std::vector<TraceNode> nodes;
  std::vector<TraceCall> calls;
};

/// Parses the trace file's text; a malformed line is a UserError naming file and line.
Trace parseTrace(const std::string& text, const std::string& file);

struct Result {
  bool ok = false;
  std::string message;  ///< the first mismatch, or the summary
  int64_t calls = 0, tasks = 0, accesses = 0;
};

/// The accesses of `symbols`, every node expanded.
std::vector<Symbol> expand(const Trace& trace, const std::vector<Symbol>& symbols);

/// Checks every call's tasks against the network's tasks of that call's fused group.
Result check(const Network& net, const Trace& trace);

}  // namespace stc::conform
