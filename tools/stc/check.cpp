// stc check FILE: validates a network, graph, model or platform file and prints a one-line summary, or every
// error found; --json says the same as one object.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/model_spec.h"
#include "compiler/ir/platform.h"
#include "compiler/ir/yaml_io.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

struct Checked {
  std::string summary;  ///< the line after "FILE: ", without ": ok"
  nlohmann::json facts;
};

nlohmann::json opCounts(const Graph& g) {
  std::map<std::string, int> kinds;
  for (const auto& op : g.ops) ++kinds[op.op];
  return kinds;
}

Checked checkFile(const std::string& path, const std::vector<std::string>& settings) {
  Checked c;
  std::ostringstream s;
  for (const std::string& kv : settings)
    if (kv.rfind("dim.", 0) != 0)
      throw UserError("stc check: error: --set takes dim.AXIS=N (an ONNX model's dynamic axis), got '" + kv + "'");
  std::map<std::string, int64_t> dims = importDims(settings, path);
  if (isOnnxPath(path)) {
    Graph g = importOnnxTold(path, dims);
    verifyGraph(g).throwIfAny();
    inferShapes(g);  // every op's shapes, as stc compile checks them first
    s << "ONNX model '" << g.name << "': " << g.inputs.size() << " inputs, " << g.weights.size()
      << " weights, " << g.ops.size() << " ops:";
    nlohmann::json ops = opCounts(g);
    for (const auto& [k, n] : ops.items()) s << " " << k << " " << n.get<int>();
    c.facts = {
        {"kind", "onnx"},      {"name", g.name},  {"inputs", g.inputs.size()}, {"weights", g.weights.size()},
        {"ops", g.ops.size()}, {"op_counts", ops}};
    c.summary = s.str();
    return c;
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
      s << "network '" << net.name << "': " << net.tasks.size() << " tasks (" << dmas << " DMA), "
        << net.fifos.size() << " FIFOs, " << ports << " ports";
      auto symbols = net.symbols();
      if (!symbols.empty()) {
        s << ", symbols";
        for (const auto& sym : symbols) s << " " << sym;
      }
      c.facts = {{"kind", "network"},         {"name", net.name}, {"tasks", net.tasks.size()}, {"dmas", dmas},
                 {"fifos", net.fifos.size()}, {"ports", ports},   {"symbols", symbols}};
      break;
    }
    case FileKind::kGraph: {
      Graph g = parseGraph(text, path);
      verifyGraph(g).throwIfAny();
      inferShapes(g);
      s << "graph '" << g.name << "': " << g.inputs.size() << " inputs, " << g.weights.size() << " weights, "
        << g.ops.size() << " ops, " << g.outputs.size() << " outputs";
      c.facts = {{"kind", "graph"},           {"name", g.name},
                 {"inputs", g.inputs.size()}, {"weights", g.weights.size()},
                 {"ops", g.ops.size()},       {"outputs", g.outputs.size()},
                 {"op_counts", opCounts(g)}};
      break;
    }
    case FileKind::kPlatform: {
      Platform p = parsePlatform(text, path);
      s << "platform '" << p.name << "': " << p.kernelClockMhz << " MHz, " << p.hbm.channels
        << " HBM channels of " << p.hbm.channelGbps << " GB/s, " << p.resources.dsp << " DSP";
      c.facts = {{"kind", "platform"},
                 {"name", p.name},
                 {"kernel_clock_mhz", p.kernelClockMhz},
                 {"hbm_channels", p.hbm.channels},
                 {"hbm_channel_gbps", p.hbm.channelGbps},
                 {"resources", resourcesJson(p.resources)}};
      break;
    }
    case FileKind::kModel: {
      ModelSpec m = parseModel(text, path);
      s << "model '" << m.name << "' (" << m.family << "): " << m.layers << " layers, hidden " << m.hidden
        << ", " << m.heads << " heads (" << m.kvHeads << " KV), FFN " << m.ffn << ", " << m.quant;
      c.facts = {{"kind", "model"},    {"name", m.name},     {"family", m.family},    {"layers", m.layers},
                 {"hidden", m.hidden}, {"heads", m.heads},   {"kv_heads", m.kvHeads}, {"ffn", m.ffn},
                 {"quant", m.quant},   {"max_ctx", m.maxCtx}};
      break;
    }
    case FileKind::kUnknown:
      throw UserError(
          path +
          ":1:1: error: not a network, graph, model or platform file (expected a first key 'network', "
          "'graph', 'model' or 'platform')");
  }
  c.summary = s.str();
  return c;
}

// "FILE:LINE:COL: error: TEXT" -> {message, line, column}; line and column only where the message has
// them after the file's name.
nlohmann::json errorJson(const std::string& path, const std::string& message) {
  nlohmann::json e{{"message", message}};
  if (message.rfind(path + ":", 0) != 0) return e;
  std::istringstream rest(message.substr(path.size() + 1));
  long line = 0, column = 0;
  char colon1 = 0, colon2 = 0;
  if (rest >> line >> colon1 >> column >> colon2 && colon1 == ':' && colon2 == ':') {
    e["line"] = line;
    e["column"] = column;
  }
  return e;
}

int check(const std::string& path, bool json, const std::vector<std::string>& settings) {
  if (!json) {
    std::string summary = checkFile(path, settings).summary;  // before anything is printed: it may throw
    std::cout << path << ": " << summary << ": ok\n";
    return 0;
  }
  nlohmann::json out{{"file", path}};
  int code = 0;
  try {
    Checked c = checkFile(path, settings);
    out.update(c.facts);
    out["ok"] = true;
  } catch (const UserError& e) {  // every message the file got, one per line
    out["ok"] = false;
    out["errors"] = nlohmann::json::array();
    std::istringstream lines(e.what());
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) out["errors"].push_back(errorJson(path, line));
    code = 1;
  }
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return code;
}

}  // namespace

Runner addCheck(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto settings = std::make_shared<std::vector<std::string>>();
  app.add_option("file", *path, "network, graph, model, platform or ONNX file")->required();
  app.add_flag("--json", *json, "print one JSON object: the file's facts, or its errors (exit 1)");
  app.add_option("--set", *settings, "dim.AXIS=N: an ONNX model's dynamic axis fixed at import");
  return [path, json, settings]() { return check(*path, *json, *settings); };
}

}  // namespace stc::cli
