// stc conform's checker (sim/conform.h) on hand-written networks and traces: a trace that follows the
// network passes; one field changed in the network (a trip count, a port level, the order of phases, a
// width) is caught at the task, phase, iteration and port where it first shows; writes may lag their
// iteration by the latency and no more. And the recorder the C simulation uses (csim/st_trace.h) writes
// traces that read back as exactly the accesses it was given.
#include "sim/conform.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/emit/csim/st_trace.h"
#include "compiler/ir/diagnostics.h"
#include "compiler/ir/yaml_io.h"

namespace {

using stc::conform::check;
using stc::conform::parseTrace;

// P writes a every iteration of [2, 3] and b once per outer iteration (at its last inner one); Q reads
// them (b at the first inner iteration), then writes c twice; R reads c.
const char* kNetwork = R"(network: t
fifos:
  - {name: a, width: 32}
  - {name: b, width: 32}
  - {name: c, width: 64}
tasks:
  - name: P
    phases:
      - {trip: [2, 3], ii: 1, latency: 1, ports: [{fifo: a, dir: out}, {fifo: b, dir: out, level: 0}]}
  - name: Q
    phases:
      - {trip: [2, 3], ii: 1, latency: 1, ports: [{fifo: a, dir: in}, {fifo: b, dir: in, level: 0}]}
      - {trip: [2], ii: 1, latency: 1, ports: [{fifo: c, dir: out}]}
  - name: R
    phases:
      - {trip: [2], ii: 1, latency: 1, ports: [{fifo: c, dir: in}]}
)";

// The accesses the code makes: Q reads b before a in the iteration where both fire (free within one).
const char* kTrace = R"(# streamtensor stream trace 1
stream 0 32 a
stream 1 32 b
stream 2 64 c
node 0 2 0w 0w 0w 1w
node 1 2 1r 0r 0r 0r
call 0
task P n0
task Q n1 2w 2w
task R 2r 2r
end 1
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

stc::conform::Result run(const std::string& network, const std::string& trace) {
  return check(stc::parseNetwork(network, "t.yaml"), parseTrace(trace, "trace.txt"));
}

TEST(Conform, ATraceThatFollowsTheNetworkPasses) {
  auto r = run(kNetwork, kTrace);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.calls, 1);
  EXPECT_EQ(r.tasks, 3);
  EXPECT_EQ(r.accesses, 8 + 10 + 2);  // P: 6 a + 2 b; Q: 6 + 2 reads, 2 writes; R: 2
}

TEST(Conform, ATripCountChangedIsCaughtWhereItFirstShows) {
  // Q over [3, 2] reads b at [0, 0], [1, 0] and [2, 0]; the code reads b before every fourth a, so the
  // third b is missing at [2, 0], where the code reads a (its sixth, token 5).
  auto r = run(replaced(kNetwork, "{trip: [2, 3], ii: 1, latency: 1, ports: [{fifo: a, dir: in}",
                        "{trip: [3, 2], ii: 1, latency: 1, ports: [{fifo: a, dir: in}"),
               kTrace);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(
      r.message.find("task 'Q', phase 0, iteration [2, 0] of [3, 2]: the code reads 'a' (token 5), which "
                     "port 0 (level 1) does not do here; the network's reads still due here: read 'b'"),
      std::string::npos)
      << r.message;
}

TEST(Conform, APortLevelChangedIsCaughtWhereItFirstShows) {
  // b read every iteration: at [0, 1] the network reads a and b, the code a and then a again.
  auto r = run(replaced(kNetwork, "{fifo: b, dir: in, level: 0}", "{fifo: b, dir: in, level: 1}"), kTrace);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(
      r.message.find("task 'Q', phase 0, iteration [0, 1] of [2, 3]: the code reads 'a' (token 2), which "
                     "port 0 (level 1) does not do here; the network's reads still due here: read 'b'"),
      std::string::npos)
      << r.message;
}

TEST(Conform, PhasesInAnotherOrderAreCaught) {
  std::string swapped = replaced(
      kNetwork,
      "      - {trip: [2, 3], ii: 1, latency: 1, ports: [{fifo: a, dir: in}, {fifo: b, dir: in, level: 0}]}\n"
      "      - {trip: [2], ii: 1, latency: 1, ports: [{fifo: c, dir: out}]}\n",
      "      - {trip: [2], ii: 1, latency: 1, ports: [{fifo: c, dir: out}]}\n"
      "      - {trip: [2, 3], ii: 1, latency: 1, ports: [{fifo: a, dir: in}, {fifo: b, dir: in, level: "
      "0}]}\n");
  auto r = run(swapped, kTrace);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(
      r.message.find("task 'Q', phase 0 (trip [2]), after its last iteration: the code reads 'b' (token 0), "
                     "which no port of this phase does"),
      std::string::npos)
      << r.message;
}

// A triangular nest: P's run i0 writes a i0 + 1 times, then b; the walk takes each run's trip.
TEST(Conform, ATriangularNestIsWalkedRunByRun) {
  const std::string network = R"(network: t
fifos:
  - {name: a, width: 32}
  - {name: b, width: 32}
tasks:
  - name: P
    phases:
      - {trip: [3, "i0 + 1"], ii: 1, latency: 1, outer: 1, ports: [{fifo: a, dir: out}, {fifo: b, dir: out, level: 0}]}
  - name: Q
    phases:
      - {trip: [6], ii: 1, latency: 1, ports: [{fifo: a, dir: in}]}
      - {trip: [3], ii: 1, latency: 1, ports: [{fifo: b, dir: in}]}
)";
  const std::string trace = R"(# streamtensor stream trace 1
stream 0 32 a
stream 1 32 b
call 0
task P 0w 1w 0w 0w 1w 0w 0w 0w 1w
task Q 0r 0r 0r 0r 0r 0r 1r 1r 1r
end 1
)";
  auto r = run(network, trace);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.accesses, 18);
  // Code whose first run writes a three times: b, due at run 0's only iteration and a step late at most
  // (latency 1, ii 1), is overdue at run 1's second iteration, whose trip is 2.
  r = run(network, replaced(trace, "task P 0w 1w 0w 0w 1w 0w 0w 0w 1w", "task P 0w 0w 0w 1w 0w 0w 1w 0w 1w"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(
      r.message.find("task 'P', phase 0, iteration [1, 1] of [3, 2]: the network's port 1 (level 0) writes "
                     "'b' (token 0) at iteration [0, 0], and its latency (1 cycles at II 1) lets it lag 1 "
                     "iteration(s); the code writes 'a' (token 2) first"),
      std::string::npos)
      << r.message;
}

TEST(Conform, TokenWidthsMustBeTheFifos) {
  auto r = run(kNetwork, replaced(kTrace, "stream 2 64 c", "stream 2 32 c"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.message, "FIFO 'c': the code's tokens are 32 bits, the network's 64");
}

TEST(Conform, MissingAndExtraAccessesAndTasks) {
  auto r = run(kNetwork, replaced(kTrace, "task R 2r 2r", "task R 2r"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(
      r.message.find("task 'R', phase 0, iteration [1] of [2]: the code's accesses end; the network's port 0 "
                     "(level 0) reads 'c' (token 1) here"),
      std::string::npos)
      << r.message;
  r = run(kNetwork, replaced(kTrace, "task R 2r 2r", "task R 2r 2r 2r"));
  EXPECT_NE(
      r.message.find("task 'R': the code makes read 'c' after the network's last phase (2 accesses matched)"),
      std::string::npos)
      << r.message;
  r = run(kNetwork, replaced(kTrace, "task R 2r 2r", "task R 2r 2r\ntask S 2r"));
  EXPECT_EQ(r.message, "call 1 (group 0): the code runs task 'S', which the network does not have");
  r = run(kNetwork, replaced(kTrace, "stream 2 64 c", "stream 2 64 d"));
  EXPECT_EQ(r.message, "the code's stream 'd' is not a FIFO of the network");
}

// A pipeline whose write lags its read by two iterations (rope writes a row after reading the next):
// conforming when the latency covers two iterations at its II, not when it covers one.
TEST(Conform, WritesMayLagTheirIterationByTheLatencyAndNoMore) {
  const std::string net = R"(network: lag
fifos:
  - {name: x, width: 32}
  - {name: y, width: 32}
tasks:
  - name: K
    phases:
      - {trip: [4], ii: 2, latency: 4, ports: [{fifo: x, dir: in}, {fifo: y, dir: out}]}
)";
  const std::string trace =
      "# streamtensor stream trace 1\nstream 0 32 x\nstream 1 32 y\ncall 0\n"
      "task K 0r 0r 0r 1w 0r 1w 1w 1w\nend 1\n";
  auto r = run(net, trace);
  EXPECT_TRUE(r.ok) << r.message;
  r = run(replaced(net, "latency: 4", "latency: 3"), trace);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(
      r.message.find("task 'K', phase 0, iteration [2] of [4]: the network's port 1 (level 0) writes 'y' "
                     "(token 0) at iteration [0], and its latency (3 cycles at II 2) lets it lag 1 "
                     "iteration(s); the code reads 'x' (token 2) first"),
      std::string::npos)
      << r.message;
  // A write before the reads of its iteration is never allowed.
  r = run(net,
          "# streamtensor stream trace 1\nstream 0 32 x\nstream 1 32 y\ncall 0\ntask K 1w 0r 0r 0r 0r 1w 1w "
          "1w\nend 1\n");
  EXPECT_NE(
      r.message.find("iteration [0] of [4]: the code writes 'y' (token 0), which port 1 (level 0) does not "
                     "write yet"),
      std::string::npos)
      << r.message;
}

TEST(Conform, MalformedTracesNameTheirLine) {
  auto error = [](const std::string& text) {
    try {
      parseTrace(text, "trace.txt");
    } catch (const stc::UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("hello\n"),
            "trace.txt:1:1: error: not a streamtensor stream trace (written by `make trace` of an "
            "emitted project)");
  EXPECT_EQ(error("# streamtensor stream trace 1\ntask P 0w\n"),
            "trace.txt:2:1: error: field 'task': a task before the first call");
  EXPECT_EQ(error("# streamtensor stream trace 1\nstream 0 32 a\ncall 0\ntask P n3\nend 1\n"),
            "trace.txt:4:1: error: node 'n3' is used before it is defined");
  EXPECT_EQ(error("# streamtensor stream trace 1\nstream 0 x a\n"),
            "trace.txt:2:1: error: field 'bits': expected a non-negative integer, got 'x'");
  EXPECT_EQ(error("# streamtensor stream trace 1\nstream 0 32 a\ncall 0\ntask P 0q\nend 1\n"),
            "trace.txt:4:1: error: expected an access ('3r', '3w') or a node ('n7'), got '0q'");
  EXPECT_EQ(error("# streamtensor stream trace 1\ncall 0\ntask P 4r\nend 1\n"),
            "trace.txt:3:1: error: an access to stream 4, which the trace does not declare");
  // A trace cut off (no end line, or fewer calls than it says), ids that leave a gap or repeat, a node
  // that repeats nothing: refused, never a huge allocation or an endless expansion.
  EXPECT_EQ(error("# streamtensor stream trace 1\nstream 0 32 a\ncall 0\ntask P 0r\n"),
            "trace.txt:4:1: error: the trace has no 'end' line: the C simulation stopped before it wrote all "
            "of it");
  EXPECT_EQ(error("# streamtensor stream trace 1\ncall 0\nend 2\n"),
            "trace.txt:3:1: error: field 'end': expected 'end 1', the calls recorded");
  EXPECT_EQ(error("# streamtensor stream trace 1\nstream 999999999999 32 a\nend 0\n"),
            "trace.txt: error: streams must be numbered 0, 1, ...; stream 0 is missing");
  EXPECT_EQ(error("# streamtensor stream trace 1\nstream 0 32 a\nstream 0 32 b\n"),
            "trace.txt:3:1: error: field 'stream': stream 0 is declared twice");
  EXPECT_EQ(error("# streamtensor stream trace 1\nstream 0 32 a\nnode 0 0 0r\n"),
            "trace.txt:3:1: error: field 'count': a node repeats its pattern at least once");
}

// Writes of a phase without reads are held to the lag too: P writing all six a before either b lags the
// first b by three iterations where its latency allows one.
TEST(Conform, WritesWithoutReadsAreHeldToTheLag) {
  auto r = run(kNetwork, replaced(kTrace, "node 0 2 0w 0w 0w 1w", "node 0 1 0w 0w 0w 0w 0w 0w 1w 1w"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(
      r.message.find("task 'P', phase 0, iteration [1, 1] of [2, 3]: the network's port 1 (level 0) writes "
                     "'b' (token 0) at iteration [0, 2], and its latency (1 cycles at II 1) lets it lag 1 "
                     "iteration(s); the code writes 'a' (token 4) first"),
      std::string::npos)
      << r.message;
}

// Loops inside every port's level are walked as one step: a trip of 10^12 there costs nothing, and a
// trace that ends early says so.
TEST(Conform, LoopsInsideEveryPortAreOneStep) {
  const std::string net = R"(network: big
fifos:
  - {name: x, width: 32}
tasks:
  - name: K
    phases:
      - {trip: [3, 1000000000000], ii: 1, latency: 1, ports: [{fifo: x, dir: in, level: 0}]}
)";
  auto r = run(net, "# streamtensor stream trace 1\nstream 0 32 x\ncall 0\ntask K 0r 0r 0r\nend 1\n");
  EXPECT_TRUE(r.ok) << r.message;
  r = run(net, "# streamtensor stream trace 1\nstream 0 32 x\ncall 0\ntask K 0r 0r\nend 1\n");
  EXPECT_NE(
      r.message.find("task 'K', phase 0, iteration [2, *] of [3, 1000000000000]: the code's accesses end"),
      std::string::npos)
      << r.message;
  // A symbol the call does not bind is named with the task.
  r = run(replaced(net, "[3, 1000000000000]", "[n, 4]"),
          "# streamtensor stream trace 1\nstream 0 32 x\ncall 0\ntask K 0r\nend 1\n");
  EXPECT_NE(r.message.find("call 1 (group 0), task 'K': "), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("'n'"), std::string::npos) << r.message;
}

// The recorder's compressed trace reads back as exactly the accesses it was given: loop nests of
// random trips and bodies, with stray accesses between them, and the file stays small.
TEST(Conform, TheRecordersTraceExpandsToTheAccessesItWasGiven) {
  std::string path = ::testing::TempDir() + "conform_recorder.txt";
  ::setenv("ST_TRACE_FILE", path.c_str(), 1);
  std::vector<std::vector<stc::conform::Symbol>> given(3);
  std::mt19937 rng(7);
  {
    st_trace::Recorder rec;
    for (int s = 0; s < 40; ++s) rec.stream("f" + std::to_string(s), 32);
    rec.call(0, st_trace::binding("ctx", 5));
    for (size_t task = 0; task < given.size(); ++task) {
      rec.task(("T" + std::to_string(task)).c_str());
      auto access = [&](int64_t a) {
        rec.access(static_cast<int>(a / 2), a % 2 == 1);
        given[task].push_back(a);
      };
      for (int nest = 0; nest < 30; ++nest) {
        int outer = 1 + static_cast<int>(rng() % 50), inner = 1 + static_cast<int>(rng() % 40);
        int width = 1 + static_cast<int>(rng() % 35);  // over 32 stripes: up to 35 accesses a body
        std::vector<int64_t> body(static_cast<size_t>(width));
        for (auto& b : body) b = static_cast<int64_t>(rng() % 80);
        for (int i = 0; i < outer; ++i) {
          access(static_cast<int64_t>(rng() % 3 == 0 ? 1
                                                     : 0));  // once per outer iteration, now and then a write
          for (int j = 0; j < inner; ++j)
            for (int64_t b : body) access(b);
        }
        if (rng() % 2) access(static_cast<int64_t>(rng() % 80));
      }
    }
  }  // the recorder writes its file here
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  stc::conform::Trace t = parseTrace(text.str(), path);
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].bindings.at("ctx"), 5);
  ASSERT_EQ(t.calls[0].tasks.size(), given.size());
  size_t accesses = 0;
  for (size_t task = 0; task < given.size(); ++task) {
    EXPECT_EQ(t.calls[0].tasks[task].name, "T" + std::to_string(task));
    EXPECT_EQ(stc::conform::expand(t, t.calls[0].tasks[task].symbols), given[task]) << task;
    accesses += given[task].size();
  }
  EXPECT_GT(accesses, 500000u);
  EXPECT_LT(text.str().size(), accesses / 20);  // under a byte for every 20 accesses
  ::unsetenv("ST_TRACE_FILE");
}

}  // namespace
