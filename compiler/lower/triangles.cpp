// The masked half of a causal attention, skipped (triangles.h). The products over held keys seed the
// chain; it grows over the FIFOs whose token counts the key loop sets (a port at the key loop's level or
// inside it), to the tasks at their other ends, which stream the same order and so share the loops up to
// the key loop. The network then checks that every FIFO's two sides still move the same tokens.
#include "compiler/lower/triangles.h"

#include <algorithm>
#include <map>

#include "compiler/ir/graph.h"
#include "compiler/lower/edges.h"
#include "compiler/lower/kernels.h"

namespace stc {

namespace {

// A phase made triangular: its row loop (the loops outside it have one iteration) and its key loop, which
// moves `keys` keys an iteration.
struct Site {
  size_t task = 0, phase = 0;
  int rowLoop = 0, keyLoop = 0;
  int64_t keys = 1;
};

struct End {
  size_t task = 0, phase = 0, port = 0;
};

// The row loop of a held product: the loop the held right side's key advances with (a key a row).
int heldRowLoop(const Kernel& k) {
  const StreamOrder& o = k.phases[0].ports[1].order;
  const auto& coeffs = o.map.results()[heldKeyDim(o)].coeffs;
  auto at = std::find(coeffs.begin(), coeffs.end(), 1);
  return at == coeffs.end() ? -1 : static_cast<int>(at - coeffs.begin());
}

class Triangulator {
 public:
  Triangulator(Network& net, KernelGraph& kernels, NetworkRoles& roles)
      : net_(net), g_(kernels), roles_(roles) {
    for (size_t t = 0; t < net.tasks.size(); ++t)
      for (size_t ph = 0; ph < net.tasks[t].phases.size(); ++ph)
        for (size_t p = 0; p < net.tasks[t].phases[ph].ports.size(); ++p) {
          const Port& port = net.tasks[t].phases[ph].ports[p];
          (port.dir == PortDir::kOut ? writer_ : reader_)[port.fifo] = {t, ph, p};
        }
  }

  TriangleReport run() {
    TriangleReport report;
    for (size_t t = 0; t < net_.tasks.size(); ++t) {
      const Kernel* k = kernelOf(t);
      if (!k || k->heldKeys == Kernel::HeldKeys::kNone) continue;
      if (std::string why = seed(t, *k); !why.empty()) {
        report.skipped = why;
        return report;
      }
    }
    if (sites_.empty()) return report;
    for (size_t i = 0; i < sites_.size(); ++i)  // sites_ grows as the chain does
      if (std::string why = grow(sites_[i]); !why.empty()) {
        report.skipped = why;
        return report;
      }
    // A converter whose writer runs a triangle fills only each row's keys up to its block: its reader
    // must take no more (a reader alone may take part of regions its writer fills whole).
    for (const Site& s : sites_) {
      const TaskRole* role = roleOf(s.task);
      if (role->kind != TaskRole::kConverterWrite) continue;
      for (const Port& p : net_.tasks[s.task].phases[s.phase].ports) {
        if (!isRegionName(p.fifo) || p.dir != PortDir::kOut) continue;
        const End& r = reader_.at(p.fifo);
        if (!siteOf(r.task, r.phase)) {
          report.skipped = "converter '" + net_.tasks[s.task].name +
                           "' would fill part of each region for '" + net_.tasks[r.task].name +
                           "', which reads it whole";
          return report;
        }
      }
    }
    int64_t block = 1;
    for (const Site& s : sites_) block = std::max(block, s.keys);
    for (const Site& s : sites_) {
      const std::vector<Expr>& trip = net_.tasks[s.task].phases[s.phase].trip;
      const Expr& rows = trip[static_cast<size_t>(s.rowLoop)];
      const Expr& tiles = trip[static_cast<size_t>(s.keyLoop)];
      if (!rows.isConstant() || !tiles.isConstant() || rows.eval() % block != 0 || block % s.keys != 0 ||
          tiles.eval() * s.keys != rows.eval() || rows.eval() / block < 2) {
        report.skipped = "task '" + net_.tasks[s.task].name + "': its " + rows.str() + " rows and " +
                         tiles.str() + " key tiles of " + std::to_string(s.keys) + " are not in blocks of " +
                         std::to_string(block) + " keys, two or more";
        return report;
      }
    }
    Network net = net_;
    KernelGraph kernels = g_;
    NetworkRoles roles = roles_;
    for (const Site& s : sites_) apply(s, block);
    Diagnostics d = verifyNetwork(net_);
    if (!d.empty()) {  // the chain is not what it looked: keep the attention whole
      net_ = std::move(net);
      g_ = std::move(kernels);
      roles_ = std::move(roles);
      report.skipped = d.messages().front();
      return report;
    }
    report.keyBlock = block;
    for (const Site& s : sites_) report.tasks.push_back(net_.tasks[s.task].name);
    return report;
  }

 private:
  const TaskRole* roleOf(size_t t) const {
    auto r = roles_.tasks.find(net_.tasks[t].name);
    return r == roles_.tasks.end() ? nullptr : &r->second;
  }
  const Kernel* kernelOf(size_t t) const {
    const TaskRole* r = roleOf(t);
    return r && r->kind == TaskRole::kKernel && r->kernel >= 0 ? &g_.kernels[static_cast<size_t>(r->kernel)]
                                                               : nullptr;
  }
  const Site* siteOf(size_t t, size_t ph) const {
    for (const Site& s : sites_)
      if (s.task == t && s.phase == ph) return &s;
    return nullptr;
  }

  std::string seed(size_t t, const Kernel& k) {
    const std::string what = "task '" + net_.tasks[t].name + "'";
    if (k.phases.size() != 1) return what + ": a held product of several phases";
    const std::vector<Expr>& trip = k.phases[0].trip;
    int n = static_cast<int>(trip.size());
    bool alongN = k.heldKeys == Kernel::HeldKeys::kAlongN;
    Site s{t, 0, heldRowLoop(k), alongN ? n - 2 : n - 1, 1};
    auto out = std::find_if(k.phases[0].ports.begin(), k.phases[0].ports.end(),
                            [](const KernelPort& p) { return p.out; });
    if (out == k.phases[0].ports.end()) return what + ": no output";
    s.keys = alongN ? tokenElements(out->order) : k.phases[0].ports[0].order.element.back();
    if (s.rowLoop < 0 || s.rowLoop >= s.keyLoop) return what + ": its rows do not run outside its keys";
    for (int j = 0; j < s.rowLoop; ++j)
      if (!trip[static_cast<size_t>(j)].isConstant() || trip[static_cast<size_t>(j)].eval() != 1)
        return what + ": its rows run inside loop " + std::to_string(j) + " (the heads outside the rows)";
    sites_.push_back(s);
    return "";
  }

  // The tasks at the other ends of the FIFOs whose counts the site's key loop sets join the chain.
  std::string grow(Site s) {
    const Phase& ph = net_.tasks[s.task].phases[s.phase];
    for (const Port& p : ph.ports) {
      if (ph.levelOf(p) < s.keyLoop) continue;  // a token per row, or per head: as many as before
      const auto& ends = p.dir == PortDir::kOut ? reader_ : writer_;
      auto e = ends.find(p.fifo);
      if (e == ends.end()) return "FIFO '" + p.fifo + "' has no other end";
      const End& o = e->second;
      const std::string what = "FIFO '" + p.fifo + "' to task '" + net_.tasks[o.task].name + "'";
      const Phase& other = net_.tasks[o.task].phases[o.phase];
      if (const Site* known = siteOf(o.task, o.phase)) {
        if (known->rowLoop != s.rowLoop || known->keyLoop != s.keyLoop)
          return what + ": other row or key loops";
        continue;
      }
      const TaskRole* role = roleOf(o.task);
      if (!role) return what + ": a task of no role";
      if (role->kind == TaskRole::kKernel) {
        const Kernel& k = g_.kernels[static_cast<size_t>(role->kernel)];
        bool allowed = k.heldKeys != Kernel::HeldKeys::kNone || k.op == "softmax.stats" ||
                       k.op == "softmax.apply" || elementwiseArity(k.op) > 0;
        if (!allowed || k.phases.size() != 1)
          return what + ", kernel of op '" + k.op + "', which the mask does not cover";
      } else if (role->kind == TaskRole::kConverterWrite || role->kind == TaskRole::kConverterRead) {
        if (role->sharedLoops > s.keyLoop) return what + ": a converter whose regions hold the key loop";
      } else {
        return what + ": not a kernel or a converter";
      }
      const Port& op = other.ports[o.port];
      if (other.outer != 0 || other.trip.size() <= static_cast<size_t>(s.keyLoop) ||
          other.levelOf(op) < s.keyLoop ||
          !std::equal(ph.trip.begin(), ph.trip.begin() + s.keyLoop + 1, other.trip.begin()))
        return what + ": its loops are not the same up to the key loop";
      sites_.push_back({o.task, o.phase, s.rowLoop, s.keyLoop, s.keys});
    }
    return "";
  }

  // A kernel's row loop is split into blocks of `block` rows, the blocks outside its pipeline (the loops
  // around them have one iteration), its key loop taking the keys up to the block's end: its pipeline
  // drains once a block. A converter side runs a row at a time (its regions' shared loops stay as they
  // are), its key loop taking the keys up to the end of the row's block: the same tokens in the same order.
  void apply(const Site& s, int64_t block) {
    const size_t row = static_cast<size_t>(s.rowLoop), key = static_cast<size_t>(s.keyLoop);
    const int64_t per = block / s.keys;
    auto keysUpTo = [&](const std::string& blockIndex) {
      return Expr::parse(per == 1 ? blockIndex + " + 1"
                                  : "(" + blockIndex + " + 1) * " + std::to_string(per));
    };
    Task& task = net_.tasks[s.task];
    Phase& ph = task.phases[s.phase];
    TaskRole& role = roles_.tasks.at(task.name);
    if (role.kind != TaskRole::kKernel) {
      const std::string index = "i" + std::to_string(row);
      ph.trip[key] = keysUpTo(index + " / " + std::to_string(block));
      ph.outer = s.rowLoop + 1;
      (role.kind == TaskRole::kConverterWrite ? role.order : role.target).trips[key] = ph.trip[key];
      return;
    }
    const int64_t rows = ph.trip[row].eval();
    std::vector<Expr> trip(ph.trip.begin(), ph.trip.begin() + s.rowLoop);
    trip.push_back(Expr(rows / block));
    trip.push_back(Expr(block));
    trip.insert(trip.end(), ph.trip.begin() + s.rowLoop + 1, ph.trip.end());
    trip[key + 1] = keysUpTo("i" + std::to_string(row));
    ph.trip = trip;
    ph.outer = s.rowLoop + 1;
    for (Port& p : ph.ports)
      if (p.level && *p.level >= s.rowLoop) ++*p.level;
    KernelPhase& kp = g_.kernels[static_cast<size_t>(role.kernel)].phases[s.phase];
    kp.trip = trip;
    for (size_t k = 0; k < kp.ports.size(); ++k) {
      KernelPort& port = kp.ports[k];
      if (port.level >= s.rowLoop) ++port.level;
      if (port.order.trips.size() <= row) continue;
      port.order = splitLoops(port.order, {LoopSplit{s.rowLoop, rows / block}});
      // The network's ports on its FIFOs show the split order (its key loop at its bound, every block's).
      const auto& fifos = role.portFifos[s.phase][k];
      for (Port& p : ph.ports)
        if (p.type && std::find(fifos.begin(), fifos.end(), p.fifo) != fifos.end())
          p.type = port.order.bind({});
    }
  }

  Network& net_;
  KernelGraph& g_;
  NetworkRoles& roles_;
  std::map<std::string, End> writer_, reader_;
  std::vector<Site> sites_;
};

}  // namespace

TriangleReport triangulateCausal(Network& net, KernelGraph& kernels, NetworkRoles& roles) {
  return Triangulator(net, kernels, roles).run();
}

}  // namespace stc
