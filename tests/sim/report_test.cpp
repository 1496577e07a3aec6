// Report formats: JSON fields, curves CSV rows, VCD and trace structure.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/report.h"
#include "sim_helpers.h"

namespace stc::testing {
namespace {

const char* kDepthOne =
    "network: n\nfifos: [{name: f, width: 32, depth: 1}]\ntasks:\n"
    "  - {name: a, phases: [{trip: [4], ii: 1, latency: 1, ports: [{fifo: f, dir: out}]}]}\n"
    "  - {name: b, phases: [{trip: [4], ii: 1, latency: 1, ports: [{fifo: f, dir: in}]}]}\n";

sim::RunConfig recordAll() {
  sim::RunConfig c;
  c.recordCurves = true;
  c.recordStalls = true;
  return c;
}

TEST(Report, JsonFields) {
  sim::SimResult r = simulateText(kDepthOne);
  nlohmann::json j = sim::resultJson(r, std::nullopt, 250);
  EXPECT_EQ(j["cycles"], 9);
  EXPECT_EQ(j["deadlock"], false);
  EXPECT_EQ(j["events"], 8);
  EXPECT_EQ(j["jumped_events"], 0);  // 8 events: too few to repeat a state
  EXPECT_TRUE(j["wall_seconds"].is_number());
  EXPECT_EQ(j["deadlock_cycle"].size(), 0u);
  EXPECT_EQ(j["tasks"][0], (nlohmann::json{{"name", "a"}, {"start", 0}, {"end", 8}, {"stall_full", 3},
                                            {"stall_empty", 0}, {"events", 4}}));
  EXPECT_EQ(j["fifos"][0], (nlohmann::json{{"name", "f"}, {"width", 32}, {"depth", 1}, {"tokens", 4},
                                            {"max_occupancy", 1}}));
}

TEST(Report, DeadlockJson) {
  std::string text = readTextFile(STC_SOURCE_DIR "/models/networks/fork_join.yaml");
  sim::SimResult r = simulateText(text);
  nlohmann::json j = sim::resultJson(r, sim::DepthFix{1, 2, 64, 134, {}}, 250);
  EXPECT_TRUE(j["cycles"].is_null());
  EXPECT_EQ(j["deadlock_cycle"][0], (nlohmann::json{{"task", "A"}, {"fifo", "a_c"}, {"kind", "write"},
                                                     {"state", "FULL"}, {"occupancy", 2}, {"depth", 2},
                                                     {"needs", "C"}}));
  EXPECT_EQ(j["deadlock_cycle"][1]["state"], "EMPTY");
  EXPECT_EQ(j["fix"]["depth_to"], 64);
  // Every blocked task, with each event of its stage group that is not ready.
  ASSERT_EQ(j["blocked"].size(), 3u);
  EXPECT_EQ(j["blocked"][1]["task"], "B");
  EXPECT_EQ(j["blocked"][2]["waits"].size(), 1u);  // C's read of a_c is ready, its read of b_c is not
  EXPECT_EQ(j["blocked"][2]["waits"][0]["fifo"], "b_c");
}

// A deadlocked run shows its blocked tasks blocked to the end, in the summary, JSON, VCD and trace. In
// fork_join (depth 2), A writes a_b and a_c at the end of each iteration (ii 1, latency 2: 2, 3, ...),
// so its third write, which needs room C never makes, would be at 4; B reads a_b at 3 and 4 (one cycle
// after each write) and would read the third token at 5; C's first stage needs b_c, which B never
// writes: it waits from 0 and never starts.
TEST(Report, DeadlockedTasksStayBlockedToTheEnd) {
  std::string text = readTextFile(STC_SOURCE_DIR "/models/networks/fork_join.yaml");
  sim::SimResult r = simulateText(text, false, {}, recordAll());
  ASSERT_TRUE(r.deadlock);
  EXPECT_EQ(r.tasks[0].blockedSince, 4);
  EXPECT_EQ(r.tasks[1].blockedSince, 5);
  EXPECT_EQ(r.tasks[2].blockedSince, 0);
  EXPECT_EQ(r.tasks[2].start, -1);
  nlohmann::json j = sim::resultJson(r, std::nullopt, 250);
  EXPECT_TRUE(j["tasks"][2]["start"].is_null());
  EXPECT_EQ(j["tasks"][2]["blocked_since"], 0);
  std::ostringstream summary;
  sim::printSummary(summary, r, std::nullopt, 250);
  EXPECT_NE(summary.str().find(
                "  C                        start          -  end          -  stall full          0  "
                "empty          0  blocked from 0 to the end\n"),
            std::string::npos)
      << summary.str();
  std::ostringstream vcd;
  sim::writeVcd(vcd, r, 250);  // 4000 ps a cycle; A is "!", B '"', C "#"
  const std::string v = vcd.str();
  EXPECT_NE(v.find("$comment task states: 0 not started, 1 running, 2 stalled on a FULL FIFO"),
            std::string::npos);
  EXPECT_NE(v.find("#0\nb001 !\nb011 #\n"), std::string::npos) << v;  // A runs, C waits on b_c
  EXPECT_NE(v.find("#16000\nb010 !\n"), std::string::npos) << v;      // A blocked FULL from 4
  EXPECT_NE(v.find("#20000\nb011 \"\n"), std::string::npos) << v;     // B blocked EMPTY from 5
  EXPECT_EQ(v.rfind("b001 !"), v.find("b001 !"));                     // A never runs again
  std::ostringstream trace;
  sim::writeTrace(trace, r, 250);
  nlohmann::json events = nlohmann::json::parse(trace.str())["traceEvents"];
  int blocked = 0;
  for (const auto& e : events)
    blocked += e.value("name", std::string()).rfind("blocked to the end (deadlock): ", 0) == 0;
  EXPECT_EQ(blocked, 3);
}

// C's stage reads u and v, both empty; B waits outside the cycle A, C.
TEST(Report, DeadlockTextListsTheWholeGroup) {
  sim::SimResult r = simulateText(kStarDeadlock);
  std::ostringstream s;
  sim::printSummary(s, r, sim::DepthFix{}, 250);
  EXPECT_NE(s.str().find("wait-for cycle:\n"
                         "  A waits to read c1: EMPTY, 0/2 tokens; it needs C\n"
                         "  C waits to read u: EMPTY, 0/2 tokens; it needs A\n"
                         "    and to read v: EMPTY, 0/2 tokens; it needs B\n"
                         "also blocked:\n"
                         "  B waits to read c2: EMPTY, 0/2 tokens; it needs C\n"
                         "fix: no single FIFO depth change breaks this cycle (no FIFO in it is full: a true deadlock)\n"),
            std::string::npos)
      << s.str();
}

TEST(Report, CurvesCsv) {
  // Writes at 1, 3, 5, 7 and reads at 2, 4, 6, 8 (see the depth-one timing test).
  sim::SimResult r = simulateText(kDepthOne, false, {}, recordAll());
  std::ostringstream s;
  sim::writeCurvesCsv(s, r);
  EXPECT_EQ(s.str(),
            "fifo,cycle,writes,reads\nf,1,1,0\nf,2,1,1\nf,3,2,1\nf,4,2,2\nf,5,3,2\nf,6,3,3\nf,7,4,3\nf,8,4,4\n");
}

TEST(Report, VcdAndTrace) {
  sim::SimResult r = simulateText(kDepthOne, true, {}, recordAll());
  std::ostringstream vcd;
  sim::writeVcd(vcd, r, 250);
  EXPECT_NE(vcd.str().find("$timescale 1ps $end"), std::string::npos);
  EXPECT_NE(vcd.str().find("$var reg 3 ! a $end"), std::string::npos);
  EXPECT_NE(vcd.str().find("$var reg 32 # f $end"), std::string::npos);
  EXPECT_NE(vcd.str().find("#4000\n"), std::string::npos);  // cycle 1 at 4 ns
  std::ostringstream trace;
  sim::writeTrace(trace, r, 250);
  nlohmann::json t = nlohmann::json::parse(trace.str());
  int stalls = 0, counters = 0;
  for (const auto& e : t["traceEvents"]) {
    stalls += e.value("cat", "") == "stall";
    counters += e["ph"] == "C";
  }
  EXPECT_EQ(stalls, 6);    // three FULL stalls of a, three EMPTY stalls of b
  EXPECT_EQ(counters, 8);  // one per cycle with a change
}

}  // namespace
}  // namespace stc::testing
