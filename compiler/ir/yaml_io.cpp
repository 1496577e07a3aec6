// Reading and writing the toolkit's YAML files with yaml-cpp. Every value is fetched through a helper
// that knows its field name and the node's Mark, so an error reads
//   models/networks/x.yaml:12:18: error: field 'ii': expected an integer, got 'fast'
#include "compiler/ir/yaml_io.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/ir/model_spec.h"
#include "compiler/ir/platform.h"

extern const char kDefaultPlatformYaml[];  // configs/u55c.yaml, embedded by cmake/Embed.cmake
extern const char kU280PlatformYaml[];     // configs/u280.yaml

namespace stc {

std::string readTextFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (std::filesystem::exists(path, ec)) throw UserError(path + ": error: not a regular file");
    throw UserError(path + ": error: cannot open the file");
  }
  if (std::filesystem::file_size(path, ec) > (int64_t{1} << 30)) throw UserError(path + ": error: larger than 1 GiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": error: cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UserError(path + ": error: cannot read the file");
  return ss.str();
}

namespace {

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  YAML::Node load(const std::string& text) {
    try {
      return YAML::Load(text);
    } catch (const YAML::Exception& e) {
      fail(loc(e.mark), "malformed YAML: " + e.msg);
    }
  }

  SourceLoc loc(const YAML::Mark& m) const {
    if (m.is_null()) return SourceLoc{file_, 0, 0};
    return SourceLoc{file_, m.line + 1, m.column + 1};
  }
  SourceLoc loc(const YAML::Node& n) const { return loc(n.Mark()); }

  [[noreturn]] void error(const YAML::Node& n, const std::string& field, const std::string& msg) const {
    fail(loc(n), "field '" + field + "': " + msg);
  }

  void expectMap(const YAML::Node& n, const std::string& what) const {
    if (!n.IsMap()) error(n, what, "expected a mapping");
  }
  void expectSeq(const YAML::Node& n, const std::string& what) const {
    if (!n.IsSequence()) error(n, what, "expected a list");
  }

  /// Rejects keys outside `allowed`, so a typo does not pass silently.
  void onlyKeys(const YAML::Node& map, std::initializer_list<const char*> allowed, const std::string& what) const {
    for (const auto& kv : map) {
      std::string key = kv.first.Scalar();
      bool ok = false;
      std::string list;
      for (const char* a : allowed) {
        ok = ok || key == a;
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!ok) fail(loc(kv.first), "field '" + key + "': unknown field of " + what + " (known: " + list + ")");
    }
  }

  YAML::Node required(const YAML::Node& map, const char* key, const std::string& what) const {
    YAML::Node n = map[key];
    if (!n) fail(loc(map), "field '" + std::string(key) + "': missing in " + what);
    return n;
  }

  std::string str(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) error(n, field, "expected a string");
    return n.Scalar();
  }
  int64_t integer(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) error(n, field, "expected an integer");
    const std::string& s = n.Scalar();
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(s, &used, 0);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size()) error(n, field, "expected an integer, got '" + s + "'");
    if (v > kMaxNumber || v < -kMaxNumber) error(n, field, "number too large (at most 2^40), got '" + s + "'");
    return v;
  }
  double real(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) error(n, field, "expected a number");
    const std::string& s = n.Scalar();
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size()) error(n, field, "expected a number, got '" + s + "'");
    return v;
  }
  Expr expr(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) error(n, field, "expected an integer or an expression such as 'ctx/16'");
    try {
      return Expr::parse(n.Scalar());
    } catch (const UserError& e) {
      error(n, field, e.what());
    }
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

Port readPort(const Reader& r, const YAML::Node& n, bool kernel) {
  r.expectMap(n, "ports");
  if (kernel) r.onlyKeys(n, {"fifo", "dir", "level", "type"}, "a port");
  else r.onlyKeys(n, {"fifo", "dir", "type"}, "a DMA port");
  Port p;
  p.loc = r.loc(n);
  p.fifo = r.str(r.required(n, "fifo", "a port"), "fifo");
  YAML::Node dir = r.required(n, "dir", "a port");
  std::string d = r.str(dir, "dir");
  if (d == "in") p.dir = PortDir::kIn;
  else if (d == "out") p.dir = PortDir::kOut;
  else r.error(dir, "dir", "expected 'in' or 'out', got '" + d + "'");
  if (n["level"]) p.level = static_cast<int>(r.integer(n["level"], "level"));
  if (n["type"]) {
    try {
      p.type = ITensorType::parse(r.str(n["type"], "type"));
    } catch (const UserError& e) {
      r.error(n["type"], "type", e.what());
    }
  }
  return p;
}

}  // namespace

Network parseNetwork(const std::string& text, const std::string& file) {
  Reader r(file);
  YAML::Node root = r.load(text);
  if (!root || !root.IsMap()) fail(r.loc(root), "a network file must be a mapping with 'network', 'fifos', 'tasks'");
  r.onlyKeys(root, {"network", "source", "sized_for", "maxima", "fifos", "tasks"}, "a network");
  Network net;
  net.loc = r.loc(root);
  net.name = r.str(r.required(root, "network", "a network file"), "network");
  if (YAML::Node src = root["source"]) {
    r.expectMap(src, "source");
    r.onlyKeys(src, {"file", "settings"}, "a network's source");
    net.sourceFile = r.str(r.required(src, "file", "a network's source"), "file");
    if (YAML::Node settings = src["settings"]) {
      r.expectSeq(settings, "settings");
      for (const auto& s : settings) net.sourceSettings.push_back(r.str(s, "settings"));
    }
  }
  if (YAML::Node sizedFor = root["sized_for"]) {  // {SYMBOL: [LOW, HIGH]}
    r.expectMap(sizedFor, "sized_for");
    for (const auto& kv : sizedFor) {
      std::string symbol = r.str(kv.first, "sized_for");
      std::vector<int64_t> range;
      if (kv.second.IsSequence())
        for (const auto& e : kv.second) range.push_back(r.integer(e, "sized_for"));
      if (range.size() != 2 || range[0] < 1 || range[0] > range[1])
        fail(r.loc(kv.second), "field 'sized_for': " + symbol + " needs [LOW, HIGH], 1 <= LOW <= HIGH");
      net.sizedFor[symbol] = {range[0], range[1]};
    }
  }
  if (YAML::Node maxima = root["maxima"]) {  // {SYMBOL: N}
    r.expectMap(maxima, "maxima");
    for (const auto& kv : maxima) {
      std::string symbol = r.str(kv.first, "maxima");
      int64_t maximum = r.integer(kv.second, "maxima");
      if (maximum < 1) fail(r.loc(kv.second), "field 'maxima': " + symbol + " needs a maximum of at least 1");
      net.maxima[symbol] = maximum;
    }
  }
  YAML::Node fifos = root["fifos"];
  if (fifos) {
    r.expectSeq(fifos, "fifos");
    for (const auto& f : fifos) {
      r.expectMap(f, "fifos");
      r.onlyKeys(f, {"name", "width", "depth"}, "a FIFO");
      Fifo fifo;
      fifo.loc = r.loc(f);
      fifo.name = r.str(r.required(f, "name", "a FIFO"), "name");
      fifo.width = r.integer(r.required(f, "width", "a FIFO"), "width");
      if (f["depth"]) {
        if (f["depth"].IsScalar() && f["depth"].Scalar() == "unbounded") fifo.depth = kUnboundedDepth;
        else fifo.depth = r.integer(f["depth"], "depth");
        if (fifo.depth <= 0 && fifo.depth != kUnboundedDepth)
          r.error(f["depth"], "depth", "expected a positive integer or 'unbounded'");
      }
      net.fifos.push_back(fifo);
    }
  }
  YAML::Node tasks = r.required(root, "tasks", "a network file");
  r.expectSeq(tasks, "tasks");
  for (const auto& t : tasks) {
    r.expectMap(t, "tasks");
    Task task;
    task.loc = r.loc(t);
    task.name = r.str(r.required(t, "name", "a task"), "name");
    std::string kind = t["kind"] ? r.str(t["kind"], "kind") : "kernel";
    if (kind == "kernel") task.kind = TaskKind::kKernel;
    else if (kind == "dma_read") task.kind = TaskKind::kDmaRead;
    else if (kind == "dma_write") task.kind = TaskKind::kDmaWrite;
    else r.error(t["kind"], "kind", "expected kernel, dma_read or dma_write, got '" + kind + "'");
    if (t["group"]) {
      int64_t g = r.integer(t["group"], "group");
      if (g < 0 || g > 1'000'000) r.error(t["group"], "group", "expected a group number from 0");
      task.group = static_cast<int>(g);
    }
    if (t["slr"]) {
      int64_t slr = r.integer(t["slr"], "slr");
      if (slr < 0 || slr > 64) r.error(t["slr"], "slr", "expected an SLR number from 0");
      task.slr = static_cast<int>(slr);
    }
    if (task.isDma()) {
      r.onlyKeys(t, {"name", "kind", "group", "slr", "channel", "port", "bytes", "ports"}, "a DMA task");
      task.channel = static_cast<int>(r.integer(r.required(t, "channel", "a DMA task"), "channel"));
      if (t["port"]) task.axiPort = static_cast<int>(r.integer(t["port"], "port"));
      task.bytes = r.expr(r.required(t, "bytes", "a DMA task"), "bytes");
      YAML::Node ports = r.required(t, "ports", "a DMA task");
      r.expectSeq(ports, "ports");
      for (const auto& p : ports) task.dmaPorts.push_back(readPort(r, p, false));
    } else {
      r.onlyKeys(t, {"name", "kind", "group", "slr", "phases"}, "a task");
      YAML::Node phases = r.required(t, "phases", "a task");
      r.expectSeq(phases, "phases");
      for (const auto& ph : phases) {
        r.expectMap(ph, "phases");
        r.onlyKeys(ph, {"trip", "ii", "latency", "outer", "ports"}, "a phase");
        Phase phase;
        phase.loc = r.loc(ph);
        YAML::Node trip = r.required(ph, "trip", "a phase");
        r.expectSeq(trip, "trip");
        for (const auto& e : trip) phase.trip.push_back(r.expr(e, "trip"));
        if (ph["ii"]) phase.ii = r.integer(ph["ii"], "ii");
        if (ph["latency"]) phase.latency = r.integer(ph["latency"], "latency");
        if (ph["outer"])  // verifyNetwork checks it against the nest
          phase.outer = static_cast<int>(std::clamp<int64_t>(r.integer(ph["outer"], "outer"), -1, 1 << 20));
        YAML::Node ports = r.required(ph, "ports", "a phase");
        r.expectSeq(ports, "ports");
        for (const auto& p : ports) phase.ports.push_back(readPort(r, p, true));
        task.phases.push_back(phase);
      }
    }
    net.tasks.push_back(task);
  }
  return net;
}

Network loadNetwork(const std::string& path) { return parseNetwork(readTextFile(path), path); }

namespace {

void emitPort(YAML::Emitter& out, const Port& p) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "fifo" << YAML::Value << p.fifo << YAML::Key << "dir"
      << YAML::Value << (p.dir == PortDir::kIn ? "in" : "out");
  if (p.level) out << YAML::Key << "level" << YAML::Value << *p.level;
  if (p.type) out << YAML::Key << "type" << YAML::Value << YAML::DoubleQuoted << p.type->str();
  out << YAML::EndMap;
}

}  // namespace

std::string emitNetwork(const Network& net) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "network" << YAML::Value << net.name;
  if (!net.sourceFile.empty()) {
    out << YAML::Key << "source" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "file" << YAML::Value
        << net.sourceFile;
    if (!net.sourceSettings.empty()) {
      out << YAML::Key << "settings" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& s : net.sourceSettings) out << s;
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  if (!net.sizedFor.empty()) {
    out << YAML::Key << "sized_for" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [symbol, range] : net.sizedFor)
      out << YAML::Key << symbol << YAML::Value << YAML::Flow << YAML::BeginSeq << range.first << range.second
          << YAML::EndSeq;
    out << YAML::EndMap;
  }
  if (!net.maxima.empty()) {
    out << YAML::Key << "maxima" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [symbol, maximum] : net.maxima) out << YAML::Key << symbol << YAML::Value << maximum;
    out << YAML::EndMap;
  }
  out << YAML::Key << "fifos" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : net.fifos) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << f.name << YAML::Key << "width"
        << YAML::Value << f.width << YAML::Key << "depth" << YAML::Value;
    if (f.unbounded()) out << "unbounded";
    else out << f.depth;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::Key << "tasks" << YAML::Value << YAML::BeginSeq;
  for (const auto& t : net.tasks) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << t.name;
    if (t.group != 0) out << YAML::Key << "group" << YAML::Value << t.group;
    if (t.slr >= 0) out << YAML::Key << "slr" << YAML::Value << t.slr;
    if (t.isDma()) {
      out << YAML::Key << "kind" << YAML::Value << taskKindName(t.kind) << YAML::Key << "channel" << YAML::Value
          << t.channel;
      if (t.axiPort >= 0) out << YAML::Key << "port" << YAML::Value << t.axiPort;
      out << YAML::Key << "bytes" << YAML::Value;
      if (t.bytes.isConstant()) out << t.bytes.eval();
      else out << t.bytes.str();
      out << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq;
      for (const auto& p : t.dmaPorts) emitPort(out, p);
      out << YAML::EndSeq;
    } else {
      out << YAML::Key << "phases" << YAML::Value << YAML::BeginSeq;
      for (const auto& ph : t.phases) {
        out << YAML::BeginMap << YAML::Key << "trip" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& e : ph.trip) {
          if (e.isConstant()) out << e.eval();
          else out << e.str();
        }
        out << YAML::EndSeq << YAML::Key << "ii" << YAML::Value << ph.ii << YAML::Key << "latency"
            << YAML::Value << ph.latency;
        if (ph.outer > 0) out << YAML::Key << "outer" << YAML::Value << ph.outer;
        out << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq;
        for (const auto& p : ph.ports) emitPort(out, p);
        out << YAML::EndSeq << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {

// The most elements a `fill` weight may hold (64 MB of f32 values).
constexpr int64_t kMaxFillElements = int64_t{1} << 24;

TensorDecl readTensor(const Reader& r, const YAML::Node& n, const char* list) {
  r.expectMap(n, list);
  if (std::string(list) == "weights")
    r.onlyKeys(n, {"name", "shape", "dtype", "fill"}, "a weight");
  else
    r.onlyKeys(n, {"name", "shape", "dtype"}, "a tensor");
  TensorDecl t;
  t.loc = r.loc(n);
  t.name = r.str(r.required(n, "name", "a tensor"), "name");
  YAML::Node shape = r.required(n, "shape", "a tensor");
  r.expectSeq(shape, "shape");
  for (const auto& d : shape) t.shape.push_back(r.expr(d, "shape"));
  if (n["dtype"]) t.dtype = r.str(n["dtype"], "dtype");
  return t;
}

AttrValue readAttr(const Reader& r, const YAML::Node& n, const std::string& key) {
  if (n.IsSequence()) {  // integers, or sizes over symbols (a reshape's [seq, 16, 64])
    std::vector<int64_t> v;
    std::vector<Expr> sizes;
    bool symbolic = false;
    for (const auto& e : n) {
      if (!e.IsScalar()) r.error(e, key, "expected an integer or a size such as seq or 4*seq");
      bool letters = std::any_of(e.Scalar().begin(), e.Scalar().end(), [](char c) {
        return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
      });
      if (!letters || e.Scalar().rfind("0x", 0) == 0) {
        v.push_back(r.integer(e, key));
        sizes.push_back(Expr(v.back()));
        continue;
      }
      symbolic = true;
      try {
        sizes.push_back(Expr::parse(e.Scalar()));
      } catch (const UserError& err) {
        r.error(e, key, std::string("a size that does not parse: ") + err.what());
      }
    }
    if (symbolic) return sizesAttr(sizes);
    return v;
  }
  if (!n.IsScalar()) r.error(n, key, "expected a number, a string or a list of integers");
  const std::string& s = n.Scalar();
  size_t used = 0;
  try {
    int64_t i = std::stoll(s, &used, 10);
    if (used == s.size()) return i;
  } catch (const std::exception&) {
  }
  try {
    double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

}  // namespace

Graph parseGraph(const std::string& text, const std::string& file) {
  Reader r(file);
  YAML::Node root = r.load(text);
  if (!root || !root.IsMap()) fail(r.loc(root), "a graph file must be a mapping with 'graph', 'inputs', 'ops'");
  r.onlyKeys(root, {"graph", "inputs", "weights", "ops", "outputs"}, "a graph");
  Graph g;
  g.loc = r.loc(root);
  g.name = r.str(r.required(root, "graph", "a graph file"), "graph");
  for (const char* list : {"inputs", "weights"}) {
    YAML::Node n = root[list];
    if (!n) continue;
    r.expectSeq(n, list);
    for (const auto& t : n) (std::string(list) == "inputs" ? g.inputs : g.weights).push_back(readTensor(r, t, list));
  }
  // A weight of one value everywhere (`fill`, as repeat_kv's expand of zeros writes its copies): its values
  // are known, as an ONNX initializer's are. At most kMaxFillElements in all the file's filled weights.
  int64_t filled = 0;
  if (YAML::Node n = root["weights"])
    for (size_t i = 0; i < g.weights.size(); ++i) {
      YAML::Node fill = n[i]["fill"];
      if (!fill) continue;
      double v = r.real(fill, "fill");
      if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max())
        r.error(fill, "fill", "expected a finite number, got '" + fill.Scalar() + "'");
      int64_t elements = 1;
      for (const Expr& d : g.weights[i].shape) {
        if (!d.isConstant())
          r.error(fill, "fill", "needs a constant shape; dimension '" + d.str() + "' is not");
        if (d.eval() < 1) r.error(fill, "fill", "needs a shape of positive dimensions");
        if (d.eval() > (kMaxFillElements - filled) / elements)  // before multiplying: no overflow
          r.error(fill, "fill",
                  "filled weights hold at most " + std::to_string(kMaxFillElements) + " elements in all");
        elements *= d.eval();
      }
      filled += elements;
      g.values[g.weights[i].name] = std::vector<float>(static_cast<size_t>(elements), static_cast<float>(v));
    }
  YAML::Node ops = r.required(root, "ops", "a graph file");
  r.expectSeq(ops, "ops");
  for (const auto& o : ops) {
    r.expectMap(o, "ops");
    Op op;
    op.loc = r.loc(o);
    op.name = r.str(r.required(o, "name", "an op"), "name");
    op.op = r.str(r.required(o, "op", "an op"), "op");
    YAML::Node inputs = r.required(o, "inputs", "an op");
    r.expectSeq(inputs, "inputs");
    for (const auto& i : inputs) op.inputs.push_back(r.str(i, "inputs"));
    op.output = r.str(r.required(o, "output", "an op"), "output");
    for (const auto& kv : o) {
      std::string key = kv.first.Scalar();
      if (key == "name" || key == "op" || key == "inputs" || key == "output") continue;
      op.attrs[key] = readAttr(r, kv.second, key);
    }
    g.ops.push_back(op);
  }
  YAML::Node outputs = r.required(root, "outputs", "a graph file");
  r.expectSeq(outputs, "outputs");
  for (const auto& o : outputs) g.outputs.push_back(r.str(o, "outputs"));
  return g;
}

Graph loadGraph(const std::string& path) { return parseGraph(readTextFile(path), path); }

namespace {

// The one value a weight holds everywhere, when its values are known, all equal, and as many as its
// constant shape has elements (what `fill` writes); else nothing: the file does not carry other values.
std::optional<float> fillOf(const Graph& g, const TensorDecl& t) {
  auto known = g.values.find(t.name);
  if (known == g.values.end() || known->second.empty()) return std::nullopt;
  int64_t elements = 1;
  for (const Expr& d : t.shape) {
    if (!d.isConstant() || d.eval() < 1 || d.eval() > kMaxFillElements / elements) return std::nullopt;
    elements *= d.eval();
  }
  const std::vector<float>& v = known->second;
  if (!std::isfinite(v.front()) || static_cast<int64_t>(v.size()) != elements) return std::nullopt;
  // Bit for bit (-0 is not 0 to a reader that divides by it).
  if (!std::all_of(v.begin(), v.end(), [&](float x) { return std::memcmp(&x, &v.front(), sizeof x) == 0; }))
    return std::nullopt;
  return v.front();
}

}  // namespace

std::string emitGraph(const Graph& g) {
  YAML::Emitter out;
  auto tensors = [&](const char* key, const std::vector<TensorDecl>& list, bool weights) {
    out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    for (const auto& t : list) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << t.name << YAML::Key << "shape"
          << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& d : t.shape) {
        if (d.isConstant())
          out << d.eval();
        else
          out << d.str();
      }
      out << YAML::EndSeq << YAML::Key << "dtype" << YAML::Value << t.dtype;
      if (std::optional<float> v = weights ? fillOf(g, t) : std::nullopt)
        out << YAML::Key << "fill" << YAML::Value << static_cast<double>(*v);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  };
  out << YAML::BeginMap << YAML::Key << "graph" << YAML::Value << g.name;
  tensors("inputs", g.inputs, false);
  tensors("weights", g.weights, true);
  out << YAML::Key << "ops" << YAML::Value << YAML::BeginSeq;
  for (const auto& op : g.ops) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << op.name << YAML::Key << "op"
        << YAML::Value << op.op << YAML::Key << "inputs" << YAML::Value << YAML::Flow << op.inputs << YAML::Key
        << "output" << YAML::Value << op.output;
    for (const auto& [key, value] : op.attrs) {
      out << YAML::Key << key << YAML::Value;
      if (auto* i = std::get_if<int64_t>(&value)) out << *i;
      else if (auto* d = std::get_if<double>(&value)) out << *d;
      else if (auto* s = std::get_if<std::string>(&value); s && s->size() >= 2 && s->front() == '[') {
        std::vector<std::string> items;  // sizes over symbols, as sizesAttr wrote them
        for (const Expr& e : sizesOf(op, key)) items.push_back(e.str());
        out << YAML::Flow << items;
      } else if (s)
        out << YAML::DoubleQuoted << *s;
      else out << YAML::Flow << std::get<std::vector<int64_t>>(value);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::Key << "outputs" << YAML::Value << YAML::Flow << g.outputs << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {

// The one top-level key of a file that holds nothing else (a schedule, a design space): its node.
YAML::Node onlySection(Reader& r, const std::string& text, const char* key, const std::string& what) {
  YAML::Node root = r.load(text);
  if (!root.IsMap()) fail(r.loc(root), "expected " + what + " (its first key '" + key + "')");
  r.onlyKeys(root, {key}, what);
  return r.required(root, key, what);
}

}  // namespace

namespace {

// A lane II of a schedule file: 1 to 16, as --set lane_ii takes it.
void laneIiPin(const Reader& r, const YAML::Node& n, SchedulePin& pin) {
  pin.laneIi = r.integer(n, "lane_ii");
  pin.laneIiLoc = r.loc(n);
  if (*pin.laneIi < 1 || *pin.laneIi > 16)
    r.error(n, "lane_ii", "expected an initiation interval from 1 to 16, got '" + n.Scalar() + "'");
}

}  // namespace

std::vector<SchedulePin> parseSchedule(const std::string& text, const std::string& file) {
  Reader r(file);
  YAML::Node root = r.load(text);
  if (!root.IsMap()) fail(r.loc(root), "expected a schedule file (its first key 'schedule')");
  r.onlyKeys(root, {"schedule", "lane_ii"}, "a schedule file");
  YAML::Node ops = r.required(root, "schedule", "a schedule file");
  std::vector<SchedulePin> pins;
  if (YAML::Node n = root["lane_ii"]) {
    pins.emplace_back();
    laneIiPin(r, n, pins.back());
  }
  if (ops.IsNull()) return pins;
  r.expectMap(ops, "schedule");
  std::set<std::string> seen;
  for (const auto& kv : ops) {
    SchedulePin pin;
    pin.op = r.str(kv.first, "schedule");
    if (pin.op.empty()) fail(r.loc(kv.first), "field 'schedule': an op's name is empty");
    if (!seen.insert(pin.op).second) fail(r.loc(kv.first), "field '" + pin.op + "': given twice");
    r.expectMap(kv.second, pin.op);
    r.onlyKeys(kv.second, {"tk", "tn", "row_block", "lane_ii"}, "an op's schedule");
    if (YAML::Node n = kv.second["lane_ii"]) laneIiPin(r, n, pin);
    if (YAML::Node n = kv.second["tk"]) {
      pin.tk = r.integer(n, "tk");
      pin.tkLoc = r.loc(n);
      if (*pin.tk < 1 || *pin.tk > 4096)
        r.error(n, "tk", "expected a reduction tile from 1 to 4096, got '" + n.Scalar() + "'");
    }
    if (YAML::Node n = kv.second["tn"]) {
      pin.tn = r.integer(n, "tn");
      pin.tnLoc = r.loc(n);
      if (*pin.tn < 1 || *pin.tn > 4096)
        r.error(n, "tn", "expected an output tile from 1 to 4096, got '" + n.Scalar() + "'");
    }
    if (YAML::Node n = kv.second["row_block"]) {
      pin.rowBlock = r.integer(n, "row_block");
      pin.rowBlockLoc = r.loc(n);
      if (*pin.rowBlock < 0)
        r.error(n, "row_block", "expected rows per block (0: every row), got '" + n.Scalar() + "'");
    }
    pins.push_back(std::move(pin));
  }
  return pins;
}

std::vector<SpaceKnob> parseSpace(const std::string& text, const std::string& file) {
  Reader r(file);
  YAML::Node knobs = onlySection(r, text, "space", "a design space file");
  r.expectMap(knobs, "space");
  std::vector<SpaceKnob> space;
  std::set<std::string> seen;
  for (const auto& kv : knobs) {
    SpaceKnob knob;
    knob.key = r.str(kv.first, "space");
    if (!seen.insert(knob.key).second) fail(r.loc(kv.first), "field '" + knob.key + "': given twice");
    auto add = [&](const YAML::Node& v) {
      knob.values.push_back(r.str(v, knob.key));
      knob.valueLocs.push_back(r.loc(v));
    };
    if (kv.second.IsSequence()) {
      for (const auto& v : kv.second) add(v);
      if (knob.values.empty()) r.error(kv.second, knob.key, "expected at least one value");
    } else {
      add(kv.second);
    }
    space.push_back(std::move(knob));
  }
  if (space.empty()) fail(r.loc(knobs), "field 'space': expected at least one knob");
  return space;
}

std::vector<SchedulePin> loadSchedule(const std::string& path) {
  return parseSchedule(readTextFile(path), path);
}

std::string emitSchedule(const std::vector<SchedulePin>& pins) {
  YAML::Emitter out;  // quotes an op name that would not read back plain
  out << YAML::BeginMap << YAML::Key << "schedule" << YAML::Value << YAML::BeginMap;
  for (const SchedulePin& p : pins) {
    if (p.op.empty()) continue;
    out << YAML::Key << p.op << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (p.tk) out << YAML::Key << "tk" << YAML::Value << *p.tk;
    if (p.tn) out << YAML::Key << "tn" << YAML::Value << *p.tn;
    if (p.rowBlock) out << YAML::Key << "row_block" << YAML::Value << *p.rowBlock;
    if (p.laneIi) out << YAML::Key << "lane_ii" << YAML::Value << *p.laneIi;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  for (const SchedulePin& p : pins)
    if (p.op.empty() && p.laneIi) out << YAML::Key << "lane_ii" << YAML::Value << *p.laneIi;
  out << YAML::EndMap;
  return "# Each matmul's schedule: tk, its reduction tile; tn, its output tile where wider than the stream's;\n"
         "# row_block, rows per block (0: every row, weight-stationary). lane_ii: the II of an op's f32\n"
         "# lanes, and below, the layer's.\n"
         "# stc compile --schedule FILE pins them.\n" +
         std::string(out.c_str()) + "\n";
}

FileKind detectFileKind(const std::string& text, const std::string& file) {
  Reader r(file);
  YAML::Node root = r.load(text);
  if (!root || !root.IsMap()) return FileKind::kUnknown;
  if (root["network"]) return FileKind::kNetwork;
  if (root["graph"]) return FileKind::kGraph;
  if (root["platform"]) return FileKind::kPlatform;
  if (root["model"]) return FileKind::kModel;
  return FileKind::kUnknown;
}

}  // namespace stc

// ---------------------------------------------------------------------------------------------------
// Platform files.

namespace stc {

namespace {

double positiveReal(const Reader& r, const YAML::Node& map, const char* key, const std::string& where) {
  YAML::Node n = r.required(map, key, where);
  double v = r.real(n, key);
  if (!(v > 0)) r.error(n, key, "must be positive, got " + n.Scalar());
  if (v > 1e7) r.error(n, key, "is implausibly large (at most 1e7), got " + n.Scalar());
  return v;
}

int64_t positiveInt(const Reader& r, const YAML::Node& map, const char* key, const std::string& where) {
  YAML::Node n = r.required(map, key, where);
  int64_t v = r.integer(n, key);
  if (v <= 0) r.error(n, key, "must be positive, got " + n.Scalar());
  return v;
}

}  // namespace

Platform parsePlatform(const std::string& text, const std::string& file) {
  Reader r(file);
  YAML::Node root = r.load(text);
  if (!root || !root.IsMap()) fail(r.loc(root), "a platform file must be a mapping starting with 'platform'");
  r.onlyKeys(root, {"platform", "shell", "part", "kernel_clock_mhz", "hbm", "resources", "host"}, "a platform");
  Platform p;
  p.loc = r.loc(root);
  p.name = r.str(r.required(root, "platform", "a platform file"), "platform");
  p.shell = r.str(r.required(root, "shell", "a platform file"), "shell");
  p.part = r.str(r.required(root, "part", "a platform file"), "part");
  p.kernelClockMhz = positiveReal(r, root, "kernel_clock_mhz", "a platform file");
  YAML::Node hbm = r.required(root, "hbm", "a platform file");
  r.expectMap(hbm, "hbm");
  r.onlyKeys(hbm,
             {"channels", "channel_bytes", "bus_bits", "clock_mhz", "channel_gbps", "read_latency_ns",
              "write_latency_ns", "burst_bytes_max", "outstanding_reads", "outstanding_writes", "group_channels",
              "lateral_latency_ns", "lateral_bandwidth_fraction"},
             "hbm");
  HbmConfig& h = p.hbm;
  h.channels = static_cast<int>(positiveInt(r, hbm, "channels", "hbm"));
  h.channelBytes = positiveInt(r, hbm, "channel_bytes", "hbm");
  h.busBits = static_cast<int>(positiveInt(r, hbm, "bus_bits", "hbm"));
  h.clockMhz = positiveReal(r, hbm, "clock_mhz", "hbm");
  h.channelGbps = positiveReal(r, hbm, "channel_gbps", "hbm");
  h.readLatencyNs = positiveReal(r, hbm, "read_latency_ns", "hbm");
  h.writeLatencyNs = positiveReal(r, hbm, "write_latency_ns", "hbm");
  h.burstBytesMax = positiveInt(r, hbm, "burst_bytes_max", "hbm");
  h.outstandingReads = static_cast<int>(positiveInt(r, hbm, "outstanding_reads", "hbm"));
  h.outstandingWrites = static_cast<int>(positiveInt(r, hbm, "outstanding_writes", "hbm"));
  h.groupChannels = static_cast<int>(positiveInt(r, hbm, "group_channels", "hbm"));
  YAML::Node lat = r.required(hbm, "lateral_latency_ns", "hbm");
  h.lateralLatencyNs = r.real(lat, "lateral_latency_ns");
  if (h.lateralLatencyNs < 0) r.error(lat, "lateral_latency_ns", "must not be negative");
  YAML::Node frac = r.required(hbm, "lateral_bandwidth_fraction", "hbm");
  h.lateralBandwidthFraction = r.real(frac, "lateral_bandwidth_fraction");
  if (!(h.lateralBandwidthFraction > 0 && h.lateralBandwidthFraction <= 1))
    r.error(frac, "lateral_bandwidth_fraction", "must be in (0, 1], got " + frac.Scalar());
  double busGbps = h.busBits / 8.0 * h.clockMhz / 1000.0;
  if (h.channelGbps > busGbps * 1.0001)
    r.error(hbm["channel_gbps"], "channel_gbps",
            "exceeds what bus_bits at clock_mhz can carry (" + std::to_string(busGbps) + " GB/s)");
  if (h.burstBytesMax % 64 != 0 || h.burstBytesMax > 4096)
    r.error(hbm["burst_bytes_max"], "burst_bytes_max",
            "must be a whole number of 64-byte words (the kernels' 512-bit ports) and at most 4096 (an AXI "
            "burst never crosses a 4 KiB boundary)");
  if (h.burstBytesMax % (h.busBits / 8) != 0)
    r.error(hbm["burst_bytes_max"], "burst_bytes_max", "must be a whole number of bus beats");
  if (h.groupChannels > h.channels || h.channels % h.groupChannels != 0)
    r.error(hbm["group_channels"], "group_channels", "must divide the number of channels");
  YAML::Node res = r.required(root, "resources", "a platform file");
  r.expectMap(res, "resources");
  r.onlyKeys(res, {"lut", "ff", "dsp", "bram18k", "uram", "slrs", "per_slr"}, "resources");
  auto counts = [&](const YAML::Node& map, const std::string& where) {
    Resources c;
    c.lut = positiveInt(r, map, "lut", where);
    c.ff = positiveInt(r, map, "ff", where);
    c.dsp = positiveInt(r, map, "dsp", where);
    c.bram18k = positiveInt(r, map, "bram18k", where);
    c.uram = positiveInt(r, map, "uram", where);
    return c;
  };
  p.resources = counts(res, "resources");
  p.resources.slrs = static_cast<int>(positiveInt(r, res, "slrs", "resources"));
  if (YAML::Node per = res["per_slr"]) {
    if (!per.IsSequence() || static_cast<int>(per.size()) != p.resources.slrs)
      r.error(per, "per_slr", "must list one entry per SLR (" + std::to_string(p.resources.slrs) + ")");
    Resources total;
    for (size_t i = 0; i < per.size(); ++i) {
      r.expectMap(per[i], "per_slr");
      r.onlyKeys(per[i], {"lut", "ff", "dsp", "bram18k", "uram"}, "per_slr");
      Resources c = counts(per[i], "per_slr");
      total += c;
      p.slrBudgets.push_back(c);
    }
    p.slrShares = true;
    if (!total.within(p.resources)) r.error(per, "per_slr", "adds up to more than the device's totals");
  } else {
    const Resources& d = p.resources;
    const int64_t n = d.slrs;
    p.slrBudgets.assign(static_cast<size_t>(n),
                        Resources{d.lut / n, d.ff / n, d.dsp / n, d.bram18k / n, d.uram / n, 0});
  }
  YAML::Node host = r.required(root, "host", "a platform file");
  r.expectMap(host, "host");
  r.onlyKeys(host, {"invocation_overhead_us"}, "host");
  p.invocationOverheadUs = positiveReal(r, host, "invocation_overhead_us", "host");
  return p;
}

Platform loadPlatform(const std::string& path) { return parsePlatform(readTextFile(path), path); }

const char* defaultPlatformText() { return kDefaultPlatformYaml; }

const Platform& defaultPlatform() {
  static const Platform p = parsePlatform(kDefaultPlatformYaml, "<embedded configs/u55c.yaml>");
  return p;
}

const std::vector<std::string>& builtinPlatforms() {
  static const std::vector<std::string> names = {"u55c", "u280"};
  return names;
}

bool isBuiltinPlatform(const std::string& arg) {
  const auto& names = builtinPlatforms();
  return std::find(names.begin(), names.end(), arg) != names.end();
}

Platform platformFromArg(const std::string& arg) {
  if (arg.empty() || arg == "u55c") return defaultPlatform();
  if (arg == "u280") return parsePlatform(kU280PlatformYaml, "<embedded configs/u280.yaml>");
  std::error_code ec;
  if (!std::filesystem::exists(arg, ec))
    throw UserError(arg +
                    ": error: cannot open the file (a platform file, or a built-in platform: u55c, u280)");
  return loadPlatform(arg);
}

}  // namespace stc

// ---------------------------------------------------------------------------------------------------
// Model files.

namespace stc {

ModelSpec parseModel(const std::string& text, const std::string& file) {
  Reader r(file);
  YAML::Node root = r.load(text);
  if (!root || !root.IsMap()) fail(r.loc(root), "a model file must be a mapping starting with 'model'");
  r.onlyKeys(
      root,
      {"model", "family", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "max_ctx",
       "norm", "activation", "gated", "positions", "rope_theta", "tied_embeddings", "quant"},
      "a model");
  ModelSpec m;
  m.loc = r.loc(root);
  const std::string where = "a model file";
  m.name = r.str(r.required(root, "model", where), "model");
  YAML::Node family = r.required(root, "family", where);
  m.family = r.str(family, "family");
  if (m.family != "gpt2" && m.family != "llama" && m.family != "qwen" && m.family != "gemma" && m.family != "mistral")
    r.error(family, "family", "expected gpt2, llama, qwen, gemma or mistral, got '" + m.family + "'");
  auto bounded = [&](const char* key, int64_t limit) {
    int64_t v = positiveInt(r, root, key, where);
    if (v > limit) r.error(root[key], key, "must be at most " + std::to_string(limit) + ", got " + root[key].Scalar());
    return v;
  };
  m.layers = static_cast<int>(bounded("layers", 4096));
  m.hidden = bounded("hidden", int64_t{1} << 24);
  m.heads = static_cast<int>(bounded("heads", 4096));
  m.kvHeads = root["kv_heads"] ? static_cast<int>(bounded("kv_heads", 4096)) : m.heads;
  if (m.heads % m.kvHeads != 0)
    r.error(root["kv_heads"], "kv_heads", std::to_string(m.kvHeads) + " does not divide heads (" + std::to_string(m.heads) + ")");
  if (root["head_dim"]) m.headDim = bounded("head_dim", int64_t{1} << 24);
  else if (m.hidden % m.heads != 0) r.error(root["heads"], "heads", "does not divide hidden; give head_dim");
  else m.headDim = m.hidden / m.heads;
  m.ffn = bounded("ffn", int64_t{1} << 24);
  m.vocab = bounded("vocab", int64_t{1} << 24);
  m.maxCtx = bounded("max_ctx", int64_t{1} << 24);
  YAML::Node norm = r.required(root, "norm", where);
  m.norm = r.str(norm, "norm");
  if (m.norm != "layernorm" && m.norm != "rmsnorm") r.error(norm, "norm", "expected layernorm or rmsnorm, got '" + m.norm + "'");
  YAML::Node act = r.required(root, "activation", where);
  m.activation = r.str(act, "activation");
  if (m.activation != "gelu" && m.activation != "silu")
    r.error(act, "activation", "expected gelu or silu, got '" + m.activation + "'");
  auto flag = [&](const char* key) {
    YAML::Node n = root[key];
    if (!n) return false;
    std::string v = r.str(n, key);
    if (v != "true" && v != "false") r.error(n, key, "expected true or false, got '" + v + "'");
    return v == "true";
  };
  m.gated = flag("gated");
  m.tiedEmbeddings = flag("tied_embeddings");
  YAML::Node pos = r.required(root, "positions", where);
  std::string p = r.str(pos, "positions");
  if (p != "learned" && p != "rope") r.error(pos, "positions", "expected learned or rope, got '" + p + "'");
  m.rope = p == "rope";
  if (root["rope_theta"]) {
    m.ropeTheta = positiveReal(r, root, "rope_theta", where);  // finite: at most 1e7
    if (!m.rope) r.error(root["rope_theta"], "rope_theta", "is rope's base; the positions are not rope");
    if (!(m.ropeTheta > 1))
      r.error(root["rope_theta"], "rope_theta",
              "must be a number above 1, got " + root["rope_theta"].Scalar());
  }
  if (root["quant"]) {
    m.quant = r.str(root["quant"], "quant");
    if (m.quant != "w4a8" && m.quant != "none") r.error(root["quant"], "quant", "expected w4a8 or none, got '" + m.quant + "'");
  }
  return m;
}

ModelSpec loadModel(const std::string& path) { return parseModel(readTextFile(path), path); }

}  // namespace stc
