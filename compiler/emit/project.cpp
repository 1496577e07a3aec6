// The project around the kernels: HBM buffer layouts (src/layout.h), the C simulation (csim/), the XRT
// host program, the Vitis configs and Makefile, and data/ (inputs, weights, the reference interpreter's
// expected outputs). Written to a temporary folder, then renamed into place.
//
// HBM buffers: a DMA read of a graph input or weight reads a buffer of its own holding exactly its
// stream (the host packs it: `layout::pack_<dma>`); a tensor that crosses HBM between groups, and every
// graph output, lives row-major in one buffer that its DMA write fills and later DMA reads address.
// GCC 12 at -O3 reports a null memmove inside std::vector<float>'s copy assignment that cannot happen
// (a known false positive of -Wnonnull with inlined standard containers).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wnonnull"
#endif

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "compiler/emit/codegen_utils.h"
#include "compiler/emit/emit.h"
#include "compiler/emit/runtime/st_numeric.h"
#include "compiler/emit/task_bodies.h"
#include "compiler/ir/yaml_io.h"
#include "compiler/reference/interpreter.h"
#include "compiler/reference/quantized.h"

extern const char kCsimHlsStream[];          // compiler/emit/csim/hls_stream.h, embedded by cmake/Embed.cmake
extern const char kCsimHlsStreamOfBlocks[];  // compiler/emit/csim/hls_streamofblocks.h
extern const char kCsimStTrace[];            // compiler/emit/csim/st_trace.h
extern const char kCsimStDfsim[];            // compiler/emit/csim/st_dfsim.h

namespace stc {

namespace {

namespace fs = std::filesystem;
using emit::Code;
using emit::identifier;

constexpr int64_t kMaxDataBytes = int64_t{512} << 20;  // inputs, weights and expected outputs together

// splitmix64: the same sequence on every machine, for inputs and weights.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  double uniform(double lo, double hi) {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (hi - lo) * static_cast<double>(z >> 11) / 9007199254740992.0;
  }

 private:
  uint64_t state_;
};

int64_t elementsOf(const std::vector<Expr>& shape, const Bindings& b) {
  int64_t n = 1;
  for (const Expr& d : shape) n = checkedMul(n, d.eval(b), "a tensor's size");
  return n;
}

template <typename T>
void appendBytes(std::string& out, const std::vector<T>& v) {
  size_t at = out.size();
  out.resize(at + v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(&out[at], v.data(), v.size() * sizeof(T));
}

template <typename T>
std::string bytesOf(const std::vector<T>& v) {
  std::string s;
  appendBytes(s, v);
  return s;
}

// int4 values (-8..7) packed two per byte, element 2i in the low nibble (st_numeric.h, st_set_w4).
std::vector<uint8_t> packInt4(const std::vector<int8_t>& q) {
  std::vector<uint8_t> out((q.size() + 1) / 2, 0);
  for (size_t i = 0; i < q.size(); ++i) st_set_w4(out.data(), static_cast<long>(i), q[i]);
  return out;
}

// One HBM buffer argument of a top function.
struct Buffer {
  std::string var;        ///< C++ variable in the test bench and host
  std::string tensor;     ///< the tensor it holds (a packed stream of it, or all of it row-major)
  std::string dma;        ///< packed: the DMA task whose stream it holds
  std::string arg;        ///< the top function's argument
  bool packed = false;
  bool readOnly = true;
  bool fromRaw = false;   ///< holds a graph input or weight as it is (a gather's table and ids)
  int channel = 0;
  std::string type = "float";  ///< C++ element type: float, st_i8, st_u8 (two int4 weights)
  std::string port = "float";  ///< what the top function's argument points to: `type`, or 512-bit beats of it
};

// Whether `name` may be a graph symbol in an emitted project, where each symbol is a variable of that
// name in the kernels, the test bench and the host: not a name that code declares itself (a loop counter,
// a local, a helper, a prefix of generated names) nor a C++ keyword or a name of the standard library it
// uses. Checked against the names of emitted projects; renaming symbols in the output would lift it.
bool collidesInEmittedCode(const std::string& name) {
  static const std::set<std::string> kNames = {
      "a", "acc", "alignas", "alignof", "and", "angle", "argc", "argv", "auto", "bad", "bank", "beat", "bias", "bo",
      "bool", "break", "byte", "bytes", "capacity", "case", "catch", "chained", "char", "class", "const", "constexpr",
      "continue", "cosine", "D", "default", "delete", "dequantised", "device", "do", "double", "else", "enum", "epi",
      "expected", "extern", "false", "float", "for", "fresh", "got", "goto", "if", "in", "inline", "inputs", "int", "inv",
      "inverse", "is", "it", "layer", "layers", "layout", "long", "main", "max", "min", "mmax", "mx", "N", "namespace",
      "new", "not", "nullptr", "operator", "or", "out", "outer", "outputs", "packed", "part", "pos", "prod", "qmax",
      "quantize", "return", "row", "run", "S", "scale", "short", "signed", "sizeof", "static", "stats", "std", "struct",
      "sum", "switch", "take", "template", "this", "throw", "tm", "tok", "token", "tokens", "true", "try",
      "typedef", "typename", "union", "unsigned", "upload", "using", "uuid", "void", "volatile", "weights", "while",
      "wide", "within", "worst", "xclbin", "xrt"};
  static const char* kPrefixes[] = {"s_", "b_", "m_", "t_", "st_", "blk_", "elems_", "words_", "pack_", "load_",
                                    "store_", "append_", "kScale_", "kInverse_", "lane_", "e_", "f32", "in_", "w_",
                                    "f_", "expected_", "run_", "__", "ST_", "XCL", "HLS"};
  if (kNames.count(name) || (name.size() == 1 && std::islower(static_cast<unsigned char>(name[0]))))
    return true;  // and every one-letter lower-case name: i, j, t, q
  if (name.size() > 4 && (name.compare(name.size() - 4, 4, "_max") == 0 || name.compare(name.size() - 4, 4, "_min") == 0))
    return true;  // the host's bounds of a symbol, ctx_max
  for (const char* p : kPrefixes)
    if (name.compare(0, std::strlen(p), p) == 0) return true;
  // i0, i12, in3, t1, s2: counters and partial names with a number.
  size_t letters = name.find_first_of("0123456789");
  return letters != std::string::npos && letters <= 3 && name.find_first_not_of("0123456789", letters) == std::string::npos;
}

class ProjectWriter {
 public:
  ProjectWriter(const Graph& g, const CompileResult& c, const Platform& p, const EmitOptions& o)
      : graph_(g), compiled_(c), platform_(p), options_(o), net_(c.network), kg_(c.kernels),
        quant_(c.options.quant == "w4a8") {
    for (const Task& t : net_.tasks) groups_.insert(t.group);
    symbols_ = projectSymbols(c);
    for (const std::string& sym : symbols_)
      if (collidesInEmittedCode(sym))
        throw UserError("stc emit: error: graph '" + g.name + "': the symbol '" + sym +
                        "' is also a name the emitted C++ declares (a loop counter, a local or a generated name); "
                        "rename it in the graph, for example to 'sym_" + sym + "'");
    bindings_ = completeBindings(c, options_.bindings);
    planBuffers();
    units_ = computeUnits(c, p);
    std::vector<Resources> resources;
    std::vector<int> pinned;  // a split group's parts in their SLRs
    for (const ComputeUnit& u : units_) {
      resources.push_back(u.resources);
      pinned.push_back(u.slr);
      split_ = split_ || u.slr >= 0;
    }
    placement_ = placeUnits(resources, platform_.slrBudgets, pinned);
    std::vector<std::string> fifoNames;
    for (const Fifo& f : net_.fifos) fifoNames.push_back(f.name);
    fifoIds_ = emit::uniqueIdentifiers(fifoNames);  // as the kernels name their streams
  }

  // Where each compute unit goes, one line each, and a line per SLR: what the README and stc emit print.
  std::vector<std::string> placementLines() const {
    std::vector<std::string> lines;
    auto counts = [](const Resources& r) {
      return "DSP " + std::to_string(r.dsp) + ", LUT " + std::to_string(r.lut) + ", BRAM_18K " +
             std::to_string(r.bram18k) + ", URAM " + std::to_string(r.uram);
    };
    for (size_t i = 0; i < units_.size(); ++i) {
      int slr = placement_.slrOf[i];
      lines.push_back(topOf(units_[i]) + "_1 (" + counts(units_[i].resources) + "): " +
                      (slr >= 0
                           ? "SLR" + std::to_string(slr) + (units_[i].slr >= 0 ? ", its part of a group split at SLR boundaries" : "")
                           : "fits no SLR's remaining share; not pinned, Vivado spreads it over the SLRs"));
    }
    for (size_t s = 0; s < placement_.used.size(); ++s)
      lines.push_back("SLR" + std::to_string(s) + ": " + counts(placement_.used[s]) + " of " +
                      counts(platform_.slrBudgets[s]) +
                      (placement_.used[s].within(platform_.slrBudgets[s]) ? "" : ": over its share"));
    return lines;
  }
  bool spansSlrs() const {
    return std::find(placement_.slrOf.begin(), placement_.slrOf.end(), -1) != placement_.slrOf.end();
  }
  // Some SLR holds more than its share: the parts of a split group, their FIFOs deepened by sizing.
  bool overShare() const {
    for (size_t s = 0; s < placement_.used.size(); ++s)
      if (!placement_.used[s].within(platform_.slrBudgets[s])) return true;
    return false;
  }

  std::vector<ProjectFile> files() {
    std::vector<ProjectFile> dataFiles;
    data(dataFiles);  // under W4A8 also calibrates: the kernels carry the scales
    std::vector<ProjectFile> out = emitKernels(graph_, compiled_, platform_.hbm, quant_ ? &plan_ : nullptr);
    out.push_back({"src/layout.h", layoutHeader()});
    out.push_back({"csim/hls_stream.h", csimStreamHeader()});
    out.push_back({"csim/hls_streamofblocks.h", csimBlocksHeader()});
    out.push_back({"csim/st_trace.h", kCsimStTrace});
    out.push_back({"csim/st_dfsim.h", kCsimStDfsim});
    out.push_back({"csim/tb.cpp", testBench()});
    out.push_back({"host/host.cpp", host()});
    out.push_back({"connectivity.cfg", connectivity()});
    out.push_back({"hls_config.cfg", hlsConfig()});
    for (const ComputeUnit& u : units_) out.push_back({"hls_" + topOf(u) + ".cfg", hlsTopConfig(u)});
    out.push_back({"Makefile", makefile()});
    out.push_back({"xrt.ini", xrtIni()});
    out.push_back({"network.yaml", emitNetwork(compiled_.network)});  // the sized network it was emitted from
    out.push_back({"README.md", readme()});
    out.insert(out.end(), dataFiles.begin(), dataFiles.end());
    return out;
  }

  std::vector<std::string> notes() const {
    std::vector<std::string> n;
    for (const std::string& line : placementLines())
      if (line.find("fits no SLR") != std::string::npos || line.find("over its share") != std::string::npos)
        n.push_back("placement: " + line);
    return n;
  }

  std::vector<std::string> tops() const {
    std::vector<std::string> t;
    for (const ComputeUnit& u : units_) t.push_back(topOf(u));
    return t;
  }

 private:
  static const char* csimStreamHeader() { return kCsimHlsStream; }
  static const char* csimBlocksHeader() { return kCsimHlsStreamOfBlocks; }

  std::string base(std::string tensor) const {
    for (auto v = kg_.viewOf.find(tensor); v != kg_.viewOf.end(); v = kg_.viewOf.find(tensor)) tensor = v->second;
    return tensor;
  }
  bool isGraphTensor(const std::string& name, const std::vector<TensorDecl>& list) const {
    return std::any_of(list.begin(), list.end(), [&](const TensorDecl& t) { return t.name == name; });
  }

  // Every DMA's buffer, and the tensors that live in HBM.
  void planBuffers() {
    std::map<std::string, int> storeChannel;
    for (const Task& t : net_.tasks) {
      if (!t.isDma()) continue;
      const TaskRole& r = compiled_.roles.tasks.at(t.name);
      Buffer b;
      b.tensor = r.tensor;
      b.channel = t.channel;
      b.arg = dmaArgs_.at(t.name);
      b.readOnly = t.kind == TaskKind::kDmaRead;
      b.type = typeOf(r.order.dtype);
      b.port = emit::dmaPort(compiled_, r).type();
      if (r.kind == TaskRole::kGather) {  // the table and the ids, row-major, as the graph has them
        const Op& op = graph_.ops[static_cast<size_t>(kg_.kernels[static_cast<size_t>(r.kernel)].opIndex)];
        for (const std::string& name : {base(op.inputs[1]), base(op.inputs[0])})  // a view: its base's data
          if (!isGraphTensor(name, graph_.inputs) && !isGraphTensor(name, graph_.weights))
            throw UserError("unsupported: HLS emission of the embedding lookup '" + op.name + "' of '" + name +
                            "', which is neither an input nor a weight");
        b.fromRaw = true;
        b.var = "m_" + tid(b.tensor);
        bufferOf_[t.name] = b;
        Buffer ids = b;
        ids.tensor = base(op.inputs[0]);
        ids.var = "m_" + tid(ids.tensor);
        ids.arg = b.arg + "_ids";
        ids.type = ids.port = "float";
        idsOf_[t.name] = ids;
        continue;
      }
      if (r.kind == TaskRole::kLoad && r.packed) {
        // A view of an input or a weight read in an order of its own is packed from its base's data: the
        // same elements row-major (the pack function walks the view's shape).
        if (!isEpilogue(r.tensor)) b.tensor = base(r.tensor);
        if (!isGraphTensor(b.tensor, graph_.inputs) && !isGraphTensor(b.tensor, graph_.weights) &&
            !isEpilogue(r.tensor))
          throw UserError("unsupported: HLS emission of '" + t.name + "', a DMA of '" + r.tensor + "', which is neither an input nor a weight");
        b.packed = true;
        b.dma = t.name;
        b.var = "b_" + dmaArgs_.at(t.name);
      } else {
        b.tensor = base(r.tensor);
        b.var = "m_" + tid(b.tensor);
        if (r.kind == TaskRole::kStore) storeChannel[b.tensor] = t.channel;
        hbmTensors_.insert(b.tensor);
      }
      bufferOf_[t.name] = b;
    }
    for (auto& [task, b] : bufferOf_) {
      if (b.packed || b.fromRaw) continue;
      auto it = storeChannel.find(b.tensor);
      if (it == storeChannel.end())
        throw UserError("unsupported: HLS emission of '" + task + "': tensor '" + b.tensor + "' is read from HBM but never written there");
      b.channel = it->second;  // where the data lives; its own port may sit on another channel
    }
    for (const auto& out : graph_.outputs)
      if (!hbmTensors_.count(base(out)))
        throw UserError("unsupported: HLS emission of graph output '" + out + "', which no DMA writes to HBM");
    if (options_.layers > 1) {
      const auto& in0 = kg_.tensors.at(graph_.inputs.at(0).name);
      const auto& out0 = kg_.tensors.at(graph_.outputs.at(0));
      if (elementsOf(in0.shape, bindings_) != elementsOf(out0.shape, bindings_))
        throw UserError("unsupported: chaining " + std::to_string(options_.layers) + " layers: output '" + out0.name +
                        "' does not have the shape of input '" + in0.name + "'");
    }
  }

  // The C++ element type of a stream of dtype in this project.
  std::string typeOf(const std::string& dtype) const { return emit::storageOf(dtype).type; }
  bool isEpilogue(const std::string& tensor) const {
    return std::any_of(epilogues_.begin(), epilogues_.end(), [&](const auto& e) { return e.first == tensor; });
  }
  // The C++ type of a layer tensor's vector in the test bench and host.
  std::string tensorType(const std::string& name) const {
    if (!quant_ || plan_.ids.count(name) || isEpilogue(name)) return "float";
    return plan_.int4.count(name) ? "st_u8" : "st_i8";
  }

  std::string symbolParams(bool leadingComma) const {
    std::string s;
    for (const auto& sym : symbols_) s += (s.empty() && !leadingComma ? "" : ", ") + std::string("int ") + sym;
    return s;
  }
  // The symbols as arguments, each replaced by what `with` gives it (the host's maxima, ctx + 1).
  std::string symbolArgs(const std::map<std::string, std::string>& with = {}) const {
    std::string s;
    for (const auto& sym : symbols_) s += ", " + (with.count(sym) ? with.at(sym) : sym);
    return s;
  }
  std::map<std::string, std::string> atMaxima() const {
    std::map<std::string, std::string> m;
    for (const auto& sym : symbols_) m[sym] = sym + "_max";
    return m;
  }
  // A top's arguments, in order: its DMAs' buffers.
  std::string topOf(const ComputeUnit& u) const { return topFunctionName(graph_, u.group, u.slr); }
  // The buffers group g's top takes, in network order (a split group's: the call of src/parts.h).
  std::vector<std::pair<const Task*, const Buffer*>> topArgs(int g) const { return unitArgs(g, kAnySlr); }
  // The buffers of one unit's kernel: group g's part in `slr` (-1, a whole group; kAnySlr, every part).
  static constexpr int kAnySlr = -2;
  std::vector<std::pair<const Task*, const Buffer*>> unitArgs(int g, int slr) const {
    std::vector<std::pair<const Task*, const Buffer*>> out;
    for (const Task& t : net_.tasks)
      if (t.group == g && (slr == kAnySlr || t.slr == slr) && t.isDma()) {
        out.push_back({&t, &bufferOf_.at(t.name)});
        if (idsOf_.count(t.name)) out.push_back({&t, &idsOf_.at(t.name)});
      }
    return out;
  }
  std::string elemsCall(const std::string& tensor,
                        const std::map<std::string, std::string>& with = {}) const {
    return "layout::elems_" + tid(tensor) + "(" + symbolArgs(with).substr(symbols_.empty() ? 0 : 2) + ")";
  }
  std::string wordsCall(const std::string& dma, const std::map<std::string, std::string>& with = {}) const {
    return "layout::words_" + dmaArgs_.at(dma) + "(" + symbolArgs(with).substr(symbols_.empty() ? 0 : 2) +
           ")";
  }

  std::string layoutHeader() const {
    Code c;
    c.line("// Generated by stc emit: the top functions and the layout of every HBM buffer.");
    c.line("#pragma once");
    c.blank();
    c.line("#include <vector>");
    c.blank();
    c.line("#include \"st_numeric.h\"");
    c.blank();
    for (int g : groups_) {
      if (splitGroup(g)) continue;  // src/parts.h runs its parts
      std::string head = "extern \"C\" void " + topFunctionName(graph_, g) + "(";
      bool first = true;
      for (const auto& [t, b] : topArgs(g)) {
        head += (first ? "" : ", ") + std::string(b->readOnly ? "const " : "") + b->port + "* " + b->arg;
        first = false;
      }
      c.line(head + symbolParams(!first) + ");");
    }
    c.blank();
    c.open("namespace layout");
    std::set<std::string> tensors(hbmTensors_);
    for (const auto& t : graph_.inputs) tensors.insert(t.name);
    for (const auto& t : graph_.weights) tensors.insert(t.name);
    for (const auto& [epi, op] : epilogues_) tensors.insert(epi);
    for (const auto& name : tensors) {
      c.line("/// Elements of '" + name + "'.");
      c.line("inline long elems_" + tid(name) + "(" + symbolParams(false) + ") { " + unusedSymbols() + "return " +
             emit::cxxProduct(kg_.tensors.at(name).shape) + "; }");
    }
    if (quant_) {
      c.line("/// W4A8 scales of the graph's inputs and outputs (real = scale * q) and the host's quantisation.");
      std::set<std::string> io;
      for (const auto& t : graph_.inputs)
        if (!plan_.ids.count(t.name)) io.insert(t.name);
      for (const auto& o : graph_.outputs) io.insert(o);
      for (const auto& name : io) {
        const QuantScale& q = plan_.of(name);
        c.line("constexpr float kScale_" + tid(name) + " = " + emit::floatLiteral(q.scale) + ", kInverse_" + tid(name) +
               " = " + emit::floatLiteral(q.inverse) + ";");
      }
      c.open("inline std::vector<st_i8> quantize(const std::vector<float>& x, float inverse)");
      c.line("std::vector<st_i8> q(x.size());");
      c.line("for (size_t i = 0; i < x.size(); ++i) q[i] = st_q8(x[i] * inverse);");
      c.line("return q;");
      c.close();
    }
    for (const CacheAppend& a : options_.caches) appendFunction(c, a);
    for (const auto& [task, b] : bufferOf_) {
      if (!b.packed) continue;
      const TaskRole& r = compiled_.roles.tasks.at(task);
      bool int4 = b.type == "st_u8";
      int64_t part = tokenElements(r.order) / r.stripes;  // elements of the tensor per token
      int64_t units = int4 ? part / 2 : part;
      c.line("/// Elements (" + b.type + ") in the buffer of '" + task + "': its stream of '" + r.tensor + "'" +
             (r.stripes > 1 ? ", stripe " + std::to_string(r.stripe) + " of each token" : "") +
             (int4 ? ", two int4 weights a byte" : "") + ".");
      c.line("inline long words_" + dmaArgs_.at(task) + "(" + symbolParams(false) + ") { " + unusedSymbols() + "return " +
             std::to_string(units) + "L * " + emit::cxxProduct(r.order.trips) + "; }");
      c.line("/// Packs row-major '" + r.tensor + "' into the stream order of '" + task + "'" +
             (int4 ? " (both packed two weights a byte)." : "."));
      c.open("inline void pack_" + dmaArgs_.at(task) + "(const " + b.type + "* tensor, " + b.type + "* buf" + symbolParams(true) + ")");
      c.line(unusedSymbols() + "long t = 0;");
      int n = static_cast<int>(r.order.trips.size());
      emit::openLoops(c, r.order, "i", 0, n, "");
      c.open("for (int j = 0; j < " + std::to_string(part) + "; ++j)");
      std::string elem = r.stripes > 1 ? std::to_string(r.stripe * part) + " + j" : "j";
      std::string from = emit::elementIndex(kg_.tensors.at(r.tensor), r.order, "i", elem);
      std::string inside = emit::insideTensor(kg_.tensors.at(r.tensor), r.order, "i", elem);  // padding: zeros
      if (int4)
        c.line("st_set_w4(buf, t * " + std::to_string(part) + " + j, " + emit::insideOr(inside, "st_w4(tensor, " + from + ")", "0") + ");");
      else
        c.line("buf[t * " + std::to_string(part) + " + j] = " + emit::insideOr(inside, "tensor[" + from + "]", b.type + "(0)") + ";");
      c.close();
      c.line("++t;");
      for (int k = 0; k < n; ++k) c.close();
      c.close();
    }
    c.close("}  // namespace layout");
    return c.text();
  }
  std::string unusedSymbols() const {
    std::string s;
    for (const auto& sym : symbols_) s += "(void)" + sym + "; ";
    return s;
  }

  // The statements shared by the test bench and the host: raw tensors of a layer from the files,
  // packed buffers and HBM tensors. `alloc` declares a buffer.
  void layerTensors(Code& c) const {
    c.line(quant_ ? "// Graph inputs, quantised to int8 (input 0 of a later layer is the previous layer's output 0), then"
                  : "// Graph inputs (input 0 of a later layer is the previous layer's output 0), then weights.");
    if (quant_) c.line("// weights: int4 ones packed two a byte, int8 ones, then each int4 matmul's epilogue.");
    for (size_t i = 0; i < graph_.inputs.size(); ++i) {
      const std::string& name = graph_.inputs[i].name;
      std::string v = "t_" + tid(name), type = tensorType(name);
      std::string read = "take<float>(inputs, in_pos, " + elemsCall(name) + ")";
      if (type == "st_i8") read = "layout::quantize(" + read + ", layout::kInverse_" + tid(name) + ")";
      if (i == 0 && options_.layers > 1)
        c.line("std::vector<" + type + "> " + v + " = layer == 0 ? " + read + " : chained;");
      else
        c.line("std::vector<" + type + "> " + v + " = " + read + ";");
    }
    std::vector<std::string> weights;
    for (const auto& w : graph_.weights) weights.push_back(w.name);
    for (const auto& [epi, op] : epilogues_) weights.push_back(epi);
    for (const auto& w : weights) {
      std::string type = tensorType(w), n = elemsCall(w);
      if (type == "st_u8") n = "(" + n + " + 1) / 2";
      c.line("std::vector<" + type + "> t_" + tid(w) + " = take<" + type + ">(weights, w_pos, " + n + ");");
    }
  }

  // readBytes(path) and take<T>(bytes, pos, n) (n values of T from byte offset pos) of the test bench and
  // the host; `who` prefixes their errors.
  static void fileHelpers(Code& c, const std::string& who) {
    c.open("static std::vector<char> readBytes(const char* path)");
    c.line("std::ifstream in(path, std::ios::binary);");
    c.open("if (!in)");
    c.line("std::fprintf(stderr, \"" + who + ": cannot read %s\\n\", path);");
    c.line("std::exit(1);");
    c.close();
    c.line("return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());");
    c.close();
    c.blank();
    c.line("template <typename T>");
    c.open("static std::vector<T> take(const std::vector<char>& all, size_t& pos, long n)");
    c.line("const size_t bytes = static_cast<size_t>(n) * sizeof(T);");
    c.open("if (pos + bytes > all.size())");
    c.line("std::fprintf(stderr, \"" + who + ": a data file is shorter than the graph needs\\n\");");
    c.line("std::exit(1);");
    c.close();
    c.line("std::vector<T> v(static_cast<size_t>(n));");
    c.line("if (bytes) std::memcpy(v.data(), all.data() + pos, bytes);");
    c.line("pos += bytes;");
    c.line("return v;");
    c.close();
    c.blank();
  }

  // The element type of the graph's outputs in the test bench and the host.
  std::string outputType() const { return quant_ ? "st_i8" : "float"; }

  // data/expected.bin as `expected` (of outputType), and the f32 tolerances, for compareWithExpected.
  void readExpected(Code& c) const {
    std::string out = outputType();
    if (!quant_)
      c.line("const double rtol = " + exactLiteral(options_.rtol) +
             ", atol = " + exactLiteral(options_.atol) + ";");
    c.line("const std::vector<char> expected_bytes = readBytes(\"data/expected.bin\");");
    c.line("size_t e_pos = 0;");
    c.line("const std::vector<" + out + "> expected = take<" + out +
           ">(expected_bytes, e_pos, static_cast<long>(expected_bytes.size() / sizeof(" + out + ")));");
  }

  // The end of the test bench's and the host's main: `outputs` (token 0's, layer after layer) against
  // data/expected.bin, bit for bit under W4A8 (and, with againstF32, the error of `dequantised` against
  // data/expected_f32.bin), within atol + rtol otherwise; `who` starts the verdict, and main returns 1 on
  // a difference.
  void compareWithExpected(Code& c, const std::string& who, bool againstF32) const {
    c.open("if (outputs.size() != expected.size())");
    c.line("std::fprintf(stderr, \"" + who +
           ": FAIL: %zu outputs, expected %zu\\n\", outputs.size(), expected.size());");
    c.line("return 1;");
    c.close();
    if (quant_) {
      c.line("size_t bad = 0, first = 0;");
      c.open("for (size_t i = 0; i < outputs.size(); ++i)");
      c.line("if (outputs[i] != expected[i] && bad++ == 0) first = i;");
      c.close();
      c.open("if (bad)");
      c.line("std::printf(\"" + who +
             ": FAIL: %zu of %zu int8 outputs differ from the W4A8 reference; first at %zu: %d, expected "
             "%d\\n\", bad, outputs.size(), first, static_cast<int>(outputs[first]), "
             "static_cast<int>(expected[first]));");
      c.line("return 1;");
      c.close();
      if (!againstF32) {
        c.line("std::printf(\"" + who +
               ": PASS: %zu int8 outputs equal the W4A8 reference bit for bit\\n\", outputs.size());");
        c.line("return 0;");
        return;
      }
      c.line(
          "// Against f32: the largest absolute error, that error over the largest |f32 value|, and the "
          "cosine.");
      c.line("const std::vector<char> f32_bytes = readBytes(\"data/expected_f32.bin\");");
      c.line("size_t f_pos = 0;");
      c.line(
          "const std::vector<float> f32 = take<float>(f32_bytes, f_pos, "
          "static_cast<long>(dequantised.size()));");
      c.line("double worst = 0, largest = 0, dot = 0, n_q = 0, n_f = 0;");
      c.open("for (size_t i = 0; i < f32.size(); ++i)");
      c.line("const double q = dequantised[i], f = f32[i];");
      c.line("worst = std::fmax(worst, std::fabs(q - f));");
      c.line("largest = std::fmax(largest, std::fabs(f));");
      c.line("dot += q * f;");
      c.line("n_q += q * q;");
      c.line("n_f += f * f;");
      c.close();
      c.line("const double cosine = n_q > 0 && n_f > 0 ? dot / std::sqrt(n_q * n_f) : 1.0;");
      c.line("std::printf(\"" + who +
             ": PASS: %zu int8 outputs equal the W4A8 reference bit for bit; against f32: largest error %.4g "
             "(%.3g%% of the largest value), cosine %.5f\\n\", outputs.size(), worst, largest > 0 ? 100.0 * "
             "worst / largest : 0.0, cosine);");
      c.line("return 0;");
      return;
    }
    c.line("size_t bad = 0, worst = 0;");
    c.line("double worst_error = 0;");
    c.open("for (size_t i = 0; i < outputs.size(); ++i)");
    // NaN where the reference has NaN, and the same infinity, match; any other NaN differs, and the first
    // is the worst.
    c.line(
        "const bool same = outputs[i] == expected[i] || (outputs[i] != outputs[i] && expected[i] != "
        "expected[i]);");
    c.line("double error = same ? 0.0 : std::fabs(static_cast<double>(outputs[i]) - expected[i]);");
    c.line("if (!same && !(error <= atol + rtol * std::fabs(expected[i]))) ++bad;");
    c.open("if (error != error ? worst_error == worst_error : error > worst_error)");
    c.line("worst_error = error;");
    c.line("worst = i;");
    c.close();
    c.close();
    c.open("if (bad)");
    c.line("std::printf(\"" + who +
           ": FAIL: %zu of %zu outputs differ from the reference beyond atol %g + rtol %g; worst at %zu: %g, "
           "expected %g\\n\", bad, outputs.size(), atol, rtol, worst, outputs[worst], expected[worst]);");
    c.line("return 1;");
    c.close();
    c.line("std::printf(\"" + who +
           ": PASS: %zu outputs match the reference (largest difference %.3g; atol %g + rtol %g)\\n\", "
           "outputs.size(), worst_error, atol, rtol);");
    c.line("return 0;");
  }

  // A double as C++ that reads back as exactly it (1e-8 stays 1e-8).
  static std::string exactLiteral(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }

  std::string testBench() const {
    Code c;
    c.line("// Generated by stc emit: the C simulation. Runs the kernels on data/inputs.bin and data/weights.bin,");
    c.line(quant_ ? "// writes data/outputs.bin (int8) and compares it with data/expected.bin, the W4A8 reference's, bit for"
                  : "// writes data/outputs.bin and compares it with data/expected.bin (the reference interpreter's).");
    if (quant_) c.line("// bit; reports the error against data/expected_f32.bin, the f32 reference's.");
    c.line("#include <cmath>");
    c.line("#include <cstdio>");
    c.line("#include <cstdlib>");
    c.line("#include <cstring>");
    c.line("#include <fstream>");
    c.line("#include <iterator>");
    c.line("#include <vector>");
    c.blank();
    c.line("#include \"layout.h\"");
    if (split_) c.line("#include \"parts.h\"  // the groups split at SLR boundaries, each run as one call");
    c.line("#ifdef ST_DFSIM");
    c.line("#include \"st_dfsim.h\"  // make dfsim: the counts it reports");
    c.line("#endif");
    c.blank();
    fileHelpers(c, "csim");
    std::string out = outputType();
    c.open("int main()");
    for (const auto& sym : symbols_) c.line("const int " + sym + " = " + std::to_string(bindings_.at(sym)) + ";");
    c.line("const int layers = " + std::to_string(options_.layers) + ";");
    c.line("const std::vector<char> inputs = readBytes(\"data/inputs.bin\");");
    c.line("const std::vector<char> weights = readBytes(\"data/weights.bin\");");
    readExpected(c);
    c.line(graph_.weights.empty() ? "size_t in_pos = 0;" : "size_t in_pos = 0, w_pos = 0;");
    c.line("std::vector<" + out + "> outputs, chained;");
    if (quant_) c.line("std::vector<float> dequantised;  // the outputs as reals, for the error against f32");
    c.open("for (int layer = 0; layer < layers; ++layer)");
    layerTensors(c);
    c.line("// HBM: packed streams of inputs and weights, and tensors written by DMAs.");
    std::set<std::string> declared;
    std::vector<std::pair<std::string, Buffer>> buffers(bufferOf_.begin(), bufferOf_.end());
    buffers.insert(buffers.end(), idsOf_.begin(), idsOf_.end());
    for (const auto& [task, b] : buffers) {
      if (!declared.insert(b.var).second) continue;
      std::string vec = "std::vector<" + b.type + "> ";
      if (b.fromRaw) {
        c.line(vec + b.var + " = t_" + tid(b.tensor) + ";");
      } else if (b.packed) {
        c.line(vec + b.var + "(static_cast<size_t>(" + wordsCall(task) + "));");
        c.line("layout::pack_" + dmaArgs_.at(task) + "(t_" + tid(b.tensor) + ".data(), " + b.var + ".data()" + symbolArgs() + ");");
      } else {
        c.line(vec + b.var + "(static_cast<size_t>(" + elemsCall(b.tensor) + "));");
      }
    }
    c.line("// The kernels, group after group.");
    for (int g : groups_) {
      std::string call = topFunctionName(graph_, g) + "(";
      bool first = true;
      for (const auto& [t, b] : topArgs(g)) {
        call += (first ? "" : ", ") + (b->port == b->type ? b->var + ".data()"
                                                          : "reinterpret_cast<" + std::string(b->readOnly ? "const " : "") +
                                                                b->port + "*>(" + b->var + ".data())");
        first = false;
      }
      c.line(call + (first ? symbolArgs().substr(symbols_.empty() ? 0 : 2) : symbolArgs()) + ");");
    }
    for (size_t i = 0; i < graph_.outputs.size(); ++i) {
      std::string var = "m_" + tid(base(graph_.outputs[i]));
      c.line("outputs.insert(outputs.end(), " + var + ".begin(), " + var + ".end());");
      if (quant_)
        c.line("for (const st_i8 q : " + var + ") dequantised.push_back(static_cast<float>(q) * layout::kScale_" +
               tid(graph_.outputs[i]) + ");");
      if (i == 0) c.line("chained = " + var + ";");
    }
    c.close();
    c.line("std::ofstream(\"data/outputs.bin\", std::ios::binary).write(reinterpret_cast<const char*>(outputs.data()), static_cast<long>(outputs.size() * sizeof(" + out + ")));");
    c.line("#ifdef ST_DFSIM");
    c.line(
        "std::printf(\"dfsim: PASS: %lld task runs, each in a thread, made %lld stream accesses at the "
        "emitted depths without a deadlock\\n\", st_dfsim::rt().tasks, st_dfsim::rt().accesses);");
    c.line("#endif");
    compareWithExpected(c, "csim", true);
    c.close();
    return c.text();
  }

  std::string host() const {
    Code c;
    c.line("// Generated by stc emit: the XRT host program. Loads the xclbin, places each buffer in the HBM");
    c.line("// bank of its kernel port, packs inputs and weights in their stream order, and runs the decode");
    c.line(
        "// loop: per token, one invocation of the kernels per layer, each layer's output feeding the next;");
    c.line("// compares the first token's outputs with data/expected.bin (exit 1 on a difference).");
    c.line("//   build/host [build_dir.hw." + platform_.shell +
           "/streamtensor.xclbin] [tokens]   (make run TARGET=...)");
    c.line("#include <algorithm>");
    c.line("#include <cstdio>");
    c.line("#include <cstdlib>");
    c.line("#include <cstring>");
    c.line("#include <fstream>");
    c.line("#include <iterator>");
    c.line("#include <string>");
    c.line("#include <vector>");
    c.blank();
    c.line("#include <xrt/xrt_bo.h>");
    c.line("#include <xrt/xrt_device.h>");
    c.line("#include <xrt/xrt_kernel.h>");
    c.blank();
    c.line("#include \"../src/layout.h\"");
    c.blank();
    fileHelpers(c, "host");
    c.line("template <typename T>");
    c.line("// A buffer of `capacity` values (its size at the symbols' maxima) holding `data` at its start.");
    c.open(
        "static xrt::bo upload(const xrt::device& device, const std::vector<T>& data, long capacity, "
        "xrt::memory_group bank)");
    c.line("const size_t n = std::max(static_cast<size_t>(capacity), data.size());");
    c.line("xrt::bo bo(device, std::max<size_t>(n, 1) * sizeof(T), bank);");
    c.open("if (!data.empty())");
    c.line("bo.write(data.data(), data.size() * sizeof(T), 0);");
    c.line("bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, data.size() * sizeof(T), 0);");
    c.close();
    c.line("return bo;");
    c.close();
    c.blank();
    c.line("// Writes `data` at the start of a buffer and moves it to the device.");
    c.line("template <typename T>");
    c.open("static void put(xrt::bo& bo, const std::vector<T>& data)");
    c.line("bo.write(data.data(), data.size() * sizeof(T), 0);");
    c.line("bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, data.size() * sizeof(T), 0);");
    c.close();
    c.blank();
    c.open("int main(int argc, char** argv)");
    c.line("const std::string xclbin = argc > 1 ? argv[1] : \"build_dir.hw." + platform_.shell +
           "/streamtensor.xclbin\";");
    c.line("const int tokens = argc > 2 ? std::atoi(argv[2]) : 1;");
    std::set<std::string> growing;  // symbols the decode loop advances
    for (const CacheAppend& a : options_.caches) growing.insert(a.symbol);
    // The loop packs again only the caches and input 0: any other input the symbol sizes would go stale.
    for (const auto& [task, b] : bufferOf_) {
      bool cache = b.tensor == graph_.inputs.at(0).name;
      for (const CacheAppend& a : options_.caches) cache = cache || b.tensor == a.cache;
      if (cache || !b.readOnly) continue;
      for (const Expr& d : kg_.tensors.at(b.tensor).shape)
        for (const std::string& sym : growing)
          if (d.symbols().count(sym))
            throw UserError("stc emit: error: input '" + b.tensor + "' has a dimension of " + sym +
                            ", which the host's decode loop advances; only the caches grow with it");
    }
    for (const auto& sym : symbols_) {
      c.line(std::string(growing.count(sym) ? "int " : "const int ") + sym + " = " +
             std::to_string(bindings_.at(sym)) + ";  // the C simulation's value" +
             (growing.count(sym) ? ", then one more each token" : ""));
      auto [low, high] = emit::symbolRunRange(compiled_.network, compiled_.options.maxima, sym);
      bool sized = high < compiled_.options.maxima.at(sym) || low > 1;
      c.line("const int " + sym + "_min = " + std::to_string(low) + ", " + sym +
             "_max = " + std::to_string(high) + ";  // " +
             (sized ? "the FIFO depths were sized for these" : "the buffers' size"));
      c.open("if (" + sym + " < " + sym + "_min || " + sym + " > " + sym + "_max)");
      c.line("std::printf(\"host: " + sym +
             " = %d is outside %d..%d, what this project was built for\\n\", " + sym + ", " + sym + "_min, " +
             sym + "_max);");
      c.line("return 1;");
      c.close();
    }
    c.line("const int layers = " + std::to_string(options_.layers) + ";");
    c.line("xrt::device device(0);");
    c.line("const auto uuid = device.load_xclbin(xclbin);");
    for (const ComputeUnit& u : units_) {
      std::string top = topOf(u);
      c.line("xrt::kernel k_" + top + "(device, uuid, \"" + top + "\");");
    }
    c.line("const std::vector<char> inputs = readBytes(\"data/inputs.bin\");");
    c.line("const std::vector<char> weights = readBytes(\"data/weights.bin\");");
    c.line("// Per layer: its packed input and weight streams, and the tensors its DMAs write, each in the bank");
    c.line("// connectivity.cfg gives the port (group_id of the argument).");
    c.line("std::vector<std::vector<xrt::bo>> bos(layers);");
    if (split_)
      c.line("std::vector<std::vector<xrt::run>> runs(layers);  // per layer, the parts of split groups, in order");
    c.line(graph_.weights.empty() ? "size_t in_pos = 0;" : "size_t in_pos = 0, w_pos = 0;");
    c.line("std::vector<" + tensorType(graph_.inputs.at(0).name) + "> chained;");
    c.line("std::vector<" + outputType() + "> outputs;  // token 0's, layer after layer");
    for (const CacheAppend& a : options_.caches)
      c.line("std::vector<std::vector<" + tensorType(a.cache) + ">> cache_" + tid(a.cache) +
             "(layers);  // row-major, at " + a.symbol);
    c.open("for (int layer = 0; layer < layers; ++layer)");
    layerTensors(c);
    for (const CacheAppend& a : options_.caches)
      c.line("cache_" + tid(a.cache) + "[layer] = t_" + tid(a.cache) + ";");
    std::map<std::string, int> slot;
    for (const ComputeUnit& u : units_) {
      std::string top = topOf(u);
      int arg = 0;
      for (const auto& [t, b] : unitArgs(u.group, u.slr)) {
        if (!slot.count(b->var)) {
          int index = static_cast<int>(slot.size());
          slot[b->var] = index;
          std::string bank = "k_" + top + ".group_id(" + std::to_string(arg) + ")";
          if (b->packed) {
            c.open("");
            c.line("std::vector<" + b->type + "> packed(static_cast<size_t>(" + wordsCall(t->name) + "));");
            c.line("layout::pack_" + dmaArgs_.at(t->name) + "(t_" + tid(b->tensor) + ".data(), packed.data()" + symbolArgs() + ");");
            c.line("bos[layer].push_back(upload(device, packed, " + wordsCall(t->name, atMaxima()) + ", " +
                   bank + "));  // " + b->var + ", HBM[" + std::to_string(t->channel) + "]");
            c.close();
          } else if (b->fromRaw) {
            std::string n = elemsCall(b->tensor, atMaxima());
            if (b->type == "st_u8") n = "(" + n + " + 1) / 2";
            c.line("bos[layer].push_back(upload(device, t_" + tid(b->tensor) + ", " + n + ", " + bank +
                   "));  // " + b->var + ", HBM[" + std::to_string(b->channel) + "]");
          } else {
            c.line("bos[layer].push_back(upload(device, std::vector<" + b->type + ">(), " +
                   elemsCall(b->tensor, atMaxima()) + ", " + bank + "));  // " + b->var + ", HBM[" +
                   std::to_string(b->channel) + "]");
          }
        }
        ++arg;
      }
    }
    // A split group's parts: one run each, made once with its buffers (stream ports are the links', not
    // set); each token sets the symbols, starts every part of the group and then waits for them all.
    std::map<std::string, int> runOf;
    for (const ComputeUnit& u : units_) {
      if (u.slr < 0) continue;
      runOf[topOf(u)] = static_cast<int>(runOf.size());
      c.line("runs[layer].emplace_back(k_" + topOf(u) + ");");
      int arg = 0;
      for (const auto& [t, b] : unitArgs(u.group, u.slr))
        c.line("runs[layer].back().set_arg(" + std::to_string(arg++) + ", bos[layer][" + std::to_string(slot.at(b->var)) +
               "]);");
    }
    c.line("chained = t_" + tid(graph_.inputs.at(0).name) + ";");
    c.close();
    c.open("for (int token = 0; token < tokens; ++token)");
    c.open("for (int layer = 0; layer < layers; ++layer)");
    c.line("std::vector<xrt::bo>& b = bos[layer];");
    if (options_.layers > 1 || true) {
      const std::string& in0 = graph_.inputs.at(0).name;
      c.line("// Input 0 is the previous layer's output 0 (or, at layer 0, the previous token's).");
      for (const auto& [task, b] : bufferOf_) {
        if (!b.packed || b.tensor != in0) continue;
        c.open("");
        c.line("std::vector<" + b.type + "> packed(static_cast<size_t>(" + wordsCall(task) + "));");
        c.line("layout::pack_" + dmaArgs_.at(task) + "(chained.data(), packed.data()" + symbolArgs() + ");");
        c.line("put(b[" + std::to_string(slot.at(b.var)) + "], packed);");
        c.close();
      }
    }
    for (int g : groups_) {
      if (splitGroup(g)) {  // one kernel per SLR, joined by streams: all started, then all waited for
        std::vector<std::pair<std::string, std::string>> runs;  // (run, its top)
        for (const ComputeUnit& u : units_) {
          if (u.group != g) continue;
          std::string run = "runs[layer][" + std::to_string(runOf.at(topOf(u))) + "]";
          runs.push_back({run, topOf(u)});
          int arg = static_cast<int>(unitArgs(u.group, u.slr).size());
          for (const auto& sym : symbols_) c.line(run + ".set_arg(" + std::to_string(arg++) + ", " + sym + ");");
        }
        for (const auto& [run, top] : runs) c.line(run + ".start();  // " + top);
        for (const auto& [run, top] : runs) c.line(run + ".wait();  // " + top);
        continue;
      }
      std::string top = topFunctionName(graph_, g);
      std::string call = "k_" + top + "(";
      bool first = true;
      for (const auto& [t, b] : topArgs(g)) {
        call += (first ? "" : ", ") + std::string("b[") + std::to_string(slot.at(b->var)) + "]";
        first = false;
      }
      c.line("auto run_" + top + " = " + call + (first ? symbolArgs().substr(symbols_.empty() ? 0 : 2) : symbolArgs()) + ");");
      c.line("run_" + top + ".wait();");
    }
    // Each output read back into a vector of its own buffer's size; output 0 feeds the next layer (or
    // token) when it has input 0's size, and token 0's outputs are kept for the comparison.
    std::string out = outputType();
    for (size_t i = 0; i < graph_.outputs.size(); ++i) {
      std::string var = "m_" + tid(base(graph_.outputs[i]));
      c.open("");
      c.line("xrt::bo& bo = b[" + std::to_string(slot.at(var)) + "];");
      c.line("std::vector<" + out + "> got(static_cast<size_t>(" + elemsCall(base(graph_.outputs[i])) +
             "));");
      c.line("bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, got.size() * sizeof(got[0]), 0);");
      c.line("bo.read(got.data(), got.size() * sizeof(got[0]), 0);");
      for (const CacheAppend& a : options_.caches)
        if (a.fresh == graph_.outputs[i]) appendToCache(c, a, slot);
      c.line("if (token == 0) outputs.insert(outputs.end(), got.begin(), got.end());");
      if (i == 0 && tensorType(graph_.inputs.at(0).name) == out) {
        c.open("if (got.size() == chained.size())");
        c.line("chained = got;");
        c.close();
        c.open("else if (token == 0 && layer == 0)");
        c.line(
            "std::printf(\"host: output 0 holds %zu values and input 0 %zu: every call keeps its own input "
            "0\\n\", got.size(), chained.size());");
        c.close();
      } else if (i == 0) {  // token ids in, activations out: nothing to chain
        c.line(
            "if (token == 0 && layer == 0) std::printf(\"host: output 0 is not of input 0's type: every call "
            "keeps its own input 0\\n\");");
      }
      c.close();
    }
    c.close();
    c.line("std::printf(\"token %d done\\n\", token);");
    for (const std::string& sym : growing) {
      c.open("if (" + sym + " == " + sym + "_max && token + 1 < tokens)");
      c.line("std::printf(\"host: the caches hold " + sym +
             "_max = %d positions: no room for token %d\\n\", " + sym + "_max, token + 1);");
      c.line("break;");
      c.close();
      c.line("++" + sym + ";");
    }
    c.close();
    c.line(
        "std::ofstream(\"data/host_outputs.bin\", std::ios::binary).write(reinterpret_cast<const "
        "char*>(outputs.data()), static_cast<long>(outputs.size() * sizeof(outputs[0])));");
    c.line("if (tokens < 1) return 0;");
    c.line("// The first token's outputs are the graph's on data/inputs.bin: the reference's.");
    readExpected(c);
    compareWithExpected(c, "host", false);
    c.close();
    return c.text();
  }

  // layout::append_<cache>(cache, fresh, symbols): the row-major cache at symbol + 1 positions, the new
  // one (at index `symbol` of the growing axis) from `fresh`, requantised to the cache's scale under W4A8.
  void appendFunction(Code& c, const CacheAppend& a) const {
    const std::vector<Expr>& shape = kg_.tensors.at(a.cache).shape;
    // The growing axis has `symbol` positions, or `symbol + 1` where the layer fills the last itself
    // (kv_append: the cache has room for the token's own row).
    size_t axis = shape.size();
    int64_t room = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d].symbols() != std::set<std::string>{a.symbol}) continue;
      int64_t r = shape[d].eval({{a.symbol, 5}}) - 5;
      if ((r == 0 || r == 1) && shape[d].eval({{a.symbol, 9}}) - 9 == r) axis = d, room = r;
    }
    auto unsupported = [&](const std::string& why) {
      return UserError("stc emit: error: cannot append '" + a.fresh + "' to the cache '" + a.cache +
                       "': " + why);
    };
    if (axis == shape.size()) throw unsupported("no axis of extent " + a.symbol);
    std::vector<Expr> outer(shape.begin(), shape.begin() + static_cast<long>(axis)),
        inner(shape.begin() + static_cast<long>(axis) + 1, shape.end());
    int64_t slice = 1;
    for (const Expr& d : outer) slice *= d.isConstant() ? d.eval() : -1;
    for (const Expr& d : inner) slice *= d.isConstant() ? d.eval() : -1;
    int64_t fresh = 1;
    for (const Expr& d : kg_.tensors.at(a.fresh).shape) fresh *= d.isConstant() ? d.eval() : -1;
    if (slice <= 0 || slice != fresh)
      throw unsupported("a position holds " + std::to_string(slice) + " elements, the new one " +
                        std::to_string(fresh));
    std::string type = tensorType(a.cache), freshType = outputType(), S = a.symbol;
    std::string was = room ? S + " + 1" : S, now = room ? S + " + 2" : S + " + 1";
    c.line("/// '" + a.cache + "' at " + S + " + 1 positions: its " + S + " positions, then '" + a.fresh +
           "' at position " + S + " of axis " + std::to_string(axis) +
           (quant_ ? ", requantised to the cache's scale" : "") +
           (room ? "; one more position of room, which the layer fills with its own row." : "."));
    c.open("inline std::vector<" + type + "> append_" + tid(a.cache) + "(const std::vector<" + type +
           ">& cache, const std::vector<" + freshType + ">& fresh, " + symbolParams(false) + ")");
    for (const auto& sym : symbols_)
      if (sym != S) c.line("(void)" + sym + ";");
    c.line("const long outer = " + emit::cxxProduct(outer) + ", inner = " + emit::cxxProduct(inner) + ";");
    c.line("std::vector<" + type + "> out(static_cast<size_t>(outer * (" + now + ") * inner));");
    c.open("for (long o = 0; o < outer; ++o)");
    c.line("for (long p = 0; p < " + S + " * inner; ++p) out[static_cast<size_t>(o * (" + now +
           ") * inner + p)] = cache[static_cast<size_t>(o * (" + was + ") * inner + p)];");
    std::string value = "fresh[static_cast<size_t>(o * inner + i)]";
    if (quant_)
      value = "st_q8(static_cast<float>(" + value + ") * kScale_" + tid(a.fresh) + " * kInverse_" +
              tid(a.cache) + ")";
    c.line("for (long i = 0; i < inner; ++i) out[static_cast<size_t>((o * (" + now + ") + " + S +
           ") * inner + i)] = " + value + ";");
    c.close();
    c.line("return out;");
    c.close();
  }

  // After output a.fresh of a layer is read into `got`: the layer's cache a.cache gains the new position
  // (layout::append_<cache>), and every DMA buffer holding it is packed again at symbol + 1, unless the
  // buffers are full.
  void appendToCache(Code& c, const CacheAppend& a, const std::map<std::string, int>& slot) const {
    std::string cache = "cache_" + tid(a.cache) + "[layer]";
    c.open("if (" + a.symbol + " < " + a.symbol + "_max)");
    c.line(cache + " = layout::append_" + tid(a.cache) + "(" + cache + ", got" + symbolArgs() + ");");
    std::map<std::string, std::string> next = {{a.symbol, a.symbol + " + 1"}};
    for (const auto& [task, b] : bufferOf_) {
      if (b.tensor != a.cache) continue;
      if (!b.packed) {
        c.line("put(b[" + std::to_string(slot.at(b.var)) + "], " + cache + ");");
        continue;
      }
      c.open("");
      c.line("std::vector<" + b.type + "> packed(static_cast<size_t>(" + wordsCall(task, next) + "));");
      c.line("layout::pack_" + dmaArgs_.at(task) + "(" + cache + ".data(), packed.data()" + symbolArgs(next) +
             ");");
      c.line("put(b[" + std::to_string(slot.at(b.var)) + "], packed);");
      c.close();
    }
    c.close();
  }

  std::string connectivity() const {
    std::string s = "# Generated by stc emit: one compute unit per fused group (a group no SLR holds: one per SLR, its\n"
                    "# parts joined by AXI4-Stream links), each DMA port on the HBM pseudo-channel the compiler\n"
                    "# balanced it to. A port that reads a tensor another group wrote reaches the channel holding it\n"
                    "# through the HBM switch (a range covering both).\n[connectivity]\n";
    for (const ComputeUnit& u : units_) s += "nk=" + topOf(u) + ":1:" + topOf(u) + "_1\n";
    for (const ComputeUnit& u : units_) {
      std::string top = topOf(u);
      for (const auto& [t, b] : unitArgs(u.group, u.slr)) {
        int lo = std::min(t->channel, b->channel), hi = std::max(t->channel, b->channel);
        std::string bank = lo == hi ? "HBM[" + std::to_string(lo) + "]" : "HBM[" + std::to_string(lo) + ":" + std::to_string(hi) + "]";
        s += "sp=" + top + "_1." + b->arg + ":" + bank + "\n";
      }
    }
    // Each unit in the first SLR whose share (the platform's per_slr, less the units before it) holds it; a
    // split group's parts in the SLRs the compiler cut them for.
    for (size_t i = 0; i < units_.size(); ++i) {
      std::string top = topOf(units_[i]);
      int slr = placement_.slrOf[i];
      const Resources& u = units_[i].resources;
      if (slr >= 0) {
        s += "slr=" + top + "_1:SLR" + std::to_string(slr) + "\n";
        continue;
      }
      s += "# " + top + "_1 (DSP " + std::to_string(u.dsp) + ", LUT " + std::to_string(u.lut) +
           ") fits no SLR's remaining share and no cut of it fits the SLRs: not pinned, Vivado spreads it\n"
           "# over the SLRs (its FIFOs that cross an SLR boundary are not registered; see the README).\n";
    }
    // The links between a split group's parts: writer's port to reader's, through the FIFO stream_connect
    // inserts. An AXI4-Stream Data FIFO is 16 to 32,768 entries deep in powers of two (PG085), so the link
    // holds the network's depth rounded up to one of those: more room than the network's FIFO never
    // deadlocks where it does not, and never slows it.
    for (const auto& [fifo, ends] : links()) {
      std::string var = "s_" + fifoIds_.at(fifo);
      int64_t depth = net_.fifos.at(static_cast<size_t>(net_.findFifo(fifo))).depth, entries = 16;
      while (entries < depth) entries *= 2;  // at most kMaxCrossingDepth: splitAtSlrs cuts no deeper stream
      s += "# '" + fifo + "': depth " + std::to_string(depth) + " in the network\n";
      s += "stream_connect=" + ends.first + "_1." + var + ":" + ends.second + "_1." + var + ":" +
           std::to_string(entries) + "\n";
    }
    return s;
  }

  // The FIFOs between the parts of split groups, each with the tops of its writer and reader.
  std::map<std::string, std::pair<std::string, std::string>> links() const {
    std::map<std::string, std::pair<const Task*, const Task*>> ends;
    for (const Task& t : net_.tasks) {
      for (const Phase& ph : t.phases)
        for (const Port& p : ph.ports) (p.dir == PortDir::kOut ? ends[p.fifo].first : ends[p.fifo].second) = &t;
      for (const Port& p : t.dmaPorts) (p.dir == PortDir::kOut ? ends[p.fifo].first : ends[p.fifo].second) = &t;
    }
    std::map<std::string, std::pair<std::string, std::string>> out;
    for (const auto& [fifo, e] : ends)
      if (e.first && e.second && e.first->slr != e.second->slr)
        out[fifo] = {topFunctionName(graph_, e.first->group, e.first->slr),
                     topFunctionName(graph_, e.second->group, e.second->slr)};
    return out;
  }
  bool splitGroup(int g) const {
    return std::any_of(units_.begin(), units_.end(), [g](const ComputeUnit& u) { return u.group == g && u.slr >= 0; });
  }

  std::string hlsConfig() const {
    char clock[32];
    std::snprintf(clock, sizeof clock, "%gns", 1000.0 / platform_.kernelClockMhz);
    return "# Generated by stc emit: settings every kernel shares, for v++ -c --mode hls (with hls_<top>.cfg).\n"
           "part=" + platform_.part + "\n\n[hls]\nflow_target=vitis\nclock=" + clock +
           "\npackage.output.format=xo\nsyn.cflags=-std=c++14 -Isrc\ncsim.code_analyzer=0\n";
  }

  std::string hlsTopConfig(const ComputeUnit& u) const {
    std::string top = topOf(u);
    return "# Generated by stc emit: the kernel of fused group " + std::to_string(u.group) +
           (u.slr >= 0 ? ", its part in SLR" + std::to_string(u.slr) : "") + ".\n[hls]\nsyn.file=src/" + top +
           ".cpp\nsyn.top=" + top + "\npackage.output.file=build/" + top + ".xo\n";
  }

  // The Makefile, in the shape of Vitis_Accel_Examples: TARGET=sw_emu|hw_emu|hw, outputs under
  // _x.<target>.<xsa> and build_dir.<target>.<xsa>, `run` with emconfig.json and XCL_EMULATION_MODE for the
  // emulation targets.
  std::string makefile() const {
    std::string tops;
    for (const auto& t : this->tops()) tops += (tops.empty() ? "" : " ") + t;
    char mhz[32];
    std::snprintf(mhz, sizeof mhz, "%g", platform_.kernelClockMhz);
    return "# Generated by stc emit.\n"
           "#   make csim                       C simulation with g++ alone: runs the kernels, compares with "
           "data/expected.bin\n"
           "#   make trace                      the C simulation recording every stream access: "
           "build/trace.txt\n"
           "#   make conform                    checks that trace against network.yaml (stc conform; STC= "
           "names "
           "stc)\n"
           "#   make dfsim                      the kernels concurrently, a thread a task, streams at their "
           "depths: deadlocks show\n"
           "#   make hls                        HLS synthesis of each kernel alone (v++ -c --mode hls): "
           "reports, II, latency\n"
           "#   make xclbin TARGET=<target>     one .xo per kernel (v++ -c -t), linked for the platform (v++ "
           "-l) with\n"
           "#                                   connectivity.cfg; <target> is sw_emu, hw_emu or hw (the "
           "default)\n"
           "#   make host                       the XRT host program\n"
           "#   make run TARGET=<target>        builds all three and runs the host (emulation: "
           "emconfig.json, XCL_EMULATION_MODE)\n"
           "PLATFORM ?= " +
           platform_.shell +
           "\n"
           "TARGET ?= hw\n"
           "KERNEL_FREQ ?= " +
           mhz +
           "\n"
           "CXX ?= g++\n"
           "STC ?= stc\n"
           "VPP ?= v++\n"
           "XILINX_XRT ?= /opt/xilinx/xrt\n"
           "TOKENS ?= 1\n"
           "TOPS := " +
           tops +
           "\n"
           "SRCS := $(TOPS:%=src/%.cpp)\n"
           "HEADERS := src/streamtensor.h src/st_numeric.h src/layout.h" +
           std::string(split_ ? " src/parts.h" : "") +
           "\n"
           "XSA := $(strip $(patsubst %.xpfm,%,$(notdir $(PLATFORM))))\n"
           "TEMP_DIR := _x.$(TARGET).$(XSA)\n"
           "BUILD_DIR := build_dir.$(TARGET).$(XSA)\n"
           "XCLBIN := $(BUILD_DIR)/streamtensor.xclbin\n"
           "EMCONFIG := $(TEMP_DIR)/emconfig.json\n"
           "VPP_FLAGS := -t $(TARGET) --platform $(PLATFORM) --save-temps --kernel_frequency $(KERNEL_FREQ)\n"
           "ifneq ($(TARGET),hw)\n"
           "VPP_FLAGS += -g\n"
           "endif\n\n"
           ".PHONY: csim trace conform dfsim hls xclbin host emconfig run clean\n\n"
           "csim: build/csim\n"
           "\t./build/csim\n\n"
           "build/csim: $(SRCS) $(HEADERS) csim/tb.cpp "
           "csim/hls_stream.h csim/hls_streamofblocks.h\n"
           "\t@mkdir -p build\n"
           "\t$(CXX) -std=c++17 -O1 -ffp-contract=off -Wno-unknown-pragmas -Icsim -Isrc $(SRCS) csim/tb.cpp "
           "-o $@\n\n"
           "trace: build/csim_trace\n"
           "\tST_TRACE_FILE=build/trace.txt ./build/csim_trace\n\n"
           "build/csim_trace: $(SRCS) $(HEADERS) csim/tb.cpp "
           "csim/hls_stream.h csim/hls_streamofblocks.h csim/st_trace.h\n"
           "\t@mkdir -p build\n"
           "\t$(CXX) -std=c++17 -O1 -ffp-contract=off -DST_TRACE -Wno-unknown-pragmas -Icsim -Isrc $(SRCS) "
           "csim/tb.cpp "
           "-o $@\n\n"
           "conform: trace\n"
           "\t$(STC) conform network.yaml build/trace.txt\n\n"
           "dfsim: build/dfsim\n"
           "\t./build/dfsim\n\n"
           "build/dfsim: $(SRCS) $(HEADERS) csim/tb.cpp "
           "csim/hls_stream.h csim/hls_streamofblocks.h csim/st_dfsim.h\n"
           "\t@mkdir -p build\n"
           "\t$(CXX) -std=c++17 -O1 -ffp-contract=off -DST_DFSIM '-DST_DFSIM_SRC=\"$(CURDIR)/src\"' -pthread "
           "-Wno-unknown-pragmas -Icsim -Isrc "
           "$(SRCS) "
           "csim/tb.cpp -o $@\n\n"
           "hls: $(TOPS:%=build/hls_%/done)\n\n"
           "build/hls_%/done: src/%.cpp src/streamtensor.h src/st_numeric.h hls_config.cfg hls_%.cfg\n"
           "\t$(VPP) -c --mode hls --platform $(PLATFORM) --config hls_config.cfg --config hls_$*.cfg "
           "--work_dir build/hls_$*\n"
           "\t@touch $@\n\n"
           "$(TEMP_DIR)/%.xo: src/%.cpp src/streamtensor.h src/st_numeric.h\n"
           "\t@mkdir -p $(TEMP_DIR)\n"
           "\t$(VPP) -c $(VPP_FLAGS) -k $* --temp_dir $(TEMP_DIR) -Isrc -o $@ $<\n\n"
           "xclbin: $(XCLBIN)\n\n"
           "$(XCLBIN): $(TOPS:%=$(TEMP_DIR)/%.xo) connectivity.cfg\n"
           "\t@mkdir -p $(BUILD_DIR)\n"
           "\t$(VPP) -l $(VPP_FLAGS) --temp_dir $(TEMP_DIR) --config connectivity.cfg -o $@ "
           "$(TOPS:%=$(TEMP_DIR)/%.xo)\n\n"
           "host: build/host\n\n"
           "build/host: host/host.cpp src/layout.h src/st_numeric.h\n"
           "\t@mkdir -p build\n"
           "\t$(CXX) -std=c++17 -O2 -Isrc -I$(XILINX_XRT)/include host/host.cpp -L$(XILINX_XRT)/lib "
           "-lxrt_coreutil -pthread -o $@\n\n"
           "emconfig: $(EMCONFIG)\n\n"
           "$(EMCONFIG):\n"
           "\t@mkdir -p $(TEMP_DIR)\n"
           "\temconfigutil --platform $(PLATFORM) --od $(TEMP_DIR)\n\n"
           "run: $(XCLBIN) build/host\n"
           "ifeq ($(TARGET),$(filter $(TARGET),sw_emu hw_emu))\n"
           "run: $(EMCONFIG)\n"
           "\tcp -f $(EMCONFIG) .\n"
           "\tXCL_EMULATION_MODE=$(TARGET) ./build/host $(XCLBIN) $(TOKENS)\n"
           "else\n"
           "\t./build/host $(XCLBIN) $(TOKENS)\n"
           "endif\n\n"
           "clean:\n"
           "\trm -rf build _x.* build_dir.* emconfig.json data/outputs.bin *.log *.jou .run .Xil\n";
  }

  // The XRT runtime settings `make run` picks up from the working directory: a run summary and a device
  // trace of every kernel and its m_axi ports, to set against the simulated timeline.
  static std::string xrtIni() {
    return "# Generated by stc emit: read by XRT from the directory the host runs in.\n"
           "[Debug]\n"
           "opencl_summary=true\n"
           "native_xrt_trace=true\n"
           "device_trace=fine\n"
           "stall_trace=all\n";
  }

  std::string readme() const {
    std::string s = "# " + graph_.name + ": a Vitis HLS project for " + platform_.name + " (generated by stc emit)\n\n";
    s += "- `src/`: one kernel per fused group" + std::string(split_ ? ", or per SLR where a group is split" : "") +
         " (" + std::to_string(units_.size()) + "):";
    for (const auto& t : tops()) s += " `" + t + "`";
    s += "; `src/layout.h`, the HBM buffers and how inputs and weights are packed in stream order.\n";
    s += "- `network.yaml`: the sized network the kernels were emitted from (`stc simulate network.yaml`): "
         "one task per\n"
         "  function, one FIFO per stream at its depth.\n";
    if (quant_)
      s += "- W4A8: int8 activations (one scale per tensor), int4 weights (one scale per output channel) packed two a\n"
           "  byte in stream order, int32 accumulation and a per-channel f32 epilogue; other ops dequantise, compute\n"
           "  in f32 and requantise (round half away from zero, saturate). `src/st_numeric.h` holds the rules.\n"
           "- `make csim`: builds with g++ alone and compares the kernels' int8 outputs with `data/expected.bin`, the\n"
           "  W4A8 reference's, bit for bit, and reports their error against `data/expected_f32.bin` (the f32\n"
           "  reference's); writes `data/outputs.bin`.\n";
    else
      s += "- `make csim`: builds with g++ alone and compares the kernels' outputs with `data/expected.bin`, "
           "the\n"
           "  reference interpreter's, within atol " +
           exactLiteral(options_.atol) + " + rtol " + exactLiteral(options_.rtol) +
           " x |expected|; writes `data/outputs.bin`.\n";
    char mhz[32];
    std::snprintf(mhz, sizeof mhz, "%g", platform_.kernelClockMhz);
    s += "- With Vitis and XRT (platform `" + platform_.shell +
         "`), from this directory:\n"
         "  1. `make csim` first: it needs g++ alone.\n"
         "  2. `make hls`: synthesises each kernel alone (`v++ -c --mode hls`, `hls_config.cfg` and "
         "`hls_<top>.cfg`,\n"
         "     clock " +
         std::string(mhz) +
         " MHz) and writes its reports under `build/hls_<top>/`: check the II and latency of every\n"
         "     task against `network.yaml`'s phases. The `m_axi` ports carry `depth=` for C/RTL "
         "co-simulation;\n"
         "     a kernel's ports on one HBM pseudo-channel share a bundle `gmem<n>`, a `channel=` each (an AXI\n"
         "     master per pseudo-channel; UG1399, \"M_AXI Channels\": Vitis 2023.1 or later, as the `[hls]`\n"
         "     config files need too).\n"
         "  3. `make run TARGET=sw_emu`, then `make run TARGET=hw_emu`: compile (`v++ -c -t`), link with\n"
         "     `connectivity.cfg` (`v++ -l`, `--kernel_frequency " +
         std::string(mhz) +
         "`), write `emconfig.json` and run the host\n"
         "     under `XCL_EMULATION_MODE`. Outputs go to `_x.<target>.<platform>/` and "
         "`build_dir.<target>.<platform>/`.\n"
         "  4. `make run` (TARGET=hw, hours of place and route): the host loads the xclbin, runs `TOKENS` "
         "(default 1)\n"
         "     tokens and compares with `data/expected.bin`. `xrt.ini` turns on the run summary and the "
         "device trace.\n";
    s += "- `data/inputs.bin`: raw little-endian f32 graph inputs in order";
    if (options_.layers > 1) s += ", layer after layer (input 0 only for layer 0: later layers take the previous output 0)";
    s += "; `data/weights.bin`: the weights in order" +
         std::string(quant_ ? " (int4 ones packed two a byte, int8 ones, then each int4 matmul's [N, 2] f32 epilogue)" : "") +
         std::string(options_.layers > 1 ? ", layer after layer" : "") +
         "; `data/expected.bin`: the graph outputs in order" + std::string(options_.layers > 1 ? ", layer after layer" : "") + ".\n";
    s += "- Placement (`connectivity.cfg`, `slr=`): each compute unit in the first SLR whose share of the "
         "platform "
         "file's\n  `per_slr` budgets, less the units placed before it, holds its resource estimate:\n";
    for (const std::string& line : placementLines()) s += "  - " + line + "\n";
    if (split_)
      s += "  A fused group that no SLR holds is split (stc compile) into one kernel per SLR, cut in stream order\n"
           "  where the parts fill their SLRs most evenly, never between a kernel and its DMAs. Each stream\n"
           "  between parts is an AXI4-Stream link: the writer's kernel port, a `stream_connect` FIFO at least\n"
           "  the network's depth, the reader's kernel port, both ports registered (`register_mode=both`). The\n"
           "  network is the same tasks and FIFOs; the link's registers, a few cycles a crossing that tokens\n"
           "  pass through, are not in it. The host starts every part of a group, then waits for them all;\n"
           "  `src/parts.h` runs them in the C simulation (one after another; together in make dfsim).\n";
    if (spansSlrs())
      s += "  A unit that no SLR holds, and that no cut between SLRs fits, is not pinned: Vivado places it across\n"
           "  SLRs, and the streams that cross an SLR boundary are not registered, so timing closure at the\n"
           "  kernel clock is not assured.\n";
    if (overShare())
      s += "  An SLR over its share holds parts whose FIFOs sizing deepened past the cut's estimate.\n";
    if (!symbols_.empty()) {
      s += "- Symbols of the C simulation:";
      for (const auto& sym : symbols_) s += " " + sym + " = " + std::to_string(bindings_.at(sym));
      s += " (kernel arguments; buffers are sized for their maxima).\n";
    }
    return s;
  }

  // inputs.bin, weights.bin and expected.bin.
  void data(std::vector<ProjectFile>& out) {
    std::vector<float> inputs, weights, expected;
    std::vector<float> given;
    if (!options_.inputsFile.empty()) {
      std::ifstream in(options_.inputsFile, std::ios::binary);
      if (!in) throw UserError(options_.inputsFile + ": error: cannot read the inputs file");
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (bytes.size() % sizeof(float) != 0)
        throw UserError(options_.inputsFile + ": error: the inputs file holds " + std::to_string(bytes.size()) +
                        " bytes, not a whole number of f32 values");
      given.resize(bytes.size() / sizeof(float));
      std::memcpy(given.data(), bytes.data(), bytes.size());
    }
    Random rng(options_.seed), weightRng(options_.seed ^ 0x5745494748545331ULL);  // inputs, weights: two streams
    size_t givenPos = 0;
    int64_t total = 0;
    std::map<std::string, Tensor> values;
    std::vector<float> chained;
    std::vector<std::map<std::string, Tensor>> layerValues, layerTensors;  // W4A8: calibration and quantisation
    for (int layer = 0; layer < options_.layers; ++layer) {
      for (size_t i = 0; i < graph_.inputs.size(); ++i) {
        const TensorDecl& t = graph_.inputs[i];
        Tensor v{bindShape(t.shape, bindings_), {}};
        int64_t n = elementsOf(t.shape, bindings_);
        total = checkedAdd(total, n * 4, "the project's data");
        if (total > kMaxDataBytes) tooLarge();
        if (layer > 0 && i == 0) {
          v.data.assign(chained.begin(), chained.end());
        } else if (!options_.inputsFile.empty()) {
          if (givenPos + static_cast<size_t>(n) > given.size()) inputsSizeError(given.size());
          v.data.assign(given.begin() + static_cast<std::ptrdiff_t>(givenPos), given.begin() + static_cast<std::ptrdiff_t>(givenPos + static_cast<size_t>(n)));
          givenPos += static_cast<size_t>(n);
        } else if (auto rows = idRange_.find(t.name); rows != idRange_.end()) {  // token ids: whole rows of the table
          for (int64_t k = 0; k < n; ++k)
            v.data.push_back(static_cast<float>(std::floor(rng.uniform(0, static_cast<double>(rows->second)))));
        } else if (t.dtype == "i1" || t.dtype == "i32" || t.dtype == "i64") {  // a mask (or lengths): 0 or 1;
          // 1 or 2 where the integer divides (the same draws, shifted: no other input moves)
          float shift = t.dtype != "i1" && divisors_.count(t.name) ? 1.0f : 0.0f;
          for (int64_t k = 0; k < n; ++k)
            v.data.push_back(static_cast<float>(std::floor(rng.uniform(0, 2))) + shift);
        } else {
          for (int64_t k = 0; k < n; ++k) v.data.push_back(static_cast<float>(rng.uniform(-1, 1)));
        }
        if (t.dtype == "i1" && !(layer > 0 && i == 0))  // given values too: 1 where not 0, as torch's bool()
          for (float& x : v.data) x = x != 0 ? 1.0f : 0.0f;
        if (!(layer > 0 && i == 0)) inputs.insert(inputs.end(), v.data.begin(), v.data.end());
        values[t.name] = std::move(v);
      }
      for (const TensorDecl& t : graph_.weights) {
        Tensor v{bindShape(t.shape, bindings_), {}};
        int64_t n = elementsOf(t.shape, bindings_);
        total = checkedAdd(total, n * 4, "the project's data");
        if (total > kMaxDataBytes) tooLarge();
        auto known = graph_.values.find(t.name);
        if (known != graph_.values.end() && static_cast<int64_t>(known->second.size()) == n) {
          v.data.assign(known->second.begin(), known->second.end());
        } else {
          // Weights of a layer scaled like a trained network's: matrices by 1/sqrt(fan-in), vectors near 1.
          double scale = v.shape.size() >= 2 ? 1.0 / std::sqrt(static_cast<double>(v.shape[v.shape.size() - 2])) : 0.5;
          double center = v.shape.size() >= 2 ? 0.0 : 1.0;
          for (int64_t k = 0; k < n; ++k) v.data.push_back(static_cast<float>(center + scale * weightRng.uniform(-1, 1)));
        }
        weights.insert(weights.end(), v.data.begin(), v.data.end());
        values[t.name] = std::move(v);
      }
      std::map<std::string, Tensor> env = interpret(graph_, values, bindings_);
      for (size_t i = 0; i < graph_.outputs.size(); ++i) {
        const Tensor& o = env.at(graph_.outputs[i]);
        expected.insert(expected.end(), o.data.begin(), o.data.end());
        if (i == 0) chained.assign(o.data.begin(), o.data.end());
      }
      total = checkedAdd(total, static_cast<int64_t>(expected.size()) * 4, "the project's data");
      if (total > kMaxDataBytes) tooLarge();
      if (quant_) {
        layerValues.push_back(values);
        layerTensors.push_back(std::move(env));
      }
    }
    if (!options_.inputsFile.empty() && givenPos != given.size()) inputsSizeError(given.size());
    out.push_back({"data/inputs.bin", bytesOf(inputs)});
    if (!quant_) {
      out.push_back({"data/weights.bin", bytesOf(weights)});
      out.push_back({"data/expected.bin", bytesOf(expected)});
      return;
    }
    // W4A8: scales from the f32 run, then each layer's weights and the quantised reference.
    plan_ = calibrate(graph_, layerTensors, options_.layers > 1);
    for (const Kernel& k : kg_.kernels)  // a softmax's sum aligns each token to its largest exponential
      if (k.op == "softmax.stats")
        plan_.softmaxTokens[graph_.ops.at(static_cast<size_t>(k.opIndex)).name] =
            tokenElements(k.phases.at(0).ports.at(0).order);
    std::string weightBytes, expectedBytes;
    std::vector<int8_t> chainedQ;
    for (int layer = 0; layer < options_.layers; ++layer) {
      const std::map<std::string, Tensor>& v = layerValues[static_cast<size_t>(layer)];
      QuantWeights qw = quantizeWeights(graph_, plan_, v);
      for (const TensorDecl& t : graph_.weights) {
        if (plan_.int4.count(t.name)) appendBytes(weightBytes, packInt4(qw.values.at(t.name)));
        else appendBytes(weightBytes, qw.values.at(t.name));
      }
      for (const auto& [epi, op] : epilogues_) appendBytes(weightBytes, qw.epilogue.at(op));
      std::map<std::string, std::vector<int8_t>> qin;
      std::map<std::string, Tensor> ids;
      for (size_t i = 0; i < graph_.inputs.size(); ++i) {
        const std::string& name = graph_.inputs[i].name;
        if (plan_.ids.count(name)) ids[name] = v.at(name);
        else qin[name] = layer > 0 && i == 0 ? chainedQ : quantizeValues(v.at(name).data, plan_.of(name));
      }
      std::map<std::string, std::vector<int8_t>> q = interpretQuantized(graph_, plan_, qw, qin, ids, bindings_);
      for (size_t i = 0; i < graph_.outputs.size(); ++i) {
        appendBytes(expectedBytes, q.at(graph_.outputs[i]));
        if (i == 0) chainedQ = q.at(graph_.outputs[i]);
      }
    }
    out.push_back({"data/weights.bin", weightBytes});
    out.push_back({"data/expected.bin", expectedBytes});
    out.push_back({"data/expected_f32.bin", bytesOf(expected)});
  }
  [[noreturn]] void tooLarge() const {
    throw UserError("stc emit: error: the project's data (inputs, weights, expected outputs) would exceed " +
                    std::to_string(kMaxDataBytes >> 20) + " MiB; emit fewer layers (--layers N) or smaller dimensions");
  }
  [[noreturn]] void inputsSizeError(size_t got) const {
    int64_t need = 0;
    for (int layer = 0; layer < options_.layers; ++layer)
      for (size_t i = layer > 0 ? 1 : 0; i < graph_.inputs.size(); ++i) need += elementsOf(graph_.inputs[i].shape, bindings_);
    throw UserError(options_.inputsFile + ": error: the inputs file holds " + std::to_string(got) +
                    " f32 values; the graph's inputs need " + std::to_string(need));
  }

  const Graph& graph_;
  const CompileResult& compiled_;
  const Platform& platform_;
  const EmitOptions& options_;
  const Network& net_;
  const KernelGraph& kg_;
  const bool quant_;  ///< W4A8: int8 activations, int4 weights (reference/quantized.h)
  QuantPlan plan_;    ///< its scales, from data()
  /// W4A8: each int4 matmul's epilogue tensor and op, in graph order (the order of weights.bin).
  const std::vector<std::pair<std::string, std::string>> epilogues_ = [this] {
    std::vector<std::pair<std::string, std::string>> out;
    if (quant_)
      for (const Op& op : graph_.ops)
        if (hasInt4Weight(graph_, op)) out.emplace_back(epilogueTensor(op.name), op.name);
    return out;
  }();
  std::set<int> groups_;
  std::vector<ComputeUnit> units_;  // the kernels: each group, or each part of a group split at SLR boundaries
  bool split_ = false;              // some group is split (src/parts.h)
  std::map<std::string, std::string> fifoIds_;  // each FIFO's identifier in the kernels
  Placement placement_;
  std::set<std::string> symbols_;
  Bindings bindings_;
  std::map<std::string, Buffer> bufferOf_;  // by DMA task
  std::map<std::string, Buffer> idsOf_;     // a gather's second argument, by DMA task
  std::map<std::string, int64_t> idRange_ = [this] {  // inputs that are token ids: the table's rows
    std::map<std::string, int64_t> out;
    for (const Op& op : graph_.ops)
      if (op.op == "embedding") out[op.inputs[0]] = kg_.tensors.at(op.inputs[1]).shape.front().eval(compiled_.options.maxima);
    return out;
  }();
  // Tensors that divide (a div's or fmod's divisor, a reciprocal's or log's argument), and what they are
  // copied or computed from alone (a reshape, a transpose, a one-input op): an integer input among them is
  // drawn 1 or 2, not 0 or 1, so that the reference and csim compare numbers, not infinities.
  std::set<std::string> divisors_ = [this] {
    std::set<std::string> out;
    for (const Op& op : graph_.ops) {
      if ((op.op == "div" || op.op == "fmod") && op.inputs.size() > 1) out.insert(op.inputs[1]);
      if ((op.op == "reciprocal" || op.op == "log") && !op.inputs.empty()) out.insert(op.inputs[0]);
    }
    for (bool grew = true; grew;) {
      grew = false;
      for (const Op& op : graph_.ops)
        if (out.count(op.output) && op.inputs.size() == 1 &&
            (op.op == "reshape" || op.op == "transpose" || op.op == "slice" || elementwiseArity(op.op) == 1))
          grew = out.insert(op.inputs[0]).second || grew;
    }
    return out;
  }();
  std::map<std::string, std::string> dmaArgs_ = emit::dmaArguments(net_);
  std::map<std::string, std::string> tensorIds_ = [this] {
    std::vector<std::string> names;
    for (const auto& [name, t] : kg_.tensors) names.push_back(name);
    return emit::uniqueIdentifiers(names);
  }();
  const std::string& tid(const std::string& tensor) const { return tensorIds_.at(tensor); }
  std::set<std::string> hbmTensors_;
};

// Writes files under a fresh folder next to dir, then moves it into place.
int64_t writeAtomically(const std::vector<ProjectFile>& files, const EmitOptions& options) {
  fs::path dir = options.dir;
  std::error_code ec;
  bool exists = fs::exists(dir, ec);
  if (exists && !fs::is_directory(dir, ec)) throw UserError(options.dir + ": error: exists and is not a folder");
  if (exists && !fs::is_empty(dir, ec) && !options.force)
    throw UserError(options.dir + ": error: the folder is not empty (pass --force to replace it)");
  fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  std::string stem = dir.filename().string();
  if (stem.empty() || stem == "." || stem == "..") throw UserError(options.dir + ": error: not a folder name stc can replace");
  fs::path tmp = parent / ("." + stem + ".tmp." + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  int64_t bytes = 0;
  try {
    for (const ProjectFile& f : files) {
      fs::path p = tmp / f.path;
      fs::create_directories(p.parent_path());
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      out << f.text;
      out.close();
      if (!out) throw UserError(options.dir + ": error: cannot write " + f.path);
      bytes += static_cast<int64_t>(f.text.size());
    }
    fs::path old = parent / ("." + stem + ".old." + std::to_string(::getpid()));
    if (exists) fs::rename(dir, old);
    fs::rename(tmp, dir);
    if (exists) fs::remove_all(old, ec);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw UserError(options.dir + ": error: cannot write the project (" + e.code().message() + ")");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return bytes;
}

}  // namespace

EmitSummary emitProject(const Graph& graph, const CompileResult& compiled, const Platform& platform,
                        const EmitOptions& options) {
  if (options.layers < 1) throw UserError("stc emit: error: --layers must be at least 1");
  ProjectWriter writer(graph, compiled, platform, options);
  std::vector<ProjectFile> files = writer.files();
  EmitSummary s;
  s.tops = writer.tops();
  s.notes = writer.notes();
  s.files = static_cast<int>(files.size());
  s.bytes = writeAtomically(files, options);
  return s;
}

}  // namespace stc
