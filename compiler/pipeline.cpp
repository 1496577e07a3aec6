// The compiler, stage by stage, with a check between stages:
//
//   Graph --inferShapes--> TypedGraph --(quantize)--> --chooseSchedules--> schedules
//         --lowerToKernels--> KernelGraph --costKernels--> --fuseKernels--> groups
//         --buildNetwork--> Network --assignChannelsByPhase--> --verifyNetwork--> --estimate resources-->
//         CompileResult
#include "compiler/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "compiler/dse/channels.h"
#include "compiler/dse/cost_model.h"
#include "compiler/dse/fusion.h"
#include "compiler/dse/tiling.h"
#include "compiler/frontend/shape_inference.h"
#include "compiler/lower/kernels.h"
#include "compiler/lower/streams.h"
#include "compiler/lower/triangles.h"
#include "compiler/reference/quantized.h"
#include "compiler/sizing/fifo_sizing.h"
#include "sim/engine.h"

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

// Unquantised, the design holds and streams every tensor in f32, as the emitted project does: a mask
// declared bool, ids declared i64, an f16 input all move as 32-bit values (before, their widths were
// their declared ones, and the emitted f32 project's tokens did not match its DMAs').
void holdInF32(TypedGraph& g) {
  for (auto& [name, t] : g.tensors) t.dtype = "f32";
}

// Every tensor held in HBM (an input, a weight, an output), at the largest values of its symbols, fits the
// platform's HBM: one past it is refused by name (a [2^18, 2^18] input ran the channel assignment's
// simulation for minutes before).
void requireHbmRoom(const TypedGraph& g, const Platform& platform, const CompileOptions& options) {
  const int64_t room = int64_t{platform.hbm.channels} * platform.hbm.channelBytes;
  for (const auto& [name, t] : g.tensors) {
    if (t.role == TensorRole::kIntermediate) continue;
    int64_t elements = 1;
    for (const Expr& d : t.shape) elements *= d.eval(options.maxima);  // at most 2^40 (checkSize)
    int64_t bytes = (elements * dtypeBits(t.dtype) + 7) / 8;
    if (bytes > room)
      throw UserError(formatError(t.loc, "tensor '" + name + "' holds " + std::to_string(bytes) +
                                             " bytes, more than the platform's HBM (" + std::to_string(room) +
                                             " bytes)"));
  }
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

int64_t intermediateBytesAtDepths(const CompileResult& c) {
  std::map<std::string, const Task*> writer, reader;
  for (const Task& t : c.network.tasks) {
    auto end = [&](const Port& p) { (p.dir == PortDir::kOut ? writer : reader)[p.fifo] = &t; };
    for (const Phase& ph : t.phases)
      for (const Port& p : ph.ports) end(p);
    for (const Port& p : t.dmaPorts) end(p);
  }
  // Whether the stream through `fifo` comes from a kernel (back) or goes to one: through adapters and
  // converters, not DMAs (an HBM tensor, or a later group's input).
  std::function<bool(const std::string&, bool)> reachesKernel = [&](const std::string& fifo, bool back) {
    auto at = back ? writer.find(fifo) : reader.find(fifo);
    if (at == (back ? writer.end() : reader.end()) || at->second->isDma()) return false;
    const Task& t = *at->second;
    auto role = c.roles.tasks.find(t.name);
    if (role != c.roles.tasks.end() && role->second.kind == TaskRole::kKernel) return true;
    for (const Phase& ph : t.phases)
      for (const Port& p : ph.ports)
        if ((p.dir == PortDir::kIn) == back && reachesKernel(p.fifo, back)) return true;
    return false;
  };
  int64_t bytes = 0;
  for (const Kernel& k : c.kernels.kernels) bytes += k.bufferBytes;
  for (const Fifo& f : c.network.fifos)
    if (!f.unbounded() && reachesKernel(f.name, true) && reachesKernel(f.name, false))
      bytes += (f.storedTokens() * f.width + 7) / 8;
  return bytes;
}

namespace {

// One estimate per task: its kernel, or a DMA's AXI master and read or write buffer, or an adapter's shift
// logic, and the FIFOs and converter buffers it writes (a FIFO nobody writes: the first
// task's). A kernel two tasks run (a gather's) is counted with the first.
std::vector<Resources> estimateTasks(const KernelGraph& kg, const Network& net, const NetworkRoles& roles,
                                     const HbmConfig& hbm) {
  std::vector<Resources> out(net.tasks.size());
  std::map<std::string, size_t> writer;  // FIFO -> the task writing it
  std::set<int> counted;                 // kernels already counted
  for (size_t i = 0; i < net.tasks.size(); ++i) {
    const Task& t = net.tasks[i];
    Resources& r = out[i];
    for (const Phase& ph : t.phases)
      for (const Port& p : ph.ports)
        if (p.dir == PortDir::kOut) writer[p.fifo] = i;
    for (const Port& p : t.dmaPorts)
      if (p.dir == PortDir::kOut) writer[p.fifo] = i;
    if (t.isDma()) {  // an AXI master and the m_axi adapter's read or write buffer
      r.lut += 2000;
      addMemory(sizing::bindMemory(dmaBufferWords(hbm, t.kind == TaskKind::kDmaWrite), kDmaTokenBits), r);
    }
    auto role = roles.tasks.find(t.name);
    if (role == roles.tasks.end()) continue;
    TaskRole::Kind kind = role->second.kind;
    if (kind == TaskRole::kSplit || kind == TaskRole::kPack || kind == TaskRole::kJoin)
      r.lut += 200;  // shift logic
    if (role->second.kernel >= 0 &&
        counted.insert(role->second.kernel).second) {  // a gather of two readers once
      const Kernel& k = kg.kernels.at(static_cast<size_t>(role->second.kernel));
      r.dsp += k.dsp;
      r.lut += k.lut;
      if (k.bufferBytes) {  // bank by bank
        Resources bank;
        addBuffer((k.bufferBytes + k.bufferBanks - 1) / k.bufferBanks, bank);
        r.lut += bank.lut * k.bufferBanks;
        r.bram18k += bank.bram18k * k.bufferBanks;
        r.uram += bank.uram * k.bufferBanks;
      }
    }
  }
  for (const Fifo& f : net.fifos) {
    auto w = writer.find(f.name);
    if (!out.empty()) out[w == writer.end() ? 0 : w->second] += fifoResources(f);
  }
  for (Resources& r : out) r.ff = 2 * r.lut;
  return out;
}

// One estimate per fused group (a compute unit): the sum of its tasks'.
std::vector<Resources> estimateGroups(const KernelGraph& kg, const Network& net, const NetworkRoles& roles,
                                      const HbmConfig& hbm) {
  int groups = 1;
  for (const Task& t : net.tasks) groups = std::max(groups, t.group + 1);
  std::vector<Resources> out(static_cast<size_t>(groups));
  std::vector<Resources> tasks = estimateTasks(kg, net, roles, hbm);
  for (size_t i = 0; i < tasks.size(); ++i) out[static_cast<size_t>(net.tasks[i].group)] += tasks[i];
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

// A reshape streams its input's tokens when both sides have the same tile, or through an adapter when one
// side's tile divides the other's (reshapeStreams); narrow the tile (for the whole graph) to the largest
// divisor of the given one at which every reshape does, as a symbolic side of another size needs.
int64_t tileForReshapes(const TypedGraph& g, int64_t tile) {
  // A view of a view streams its first base (lower/kernels.cpp): each reshape against that root.
  std::map<std::string, std::string> root;
  for (const Op& op : g.graph->ops)
    if (op.op == "reshape") {
      auto base = root.find(op.inputs[0]);
      root[op.output] = base != root.end() ? base->second : op.inputs[0];
    }
  for (int64_t t = tile; t > 1; --t) {
    if (tile % t != 0) continue;
    bool views = true;
    for (const auto& [view, base] : root)
      views = views && reshapeStreams(g.tensors.at(base).shape.back(), g.tensors.at(view).shape.back(), t);
    if (views) return t;
  }
  return 1;
}

}  // namespace

std::vector<Resources> groupResources(const CompileResult& c, const Platform& platform) {
  return estimateGroups(c.kernels, c.network, c.roles, platform.hbm);
}

Placement placeUnits(const std::vector<Resources>& units, const std::vector<Resources>& budgets,
                     const std::vector<int>& pinned) {
  Placement out;
  out.used.assign(budgets.size(), Resources{});
  out.slrOf.assign(units.size(), -1);
  auto pin = [&](size_t i) { return i < pinned.size() ? pinned[i] : -1; };
  for (size_t i = 0; i < units.size(); ++i)  // the pinned first, then the others in order
    if (pin(i) >= 0 && pin(i) < static_cast<int>(budgets.size())) {
      out.slrOf[i] = pin(i);
      out.used[static_cast<size_t>(pin(i))] += units[i];
    }
  for (size_t i = 0; i < units.size(); ++i) {
    if (pin(i) >= 0) continue;
    for (size_t s = 0; s < budgets.size() && out.slrOf[i] < 0; ++s)
      if (sum({out.used[s], units[i]}).within(budgets[s])) out.slrOf[i] = static_cast<int>(s);
    if (out.slrOf[i] >= 0) out.used[static_cast<size_t>(out.slrOf[i])] += units[i];
  }
  return out;
}

std::vector<ComputeUnit> computeUnits(const CompileResult& c, const Platform& platform) {
  std::vector<Resources> tasks = estimateTasks(c.kernels, c.network, c.roles, platform.hbm);
  std::map<std::pair<int, int>, Resources> units;  // (group, slr) -> resources
  for (size_t i = 0; i < tasks.size(); ++i) units[{c.network.tasks[i].group, c.network.tasks[i].slr}] += tasks[i];
  std::vector<ComputeUnit> out;
  for (auto& [key, r] : units) {
    r.ff = 2 * r.lut;
    out.push_back({key.first, key.second, r});
  }
  return out;
}

namespace {

// Whether a task only moves data for a kernel: a DMA, or an adapter between a DMA's beats and a stream.
bool plumbing(const Task& t, const NetworkRoles& roles) {
  auto role = roles.tasks.find(t.name);
  TaskRole::Kind kind = role == roles.tasks.end() ? TaskRole::kKernel : role->second.kind;
  return t.isDma() || kind == TaskRole::kSplit || kind == TaskRole::kPack || kind == TaskRole::kJoin;
}

// The tasks of group g, every FIFO's writer before its reader, in network order where free; a DMA read
// and its adapters just before the first task they feed, a DMA write and its adapters just after the task
// feeding them, so that a cut in this order separates kernels, not a kernel from its DMAs.
std::vector<size_t> groupInTopologicalOrder(const Network& net, const NetworkRoles& roles, int g) {
  std::vector<size_t> tasks;
  for (size_t i = 0; i < net.tasks.size(); ++i)
    if (net.tasks[i].group == g) tasks.push_back(i);
  std::map<std::string, size_t> writer, reader;
  auto ports = [&](const Task& t, const std::function<void(const Port&)>& f) {
    for (const Phase& ph : t.phases)
      for (const Port& p : ph.ports) f(p);
    for (const Port& p : t.dmaPorts) f(p);
  };
  for (size_t k = 0; k < tasks.size(); ++k)
    ports(net.tasks[tasks[k]], [&](const Port& p) { (p.dir == PortDir::kOut ? writer : reader)[p.fifo] = k; });
  std::vector<int> state(tasks.size(), 0);  // 0 new, 1 on the path, 2 placed
  std::vector<size_t> order;
  std::function<void(size_t)> visit = [&](size_t k) {
    if (state[k]) return;  // a cycle (1) cannot be cut in order: the caller finds a FIFO going back
    state[k] = 1;
    const Task& t = net.tasks[tasks[k]];
    ports(t, [&](const Port& p) {
      auto w = writer.find(p.fifo);
      if (p.dir == PortDir::kIn && w != writer.end()) visit(w->second);
    });
    state[k] = 2;
    order.push_back(tasks[k]);
    ports(t, [&](const Port& p) {
      auto r = reader.find(p.fifo);
      if (p.dir == PortDir::kOut && r != reader.end() && plumbing(net.tasks[tasks[r->second]], roles)) visit(r->second);
    });
  };
  for (size_t k = 0; k < tasks.size(); ++k)
    if (!plumbing(net.tasks[tasks[k]], roles)) visit(k);
  for (size_t k = 0; k < tasks.size(); ++k) visit(k);
  return order;
}

}  // namespace

int splitAtSlrs(CompileResult& c, const Platform& platform) {
  const std::vector<Resources>& budgets = platform.slrBudgets;
  if (budgets.size() < 2) return 0;
  Network& net = c.network;
  std::vector<Resources> perTask = estimateTasks(c.kernels, net, c.roles, platform.hbm);
  std::map<int, Resources> groupSum;
  for (size_t i = 0; i < net.tasks.size(); ++i) groupSum[net.tasks[i].group] += perTask[i];
  std::vector<Resources> used(budgets.size());
  std::map<std::string, size_t> fifoIndex;
  for (size_t i = 0; i < net.fifos.size(); ++i) fifoIndex[net.fifos[i].name] = i;
  int split = 0;
  // The groups an SLR holds whole first, as placeUnits places them after the parts pinned; then each other
  // group cut into what the SLRs have left.
  std::vector<int> toSplit;
  for (const auto& [g, total] : groupSum) {
    bool placed = false;
    for (size_t s = 0; s < budgets.size() && !placed; ++s)
      if (sum({used[s], total}).within(budgets[s])) {
        used[s] += total;
        placed = true;
      }
    if (!placed) toSplit.push_back(g);
    for (Task& t : net.tasks)
      if (t.group == g && placed) t.slr = -1;
  }
  for (int g : toSplit) {
    auto tasksOf = [&](const std::function<void(size_t)>& f) {
      for (size_t i = 0; i < net.tasks.size(); ++i)
        if (net.tasks[i].group == g) f(i);
    };
    // Cut the group in topological order into one part per SLR, never across a converter's region
    // (its ping-pong buffer is one block RAM), a stream wider than a crossing carries, or a FIFO going
    // back in the order (a cycle).
    std::vector<size_t> order = groupInTopologicalOrder(net, c.roles, g);
    const size_t n = order.size();
    std::map<std::string, std::pair<size_t, size_t>> span;  // FIFO -> (writer, reader) positions
    for (size_t k = 0; k < n; ++k) {
      const Task& t = net.tasks[order[k]];
      auto note = [&](const Port& p) {
        auto& e = span.try_emplace(p.fifo, n, n).first->second;
        (p.dir == PortDir::kOut ? e.first : e.second) = k;
      };
      for (const Phase& ph : t.phases)
        for (const Port& p : ph.ports) note(p);
      for (const Port& p : t.dmaPorts) note(p);
    }
    // A DMA and its adapters stay with the kernel they serve: only streams between kernels cross.
    auto moves = [&](size_t k) { return plumbing(net.tasks[order[k]], c.roles); };
    std::vector<bool> cuttable(n + 1, true);  // cut before position k
    for (const auto& [fifo, e] : span) {
      const Fifo& f = net.fifos[fifoIndex.at(fifo)];
      if (e.first >= n || e.second >= n) continue;
      bool keep = f.isRegion() || f.width > kMaxCrossingBits || f.unbounded() || f.depth > kMaxCrossingDepth ||
                  moves(e.first) || moves(e.second);
      for (size_t k = std::min(e.first, e.second) + 1; k <= std::max(e.first, e.second); ++k)
        if (keep || e.second < e.first) cuttable[k] = false;
    }
    // The cut whose fullest part is least full (each part's fill: its largest share of an SLR's remaining
    // LUTs, FFs, DSPs, BRAM or URAM), by dynamic programming over the cut positions: parts come out balanced,
    // with room for the FIFOs sizing deepens. A part may be empty (an SLR left out).
    const size_t slrs = budgets.size();
    std::vector<Resources> left(slrs);
    for (size_t s = 0; s < slrs; ++s) {
      const Resources &b = budgets[s], &u = used[s];
      left[s] = Resources{b.lut - u.lut, b.ff - u.ff, b.dsp - u.dsp, b.bram18k - u.bram18k, b.uram - u.uram, 0};
    }
    std::vector<Resources> prefix(n + 1);
    for (size_t k = 0; k < n; ++k) (prefix[k + 1] = prefix[k]) += perTask[order[k]];
    constexpr double kNoFit = 1e30;
    auto fill = [&](size_t s, size_t from, size_t to) {  // tasks [from, to) in SLR s
      const Resources &a = prefix[to], &b = prefix[from], &cap = left[s];
      double worst = 0;
      auto share = [&](int64_t used, int64_t capacity) {
        if (used <= 0) return;
        worst = std::max(worst, capacity <= 0 ? kNoFit : static_cast<double>(used) / static_cast<double>(capacity));
      };
      share(a.lut - b.lut, cap.lut);
      share(a.ff - b.ff, cap.ff);
      share(a.dsp - b.dsp, cap.dsp);
      share(a.bram18k - b.bram18k, cap.bram18k);
      share(a.uram - b.uram, cap.uram);
      return worst;
    };
    auto cutAt = [&](size_t k) { return k == 0 || k == n || cuttable[k]; };
    // best[s][k]: the least fullest part placing tasks [0, k) in SLRs 0..s, the last part from from[s][k].
    std::vector<std::vector<double>> best(slrs, std::vector<double>(n + 1, kNoFit));
    std::vector<std::vector<size_t>> from(slrs, std::vector<size_t>(n + 1, 0));
    for (size_t k = 0; k <= n; ++k)
      if (cutAt(k)) best[0][k] = fill(0, 0, k);
    for (size_t s = 1; s < slrs; ++s)
      for (size_t k = 0; k <= n; ++k) {
        if (!cutAt(k)) continue;
        for (size_t i = 0; i <= k; ++i) {
          if (!cutAt(i) || best[s - 1][i] >= kNoFit) continue;
          double v = std::max(best[s - 1][i], fill(s, i, k));
          if (v < best[s][k]) best[s][k] = v, from[s][k] = i;
        }
      }
    std::vector<int> partOf;
    if (best[slrs - 1][n] <= 1.0) {
      partOf.assign(n, 0);
      size_t k = n;
      for (size_t s = slrs; s-- > 1;) {
        size_t i = from[s][k];
        for (size_t j = i; j < k; ++j) partOf[j] = static_cast<int>(s);
        k = i;
      }
    }
    if (partOf.empty()) {
      // No cut fits: parts cut before (at shallower FIFOs) stay, over their shares, while no stream between
      // them is one a link cannot carry; else the group is one unit, left unpinned.
      bool kept = true;
      for (size_t k = 0; k < n; ++k)
        kept = kept && net.tasks[order[k]].slr >= 0 &&
               (k == 0 || net.tasks[order[k]].slr == net.tasks[order[k - 1]].slr || cuttable[k]);
      tasksOf([&](size_t i) {
        if (!kept) net.tasks[i].slr = -1;
        if (net.tasks[i].slr >= 0) used[static_cast<size_t>(net.tasks[i].slr)] += perTask[i];
      });
      continue;
    }
    ++split;
    for (size_t k = 0; k < n; ++k) {
      net.tasks[order[k]].slr = partOf[k];
      used[static_cast<size_t>(partOf[k])] += perTask[order[k]];
    }
  }
  return split;
}

void updateResources(CompileResult& c, const Platform& platform) {
  if (c.options.splitSlrs) splitAtSlrs(c, platform);  // the cut for the FIFOs' memory now
  CompileReport& r = c.report;
  r.resources = sum(groupResources(c, platform));
  r.fits = r.resources.within(platform.kernelResources());
}

bool fitsWithDepths(const CompileResult& c, const Network& sized, const Platform& platform) {
  CompileResult trial = c;
  trial.network = sized;
  updateResources(trial, platform);
  return trial.report.fits;
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
    else if (key == "slr_split") {
      if (value != "on" && value != "off")
        throw UserError("stc compile: error: --set slr_split expects on or off, got '" + value + "'");
      o.splitSlrs = value == "on";
    } else if (key == "fusion_joins") {
      if (value != "whole" && value != "trimmed")
        throw UserError("stc compile: error: --set fusion_joins expects whole or trimmed, got '" + value +
                        "'");
      o.joinsAtBounds = value == "whole";
    } else if (key == "causal_triangles") {
      if (value != "on" && value != "off")
        throw UserError("stc compile: error: --set causal_triangles expects on or off, got '" + value + "'");
      o.causalTriangles = value == "on";
      o.causalTrianglesGiven = true;
    } else if (key == "stripe_estimate") {
      if (value != "aligned" && value != "channels")
        throw UserError("stc compile: error: --set stripe_estimate expects aligned or channels, got '" +
                        value + "'");
      o.alignedStripeEstimate = value == "aligned";
      o.alignedStripeEstimateGiven = true;
    } else if (key == "quant") {
      if (value != "w4a8" && value != "none")
        throw UserError("stc compile: error: --set quant expects w4a8 or none, got '" + value + "'");
      o.quant = value;
    } else if (key.rfind("max_", 0) == 0 && key.size() > 4)
      o.maxima[key.substr(4)] = atMost(positiveInt(), int64_t{1} << 24);
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
    else if (key.rfind("dim.", 0) == 0 && key.size() > 4)
      o.importDims[key.substr(4)] = atMost(positiveInt(), int64_t{1} << 24);
    else
      throw UserError(
          "stc compile: error: unknown setting '" + key +
          "' (known: tile, unroll_budget, onchip_budget_bytes, quant, lane_ii, max_stripe, "
          "max_SYMBOL, row_block, "
          "slr_split, fusion_joins, stripe_estimate, tk.OP, tn.OP, row_block.OP, lane_ii.OP, dim.AXIS)");
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

namespace {

// Networks of more events than this (at the largest sample) keep every pipeline whole: the check below
// simulates the network twice per sample.
constexpr int64_t kDrainCheckEvents = 4'000'000;

}  // namespace

std::vector<Bindings> sizingBindings(const Network& net, const CompileOptions& options,
                                     const Bindings& bound) {
  std::vector<Bindings> at;
  for (const std::string& symbol : net.symbols()) {
    for (int64_t v : sizing::symbolSamples(options.maxima.at(symbol), options.tile)) {
      Bindings b = bound;
      b[symbol] = v;
      if (std::find(at.begin(), at.end(), b) == at.end() && b != bound) at.push_back(b);
    }
  }
  at.push_back(bound);
  return at;
}

void drainHeldPipelines(CompileResult& c, const Platform& platform) {
  // The samples the sizer checks a symbolic network at, every symbol at its maximum last.
  Bindings maxima;
  for (const std::string& s : c.network.symbols()) maxima[s] = c.options.maxima.at(s);
  const std::vector<Bindings> at = sizingBindings(c.network, c.options, maxima);
  // Candidates: a kernel's phase whose pipeline is at least as deep as an iteration of its outer loop
  // lasts at some sample, so that in one stall pipeline an outer iteration's last writes wait on the
  // reads of the next (a decode head's scores on the next head's key, which its projection makes later).
  Network drained = c.network;
  std::vector<std::string> names;
  for (Task& t : drained.tasks) {
    auto role = c.roles.tasks.find(t.name);
    if (role == c.roles.tasks.end() || role->second.kind != TaskRole::kKernel) continue;
    if (c.kernels.kernels[static_cast<size_t>(role->second.kernel)].op == "rope") continue;  // its own loop
    bool any = false;
    for (Phase& ph : t.phases) {
      if (ph.trip.size() < 2 || ph.outer > 0) continue;  // outer already (a triangular nest)
      bool held = false;
      for (const Bindings& b : at) {
        int64_t inner = 1;  // at most the latency, whatever the rest: no overflow
        for (size_t k = 1; k < ph.trip.size() && inner <= ph.latency; ++k) inner *= ph.trip[k].eval(b);
        held = held || (ph.trip[0].eval(b) > 1 && inner * ph.ii <= ph.latency);
      }
      if (held) ph.outer = 1, any = true;
    }
    if (any) names.push_back(t.name);
  }
  if (names.empty()) return;
  // Every sample's program first (the largest last: a network over the bound costs no simulation), then
  // the runs; a network the simulator refuses keeps its pipelines whole.
  auto cycles = [&](const Network& net) {
    std::vector<sim::Program> programs;
    for (const Bindings& b : at) {
      programs.push_back(sim::compileProgram(net, b, platform));
      if (programs.back().events > kDrainCheckEvents) return int64_t{-1};
    }
    int64_t sum = 0;
    for (const sim::Program& program : programs) {
      sim::SimResult r = sim::runDirect(program, {});
      if (r.deadlock) return int64_t{-1};
      sum += r.cycles;
    }
    return sum;
  };
  int64_t whole = -1, less = -1;
  try {
    whole = cycles(c.network);
    if (whole >= 0) less = cycles(drained);
  } catch (const UserError&) {
    return;
  }
  // A gain within the sizer's tolerance (1%) may not survive its depths (a 64-row causal attention's
  // softmax statistics, 0.7% faster at the compiler's depths, 0.7% slower sized).
  if (whole < 0 || less < 0 || less > whole - whole / 100) return;
  c.network = std::move(drained);
  c.report.drainedPipelines = std::move(names);
}

namespace {

// A constant width past the tile with no divisor from 2 to it (a prime: 1,009) streams one element a token:
// every kernel on it does one element a cycle, and its matmuls unroll over the other dimension only.
std::vector<std::string> narrowStreamWarnings(const TypedGraph& typed, int64_t tile) {
  std::vector<std::tuple<int, int, std::string>> found;
  for (const auto& [name, t] : typed.tensors) {
    if (t.shape.empty() || !t.shape.back().isConstant()) continue;
    int64_t width = t.shape.back().eval();
    if (width <= tile || tileFor(t.shape.back(), tile) != 1) continue;
    int64_t padded = (width + tile - 1) / tile * tile;
    found.emplace_back(t.loc.line, t.loc.column,
                       t.loc.str() + ": warning: tensor '" + name +
                           "' streams one element a token: its last dimension " + std::to_string(width) +
                           " has no divisor from 2 to the tile (" + std::to_string(tile) + "); padded to " +
                           std::to_string(padded) + " it would stream " + std::to_string(tile));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::get<2>(f));
  return out;
}

}  // namespace

namespace {

// The most events a network may have for compileGraph to run it when it weighs a causal attention's
// triangles (a 512-row GPT-2 medium attention: 24 M, a third of a second).
constexpr int64_t kTriangleCheckEvents = 32'000'000;

// A network's bindings for the comparison: its symbols at their maxima.
Bindings maximaOf(const Network& net, const CompileOptions& options) {
  Bindings b;
  for (const std::string& symbol : net.symbols()) b[symbol] = options.maxima.at(symbol);
  return b;
}

// A network's cycles as the FIFO sizer first measures it (sizing::measureDepths), on the lowering's channels
// and its symbols at their maxima; -2 where it deadlocks, -1 where it has more events than
// kTriangleCheckEvents.
int64_t measuredCycles(const Network& net, const CompileOptions& options, const Platform& platform) {
  sim::Program program = sim::compileProgram(net, maximaOf(net, options), platform);
  if (program.events > kTriangleCheckEvents) return -1;
  sizing::SizingOptions sizing;
  sizing.platform = platform;
  sim::RunConfig config;
  config.depths = sizing::measureDepths(program, sizing, false);
  sim::SimResult r = sim::runDirect(program, config);
  return r.deadlock ? -2 : r.cycles;
}

CompileResult compileGraphOnce(const Graph& graph, const Platform& platform, const CompileOptions& given);
void finishCompile(CompileResult& out, const Platform& platform);

}  // namespace

// A causal attention over held keys compiles both ways unless causal_triangles is set: its triangles (and
// the unroll search that counts their share of the keys) are kept where the network runs faster with them,
// or, too large to run here (a long prompt, where they gain most), where the bound no run beats is 3%
// lower; else every key, compiled without that share (also where the triangles could not be made).
CompileResult compileGraph(const Graph& graph, const Platform& platform, const CompileOptions& given) {
  CompileResult triangles = compileGraphOnce(graph, platform, given);
  const bool made = !triangles.report.triangularTasks.empty();
  if (given.causalTrianglesGiven || (!made && triangles.report.triangleSkipped.empty())) {
    finishCompile(triangles, platform);
    return triangles;
  }
  CompileOptions off = given;
  off.causalTriangles = false;
  CompileResult whole = compileGraphOnce(graph, platform, off);
  whole.report.compileSeconds += triangles.report.compileSeconds;
  std::string why = triangles.report.triangleSkipped;  // the triangles could not be made
  if (made) {
    try {
      int64_t a = measuredCycles(triangles.network, triangles.options, platform),
              b = measuredCycles(whole.network, whole.options, platform);
      bool measured = a >= 0 && b >= 0, keep = false;
      if (a == -2) {
        why = "the masked half skipped, the network deadlocks as the sizer measures it";
      } else if (!measured) {  // too large to run here: by the bound no run beats, a gain of 3% at least
        a = sim::lowerBoundCycles(
            sim::compileProgram(triangles.network, maximaOf(triangles.network, triangles.options), platform));
        b = sim::lowerBoundCycles(
            sim::compileProgram(whole.network, maximaOf(whole.network, whole.options), platform));
        keep = a * 100 < b * 97;
        why = "every key runs in " + std::to_string(b) + " cycles at least, the masked half skipped in " +
              std::to_string(a) + " (their busiest tasks and channels; kept where 3% fewer)";
      } else {
        keep = a < b;
        why = "every key runs in " + std::to_string(b) + " cycles, the masked half skipped in " +
              std::to_string(a) + ", as the sizer measures them";
      }
      if (keep) {
        triangles.report.compileSeconds = whole.report.compileSeconds;
        finishCompile(triangles, platform);
        return triangles;
      }
    } catch (const UserError& e) {  // a network the simulator refuses keeps every key
      why = std::string("the masked half skipped, the network does not run: ") + e.what();
    }
  }
  whole.report.triangleSkipped = why;
  finishCompile(whole, platform);
  return whole;
}

namespace {

CompileResult compileGraphOnce(const Graph& graph, const Platform& platform, const CompileOptions& given) {
  auto begin = std::chrono::steady_clock::now();
  CompileOptions options = given;
  TypedGraph typed = inferShapes(graph);
  CompileResult out;
  for (const auto& s : typed.symbols()) {
    auto model = graph.maxima.find(s);
    if (model != graph.maxima.end() && options.maxima.count(s) && options.maxima.at(s) > model->second)
      throw UserError(formatError(graph.loc, "max_" + s + "=" + std::to_string(options.maxima.at(s)) +
                                                 " is beyond the " + std::to_string(model->second) +
                                                 " the model takes"));
    if (!options.maxima.count(s))
      options.maxima[s] = model != graph.maxima.end() ? model->second : kDefaultSymbolMaximum;
  }
  if (options.quant == "w4a8")
    quantize(typed);
  else
    holdInF32(typed);
  requireHbmRoom(typed, platform, options);
  options.tile = tileForReshapes(typed, options.tile);
  if (options.tile > 1) out.report.warnings = narrowStreamWarnings(typed, options.tile);
  options.stripeCap = stripeCaps(typed, platform, options);
  std::optional<HeadsAlternative> heads;
  Schedules schedules = chooseSchedules(typed, platform, options, &heads);
  KernelGraph kernels = lowerToKernels(typed, options, schedules);
  costKernels(kernels, options);
  FusionResult fusion = fuseKernels(kernels, options.onchipBudgetBytes, options);
  // Attention kept rows outer for its cycles, holding more than the goal's share of its intermediate
  // results on chip (a causal one's K and V whole, for every head): written head by head it holds a head
  // of them (and the merged heads, whole, in front of the output projection), taken where that meets the
  // goal (a design still over it would pay the cycles for too little).
  auto share = [&](const FusionResult& f, const KernelGraph& k, const CompileOptions& o) {
    return static_cast<double>(f.intermediateBytes) /
           static_cast<double>(std::max<int64_t>(1, unfusedBytes(k, o)));
  };
  if (heads && share(fusion, kernels, options) > kOnchipShareGoal) {
    KernelGraph byHeads = lowerToKernels(typed, heads->options, heads->schedules);
    costKernels(byHeads, heads->options);
    FusionResult headsFusion = fuseKernels(byHeads, heads->options.onchipBudgetBytes, heads->options);
    if (share(headsFusion, byHeads, heads->options) <= kOnchipShareGoal) {
      options = heads->options;
      schedules = std::move(heads->schedules);
      kernels = std::move(byHeads);
      fusion = std::move(headsFusion);
    }
  }
  out.schedules = schedules;
  StreamCounts counts;
  out.network = buildNetwork(kernels, fusion, platform, options, counts, &out.roles);
  out.network.name = graph.name;
  out.options = options;
  out.report.onchipBytesUnfused = unfusedBytes(kernels, options);
  out.kernels = std::move(kernels);
  if (options.causalTriangles) {
    TriangleReport triangles = triangulateCausal(out.network, out.kernels, out.roles);
    out.report.triangularTasks = std::move(triangles.tasks);
    out.report.triangleKeyBlock = triangles.keyBlock;
    out.report.triangleSkipped = std::move(triangles.skipped);
  }
  CompileReport& r = out.report;
  r.kernels = counts.kernels;
  r.converters = counts.converters;
  r.dmas = counts.dmas;
  r.adapters = counts.adapters;
  r.groups = static_cast<int>(fusion.groupBytes.size());
  r.onchipBytesFused = fusion.fusedBytes;
  r.onchipBytesIntermediate = fusion.intermediateBytes;
  r.compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return out;
}

// The rest of a compilation, on the design kept: its DMAs' channels and drained pipelines (which run it),
// the check, the converters' regions a call and the resources.
void finishCompile(CompileResult& out, const Platform& platform) {
  auto begin = std::chrono::steady_clock::now();
  if (out.options.phaseChannels) {
    assignPhaseChannels(out, platform);
    drainHeldPipelines(out, platform);  // on the channels the network will have
  }
  verifyNetwork(out.network).throwIfAny();  // an internal error if it fails: compiled networks must verify
  out.network.maxima.clear();
  for (const std::string& s : out.network.symbols()) out.network.maxima[s] = out.options.maxima.at(s);
  // Each converter's regions in one call, at the symbols' maxima: its buffer never holds more blocks.
  std::map<std::string, int64_t> regions;
  for (const Task& t : out.network.tasks)
    for (const Phase& ph : t.phases)
      for (const Port& p : ph.ports)
        if (p.dir == PortDir::kOut) regions[p.fifo] = portTokens(ph, p, out.options.maxima);
  for (Fifo& f : out.network.fifos)
    if (f.isRegion() && regions.count(f.name)) f.regionsPerCall = regions.at(f.name);
  CompileReport& r = out.report;
  r.fifos = static_cast<int>(out.network.fifos.size());
  updateResources(out, platform);
  r.compileSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace

}  // namespace stc
