#pragma once
// The subcommands of `stc`. Each registers its options on the CLI11 app and returns a runner that
// yields the process exit code: 0 success, 1 bad input or failed check, 3 deadlock.

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"
#include "compiler/pipeline.h"
#include "compiler/sizing/fifo_sizing.h"

namespace stc::cli {

using Runner = std::function<int()>;

Runner addSimulate(CLI::App& app);
Runner addCheck(CLI::App& app);
Runner addConform(CLI::App& app);
Runner addReport(CLI::App& app);
Runner addItensor(CLI::App& app);
Runner addSizeFifos(CLI::App& app);
Runner addCompile(CLI::App& app);
Runner addEmit(CLI::App& app);
Runner addRun(CLI::App& app);
Runner addDse(CLI::App& app);

/// A status line on standard error for a long command: on a terminal, "\rstc CMD: WHAT" rewritten in
/// place by each show() and cleared by clear() or at destruction (so an error's message starts a clean
/// line); elsewhere nothing, or with `logged` one line per show(), for a log file.
class ProgressLine {
 public:
  explicit ProgressLine(std::string command, bool logged = false);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }
  bool terminal() const { return terminal_; }
  void show(const std::string& what);
  void clear();

 private:
  std::string command_;
  bool terminal_, logged_, shown_ = false;
};

/// Why a sizing was paced (sizing::SizingResult::paced), and its paced run's cycles; one line.
std::string pacedLine(const sizing::SizingResult& r);
/// How far over its unbounded run a sized design may run: "1%", or a paced design's tolerance ("3.4%").
std::string toleranceText(const sizing::SizingResult& r);

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
  /// Reads the network, or compiles the graph, with its symbol bindings, refusing an unbound symbol
  /// (those in `ranged` aside); `command` prefixes flag errors.
  Network load(const std::string& command, const Platform& platform, Bindings& bindings,
               const std::set<std::string>& ranged = {}) const;
  /// The settings the network was compiled with: --set for a graph, the file's source settings for a
  /// compiled network; nothing for a hand-written one (`compiled` false).
  std::vector<std::string> compileSettings(const Network& net, bool& compiled) const;
};
/// "A:B", two integers and nothing else; nothing for any other text (the caller says what it expects).
std::optional<std::pair<int64_t, int64_t>> parseIntegerPair(const std::string& text);
/// A depth as --fifo-depth and --set-depth take it: "unbounded" (kUnboundedDepth) or a positive integer;
/// nothing for anything else.
std::optional<int64_t> parseDepth(const std::string& text);
/// --set-depth FIFO=N|unbounded (repeatable), each naming a FIFO of net: name -> depth. `command` prefixes
/// errors; `unbounded` says whether that is a depth here.
std::map<std::string, int64_t> parseSetDepths(const std::string& command, const Network& net,
                                              const std::vector<std::string>& given, bool unbounded);
/// Warns on standard error for each binding outside the range the network's depths were sized for.
void warnOutsideSizedRange(const Network& net, const std::string& path, const Bindings& bindings);

/// `settings` with the dynamic axes of an ONNX model whose shape arithmetic stops its import fixed at the
/// values `bindings` give them (dim.AXIS=N added; of several, only those the import needs), with a note on
/// standard error; unchanged for any other file, or where the import goes through, or fails even so.
std::vector<std::string> fixBoundAxesAtImport(const std::string& command, const std::string& path,
                                              std::vector<std::string> settings, const Bindings& bindings);
/// Whether path names an ONNX file (by its extension).
bool isOnnxPath(const std::string& path);
/// A graph file, or an ONNX model named after its file; UserError for any other file.
/// A graph file, or an ONNX model imported with the dynamic axes `settings` fix (`dim.AXIS=N`), which a
/// graph file refuses.
Graph loadGraphFile(const std::string& path, const std::vector<std::string>& settings = {});
/// importOnnx, its notes (Graph::notes) told on standard error once per model and fixed axes.
Graph importOnnxTold(const std::string& path, const std::map<std::string, int64_t>& dims);
/// The dynamic axes `settings` fix at import (`dim.AXIS=N`); refused for a path that is not an ONNX model.
std::map<std::string, int64_t> importDims(const std::vector<std::string>& settings, const std::string& path);
/// UserError naming the flag unless every symbol bound by --bind NAME=N is one of `symbols`, the design's:
/// a binding of nothing would change nothing, silently. ctx (--ctx, which every command takes) is let be, and
/// an ONNX axis fixed at import (--set dim.NAME=N) may be bound to the same N.
void refuseUnusedBindings(const std::string& command, const std::set<std::string>& symbols,
                          const Bindings& given, const std::string& path,
                          const std::map<std::string, int64_t>& fixedAtImport = {});
/// UserError at path unless every symbol is bound: "the WHAT uses symbol 's': bind it with --ctx N" (or
/// --bind s=N).
void requireBindings(const std::set<std::string>& symbols, const Bindings& bindings, const std::string& path,
                     const std::string& what);

/// A design's resources against the platform's, as every command prints them: "DSP a/b, BRAM_18K c/d,
/// URAM e/f, LUT g/h: fits" (or "DOES NOT FIT").
std::string resourcesText(const Resources& used, const Platform& platform);
/// {"dsp", "bram18k", "uram", "lut", "ff"}: the counts as every --json prints them.
nlohmann::json resourcesJson(const Resources& used);
/// Each sized FIFO as --json prints it: {name, depth, bits, memory, max_occupancy, tokens, delay}.
nlohmann::json sizedFifosJson(const std::vector<sizing::SizedFifo>& fifos);
/// {"name", "clock_mhz", "resources"}: the platform as every --json that the HTML report reads gives it.
nlohmann::json platformJson(const Platform& platform);
/// A network's resources (read from path; `used` is it with the depths to count), as stc emit counts them:
/// its source compiled again with those depths (kernels, DMAs, converters and FIFOs), or the FIFOs alone
/// for a network without a readable source (or whose source no longer compiles to it; `strict`: a source
/// that does not compile is the error it is). `what` says which, calling the FIFOs `fifos` ("sized FIFOs").
/// With `intermediate`, the design's intermediate results on chip at those depths and kept whole
/// ({intermediateBytesAtDepths, the report's onchipBytesUnfused}), or {-1, 0} without a compiled source.
Resources networkResources(const Network& file, const Network& used, const std::string& path,
                           const Platform& platform, const std::string& fifos, bool strict,
                           std::string& what, std::pair<int64_t, int64_t>* intermediate = nullptr);
/// networkResources in two steps, for a caller that counts several depths of one network: its source
/// compiled (nullopt without a readable source, or one that no longer compiles unless `strict`), then
/// the resources at `used`'s depths.
std::optional<CompileResult> compileNetworkSource(const Network& file, const std::string& path,
                                                 const Platform& platform, bool strict);
Resources resourcesAtDepths(const std::optional<CompileResult>& source, const Network& file, const Network& used,
                            const std::string& path, const Platform& platform, const std::string& fifos,
                            std::string& what, std::pair<int64_t, int64_t>* intermediate = nullptr);
/// A network's run as `stc simulate --json --timeline` prints it, at the bindings (and each symbol of its
/// sized_for range at the range's end): the sized network a report of size-fifos or run draws.
nlohmann::json simulationJson(const Network& net, const Bindings& bindings, const Platform& platform);
/// The HTML report (report/html.h) of a result as --json prints it, written atomically to path.
void writeHtmlReport(const std::string& path, const nlohmann::json& result);
/// A range sizing's checks (sizing::sizeFifosOverRange) as --json prints them: {ctx, cycles,
/// cycles_unbounded, sampled, within_bound} each.
nlohmann::json rangeChecksJson(const std::vector<sizing::RangeCheck>& checks);
/// UserError naming every count of `used` above the platform's, unless allowOverfit: "COMMAND: error: WHAT
/// does not fit PLATFORM: DSP 9056 > 9024 (--allow-overfit ...)".
void requireFit(const std::string& command, const std::string& what, const Resources& used,
                const Platform& platform, bool allowOverfit);

/// Where a compiled network's (read from path) `source` file is: as written, or next to the network file;
/// "" when it has none or neither can be read.
std::string networkSourcePath(const Network& net, const std::string& path);
/// The graph a compiled network (read from path) came from: its `source` file, as written or next to the
/// network file; UserError when it has none or the file cannot be read. `command` says who needs it.
Graph loadNetworkSourceGraph(const Network& net, const std::string& path, const std::string& command);
/// compiled's FIFO depths set to file's; UserError unless compiled is file's network up to depths.
void takeDepths(const Network& file, const std::string& path, Network& compiled);

/// A subcommand of DESIGN.md that this build does not implement yet: says so and exits 1.
Runner addUnimplemented(CLI::App& app, const std::string& name, const std::string& description);

/// Writes text to path atomically (a temporary file in the same folder, then rename); UserError on failure.
void writeFileAtomic(const std::string& path, const std::string& text);
/// The same, the file's text written by `write` as it goes (nothing held whole in memory).
void writeFileAtomic(const std::string& path, const std::function<void(std::ostream&)>& write);
/// UserError for an output path stc cannot write ("-": stc writes files, not standard output), an output
/// that is one of `inputs`, or two outputs that are one file; called on every output at a command's
/// start, before any work, and by writeFileAtomic.
void checkOutputPaths(const std::vector<std::string>& paths, const std::vector<std::string>& inputs = {});
/// Whether two paths, both given, name one file (as written, or the same existing file).
bool sameFile(const std::string& a, const std::string& b);

}  // namespace stc::cli
