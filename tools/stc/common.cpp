// Helpers shared by the subcommands.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/diagnostics.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/pipeline.h"
#include "tools/stc/commands.h"

namespace stc::cli {

void checkOutputPaths(const std::vector<std::string>& paths) {
  for (const std::string& path : paths)
    if (path == "-")
      throw UserError("-: error: stc writes files, not standard output here: give a file name");
}

void writeFileAtomic(const std::string& path, const std::string& text) {
  checkOutputPaths({path});
  // The host in the temporary's name too: tasks on several machines may write one shared folder.
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  std::string tmp = path + ".tmp." + host + "." + std::to_string(::getpid());
  auto fail = [&](int err) {
    std::remove(tmp.c_str());
    return UserError(path + ": error: cannot write the file: " + std::strerror(err));
  };
  {
    errno = 0;  // what the stream leaves in errno is its failure's, not an earlier call's
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw fail(errno != 0 ? errno : EIO);
    out << text;
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

std::string pacedLine(int64_t cyclesPaced) {
  return "sized from a run with FIFOs as deep as the network's (" + std::to_string(cyclesPaced) +
         " cycles): sized from the unbounded run they took more than the on-chip memory\n";
}

bool isOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

Graph loadGraphFile(const std::string& path) {
  if (isOnnxPath(path)) {
    Graph g = importOnnx(path);
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

Network NetworkInput::load(const std::string& command, const Platform& platformArg, Bindings& bindings) const {
  if (isOnnxPath(path)) {
    bindings = parseSymbolBindings(command, ctx, binds);
    Network net = compileGraph(importOnnx(path), platformArg, parseCompileOptions(settings, platformArg)).network;
    for (const std::string& s : net.symbols())
      if (!bindings.count(s))
        throw UserError(path + ": error: the model uses symbol '" + s + "': bind it with --bind " + s + "=N");
    return net;
  }
  std::string text = readTextFile(path);
  FileKind kind = detectFileKind(text, path);
  if (kind != FileKind::kNetwork && kind != FileKind::kGraph)
    throw UserError(path + ": error: expected a network or a graph file (its first key 'network' or 'graph')");
  Network net = kind == FileKind::kNetwork
                    ? parseNetwork(text, path)
                    : compileGraph(parseGraph(text, path), platformArg, parseCompileOptions(settings, platformArg)).network;
  bindings = parseSymbolBindings(command, ctx, binds);
  requireBindings(net.symbols(), bindings, path, "network");
  return net;
}

Runner addUnimplemented(CLI::App& app, const std::string& name, const std::string& description) {
  app.allow_extras();
  return [name, description]() {
    std::cerr << "stc " << name << ": unsupported: " << description << " is not implemented in this build yet\n";
    return 1;
  };
}

}  // namespace stc::cli
