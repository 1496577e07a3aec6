// The HTML report's data (report/timeline.h), checked against the simulation it samples by a second,
// brute-force method; and the page (report/html.h): its sections, one SVG per chart, nothing fetched,
// one message for a result it cannot read.
#include "sim/report.h"

#include <gtest/gtest.h>

#include <map>

#include "compiler/ir/diagnostics.h"
#include "report/html.h"
#include "report/timeline.h"
#include "sim/sim_helpers.h"

namespace stc::testing {
namespace {

using nlohmann::json;

// Two producers at different paces into a consumer with a shallow and a deep input: stalls both ways.
const char* kJoin =
    "network: join\nfifos: [{name: a, width: 32, depth: 2}, {name: b, width: 32, depth: 8},"
    " {name: c, width: 32, depth: 1}]\ntasks:\n"
    "  - {name: fast, phases: [{trip: [40], ii: 1, latency: 3, ports: [{fifo: a, dir: out}]}]}\n"
    "  - {name: slow, phases: [{trip: [40], ii: 3, latency: 5, ports: [{fifo: b, dir: out}]}]}\n"
    "  - {name: join, phases: [{trip: [40], ii: 2, latency: 4, ports: [{fifo: a, dir: in}, {fifo: b, dir: "
    "in},"
    " {fifo: c, dir: out}]}]}\n"
    "  - {name: sink, phases: [{trip: [4, 10], ii: 3, latency: 1, ports: [{fifo: c, dir: in}]}]}\n";

sim::RunConfig recordAll() {
  sim::RunConfig c;
  c.recordCurves = c.recordStalls = true;
  return c;
}

std::vector<int64_t> expand(const std::vector<sim::TimeRun>& runs) {
  std::vector<int64_t> out;
  for (const sim::TimeRun& r : runs)
    for (int64_t k = 0; k < r.count; ++k) out.push_back(r.start + k * r.stride);
  return out;
}

// The curve points of report/timeline.h computed cycle by cycle from every write and read time.
json bruteForcePoints(const sim::FifoStats& f, int64_t cycles, int64_t step) {
  std::vector<int64_t> w = expand(f.writeTimes), r = expand(f.readTimes);
  std::vector<int64_t> wAt(static_cast<size_t>(cycles) + 1, 0), rAt(static_cast<size_t>(cycles) + 1, 0);
  for (int64_t t : w) ++wAt[static_cast<size_t>(t)];
  for (int64_t t : r) ++rAt[static_cast<size_t>(t)];
  json points = json::array();
  int64_t W = 0, R = 0;
  for (int64_t b = 0; b * step < cycles; ++b) {
    int64_t low = INT64_MAX, high = INT64_MIN;
    bool events = false;
    for (int64_t c = b * step; c < std::min(cycles, (b + 1) * step); ++c) {
      int64_t readBefore = R;
      W += wAt[static_cast<size_t>(c)];
      R += rAt[static_cast<size_t>(c)];
      events = events || wAt[static_cast<size_t>(c)] || rAt[static_cast<size_t>(c)];
      high = std::max(high, W - readBefore);  // the cycle's writes land before its reads leave
      low = std::min(low, W - R);
    }
    if (events) points.push_back({std::min((b + 1) * step, cycles) - 1, W, R, low, high});
  }
  return points;
}

// Cycles of each state in a task's spans.
std::map<std::string, int64_t> stateCycles(const json& task) {
  std::map<std::string, int64_t> cycles;
  for (const json& s : task["spans"])
    cycles[s[2].get<std::string>()] += s[1].get<int64_t>() - s[0].get<int64_t>();
  return cycles;
}

TEST(ReportTimeline, CurvesMatchEveryTokenCycleByCycle) {
  Network net = parseNetwork(kJoin, "join.yaml");
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, {}), recordAll());
  ASSERT_FALSE(r.deadlock);
  for (int64_t points : {int64_t{100000}, int64_t{17}, int64_t{3}}) {  // every cycle, then coarser
    report::Resolution res;
    res.curvePoints = points;
    json tl = report::timelineJson(net, r, res);
    int64_t step = tl["curve_step"];
    EXPECT_EQ(step, (r.cycles + points - 1) / points);
    for (size_t f = 0; f < r.fifos.size(); ++f) {
      const json& got = tl["fifos"][f];
      SCOPED_TRACE(r.fifos[f].name + " at step " + std::to_string(step));
      EXPECT_EQ(got["points"], bruteForcePoints(r.fifos[f], r.cycles, step));
      EXPECT_LE(got["points"].size(), static_cast<size_t>(points));
      // The extremes are kept at any step: the most tokens held is the simulator's maximum occupancy.
      int64_t most = 0;
      for (const json& p : got["points"]) most = std::max(most, p[4].get<int64_t>());
      EXPECT_EQ(most, r.fifos[f].maxOccupancy);
      EXPECT_EQ(got["points"].back()[1], r.fifos[f].tokens);
      EXPECT_EQ(got["points"].back()[2], r.fifos[f].tokens);
    }
  }
}

TEST(ReportTimeline, GanttCellsAddUpToTheTasksStatistics) {
  Network net = parseNetwork(kJoin, "join.yaml");
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, {}), recordAll());
  json tl = report::timelineJson(net, r);
  ASSERT_EQ(tl["task_bucket"], 1);  // a short run: cycle by cycle
  int64_t stalls = 0;
  for (size_t t = 0; t < r.tasks.size(); ++t) {
    const sim::TaskStats& s = r.tasks[t];
    SCOPED_TRACE(s.name);
    std::map<std::string, int64_t> c = stateCycles(tl["tasks"][t]);
    EXPECT_EQ(c["full"], s.stallFull);
    EXPECT_EQ(c["empty"], s.stallEmpty);
    EXPECT_EQ(c["busy"], s.end - s.start - s.stallFull - s.stallEmpty);
    EXPECT_EQ(tl["tasks"][t]["busy"], c["busy"]);
    EXPECT_EQ(tl["tasks"][t]["spans"].front()[0], s.start);
    EXPECT_EQ(tl["tasks"][t]["spans"].back()[1], s.end);
    stalls += s.stallFull + s.stallEmpty;
  }
  EXPECT_GT(stalls, 0);  // the network does stall, so the states are tested
  // The FIFOs' stall cycles are the tasks' by another sum.
  int64_t fifoStalls = 0;
  for (const json& f : tl["fifos"])
    fifoStalls += f["stall_full"].get<int64_t>() + f["stall_empty"].get<int64_t>();
  EXPECT_EQ(fifoStalls, stalls);
}

TEST(ReportTimeline, CoarseCellsStayWithinTheBudgetAndCoverTheRun) {
  Network net = parseNetwork(kJoin, "join.yaml");
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, {}), recordAll());
  report::Resolution res;
  res.taskCells = 10;
  res.totalSpans = 12;
  json tl = report::timelineJson(net, r, res);
  int64_t cell = tl["task_bucket"], spans = 0;
  EXPECT_GE(cell, (r.cycles + 9) / 10);
  for (const json& t : tl["tasks"]) {
    spans += static_cast<int64_t>(t["spans"].size());
    for (const json& s : t["spans"]) {
      EXPECT_EQ(s[0].get<int64_t>() % cell, 0);  // on cell boundaries
      EXPECT_LE(s[1].get<int64_t>(), r.cycles);
    }
  }
  EXPECT_LE(spans, 12);
}

TEST(ReportTimeline, DeadlockedTaskStaysStalledToTheEnd) {
  Network net =
      parseNetwork(readTextFile(STC_SOURCE_DIR "/models/networks/fork_join.yaml"), "fork_join.yaml");
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, {}), recordAll());
  ASSERT_TRUE(r.deadlock);
  json tl = report::timelineJson(net, r);
  // fork_join (sim/report_test.cpp): A runs from 0 and waits to write a_c (FULL) from 4; C never starts,
  // waiting for b_c from 0; the run stops at 5.
  EXPECT_EQ(tl["cycles"], 5);
  EXPECT_EQ(tl["tasks"][0]["spans"], json::parse(R"([[0, 4, "busy"], [4, 5, "full"]])"));
  EXPECT_EQ(tl["tasks"][2]["spans"], json::parse(R"([[0, 5, "empty"]])"));
  EXPECT_TRUE(tl["tasks"][2]["start"].is_null());
  EXPECT_EQ(tl["fifos"][1]["name"], "a_c");
  EXPECT_EQ(tl["fifos"][1]["stall_full"], 1);
}

// A deadlocked task whose wait begins after the run's last event runs to the end and no further.
TEST(ReportTimeline, ABlockedTaskRunsNoLongerThanTheRun) {
  std::string text = readTextFile(STC_SOURCE_DIR "/models/networks/fork_join.yaml");
  for (size_t at = text.find("ii: 1"); at != std::string::npos; at = text.find("ii: 1"))
    text.replace(at, 5, "ii: 4");
  Network net = parseNetwork(text, "fork_join.yaml");
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, {}), recordAll());
  ASSERT_TRUE(r.deadlock);
  ASSERT_GT(r.tasks[0].blockedSince, r.cycles);  // A's next stage falls after B's last event
  json tl = report::timelineJson(net, r);
  EXPECT_EQ(tl["tasks"][0]["busy"], r.cycles - r.tasks[0].start);
  EXPECT_EQ(tl["tasks"][0]["blocked_since"], r.tasks[0].blockedSince);
  EXPECT_EQ(stateCycles(tl["tasks"][0])["busy"], r.cycles - r.tasks[0].start);
}

TEST(ReportTimeline, HbmBusyOverTimeAddsUpToTheChannelsBusyTime) {
  // Two DMAs on one channel and one on another, each feeding a consumer at ii 2: bursts interleave.
  std::string text =
      "network: dmas\nfifos: [{name: w0, width: 512}, {name: w1, width: 512}, {name: w2, width: 512}]\n"
      "tasks:\n";
  int channels[] = {3, 3, 7};
  for (int d = 0; d < 3; ++d) {
    std::string n = std::to_string(d);
    text += "  - {name: load" + n + ", kind: dma_read, channel: " + std::to_string(channels[d]) +
            ", bytes: 262144, ports: [{fifo: w" + n + ", dir: out}]}\n";
    text += "  - {name: use" + n + ", phases: [{trip: [4096], ii: 2, latency: 1, ports: [{fifo: w" + n +
            ", dir: in}]}]}\n";
  }
  Network net = parseNetwork(text, "dmas.yaml");
  sim::SimResult r = sim::runDirect(sim::compileProgram(net, {}), recordAll());
  ASSERT_EQ(r.hbm.size(), 2u);
  json tl = report::timelineJson(net, r);
  int64_t sample = tl["hbm_bucket"], cycles = tl["cycles"];
  for (size_t c = 0; c < r.hbm.size(); ++c) {
    const json& ch = tl["hbm"][c];
    EXPECT_EQ(ch["channel"], r.hbm[c].channel);
    EXPECT_EQ(ch["bytes_read"], 262144 * (c == 0 ? 2 : 1));
    double busy = 0;
    for (size_t k = 0; k < ch["busy"].size(); ++k) {
      double f = ch["busy"][k];
      EXPECT_GE(f, 0.0);
      EXPECT_LE(f, 1.0);  // a channel is never more than busy
      busy += f * static_cast<double>(std::min<int64_t>(sample, cycles - static_cast<int64_t>(k) * sample));
    }
    // The samples' busy time is the channel's (to the four decimals kept).
    EXPECT_NEAR(busy, r.hbm[c].busyFraction * static_cast<double>(r.cycles),
                1e-4 * static_cast<double>(cycles) + 1);
  }
  // Two DMAs share channel 3 and wait for its data: those waits are drawn as "hbm", not as their FIFOs'
  // stalls, and they add up with the FIFO stalls to the simulator's.
  report::Resolution everyCycle;
  everyCycle.taskCells = everyCycle.totalSpans = 1 << 20;
  tl = report::timelineJson(net, r, everyCycle);
  ASSERT_EQ(tl["task_bucket"], 1);
  int64_t hbmWaits = 0;
  for (size_t t = 0; t < r.tasks.size(); ++t) {
    const json& task = tl["tasks"][t];
    std::map<std::string, int64_t> c = stateCycles(task);
    EXPECT_EQ(task["hbm_wait"].get<int64_t>() + task["stall_full"].get<int64_t>() +
                  task["stall_empty"].get<int64_t>(),
              r.tasks[t].stallFull + r.tasks[t].stallEmpty);
    if (!net.tasks[t].isDma()) {
      EXPECT_EQ(task["hbm_wait"], 0);
    }
    EXPECT_EQ(c["hbm"], task["hbm_wait"]);  // cycle by cycle: cells of one cycle
    hbmWaits += task["hbm_wait"].get<int64_t>();
  }
  EXPECT_GT(hbmWaits, 0);
  int64_t fifoStalls = 0;
  for (const json& f : tl["fifos"])
    fifoStalls += f["stall_full"].get<int64_t>() + f["stall_empty"].get<int64_t>();
  int64_t taskStalls = 0;
  for (const json& t : tl["tasks"])
    taskStalls += t["stall_full"].get<int64_t>() + t["stall_empty"].get<int64_t>();
  EXPECT_EQ(fifoStalls, taskStalls);
}

TEST(ReportTimeline, LayerFromTheTaskName) {
  EXPECT_EQ(report::layerOf("layer3.fc1"), 3);
  EXPECT_EQ(report::layerOf("model/layers.11/mlp"), 11);
  EXPECT_EQ(report::layerOf("blocks_2.attn"), 2);
  EXPECT_EQ(report::layerOf("/h.5/attn/c_attn"), 5);
  EXPECT_EQ(report::layerOf("h1.cvt1.w"), -1);  // a tensor named h1, not layer 1
  EXPECT_EQ(report::layerOf("ln1.stats"), -1);
  EXPECT_EQ(report::layerOf("layernorm"), -1);
}

// --- the page ---

json simulationDocument(const std::string& text) {
  Network net = parseNetwork(text, "net.yaml");
  sim::Program prog = sim::compileProgram(net, {});
  sim::SimResult r = sim::runDirect(prog, recordAll());
  std::optional<sim::DepthFix> fix;
  if (r.deadlock) fix = sim::findDepthFix(prog, r);
  json doc = sim::resultJson(r, fix, 250);
  doc["timeline"] = report::timelineJson(net, r);
  return doc;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void expectSelfContained(const std::string& page) {
  EXPECT_EQ(count(page, "<script"), 0u);
  EXPECT_EQ(count(page, "<link"), 0u);
  EXPECT_EQ(count(page, "src="), 0u);
  EXPECT_EQ(count(page, "http:"), 0u);
  EXPECT_EQ(count(page, "https:"), 0u);
  EXPECT_EQ(count(page, "@import"), 0u);
  EXPECT_EQ(count(page, "url("), count(page, "url(#"));  // only the page's own markers
}

TEST(ReportHtml, DeadlockPageDrawsTheCycleAndNamesTheFix) {
  json doc = simulationDocument(readTextFile(STC_SOURCE_DIR "/models/networks/fork_join.yaml"));
  std::string page = report::renderHtml(doc, "fork_join.json");
  expectSelfContained(page);
  for (const char* id : {"summary", "deadlock", "timeline", "fifos", "hbm"})
    EXPECT_EQ(count(page, std::string("<section id=\"") + id + "\""), 1u) << id;
  // One SVG per chart: the wait-for graph, the Gantt, a curve per FIFO (no HBM in this network).
  EXPECT_EQ(count(page, "<svg"), 1u + 1u + 3u);
  EXPECT_EQ(count(page, "<svg class=\"chart waitfor\""), 1u);
  EXPECT_EQ(count(page, "<svg class=\"chart curve\""), 3u);
  EXPECT_NE(page.find("deepen <b>a_c</b> from 2 to 64"), std::string::npos);
  EXPECT_NE(page.find("a_c FULL 2/2"), std::string::npos);  // the cycle's arrows, labelled
  EXPECT_NE(page.find("b_c EMPTY 0/2"), std::string::npos);
  EXPECT_NE(page.find("DEADLOCK"), std::string::npos);
  EXPECT_EQ(page, report::renderHtml(doc, "fork_join.json"));  // byte for byte
}

TEST(ReportHtml, ASavedResultWithoutTimelineSaysHowToGetOne) {
  json doc = simulationDocument(kJoin);
  doc.erase("timeline");
  std::string page = report::renderHtml(doc, "join.json");
  EXPECT_EQ(count(page, "<svg"), 0u);
  EXPECT_EQ(count(page, "--json --timeline"), 2u);  // the Gantt and the curves
}

TEST(ReportHtml, NamesTheFieldItCannotRead) {
  json doc = simulationDocument(kJoin);
  doc["timeline"]["tasks"][1].erase("name");
  try {
    report::renderHtml(doc, "saved.json");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("saved.json: error: field 'timeline.tasks[1].name' is missing", 0),
              0u)
        << e.what();
  }
  doc = simulationDocument(kJoin);
  doc["timeline"]["fifos"][0]["points"][0][2] = "x";
  EXPECT_THROW(report::renderHtml(doc, "saved.json"), UserError);
  EXPECT_THROW(report::renderHtml(json{{"foo", 1}}, "saved.json"), UserError);
  // Values that would inject markup, divide by zero or loop without end are refused, not drawn.
  doc = simulationDocument(kJoin);
  doc["timeline"]["tasks"][0]["spans"][0][2] = "busy\"/><image href=\"x.png\"/><rect class=\"busy";
  EXPECT_THROW(report::renderHtml(doc, "saved.json"), UserError);
  doc = simulationDocument(kJoin);
  doc["clock_mhz"] = 0;
  EXPECT_THROW(report::renderHtml(doc, "saved.json"), UserError);
  doc = simulationDocument(kJoin);
  doc["timeline"]["cycles"] = 0;
  EXPECT_THROW(report::renderHtml(doc, "saved.json"), UserError);
  doc = simulationDocument(kJoin);
  doc["timeline"]["tasks"][0]["spans"][0][1] = int64_t{1} << 40;  // past the run
  EXPECT_THROW(report::renderHtml(doc, "saved.json"), UserError);
  doc = simulationDocument(kJoin);
  doc["fifos"][0]["width"] = "32";
  EXPECT_THROW(report::renderHtml(doc, "saved.json"), UserError);
  doc = simulationDocument(kJoin);
  doc["events"] = -1;
  EXPECT_THROW(report::renderHtml(doc, "saved.json"), UserError);
  EXPECT_THROW(report::renderHtml(json::array(), "saved.json"), UserError);
  EXPECT_THROW(report::renderHtml(json(3), "saved.json"), UserError);
}

// A decode result as stc simulate MODEL --decode P:G --json prints it, its figures made up.
json decodeDocument(int64_t layers) {
  json resources{{"lut", 100}, {"ff", 200}, {"dsp", 30}, {"bram18k", 4}, {"uram", 5}};
  json platform{{"name", "u55c"},
                {"clock_mhz", 250.0},
                {"resources", {{"lut", 1000}, {"ff", 2000}, {"dsp", 90}, {"bram18k", 40}, {"uram", 50}}}};
  json device{{"decode_tokens_per_s", 200.0}, {"latency_ms", 10.0}, {"ttft_ms", 1.0}};
  return {{"model", "m"},
          {"platform", platform},
          {"fits_hbm", true},
          {"hbm_bytes", 1000},
          {"layers", layers},
          {"resources", resources},
          {"prompt", 8},
          {"gen", 8},
          {"device_loop", device},
          {"roofline_tokens_per_s", 400.0},
          {"decode_tokens_per_s", 100.0},
          {"latency_ms", 20.0},
          {"ttft_ms", 2.0},
          {"layer_cycles_first", 1000},
          {"layer_cycles_last", 1200},
          {"head_cycles", 500},
          {"layer_hbm_busy_mean", 0.5},
          {"layer_hbm_busy_max", 0.75}};
}

TEST(ReportHtml, DecodePageDrawsEachLayerAndTheHead) {
  std::string page = report::renderHtml(decodeDocument(4), "decode.json");
  expectSelfContained(page);
  EXPECT_EQ(count(page, "<svg"), 3u);           // resources, tokens/s against the roofline, the step
  EXPECT_EQ(count(page, "<title>layer "), 8u);  // 4 layers, at the first and the last step
  EXPECT_NE(page.find("100.0 tokens/s (25.0% of the roofline)"), std::string::npos);
  EXPECT_NE(page.find("200.0 tokens/s (50.0%)"), std::string::npos);
  EXPECT_NE(page.find("roofline 2500.00 us"), std::string::npos);  // 1e6 / 400 tokens/s
  // A million layers: one segment, not a million.
  page = report::renderHtml(decodeDocument(1000000), "decode.json");
  EXPECT_EQ(count(page, "<title>layer "), 0u);
  EXPECT_EQ(count(page, "1,000,000 layers of"), 2u);
  for (double clock : {0.0, 1e-310}) {  // a clock so slow a step's time is infinite: refused, not drawn
    json bad = decodeDocument(4);
    bad["platform"]["clock_mhz"] = clock;
    EXPECT_THROW(report::renderHtml(bad, "decode.json"), UserError) << clock;
  }
}

// A sizing's page: an LP delay may be negative (the reader's phase starts before the writer's in their own
// clocks), and a timeline saved before the HBM state (no hbm_wait) still draws.
TEST(ReportHtml, SizingPageTakesANegativeDelayAndAnOlderTimeline) {
  json sim = simulationDocument(kJoin);
  for (json& t : sim["timeline"]["tasks"]) t.erase("hbm_wait");
  json fifo{{"name", "b"},        {"depth", 8},   {"bits", 256},   {"memory", "lutram"},
            {"max_occupancy", 8}, {"tokens", 40}, {"delay", -39.5}};
  json doc{{"network", "join"},
           {"total_bits", 256},
           {"baseline_max_occupancy_bits", 512},
           {"baseline_full_bits", 1280},
           {"cycles_sized", 100},
           {"cycles_unbounded", 99},
           {"fifos", json::array({fifo})},
           {"simulation", sim}};
  std::string page = report::renderHtml(doc, "sized.json");
  EXPECT_NE(page.find("<td>-39.5</td>"), std::string::npos);
  EXPECT_NE(page.find("LP delay -39.5 cycles"), std::string::npos);
  EXPECT_EQ(count(page, "<section id=\"sizing\""), 1u);
}

TEST(ReportHtml, EscapesNames) {
  json doc = simulationDocument(kJoin);
  doc["network"] = "<b>&\"x\"";
  std::string page = report::renderHtml(doc, "saved.json");
  EXPECT_EQ(page.find("<b>&\""), std::string::npos);
  EXPECT_NE(page.find("&lt;b&gt;&amp;&quot;x&quot;"), std::string::npos);
}

}  // namespace
}  // namespace stc::testing
