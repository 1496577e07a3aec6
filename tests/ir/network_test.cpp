// Network files: round trips and the validation errors of DESIGN.md, checked by their text.
#include <gtest/gtest.h>

#include "compiler/ir/network.h"
#include "compiler/ir/yaml_io.h"

namespace stc {
namespace {

std::string errorOf(const std::string& text) {
  try {
    Network n = parseNetwork(text, "net.yaml");
    verifyNetwork(n).throwIfAny();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Network, ForkJoinRoundTrips) {
  Network n = loadNetwork(STC_SOURCE_DIR "/models/networks/fork_join.yaml");
  EXPECT_EQ(n.name, "fork_join");
  ASSERT_EQ(n.tasks.size(), 3u);
  EXPECT_EQ(n.tasks[1].phases.size(), 2u);
  EXPECT_TRUE(verifyNetwork(n).empty());
  Network again = parseNetwork(emitNetwork(n), "again.yaml");
  EXPECT_EQ(again, n);
  EXPECT_EQ(emitNetwork(again), emitNetwork(n));
}

TEST(Network, RoundTripKeepsLevelsTypesSymbolsAndDmas) {
  const char* text = R"(network: full
fifos:
  - {name: w, width: 512, depth: unbounded}
  - {name: x, width: 256, depth: 7}
tasks:
  - {name: load, kind: dma_read, channel: 3, port: 9, bytes: 4096, ports: [{fifo: w, dir: out}]}
  - name: k
    phases:
      - {trip: [ctx/16, 4], ii: 2, latency: 9, ports: [{fifo: w, dir: in, level: 0}, {fifo: x, dir: out, level: -1, type: "itensor<8xf32, iter_space: [1]*[1], iter_map: (d0)->(d0)>"}]}
  - name: sink
    phases:
      - {trip: [1], ports: [{fifo: x, dir: in}]}
)";
  Network n = parseNetwork(text, "full.yaml");
  Network again = parseNetwork(emitNetwork(n), "again.yaml");
  EXPECT_EQ(again, n);
  EXPECT_EQ(again.tasks[0].kind, TaskKind::kDmaRead);
  EXPECT_EQ(again.tasks[0].channel, 3);
  EXPECT_EQ(again.tasks[0].axiPort, 9);
  EXPECT_EQ(again.fifos[0].depth, kUnboundedDepth);
  EXPECT_EQ(*again.tasks[1].phases[0].ports[1].level, -1);
  EXPECT_EQ(again.tasks[1].phases[0].trip[0].str(), "ctx/16");
  EXPECT_TRUE(verifyNetwork(n, {{"ctx", 1024}}).empty()) << verifyNetwork(n, {{"ctx", 1024}}).str();
}

const char* kHeader = "network: n\nfifos:\n  - {name: f, width: 32}\ntasks:\n";

TEST(Network, UnknownFifo) {
  EXPECT_EQ(errorOf(std::string(kHeader) +
                    "  - {name: a, phases: [{trip: [4], ports: [{fifo: f, dir: out}, {fifo: g, dir: out}]}]}\n"
                    "  - {name: b, phases: [{trip: [4], ports: [{fifo: f, dir: in}]}]}\n"),
            "net.yaml:5:65: error: field 'fifo': task 'a' uses unknown FIFO 'g'");
}

TEST(Network, SecondWriter) {
  EXPECT_EQ(errorOf(std::string(kHeader) +
                    "  - {name: a, phases: [{trip: [4], ports: [{fifo: f, dir: out}]}]}\n"
                    "  - {name: b, phases: [{trip: [4], ports: [{fifo: f, dir: out}]}]}\n"
                    "  - {name: c, phases: [{trip: [4], ports: [{fifo: f, dir: in}]}]}\n"),
            "net.yaml:6:44: error: field 'fifo': FIFO 'f' has a second writer in task 'b' (first in task 'a' at "
            "net.yaml:5:44)");
}

TEST(Network, NoReader) {
  EXPECT_EQ(errorOf(std::string(kHeader) + "  - {name: a, phases: [{trip: [4], ports: [{fifo: f, dir: out}]}]}\n"),
            "net.yaml:3:5: error: FIFO 'f' has no reader (no port with dir: in)");
}

TEST(Network, UnequalTokenCounts) {
  EXPECT_EQ(errorOf(std::string(kHeader) +
                    "  - {name: a, phases: [{trip: [4, 2], ports: [{fifo: f, dir: out}]}]}\n"
                    "  - {name: b, phases: [{trip: [4, 2], ports: [{fifo: f, dir: in, level: 0}]}]}\n"),
            "net.yaml:3:5: error: FIFO 'f': writer 'a' moves 8 tokens but reader 'b' moves 4");
}

TEST(Network, SymbolicCountsAreComparedUnderSamples) {
  EXPECT_EQ(errorOf(std::string(kHeader) +
                    "  - {name: a, phases: [{trip: [ctx], ports: [{fifo: f, dir: out}]}]}\n"
                    "  - {name: b, phases: [{trip: [ctx/2, 2], ports: [{fifo: f, dir: in}]}]}\n"),
            "no error");
  EXPECT_EQ(errorOf(std::string(kHeader) +
                    "  - {name: a, phases: [{trip: [ctx], ports: [{fifo: f, dir: out}]}]}\n"
                    "  - {name: b, phases: [{trip: [256], ports: [{fifo: f, dir: in}]}]}\n"),
            "net.yaml:3:5: error: FIFO 'f': writer 'a' moves 256 tokens but reader 'b' moves 256 (with sample values "
            "for unbound symbols)");
}

TEST(Network, IiLevelAndFieldErrors) {
  EXPECT_EQ(errorOf(std::string(kHeader) +
                    "  - {name: a, phases: [{trip: [4], ii: 0, ports: [{fifo: f, dir: out}]}]}\n"
                    "  - {name: b, phases: [{trip: [4], ports: [{fifo: f, dir: in}]}]}\n"),
            "net.yaml:5:24: error: field 'ii': must be at least 1, got 0");
  EXPECT_EQ(errorOf(std::string(kHeader) +
                    "  - {name: a, phases: [{trip: [4], ports: [{fifo: f, dir: out, level: 1}]}]}\n"
                    "  - {name: b, phases: [{trip: [4], ports: [{fifo: f, dir: in}]}]}\n"),
            "net.yaml:5:44: error: field 'level': 1 is out of range for a nest of 1 loops (-1 to 0)");
  EXPECT_EQ(errorOf(std::string(kHeader) + "  - {name: a, phases: [{trip: [4], ii: fast, ports: []}]}\n"),
            "net.yaml:5:40: error: field 'ii': expected an integer, got 'fast'");
  EXPECT_EQ(
      errorOf(std::string(kHeader) + "  - {name: a, phases: [{trip: [4], iii: 2, ports: []}]}\n"),
      "net.yaml:5:36: error: field 'iii': unknown field of a phase (known: trip, ii, latency, outer, ports)");
  // The pipeline keeps at least the innermost loop: a nest of 2 has at most 1 loop outside it.
  EXPECT_EQ(
      errorOf(std::string(kHeader) +
              "  - {name: a, phases: [{trip: [4, 2], outer: 2, ports: [{fifo: f, dir: out, level: 0}]}]}\n"
              "  - {name: b, phases: [{trip: [4], ports: [{fifo: f, dir: in}]}]}\n"),
      "net.yaml:5:24: error: field 'outer': 2 loops outside the pipeline of a nest of 2 (0 to 1; the "
      "pipeline "
      "keeps the innermost loop)");
  EXPECT_EQ(errorOf(std::string(kHeader) + "  - {name: a, phases: [{trip: [4], ports: [{fifo: f, dir: sideways}]}]}\n"),
            "net.yaml:5:59: error: field 'dir': expected 'in' or 'out', got 'sideways'");
  EXPECT_EQ(errorOf("network: n\nfifos: [{name: f, width: 32, depth: 0}]\ntasks: []\n"),
            "net.yaml:2:37: error: field 'depth': expected a positive integer or 'unbounded'");
  EXPECT_EQ(errorOf("network: n\ntasks: [{name: a, phases: [{trip: [4, ctx +], ports: []}]}]\n"),
            "net.yaml:2:39: error: field 'trip': column 6 of expression 'ctx +': expected a number, a symbol or '('");
}

TEST(Network, MalformedYaml) {
  EXPECT_EQ(errorOf("network: n\nfifos: [{name: f, width: 32\n"), "net.yaml:3:1: error: malformed YAML: end of map flow not found");
}

}  // namespace
}  // namespace stc
