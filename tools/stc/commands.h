#pragma once
// The subcommands of `stc`. Each registers its options on the CLI11 app and returns a runner that
// yields the process exit code: 0 success, 1 bad input or failed check, 3 deadlock.

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"

namespace stc::cli {

using Runner = std::function<int()>;

Runner addSimulate(CLI::App& app);
Runner addCheck(CLI::App& app);
Runner addItensor(CLI::App& app);
Runner addSizeFifos(CLI::App& app);
Runner addCompile(CLI::App& app);
Runner addEmit(CLI::App& app);
Runner addRun(CLI::App& app);
Runner addDse(CLI::App& app);

/// Why a sizing was paced (sizing::SizingResult::paced), and its paced run's cycles; one line.
std::string pacedLine(int64_t cyclesPaced);

/// Symbol bindings from --ctx N and --bind NAME=N; `command` prefixes errors.
Bindings parseSymbolBindings(const std::string& command, const std::optional<int64_t>& ctx,
                             const std::vector<std::string>& binds);

/// What every command that runs a network takes: the file, -p PLATFORM, --ctx N and --bind NAME=N.
struct NetworkInput {
  std::string path;
  std::string platform;
  std::optional<int64_t> ctx;
  std::vector<std::string> binds;
  std::vector<std::string> settings;  ///< --set KEY=VALUE for compiling a graph

  /// Registers the options on app.
  void addOptions(CLI::App& app);
  /// The platform named by -p, or the embedded default.
  Platform loadPlatformArg() const;
  /// Reads the network, or compiles the graph, with its symbol bindings, refusing an unbound symbol;
  /// `command` prefixes flag errors.
  Network load(const std::string& command, const Platform& platform, Bindings& bindings) const;
};
/// Whether path names an ONNX file (by its extension).
bool isOnnxPath(const std::string& path);
/// A graph file, or an ONNX model named after its file; UserError for any other file.
Graph loadGraphFile(const std::string& path);
/// UserError at path unless every symbol is bound: "the WHAT uses symbol 's': bind it with --ctx N" (or
/// --bind s=N).
void requireBindings(const std::set<std::string>& symbols, const Bindings& bindings, const std::string& path,
                     const std::string& what);

/// A subcommand of DESIGN.md that this build does not implement yet: says so and exits 1.
Runner addUnimplemented(CLI::App& app, const std::string& name, const std::string& description);

/// Writes text to path atomically (a temporary file in the same folder, then rename); UserError on failure.
void writeFileAtomic(const std::string& path, const std::string& text);
/// UserError for an output path stc cannot write ("-": stc writes files, not standard output); called
/// on every output at a command's start, before any work, and by writeFileAtomic.
void checkOutputPaths(const std::vector<std::string>& paths);

}  // namespace stc::cli
