// stc dse on a real Slurm (tools/slurm-local.sh start gives a single-node one): a sweep run half way,
// a task that fails and is retried alone, a job cancelled and resumed, and the merged results equal
// to a local run's, byte for byte. Skipped when no Slurm answers, unless STC_REQUIRE_SLURM is set (CI
// sets it). Errors that need no Slurm are tested without one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/run_stc.h"

namespace {

namespace fs = std::filesystem;
using stc::test::Outcome;
using stc::test::shell;
using stc::test::stc;
using stc::test::stcIn;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool slurmAnswers() {
  Outcome o = shell("sinfo -h -o %a");
  return o.code == 0 && o.out.find("up") != std::string::npos;
}

bool contains(const Outcome& o, const std::string& text) {
  return o.out.find(text) != std::string::npos;
}

// Until Slurm holds none of the sweep's tasks.
void waitForSweep(const std::string& dir) {
  std::string name = nlohmann::json::parse(read(dir + "/sweep.json"))["job_name"];
  for (int i = 0; i < 600; ++i) {
    if (shell("squeue -h --name=" + name).out.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  FAIL() << "the sweep's tasks are still queued after 2 minutes";
}

TEST(Slurm, SweepKilledHalfWayAndResumedMergesAsALocalRun) {
  if (!slurmAnswers()) {
    if (std::getenv("STC_REQUIRE_SLURM")) FAIL() << "no Slurm answers sinfo: tools/slurm-local.sh start";
    GTEST_SKIP() << "no Slurm here (tools/slurm-local.sh start runs one)";
  }
  std::string dir = ::testing::TempDir() + "slurm-dse/";
  if (fs::exists(dir + "sweep/sweep.json")) {  // an earlier run's tasks must not write into this one
    shell("scancel --name=" +
          nlohmann::json::parse(read(dir + "sweep/sweep.json"))["job_name"].get<std::string>());
    waitForSweep(dir + "sweep");
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string pristine = read(STC_SOURCE_DIR "/models/gpt2.yaml");
  std::ofstream(dir + "gpt2.yaml") << pristine;
  // 24 points, half of them rejected by the compiler (a reduction tile that does not divide K): their
  // messages name gpt2.yaml as typed.
  std::ofstream(dir + "space.yaml") << "space:\n  tile: [8, 16, 32]\n  unroll_budget: [0.2, 0.5]\n"
                                       "  max_stripe: [0, 8]\n  tk.q_op: [64, 7]\n";
  const std::string sweep = "dse gpt2.yaml --space space.yaml --ctx 128 --chunk-size 2 -o sweep --slurm";

  Outcome local = stcIn(dir, "dse gpt2.yaml --space space.yaml --ctx 128 -j 2 -o local --pick cycles");
  ASSERT_EQ(local.code, 0) << local.out;
  ASSERT_TRUE(contains(local, "24 points, 8 distinct networks sized; 12 rejected")) << local.out;
  ASSERT_TRUE(contains(local, "rejected, e.g. gpt2.yaml:3:1: error: --set tk.q_op=7")) << local.out;

  // Half the sweep: chunks 0 and 1 of 12.
  Outcome half = stcIn(dir, sweep + " --chunk 0 --chunk 1 --wait");
  ASSERT_EQ(half.code, 0) << half.out;
  EXPECT_TRUE(contains(half, "gpt2_decode_layer: submitted job ")) << half.out;
  EXPECT_TRUE(contains(half, ": 2 chunks of 12 (4 points, array 0-1)")) << half.out;
  EXPECT_TRUE(contains(half, "the chunks asked for have their results; 10 of 12 chunks have none yet"))
      << half.out;
  Outcome partial = stcIn(dir, "dse --collect sweep");
  EXPECT_EQ(partial.code, 1);
  EXPECT_TRUE(contains(partial, "sweep: 10 of 12 chunks have no result:")) << partial.out;
  EXPECT_TRUE(contains(partial, "  chunks 2-11 (points 4-23): not submitted")) << partial.out;
  EXPECT_FALSE(fs::exists(dir + "sweep/points.csv"));

  // A task that fails: the model changes under the queued tasks, so chunk 3 finds its input no longer
  // the sweep's. It is reported with its log, and retried alone once the file is back.
  Outcome failing = stcIn(dir, sweep + " --chunk 2 --chunk 3 --max-parallel 1");
  ASSERT_EQ(failing.code, 0) << failing.out;
  EXPECT_TRUE(contains(failing, "when it ends: stc dse --collect sweep")) << failing.out;
  std::ofstream(dir + "gpt2.yaml") << pristine << "# edited while the sweep runs\n";
  waitForSweep(dir + "sweep");
  std::ofstream(dir + "gpt2.yaml") << pristine;
  Outcome failed = stcIn(dir, "dse --collect sweep");
  EXPECT_EQ(failed.code, 1);
  EXPECT_TRUE(contains(failed, "  chunk 3 (points 6-7): failed or cancelled; the end of its log "))
      << failed.out;
  EXPECT_TRUE(contains(failed, "changed since the sweep was submitted")) << failed.out;
  EXPECT_TRUE(contains(failed, "--chunk-size 2 -o 'sweep' --slurm --max-parallel 1")) << failed.out;
  Outcome retried = stcIn(dir, sweep + " --chunk 3 --wait");
  ASSERT_EQ(retried.code, 0) << retried.out;
  EXPECT_TRUE(contains(retried, ": 1 chunks of 12 (2 points, array 3)")) << retried.out;
  EXPECT_TRUE(fs::exists(dir + "sweep/results/chunk-3.json"));

  // The rest submitted and the job cancelled at once: its chunks are reported, then resumed.
  Outcome rest = stcIn(dir, sweep + " --max-parallel 1");
  ASSERT_EQ(rest.code, 0) << rest.out;
  std::string name = nlohmann::json::parse(read(dir + "sweep/sweep.json"))["job_name"];
  EXPECT_EQ(shell("scancel --name=" + name).code, 0);
  waitForSweep(dir + "sweep");
  Outcome cancelled = stcIn(dir, "dse --collect sweep");
  EXPECT_EQ(cancelled.code, 1);
  EXPECT_TRUE(contains(cancelled, "(cancelled before it ran)") || contains(cancelled, "failed or cancelled"))
      << cancelled.out;
  size_t kept = 0;
  for (int k = 0; k < 12; ++k) kept += fs::exists(dir + "sweep/results/chunk-" + std::to_string(k) + ".json");
  ASSERT_LT(kept, 12u);
  Outcome resumed = stcIn(dir, sweep + " --wait --pick cycles");
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_TRUE(contains(resumed, ": " + std::to_string(12 - kept) + " chunks of 12")) << resumed.out;
  EXPECT_TRUE(contains(resumed, std::to_string(kept) + " with results already")) << resumed.out;
  EXPECT_TRUE(contains(resumed, "merged from 12 chunks")) << resumed.out;
  for (const char* file :
       {"points.csv", "points.json", "front.svg", "picked.net.yaml", "picked.schedule.yaml"})
    EXPECT_EQ(read(dir + "sweep/" + file), read(dir + "local/" + file)) << file;

  // Done: a rerun submits nothing and collects again, from another folder too.
  Outcome again = stc("dse " + dir + "gpt2.yaml --space " + dir + "space.yaml --ctx 128 --chunk-size 2 -o " +
                      dir + "sweep --slurm");
  EXPECT_EQ(again.code, 1);  // gpt2.yaml named from elsewhere: another sweep (its messages would differ)
  EXPECT_TRUE(contains(again, "error: the folder holds another sweep")) << again.out;
  Outcome collected = stc("dse --collect " + dir + "sweep");
  EXPECT_EQ(collected.code, 0) << collected.out;
  EXPECT_EQ(read(dir + "sweep/points.csv"), read(dir + "local/points.csv"));
  Outcome rerun = stcIn(dir, sweep);
  EXPECT_EQ(rerun.code, 0) << rerun.out;
  EXPECT_TRUE(contains(rerun, "every chunk asked for has its result")) << rerun.out;
}

TEST(Slurm, ErrorsWithoutACluster) {
  std::string graph = STC_SOURCE_DIR "/models/graphs/mlp.yaml", dir = ::testing::TempDir() + "no-slurm/";
  fs::remove_all(dir);
  Outcome noSbatch = shell("PATH=/nonexistent " + std::string(STC_BINARY) + " dse " + graph + " -o " + dir +
                           "sweep --slurm");
  EXPECT_EQ(noSbatch.code, 1);
  EXPECT_EQ(
      noSbatch.out,
      "stc dse: error: --slurm needs Slurm's sbatch and squeue on PATH, and sbatch is not there (on one "
      "machine, tools/slurm-local.sh start sets Slurm up)\n");
  EXPECT_FALSE(fs::exists(dir + "sweep"));
  Outcome partition = stc("dse " + graph + " --partition gpu");
  EXPECT_EQ(partition.code, 1);
  EXPECT_EQ(partition.out, "stc dse: error: --partition needs --slurm\n");
  Outcome collectInput = stc("dse " + graph + " --collect " + dir);
  EXPECT_EQ(collectInput.out,
            "stc dse: error: --collect takes no input: the sweep folder's sweep.json names it\n");
  Outcome nothing = stc("dse --collect " + dir + "none");
  EXPECT_EQ(nothing.code, 1);
  EXPECT_EQ(nothing.out, dir + "none/sweep.json: error: no sweep here (stc dse ... --slurm -o " + dir +
                             "none writes it)\n");
  Outcome noInput = stc("dse -o " + dir);
  EXPECT_EQ(noInput.code, 1);
  EXPECT_EQ(noInput.out, "stc dse: error: a graph, ONNX or model file is required\n");
}

}  // namespace
