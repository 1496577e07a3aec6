// stc dse on a Slurm cluster. The sweep folder (-o DIR, on a file system every node sees) holds:
//   sweep.json         what is swept: the input, platform and space files (absolute paths), the
//                      settings and bindings, the fingerprint of the files' bytes and the arguments,
//                      the number of points and the chunk size;
//   sweep.sbatch       the job script: one array task per chunk, `stc dse --worker DIR --chunk K`;
//   results/chunk-K.json  a chunk's points in full (dse::pointToJson), written atomically by its task;
//   logs/chunk-K.log   the task's output.
// Submitting lists the chunks with no result and none of the sweep's tasks queued or running (squeue,
// by the sweep's job name), and submits only those: a rerun resumes. Collecting reads every chunk,
// merges the points (dse::merge, as a local run does) and writes the same files as a local run.
// Slurm's own commands do the scheduling; nothing here runs a task itself.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "compiler/ir/diagnostics.h"
#include "tools/stc/commands.h"
#include "tools/stc/dse.h"

#include <tbb/global_control.h>

namespace stc::cli::dse_cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kSweepVersion = 1;

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A program's path on PATH, or "".
std::string onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

struct Output {
  int code = 0;
  std::string text;
};

// A shell command's exit code and its output (stdout and stderr together).
Output runCommand(const std::string& command) {
  Output o;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw UserError("stc dse: error: cannot run " + command);
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, pipe)) > 0;) o.text.append(buf, got);
  int status = ::pclose(pipe);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return o;
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": error: cannot read the file");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string absolutePath(const std::string& path) {
  return path.empty() ? path : fs::weakly_canonical(fs::absolute(path)).string();
}

// The sweep folder's record of what it sweeps.
struct Manifest {
  std::string id;  ///< fingerprint of the input, platform and space files' bytes and of the arguments
  DseArgs args;    ///< input, platform, space (absolute), ctx, prompt, bind, set
  std::string title;
  size_t points = 0, chunkSize = 1;
  std::string jobName;

  size_t chunks() const { return (points + chunkSize - 1) / chunkSize; }
  size_t firstPoint(size_t chunk) const { return chunk * chunkSize; }
  size_t endPoint(size_t chunk) const { return std::min(points, (chunk + 1) * chunkSize); }
};

// What the results depend on: the files' bytes and the arguments (threads and Slurm options aside).
std::string sweepId(const DseArgs& a) {
  std::ostringstream key;
  key << "stc dse sweep " << kSweepVersion << "\ninput " << readBytes(a.input).size() << "\n"
      << readBytes(a.input);
  for (const std::string* file : {&a.platform, &a.space}) {
    std::string bytes = file->empty() ? "(default)" : readBytes(*file);
    key << "\nfile " << bytes.size() << "\n" << bytes;
  }
  key << "\nctx " << (a.ctx ? std::to_string(*a.ctx) : "-") << "\nprompt "
      << (a.prompt ? std::to_string(*a.prompt) : "-");
  for (const std::string& b : a.binds) key << "\nbind " << b;
  for (const std::string& s : a.settings) key << "\nset " << s;
  return dse::fingerprint(key.str());
}

std::string manifestPath(const std::string& dir) { return (fs::path(dir) / "sweep.json").string(); }
std::string resultPath(const std::string& dir, size_t chunk) {
  return (fs::path(dir) / "results" / ("chunk-" + std::to_string(chunk) + ".json")).string();
}
std::string logPath(const std::string& dir, size_t chunk) {
  return (fs::path(dir) / "logs" / ("chunk-" + std::to_string(chunk) + ".log")).string();
}

json manifestJson(const Manifest& m) {
  const DseArgs& a = m.args;
  json j{{"stc_dse_sweep", kSweepVersion},
         {"id", m.id},
         {"input", a.input},
         {"platform", a.platform},
         {"space", a.space},
         {"bind", a.binds},
         {"set", a.settings},
         {"title", m.title},
         {"points", m.points},
         {"chunk_size", m.chunkSize},
         {"job_name", m.jobName}};
  j["ctx"] = a.ctx ? json(*a.ctx) : json(nullptr);
  j["prompt"] = a.prompt ? json(*a.prompt) : json(nullptr);
  return j;
}

Manifest readManifest(const std::string& dir) {
  std::string path = manifestPath(dir);
  if (!fs::exists(path))
    throw UserError(path + ": error: no sweep here (stc dse ... --slurm -o " + dir + " writes it)");
  Manifest m;
  try {
    json j = json::parse(readBytes(path));
    if (j.at("stc_dse_sweep").get<int>() != kSweepVersion)
      throw UserError(path + ": error: field 'stc_dse_sweep': a sweep of another version of stc dse");
    m.id = j.at("id").get<std::string>();
    m.args.input = j.at("input").get<std::string>();
    m.args.platform = j.at("platform").get<std::string>();
    m.args.space = j.at("space").get<std::string>();
    m.args.binds = j.at("bind").get<std::vector<std::string>>();
    m.args.settings = j.at("set").get<std::vector<std::string>>();
    if (!j.at("ctx").is_null()) m.args.ctx = j.at("ctx").get<int64_t>();
    if (!j.at("prompt").is_null()) m.args.prompt = j.at("prompt").get<int64_t>();
    m.title = j.at("title").get<std::string>();
    m.points = j.at("points").get<size_t>();
    m.chunkSize = j.at("chunk_size").get<size_t>();
    m.jobName = j.at("job_name").get<std::string>();
  } catch (const json::exception& e) {
    throw UserError(path + ": error: a malformed sweep record: " + e.what());
  }
  if (m.chunkSize < 1) throw UserError(path + ": error: field 'chunk_size': must be at least 1");
  m.args.outDir = dir;
  return m;
}

// The sweep's arguments as they were given, its files unchanged since: the sweep, checked.
Sweep sweepOf(const Manifest& m) {
  if (sweepId(m.args) != m.id)
    throw UserError(manifestPath(m.args.outDir) +
                    ": error: the input, platform or space file changed since the sweep was submitted; "
                    "its results would not be the same sweep's (submit it again into a new folder)");
  Sweep s = prepareSweep(m.args);
  if (s.space.size() != m.points)
    throw UserError(manifestPath(m.args.outDir) + ": error: field 'points': the space has " +
                    std::to_string(s.space.size()) + " points, the record " + std::to_string(m.points));
  return s;
}

// A chunk's points from its result file; nothing when it has none yet.
std::optional<std::vector<dse::Point>> readChunk(const Manifest& m, const dse::Space& space, size_t chunk) {
  std::string path = resultPath(m.args.outDir, chunk);
  if (!fs::exists(path)) return std::nullopt;
  std::vector<dse::Point> points;
  try {
    json j = json::parse(readBytes(path));
    if (j.at("sweep").get<std::string>() != m.id || j.at("chunk").get<size_t>() != chunk)
      throw UserError(path + ": error: the result of another sweep or chunk");
    const json& list = j.at("points");
    if (list.size() != m.endPoint(chunk) - m.firstPoint(chunk))
      throw UserError(path + ": error: field 'points': " + std::to_string(list.size()) + " points, expected " +
                      std::to_string(m.endPoint(chunk) - m.firstPoint(chunk)));
    for (size_t i = 0; i < list.size(); ++i) {
      size_t index = m.firstPoint(chunk) + i;
      dse::Point p = dse::pointFromJson(list[i], path + ": point " + std::to_string(index));
      if (p.settings != space.settingsAt(index))
        throw UserError(path + ": error: point " + std::to_string(index) + ": not the space's settings");
      points.push_back(std::move(p));
    }
  } catch (const json::exception& e) {
    throw UserError(path + ": error: a malformed chunk result: " + e.what());
  }
  return points;
}

// The sweep's tasks Slurm still holds (queued or running): chunk -> "RUNNING in job 17".
std::map<size_t, std::string> queuedTasks(const Manifest& m, const std::string& squeue) {
  std::map<size_t, std::string> queued;
  if (squeue.empty()) return queued;
  Output o = runCommand(shellQuote(squeue) + " -h -r --name=" + shellQuote(m.jobName) + " -o '%i %T'");
  if (o.code != 0) throw UserError("stc dse: error: squeue failed: " + o.text);
  std::istringstream lines(o.text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, state;
    fields >> id >> state;
    size_t bar = id.find('_');
    if (bar == std::string::npos) continue;
    try {
      queued[std::stoul(id.substr(bar + 1))] = state + " in job " + id.substr(0, bar);
    } catch (const std::exception&) {  // "17_[3-5]": a range squeue did not expand
    }
  }
  return queued;
}

// "0-3,5,7-9": chunks as sbatch --array takes them.
std::string arrayList(const std::vector<size_t>& chunks) {
  std::string list;
  for (size_t i = 0; i < chunks.size();) {
    size_t j = i;
    while (j + 1 < chunks.size() && chunks[j + 1] == chunks[j] + 1) ++j;
    list += (list.empty() ? "" : ",") + std::to_string(chunks[i]) +
            (j > i ? "-" + std::to_string(chunks[j]) : std::string());
    i = j + 1;
  }
  return list;
}

// How to submit the sweep again: its own arguments, the missing chunks being what runs.
std::string submitCommand(const Manifest& m) {
  const DseArgs& a = m.args;
  std::string c = "stc dse " + shellQuote(a.input);
  if (!a.platform.empty()) c += " -p " + shellQuote(a.platform);
  if (!a.space.empty()) c += " --space " + shellQuote(a.space);
  if (a.prompt) c += " --prompt " + std::to_string(*a.prompt);
  if (a.ctx) c += " --ctx " + std::to_string(*a.ctx);
  for (const std::string& b : a.binds) c += " --bind " + shellQuote(b);
  for (const std::string& s : a.settings) c += " --set " + shellQuote(s);
  return c + " --chunk-size " + std::to_string(m.chunkSize) + " -o " + shellQuote(a.outDir) + " --slurm";
}

std::string lastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

std::string submissionsPath(const std::string& dir) { return (fs::path(dir) / "submissions").string(); }

// The jobs each chunk was submitted in, from the submissions file ("JOB ARRAY" a line).
std::map<size_t, std::string> submittedIn(const Manifest& m) {
  std::map<size_t, std::string> job;
  std::ifstream in(submissionsPath(m.args.outDir));
  for (std::string id, list; in >> id >> list;) {
    std::stringstream ranges(list);
    for (std::string range; std::getline(ranges, range, ',');) {
      size_t dash = range.find('-');
      try {
        size_t lo = std::stoul(range.substr(0, dash)), hi = dash == std::string::npos ? lo : std::stoul(range.substr(dash + 1));
        for (size_t k = lo; k <= hi && k < m.chunks(); ++k) job[k] = id;
      } catch (const std::exception&) {
      }
    }
  }
  return job;
}

// Each chunk without a result and what became of it, chunks in the same state on one line.
void reportMissing(const Manifest& m, const std::vector<size_t>& missing, size_t of) {
  auto queued = queuedTasks(m, onPath("squeue"));
  auto submitted = submittedIn(m);
  std::fprintf(stderr, "stc dse: error: %s: %zu of %s%zu chunks have no result:\n", m.args.outDir.c_str(),
               missing.size(), of < m.chunks() ? "the " : "", of);
  if (of < m.chunks()) std::fprintf(stderr, "  (of the chunks asked for)\n");
  auto stateOf = [&](size_t k) -> std::string {
    std::string log = logPath(m.args.outDir, k);
    if (queued.count(k)) return queued[k];
    if (fs::exists(log)) return "failed or cancelled; the end of its log " + log + ": " + lastLine(log);
    if (submitted.count(k))
      return "submitted in job " + submitted[k] + ", gone from the queue with no log (cancelled before it ran)";
    return "not submitted";
  };
  for (size_t i = 0; i < missing.size();) {
    std::string state = stateOf(missing[i]);
    size_t j = i;
    while (j + 1 < missing.size() && missing[j + 1] == missing[j] + 1 && stateOf(missing[j + 1]) == state) ++j;
    size_t a = missing[i], b = missing[j];
    std::string chunks = a == b ? "chunk " + std::to_string(a) : "chunks " + std::to_string(a) + "-" + std::to_string(b);
    std::fprintf(stderr, "  %s (points %zu-%zu): %s\n", chunks.c_str(), m.firstPoint(a), m.endPoint(b) - 1,
                 state.c_str());
    i = j + 1;
  }
  std::fprintf(stderr,
               "submit the missing chunks again (those with results are kept): %s\n  or one alone: add --chunk %zu\n",
               submitCommand(m).c_str(), missing.front());
}

// Merges the chunks into the files a local run writes; 1 with every missing chunk and its state.
int collect(const Manifest& m, const DseArgs& given) {
  Sweep s = sweepOf(m);
  DseArgs a = m.args;
  a.pick = given.pick;
  std::vector<dse::Point> points;
  std::vector<size_t> missing;
  for (size_t k = 0; k < m.chunks(); ++k) {
    auto chunk = readChunk(m, s.space, k);
    if (!chunk) {
      missing.push_back(k);
      continue;
    }
    for (dse::Point& p : *chunk) points.push_back(std::move(p));
  }
  if (!missing.empty()) {
    reportMissing(m, missing, m.chunks());
    return 1;
  }
  dse::Exploration e = dse::merge(s.space, std::move(points));
  auto sizedOf = [&](int i) {  // the picked point evaluated again here: the same network, sized the same
    std::vector<Network> sized;
    std::vector<dse::Point> again = dse::evaluate(s.subject.graph, s.platform, s.subject.base, s.space,
                                                  s.bindings, {static_cast<size_t>(i)}, nullptr, &sized);
    if (again[0].cycles != e.points[static_cast<size_t>(i)].cycles)
      throw UserError("stc dse: error: point " + std::to_string(i) + " gives " +
                      std::to_string(again[0].cycles) + " cycles here and " +
                      std::to_string(e.points[static_cast<size_t>(i)].cycles) +
                      " in its chunk: not the same stc on every node?");
    return sized[0];
  };
  return writeResults(e, s, a, sizedOf, "merged from " + std::to_string(m.chunks()) + " chunks");
}

// Waits until Slurm holds none of the sweep's tasks; a line of progress on a terminal.
void waitForTasks(const Manifest& m, const std::string& squeue) {
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  for (;;) {
    auto queued = queuedTasks(m, squeue);
    if (queued.empty()) break;
    if (terminal) {
      size_t done = 0;
      for (size_t k = 0; k < m.chunks(); ++k) done += fs::exists(resultPath(m.args.outDir, k));
      std::fprintf(stderr, "\rstc dse: %zu/%zu chunks have results, %zu tasks queued or running", done,
                   m.chunks(), queued.size());
      std::fflush(stderr);
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (terminal) std::fprintf(stderr, "\r\033[K");
}

}  // namespace

int slurmSubmit(const DseArgs& a) {
  Sweep s = prepareSweep(a);
  if (a.chunkSize < 1) throw UserError("stc dse: error: --chunk-size must be at least 1");
  if (a.maxParallel < 0) throw UserError("stc dse: error: --max-parallel must be at least 1");
  std::string sbatch = onPath("sbatch"), squeue = onPath("squeue");
  if (sbatch.empty() || squeue.empty())
    throw UserError(std::string("stc dse: error: --slurm needs Slurm's sbatch and squeue on PATH, and ") +
                    (sbatch.empty() ? "sbatch" : "squeue") +
                    " is not there (on one machine, tools/slurm-local.sh start sets Slurm up)");

  Manifest m;
  m.args = a;
  m.args.input = absolutePath(a.input);
  m.args.platform = absolutePath(a.platform);
  m.args.space = absolutePath(a.space);
  m.args.outDir = absolutePath(a.outDir);
  m.id = sweepId(m.args);
  m.title = s.subject.graph.name;
  m.points = s.space.size();
  m.chunkSize = static_cast<size_t>(a.chunkSize);
  m.jobName = "stc-dse-" + dse::fingerprint(m.id + "\n" + m.args.outDir).substr(0, 12);
  const std::string& dir = m.args.outDir;
  for (const char* sub : {"results", "logs"}) {
    std::error_code ec;
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) throw UserError(dir + ": error: cannot create the folder: " + ec.message());
  }
  if (fs::exists(manifestPath(dir))) {
    Manifest old = readManifest(dir);
    if (old.id != m.id || old.points != m.points || old.chunkSize != m.chunkSize)
      throw UserError(manifestPath(dir) +
                      ": error: the folder holds another sweep (its input, space, settings or chunk size "
                      "differ); give another -o, or remove the folder");
  } else {
    writeFileAtomic(manifestPath(dir), manifestJson(m).dump(2) + "\n");
  }

  std::vector<size_t> asked;
  for (int k : a.chunks) {
    if (k < 0 || static_cast<size_t>(k) >= m.chunks())
      throw UserError("stc dse: error: --chunk " + std::to_string(k) + ": the sweep has chunks 0 to " +
                      std::to_string(m.chunks() - 1));
    asked.push_back(static_cast<size_t>(k));
  }
  if (asked.empty())
    for (size_t k = 0; k < m.chunks(); ++k) asked.push_back(k);
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
  auto queued = queuedTasks(m, squeue);
  std::vector<size_t> todo;
  size_t done = 0, held = 0;
  for (size_t k : asked) {
    if (fs::exists(resultPath(dir, k)))
      ++done;
    else if (queued.count(k))
      ++held;
    else
      todo.push_back(k);
  }

  if (!todo.empty()) {
    size_t points = 0;
    for (size_t k : todo) points += m.endPoint(k) - m.firstPoint(k);
    int cpus = a.jobs > 0 ? a.jobs : 1;
    char self[4096];
    ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) throw UserError("stc dse: error: cannot find the stc executable for the job script");
    std::string script = "#!/bin/sh\n# stc dse's Slurm job: one array task per chunk of the sweep in this "
                         "folder, its points\n# evaluated and written to results/chunk-K.json.\nexec " +
                         shellQuote(std::string(self, static_cast<size_t>(len))) + " dse --worker " +
                         shellQuote(dir) + " --chunk \"$SLURM_ARRAY_TASK_ID\" -j \"${SLURM_CPUS_PER_TASK:-" +
                         std::to_string(cpus) + "}\"\n";
    std::string scriptPath = (fs::path(dir) / "sweep.sbatch").string();
    writeFileAtomic(scriptPath, script);
    std::string command = shellQuote(sbatch) + " --parsable --job-name=" + shellQuote(m.jobName) +
                          " --array=" + arrayList(todo) +
                          (a.maxParallel > 0 ? "%" + std::to_string(a.maxParallel) : "") +
                          " --cpus-per-task=" + std::to_string(cpus) + " --output=" +
                          shellQuote((fs::path(dir) / "logs" / "chunk-%a.log").string());
    if (!a.partition.empty()) command += " --partition=" + shellQuote(a.partition);
    if (!a.time.empty()) command += " --time=" + shellQuote(a.time);
    Output o = runCommand(command + " " + shellQuote(scriptPath));
    std::string job = o.text.substr(0, o.text.find_first_of(";\n"));
    if (o.code != 0 || job.empty() || job.find_first_not_of("0123456789") != std::string::npos)
      throw UserError("stc dse: error: sbatch refused the job: " + o.text);
    std::ofstream(submissionsPath(dir), std::ios::app) << job << " " << arrayList(todo) << "\n";
    std::printf("%s: submitted job %s: %zu chunks of %zu (%zu points, array %s)%s%s\n", m.title.c_str(),
                job.c_str(), todo.size(), m.chunks(), points, arrayList(todo).c_str(),
                done > 0 ? (", " + std::to_string(done) + " with results already").c_str() : "",
                held > 0 ? (", " + std::to_string(held) + " still queued or running").c_str() : "");
  } else if (held > 0) {
    std::printf("%s: nothing to submit: %zu chunks have results, %zu are queued or running\n", m.title.c_str(),
                done, held);
  } else {
    std::printf("%s: every chunk asked for has its result\n", m.title.c_str());
    if (a.chunks.empty()) return collect(m, a);
    return 0;
  }
  if (!a.wait) {
    std::printf("when it ends: stc dse --collect %s\n", dir.c_str());
    return 0;
  }
  std::fflush(stdout);
  waitForTasks(m, squeue);
  std::vector<size_t> failed;
  size_t without = 0;
  for (size_t k = 0; k < m.chunks(); ++k) {
    bool has = fs::exists(resultPath(dir, k));
    without += !has;
    if (!has && std::binary_search(asked.begin(), asked.end(), k)) failed.push_back(k);
  }
  if (!failed.empty()) {
    reportMissing(m, failed, asked.size());
    return 1;
  }
  if (without == 0) return collect(m, a);
  std::printf("%s: the chunks asked for have their results; %zu of %zu chunks have none yet\n",
              m.title.c_str(), without, m.chunks());
  return 0;
}

int slurmCollect(const DseArgs& a) {
  return collect(readManifest(a.collect), a);
}

int slurmWorker(const DseArgs& a) {
  if (a.chunks.size() != 1) throw UserError("stc dse: error: --worker needs one --chunk K");
  Manifest m = readManifest(a.worker);
  Sweep s = sweepOf(m);
  if (a.chunks[0] < 0 || static_cast<size_t>(a.chunks[0]) >= m.chunks())
    throw UserError("stc dse: error: --chunk " + std::to_string(a.chunks[0]) + ": the sweep has chunks 0 to " +
                    std::to_string(m.chunks() - 1));
  size_t k = static_cast<size_t>(a.chunks[0]);
  std::optional<tbb::global_control> threads;
  if (a.jobs > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(a.jobs));
  auto begin = std::chrono::steady_clock::now();
  std::vector<size_t> indices;
  for (size_t i = m.firstPoint(k); i < m.endPoint(k); ++i) indices.push_back(i);
  std::vector<dse::Point> points =
      dse::evaluate(s.subject.graph, s.platform, s.subject.base, s.space, s.bindings, indices);
  json list = json::array();
  for (const dse::Point& p : points) list.push_back(dse::pointToJson(p));
  json chunk{{"sweep", m.id}, {"chunk", k}, {"points", list}};
  writeFileAtomic(resultPath(m.args.outDir, k), chunk.dump(1) + "\n");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::printf("chunk %zu: points %zu-%zu evaluated in %.1f s\n", k, indices.front(), indices.back(), seconds);
  return 0;
}

}  // namespace stc::cli::dse_cli
