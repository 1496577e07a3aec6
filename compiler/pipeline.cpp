// The compiler, stage by stage, with a check between stages:
//
//   Graph --inferShapes--> TypedGraph --(quantize)--> --chooseSchedules--> schedules
//         --lowerToKernels--> KernelGraph --costKernels--> --fuseKernels--> groups
//         --buildNetwork--> Network --assignChannelsByPhase--> --verifyNetwork--> --estimate resources-->
//         CompileResult
#include "compiler/pipeline.h"

#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "compiler/dse/channels.h"
#include "compiler/dse/cost_model.h"
#include "compiler/dse/fusion.h"
#include "compiler/dse/tiling.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/lower/kernels.h"
#include "compiler/lower/streams.h"
#include "compiler/reference/quantized.h"
#include "compiler/sizing/fifo_sizing.h"

namespace stc {

namespace {

// On-chip bytes of the platform: BRAM_18K (18 Kib each) and URAM (288 Kib each).
int64_t platformOnchipBytes(const Platform& p) {
  return p.kernelResources().memoryBits() / 8;
}

// W4A8 (reference/quantized.h): 2-D weights a matmul multiplies by become 4-bit, every other tensor
// 8-bit.
void quantize(TypedGraph& g) {
  std::set<std::string> matmulWeights;
  for (const Op& op : g.graph->ops)
    if (hasInt4Weight(*g.graph, op)) matmulWeights.insert(op.inputs[1]);
  for (auto& [name, t] : g.tensors) t.dtype = matmulWeights.count(name) ? "i4" : "i8";
}

// Memory for a buffer of `bytes`: LUTRAM up to 512 bytes (64 bits per LUT), BRAM_18K up to 64 blocks,
// URAM beyond.
void addBuffer(int64_t bytes, Resources& r) {
  int64_t bits = bytes * 8;
  if (bytes <= 512) r.lut += (bits + 63) / 64;
  else if ((bits + kBram18kBits - 1) / kBram18kBits <= 64)
    r.bram18k += (bits + kBram18kBits - 1) / kBram18kBits;
  else
    r.uram += (bits + kUramBits - 1) / kUramBits;
}

void addMemory(const sizing::MemoryBinding& m, Resources& r) {
  if (m.kind == "bram18k")
    r.bram18k += m.units;
  else if (m.kind == "uram")
    r.uram += m.units;
  else
    r.lut += m.units;
}

}  // namespace

Resources fifoResources(const Fifo& f) {
  Resources r;
  if (f.isRegion()) {  // a converter's ping-pong buffer
    addBuffer(f.storedTokens() * f.width / 8, r);
    r.lut += 300;
  } else {
    addMemory(sizing::bindMemory(f.depth, f.width), r);
  }
  r.ff = 2 * r.lut;
  return r;
}

namespace {

// One estimate per fused group (a compute unit): its kernels, adapters and DMAs (an AXI master and its
// read or write buffer each), and the FIFOs and converter buffers its tasks write.
std::vector<Resources> estimateGroups(const KernelGraph& kg, const Network& net, const NetworkRoles& roles,
                                      const HbmConfig& hbm) {
  int groups = 1;
  for (const Task& t : net.tasks) groups = std::max(groups, t.group + 1);
  std::vector<Resources> out(static_cast<size_t>(groups));
  std::map<std::string, int> writer;  // FIFO -> the group of the task writing it
  std::set<int> counted;              // kernels already counted
  for (const Task& t : net.tasks) {
    Resources& r = out[static_cast<size_t>(t.group)];
    for (const Phase& ph : t.phases)
      for (const Port& p : ph.ports)
        if (p.dir == PortDir::kOut) writer[p.fifo] = t.group;
    for (const Port& p : t.dmaPorts)
      if (p.dir == PortDir::kOut) writer[p.fifo] = t.group;
    if (t.isDma()) {  // an AXI master and the m_axi adapter's read or write buffer
      r.lut += 2000;
      addMemory(sizing::bindMemory(dmaBufferWords(hbm, t.kind == TaskKind::kDmaWrite), kDmaTokenBits), r);
    }
    auto role = roles.tasks.find(t.name);
    if (role == roles.tasks.end()) continue;
    if (role->second.kind == TaskRole::kSplit || role->second.kind == TaskRole::kPack ||
        role->second.kind == TaskRole::kJoin)
      r.lut += 200;  // shift logic
    if (role->second.kernel >= 0 &&
        counted.insert(role->second.kernel).second) {  // a gather of two readers once
      const Kernel& k = kg.kernels.at(static_cast<size_t>(role->second.kernel));
      r.dsp += k.dsp;
      r.lut += k.lut;
      if (k.bufferBytes) addBuffer(k.bufferBytes, r);
    }
  }
  for (const Fifo& f : net.fifos) {
    auto w = writer.find(f.name);
    out[static_cast<size_t>(w == writer.end() ? 0 : w->second)] += fifoResources(f);
  }
  for (Resources& r : out) r.ff = 2 * r.lut;
  return out;
}

Resources sum(const std::vector<Resources>& parts) {
  Resources r;
  for (const Resources& p : parts) r += p;
  return r;
}

double parseNumber(const std::string& key, const std::string& value) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) throw UserError("stc compile: error: --set " + key + " expects a number, got '" + value + "'");
  return v;
}

// A reshape is a view of its input's stream only when both sides have the same tile; narrow the tile (for
// the whole graph) until every reshape keeps it, as a head size below the tile needs.
int64_t tileForReshapes(const TypedGraph& g, int64_t tile) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const Op& op : g.graph->ops) {
      if (op.op != "reshape") continue;
      int64_t a = tileFor(g.tensors.at(op.inputs[0]).shape.back(), tile);
      int64_t b = tileFor(g.tensors.at(op.output).shape.back(), tile);
      if (a != b) {
        tile = std::gcd(a, b);
        changed = true;
      }
    }
  }
  return tile;
}

}  // namespace

std::vector<Resources> groupResources(const CompileResult& c, const Platform& platform) {
  return estimateGroups(c.kernels, c.network, c.roles, platform.hbm);
}

Placement placeUnits(const std::vector<Resources>& units, const std::vector<Resources>& budgets) {
  Placement out;
  out.used.assign(budgets.size(), Resources{});
  for (const Resources& u : units) {
    int at = -1;
    for (size_t s = 0; s < budgets.size() && at < 0; ++s)
      if (sum({out.used[s], u}).within(budgets[s])) at = static_cast<int>(s);
    if (at >= 0) out.used[static_cast<size_t>(at)] += u;
    out.slrOf.push_back(at);
  }
  return out;
}

void updateResources(CompileResult& c, const Platform& platform) {
  CompileReport& r = c.report;
  r.resources = sum(groupResources(c, platform));
  r.fits = r.resources.within(platform.kernelResources());
}

CompileOptions parseCompileOptions(const std::vector<std::string>& settings, const Platform& platform) {
  CompileOptions o;
  o.onchipBudgetBytes = platformOnchipBytes(platform) / 4;
  for (const std::string& kv : settings) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw UserError("stc compile: error: --set expects KEY=VALUE, got '" + kv + "'");
    std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    auto positiveInt = [&]() {
      double v = parseNumber(key, value);
      if (v < 1 || v != std::floor(v) || v > static_cast<double>(kMaxNumber)) throw UserError("stc compile: error: --set " + key + " expects a positive integer, got '" + value + "'");
      return static_cast<int64_t>(v);
    };
    auto atMost = [&](int64_t v, int64_t limit) {
      if (v > limit)
        throw UserError("stc compile: error: --set " + key + " must be at most " + std::to_string(limit) + ", got '" + value + "'");
      return v;
    };
    if (key == "tile") o.tile = atMost(positiveInt(), 4096);
    else if (key == "unroll_budget") {
      o.unrollBudget = parseNumber(key, value);
      if (!(o.unrollBudget > 0 && o.unrollBudget <= 1))
        throw UserError("stc compile: error: --set unroll_budget expects a share of the DSPs in (0, 1], got '" + value + "'");
    } else if (key == "onchip_budget_bytes") o.onchipBudgetBytes = atMost(positiveInt(), kMaxNumber);
    else if (key == "lane_ii") o.laneIi = value == "0" ? 0 : atMost(positiveInt(), 16);
    else if (key.rfind("lane_ii.", 0) == 0 && key.size() > 8) o.laneIiOf[key.substr(8)] = atMost(positiveInt(), 16);
    else if (key == "max_stripe")
      o.maxStripe = value == "0" ? 0 : static_cast<int>(atMost(positiveInt(), 32));
    else if (key == "quant") {
      if (value != "w4a8" && value != "none")
        throw UserError("stc compile: error: --set quant expects w4a8 or none, got '" + value + "'");
      o.quant = value;
    } else if (key.rfind("max_", 0) == 0 && key.size() > 4) o.maxima[key.substr(4)] = atMost(positiveInt(), int64_t{1} << 24);
    else if (key.rfind("tk.", 0) == 0 && key.size() > 3)
      o.pinnedTk[key.substr(3)] = atMost(positiveInt(), kMaxTk);
    else if (key.rfind("tn.", 0) == 0 && key.size() > 3)
      o.pinnedTn[key.substr(3)] = atMost(positiveInt(), kMaxTk);
    else if (key == "row_block") {
      bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      if (value != "auto" && !digits)
        throw UserError(
            "stc compile: error: --set row_block expects auto, 0 (every row) or rows per block, got '" +
            value + "'");
      o.rowBlockPolicy = value == "auto" ? -1 : value == "0" ? 0 : atMost(positiveInt(), kMaxNumber);
    } else if (key.rfind("row_block.", 0) == 0 && key.size() > 10)
      o.pinnedRowBlock[key.substr(10)] = value == "0" ? 0 : atMost(positiveInt(), kMaxNumber);
    else
      throw UserError(
          "stc compile: error: unknown setting '" + key +
          "' (known: tile, unroll_budget, onchip_budget_bytes, quant, lane_ii, max_stripe, max_SYMBOL, row_block, "
          "tk.OP, tn.OP, row_block.OP, lane_ii.OP)");
  }
  return o;
}

std::vector<std::string> applySchedule(const std::vector<SchedulePin>& pins, CompileOptions& options) {
  std::vector<std::string> applied;
  auto pin = [&](const std::string& knob, const std::string& op, const std::optional<int64_t>& value,
                 const SourceLoc& loc, std::map<std::string, int64_t>& pinned) {
    if (!value || pinned.count(op)) return;
    pinned[op] = *value;
    options.pinOrigin[knob + "." + op] = loc;
    applied.push_back(knob + "." + op + "=" + std::to_string(*value));
  };
  for (const SchedulePin& p : pins) {
    if (p.op.empty()) {  // the layer's lane II, unless --set lane_ii gave it
      if (p.laneIi && options.laneIi == 0) {
        options.laneIi = *p.laneIi;
        applied.push_back("lane_ii=" + std::to_string(*p.laneIi));
      }
      continue;
    }
    pin("tk", p.op, p.tk, p.tkLoc, options.pinnedTk);
    pin("tn", p.op, p.tn, p.tnLoc, options.pinnedTn);
    pin("row_block", p.op, p.rowBlock, p.rowBlockLoc, options.pinnedRowBlock);
    pin("lane_ii", p.op, p.laneIi, p.laneIiLoc, options.laneIiOf);
  }
  return applied;
}

std::vector<SchedulePin> schedulePins(const Schedules& schedules, const CompileOptions& chosen) {
  std::map<std::string, SchedulePin> byOp;
  for (const auto& [op, s] : schedules) {
    byOp[op].tk = s.tk;
    byOp[op].rowBlock = s.rowBlock;
    if (s.tn > 0) byOp[op].tn = s.tn;
  }
  for (const auto& [op, ii] : chosen.laneIiOf) byOp[op].laneIi = ii;
  std::vector<SchedulePin> pins;
  if (chosen.laneIi > 0) {
    pins.emplace_back();
    pins.back().laneIi = chosen.laneIi;
  }
  for (auto& [op, p] : byOp) {
    p.op = op;
    pins.push_back(p);
  }
  return pins;
}

void assignPhaseChannels(CompileResult& c, const Platform& platform) {
  Bindings phaseBindings;
  for (const auto& [symbol, maximum] : c.options.maxima) phaseBindings[symbol] = std::min<int64_t>(maximum, 128);
  assignChannelsByPhase(c.network, platform, phaseBindings);
}

CompileResult compileGraph(const Graph& graph, const Platform& platform, const CompileOptions& given) {
  auto begin = std::chrono::steady_clock::now();
  CompileOptions options = given;
  TypedGraph typed = inferShapes(graph);
  CompileResult out;
  for (const auto& s : typed.symbols())
    if (!options.maxima.count(s)) options.maxima[s] = kDefaultSymbolMaximum;
  if (options.quant == "w4a8") quantize(typed);
  options.tile = tileForReshapes(typed, options.tile);
  options.stripeCap = stripeCaps(typed, platform, options);
  Schedules schedules = chooseSchedules(typed, platform, options);
  KernelGraph kernels = lowerToKernels(typed, options, schedules);
  out.schedules = schedules;
  costKernels(kernels, options);
  FusionResult fusion = fuseKernels(kernels, options.onchipBudgetBytes, options);
  StreamCounts counts;
  out.network = buildNetwork(kernels, fusion, platform, options, counts, &out.roles);
  out.network.name = graph.name;
  out.options = options;
  if (options.phaseChannels) assignPhaseChannels(out, platform);
  verifyNetwork(out.network).throwIfAny();  // an internal error if it fails: compiled networks must verify
  CompileReport& r = out.report;
  r.kernels = counts.kernels;
  r.converters = counts.converters;
  r.dmas = counts.dmas;
  r.adapters = counts.adapters;
  r.fifos = static_cast<int>(out.network.fifos.size());
  r.groups = static_cast<int>(fusion.groupBytes.size());
  r.onchipBytesFused = fusion.fusedBytes;
  r.onchipBytesIntermediate = fusion.intermediateBytes;
  r.onchipBytesUnfused = unfusedBytes(kernels, options);
  out.kernels = std::move(kernels);
  updateResources(out, platform);
  r.compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return out;
}

}  // namespace stc
