// Helpers shared by the subcommands.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/diagnostics.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/pipeline.h"
#include "report/html.h"
#include "report/timeline.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "tools/stc/commands.h"

namespace stc::cli {

bool sameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && (a == b || std::filesystem::equivalent(a, b, ec));
}

void checkOutputPaths(const std::vector<std::string>& paths, const std::vector<std::string>& inputs) {
  for (const std::string& path : paths)
    if (path == "-")
      throw UserError("-: error: stc writes files, not standard output here: give a file name");
  for (const std::string& out : paths)
    for (const std::string& in : inputs)
      if (sameFile(out, in))
        throw UserError(out + ": error: is an input of this command; writing it would overwrite " + in);
  for (size_t i = 0; i < paths.size(); ++i)
    for (size_t j = i + 1; j < paths.size(); ++j)
      if (sameFile(paths[i], paths[j]))
        throw UserError(paths[i] + ": error: two outputs name one file; give each its own");
}

void writeFileAtomic(const std::string& path, const std::string& text) {
  writeFileAtomic(path, [&](std::ostream& out) { out << text; });
}

void writeFileAtomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  checkOutputPaths({path});
  auto cannot = [&](int err) { return UserError(path + ": error: cannot write the file: " + std::strerror(err)); };
  std::error_code ec;
  auto kind = std::filesystem::status(path, ec).type();
  if (!ec && kind != std::filesystem::file_type::regular && kind != std::filesystem::file_type::not_found &&
      kind != std::filesystem::file_type::directory) {
    // A device or a pipe (-o /dev/null, a named pipe): written in place. Renaming a temporary over it
    // would replace the device itself with a file (as root, /dev/null).
    errno = 0;
    std::ofstream out(path, std::ios::binary);
    if (!out) throw cannot(errno != 0 ? errno : EIO);
    write(out);
    out.flush();
    if (!out) throw cannot(errno != 0 ? errno : EIO);
    return;
  }
  // The host in the temporary's name too: tasks on several machines may write one shared folder.
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  std::string tmp = path + ".tmp." + host + "." + std::to_string(::getpid());
  auto fail = [&](int err) {
    std::remove(tmp.c_str());
    return cannot(err);
  };
  {
    errno = 0;  // what the stream leaves in errno is its failure's, not an earlier call's
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw fail(errno != 0 ? errno : EIO);
    try {
      write(out);
    } catch (...) {  // nothing half-written left behind
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    errno = 0;
    out.close();
    if (!out) throw fail(errno != 0 ? errno : EIO);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw fail(errno);
}

// Symbol bindings from --ctx N and --bind NAME=N.
Bindings parseSymbolBindings(const std::string& command, const std::optional<int64_t>& ctx,
                             const std::vector<std::string>& binds) {
  Bindings b;
  std::map<std::string, std::string> givenBy;  // a symbol bound twice is a mistake, whichever wins
  if (ctx) {
    if (*ctx < 1 || *ctx > kMaxNumber) throw UserError(command + ": error: --ctx must be 1 to 2^40");
    b["ctx"] = *ctx;
    givenBy["ctx"] = "--ctx " + std::to_string(*ctx);
  }
  for (const std::string& kv : binds) {
    size_t eq = kv.find('=');
    bool ok = eq != std::string::npos && eq > 0;
    int64_t v = 0;
    if (ok) {
      try {
        size_t used = 0;
        v = std::stoll(kv.substr(eq + 1), &used);
        ok = used == kv.size() - eq - 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) throw UserError(command + ": error: --bind expects NAME=INTEGER, got '" + kv + "'");
    if (v < 1 || v > kMaxNumber) throw UserError(command + ": error: --bind " + kv + ": the value must be 1 to 2^40");
    std::string symbol = kv.substr(0, eq);
    if (givenBy.count(symbol))
      throw UserError(command + ": error: " + symbol + " is bound twice: " + givenBy[symbol] +
                      " and --bind " + kv);
    givenBy[symbol] = "--bind " + kv;
    b[symbol] = v;
  }
  return b;
}

void NetworkInput::addOptions(CLI::App& app) {
  app.add_option("input", path, "network file (models/networks/*.yaml) or graph (models/graphs/*.yaml)")->required();
  app.add_option("-p,--platform", platform,
                 "platform file, or a built-in platform: u55c (the default), u280");
  app.add_option("--ctx", ctx, "bind the KV-cache length symbol ctx");
  app.add_option("--bind", binds, "bind a symbol, NAME=N (repeatable)");
  app.add_option("--set", settings, "compiler setting for a graph input, KEY=VALUE (see stc compile)");
}

Platform NetworkInput::loadPlatformArg() const {
  return platformFromArg(platform);
}

std::string toleranceText(const sizing::SizingResult& r) {
  // To a tenth of a percent: 1% but where a paced design was kept for its fewer bits (up to 5%).
  int tenths = static_cast<int>(std::lround(std::max(r.pacedTolerance, 0.01) * 1000));
  return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") + "%";
}

ProgressLine::ProgressLine(std::string command, bool logged)
    : command_(std::move(command)), terminal_(::isatty(STDERR_FILENO) != 0), logged_(logged) {}

void ProgressLine::show(const std::string& what) {
  if (!terminal_ && !logged_) return;
  std::fprintf(stderr, "%sstc %s: %s%s", terminal_ ? "\r" : "", command_.c_str(), what.c_str(),
               terminal_ ? "\033[K" : "\n");
  std::fflush(stderr);
  shown_ = terminal_;
}

void ProgressLine::clear() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

std::string pacedLine(const sizing::SizingResult& r) {
  std::string why;
  switch (r.pacedWhy) {
    case sizing::PacedReason::kAsked: why = "as --paced asks"; break;
    case sizing::PacedReason::kOverMemory: why = "sized from the unbounded run they took more than the on-chip memory"; break;
    case sizing::PacedReason::kFewerBits:
      why = "fewer bits than sized from the unbounded run, within " + toleranceText(r) + " of its cycles";
      break;
    case sizing::PacedReason::kOverDevice: why = "sized from the unbounded run they did not fit the device (whole BRAM and URAM blocks)"; break;
    case sizing::PacedReason::kNone: break;
  }
  return "sized from a run with FIFOs as deep as the network's, writers at their readers' pace (" +
         std::to_string(r.cyclesPaced) + " cycles): " + why + "\n";
}

bool isOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

std::map<std::string, int64_t> importDims(const std::vector<std::string>& settings, const std::string& path) {
  std::map<std::string, int64_t> dims = parseCompileOptions(settings, defaultPlatform()).importDims;
  if (!dims.empty() && !isOnnxPath(path))
    throw UserError(path + ": error: --set dim." + dims.begin()->first +
                    ": only an ONNX model's dynamic axes are fixed at import, and this is not an ONNX model (a "
                    "graph or model file writes its sizes; a network keeps those it was compiled with)");
  return dims;
}

namespace {

// The dynamic axes an imported ONNX graph keeps as symbols (its inputs' symbolic dims), by name.
std::set<std::string> keptAxes(const Graph& g) {
  std::set<std::string> axes;
  for (const TensorDecl& t : g.inputs)
    for (const Expr& d : t.shape) axes.insert(d.symbols().begin(), d.symbols().end());
  return axes;
}

// How far a model gets with `dims` fixed: its import, then shape inference (as compileGraph starts).
struct ImportTrial {
  bool imported = false, shaped = false;
  std::string why;             // the first refusal, where either stopped
  std::set<std::string> kept;  // the axes the imported graph keeps as symbols
};

ImportTrial tryImport(const std::string& path, const std::map<std::string, int64_t>& dims,
                      bool overFreeAxes = false) {
  ImportTrial t;
  try {
    Graph g = importOnnx(path, dims, overFreeAxes);
    t.imported = true;
    t.kept = keptAxes(g);
    inferShapes(g);
    t.shaped = true;
  } catch (const UserError& e) {
    t.why = e.what();
  }
  return t;
}

}  // namespace

std::vector<std::string> fixBoundAxesAtImport(const std::string& command, const std::string& path,
                                              std::vector<std::string> settings, const Bindings& bindings) {
  if (!isOnnxPath(path) || bindings.empty()) return settings;
  const std::map<std::string, int64_t> dims = importDims(settings, path);
  const ImportTrial free = tryImport(path, dims);
  if (free.shaped) return settings;
  // Where the import stops: every bound axis its refusal names. Where it goes through and shape inference
  // stops (an op over a kept axis: a concat along it), every bound axis the graph keeps; and so again where
  // the import needed axes fixed and shape inference then stops. Then those not needed left out.
  std::map<std::string, int64_t> fixed = dims;
  for (const auto& [symbol, value] : bindings)
    if (!dims.count(symbol) &&
        (free.imported ? free.kept.count(symbol) > 0
                       : free.why.find("--set dim." + symbol + "=N") != std::string::npos))
      fixed[symbol] = value;
  if (fixed.size() == dims.size()) return settings;  // the import, run again, says why it stops
  ImportTrial trial = tryImport(path, fixed);
  bool shapes = free.imported;                     // shape inference needed an axis fixed
  std::string shapesWhy = shapes ? free.why : "";  // and stopped with this
  if (trial.imported && !trial.shaped) {
    std::map<std::string, int64_t> more = fixed;
    for (const auto& [symbol, value] : bindings)
      if (!more.count(symbol) && trial.kept.count(symbol)) more[symbol] = value;
    ImportTrial further = more.size() > fixed.size() ? tryImport(path, more) : ImportTrial{};
    if (further.shaped) {
      shapes = true;
      shapesWhy = trial.why;
      fixed = std::move(more);
      trial = std::move(further);
    }
  }
  if (shapes && !trial.shaped) return settings;  // not the axes: compiling says why
  // Where the import refuses nodes of its own beside the shape arithmetic (a Loop torch wrote for a
  // repeat_interleave), it still runs with the axes fixed: its refusal then names those nodes, not every
  // Shape and Gather the symbolic axis left unfolded.
  const bool folds = trial.imported;
  auto goes = [&](const std::map<std::string, int64_t>& fewer) {
    ImportTrial t = tryImport(path, fewer);
    return trial.shaped ? t.shaped : t.imported;
  };
  for (const auto& [symbol, value] : bindings) {
    if (!folds || dims.count(symbol) || !fixed.count(symbol) || fixed.size() == dims.size() + 1) continue;
    std::map<std::string, int64_t> fewer = fixed;
    fewer.erase(symbol);
    if (goes(fewer)) fixed = std::move(fewer);
  }
  std::string text;
  for (const auto& [symbol, value] : fixed) {
    if (dims.count(symbol)) continue;
    settings.push_back("dim." + symbol + "=" + std::to_string(value));
    text += (text.empty() ? "" : " ") + settings.back();
  }
  if (shapes) {  // the first error shape inference gave, without its file and "error: "
    std::string first = shapesWhy.substr(0, shapesWhy.find('\n'));
    if (size_t at = first.find("error: "); at != std::string::npos) first = first.substr(at + 7);
    std::cerr << command << ": note: " << path << ": " << first << ": imported with " << text
              << " from --bind, as --set " << text << " would (a design for that size alone)\n";
  } else if (folds)
    std::cerr << command << ": note: " << path
              << ": its shape arithmetic over a dynamic axis folds with the axis fixed: imported with "
              << text << " from --bind, as --set " << text << " would (a design for that size alone)\n";
  else
    std::cerr << command << ": note: " << path
              << ": its import refuses nodes beside the shape arithmetic over a dynamic axis: imported with "
              << text << " from --bind, as --set " << text << " would, to name them\n";
  return settings;
}

Graph importOnnxTold(const std::string& path, const std::map<std::string, int64_t>& dims) {
  Graph g = importOnnx(path, dims, /*overFreeAxes=*/true);
  static std::set<std::pair<std::string, std::map<std::string, int64_t>>> told;  // a command may import twice
  if (told.insert({path, dims}).second)
    for (const std::string& note : g.notes) std::cerr << "stc: note: " << note << "\n";
  // Shape inference refuses some ops over a symbol (a concat along it: torch.cat of a cache of `past`
  // positions and the new one). Where the model with its kept axes fixed goes through, the error says so.
  const std::set<std::string> axes = keptAxes(g);
  if (axes.empty()) return g;
  try {
    inferShapes(g);
  } catch (const UserError& e) {
    std::map<std::string, int64_t> fixed = dims;
    std::string fix, bind, list;
    for (const std::string& axis : axes) {
      fixed[axis] = g.maxima.count(axis) ? std::min<int64_t>(g.maxima.at(axis), 7) : 7;
      fix += (fix.empty() ? "" : " ") + std::string("--set dim.") + axis + "=N";
      bind += (bind.empty() ? "" : " ") + std::string("--bind ") + axis + "=N";
      list += (list.empty() ? "'" : ", '") + axis + "'";
    }
    bool fixedGoes = false;
    try {  // (a probe: whatever stops it, the error is the one above)
      fixedGoes = tryImport(path, fixed, true).shaped;
    } catch (...) {
    }
    if (!fixedGoes) throw;
    throw UserError(
        std::string(e.what()) + "\n(the graph keeps the model's dynamic " +
        (axes.size() > 1 ? "axes " : "axis ") + list + (axes.size() > 1 ? " symbols" : " a symbol") +
        ", which shape inference does not take there; fixed at import, the model goes through: " + fix +
        " compiles a design for one size, as " + bind + " does where a command runs it)");
  }
  return g;
}

Graph loadGraphFile(const std::string& path, const std::vector<std::string>& settings) {
  std::map<std::string, int64_t> dims = importDims(settings, path);
  if (isOnnxPath(path)) {
    Graph g = importOnnxTold(path, dims);
    std::string stem = path.substr(path.find_last_of('/') + 1);  // exporters name every graph alike
    g.name = stem.substr(0, stem.size() - 5);
    return g;
  }
  std::string text = readTextFile(path);
  if (detectFileKind(text, path) != FileKind::kGraph)
    throw UserError(path + ": error: expected a graph file (its first key 'graph') or an ONNX model");
  return parseGraph(text, path);
}

void requireBindings(const std::set<std::string>& symbols, const Bindings& bindings, const std::string& path,
                     const std::string& what) {
  for (const std::string& s : symbols)
    if (!bindings.count(s))
      throw UserError(path + ": error: the " + what + " uses symbol '" + s + "': bind it with " +
                      (s == "ctx" ? std::string("--ctx N") : "--bind " + s + "=N"));
}

void refuseUnusedBindings(const std::string& command, const std::set<std::string>& symbols,
                          const Bindings& given, const std::string& path,
                          const std::map<std::string, int64_t>& fixedAtImport) {
  for (const auto& [symbol, value] : given) {
    if (symbols.count(symbol) || symbol == "ctx") continue;  // --ctx: every command's, taken where it applies
    if (auto fixed = fixedAtImport.find(symbol); fixed != fixedAtImport.end()) {
      if (fixed->second == value) continue;  // said twice, alike
      throw UserError(command + ": error: --bind " + symbol + "=" + std::to_string(value) +
                      " disagrees with --set dim." + symbol + "=" + std::to_string(fixed->second) +
                      ", which fixed the axis at import");
    }
    std::string list;
    for (const std::string& s : symbols) list += (list.empty() ? "" : ", ") + s;
    throw UserError(command + ": error: --bind " + symbol + "=" + std::to_string(value) + ": " + path +
                    " has no symbol '" + symbol + "' (" +
                    (list.empty() ? std::string("it has none") : "its symbols: " + list) + ")");
  }
}

void refuseBeyondMaxima(const std::string& command, const Network& net, const Bindings& bindings,
                        const std::string& path) {
  for (const auto& [symbol, value] : bindings) {
    auto maximum = net.maxima.find(symbol);
    if (maximum == net.maxima.end() || value <= maximum->second) continue;
    throw UserError(command + ": error: " + (symbol == "ctx" ? "--ctx " : "--bind " + symbol + "=") +
                    std::to_string(value) + " is beyond the design's max_" + symbol + " (" +
                    std::to_string(maximum->second) + ", " + path +
                    " field 'maxima'): its kernels' buffers hold no more (compile it with --set max_" +
                    symbol + "=N)");
  }
}

Network NetworkInput::load(const std::string& command, const Platform& platformArg, Bindings& bindings,
                           const std::set<std::string>& ranged) const {
  if (isOnnxPath(path)) {
    bindings = parseSymbolBindings(command, ctx, binds);
    std::vector<std::string> fixed = fixBoundAxesAtImport(command, path, settings, bindings);
    Network net = compileGraph(importOnnxTold(path, importDims(fixed, path)), platformArg,
                               parseCompileOptions(fixed, platformArg))
                      .network;
    net.sourceFile = path;
    net.sourceSettings = fixed;
    for (const std::string& s : net.symbols())
      if (!bindings.count(s))
        throw UserError(path + ": error: the model uses symbol '" + s + "': bind it with --bind " + s + "=N");
    refuseUnusedBindings(command, net.symbols(), bindings, path, importDims(fixed, path));
    refuseBeyondMaxima(command, net, bindings, path);
    return net;
  }
  std::string text = readTextFile(path);
  FileKind kind = detectFileKind(text, path);
  if (kind != FileKind::kNetwork && kind != FileKind::kGraph)
    throw UserError(path + ": error: expected a network or a graph file (its first key 'network' or 'graph')");
  importDims(settings, path);  // refuses dim.AXIS: not an ONNX model
  Network net = kind == FileKind::kNetwork
                    ? parseNetwork(text, path)
                    : compileGraph(parseGraph(text, path), platformArg, parseCompileOptions(settings, platformArg)).network;
  if (kind == FileKind::kGraph) {  // what it was compiled from, as stc compile records it
    net.sourceFile = path;
    net.sourceSettings = settings;
  }
  bindings = parseSymbolBindings(command, ctx, binds);
  std::set<std::string> symbols;
  for (const std::string& s : net.symbols())
    if (!ranged.count(s)) symbols.insert(s);
  requireBindings(symbols, bindings, path, "network");
  refuseUnusedBindings(command, net.symbols(), bindings, path);
  refuseBeyondMaxima(command, net, bindings, path);
  return net;
}

std::vector<std::string> NetworkInput::compileSettings(const Network& net, bool& compiled) const {
  if (!net.sourceFile.empty()) {
    compiled = true;
    return net.sourceSettings;
  }
  compiled = isOnnxPath(path) || detectFileKind(readTextFile(path), path) == FileKind::kGraph;
  return compiled ? settings : std::vector<std::string>{};
}

std::optional<std::pair<int64_t, int64_t>> parseIntegerPair(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  try {
    size_t u1 = 0, u2 = 0;
    int64_t a = std::stoll(text.substr(0, colon), &u1), b = std::stoll(text.substr(colon + 1), &u2);
    if (u1 == colon && u2 == text.size() - colon - 1) return std::make_pair(a, b);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<int64_t> parseDepth(const std::string& text) {
  if (text == "unbounded") return kUnboundedDepth;
  size_t used = 0;
  int64_t depth = 0;
  try {
    depth = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || depth < 1) return std::nullopt;
  return depth;
}

std::map<std::string, int64_t> parseSetDepths(const std::string& command, const Network& net,
                                              const std::vector<std::string>& given, bool unbounded) {
  std::map<std::string, int64_t> out;
  for (const std::string& kv : given) {
    size_t eq = kv.find('=');
    std::string name = kv.substr(0, eq == std::string::npos ? kv.size() : eq);
    if (eq == std::string::npos || net.findFifo(name) < 0)
      throw UserError(command + ": error: --set-depth expects FIFO=N with a FIFO of the network, got '" + kv +
                      "'");
    std::optional<int64_t> depth = parseDepth(kv.substr(eq + 1));
    if (!depth || *depth > kMaxNumber || (!unbounded && *depth == kUnboundedDepth))
      throw UserError(command + ": error: --set-depth " + kv + ": the depth must be 1 to 2^40" +
                      (unbounded ? " or unbounded" : ""));
    out[name] = *depth;
  }
  return out;
}

void warnOutsideSizedRange(const Network& net, const std::string& path, const Bindings& bindings) {
  for (const auto& [symbol, range] : net.sizedFor) {
    auto b = bindings.find(symbol);
    if (b == bindings.end() || (b->second >= range.first && b->second <= range.second)) continue;
    std::cerr << path << ": warning: the FIFO depths were sized for " << symbol << " " << range.first << ".."
              << range.second << "; at " << symbol << " " << b->second
              << " they may deadlock or stall (size them again "
              << (symbol == "ctx" ? "with --ctx-range covering it" : "at that binding") << ")\n";
  }
}

std::string resourcesText(const Resources& used, const Platform& platform) {
  const Resources cap = platform.kernelResources();  // the shell's share aside
  char line[256];
  std::snprintf(line, sizeof line, "DSP %lld/%lld, BRAM_18K %lld/%lld, URAM %lld/%lld, LUT %lld/%lld: %s",
                static_cast<long long>(used.dsp), static_cast<long long>(cap.dsp),
                static_cast<long long>(used.bram18k), static_cast<long long>(cap.bram18k),
                static_cast<long long>(used.uram), static_cast<long long>(cap.uram),
                static_cast<long long>(used.lut), static_cast<long long>(cap.lut),
                used.within(cap) ? "fits" : "DOES NOT FIT");
  return line;
}

nlohmann::json resourcesJson(const Resources& used) {
  return {
      {"dsp", used.dsp}, {"bram18k", used.bram18k}, {"uram", used.uram}, {"lut", used.lut}, {"ff", used.ff}};
}

nlohmann::json sizedFifosJson(const std::vector<sizing::SizedFifo>& fifos) {
  nlohmann::json out = nlohmann::json::array();
  for (const sizing::SizedFifo& f : fifos)
    out.push_back({{"name", f.name},
                   {"depth", f.depth},
                   {"bits", f.bits},
                   {"memory", f.memory.kind},
                   {"max_occupancy", f.maxOccupancy},
                   {"tokens", f.tokens},
                   {"delay", f.delay}});
  return out;
}

nlohmann::json platformJson(const Platform& platform) {
  return {{"name", platform.name},
          {"clock_mhz", platform.kernelClockMhz},
          {"resources", resourcesJson(platform.resources)}};
}

std::optional<CompileResult> compileNetworkSource(const Network& file, const std::string& path,
                                                 const Platform& platform, bool strict) {
  if (networkSourcePath(file, path).empty()) return std::nullopt;
  try {
    return compileGraph(loadNetworkSourceGraph(file, path, "stc"), platform,
                        parseCompileOptions(file.sourceSettings, platform));
  } catch (const UserError&) {
    if (strict) throw;  // the source no longer compiles: that is the error
  }
  return std::nullopt;
}

Resources networkResources(const Network& file, const Network& used, const std::string& path,
                           const Platform& platform, const std::string& fifos, bool strict,
                           std::string& what, std::pair<int64_t, int64_t>* intermediate) {
  return resourcesAtDepths(compileNetworkSource(file, path, platform, strict), file, used, path, platform, fifos,
                           what, intermediate);
}

Resources resourcesAtDepths(const std::optional<CompileResult>& source, const Network& file, const Network& used,
                            const std::string& path, const Platform& platform, const std::string& fifos,
                            std::string& what, std::pair<int64_t, int64_t>* intermediate) {
  if (intermediate) *intermediate = {-1, 0};
  if (source) {
    try {
      CompileResult c = *source;
      takeDepths(used, path, c.network);
      updateResources(c, platform);
      what = "the design with its " + fifos;
      if (intermediate) *intermediate = {intermediateBytesAtDepths(c), c.report.onchipBytesUnfused};
      return c.report.resources;
    } catch (const UserError&) {  // the source changed since: its kernels are not this network's
    }
  }
  Resources r;
  for (const Fifo& f : used.fifos) r += fifoResources(f);
  what = "the " + fifos +
         (file.sourceFile.empty() ? " (the network has no source to count its kernels from)"
                                  : " (the network's source cannot be read or no longer compiles to it)");
  return r;
}

nlohmann::json simulationJson(const Network& net, const Bindings& bindings, const Platform& platform) {
  Bindings at = bindings;
  for (const auto& [symbol, range] : net.sizedFor) at.emplace(symbol, range.second);
  sim::RunConfig config;
  config.recordCurves = config.recordStalls = true;
  sim::SimResult run = sim::runDirect(sim::compileProgram(net, at, platform), config);
  nlohmann::json out = sim::resultJson(run, std::nullopt, platform.kernelClockMhz);
  out["bindings"] = at;
  out["timeline"] = report::timelineJson(net, run);
  return out;
}

void writeHtmlReport(const std::string& path, const nlohmann::json& result) {
  // Drawn from the JSON as --json prints it (invalid UTF-8 replaced), so that stc report of the saved
  // result draws the same page.
  nlohmann::json printed =
      nlohmann::json::parse(result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::string page = report::renderHtml(printed, path);
  writeFileAtomic(path, page);
}

nlohmann::json rangeChecksJson(const std::vector<sizing::RangeCheck>& checks) {
  nlohmann::json out = nlohmann::json::array();
  for (const sizing::RangeCheck& c : checks)
    out.push_back({{"ctx", c.value},
                   {"cycles", c.cycles},
                   {"cycles_unbounded", c.unbounded},
                   {"sampled", c.sampled},
                   {"within_bound", c.ok}});
  return out;
}

void requireFit(const std::string& command, const std::string& what, const Resources& used,
                const Platform& platform, bool allowOverfit) {
  // The kernels' share (the shell's aside), as every resource line and report's `fits` count it.
  const Resources cap = platform.kernelResources();
  if (allowOverfit || used.within(cap)) return;
  std::string over;
  auto check = [&](const char* name, int64_t got, int64_t limit) {
    if (got > limit)
      over += (over.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(got) + " > " +
              std::to_string(limit);
  };
  check("DSP", used.dsp, cap.dsp);
  check("BRAM_18K", used.bram18k, cap.bram18k);
  check("URAM", used.uram, cap.uram);
  check("LUT", used.lut, cap.lut);
  check("FF", used.ff, cap.ff);
  throw UserError(command + ": error: " + what + " does not fit " + platform.name + ": " + over +
                  (command == "stc simulate"
                       ? " (pass --allow-overfit to predict it anyway)"
                       : "; nothing was written (pass --allow-overfit to write it anyway)"));
}

std::string networkSourcePath(const Network& net, const std::string& path) {
  const std::string& src = net.sourceFile;
  if (src.empty()) return "";
  std::error_code ec;
  if (std::filesystem::exists(src, ec)) return src;
  std::string beside = (std::filesystem::path(path).parent_path() / src).string();
  return std::filesystem::path(src).is_relative() && std::filesystem::exists(beside, ec) ? beside : "";
}

Graph loadNetworkSourceGraph(const Network& net, const std::string& path, const std::string& command) {
  if (net.sourceFile.empty())
    throw UserError(
        path + ": error: " + command +
        " needs what the kernels compute, and this network file holds their timing only (it has no "
        "'source', as `stc compile` writes): pass the graph, ONNX or model file instead");
  std::string resolved = networkSourcePath(net, path);
  if (resolved.empty())
    throw UserError(path + ": error: field 'source': the network was compiled from '" + net.sourceFile +
                    "', which cannot be read");
  return loadGraphFile(resolved, net.sourceSettings);
}

void takeDepths(const Network& file, const std::string& path, Network& compiled) {
  auto mismatch = [&](const std::string& what) {
    throw UserError(path + ": error: the network no longer matches what its source compiles to (" + what +
                    "); compile it again");
  };
  if (file.tasks.size() != compiled.tasks.size() || file.fifos.size() != compiled.fifos.size())
    mismatch(std::to_string(file.tasks.size()) + " tasks and " + std::to_string(file.fifos.size()) +
             " FIFOs, against " + std::to_string(compiled.tasks.size()) + " and " +
             std::to_string(compiled.fifos.size()));
  for (size_t i = 0; i < file.tasks.size(); ++i) {
    if (file.tasks[i].name != compiled.tasks[i].name) mismatch("task '" + file.tasks[i].name + "'");
    if (file.tasks[i].phases.size() != compiled.tasks[i].phases.size())
      mismatch("the phases of task '" + file.tasks[i].name + "'");
    for (size_t p = 0; p < file.tasks[i].phases.size(); ++p)  // drained pipelines (outer) are the compiler's
      if (file.tasks[i].phases[p].outer != compiled.tasks[i].phases[p].outer)
        mismatch("field 'outer' of task '" + file.tasks[i].name + "'");
  }
  for (size_t i = 0; i < file.fifos.size(); ++i) {
    const Fifo& f = file.fifos[i];
    if (f.name != compiled.fifos[i].name) mismatch("FIFO '" + f.name + "'");
    if (f.unbounded())
      throw UserError(path + ": error: FIFO '" + f.name +
                      "' is unbounded: size the FIFOs first (stc size-fifos)");
    compiled.fifos[i].depth = f.depth;
  }
}

Runner addUnimplemented(CLI::App& app, const std::string& name, const std::string& description) {
  app.allow_extras();
  return [name, description]() {
    std::cerr << "stc " << name << ": unsupported: " << description << " is not implemented in this build yet\n";
    return 1;
  };
}

}  // namespace stc::cli
