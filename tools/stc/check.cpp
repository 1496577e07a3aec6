// stc check FILE: validates a network, graph, model or platform file and prints a one-line summary, or every
// error found.
#include <iostream>

#include <map>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/model_spec.h"
#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

int check(const std::string& path) {
  if (isOnnxPath(path)) {
    Graph g = importOnnx(path);
    verifyGraph(g).throwIfAny();
    std::cout << path << ": ONNX model '" << g.name << "': " << g.inputs.size() << " inputs, " << g.weights.size()
              << " weights, " << g.ops.size() << " ops:";
    std::map<std::string, int> kinds;
    for (const auto& op : g.ops) ++kinds[op.op];
    for (const auto& [k, n] : kinds) std::cout << " " << k << " " << n;
    std::cout << ": ok\n";
    return 0;
  }
  std::string text = readTextFile(path);
  switch (detectFileKind(text, path)) {
    case FileKind::kNetwork: {
      Network net = parseNetwork(text, path);
      verifyNetwork(net).throwIfAny();
      size_t ports = 0, dmas = 0;
      for (const auto& t : net.tasks) {
        dmas += t.isDma();
        for (const auto& ph : t.phases) ports += ph.ports.size();
      }
      std::cout << path << ": network '" << net.name << "': " << net.tasks.size() << " tasks (" << dmas << " DMA), "
                << net.fifos.size() << " FIFOs, " << ports << " ports";
      auto symbols = net.symbols();
      if (!symbols.empty()) {
        std::cout << ", symbols";
        for (const auto& s : symbols) std::cout << " " << s;
      }
      std::cout << ": ok\n";
      return 0;
    }
    case FileKind::kGraph: {
      Graph g = parseGraph(text, path);
      verifyGraph(g).throwIfAny();
      std::cout << path << ": graph '" << g.name << "': " << g.inputs.size() << " inputs, " << g.weights.size()
                << " weights, " << g.ops.size() << " ops, " << g.outputs.size() << " outputs: ok\n";
      return 0;
    }
    case FileKind::kPlatform: {
      Platform p = parsePlatform(text, path);
      std::cout << path << ": platform '" << p.name << "': " << p.kernelClockMhz << " MHz, " << p.hbm.channels
                << " HBM channels of " << p.hbm.channelGbps << " GB/s, " << p.resources.dsp << " DSP: ok\n";
      return 0;
    }
    case FileKind::kModel: {
      ModelSpec m = parseModel(text, path);
      std::cout << path << ": model '" << m.name << "' (" << m.family << "): " << m.layers << " layers, hidden "
                << m.hidden << ", " << m.heads << " heads (" << m.kvHeads << " KV), FFN " << m.ffn << ", " << m.quant
                << ": ok\n";
      return 0;
    }
    case FileKind::kUnknown: break;
  }
  throw UserError(path + ":1:1: error: not a network, graph, model or platform file (expected a first key 'network', "
                         "'graph', 'model' or 'platform')");
}

}  // namespace

Runner addCheck(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  app.add_option("file", *path, "network, graph or platform file")->required();
  return [path]() { return check(*path); };
}

}  // namespace stc::cli
