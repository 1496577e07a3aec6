#pragma once
// stc dse's pieces shared by the sweep on this machine (dse.cpp) and on a Slurm cluster
// (dse_slurm.cpp).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/dse/explore.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"

namespace stc::cli::dse_cli {

struct DseArgs {
  std::string input, platform, space, outDir = "dse", pick;
  std::optional<int64_t> ctx, prompt;
  std::vector<std::string> binds, settings;
  int jobs = 0;
  // Slurm (dse_slurm.cpp).
  bool slurm = false, wait = false;
  std::string partition, time, collect, worker;
  int maxParallel = 0, chunkSize = 8;
  std::vector<int> chunks;
};

/// What is explored: a graph, or a model's decode layer (or prefill layer of --prompt rows).
struct Subject {
  Graph graph;
  std::vector<std::string> base;  ///< the model's quantisation and context, then --set
  bool fromModel = false;
  std::string note;  ///< said before the summary: a prompt padded to the prefill layer's rows
};

/// Everything a sweep needs, read from its arguments and checked before anything runs.
struct Sweep {
  Platform platform;
  Subject subject;
  dse::Space space;
  Bindings bindings;
};
Sweep prepareSweep(const DseArgs& a);

/// Writes points.csv, points.json and front.svg to a.outDir, prints the summary and the front, and with
/// a.pick writes the picked point's sized network (from sizedOf) and schedule; `took` ends the summary
/// line ("12.3 s"). The exit code.
int writeResults(const dse::Exploration& e, const Sweep& s, const DseArgs& a,
                 const std::function<Network(int)>& sizedOf, const std::string& took);

/// stc dse ... --slurm: the sweep's chunks without a result submitted as a Slurm job array.
int slurmSubmit(const DseArgs& a);
/// stc dse --collect DIR: the chunks' results merged and written as a local run writes them.
int slurmCollect(const DseArgs& a);
/// stc dse --worker DIR --chunk K: one array task, its chunk's points evaluated and written.
int slurmWorker(const DseArgs& a);

}  // namespace stc::cli::dse_cli
