// Stream construction (see streams.h).
//
//   producer kernel --FIFO--> consumer                                  equal orders
//   producer kernel --FIFO--> cvt.w ==region FIFO (depth 2)==> cvt.r --FIFO--> consumer   orders differ
//   HBM --dma_read(s)--> [widen] --FIFO--> consumer                     inputs, weights, earlier groups
//   producer --FIFO--> [pack] --> dma_write --> HBM                     outputs, tensors of later groups
//
// A converter's write task reads the producer's stream and writes one region per iteration of the
// shared loops (one per run with none); its read task streams each region in the consumer's order.
#include "compiler/lower/streams.h"

#include <algorithm>
#include <map>

#include "compiler/dse/tiling.h"
#include "compiler/lower/edges.h"
#include "compiler/lower/kernels.h"
#include "compiler/reference/quantized.h"

namespace stc {

namespace {

std::string orderKey(const StreamOrder& o) {
  std::string s = o.dtype + "|";
  for (auto e : o.element) s += std::to_string(e) + ",";
  s += "|";
  for (const auto& t : o.trips) s += t.str() + ",";
  s += "|";
  for (auto st : o.steps) s += std::to_string(st) + ",";
  return s + "|" + o.map.str(true);
}

Expr times(const Expr& e, int64_t k) {
  if (k == 1) return e;
  if (e.isConstant()) return Expr(e.eval() * k);
  return Expr::parse("(" + e.str() + ")*" + std::to_string(k));
}

// The constant factor of a product of tripcounts (to know what it is divisible by).
int64_t constantFactor(const std::vector<Expr>& trips) {
  int64_t f = 1;
  for (const auto& t : trips)
    if (t.isConstant()) f *= t.eval();
  return f;
}

class Builder {
 public:
  Builder(const KernelGraph& g, const FusionResult& f, const Platform& p, const CompileOptions& o, StreamCounts& c,
          NetworkRoles* roles)
      : g_(g), f_(f), p_(p), o_(o), counts_(c), rolesOut_(roles) {}

  Network run() {
    net_.name = g_.tensors.empty() ? "network" : "compiled";
    kernelTask_.assign(g_.kernels.size(), -1);
    for (size_t k = 0; k < g_.kernels.size(); ++k) {
      const Kernel& kern = g_.kernels[k];
      if (kern.gather) continue;
      Task t;
      t.name = kern.name;
      t.group = f_.group[k];
      t.loc = kern.loc;
      for (const auto& ph : kern.phases) {
        Phase phase;
        phase.trip = ph.trip;
        phase.ii = kern.ii;
        phase.latency = kern.latency;
        phase.loc = kern.loc;
        t.phases.push_back(phase);
      }
      taskNames_.insert(t.name);
      TaskRole role;
      role.kernel = static_cast<int>(k);
      for (const auto& ph : kern.phases) role.portFifos.emplace_back(ph.ports.size());
      roles_.tasks[t.name] = role;
      kernelTask_[k] = addTask(std::move(t));
      ++counts_.kernels;
    }
    for (size_t k = 0; k < g_.kernels.size(); ++k) {
      if (g_.kernels[k].gather) continue;
      for (size_t ph = 0; ph < g_.kernels[k].phases.size(); ++ph)
        for (const KernelPort& port : g_.kernels[k].phases[ph].ports)
          if (!port.out) connectInput(k, ph, port);
    }
    // Tensors leaving the chip: graph outputs and produced tensors nobody on chip reads, unless a graph
    // output is a view of them that their producer's port writes (the heads of attention merged by a
    // transpose and a reshape: the output is the reshape, written once).
    auto isOutput = [&](const std::string& t) {
      return std::find(g_.outputs.begin(), g_.outputs.end(), t) != g_.outputs.end();
    };
    auto leavesAsAView = [&](const std::string& tensor, const KernelGraph::PortRef& ref) {
      for (const std::string& out : g_.outputs) {
        auto p = g_.producer.find(out);
        if (out != tensor && g_.viewOrder.count(out) && p != g_.producer.end() &&
            p->second.kernel == ref.kernel && p->second.phase == ref.phase && p->second.port == ref.port)
          return true;
      }
      return false;
    };
    for (const auto& [tensor, ref] : g_.producer) {
      if (g_.viewOrder.count(tensor) && !isOutput(tensor)) continue;  // written through its base
      if (isOutput(tensor) || (!consumed_.count(tensor) && !leavesAsAView(tensor, ref))) storeToHbm(tensor);
    }
    assignChannels();
    if (rolesOut_) *rolesOut_ = std::move(roles_);
    return std::move(net_);
  }

 private:
  int addTask(Task t) {
    net_.tasks.push_back(std::move(t));
    return static_cast<int>(net_.tasks.size()) - 1;
  }
  std::string addFifo(const std::string& base, int64_t width, int64_t depth) {
    std::string name = base;
    for (int n = 2; fifoNames_.count(name); ++n) name = base + "." + std::to_string(n);
    fifoNames_.insert(name);
    net_.fifos.push_back({name, width, depth, {}});
    return name;
  }
  static Port port(const std::string& fifo, PortDir dir, int level, const StreamOrder* order) {
    Port p;
    p.fifo = fifo;
    p.dir = dir;
    if (level != -2) p.level = level;
    if (order && !order->isSymbolic()) p.type = order->bind({});
    return p;
  }
  int taskGroup(int task) const { return net_.tasks[static_cast<size_t>(task)].group; }

  // The producer side of a tensor made by a kernel: its task adds an out port on `fifo`; a gather makes
  // a DMA read of its own for each reader.
  void attachProducer(const std::string& tensor, const std::string& into, int group) {
    const KernelGraph::PortRef& ref = g_.producer.at(tensor);
    const Kernel& kern = g_.kernels[static_cast<size_t>(ref.kernel)];
    const KernelPort& kp = kern.phases[static_cast<size_t>(ref.phase)].ports[static_cast<size_t>(ref.port)];
    std::string fifo = into;
    // A reshape view at another tile than its base's (lower/kernels.cpp): the producer writes its base's
    // tokens into an adapter that splits them into the view's narrower ones or packs them into wider.
    if (auto view = g_.viewOrder.find(tensor);
        view != g_.viewOrder.end() && view->second.element.back() != kp.order.element.back()) {
      const StreamOrder &base = kp.order, &own = view->second;
      bool split = base.element.back() > own.element.back();
      TaskRole role;
      role.kind = split ? TaskRole::kSplit : TaskRole::kPack;
      role.tensor = tensor;
      role.order = split ? own : base;
      role.ratio =
          split ? base.element.back() / own.element.back() : own.element.back() / base.element.back();
      fifo = addFifo(tensor + ">retile", base.tokenBits(), 2);
      roles_.tasks[addAdapter((split ? "split_" : "join_") + tensor, group, role.order.tokens(), role.ratio,
                              fifo, into, split)] = role;
    }
    if (kern.gather) {
      Task t;
      t.name = uniqueTask("load_" + kern.gatherTable + "_rows");
      t.kind = TaskKind::kDmaRead;
      t.group = group;
      t.bytes = times(kp.order.tokens(), kp.order.tokenBits() / 8);
      t.dmaPorts.push_back(port(fifo, PortDir::kOut, -2, &kp.order));
      t.loc = kern.loc;
      TaskRole role;
      role.kind = TaskRole::kGather;
      role.kernel = ref.kernel;
      role.tensor = kern.gatherTable;
      role.order = kp.order;
      roles_.tasks[t.name] = role;
      addTask(std::move(t));
      ++counts_.dmas;
      return;
    }
    roles_.tasks[net_.tasks[static_cast<size_t>(kernelTask_[static_cast<size_t>(ref.kernel)])].name]
        .portFifos[static_cast<size_t>(ref.phase)][static_cast<size_t>(ref.port)]
        .push_back(fifo);
    net_.tasks[static_cast<size_t>(kernelTask_[static_cast<size_t>(ref.kernel)])]
        .phases[static_cast<size_t>(ref.phase)]
        .ports.push_back(port(fifo, PortDir::kOut, kp.level, &kp.order));
  }
  std::string uniqueTask(const std::string& base) {
    std::string name = base;
    for (int n = 2; taskNames_.count(name); ++n) name = base + "." + std::to_string(n);
    taskNames_.insert(name);
    return name;
  }

  // A converter from `source` to `target` order over `tensor`, fed by `feedFifo`; returns the read task.
  int makeConverter(const std::string& tensor, const StreamOrder& source, const StreamOrder& target,
                    const ConverterPlan& plan, const std::vector<std::string>& feedFifos, int group) {
    std::string base = tensor + ".cvt" + std::to_string(++converterSerial_);
    int64_t regionBits = plan.bufferBytes / 2 * 8;
    std::string region = addFifo(base + ".region", std::max<int64_t>(regionBits, 8), 2);
    int level = plan.sharedLoops - 1;
    // Both sides loop over the split nests (the same tokens; their FIFOs keep the unsplit types).
    StreamOrder from = splitLoops(source, plan.producerSplits), to = splitLoops(target, plan.consumerSplits);
    Task w;
    w.name = uniqueTask(base + ".w");
    w.group = group;
    w.phases.push_back({from.trips, 1, 1, {}, {}});
    for (const std::string& feed : feedFifos)  // a striped stream's parts carry slices of each token
      w.phases[0].ports.push_back(port(feed, PortDir::kIn, -2, feedFifos.size() == 1 ? &source : nullptr));
    w.phases[0].ports.push_back(port(region, PortDir::kOut, level, nullptr));
    TaskRole role;
    role.kind = TaskRole::kConverterWrite;
    role.tensor = tensor;
    role.order = from;
    role.target = to;
    role.sharedLoops = plan.sharedLoops;
    role.region = plan.bufferShape;
    roles_.tasks[w.name] = role;
    addTask(std::move(w));
    Task r;
    r.name = uniqueTask(base + ".r");
    r.group = group;
    r.phases.push_back({to.trips, 1, 2, {port(region, PortDir::kIn, level, nullptr)}, {}});
    role.kind = TaskRole::kConverterRead;
    roles_.tasks[r.name] = role;
    ++counts_.converters;
    counts_.converterBytes += plan.storedBytes();
    return addTask(std::move(r));
  }

  // Bytes of a stream's storage unit (an element; a byte of two int4 weights): a stripe holds whole ones.
  static int64_t unitBytes(const StreamOrder& order) { return std::max(1, dtypeBits(order.dtype) / 8); }

  // A W4A8 epilogue streams beside its weight all along, on channels the weight's stripes fill: striped
  // so that each channel carrying a part of it moves at most a sixteenth more than a weight stripe
  // (an LM head's [50304, 2] over 32 weight channels: 8 stripes, not 2). The fewest stripes of whole
  // bytes that do, beat-aligned, at most a quarter of the weight's (each stripe is a DMA, an AXI master of
  // its own); 0 for any other tensor.
  int epilogueStripes(const std::string& tensor, const StreamOrder& order) const {
    for (const Kernel& k : g_.kernels) {
      if ((k.op != "matmul" && k.op != "linear") || epilogueTensor(k.opName) != tensor) continue;
      const StreamOrder& w = k.phases[0].ports[1].order;
      int64_t wordBytes = w.tokenBits() / 8, bytes = order.tokenBits() / 8;
      if (wordBytes <= 0 || bytes <= 0) return 0;
      double weightBytes = static_cast<double>(wordBytes) * static_cast<double>(w.tokens().eval(o_.maxima));
      double epiBytes = static_cast<double>(bytes) * static_cast<double>(order.tokens().eval(o_.maxima));
      int weightStripes = wholeStripes(wordBytes, p_, o_, k.phases[0].ports[1].tensor, unitBytes(w));
      double need = 16.0 * weightStripes * epiBytes / weightBytes;
      int most = 0;
      for (int n = 1; n <= weightStripes / 4; ++n)
        if ((bytes / unitBytes(order)) % n == 0 && beatAligned(bytes / n)) {
          most = n;
          if (n >= need) return n;
        }
      return most;
    }
    return 0;
  }

  // DMA read(s) of `tensor` in `order` into FIFO(s) feeding `consumer` phase `phase`; returns the FIFOs
  // the consumer reads (several when the weight is striped over channels).
  std::vector<std::string> loadFromHbm(const std::string& tensor, const StreamOrder& order, bool stripe, int group) {
    int64_t bits = order.tokenBits();
    int stripes = 1;
    if (stripe && bits % 8 == 0)
      stripes = std::max(wholeStripes(bits / 8, p_, o_, tensor, unitBytes(order)), epilogueStripes(tensor, order));
    requireWholeBytes(tensor, bits);
    std::vector<std::string> fifos;
    for (int s = 0; s < stripes; ++s) {
      int64_t sbits = bits / stripes;
      std::string suffix = stripes > 1 ? ".s" + std::to_string(s) : "";
      std::string into = addFifo(tensor + suffix + ".hbm", sbits, 2);
      Expr tokens = order.tokens();
      Task d;
      d.name = uniqueTask("load_" + tensor + suffix);
      d.kind = TaskKind::kDmaRead;
      d.group = group;
      int64_t ratio = kDmaTokenBits / sbits, beats = sbits / kDmaTokenBits;
      bool widen = sbits < kDmaTokenBits && kDmaTokenBits % sbits == 0 && constantFactor(order.trips) % ratio == 0;
      TaskRole role;
      role.kind = TaskRole::kLoad;
      role.tensor = tensor;
      role.order = order;
      role.stripe = s;
      role.stripes = stripes;
      role.packed = !g_.producer.count(tensor);
      // Tokens of several whole beats (a packed stream's, or a row-major tensor's whose tokens the emitted
      // port reads as aligned beats): the DMA moves beats, one a cycle as an m_axi port can, and a join
      // makes the tokens (a DMA token is at most one beat).
      bool join = sbits > kDmaTokenBits && sbits % kDmaTokenBits == 0 &&
                  (role.packed || dmaWholeBeats(g_.tensors.at(tensor), order));
      role.ratio = widen ? ratio : 1;
      roles_.tasks[d.name] = role;
      if (widen || join) {  // 512-bit DMA tokens, split into the consumer's narrower ones or joined into its wider
        std::string beat = addFifo(tensor + suffix + (widen ? ".wide" : ".beats"), kDmaTokenBits, 2);
        role.kind = widen ? TaskRole::kSplit : TaskRole::kJoin;
        role.ratio = widen ? ratio : beats;
        std::string name = (widen ? "widen_" : "join_") + tensor + suffix;
        roles_.tasks[widen ? addAdapter(name, group, tokens, ratio, beat, into, true)
                           : addAdapter(name, group, times(tokens, beats), beats, beat, into, false)] = role;
        d.dmaPorts.push_back(port(beat, PortDir::kOut, -2, nullptr));
      } else {
        d.dmaPorts.push_back(port(into, PortDir::kOut, -2, stripes == 1 ? &order : nullptr));
      }
      d.bytes = times(tokens, sbits / 8);
      addTask(std::move(d));
      ++counts_.dmas;
      fifos.push_back(into);
    }
    return fifos;
  }

  void connectInput(size_t k, size_t ph, const KernelPort& kp) {
    int consumer = kernelTask_[k];
    std::vector<std::string>& fifosOfPort =
        roles_.tasks[net_.tasks[static_cast<size_t>(consumer)].name]
            .portFifos[ph][static_cast<size_t>(&kp - g_.kernels[k].phases[ph].ports.data())];
    int group = taskGroup(consumer);
    consumed_.insert(kp.tensor);
    for (auto v = g_.viewOf.find(kp.tensor); v != g_.viewOf.end(); v = g_.viewOf.find(v->second))
      consumed_.insert(v->second);  // a view's base is read through it
    auto prod = g_.producer.find(kp.tensor);
    bool onChip = prod != g_.producer.end() && f_.group[static_cast<size_t>(prod->second.kernel)] == group;
    if (prod != g_.producer.end() && !onChip) storeToHbm(kp.tensor);
    EdgePlan plan = planEdge(g_, kp, onChip, o_);
    const std::string consumerName = net_.tasks[static_cast<size_t>(consumer)].name;
    auto intoConsumer = [&](int fromTask, size_t fromPhase, const StreamOrder* type) {
      std::string fifo = addFifo(kp.tensor + ">" + consumerName, kp.order.tokenBits(), plan.fifoDepth);
      net_.tasks[static_cast<size_t>(fromTask)].phases[fromPhase].ports.push_back(port(fifo, PortDir::kOut, -2, type));
      net_.tasks[static_cast<size_t>(consumer)].phases[ph].ports.push_back(port(fifo, PortDir::kIn, kp.level, &kp.order));
      fifosOfPort.push_back(fifo);
    };
    switch (plan.kind) {
      case EdgePlan::kFifo: {
        std::string fifo = addFifo(kp.tensor + ">" + consumerName, kp.order.tokenBits(), plan.fifoDepth);
        attachProducer(kp.tensor, fifo, group);
        net_.tasks[static_cast<size_t>(consumer)].phases[ph].ports.push_back(port(fifo, PortDir::kIn, kp.level, &kp.order));
        fifosOfPort.push_back(fifo);
        return;
      }
      case EdgePlan::kConverter:
      case EdgePlan::kDmaConverter: {
        // Readers of one order share a converter of a stream made on chip, but for a join keeping tokens in
        // front of its own (edges.cpp: the fork is then before it); each reader of a tensor from HBM has its
        // own DMA reads and converter, so that no fork couples readers that join later (the projections of
        // x, whose results meet in the scores): a join keeps only what is linked on chip
        // (lower/kernels.cpp: markJoins).
        // A join of a stream with itself (torch.cat((freqs, freqs), -1) of a stream) keeps tokens at each of
        // its ports: a converter each, as a shared one would fork at its reader into FIFOs of 2 in front of
        // a kernel that takes one port's row before the other's, and deadlock.
        bool joinKeeps = kp.joinKeep && kp.keepTokens > 0;
        bool own = plan.kind == EdgePlan::kDmaConverter || joinKeeps;
        std::string key = kp.tensor + "@" + std::to_string(group) + "#" + orderKey(kp.order) +
                          (own ? ">" + consumerName : "") +
                          (joinKeeps ? "@port" + std::to_string(ph) + "." +
                                           std::to_string(&kp - g_.kernels[k].phases[ph].ports.data())
                                     : "");
        auto it = converters_.find(key);
        if (it == converters_.end()) {
          std::vector<std::string> feed;
          if (plan.kind == EdgePlan::kConverter) {
            feed.push_back(addFifo(kp.tensor + ">cvt", plan.source.tokenBits(), plan.feedDepth));
            attachProducer(kp.tensor, feed.back(), group);
          } else {  // a weight re-streamed per row block is striped like one read straight
            feed = loadFromHbm(kp.tensor, plan.source, kp.weight && kp.restream, group);
          }
          int reader = makeConverter(kp.tensor, plan.source, kp.order, plan.converter, feed, group);
          it = converters_.emplace(key, reader).first;
        }
        intoConsumer(it->second, 0, &kp.order);
        return;
      }
      case EdgePlan::kAdapter: {  // shift logic between the producer's tokens and the consumer's
        std::string feed = addFifo(kp.tensor + ">adapt", plan.source.tokenBits(), 2);
        attachProducer(kp.tensor, feed, group);
        std::string fifo = addFifo(kp.tensor + ">" + consumerName, kp.order.tokenBits(), plan.fifoDepth);
        const StreamOrder& narrow = plan.split ? kp.order : plan.source;
        TaskRole role;
        role.kind = plan.split ? TaskRole::kSplit : TaskRole::kPack;
        role.tensor = kp.tensor;
        role.order = narrow;
        role.ratio = plan.ratio;
        roles_.tasks[addAdapter((plan.split ? "split_" : "join_") + kp.tensor, group, narrow.tokens(), plan.ratio,
                                feed, fifo, plan.split)] = role;
        net_.tasks[static_cast<size_t>(consumer)].phases[ph].ports.push_back(port(fifo, PortDir::kIn, kp.level, &kp.order));
        fifosOfPort.push_back(fifo);
        return;
      }
      case EdgePlan::kDma: {
        std::vector<std::string> fifos = loadFromHbm(kp.tensor, kp.order, kp.weight, group);
        for (const std::string& fifo : fifos)  // a striped stream's parts carry slices, not the tensor's type
          net_.tasks[static_cast<size_t>(consumer)].phases[ph].ports.push_back(
              port(fifo, PortDir::kIn, kp.level, fifos.size() == 1 ? &kp.order : nullptr));
        fifosOfPort = fifos;
        return;
      }
    }
  }

  // A DMA write of `tensor` (once) in its producer's order, from the producer's group.
  void storeToHbm(const std::string& tensor) {
    if (!stored_.insert(tensor).second) return;
    const KernelGraph::PortRef& ref = g_.producer.at(tensor);
    const StreamOrder& order = producedOrder(g_, tensor);
    int group = f_.group[static_cast<size_t>(ref.kernel)];
    int64_t bits = order.tokenBits();
    requireWholeBytes(tensor, bits);
    std::string fifo = addFifo(tensor + ">hbm", bits, 2);
    attachProducer(tensor, fifo, group);
    Task d;
    d.name = uniqueTask("store_" + tensor);
    d.kind = TaskKind::kDmaWrite;
    d.group = group;
    int64_t ratio = kDmaTokenBits / std::max<int64_t>(bits, 1), beats = bits / kDmaTokenBits;
    bool pack = bits < kDmaTokenBits && kDmaTokenBits % bits == 0 && constantFactor(order.trips) % ratio == 0;
    // Tokens of several whole beats that the emitted port writes as aligned beats: a split gives the DMA
    // one beat a cycle, as an m_axi port moves them.
    bool split =
        bits > kDmaTokenBits && bits % kDmaTokenBits == 0 && dmaWholeBeats(g_.tensors.at(tensor), order);
    TaskRole role;
    role.kind = TaskRole::kStore;
    role.tensor = tensor;
    role.order = order;
    role.ratio = pack ? ratio : 1;
    roles_.tasks[d.name] = role;
    if (pack) {
      std::string wide = addFifo(tensor + ">hbm.wide", kDmaTokenBits, 2);
      role.kind = TaskRole::kPack;
      roles_.tasks[addAdapter("pack_" + tensor, group, order.tokens(), ratio, fifo, wide, false)] = role;
      d.dmaPorts.push_back(port(wide, PortDir::kIn, -2, nullptr));
    } else if (split) {
      std::string beat = addFifo(tensor + ">hbm.beats", kDmaTokenBits, 2);
      role.kind = TaskRole::kSplit;
      role.ratio = beats;
      roles_.tasks[addAdapter("beats_" + tensor, group, times(order.tokens(), beats), beats, fifo, beat, true)] = role;
      d.dmaPorts.push_back(port(beat, PortDir::kIn, -2, nullptr));
    } else {
      d.dmaPorts.push_back(port(fifo, PortDir::kIn, -2, &order));
    }
    d.bytes = times(order.tokens(), bits / 8);
    addTask(std::move(d));
    ++counts_.dmas;
  }

  // A width adapter over `narrowTokens` tokens, `ratio` of them per 512-bit token: it splits wide tokens
  // (read once per outer iteration) into narrow ones, or packs narrow ones into wide.
  std::string addAdapter(const std::string& name, int group, const Expr& narrowTokens, int64_t ratio, const std::string& in,
                         const std::string& out, bool split) {
    Task a;
    a.name = uniqueTask(name);
    a.group = group;
    Expr wideTokens = narrowTokens.isConstant()
                          ? Expr(narrowTokens.eval() / ratio)
                          : Expr::parse("(" + narrowTokens.str() + ")/" + std::to_string(ratio));
    a.phases.push_back({{wideTokens, Expr(ratio)}, 1, 1,
                        {port(in, PortDir::kIn, split ? 0 : -2, nullptr), port(out, PortDir::kOut, split ? -2 : 0, nullptr)},
                        {}});
    std::string taskName = a.name;
    addTask(std::move(a));
    ++counts_.adapters;
    return taskName;
  }

  // DMAs move whole bytes: a token of 4-bit elements needs an even number of them.
  void requireWholeBytes(const std::string& tensor, int64_t bits) const {
    if (bits % 8 == 0) return;
    const TensorInfo& t = g_.tensors.at(tensor);
    throw UserError(formatError(t.loc, "unsupported: tensor '" + tensor + "' (" + t.dtype + ", last dimension " +
                                           t.shape.back().str() + ") would move through HBM in " +
                                           std::to_string(bits) + "-bit tokens; DMAs move whole bytes"));
  }

  // Each group's DMAs, largest first, to the channel that serves the fewest bytes so far.
  void assignChannels() {
    std::map<int, std::vector<Task*>> byGroup;
    for (Task& t : net_.tasks)
      if (t.isDma()) byGroup[t.group].push_back(&t);
    for (auto& [group, dmas] : byGroup) {
      std::stable_sort(dmas.begin(), dmas.end(), [&](const Task* a, const Task* b) {
        return a->bytes.eval(o_.maxima) > b->bytes.eval(o_.maxima);
      });
      std::vector<int64_t> load(static_cast<size_t>(p_.hbm.channels), 0);
      for (Task* t : dmas) {
        size_t best = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        t->channel = static_cast<int>(best);
        load[best] += t->bytes.eval(o_.maxima);
      }
    }
  }

  const KernelGraph& g_;
  const FusionResult& f_;
  const Platform& p_;
  const CompileOptions& o_;
  StreamCounts& counts_;
  NetworkRoles* rolesOut_;
  NetworkRoles roles_;
  Network net_;
  std::vector<int> kernelTask_;
  std::set<std::string> fifoNames_, taskNames_, consumed_, stored_;
  std::map<std::string, int> converters_;
  int converterSerial_ = 0;
};

}  // namespace

Network buildNetwork(const KernelGraph& graph, const FusionResult& fusion, const Platform& platform,
                     const CompileOptions& options, StreamCounts& counts, NetworkRoles* roles) {
  return Builder(graph, fusion, platform, options, counts, roles).run();
}

bool dmaWholeBeats(const TensorInfo& t, const StreamOrder& o) {
  const int64_t bits = o.tokenBits(), elementBits = dtypeBits(o.dtype);
  if (o.dtype == "i4" || bits != tokenElements(o) * elementBits) return false;
  const int64_t group = bits < kDmaTokenBits && kDmaTokenBits % bits == 0 ? kDmaTokenBits / bits : 1;
  return rowMajorBeats(t, o, group, kDmaTokenBits / elementBits, 1).reason.empty();
}

RowMajorBeats rowMajorBeats(const TensorInfo& t, const StreamOrder& o, int64_t group, int64_t per, int stripes) {
  auto none = [](std::string why) {
    RowMajorBeats r;
    r.reason = std::move(why);
    return r;
  };
  RowMajorBeats r;
  const size_t D = t.shape.size(), n = o.trips.size();
  const int64_t E = tokenElements(o);
  if (stripes > 1) return none("each of its stripes moves part of a token");
  if (static_cast<size_t>(o.map.numResults()) != D || o.element.size() != D) return none("its order is not over the tensor's dims");
  for (size_t d = 0; d < D; ++d)
    if (!t.shape[d].isConstant() && o.element[d] != 1) return none("its tokens run past a symbolic dimension (padding)");
  // A token is a run of memory when it is one position of the dims outside its first extent > 1 and all of
  // the dims inside it.
  size_t k0 = 0;
  while (k0 + 1 < D && o.element[k0] == 1) ++k0;
  for (size_t d = k0 + 1; d < D; ++d)
    if (!t.shape[d].isConstant() || o.element[d] != t.shape[d].eval()) return none("a token's elements are not contiguous in memory");
  // Row-major strides; a stride outside a symbolic dim is not a constant.
  std::vector<int64_t> stride(D, 0);
  std::vector<bool> known(D, true);
  stride[D - 1] = 1;
  for (size_t d = D - 1; d-- > 0;) {
    known[d] = known[d + 1] && t.shape[d + 1].isConstant();
    stride[d] = known[d] ? stride[d + 1] * t.shape[d + 1].eval() : 0;
  }
  std::vector<int64_t> a(n, 0);
  int64_t c0 = 0;
  for (size_t d = 0; d < D; ++d) {
    const AffineExpr& e = o.map.results()[d];
    bool moves = e.constant != 0;
    for (size_t k = 0; k < n; ++k) moves = moves || e.coeffs[k] != 0;
    if (moves && !known[d]) return none("its addresses step by a symbolic row length");
    for (size_t k = 0; k < n; ++k) a[k] += stride[d] * e.coeffs[k] * o.steps[k];
    c0 += stride[d] * e.constant;
  }
  const std::string offBeat = "a token starts off a 512-bit boundary";
  // With group > 1 (E * group == per), the innermost loop of more than one iteration moves one token,
  // `group` of them a beat.
  size_t L = n;
  while (L > 0 && o.trips[L - 1].isConstant() && o.trips[L - 1].eval() == 1) --L;
  r.groupLoop = static_cast<int>(L) - 1;
  if (group > 1) {
    if (L == 0 || !o.trips[L - 1].isConstant() || o.trips[L - 1].eval() % group != 0 || a[L - 1] != E)
      return none("the tokens one 512-bit DMA token collects are not consecutive in memory");
  } else if (E % per != 0) {
    return none("its tokens of " + std::to_string(E) + " elements are not whole 512-bit beats");
  }
  r.coeff.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    if (group > 1 && k + 1 == L) {
      r.coeff[k] = 1;
      continue;
    }
    if (o.trips[k].isConstant() && o.trips[k].eval() == 1) continue;
    if (a[k] % per != 0) return none(offBeat);
    r.coeff[k] = a[k] / per;
  }
  if (c0 % per != 0) return none(offBeat);
  r.first = c0 / per;
  r.beatsPerToken = group > 1 ? 1 : E / per;
  return r;
}

}  // namespace stc
