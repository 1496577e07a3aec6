// Design space exploration. A space is a list of knobs (compiler settings) and their values; its points
// are every combination. For a graph:
//   1. each point compiles (base settings, then the point's): a compiler error rejects the point and
//      keeps its message (an on-chip budget one kernel alone exceeds, say);
//   2. points that compiled to the same network text share one sizing (a budget that binds nothing
//      changes nothing), marked `same_as` the first;
//   3. each distinct network is sized by the LP sizer to hold over every symbol's range (sampled as the
//      decode estimator samples ctx) and at the given bindings, and verified by simulating the sized
//      network: its cycles at the bindings, the on-chip bytes of kernel buffers and sized FIFOs, and the
//      resources at those depths are the point's;
//   4. the front: points that fit the platform, not dominated on (cycles, on-chip bytes, DSPs).
// Steps 1 and 3 run in parallel over points (oneTBB); every result lands in its point's slot and step 2
// goes in point order, so the output is the same at any thread count.
#include "compiler/dse/explore.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "compiler/ir/diagnostics.h"
#include "compiler/pipeline.h"
#include "compiler/sizing/fifo_sizing.h"

namespace stc::dse {

namespace {

// More points than an exploration should ever be asked for: a space file with a typo in a range.
constexpr size_t kMaxPoints = 100000;

std::string statusName(Point::Status s) {
  switch (s) {
    case Point::Status::kOk:
      return "ok";
    case Point::Status::kRejected:
      return "rejected";
    case Point::Status::kDeadlock:
      return "deadlock";
  }
  return "";
}

// Kernel buffers and every FIFO at its stored depth (a converter's regions with the one read and the one
// filled: Fifo::storedTokens), in bytes.
int64_t onchipBytesOf(const CompileResult& c) {
  int64_t bytes = 0;
  for (const Kernel& k : c.kernels.kernels) bytes += k.bufferBytes;
  for (const Fifo& f : c.network.fifos)
    if (!f.unbounded()) bytes += (f.storedTokens() * f.width + 7) / 8;
  return bytes;
}

// a dominates b: no worse on every axis and better on one.
bool dominates(const Point& a, const Point& b) {
  bool noWorse = a.cycles <= b.cycles && a.onchipBytes <= b.onchipBytes && a.resources.dsp <= b.resources.dsp;
  bool better = a.cycles < b.cycles || a.onchipBytes < b.onchipBytes || a.resources.dsp < b.resources.dsp;
  return noWorse && better;
}

bool sameMetrics(const Point& a, const Point& b) {
  return a.cycles == b.cycles && a.onchipBytes == b.onchipBytes && a.resources.dsp == b.resources.dsp;
}

bool candidate(const Point& p) {
  return p.status == Point::Status::kOk && p.fits && p.sameAs < 0;
}

}  // namespace

size_t Space::size() const {
  size_t n = 1;
  for (const SpaceKnob& k : knobs)  // saturating: a space file may multiply past any size
    n = k.values.empty()                          ? 0
        : n > kMaxPoints * 1000 / k.values.size() ? kMaxPoints * 1000
                                                  : n * k.values.size();
  return n;
}

std::vector<std::string> Space::settingsAt(size_t i) const {
  std::vector<std::string> settings(knobs.size());
  for (size_t k = knobs.size(); k-- > 0;) {
    const SpaceKnob& knob = knobs[k];
    settings[k] = knob.key + "=" + knob.values[i % knob.values.size()];
    i /= knob.values.size();
  }
  return settings;
}

Space defaultSpace(const Platform& platform) {
  int64_t memoryBytes = platform.kernelResources().memoryBits() / 8;
  auto knob = [](const std::string& key, std::vector<std::string> values) {
    SpaceKnob k;
    k.key = key;
    k.values = std::move(values);
    k.valueLocs.resize(k.values.size());
    return k;
  };
  Space s;
  s.knobs = {knob("tile", {"8", "16", "32"}), knob("unroll_budget", {"0.2", "0.35", "0.5", "0.7"}),
             knob("max_stripe", {"0", "8"}), knob("row_block", {"auto", "0"}),
             knob("onchip_budget_bytes", {std::to_string(memoryBytes / 4), std::to_string(memoryBytes / 8)})};
  return s;
}

Space loadSpace(const std::string& path, const Platform& platform) {
  Space s;
  s.knobs = parseSpace(readTextFile(path), path);
  for (const SpaceKnob& k : s.knobs)
    for (size_t v = 0; v < k.values.size(); ++v) {
      if (k.key.rfind("dim.", 0) == 0)  // the graph is imported once, before the sweep
        throw UserError(formatError(k.valueLocs[v], "field '" + k.key + "': a dynamic axis is fixed at import, "
                                                    "not swept: give it with --set " + k.key + "=N"));
      try {
        parseCompileOptions({k.key + "=" + k.values[v]}, platform);
      } catch (const UserError& e) {
        std::string why = e.what();
        const std::string prefix = "stc compile: error: ";
        if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
        throw UserError(formatError(k.valueLocs[v], "field '" + k.key + "': " + why));
      }
    }
  if (s.size() > kMaxPoints)
    throw UserError(path + ": error: the space has " +
                    (s.size() >= kMaxPoints * 1000 ? "over " + std::to_string(kMaxPoints * 1000)
                                                   : std::to_string(s.size())) +
                    " points; at most " + std::to_string(kMaxPoints));
  return s;
}

std::string fingerprint(const std::string& text) {
  // FNV-1a, 128 bits: offset basis 0x6c62272e07bb014262b821756295c58d, prime 2^88 + 0x13b.
  __extension__ using u128 = unsigned __int128;  // GCC and Clang have it; ISO C++ does not
  u128 h = (static_cast<u128>(0x6c62272e07bb0142ull) << 64) | 0x62b821756295c58dull;
  const u128 prime = (static_cast<u128>(1) << 88) | 0x13b;
  for (unsigned char c : text) h = (h ^ c) * prime;
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h >> 64),
                static_cast<unsigned long long>(h));
  return hex;
}

namespace {

// A compiled network's text, and what it does not say: the symbols' maxima and the stream tile (where
// sizing samples them) and the kernels' buffers (sized for those maxima), which decide the bytes and the
// resources.
std::string networkKey(const CompileResult& c) {
  std::ostringstream key;
  key << emitNetwork(c.network) << "\nmaxima:";
  for (const auto& [symbol, maximum] : c.options.maxima) key << " " << symbol << "=" << maximum;
  key << "\ntile: " << c.options.tile << "\nbuffers:";
  for (const Kernel& k : c.kernels.kernels) key << " " << k.bufferBytes;
  return key.str();
}

// Copies `from`'s results into p, keeping p's own settings and its own compile report's figures (the same
// network may be counted otherwise: fusion_joins=trimmed counts joined streams at their least depths).
void takeResults(Point& p, const Point& from) {
  Point own = std::move(p);
  p = from;
  p.settings = std::move(own.settings);
  p.intermediateBytes = own.intermediateBytes;
  p.unfusedBytes = own.unfusedBytes;
}

}  // namespace

Exploration explore(const Graph& graph, const Platform& platform, const std::vector<std::string>& base,
                    const Space& space, const Bindings& bindings, const Progress& progress) {
  std::vector<size_t> all(space.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<Network> sized;
  Exploration e = merge(space, evaluate(graph, platform, base, space, bindings, all, progress, &sized));
  e.sized = std::move(sized);
  return e;
}

std::vector<Point> evaluate(const Graph& graph, const Platform& platform, const std::vector<std::string>& base,
                            const Space& space, const Bindings& bindings, const std::vector<size_t>& indices,
                            const Progress& progress, std::vector<Network>* sizedOut) {
  const size_t n = indices.size();
  std::vector<Point> points(n);
  std::vector<Network> sizedNets(n);
  std::vector<std::optional<CompileResult>> compiled(n);
  std::vector<std::string> text(n);
  std::mutex lock;
  int compiledCount = 0, sizedCount = 0;
  auto report = [&](bool sizedOne) {
    std::lock_guard<std::mutex> guard(lock);
    ++(sizedOne ? sizedCount : compiledCount);
    if (progress) progress(compiledCount, sizedCount, static_cast<int>(n));
  };

  tbb::parallel_for(size_t{0}, n, [&](size_t i) {  // 1. compile
    Point& p = points[i];
    p.settings = space.settingsAt(indices[i]);
    std::vector<std::string> settings = base;
    settings.insert(settings.end(), p.settings.begin(), p.settings.end());
    try {
      // Without the channel assignment's simulations, which depend on the network and the symbols'
      // maxima alone: each distinct network pays them once, below.
      CompileOptions options = parseCompileOptions(settings, platform);
      options.phaseChannels = false;
      CompileResult c = compileGraph(graph, platform, options);
      c.network.sourceSettings = settings;
      p.intermediateBytes = c.report.onchipBytesIntermediate;
      p.unfusedBytes = c.report.onchipBytesUnfused;
      text[i] = networkKey(c);
      compiled[i] = std::move(c);
    } catch (const UserError& err) {
      p.status = Point::Status::kRejected;
      p.message = err.what();
    }
    report(false);
  });

  std::map<std::string, size_t> firstWith;  // 2. the same network: sized once
  std::vector<size_t> distinct, copyOf(n, n);
  for (size_t i = 0; i < n; ++i) {
    if (!compiled[i]) continue;
    auto [it, inserted] = firstWith.emplace(text[i], i);
    if (inserted) {
      distinct.push_back(i);
    } else {
      copyOf[i] = it->second;
      compiled[i].reset();
    }
  }

  tbb::parallel_for(size_t{0}, distinct.size(), [&](size_t d) {  // 3. size and simulate
    size_t i = distinct[d];
    CompileResult& c = *compiled[i];
    Point& p = points[i];
    try {
      assignPhaseChannels(c, platform);
      drainHeldPipelines(c, platform);
      p.network = fingerprint(networkKey(c));
    } catch (const UserError& err) {  // as a point that does not compile
      p.status = Point::Status::kRejected;
      p.message = err.what();
      compiled[i].reset();
      report(true);
      return;
    }
    p.schedules = c.schedules;
    p.laneIi = c.options.laneIi;
    p.laneIiOf = c.options.laneIiOf;
    for (const auto& [symbol, value] : bindings) {
      auto maximum = c.options.maxima.find(symbol);
      if (maximum != c.options.maxima.end() && value > maximum->second) {
        p.status = Point::Status::kRejected;
        p.message = "stc dse: error: " + symbol + "=" + std::to_string(value) +
                    " is beyond the design's max_" + symbol + " (" + std::to_string(maximum->second) + ")";
      }
    }
    sizing::SizingOptions options;
    options.platform = platform;
    options.bindings = bindings;
    // Bits within the memory may still not fit (each FIFO in whole BRAM and URAM blocks, beside the
    // kernels' buffers): the sizer then tries its other measuring run (stc size-fifos does the same).
    options.fits = [&](const Network& candidate) { return fitsWithDepths(c, candidate, platform); };
    Network sized;
    sizing::SizingResult r;
    try {
      if (p.status == Point::Status::kOk)
        // (the bindings themselves last: their run is the point's)
        r = sizing::sizeFifosAcross(c.network, options, sizingBindings(c.network, c.options, bindings),
                                    sized);
    } catch (const UserError& err) {  // a simulation refused (too long, say): this point's alone
      p.status = Point::Status::kRejected;
      p.message = err.what();
    }
    bool held = std::all_of(r.cyclesSizedAt.begin(), r.cyclesSizedAt.end(), [](int64_t c) { return c > 0; });
    bool ran = p.status == Point::Status::kOk;  // else rejected, its message saying why
    if (ran && (r.trueDeadlock || !held)) {
      p.status = Point::Status::kDeadlock;
      p.message = r.trueDeadlock ? "the network deadlocks even with unbounded FIFOs"
                                 : "the sized network deadlocks at some of its symbols' values";
    } else if (ran) {
      c.network = std::move(sized);
      updateResources(c, platform);
      p.cycles = r.cyclesSizedAt.back();
      p.cyclesUnbounded = r.cyclesUnbounded;
      p.paced = r.paced;
      p.onchipBytes = onchipBytesOf(c);
      p.intermediateBytesSized = intermediateBytesAtDepths(c);
      p.resources = c.report.resources;
      p.fits = c.report.fits;
      sizedNets[i] = std::move(c.network);
    }
    compiled[i].reset();
    report(true);
  });
  for (size_t i = 0; i < n; ++i)  // a copy's sized network stays empty: it is the first one's
    if (copyOf[i] < n) takeResults(points[i], points[copyOf[i]]);
  if (sizedOut) *sizedOut = std::move(sizedNets);
  return points;
}

Exploration merge(const Space& space, std::vector<Point> points) {
  Exploration e;
  for (const SpaceKnob& k : space.knobs) e.knobs.push_back(k.key);
  e.points = std::move(points);
  std::map<std::string, int> firstWith;  // the same network: an earlier point's results
  for (size_t i = 0; i < e.points.size(); ++i) {
    Point& p = e.points[i];
    if (p.network.empty()) continue;
    auto [it, inserted] = firstWith.emplace(p.network, static_cast<int>(i));
    if (inserted) continue;
    takeResults(p, e.points[static_cast<size_t>(it->second)]);
    p.sameAs = it->second;
  }
  e.compiledNetworks = static_cast<int>(firstWith.size());
  e.front = paretoFront(e.points);
  for (int i : e.front) e.points[static_cast<size_t>(i)].pareto = true;
  return e;
}

nlohmann::json jsonString(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return s;
  } catch (const nlohmann::json::type_error&) {  // not UTF-8: an op's name with stray bytes, say
    return {{"bytes", std::vector<unsigned char>(s.begin(), s.end())}};
  }
}

std::string stringFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return j.get<std::string>();
  auto bytes = j.at("bytes").get<std::vector<unsigned char>>();
  return std::string(bytes.begin(), bytes.end());
}

nlohmann::json schedulesJson(const Schedules& schedules) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [op, s] : schedules) {
    nlohmann::json& o = j[op] = {{"tk", s.tk}, {"row_block", s.rowBlock}};
    if (s.tn > 0) o["tn"] = s.tn;
    if (s.byHeads) o["by_heads"] = true;
  }
  return j;
}

nlohmann::json pointToJson(const Point& p) {
  nlohmann::json settings = nlohmann::json::array(), schedules = nlohmann::json::array();
  for (const std::string& s : p.settings) settings.push_back(jsonString(s));
  for (const auto& [op, s] : p.schedules)
    schedules.push_back({jsonString(op), s.tk, s.rowBlock, s.tn, s.byHeads});
  nlohmann::json laneIiOf = nlohmann::json::array();
  for (const auto& [op, ii] : p.laneIiOf) laneIiOf.push_back({jsonString(op), ii});
  const Resources& r = p.resources;
  return {{"settings", settings},
          {"status", statusName(p.status)},
          {"message", jsonString(p.message)},
          {"network", p.network},
          {"cycles", p.cycles},
          {"cycles_unbounded", p.cyclesUnbounded},
          {"onchip_bytes", p.onchipBytes},
          {"intermediate_bytes", p.intermediateBytes},
          {"unfused_bytes", p.unfusedBytes},
          {"intermediate_bytes_sized", p.intermediateBytesSized},
          {"resources", {r.lut, r.ff, r.dsp, r.bram18k, r.uram, r.slrs}},
          {"fits", p.fits},
          {"paced", p.paced},
          {"schedules", schedules},
          {"lane_ii", p.laneIi},
          {"lane_ii_of", laneIiOf}};
}

Point pointFromJson(const nlohmann::json& j, const std::string& where) {
  Point p;
  try {
    for (const nlohmann::json& setting : j.at("settings")) p.settings.push_back(stringFromJson(setting));
    std::string status = j.at("status").get<std::string>();
    if (status == "ok")
      p.status = Point::Status::kOk;
    else if (status == "rejected")
      p.status = Point::Status::kRejected;
    else if (status == "deadlock")
      p.status = Point::Status::kDeadlock;
    else
      throw UserError(where + ": error: field 'status': unknown status '" + status + "'");
    p.message = stringFromJson(j.at("message"));
    p.network = j.at("network").get<std::string>();
    p.cycles = j.at("cycles").get<int64_t>();
    p.cyclesUnbounded = j.at("cycles_unbounded").get<int64_t>();
    p.onchipBytes = j.at("onchip_bytes").get<int64_t>();
    p.intermediateBytes = j.at("intermediate_bytes").get<int64_t>();
    p.unfusedBytes = j.at("unfused_bytes").get<int64_t>();
    p.intermediateBytesSized = j.at("intermediate_bytes_sized").get<int64_t>();
    auto r = j.at("resources").get<std::vector<int64_t>>();
    if (r.size() != 6) throw UserError(where + ": error: field 'resources': expected 6 counts");
    p.resources = {r[0], r[1], r[2], r[3], r[4], static_cast<int>(r[5])};
    p.fits = j.at("fits").get<bool>();
    p.paced = j.at("paced").get<bool>();
    for (const nlohmann::json& s : j.at("schedules")) {
      if (!s.is_array() || s.size() != 5)
        throw UserError(where + ": error: field 'schedules': expected [op, tk, row_block, tn, by_heads]");
      p.schedules[stringFromJson(s[0])] = {s[1].get<int64_t>(), s[2].get<int64_t>(), s[3].get<int64_t>(),
                                           s[4].get<bool>()};
    }
    p.laneIi = j.at("lane_ii").get<int64_t>();
    for (const nlohmann::json& s : j.at("lane_ii_of")) {
      if (!s.is_array() || s.size() != 2)
        throw UserError(where + ": error: field 'lane_ii_of': expected [op, lane II]");
      p.laneIiOf[stringFromJson(s[0])] = s[1].get<int64_t>();
    }
  } catch (const nlohmann::json::exception& err) {
    throw UserError(where + ": error: a malformed point: " + err.what());
  }
  return p;
}

std::vector<int> paretoFront(const std::vector<Point>& points) {
  std::vector<int> front;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!candidate(points[i])) continue;
    bool beaten = false;
    for (size_t j = 0; j < points.size() && !beaten; ++j)
      beaten = candidate(points[j]) &&
               (dominates(points[j], points[i]) || (j < i && sameMetrics(points[j], points[i])));
    if (!beaten) front.push_back(static_cast<int>(i));
  }
  std::stable_sort(front.begin(), front.end(), [&](int a, int b) {
    return points[static_cast<size_t>(a)].cycles < points[static_cast<size_t>(b)].cycles;
  });
  return front;
}

namespace {

bool namedCriterion(const std::string& c) {
  return c == "cycles" || c == "onchip" || c == "dsp";
}

}  // namespace

size_t checkPick(const std::string& criterion, size_t points) {
  if (namedCriterion(criterion)) return points;
  size_t used = 0;
  long long index = -1;
  try {
    index = std::stoll(criterion, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != criterion.size())
    throw UserError("stc dse: error: --pick expects cycles, onchip, dsp or a point's number, got '" +
                    criterion + "'");
  if (index < 0 || static_cast<size_t>(index) >= points)
    throw UserError("stc dse: error: --pick " + criterion + ": the space has points 0 to " +
                    std::to_string(points - 1));
  return static_cast<size_t>(index);
}

int pickPoint(const Exploration& e, const std::string& criterion) {
  auto key = [&](int i) {
    const Point& p = e.points[static_cast<size_t>(i)];
    int64_t c = p.cycles, b = p.onchipBytes, d = p.resources.dsp;
    if (criterion == "onchip") return std::make_tuple(b, c, d);
    if (criterion == "dsp") return std::make_tuple(d, c, b);
    return std::make_tuple(c, b, d);
  };
  size_t index = checkPick(criterion, e.points.size());
  if (namedCriterion(criterion)) {
    if (e.front.empty())
      throw UserError("stc dse: error: --pick " + criterion + ": no point compiled, fits and simulates");
    return *std::min_element(e.front.begin(), e.front.end(), [&](int a, int b) { return key(a) < key(b); });
  }
  const Point& p = e.points[index];
  if (p.status != Point::Status::kOk)
    throw UserError("stc dse: error: --pick " + criterion + ": the point was " + statusName(p.status) + ": " +
                    p.message);
  return p.sameAs >= 0 ? p.sameAs : static_cast<int>(index);
}

namespace {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// A knob's value in a point's settings.
std::string valueOf(const std::string& setting) {
  return setting.substr(setting.find('=') + 1);
}

}  // namespace

std::string pointsCsv(const Exploration& e) {
  std::ostringstream out;
  out << "point,status,pareto,same_as";
  for (const std::string& k : e.knobs) out << "," << csvField(k);
  out << ",cycles,cycles_unbounded,onchip_bytes,intermediate_bytes,intermediate_bytes_sized,unfused_bytes,dsp,bram18k,uram,lut,fits,"
         "paced,message\n";
  for (size_t i = 0; i < e.points.size(); ++i) {
    const Point& p = e.points[i];
    out << i << "," << statusName(p.status) << "," << (p.pareto ? 1 : 0) << ","
        << (p.sameAs >= 0 ? std::to_string(p.sameAs) : "");
    for (const std::string& s : p.settings) out << "," << csvField(valueOf(s));
    if (p.status == Point::Status::kRejected) {
      out << ",,,,,,,,,,,,," << csvField(p.message) << "\n";
      continue;
    }
    out << "," << p.cycles << "," << p.cyclesUnbounded << "," << p.onchipBytes << "," << p.intermediateBytes
        << "," << p.intermediateBytesSized << "," << p.unfusedBytes << "," << p.resources.dsp << "," << p.resources.bram18k << ","
        << p.resources.uram << "," << p.resources.lut << "," << (p.fits ? 1 : 0) << "," << (p.paced ? 1 : 0)
        << "," << csvField(p.message) << "\n";
  }
  return out.str();
}

std::string pointsJson(const Exploration& e) {
  nlohmann::json points = nlohmann::json::array();
  for (size_t i = 0; i < e.points.size(); ++i) {
    const Point& p = e.points[i];
    nlohmann::json settings = nlohmann::json::object();
    for (const std::string& s : p.settings) settings[s.substr(0, s.find('='))] = valueOf(s);
    nlohmann::json j{
        {"point", i}, {"status", statusName(p.status)}, {"settings", settings}, {"pareto", p.pareto}};
    if (p.sameAs >= 0) j["same_as"] = p.sameAs;
    if (!p.message.empty()) j["message"] = p.message;
    if (p.status != Point::Status::kRejected) {
      j["cycles"] = p.cycles;
      j["cycles_unbounded"] = p.cyclesUnbounded;
      j["onchip_bytes"] = p.onchipBytes;
      j["intermediate_bytes"] = p.intermediateBytes;
      j["intermediate_bytes_sized"] = p.intermediateBytesSized;
      j["unfused_bytes"] = p.unfusedBytes;
      j["resources"] = {{"dsp", p.resources.dsp},
                        {"bram18k", p.resources.bram18k},
                        {"uram", p.resources.uram},
                        {"lut", p.resources.lut}};
      j["fits"] = p.fits;
      j["paced"] = p.paced;
      if (!p.schedules.empty()) j["schedules"] = schedulesJson(p.schedules);
    }
    points.push_back(std::move(j));
  }
  nlohmann::json root{
      {"knobs", e.knobs}, {"points", points}, {"front", e.front}, {"distinct_networks", e.compiledNetworks}};
  return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// 316227 -> "316K": a log axis's tick.
std::string tickLabel(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2g%s" : "%.0f%s", v, units[u]);
  return buf;
}

std::string escapeXml(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

}  // namespace

std::string frontSvg(const Exploration& e, const std::string& title) {
  const double width = 760, height = 500, left = 80, right = 40, top = 70, bottom = 60;
  std::vector<size_t> shown;
  for (size_t i = 0; i < e.points.size(); ++i)
    if (candidate(e.points[i])) shown.push_back(i);
  std::ostringstream svg;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" "
      "y=\"24\" text-anchor=\"middle\" font-size=\"15\">",
      width, height, width / 2);
  svg << buf << escapeXml(title) << "</text>\n";
  if (shown.empty()) {
    std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">", width / 2,
                  height / 2);
    svg << buf << "no point compiled, fits and simulates</text>\n</svg>\n";
    return svg.str();
  }
  // Log axes: on-chip bytes and cycles span decades across a space.
  auto lg = [](int64_t v) { return std::log10(std::max<double>(1, static_cast<double>(v))); };
  double xLo = 1e300, xHi = -1e300, yLo = 1e300, yHi = -1e300;
  for (size_t i : shown) {
    xLo = std::min(xLo, lg(e.points[i].onchipBytes)), xHi = std::max(xHi, lg(e.points[i].onchipBytes));
    yLo = std::min(yLo, lg(e.points[i].cycles)), yHi = std::max(yHi, lg(e.points[i].cycles));
  }
  double xPad = std::max(0.05, (xHi - xLo) * 0.05), yPad = std::max(0.05, (yHi - yLo) * 0.05);
  xLo -= xPad, xHi += xPad, yLo -= yPad, yHi += yPad;
  auto px = [&](double logBytes) { return left + (logBytes - xLo) / (xHi - xLo) * (width - left - right); };
  auto py = [&](double logCycles) {
    return height - bottom - (logCycles - yLo) / (yHi - yLo) * (height - top - bottom);
  };
  std::snprintf(
      buf, sizeof buf,
      "<g stroke=\"black\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/><line x1=\"%.0f\" "
      "y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/></g>\n",
      left, height - bottom, width - right, height - bottom, left, top, left, height - bottom);
  svg << buf;
  // Ticks at 1, 2 and 5 of each decade, fewer when the axis spans many.
  auto ticks = [](double lo, double hi) {
    std::vector<double> at;
    std::vector<double> steps = hi - lo > 3 ? std::vector<double>{1} : std::vector<double>{1, 2, 5};
    for (double d = std::floor(lo); d <= hi; ++d)
      for (double m : steps)
        if (d + std::log10(m) >= lo && d + std::log10(m) <= hi) at.push_back(d + std::log10(m));
    return at;
  };
  for (double t : ticks(xLo, xHi)) {
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px(t),
                  height - bottom + 18, tickLabel(std::pow(10.0, t)).c_str());
    svg << buf;
  }
  for (double t : ticks(yLo, yHi)) {
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 6,
                  py(t) + 4, tickLabel(std::pow(10.0, t)).c_str());
    svg << buf;
  }
  std::snprintf(
      buf, sizeof buf,
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">on-chip bytes: kernel buffers and sized FIFOs "
      "(log)</text>\n<text transform=\"translate(20,%.0f) rotate(-90)\" text-anchor=\"middle\">cycles, "
      "sized and simulated (log)</text>\n",
      (left + width - right) / 2, height - 16, (top + height - bottom) / 2);
  svg << buf;
  std::snprintf(
      buf, sizeof buf,
      "<g font-size=\"11\"><circle cx=\"%.0f\" cy=\"46\" r=\"3\" fill=\"#bbbbbb\"/><text x=\"%.0f\" "
      "y=\"50\">dominated</text><circle cx=\"%.0f\" cy=\"46\" r=\"4.5\" fill=\"#1f5fbf\"/><text x=\"%.0f\" "
      "y=\"50\">on the front of cycles, bytes and DSPs (#point, DSPs)</text><line x1=\"%.0f\" y1=\"46\" "
      "x2=\"%.0f\" y2=\"46\" stroke=\"#1f5fbf\"/><text x=\"%.0f\" y=\"50\">fewest cycles for the "
      "bytes</text></g>\n",
      left, left + 8, left + 90, left + 98, left + 420, left + 440, left + 446);
  svg << buf;
  std::vector<int> front2d;  // the front of cycles and bytes alone, by bytes: the staircase
  std::vector<int> byBytes = e.front;
  std::stable_sort(byBytes.begin(), byBytes.end(), [&](int a, int b) {
    const Point &p = e.points[static_cast<size_t>(a)], &q = e.points[static_cast<size_t>(b)];
    return p.onchipBytes != q.onchipBytes ? p.onchipBytes < q.onchipBytes : p.cycles < q.cycles;
  });
  for (int i : byBytes)
    if (front2d.empty() ||
        e.points[static_cast<size_t>(i)].cycles < e.points[static_cast<size_t>(front2d.back())].cycles)
      front2d.push_back(i);
  for (size_t i : shown) {
    if (e.points[i].pareto) continue;
    std::snprintf(
        buf, sizeof buf,
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#bbbbbb\"><title>point %zu</title></circle>\n",
        px(lg(e.points[i].onchipBytes)), py(lg(e.points[i].cycles)), i);
    svg << buf;
  }
  svg << "<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\" points=\"";
  for (size_t k = 0; k < front2d.size(); ++k) {
    const Point& p = e.points[static_cast<size_t>(front2d[k])];
    if (k > 0) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", px(lg(p.onchipBytes)),
                    py(lg(e.points[static_cast<size_t>(front2d[k - 1])].cycles)));
      svg << buf;
    }
    std::snprintf(buf, sizeof buf, "%.1f,%.1f ", px(lg(p.onchipBytes)), py(lg(p.cycles)));
    svg << buf;
  }
  svg << "\"/>\n";
  for (int i : byBytes) {
    const Point& p = e.points[static_cast<size_t>(i)];
    double x = px(lg(p.onchipBytes)), y = py(lg(p.cycles));
    std::snprintf(
        buf, sizeof buf,
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#1f5fbf\"><title>point %d: %lld cycles, %lld "
        "bytes, %lld DSPs</title></circle>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">#%d, %lld</text>\n",
        x, y, i, static_cast<long long>(p.cycles), static_cast<long long>(p.onchipBytes),
        static_cast<long long>(p.resources.dsp), x + 6, y - 6, i, static_cast<long long>(p.resources.dsp));
    svg << buf;
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace stc::dse
