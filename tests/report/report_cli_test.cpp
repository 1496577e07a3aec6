// stc's --html, --json --timeline and stc report: the page of a saved result is the page --html writes,
// byte for byte and run after run; bad input gets one message, exit 1 and no page.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/run_stc.h"

namespace stc::test {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stc_report_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // `command` run with --html, and with --json --timeline saved and drawn by stc report: one page.
  void expectSamePage(const std::string& command, int code, const std::string& save = " --json --timeline") {
    Outcome html = stc(command + " --html " + path("a.html"));
    ASSERT_EQ(html.code, code) << html.out;
    Outcome json = shell("(" + std::string(STC_BINARY) + " " + command + save + " > " + path("r.json") +
                         " 2>/dev/null)");  // a deadlock's report goes to standard error
    ASSERT_EQ(json.code, code) << json.out;
    Outcome report = stc("report " + path("r.json") + " -o " + path("b.html"));
    ASSERT_EQ(report.code, 0) << report.out;
    std::string a = readAll(path("a.html")), b = readAll(path("b.html"));
    EXPECT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == b) << command << ": the saved result's page differs from --html's";
    // Again: the same page (no time, path or wall-clock figure in it).
    ASSERT_EQ(stc(command + " --html " + path("c.html")).code, code);
    EXPECT_TRUE(a == readAll(path("c.html")));
  }

  fs::path dir_;
};

TEST_F(ReportCli, SimulateSizeAndRunPagesAreTheSavedResultsPages) {
  expectSamePage("simulate " STC_SOURCE_DIR "/models/graphs/mlp.yaml", 0);
  expectSamePage("simulate " STC_SOURCE_DIR "/models/networks/fork_join.yaml", 3);
  expectSamePage("size-fifos " STC_SOURCE_DIR "/models/graphs/mlp.yaml -o " + path("sized.yaml"), 0);
  expectSamePage("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 8:8", 0);
  // A table (--table --json) is an array of such results: a row each.
  nlohmann::json one = nlohmann::json::parse(readAll(path("r.json")));
  nlohmann::json two = one;
  two["prompt"] = 16;
  std::ofstream(path("table.json")) << nlohmann::json::array({one, two}).dump();
  ASSERT_EQ(stc("report " + path("table.json") + " -o " + path("table.html")).code, 0);
  std::string page = readAll(path("table.html"));
  EXPECT_NE(page.find("<tr><td>8:8</td>"), std::string::npos);
  EXPECT_NE(page.find("<tr><td>16:8</td>"), std::string::npos);
}

TEST_F(ReportCli, RunWritesTheSizedDesignsPage) {
  Outcome o = stc("run " STC_SOURCE_DIR "/models/graphs/mlp.yaml -o " + path("proj") +
                  " --no-conform --json "
                  "--timeline --html " +
                  path("run.html"));
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  // The page's simulation is the sized design's: its cycles are the sizing's verified run.
  EXPECT_EQ(j["simulation"]["cycles"], j["sizing"]["cycles_sized"]);
  EXPECT_EQ(j["sizing"]["sized_fifos"].size(), j["sizing"]["fifos"].get<size_t>());
  std::string page = readAll(path("run.html"));
  for (const char* id : {"summary", "resources", "sizing", "timeline", "fifos", "hbm"})
    EXPECT_NE(page.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(page.find("LP delay"), std::string::npos);
}

TEST_F(ReportCli, TheJsonSaysWhatThePageDraws) {
  Outcome o = stc("simulate " STC_SOURCE_DIR "/models/networks/fork_join_fixed.yaml --json --timeline");
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_TRUE(j.contains("timeline"));
  EXPECT_EQ(j["timeline"]["cycles"], j["cycles"]);
  EXPECT_EQ(j["platform"]["clock_mhz"], 250.0);
  EXPECT_EQ(j["platform"]["resources"]["dsp"], 9024);
  for (size_t f = 0; f < j["fifos"].size(); ++f) {
    EXPECT_EQ(j["timeline"]["fifos"][f]["max_occupancy"], j["fifos"][f]["max_occupancy"]);
    EXPECT_EQ(j["timeline"]["fifos"][f]["points"].back()[1], j["fifos"][f]["tokens"]);
  }
  // Without --timeline, --json is as before: no timeline.
  o = stc("simulate " STC_SOURCE_DIR "/models/networks/fork_join_fixed.yaml --json");
  EXPECT_FALSE(nlohmann::json::parse(o.out).contains("timeline"));
}

TEST_F(ReportCli, BadInputGetsOneMessageAndNoPage) {
  auto refused = [&](const std::string& args, const std::string& message) {
    fs::remove(path("out.html"));
    Outcome o = stc(args);
    EXPECT_EQ(o.code, 1) << args << "\n" << o.out;
    EXPECT_NE(o.out.find(message), std::string::npos) << args << "\n" << o.out;
    EXPECT_EQ(o.out.find("internal error"), std::string::npos) << o.out;
    EXPECT_FALSE(fs::exists(path("out.html"))) << args;
  };
  std::ofstream(path("broken.json")) << "{\n  \"deadlock\": false,\n  \"tasks\": [1,\n}\n";
  refused("report " + path("broken.json") + " -o " + path("out.html"),
          path("broken.json") + ":4:1: error: not JSON");
  std::ofstream(path("other.json")) << "{\"foo\": 1}";
  refused("report " + path("other.json") + " -o " + path("out.html"),
          "error: field '(top)' says neither a simulation");
  std::ofstream(path("partial.json")) << "{\"network\": \"n\", \"deadlock\": false, \"tasks\": []}";
  refused("report " + path("partial.json") + " -o " + path("out.html"), "error: field 'cycles' is missing");
  refused("report " + path("missing.json") + " -o " + path("out.html"), "missing.json");
  refused("report " + path("other.json") + " -o " + path("other.json"), "is an input of this command");
  refused("simulate " STC_SOURCE_DIR "/models/graphs/mlp.yaml --timeline",
          "--timeline adds to --json's object");
  refused("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 8:8 --timeline", "pass --json too");
  refused("simulate " STC_SOURCE_DIR "/models/graphs/mlp.yaml --html -", "-: error: stc writes files");
  refused(
      "run " STC_SOURCE_DIR "/models/graphs/mlp.yaml -o " + path("proj") + " --html " + path("proj/r.html"),
      "lies in the project folder");
  EXPECT_EQ(readAll(path("other.json")), "{\"foo\": 1}");  // an output never overwrites the input
}

}  // namespace
}  // namespace stc::test
