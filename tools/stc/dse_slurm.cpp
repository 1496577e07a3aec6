// stc dse on a Slurm cluster. The sweep folder (-o DIR, on a file system every node sees) holds:
//   sweep.json         what is swept: the folder it was submitted from, the input, platform and space
//                      files as given there, the settings and bindings, the fingerprint of the files'
//                      bytes, the arguments and the stc executable, the number of points, the chunk size
//                      and the sweep's Slurm job name;
//   sweep.sbatch       the job script: one array task per chunk, `stc dse --worker DIR --chunk K`;
//   results/chunk-K.json  a chunk's points in full (dse::pointToJson), written atomically by its task;
//   logs/chunk-K.log   the task's output;
//   submissions        a line per sbatch: the job and the chunks it took.
// Submitting lists the chunks with no result and none of the sweep's tasks queued or running (squeue,
// by the sweep's job name), and submits only those: a rerun resumes. Collecting reads every chunk,
// merges the points (dse::merge, as a local run does) and writes the same files as a local run: the
// workers and the collector work from the submitting folder, so every message naming a file is the same.
// Slurm's own commands do the scheduling; nothing here runs a task itself.
#include <sys/wait.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "compiler/ir/diagnostics.h"
#include "compiler/ir/yaml_io.h"
#include "tools/stc/commands.h"
#include "tools/stc/dse.h"

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

bool present(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
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

std::string absolutePath(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) throw UserError(path + ": error: " + ec.message());
  return p.string();
}

std::string currentFolder() {
  std::error_code ec;
  std::string cwd = fs::current_path(ec).string();
  if (ec) throw UserError("stc dse: error: cannot read the current folder: " + ec.message());
  return cwd;
}

// The executable's fingerprint: a sweep's chunks all come from one build of stc.
const std::string& stcBuild() {
  static const std::string build = dse::fingerprint(readTextFile("/proc/self/exe"));
  return build;
}

// The sweep folder's record of what it sweeps.
struct Manifest {
  std::string id;      ///< fingerprint of the files' bytes, the arguments and the stc build
  std::string cwd;     ///< the folder it was submitted from: the paths below are as given there
  std::string output;  ///< -o as given
  DseArgs args;        ///< input, platform, space, ctx, prompt, bind, set
  std::string title, jobName;
  size_t points = 0, chunkSize = 1;
  std::string partition, time;  ///< the latest submission's Slurm options, for the retry hint
  int maxParallel = 0, jobs = 0;
  std::string dir;  ///< the folder as this process reaches it (absolute; not stored)

  size_t chunks() const { return (points + chunkSize - 1) / chunkSize; }
  size_t firstPoint(size_t chunk) const { return chunk * chunkSize; }
  size_t endPoint(size_t chunk) const { return std::min(points, (chunk + 1) * chunkSize); }
};

// What the results depend on: the files (by the names the messages use, and their bytes), the
// arguments and the stc build; not the threads or the Slurm options. Read in the submitting folder.
std::string sweepId(const DseArgs& a) {
  std::ostringstream key;
  key << "stc dse sweep " << kSweepVersion << "\nstc " << stcBuild();
  for (const std::string* file : {&a.input, &a.platform, &a.space}) {
    bool builtin = file == &a.platform && isBuiltinPlatform(*file);  // by name: in stc's own bytes
    std::string bytes = file->empty() || builtin ? "" : readTextFile(*file);
    key << "\nfile " << file->size() << " " << *file << " " << bytes.size() << "\n" << bytes;
  }
  key << "\nctx " << (a.ctx ? std::to_string(*a.ctx) : "-") << "\nprompt "
      << (a.prompt ? std::to_string(*a.prompt) : "-");
  for (const std::string& b : a.binds) key << "\nbind " << b.size() << " " << b;
  for (const std::string& s : a.settings) key << "\nset " << s.size() << " " << s;
  return dse::fingerprint(key.str());
}

std::string inFolder(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}
std::string resultPath(const std::string& dir, size_t chunk) {
  return inFolder(dir, "results/chunk-" + std::to_string(chunk) + ".json");
}
std::string logPath(const std::string& dir, size_t chunk) {
  return inFolder(dir, "logs/chunk-" + std::to_string(chunk) + ".log");
}

json stringsJson(const std::vector<std::string>& list) {
  json j = json::array();
  for (const std::string& s : list) j.push_back(dse::jsonString(s));
  return j;
}

std::vector<std::string> stringsFrom(const json& j) {
  std::vector<std::string> list;
  for (const json& s : j) list.push_back(dse::stringFromJson(s));
  return list;
}

json manifestJson(const Manifest& m) {
  const DseArgs& a = m.args;
  json j{{"stc_dse_sweep", kSweepVersion},
         {"id", m.id},
         {"cwd", dse::jsonString(m.cwd)},
         {"output", dse::jsonString(m.output)},
         {"input", dse::jsonString(a.input)},
         {"platform", dse::jsonString(a.platform)},
         {"space", dse::jsonString(a.space)},
         {"bind", stringsJson(a.binds)},
         {"set", stringsJson(a.settings)},
         {"title", dse::jsonString(m.title)},
         {"points", m.points},
         {"chunk_size", m.chunkSize},
         {"job_name", m.jobName},
         {"slurm",
          {{"partition", dse::jsonString(m.partition)},
           {"time", dse::jsonString(m.time)},
           {"max_parallel", m.maxParallel},
           {"cpus_per_task", m.jobs}}}};
  j["ctx"] = a.ctx ? json(*a.ctx) : json(nullptr);
  j["prompt"] = a.prompt ? json(*a.prompt) : json(nullptr);
  return j;
}

Manifest readManifest(const std::string& dir) {
  std::string path = inFolder(dir, "sweep.json");
  if (!present(path))
    throw UserError(path + ": error: no sweep here (stc dse ... --slurm -o " + dir + " writes it)");
  Manifest m;
  try {
    json j = json::parse(readTextFile(path));
    if (j.at("stc_dse_sweep").get<int>() != kSweepVersion)
      throw UserError(path + ": error: field 'stc_dse_sweep': a sweep of another version of stc dse");
    m.id = j.at("id").get<std::string>();
    m.cwd = dse::stringFromJson(j.at("cwd"));
    m.output = dse::stringFromJson(j.at("output"));
    m.args.input = dse::stringFromJson(j.at("input"));
    m.args.platform = dse::stringFromJson(j.at("platform"));
    m.args.space = dse::stringFromJson(j.at("space"));
    m.args.binds = stringsFrom(j.at("bind"));
    m.args.settings = stringsFrom(j.at("set"));
    if (!j.at("ctx").is_null()) m.args.ctx = j.at("ctx").get<int64_t>();
    if (!j.at("prompt").is_null()) m.args.prompt = j.at("prompt").get<int64_t>();
    m.title = dse::stringFromJson(j.at("title"));
    m.points = j.at("points").get<size_t>();
    m.chunkSize = j.at("chunk_size").get<size_t>();
    m.jobName = j.at("job_name").get<std::string>();
    const json& slurm = j.at("slurm");
    m.partition = dse::stringFromJson(slurm.at("partition"));
    m.time = dse::stringFromJson(slurm.at("time"));
    m.maxParallel = slurm.at("max_parallel").get<int>();
    m.jobs = slurm.at("cpus_per_task").get<int>();
  } catch (const json::exception& e) {
    throw UserError(path + ": error: a malformed sweep record: " + e.what());
  }
  if (m.chunkSize < 1 || m.chunkSize > std::max<size_t>(m.points, 1))
    throw UserError(path + ": error: field 'chunk_size': must be 1 to the sweep's points (" +
                    std::to_string(m.points) + ")");
  m.dir = absolutePath(dir);
  return m;
}

// Into the folder the sweep was submitted from, where its paths hold and its messages name them.
void enterSubmittingFolder(const Manifest& m) {
  std::error_code ec;
  fs::current_path(m.cwd, ec);
  if (ec)
    throw UserError(inFolder(m.dir, "sweep.json") + ": error: field 'cwd': cannot enter " + m.cwd + ": " +
                    ec.message() + " (the sweep's files must be at the same paths on every node)");
}

// The sweep's arguments as they were given, its files and stc unchanged since: the sweep, checked.
Sweep sweepOf(const Manifest& m, const std::string& pick) {
  enterSubmittingFolder(m);
  if (sweepId(m.args) != m.id)
    throw UserError(inFolder(m.dir, "sweep.json") +
                    ": error: the input, platform or space file, or stc itself, changed since the sweep was "
                    "submitted; its results would not be that sweep's (submit it again into a new folder)");
  DseArgs a = m.args;
  a.pick = pick;
  Sweep s = prepareSweep(a);
  if (s.space.size() != m.points)
    throw UserError(inFolder(m.dir, "sweep.json") + ": error: field 'points': the space has " +
                    std::to_string(s.space.size()) + " points, the record " + std::to_string(m.points));
  return s;
}

// A chunk's points from its result file; nothing when it has none yet.
std::optional<std::vector<dse::Point>> readChunk(const Manifest& m, const dse::Space& space, size_t chunk) {
  std::string path = resultPath(m.dir, chunk);
  if (!present(path)) return std::nullopt;
  std::vector<dse::Point> points;
  try {
    json j = json::parse(readTextFile(path));
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

// The chunks a task id names: "17_3" -> {3}; "17_[4-7,9%2]" (a range squeue did not expand) -> 4-7, 9.
std::vector<size_t> taskChunks(const std::string& id) {
  std::vector<size_t> chunks;
  size_t bar = id.find('_');
  if (bar == std::string::npos) return chunks;
  std::string list = id.substr(bar + 1);
  if (!list.empty() && list.front() == '[') list = list.substr(1, list.find_first_of("%]") - 1);
  std::stringstream ranges(list);
  for (std::string range; std::getline(ranges, range, ',');) {
    try {
      size_t dash = range.find('-');
      size_t lo = std::stoul(range.substr(0, dash));
      size_t hi = dash == std::string::npos ? lo : std::stoul(range.substr(dash + 1));
      for (size_t k = lo; k <= hi && k < lo + 1000000; ++k) chunks.push_back(k);
    } catch (const std::exception&) {  // not a number: not one of ours
    }
  }
  return chunks;
}

// The sweep's tasks Slurm still holds: chunk -> "PENDING (Priority) in job 17". A failing squeue is
// asked again twice (a busy controller times out) before it is an error.
std::map<size_t, std::string> queuedTasks(const Manifest& m, const std::string& squeue) {
  std::map<size_t, std::string> queued;
  Output o;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::seconds(2 * attempt));
    o = runCommand(shellQuote(squeue) + " -h -r --name=" + shellQuote(m.jobName) + " -o '%i %T %r'");
    if (o.code == 0) break;
  }
  if (o.code != 0) throw UserError("stc dse: error: squeue failed: " + o.text);
  std::istringstream lines(o.text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, state, reason;
    fields >> id >> state >> reason;
    std::string job = id.substr(0, id.find('_'));
    std::string why = state == "PENDING" && !reason.empty() && reason != "None" ? " (" + reason + ")" : "";
    for (size_t k : taskChunks(id)) queued[k] = state + why + " in job " + job;
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

// How to submit the sweep again, from the folder it was submitted from: its own arguments and the
// latest Slurm options; the chunks with results are kept, so only the missing ones run.
std::string submitCommand(const Manifest& m) {
  const DseArgs& a = m.args;
  std::string c;
  std::error_code ec;
  if (fs::current_path(ec).string() != m.cwd) c = "cd " + shellQuote(m.cwd) + " && ";
  c += "stc dse " + shellQuote(a.input);
  if (!a.platform.empty()) c += " -p " + shellQuote(a.platform);
  if (!a.space.empty()) c += " --space " + shellQuote(a.space);
  if (a.prompt) c += " --prompt " + std::to_string(*a.prompt);
  if (a.ctx) c += " --ctx " + std::to_string(*a.ctx);
  for (const std::string& b : a.binds) c += " --bind " + shellQuote(b);
  for (const std::string& s : a.settings) c += " --set " + shellQuote(s);
  c += " --chunk-size " + std::to_string(m.chunkSize) + " -o " + shellQuote(m.output) + " --slurm";
  if (!m.partition.empty()) c += " --partition " + shellQuote(m.partition);
  if (!m.time.empty()) c += " --time " + shellQuote(m.time);
  if (m.maxParallel > 0) c += " --max-parallel " + std::to_string(m.maxParallel);
  if (m.jobs > 0) c += " -j " + std::to_string(m.jobs);
  return c;
}

std::string lastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

std::string submissionsPath(const Manifest& m) {
  return inFolder(m.dir, "submissions");
}

// The job each chunk was last submitted in, from the submissions file ("JOB ARRAY" a line).
std::map<size_t, std::string> submittedIn(const Manifest& m) {
  std::map<size_t, std::string> job;
  std::ifstream in(submissionsPath(m));
  for (std::string id, list; in >> id >> list;)
    for (size_t k : taskChunks(id + "_[" + list + "]")) job[k] = id;
  return job;
}

// Each chunk without a result and what became of it, chunks in the same state on one line.
void reportMissing(const Manifest& m, const std::vector<size_t>& missing, bool asked) {
  std::string squeue = onPath("squeue");
  auto queued = squeue.empty() ? std::map<size_t, std::string>{} : queuedTasks(m, squeue);
  auto submitted = submittedIn(m);
  std::fprintf(stderr, "stc dse: error: %s: %zu of %s%zu chunks have no result:\n", m.dir.c_str(),
               missing.size(), asked ? "the " : "", m.chunks());
  auto stateOf = [&](size_t k) -> std::string {
    std::string log = logPath(m.dir, k);
    if (queued.count(k)) return queued[k];
    std::string unknown = squeue.empty() ? " (the queue unknown here: no squeue on PATH)" : "";
    if (present(log))
      return "failed or cancelled" + unknown + "; the end of its log " + log + ": " + lastLine(log);
    if (submitted.count(k))
      return "submitted in job " + submitted[k] +
             (squeue.empty() ? ", not started" + unknown
                             : ", gone from the queue with no log (cancelled before it ran)");
    return "not submitted";
  };
  for (size_t i = 0; i < missing.size();) {
    std::string state = stateOf(missing[i]);
    size_t j = i;
    while (j + 1 < missing.size() && missing[j + 1] == missing[j] + 1 && stateOf(missing[j + 1]) == state) ++j;
    size_t lo = missing[i], hi = missing[j];
    std::string chunks =
        lo == hi ? "chunk " + std::to_string(lo) : "chunks " + std::to_string(lo) + "-" + std::to_string(hi);
    std::fprintf(stderr, "  %s (points %zu-%zu): %s\n", chunks.c_str(), m.firstPoint(lo), m.endPoint(hi) - 1,
                 state.c_str());
    i = j + 1;
  }
  std::fprintf(
      stderr,
      "submit the missing chunks again (those with results are kept):\n  %s\nor one alone: add --chunk %zu\n",
      submitCommand(m).c_str(), missing.front());
}

// Merges the chunks into the files a local run writes; 1 with every missing chunk and its state.
int collect(const Manifest& m, const std::string& pick) {
  Sweep s = sweepOf(m, pick);
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
    reportMissing(m, missing, false);
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
                      std::to_string(e.points[static_cast<size_t>(i)].cycles) + " in its chunk");
    return sized[0];
  };
  DseArgs a = m.args;
  a.pick = pick;
  a.outDir = m.dir;
  return writeResults(e, s, a, sizedOf, "merged from " + std::to_string(m.chunks()) + " chunks");
}

// Waits until Slurm holds none of the sweep's tasks, asking squeue less often as the wait goes on (1 s
// to 15 s); the count of results on stderr as it changes.
void waitForTasks(const Manifest& m, const std::string& squeue) {
  ProgressLine line("dse", true);  // one line per change in a log
  double interval = 1;
  size_t shown = SIZE_MAX;
  for (;;) {
    auto queued = queuedTasks(m, squeue);
    if (queued.empty()) break;
    size_t done = 0;
    for (size_t k = 0; k < m.chunks(); ++k) done += present(resultPath(m.dir, k));
    if (done != shown) {
      line.show(std::to_string(done) + "/" + std::to_string(m.chunks()) + " chunks have results; " +
                std::to_string(queued.size()) + " tasks queued or running, e.g. " + queued.begin()->second);
      shown = done;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(interval * 1000)));
    interval = std::min(15.0, interval * 1.5);
  }
}

// The cluster's largest array index plus one (MaxArraySize), or 0 when scontrol does not say.
size_t maxArraySize() {
  std::string scontrol = onPath("scontrol");
  if (scontrol.empty()) return 0;
  Output o = runCommand(shellQuote(scontrol) + " show config");
  std::istringstream lines(o.text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key, eq, value;
    fields >> key >> eq >> value;
    if (key == "MaxArraySize") try {
        return std::stoul(value);
      } catch (const std::exception&) {
        return 0;
      }
  }
  return 0;
}

}  // namespace

int slurmSubmit(const DseArgs& a) {
  Sweep s = prepareSweep(a);
  if (a.chunkSize < 1) throw UserError("stc dse: error: --chunk-size must be at least 1");
  if (a.maxParallel < 0) throw UserError("stc dse: error: --max-parallel must be 0 (no limit) or more");
  std::string sbatch = onPath("sbatch"), squeue = onPath("squeue");
  if (sbatch.empty() || squeue.empty())
    throw UserError(std::string("stc dse: error: --slurm needs Slurm's sbatch and squeue on PATH, and ") +
                    (sbatch.empty() ? "sbatch" : "squeue") +
                    " is not there (on one machine, tools/slurm-local.sh start sets Slurm up)");

  Manifest m;
  m.args = a;
  m.cwd = currentFolder();
  m.output = a.outDir;
  m.id = sweepId(a);
  m.title = s.subject.graph.name;
  m.points = s.space.size();
  m.chunkSize = std::min(static_cast<size_t>(a.chunkSize), std::max<size_t>(m.points, 1));
  m.partition = a.partition;
  m.time = a.time;
  m.maxParallel = a.maxParallel;
  m.jobs = a.jobs;
  for (const char* sub : {"results", "logs"}) {
    std::error_code ec;
    fs::create_directories(fs::path(a.outDir) / sub, ec);
    if (ec) throw UserError(a.outDir + ": error: cannot create the folder: " + ec.message());
  }
  m.dir = absolutePath(a.outDir);
  m.jobName = "stc-dse-" + dse::fingerprint(m.id + "\n" + m.dir).substr(0, 12);  // one per sweep folder
  if (present(inFolder(m.dir, "sweep.json"))) {
    Manifest old = readManifest(m.dir);
    if (old.id != m.id || old.points != m.points || old.chunkSize != m.chunkSize)
      throw UserError(
          inFolder(a.outDir, "sweep.json") +
          ": error: the folder holds another sweep (its input, space, settings, chunk size or stc "
          "build differ); give another -o, or remove the folder");
    m.jobName = old.jobName;  // the queue knows the sweep by the name it was first given
    m.cwd = old.cwd;
    m.output = old.output;
  }
  writeFileAtomic(inFolder(m.dir, "sweep.json"), manifestJson(m).dump(2) + "\n");

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
    if (present(resultPath(m.dir, k)))
      ++done;
    else if (queued.count(k))
      ++held;
    else
      todo.push_back(k);
  }

  if (!todo.empty()) {
    size_t limit = maxArraySize();
    if (limit > 0 && todo.back() >= limit)
      throw UserError("stc dse: error: the sweep has " + std::to_string(m.chunks()) +
                      " chunks and the cluster takes array indices below " + std::to_string(limit) +
                      " (MaxArraySize): give --chunk-size " + std::to_string((m.points + limit - 1) / limit) +
                      " or more");
    size_t points = 0;
    for (size_t k : todo) points += m.endPoint(k) - m.firstPoint(k);
    int cpus = a.jobs > 0 ? a.jobs : 1;
    std::error_code ec;
    std::string self = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec)
      throw UserError("stc dse: error: cannot find the stc executable for the job script: " + ec.message());
    std::string script =
        "#!/bin/sh\n# stc dse's Slurm job: one array task per chunk of the sweep in this "
        "folder, its points\n# evaluated and written to results/chunk-K.json.\nexec " +
        shellQuote(self) + " dse --worker " + shellQuote(m.dir) +
        " --chunk \"$SLURM_ARRAY_TASK_ID\" -j \"${SLURM_CPUS_PER_TASK:-" + std::to_string(cpus) + "}\"\n";
    std::string scriptPath = inFolder(m.dir, "sweep.sbatch");
    writeFileAtomic(scriptPath, script);
    for (size_t k : todo) fs::remove(logPath(m.dir, k), ec);  // an earlier attempt's log says nothing now
    std::string command = shellQuote(sbatch) + " --parsable --job-name=" + shellQuote(m.jobName) +
                          " --array=" + arrayList(todo) +
                          (a.maxParallel > 0 ? "%" + std::to_string(a.maxParallel) : "") +
                          " --cpus-per-task=" + std::to_string(cpus) +
                          " --output=" + shellQuote(inFolder(m.dir, "logs/chunk-%a.log"));
    if (!a.partition.empty()) command += " --partition=" + shellQuote(a.partition);
    if (!a.time.empty()) command += " --time=" + shellQuote(a.time);
    Output o = runCommand(command + " " + shellQuote(scriptPath));
    std::string job;  // --parsable: "JOB" or "JOB;CLUSTER", the last such line (warnings may come first)
    std::istringstream lines(o.text);
    for (std::string line; std::getline(lines, line);) {
      std::string id = line.substr(0, line.find(';'));
      if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) job = id;
    }
    if (o.code != 0 || job.empty()) throw UserError("stc dse: error: sbatch refused the job: " + o.text);
    std::ofstream record(submissionsPath(m), std::ios::app);
    record << job << " " << arrayList(todo) << "\n";
    record.close();
    if (!record)
      throw UserError(submissionsPath(m) + ": error: cannot record job " + job + " (it was submitted)");
    std::printf("%s: submitted job %s: %zu chunks of %zu (%zu points, array %s)%s%s\n", m.title.c_str(),
                job.c_str(), todo.size(), m.chunks(), points, arrayList(todo).c_str(),
                done > 0 ? (", " + std::to_string(done) + " with results already").c_str() : "",
                held > 0 ? (", " + std::to_string(held) + " still queued or running").c_str() : "");
  } else if (held > 0) {
    std::printf("%s: nothing to submit: %zu chunks have results, %zu are queued or running\n", m.title.c_str(),
                done, held);
  } else {
    std::printf("%s: every chunk asked for has its result\n", m.title.c_str());
  }
  if (!todo.empty() || held > 0) {
    if (!a.wait) {
      std::printf("when it ends: stc dse --collect %s%s\n", a.outDir.c_str(),
                  a.pick.empty() ? "" : (" --pick " + a.pick).c_str());
      return 0;
    }
    std::fflush(stdout);
    waitForTasks(m, squeue);
  }
  // The queue is empty; a result written on another node may take a moment to show on a network file
  // system, so a missing one is looked for again before it counts as failed.
  std::vector<size_t> failed;
  for (int look = 0; look < 4; ++look) {
    if (look > 0) std::this_thread::sleep_for(std::chrono::seconds(look));
    failed.clear();
    for (size_t k : asked)
      if (!present(resultPath(m.dir, k))) failed.push_back(k);
    if (failed.empty()) break;
  }
  if (!failed.empty()) {
    reportMissing(m, failed, !a.chunks.empty());
    return 1;
  }
  size_t without = 0;
  for (size_t k = 0; k < m.chunks(); ++k) without += !present(resultPath(m.dir, k));
  if (without == 0) return collect(m, a.pick);
  std::printf("%s: the chunks asked for have their results; %zu of %zu chunks have none yet\n",
              m.title.c_str(), without, m.chunks());
  return 0;
}

int slurmCollect(const DseArgs& a) {
  return collect(readManifest(a.collect), a.pick);
}

int slurmWorker(const DseArgs& a) {
  if (a.chunks.size() != 1) throw UserError("stc dse: error: --worker needs one --chunk K");
  if (!a.pick.empty()) throw UserError("stc dse: error: --pick is for --collect, not --worker");
  Manifest m = readManifest(a.worker);
  Sweep s = sweepOf(m, "");
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
  writeFileAtomic(resultPath(m.dir, k), chunk.dump(1) + "\n");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::printf("chunk %zu: points %zu-%zu evaluated in %.1f s\n", k, indices.front(), indices.back(), seconds);
  return 0;
}

}  // namespace stc::cli::dse_cli
