#include "report/html.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "compiler/ir/diagnostics.h"

namespace stc::report {

namespace {

using nlohmann::json;

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------------------------------------------
// Reading the result: every field the page needs, or one message naming it.

class Reader {
 public:
  static constexpr int64_t kMaxValue = int64_t{1} << 50;

  explicit Reader(std::string source) : source_(std::move(source)) {}

  const json& at(const json& j, const std::string& key, const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where.empty() ? key : where + "." + key, "is missing");
    return j.at(key);
  }
  /// A number, at least 0 (every figure the page draws is a count, a time or a rate).
  double number(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > kMaxValue)
      fail(where + "." + key, "is not a number from 0 to 2^50");
    return v.get<double>();
  }
  /// A clock: at least 1 kHz (cycles over it stay finite).
  double positive(const json& j, const std::string& key, const std::string& where) const {
    double v = number(j, key, where);
    if (!(v >= 1e-3)) fail(where + "." + key, "is not a clock of at least 0.001 MHz");
    return v;
  }
  /// A number of either sign (an LP delay: the reader's start less the writer's).
  double real(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_number() || !(std::fabs(v.get<double>()) <= kMaxValue))
      fail(where + "." + key, "is not a number from -2^50 to 2^50");
    return v.get<double>();
  }
  /// An integer from 0 to 2^50: sums and products of a few stay exact and within int64_t.
  int64_t integer(const json& j, const std::string& key, const std::string& where) const {
    return checked(at(j, key, where), where + "." + key);
  }
  /// An integer or null (-1).
  int64_t optional(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    return v.is_null() ? -1 : checked(v, where + "." + key);
  }
  /// A timeline's length: at least 1 cycle.
  int64_t runCycles(const json& timeline, const std::string& where) const {
    int64_t cycles = integer(timeline, "cycles", where);
    if (cycles < 1) fail(where + ".cycles", "is below 1");
    return cycles;
  }
  int64_t checked(const json& v, const std::string& field) const {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() ? v.get<uint64_t>() > kMaxValue
                                : v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxValue))
      fail(field, "is not an integer from 0 to 2^50");
    return v.get<int64_t>();
  }
  std::string text(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_string()) fail(where + "." + key, "is not a string");
    return v.get<std::string>();
  }
  bool flag(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_boolean()) fail(where + "." + key, "is not true or false");
    return v.get<bool>();
  }
  const json& array(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_array()) fail(where + "." + key, "is not an array");
    return v;
  }
  [[noreturn]] void fail(std::string field, const std::string& what) const {
    if (!field.empty() && field[0] == '.') field.erase(0, 1);
    throw UserError(source_ + ": error: field '" + field + "' " + what +
                    " (stc report reads what stc simulate, size-fifos or run print with --json)");
  }

 private:
  std::string source_;
};

// ---------------------------------------------------------------------------------------------------
// Text.

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

// 1234567 -> "1,234,567".
std::string grouped(int64_t v) {
  uint64_t magnitude = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits = std::to_string(magnitude), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

// A coordinate: two decimals, no trailing zeros.
std::string coord(double v) {
  std::string s = fmt("%.2f", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// A count for an axis: 1200 -> "1.2k", 3000000 -> "3M".
std::string shortCount(double v) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (std::fabs(v) >= 1000 && u < 4) v /= 1000, ++u;
  std::string s = fmt(v < 10 && u > 0 ? "%.2g" : "%.3g", v);
  return s + units[u];
}

// Microseconds at the clock, three significant figures or more.
std::string timeAt(int64_t cycles, double mhz) {
  double us = static_cast<double>(cycles) / mhz;
  return us >= 1000 ? fmt("%.3f ms", us / 1000) : fmt("%.2f us", us);
}

// A sum of counts of at most 2^50 each, held at 2^62: it never overflows.
int64_t capped(int64_t sum) {
  return std::min(sum, int64_t{1} << 62);
}

// A step of 1, 2 or 5 times a power of ten giving about `count` ticks up to max.
double tickStep(double max, int count) {
  if (!(max > 0) || !std::isfinite(max)) return 1;  // callers pass finite maxima; 1 keeps a loop finite
  double raw = max / count, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return std::max(1.0, m * p);
  return std::max(1.0, 10 * p);
}

const char* kStyle = R"(
:root{--busy:#3f9b5f;--full:#d64541;--empty:#3b7dd8;--hbm:#e0a030;--grid:#d9dde3;--ink:#1d2330;--muted:#5f6b7a}
*{box-sizing:border-box}
body{font:14px/1.45 "DejaVu Sans",Helvetica,Arial,sans-serif;color:var(--ink);margin:0;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:18px 22px 40px;background:#fff}
h1{font-size:22px;margin:4px 0 2px}h2{font-size:17px;margin:26px 0 8px;border-bottom:2px solid var(--grid);padding-bottom:3px}
h3{font-size:14px;margin:14px 0 6px}.muted{color:var(--muted)}.sub{color:var(--muted);margin:0 0 10px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}th,td{padding:3px 9px;border-bottom:1px solid var(--grid);text-align:right}
th{background:#eef1f5;font-weight:600}td.l,th.l{text-align:left}tr.hot td{background:#fff3f2}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:6px 0}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.badge{display:inline-block;padding:1px 8px;border-radius:9px;font-weight:600;font-size:12px}
.ok{background:#e3f4e8;color:#1e6b3a}.bad{background:#fbe3e2;color:#a12622}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:-1px}
.note{background:#fff8e5;border-left:4px solid #e0b000;padding:6px 10px;margin:8px 0}
.fix{background:#eef6ff;border-left:4px solid var(--empty);padding:6px 10px;margin:8px 0}
input.zoom{display:none}.zoombar{margin:4px 0;font-size:12px}.zoombar label{border:1px solid var(--grid);padding:1px 8px;margin-left:4px;cursor:pointer;border-radius:4px}
#zoom1:checked~.zoombar label[for=zoom1],#zoom4:checked~.zoombar label[for=zoom4],#zoom16:checked~.zoombar label[for=zoom16],#zoom64:checked~.zoombar label[for=zoom64]{background:var(--ink);color:#fff}
#zoom4:checked~.gantt .canvas{width:400%}#zoom16:checked~.gantt .canvas{width:1600%}#zoom64:checked~.gantt .canvas{width:6400%}
.gantt .tz4,.gantt .tz16,.gantt .tz64{display:none}#zoom4:checked~.gantt .tz4,#zoom16:checked~.gantt .tz4,
#zoom16:checked~.gantt .tz16,#zoom64:checked~.gantt .tz4,#zoom64:checked~.gantt .tz16,#zoom64:checked~.gantt .tz64{display:inline}
.gantt{display:flex;border:1px solid var(--grid)}.labels{flex:0 0 230px;font-size:11px;border-right:1px solid var(--grid);overflow:hidden}
.labels div{height:14px;line-height:14px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:0 4px}
.labels div.head{height:16px;line-height:16px;font-weight:600;background:#eef1f5}.labels .axispad{height:20px}
.labels .kind{color:var(--muted);font-size:9.5px;margin-left:4px}
.scroll{flex:1 1 auto;overflow-x:auto}.canvas{width:100%;position:relative}
.axis{height:20px;position:relative;font-size:10px;color:var(--muted);border-bottom:1px solid var(--grid)}
.axis span{position:absolute;top:3px;transform:translateX(-50%);white-space:nowrap}.axis span.g{color:var(--ink);font-weight:600;transform:none;top:3px}
svg{display:block}svg text{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif}
.tablebox{max-height:340px;overflow-y:auto;border:1px solid var(--grid);display:inline-block}.tablebox table{margin:0}
.curves{display:flex;flex-wrap:wrap;gap:10px}.curves figure{margin:0;border:1px solid var(--grid);padding:4px;width:364px}
.curves figcaption{font-size:11.5px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}.curves figcaption b{font-size:12px}
@media print{body{background:#fff}main{max-width:none;padding:0}h2,h3,.sub,.legend{break-after:avoid}.zoombar{display:none}.scroll,.tablebox{overflow:visible;max-height:none}
.canvas{width:100%!important}section{break-inside:auto}figure,table,.gantt{break-inside:avoid}}
)";

// ---------------------------------------------------------------------------------------------------
// Charts.

struct Bar {
  std::string label;
  double value;
  double limit;  // > 0: value is drawn against it (a fraction), red past it
  std::string text;
};

// Horizontal bars, one per row, each against its own limit (a resource against the platform's), or
// all on one scale (limit 0: the largest value).
std::string barChart(const std::vector<Bar>& bars, const std::string& cls, const std::string& title) {
  const double width = 940, labelW = 170, barW = 420, rowH = 24;
  double scale = 0;
  for (const Bar& b : bars) scale = std::max(scale, b.value);
  std::string s = "<svg class=\"chart " + cls + "\" viewBox=\"0 0 " + coord(width) + " " +
                  coord(rowH * static_cast<double>(bars.size()) + 8) + "\" width=\"" + coord(width) +
                  "\" role=\"img\"><title>" + esc(title) + "</title>";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = 4 + rowH * static_cast<double>(i);
    double fraction = b.limit > 0 ? b.value / b.limit : scale > 0 ? b.value / scale : 0;
    double w = std::max(fraction > 0 ? 2.0 : 0.0, std::min(1.0, fraction) * barW);
    bool over = b.limit > 0 && b.value > b.limit;
    s += "<text x=\"" + coord(labelW - 8) + "\" y=\"" + coord(y + 15) +
         "\" text-anchor=\"end\" font-size=\"12\">" + esc(b.label) + "</text>";
    s += "<rect x=\"" + coord(labelW) + "\" y=\"" + coord(y + 3) + "\" width=\"" + coord(barW) +
         "\" height=\"16\" fill=\"#eef1f5\"/>";
    s += "<rect x=\"" + coord(labelW) + "\" y=\"" + coord(y + 3) + "\" width=\"" + coord(w) +
         "\" height=\"16\" fill=\"" + (over ? "#d64541" : "#56657d") + "\"/>";
    s += "<text x=\"" + coord(labelW + barW + 8) + "\" y=\"" + coord(y + 15) + "\" font-size=\"12\">" +
         esc(b.text) + "</text>";
  }
  return s + "</svg>";
}

// ---------------------------------------------------------------------------------------------------
// The page.

class Page {
 public:
  Page(const json& result, const Reader& in) : r_(result), in_(in) {}

  std::string render();

 private:
  void head(const std::string& title);
  void platformFacts(const json& holder, const std::string& where);
  void resources(const json& holder, const std::string& where, const std::string& of);
  void simulation(const json& sim, const std::string& where, const json* sizing,
                  const std::string& sizingWhere);
  void summary(const json& sim, const std::string& where);
  void gantt(const json& tl, const std::string& where);
  void curves(const json& sim, const json& tl, const std::string& where,
              const std::map<std::string, json>& lp);
  void hbm(const json& sim, const json* tl, const std::string& where);
  void deadlock(const json& sim, const std::string& where);
  void sizingSection(const json& fifos, const json& totals, const std::string& where);
  void decode(const json& rows, const std::string& where);
  void noTimeline(const std::string& what) {
    out_ += "<p class=\"note\">The result holds no timeline, so no " + what +
            " is drawn: save it with <code>--json --timeline</code>, or write the page with "
            "<code>--html</code>.</p>";
  }

  const json& r_;
  const Reader& in_;
  std::string out_;
  double mhz_ = 250;
};

void Page::head(const std::string& title) {
  out_ +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<meta name=\"generator\" content=\"stc report\"><title>" +
      esc(title) + "</title><style>" + kStyle + "</style></head><body><main>\n";
}

void Page::platformFacts(const json& holder, const std::string& where) {
  if (!holder.contains("platform")) return;
  const json& p = in_.at(holder, "platform", where);
  mhz_ = in_.positive(p, "clock_mhz", where + ".platform");
  out_ += "<dt>platform</dt><dd>" + esc(in_.text(p, "name", where + ".platform")) + " at " + coord(mhz_) +
          " MHz</dd>";
}

void Page::resources(const json& holder, const std::string& where, const std::string& of) {
  if (!holder.contains("resources")) return;
  const json& used = in_.at(holder, "resources", where);
  out_ += "<section id=\"resources\"><h2>Resources</h2><p class=\"sub\">" + esc(of) + "</p>";
  const json* cap = nullptr;
  if (holder.contains("platform"))
    cap = &in_.at(in_.at(holder, "platform", where), "resources", where + ".platform");
  std::vector<Bar> bars;
  for (const auto& [key, label] : std::vector<std::pair<std::string, std::string>>{
           {"lut", "LUT"}, {"ff", "FF"}, {"dsp", "DSP"}, {"bram18k", "BRAM_18K"}, {"uram", "URAM"}}) {
    auto u = static_cast<double>(in_.integer(used, key, where + ".resources"));
    auto c = cap ? static_cast<double>(in_.integer(*cap, key, where + ".platform.resources")) : 0.0;
    std::string text = grouped(static_cast<int64_t>(u));
    if (cap) text += " / " + grouped(static_cast<int64_t>(c)) + (c > 0 ? fmt(" (%.1f%%)", 100 * u / c) : "");
    bars.push_back({label, u, cap ? std::max(c, 1e-9) : 0, text});
  }
  out_ += barChart(bars, "resources", "resources used against the platform's") + "</section>\n";
}

void Page::summary(const json& sim, const std::string& where) {
  bool dead = in_.flag(sim, "deadlock", where);
  int64_t cycles = dead ? in_.integer(sim, "stopped_at", where) : in_.integer(sim, "cycles", where);
  if (sim.contains("clock_mhz")) mhz_ = in_.positive(sim, "clock_mhz", where);
  const json& tasks = in_.array(sim, "tasks", where);
  const json& fifos = in_.array(sim, "fifos", where);
  out_ += "<dt>result</dt><dd>" +
          std::string(dead ? "<span class=\"badge bad\">DEADLOCK</span> progress stopped at cycle " +
                                 grouped(cycles)
                           : "<span class=\"badge ok\">completed</span> " + grouped(cycles) + " cycles, " +
                                 timeAt(cycles, mhz_) + " at " + coord(mhz_) + " MHz") +
          "</dd>";
  out_ += "<dt>tasks</dt><dd>" + std::to_string(tasks.size()) + "</dd><dt>FIFOs</dt><dd>" +
          std::to_string(fifos.size()) + "</dd><dt>events</dt><dd>" +
          grouped(in_.integer(sim, "events", where)) + " FIFO accesses</dd>";
  // The timeline's counts when it has them (a DMA's waits for HBM apart), else the simulator's.
  bool drawn = sim.contains("timeline");
  const json& counted =
      drawn ? in_.array(in_.at(sim, "timeline", where), "tasks", where + ".timeline") : tasks;
  std::string w0 = drawn ? where + ".timeline" : where;
  int64_t full = 0, empty = 0, hbm = 0;
  for (size_t i = 0; i < counted.size(); ++i) {
    std::string w = w0 + ".tasks[" + std::to_string(i) + "]";
    full = capped(full + in_.integer(counted[i], "stall_full", w));
    empty = capped(empty + in_.integer(counted[i], "stall_empty", w));
    if (drawn && counted[i].contains("hbm_wait")) hbm = capped(hbm + in_.integer(counted[i], "hbm_wait", w));
  }
  out_ += "<dt>stalls</dt><dd>" + grouped(full) + " task-cycles on FULL FIFOs, " + grouped(empty) +
          " on EMPTY ones" +
          (drawn ? ", " + grouped(hbm) + " of DMAs waiting for HBM"
                 : std::string(" (a DMA's waits for HBM among them)")) +
          "</dd>";
}

void Page::gantt(const json& tl, const std::string& where) {
  int64_t cycles = in_.runCycles(tl, where);
  int64_t cell = in_.integer(tl, "task_bucket", where);
  const json& tasks = in_.array(tl, "tasks", where);
  out_ += "<section id=\"timeline\"><h2>Timeline</h2><p class=\"sub\">Every task over the run's " +
          grouped(cycles) + " cycles" +
          (cell > 1 ? ", each cell of " + grouped(cell) + " cycles drawn in the state that covers most of it"
                    : ", cycle by cycle") +
          "; grouped by kernel invocation (group) and layer. Hover a row for its figures.</p>";
  out_ +=
      "<p class=\"legend\"><span><i style=\"background:var(--busy)\"></i>running</span><span><i "
      "style=\"background:var(--full)\"></i>stalled writing a FULL FIFO</span><span><i "
      "style=\"background:var(--empty)\"></i>stalled reading an EMPTY FIFO</span><span><i "
      "style=\"background:var(--hbm)\"></i>a DMA waiting for HBM</span><span>"
      "<i style=\"background:#fff;border:1px solid var(--grid)\"></i>not started or finished</span></p>";
  out_ +=
      "<input type=\"radio\" name=\"zoom\" id=\"zoom1\" class=\"zoom\" checked><input type=\"radio\" "
      "name=\"zoom\" id=\"zoom4\" class=\"zoom\"><input type=\"radio\" name=\"zoom\" id=\"zoom16\" "
      "class=\"zoom\"><input type=\"radio\" name=\"zoom\" id=\"zoom64\" class=\"zoom\">"
      "<div class=\"zoombar\">zoom <label for=\"zoom1\">1&times;</label><label for=\"zoom4\">4&times;</label>"
      "<label for=\"zoom16\">16&times;</label><label for=\"zoom64\">64&times;</label> (scroll sideways "
      "when zoomed)</div>";
  // Rows: by group, then layer, then the run's order; a heading row where either changes.
  std::vector<size_t> order(tasks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<int64_t> group(tasks.size()), layer(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::string w = where + ".tasks[" + std::to_string(i) + "]";
    group[i] = in_.integer(tasks[i], "group", w);
    layer[i] = in_.optional(tasks[i], "layer", w);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(group[a], layer[a]) < std::make_pair(group[b], layer[b]);
  });
  bool groups = false, layers = false;
  for (size_t i : order)
    groups = groups || group[i] != group[order.front()], layers = layers || layer[i] >= 0;
  std::string labels = "<div class=\"axispad\"></div>", bars;
  const double rowH = 14, headH = 16;
  double y = 0;
  int64_t lastGroup = -2, lastLayer = -2;
  for (size_t i : order) {
    std::string w = where + ".tasks[" + std::to_string(i) + "]";
    const json& t = tasks[i];
    if ((groups && group[i] != lastGroup) || (layers && layer[i] != lastLayer)) {
      std::string head = groups ? "group " + std::to_string(group[i]) : "";
      if (layers)
        head += (head.empty() ? "" : " &middot; ") +
                (layer[i] >= 0 ? "layer " + std::to_string(layer[i]) : std::string("no layer"));
      labels += "<div class=\"head\">" + head + "</div>";
      bars += "<rect x=\"0\" y=\"" + coord(y) + "\" width=\"" + std::to_string(cycles) + "\" height=\"" +
              coord(headH) + "\" fill=\"#eef1f5\"/>";
      y += headH;
      lastGroup = group[i];
      lastLayer = layer[i];
    }
    int64_t start = in_.optional(t, "start", w), end = in_.optional(t, "end", w);
    std::string name = in_.text(t, "name", w), kind = in_.text(t, "kind", w);
    std::string tip =
        name + " (" + kind + ", group " + std::to_string(group[i]) +
        "): " + (start >= 0 ? "starts at cycle " + grouped(start) : std::string("never starts")) +
        (end >= 0 ? ", ends at " + grouped(end) : std::string(", never finishes")) + "; running " +
        grouped(in_.integer(t, "busy", w)) + " cycles, stalled " + grouped(in_.integer(t, "stall_full", w)) +
        " on FULL FIFOs and " + grouped(in_.integer(t, "stall_empty", w)) + " on EMPTY ones" +
        (t.contains("hbm_wait") && in_.integer(t, "hbm_wait", w) > 0
             ? ", waiting " + grouped(in_.integer(t, "hbm_wait", w)) + " for HBM"
             : std::string()) +
        (t.contains("blocked_since") && in_.optional(t, "blocked_since", w) >= 0
             ? "; blocked from cycle " + grouped(in_.optional(t, "blocked_since", w)) + " on"
             : std::string());
    labels += "<div title=\"" + esc(tip) + "\">" + esc(name) + "<span class=\"kind\">" + esc(kind) +
              "</span></div>";
    bars += "<g><title>" + esc(tip) + "</title><rect x=\"0\" y=\"" + coord(y) + "\" width=\"" +
            std::to_string(cycles) + "\" height=\"" + coord(rowH) + "\" fill=\"transparent\"/>";
    const json& spans = in_.array(t, "spans", w);
    for (const json& s : spans) {
      if (!s.is_array() || s.size() != 3 || !s[0].is_number_integer() || !s[1].is_number_integer() ||
          !s[2].is_string())
        in_.fail(w + ".spans", "holds an entry that is not [begin, end, state]");
      std::string state = s[2].get<std::string>();
      int64_t b = in_.checked(s[0], w + ".spans"), e = in_.checked(s[1], w + ".spans");
      if (state != "busy" && state != "full" && state != "empty" && state != "hbm")
        in_.fail(w + ".spans", "holds a state other than busy, full, empty or hbm");
      if (b >= e || e > cycles) in_.fail(w + ".spans", "holds a span outside the run or empty");
      bars += "<rect class=\"" + state + "\" x=\"" + std::to_string(b) + "\" y=\"" + coord(y + 2) +
              "\" width=\"" + std::to_string(e - b) + "\" height=\"" + coord(rowH - 4) + "\"/>";
    }
    bars += "</g>";
    y += rowH;
  }
  // Group boundaries and the cycle grid.
  // Ticks about every 1/8 of the view at each zoom: the finer ones shown only when zoomed that far.
  std::string axis, grid;
  std::set<double> ticked;
  for (int zoom : {1, 4, 16, 64}) {
    double step = tickStep(static_cast<double>(cycles), 8 * zoom);
    std::string cls = zoom == 1 ? "" : " class=\"tz" + std::to_string(zoom) + "\"";
    for (double c = 0; c <= static_cast<double>(cycles); c += step) {
      if (!ticked.insert(c).second) continue;
      double pct = 100 * c / static_cast<double>(cycles);
      std::string label = zoom == 1 ? shortCount(c) : grouped(static_cast<int64_t>(c));  // fine ticks in full
      if (pct < 99.5) axis += "<span" + cls + " style=\"left:" + coord(pct) + "%\">" + label + "</span>";
      grid += "<line" + cls + " x1=\"" + coord(c) + "\" x2=\"" + coord(c) + "\" y1=\"0\" y2=\"" + coord(y) +
              "\" stroke=\"#d9dde3\" vector-effect=\"non-scaling-stroke\"/>";
    }
  }
  if (groups)
    for (const json& g : in_.array(tl, "groups", where)) {
      int64_t begin = in_.integer(g, "begin", where + ".groups");
      grid += "<line x1=\"" + std::to_string(begin) + "\" x2=\"" + std::to_string(begin) +
              "\" y1=\"0\" y2=\"" + coord(y) +
              "\" stroke=\"#1d2330\" stroke-dasharray=\"4 3\" vector-effect=\"non-scaling-stroke\"/>";
    }
  out_ += "<div class=\"gantt\"><div class=\"labels\">" + labels +
          "</div><div class=\"scroll\"><div class=\"canvas\"><div class=\"axis\">" + axis + "</div>";
  out_ +=
      "<svg class=\"chart gantt-chart\" viewBox=\"0 0 " + std::to_string(cycles) + " " + coord(y) +
      "\" preserveAspectRatio=\"none\" width=\"100%\" height=\"" + coord(y) +
      "\" role=\"img\"><title>task "
      "timeline</title><style>.busy{fill:#3f9b5f}.full{fill:#d64541}.empty{fill:#3b7dd8}.hbm{fill:#e0a030}"
      "</style>" +
      grid + bars + "</svg></div></div></div></section>\n";
}

// One FIFO's chart: cumulative writes and reads above, occupancy against its depth below.
std::string curveChart(const std::string& name, const std::vector<std::array<int64_t, 5>>& points,
                       int64_t cycles, int64_t tokens, int64_t depth, int64_t maxOccupancy,
                       int64_t lpMaxOccupancy) {
  const double W = 356, left = 40, right = 8, plotW = W - left - right;
  const double topY = 8, topH = 62, lowY = 90, lowH = 50, H = 158;
  double tokMax = std::max<double>(1, static_cast<double>(tokens));
  double occMax = std::max<double>({1.0, static_cast<double>(maxOccupancy), static_cast<double>(depth),
                                    static_cast<double>(lpMaxOccupancy)});
  auto x = [&](double c) { return left + plotW * c / static_cast<double>(std::max<int64_t>(cycles, 1)); };
  auto yTop = [&](double v) { return topY + topH - topH * v / tokMax; };
  auto yLow = [&](double v) { return lowY + lowH - lowH * v / occMax; };
  std::string writes = coord(x(0)) + "," + coord(yTop(0)), reads = writes;
  std::string occupancy = coord(x(0)) + "," + coord(yLow(0));
  double pw = 0, pr = 0, held = 0;
  for (const auto& p : points) {
    std::string c = coord(x(static_cast<double>(p[0])));
    double w = static_cast<double>(p[1]), r = static_cast<double>(p[2]);
    writes += " " + c + "," + coord(yTop(pw)) + " " + c + "," + coord(yTop(w));
    reads += " " + c + "," + coord(yTop(pr)) + " " + c + "," + coord(yTop(r));
    // What it held before, the fewest and the most in the point's cycles, and what it holds after.
    for (double v : {held, static_cast<double>(p[3]), static_cast<double>(p[4]), w - r})
      occupancy += " " + c + "," + coord(yLow(v));
    pw = w, pr = r, held = w - r;
  }
  std::string end = coord(x(static_cast<double>(cycles)));
  writes += " " + end + "," + coord(yTop(pw));
  reads += " " + end + "," + coord(yTop(pr));
  occupancy += " " + end + "," + coord(yLow(held)) + " " + end + "," + coord(yLow(0));
  std::string s = "<svg class=\"chart curve\" viewBox=\"0 0 " + coord(W) + " " + coord(H) + "\" width=\"" +
                  coord(W) + "\" height=\"" + coord(H) + "\" role=\"img\"><title>" + esc(name) +
                  ": writes and reads (tokens) above, occupancy against the depth below</title>";
  auto frame = [&](double y0, double h, const std::string& topLabel) {
    s += "<rect x=\"" + coord(left) + "\" y=\"" + coord(y0) + "\" width=\"" + coord(plotW) + "\" height=\"" +
         coord(h) + "\" fill=\"#fafbfc\" stroke=\"#d9dde3\"/>";
    s += "<text x=\"" + coord(left - 3) + "\" y=\"" + coord(y0 + 9) +
         "\" text-anchor=\"end\" font-size=\"9\">" + topLabel + "</text><text x=\"" + coord(left - 3) +
         "\" y=\"" + coord(y0 + h) + "\" text-anchor=\"end\" font-size=\"9\">0</text>";
  };
  frame(topY, topH, shortCount(tokMax));
  frame(lowY, lowH, shortCount(occMax));
  s += "<text x=\"" + coord(left + 3) + "\" y=\"" + coord(topY + 10) +
       "\" font-size=\"9\" fill=\"#5f6b7a\">tokens written / read</text>";
  s += "<text x=\"" + coord(left + 3) + "\" y=\"" + coord(lowY + 10) +
       "\" font-size=\"9\" fill=\"#5f6b7a\">occupancy</text>";
  s += "<polygon points=\"" + occupancy +
       "\" fill=\"#3f9b5f\" fill-opacity=\"0.4\" stroke=\"#3f9b5f\" stroke-width=\"0.8\"/>";
  s += "<polyline points=\"" + writes + "\" fill=\"none\" stroke=\"#d64541\" stroke-width=\"1.4\"/>";
  s += "<polyline points=\"" + reads +
       "\" fill=\"none\" stroke=\"#3b7dd8\" stroke-width=\"1.4\" stroke-dasharray=\"4 2\"/>";
  if (depth >= 0)
    s += "<line x1=\"" + coord(left) + "\" x2=\"" + coord(left + plotW) + "\" y1=\"" +
         coord(yLow(static_cast<double>(depth))) + "\" y2=\"" + coord(yLow(static_cast<double>(depth))) +
         "\" stroke=\"#d64541\" stroke-dasharray=\"5 3\"><title>depth " + std::to_string(depth) +
         "</title></line>";
  if (lpMaxOccupancy >= 0)
    s += "<line x1=\"" + coord(left) + "\" x2=\"" + coord(left + plotW) + "\" y1=\"" +
         coord(yLow(static_cast<double>(lpMaxOccupancy))) + "\" y2=\"" +
         coord(yLow(static_cast<double>(lpMaxOccupancy))) +
         "\" stroke=\"#7a4fc9\" stroke-dasharray=\"2 2\"><title>maximum occupancy unbounded: " +
         std::to_string(lpMaxOccupancy) + "</title></line>";
  s += "<text x=\"" + coord(left) + "\" y=\"" + coord(H - 3) + "\" font-size=\"9\">0</text><text x=\"" +
       coord(left + plotW) + "\" y=\"" + coord(H - 3) + "\" font-size=\"9\" text-anchor=\"end\">" +
       shortCount(static_cast<double>(cycles)) + " cycles</text>";
  return s + "</svg>";
}

void Page::curves(const json& sim, const json& tl, const std::string& where,
                  const std::map<std::string, json>& lp) {
  int64_t cycles = in_.runCycles(tl, where);
  const json& fifos = in_.array(tl, "fifos", where);
  out_ +=
      "<section id=\"fifos\"><h2>Token curves</h2><p class=\"sub\">Per FIFO: the tokens written "
      "(<span style=\"color:var(--full)\">solid</span>) and read (<span "
      "style=\"color:var(--empty)\">dashed</span>) "
      "so far, and below the tokens it holds (green) against its depth (red dashes)" +
      std::string(
          lp.empty() ? "" : " and the maximum occupancy of the unbounded run the LP measured (violet dots)") +
      "; the FIFOs kernels stalled on most come first (then those DMAs waited on: a prefetch held back, a "
      "store "
      "waiting for data)" +
      (in_.integer(tl, "curve_step", where) > 1
           ? ", each point standing for " + grouped(in_.integer(tl, "curve_step", where)) +
                 " cycles with the fewest and most tokens held in them"
           : "") +
      ".</p>";
  std::vector<size_t> order(fifos.size());
  std::vector<int64_t> stalls(fifos.size()), kernel(fifos.size());
  for (size_t i = 0; i < fifos.size(); ++i) {
    order[i] = i;
    std::string w = where + ".fifos[" + std::to_string(i) + "]";
    stalls[i] = in_.integer(fifos[i], "stall_full", w) + in_.integer(fifos[i], "stall_empty", w);
    kernel[i] = in_.integer(fifos[i], "kernel_stall", w);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(kernel[a], stalls[a]) > std::make_pair(kernel[b], stalls[b]);
  });
  out_ +=
      "<div class=\"tablebox\"><table><tr><th "
      "class=\"l\">FIFO</th><th>width</th><th>depth</th><th>tokens</th>"
      "<th>max occupancy</th><th>writer stalled (FULL)</th><th>reader stalled (EMPTY)</th><th>of those, a "
      "kernel's</th></tr>";
  const json& simFifos = sim.contains("fifos") && sim["fifos"].is_array() ? sim["fifos"] : fifos;
  for (size_t i : order) {
    std::string w = where + ".fifos[" + std::to_string(i) + "]";
    const json& f = fifos[i];
    int64_t depth = in_.optional(f, "depth", w);
    int64_t width =
        i < simFifos.size() && simFifos[i].contains("width") ? in_.integer(simFifos[i], "width", w) : 0;
    out_ += std::string("<tr") + (kernel[i] > 0 ? " class=\"hot\"" : "") + "><td class=\"l\">" +
            esc(in_.text(f, "name", w)) + "</td><td>" + std::to_string(width) + "</td><td>" +
            (depth >= 0 ? grouped(depth) : "unbounded") + "</td><td>" + grouped(in_.integer(f, "tokens", w)) +
            "</td><td>" + grouped(in_.integer(f, "max_occupancy", w)) + "</td><td>" +
            grouped(in_.integer(f, "stall_full", w)) + "</td><td>" +
            grouped(in_.integer(f, "stall_empty", w)) + "</td><td>" + grouped(kernel[i]) + "</td></tr>";
  }
  out_ += "</table></div><div class=\"curves\">";
  for (size_t i : order) {
    std::string w = where + ".fifos[" + std::to_string(i) + "]";
    const json& f = fifos[i];
    std::string name = in_.text(f, "name", w);
    std::vector<std::array<int64_t, 5>> points;
    for (const json& p : in_.array(f, "points", w)) {
      if (!p.is_array() || p.size() != 5) in_.fail(w + ".points", "holds an entry that is not 5 integers");
      std::array<int64_t, 5> v{};
      for (size_t k = 0; k < 5; ++k) v[k] = in_.checked(p[k], w + ".points");
      points.push_back(v);
    }
    int64_t depth = in_.optional(f, "depth", w), tokens = in_.integer(f, "tokens", w);
    int64_t maxOcc = in_.integer(f, "max_occupancy", w), lpMax = -1;
    std::string caption = "<b>" + esc(name) + "</b> &middot; depth " +
                          (depth >= 0 ? grouped(depth) : "unbounded") + ", max " + grouped(maxOcc) + " of " +
                          grouped(tokens) + " tokens";
    auto choice = lp.find(name);
    if (choice != lp.end()) {
      const json& c = choice->second;
      lpMax = in_.integer(c, "max_occupancy", "sizing." + name);
      if (c.contains("delay"))
        caption += "<br>LP delay " + coord(in_.real(c, "delay", "sizing." + name)) + " cycles";
    }
    int64_t stalled = stalls[i];
    if (stalled > 0)
      caption += (choice != lp.end() ? "; " : "<br>") + std::string("tasks stalled ") + grouped(stalled) +
                 (stalled == 1 ? " cycle" : " cycles") + " on it";
    out_ += "<figure><figcaption>" + caption + "</figcaption>" +
            curveChart(name, points, cycles, tokens, depth, maxOcc, lpMax) + "</figure>";
  }
  out_ += "</div></section>\n";
}

void Page::hbm(const json& sim, const json* tl, const std::string& where) {
  const json& channels = in_.array(sim, "hbm", where);
  out_ += "<section id=\"hbm\"><h2>HBM</h2>";
  if (channels.empty()) {
    out_ += "<p class=\"sub\">No DMA touches HBM in this network.</p></section>\n";
    return;
  }
  int64_t total = 0;
  std::vector<Bar> bars;
  for (size_t i = 0; i < channels.size(); ++i) {
    std::string w = where + ".hbm[" + std::to_string(i) + "]";
    int64_t bytes = in_.integer(channels[i], "bytes_read", w) + in_.integer(channels[i], "bytes_written", w);
    total = capped(total + bytes);
    double busy = in_.number(channels[i], "busy_fraction", w);
    bars.push_back({"channel " + std::to_string(in_.integer(channels[i], "channel", w)),
                    static_cast<double>(bytes), 0,
                    grouped(in_.integer(channels[i], "bytes_read", w)) + " B read, " +
                        grouped(in_.integer(channels[i], "bytes_written", w)) + " written; busy " +
                        fmt("%.1f%%", 100 * busy)});
  }
  out_ += "<p class=\"sub\">" + std::to_string(channels.size()) + " pseudo-channels serve DMAs, " +
          grouped(total) +
          " bytes in all. Busy: the fraction of the time a channel was transferring (at most 100%).</p>";
  out_ += "<h3>Bytes per channel</h3>" + barChart(bars, "hbm-bytes", "bytes per HBM channel");
  if (!tl) {
    noTimeline("busy fraction over time");
    out_ += "</section>\n";
    return;
  }
  std::string tw = where + ".timeline";
  const json& series = in_.array(*tl, "hbm", tw);
  int64_t cycles = in_.runCycles(*tl, tw), sample = std::max<int64_t>(1, in_.integer(*tl, "hbm_bucket", tw));
  const double left = 90, W = 1000, rowH = 12, plotW = W - left - 10;
  double H = rowH * static_cast<double>(series.size()) + 22;
  std::string s = "<svg class=\"chart hbm-busy\" viewBox=\"0 0 " + coord(W) + " " + coord(H) + "\" width=\"" +
                  coord(W) + "\" role=\"img\"><title>HBM channels' busy fraction over time</title>";
  for (size_t i = 0; i < series.size(); ++i) {
    std::string w = tw + ".hbm[" + std::to_string(i) + "]";
    double y = rowH * static_cast<double>(i);
    s += "<text x=\"" + coord(left - 6) + "\" y=\"" + coord(y + 10) +
         "\" text-anchor=\"end\" font-size=\"10\">ch " +
         std::to_string(in_.integer(series[i], "channel", w)) + "</text><rect x=\"" + coord(left) +
         "\" y=\"" + coord(y + 1) + "\" width=\"" + coord(plotW) + "\" height=\"" + coord(rowH - 2) +
         "\" fill=\"#f1f3f6\"/>";
    const json& busy = in_.array(series[i], "busy", w);
    for (size_t k = 0; k < busy.size(); ++k) {
      if (!busy[k].is_number()) in_.fail(w + ".busy", "holds an entry that is not a number");
      double f = busy[k].get<double>();
      double c0 = static_cast<double>(k) * static_cast<double>(sample);
      if (c0 >= static_cast<double>(cycles)) in_.fail(w + ".busy", "holds more samples than the run has");
      if (f <= 0) continue;
      double c1 = std::min(static_cast<double>(cycles), c0 + static_cast<double>(sample));
      s += "<rect x=\"" + coord(left + plotW * c0 / static_cast<double>(cycles)) + "\" y=\"" + coord(y + 1) +
           "\" width=\"" + coord(plotW * (c1 - c0) / static_cast<double>(cycles)) + "\" height=\"" +
           coord(rowH - 2) + "\" fill=\"#3b7dd8\" fill-opacity=\"" + coord(std::min(1.0, f)) + "\"/>";
    }
  }
  double base = rowH * static_cast<double>(series.size());
  double step = tickStep(static_cast<double>(cycles), 8);
  for (double c = 0; c <= static_cast<double>(cycles); c += step)
    s += "<text x=\"" + coord(left + plotW * c / static_cast<double>(cycles)) + "\" y=\"" + coord(base + 14) +
         "\" font-size=\"9\" text-anchor=\"middle\">" + shortCount(c) + "</text>";
  out_ += "<h3>Busy over time</h3><p class=\"sub\">Darker: busier; each sample " + grouped(sample) +
          " cycles.</p>" + s + "</svg>";
  out_ += "</section>\n";
}

void Page::deadlock(const json& sim, const std::string& where) {
  const json& cycle = in_.array(sim, "deadlock_cycle", where);
  out_ += "<section id=\"deadlock\"><h2>Deadlock</h2>";
  std::vector<std::string> tasks;
  std::vector<std::string> edges;
  for (size_t i = 0; i < cycle.size(); ++i) {
    std::string w = where + ".deadlock_cycle[" + std::to_string(i) + "]";
    const json& e = cycle[i];
    tasks.push_back(in_.text(e, "task", w));
    int64_t depth = in_.optional(e, "depth", w);
    edges.push_back(in_.text(e, "fifo", w) + " " + in_.text(e, "state", w) + " " +
                    std::to_string(in_.integer(e, "occupancy", w)) + "/" +
                    (depth >= 0 ? std::to_string(depth) : "inf"));
  }
  if (cycle.empty()) {
    out_ += "<p>No wait-for cycle: the blocked tasks below wait on tasks that finished or on HBM.</p>";
  } else {
    out_ +=
        "<p class=\"sub\">The wait-for cycle: each task waits on the next, through the FIFO on the arrow "
        "(FULL: it cannot write; EMPTY: it cannot read; tokens held / depth).</p>";
    size_t n = tasks.size();
    // Boxes as wide as their names, on a circle wide enough that neighbours keep apart.
    double boxW = 140;
    for (const std::string& t : tasks) boxW = std::max(boxW, 7.5 * static_cast<double>(t.size()) + 24);
    double R = n <= 2 ? 90 : std::max(150.0, (boxW / 2 + 30) / std::sin(kPi / static_cast<double>(n)));
    const double W = std::max(860.0, 2 * R + boxW + 60), H = n <= 2 ? 260 : 2 * R + 120, cx = W / 2,
                 cy = H / 2;
    std::string s =
        "<svg class=\"chart waitfor\" viewBox=\"0 0 " + coord(W) + " " + coord(H) + "\" width=\"" + coord(W) +
        "\" role=\"img\"><title>wait-for cycle</title><defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" "
        "refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\">"
        "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#d64541\"/></marker></defs>";
    std::string labels;
    auto px = [&](size_t i) {
      return cx + R * std::sin(2 * kPi * static_cast<double>(i) / static_cast<double>(n));
    };
    auto py = [&](size_t i) {
      return cy - R * std::cos(2 * kPi * static_cast<double>(i) / static_cast<double>(n));
    };
    for (size_t i = 0; i < n; ++i) {  // task i waits on task i + 1
      size_t j = (i + 1) % n;
      double x0 = px(i), y0 = py(i), x1 = px(j), y1 = py(j);
      double dx = x1 - x0, dy = y1 - y0, len = std::max(1.0, std::hypot(dx, dy));
      double bend = n == 1 ? 0 : 0.25;  // arcs, so two tasks waiting on each other show two arrows
      double mx = (x0 + x1) / 2 + bend * dy, my = (y0 + y1) / 2 - bend * dx;
      double sx = x0 + dx / len * (boxW / 2 - 18), sy = y0 + dy / len * 20,
             ex = x1 - dx / len * (boxW / 2 - 18), ey = y1 - dy / len * 20;
      if (n == 1) {  // a task waiting on itself: a loop above it
        sx = x0 - 30, sy = y0 - 16, ex = x0 + 30, ey = y0 - 16, mx = x0, my = y0 - 110;
      }
      s += "<path d=\"M" + coord(sx) + "," + coord(sy) + " Q" + coord(mx) + "," + coord(my) + " " +
           coord(ex) + "," + coord(ey) +
           "\" fill=\"none\" stroke=\"#d64541\" stroke-width=\"2\" marker-end=\"url(#arrow)\"/>";
      // The label beside the arc's middle, away from the circle's centre (off the boxes and other arcs).
      double lx = (sx + 2 * mx + ex) / 4, ly = (sy + 2 * my + ey) / 4;
      double ox = lx - cx, oy = ly - cy, olen = std::max(1.0, std::hypot(ox, oy));
      lx += ox / olen * 16, ly += oy / olen * 16 + 4;
      labels += "<text x=\"" + coord(lx) + "\" y=\"" + coord(ly - 4) +
                "\" text-anchor=\"middle\" font-size=\"12\" "
                "fill=\"#a12622\" paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"3\">" +
                esc(edges[i]) + "</text>";
    }
    for (size_t i = 0; i < n; ++i)
      s += "<rect x=\"" + coord(px(i) - boxW / 2) + "\" y=\"" + coord(py(i) - 16) + "\" width=\"" +
           coord(boxW) +
           "\" height=\"32\" rx=\"6\" "
           "fill=\"#fff\" stroke=\"#1d2330\" stroke-width=\"1.5\"/><text x=\"" +
           coord(px(i)) + "\" y=\"" + coord(py(i) + 5) +
           "\" text-anchor=\"middle\" font-size=\"12\" font-weight=\"600\">" + esc(tasks[i]) + "</text>";
    out_ += s + labels + "</svg>";  // the labels over the boxes
  }
  if (sim.contains("fix")) {
    const json& fix = sim.at("fix");
    if (fix.is_null()) {
      out_ +=
          "<p class=\"fix\">No change of FIFO depths that the search tried breaks this deadlock: the "
          "network's "
          "structure needs changing.</p>";
    } else if (fix.contains("together")) {
      std::string list;
      for (const json& c : in_.array(fix, "together", where + ".fix"))
        list += (list.empty() ? "" : ", ") + esc(in_.text(c, "fifo", where + ".fix.together")) + " from " +
                std::to_string(in_.integer(c, "depth_from", where + ".fix.together")) + " to " +
                std::to_string(in_.integer(c, "depth_to", where + ".fix.together"));
      out_ += "<p class=\"fix\"><b>The smallest fix:</b> no single FIFO breaks it; deepen together " + list +
              " (the run then takes " + grouped(in_.integer(fix, "cycles_after", where + ".fix")) +
              " cycles).</p>";
    } else {
      out_ += "<p class=\"fix\"><b>The smallest fix:</b> deepen <b>" +
              esc(in_.text(fix, "fifo", where + ".fix")) + "</b> from " +
              std::to_string(in_.integer(fix, "depth_from", where + ".fix")) + " to " +
              std::to_string(in_.integer(fix, "depth_to", where + ".fix")) + " (the run then takes " +
              grouped(in_.integer(fix, "cycles_after", where + ".fix")) + " cycles).</p>";
    }
  }
  if (sim.contains("blocked")) {
    out_ +=
        "<h3>Every blocked task</h3><table><tr><th class=\"l\">task</th><th class=\"l\">waits to</th><th "
        "class=\"l\">FIFO</th><th>state</th><th>held / depth</th><th class=\"l\">needs</th></tr>";
    for (const json& b : in_.array(sim, "blocked", where))
      for (const json& e : in_.array(b, "waits", where + ".blocked")) {
        std::string w = where + ".blocked.waits";
        int64_t depth = in_.optional(e, "depth", w);
        out_ += "<tr><td class=\"l\">" + esc(in_.text(b, "task", where + ".blocked")) +
                "</td><td class=\"l\">" + esc(in_.text(e, "kind", w)) + "</td><td class=\"l\">" +
                esc(in_.text(e, "fifo", w)) + "</td><td>" + esc(in_.text(e, "state", w)) + "</td><td>" +
                std::to_string(in_.integer(e, "occupancy", w)) + " / " +
                (depth >= 0 ? std::to_string(depth) : "unbounded") + "</td><td class=\"l\">" +
                esc(in_.text(e, "needs", w)) + "</td></tr>";
      }
    out_ += "</table>";
  }
  out_ += "</section>\n";
}

void Page::sizingSection(const json& fifos, const json& totals, const std::string& where) {
  out_ +=
      "<section id=\"sizing\"><h2>FIFO sizing</h2><p class=\"sub\">The depths the linear program chose from "
      "the "
      "unbounded run's token curves, against the two baselines: every FIFO as deep as its maximum occupancy, "
      "and every FIFO holding all its tokens.</p>";
  auto sized = static_cast<double>(in_.integer(totals, "total_bits", where));
  auto maxOcc = static_cast<double>(in_.integer(totals, "baseline_max_occupancy_bits", where));
  auto full = static_cast<double>(in_.integer(totals, "baseline_full_bits", where));
  out_ += barChart({{"sized by the LP", sized, 0, grouped(static_cast<int64_t>(sized)) + " bits"},
                    {"max occupancy", maxOcc, 0, grouped(static_cast<int64_t>(maxOcc)) + " bits"},
                    {"every token", full, 0, grouped(static_cast<int64_t>(full)) + " bits"}},
                   "sizing-bits", "FIFO bits: sized against the baselines");
  out_ += "<p>Cycles: " + grouped(in_.integer(totals, "cycles_sized", where)) + " sized, " +
          grouped(in_.integer(totals, "cycles_unbounded", where)) + " with unbounded FIFOs.</p>";
  if (!fifos.is_array() || fifos.empty()) {
    out_ += "</section>\n";
    return;
  }
  out_ +=
      "<div class=\"tablebox\"><table><tr><th class=\"l\">FIFO</th><th>LP delay (cycles)</th><th>depth "
      "chosen</th><th>max occupancy</th>"
      "<th>every token</th><th>bits</th><th class=\"l\">memory</th></tr>";
  for (size_t i = 0; i < fifos.size(); ++i) {
    std::string w = where + ".fifos[" + std::to_string(i) + "]";
    const json& f = fifos[i];
    out_ += "<tr><td class=\"l\">" + esc(in_.text(f, "name", w)) + "</td><td>" +
            (f.contains("delay") ? coord(in_.real(f, "delay", w)) : std::string("&ndash;")) + "</td><td>" +
            grouped(in_.integer(f, "depth", w)) + "</td><td>" + grouped(in_.integer(f, "max_occupancy", w)) +
            "</td><td>" +
            (f.contains("tokens") ? grouped(in_.integer(f, "tokens", w)) : std::string("&ndash;")) +
            "</td><td>" + grouped(in_.integer(f, "bits", w)) + "</td><td class=\"l\">" +
            esc(in_.text(f, "memory", w)) + "</td></tr>";
  }
  out_ += "</table></div></section>\n";
}

void Page::simulation(const json& sim, const std::string& where, const json* sizing,
                      const std::string& sizingWhere) {
  out_ += "<section id=\"summary\"><h2>Summary</h2><dl class=\"facts\">";
  platformFacts(r_, "");
  summary(sim, where);
  out_ += "</dl></section>\n";
  const json& holder = r_.contains("resources") ? r_ : sim;
  resources(holder, "",
            r_.contains("resources_of") && r_.at("resources_of").is_string()
                ? "Of " + r_.at("resources_of").get<std::string>() + ", against the platform's."
                : "The design, against the platform's.");
  if (in_.flag(sim, "deadlock", where)) deadlock(sim, where);
  std::map<std::string, json> lp;
  if (sizing) {
    const json& list = sizing->contains("fifos") && (*sizing)["fifos"].is_array() ? (*sizing)["fifos"]
                       : sizing->contains("sized_fifos")                          ? (*sizing)["sized_fifos"]
                                                                                  : json::array();
    for (const json& f : list)
      if (f.contains("name") && f["name"].is_string()) lp[f["name"].get<std::string>()] = f;
    sizingSection(list, *sizing, sizingWhere);
  }
  const json* tl = sim.contains("timeline") ? &sim.at("timeline") : nullptr;
  if (tl) {
    gantt(*tl, where + ".timeline");
    curves(sim, *tl, where + ".timeline", lp);
  } else {
    out_ += "<section id=\"timeline\"><h2>Timeline</h2>";
    noTimeline("timeline");
    out_ += "</section>\n<section id=\"fifos\"><h2>Token curves</h2>";
    noTimeline("token curve");
    out_ += "</section>\n";
  }
  hbm(sim, tl, where);
}

void Page::decode(const json& rows, const std::string& where) {
  const json& first = rows.at(0);
  std::string w0 = where.empty() ? "" : where + "[0]";
  out_ += "<section id=\"summary\"><h2>Summary</h2><dl class=\"facts\">";
  out_ += "<dt>model</dt><dd>" + esc(in_.text(first, "model", w0)) + "</dd>";
  platformFacts(first, w0);
  bool fitsHbm = in_.flag(first, "fits_hbm", w0);
  out_ +=
      "<dt>HBM</dt><dd>" + fmt("%.3f GB", in_.number(first, "hbm_bytes", w0) / 1e9) +
      " of weights and KV caches " +
      (fitsHbm ? "<span class=\"badge ok\">fits</span>" : "<span class=\"badge bad\">DOES NOT FIT</span>") +
      "</dd>";
  if (first.contains("layers"))
    out_ += "<dt>layers</dt><dd>" + std::to_string(in_.integer(first, "layers", w0)) + "</dd>";
  out_ += "</dl></section>\n";
  resources(first, w0, "The device: decode layer, LM head and prefill, against the platform's.");

  out_ +=
      "<section id=\"decode\"><h2>Decode</h2><p class=\"sub\">Two schedules: one kernel call per layer (the "
      "paper's host loop) and one call per token (the device steps through the layers). The roofline: every "
      "weight and KV byte of a token read once at the HBM's full bandwidth.</p>";
  out_ +=
      "<table><tr><th>prompt:gen</th><th>latency ms</th><th>TTFT ms</th><th>tokens/s</th><th>device loop "
      "latency ms</th><th>TTFT ms</th><th>tokens/s</th><th>roofline tokens/s</th><th>device loop of the "
      "roofline</th></tr>";
  std::vector<Bar> bars;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string w = where + "[" + std::to_string(i) + "]";
    const json& r = rows[i];
    const json& dev = in_.at(r, "device_loop", w);
    std::string req =
        std::to_string(in_.integer(r, "prompt", w)) + ":" + std::to_string(in_.integer(r, "gen", w));
    double roof = in_.number(r, "roofline_tokens_per_s", w);
    double host = in_.number(r, "decode_tokens_per_s", w),
           device = in_.number(dev, "decode_tokens_per_s", w + ".device_loop");
    out_ += "<tr><td>" + req + "</td><td>" + fmt("%.3f", in_.number(r, "latency_ms", w)) + "</td><td>" +
            fmt("%.3f", in_.number(r, "ttft_ms", w)) + "</td><td>" + fmt("%.1f", host) + "</td><td>" +
            fmt("%.3f", in_.number(dev, "latency_ms", w + ".device_loop")) + "</td><td>" +
            fmt("%.3f", in_.number(dev, "ttft_ms", w + ".device_loop")) + "</td><td>" + fmt("%.1f", device) +
            "</td><td>" + fmt("%.1f", roof) + "</td><td>" +
            fmt("%.1f%%", roof > 0 ? 100 * device / roof : 0) + "</td></tr>";
    bars.push_back(
        {req + " host loop", host, roof,
         fmt("%.1f tokens/s", host) + fmt(" (%.1f%% of the roofline)", roof > 0 ? 100 * host / roof : 0)});
    bars.push_back({req + " device loop", device, roof,
                    fmt("%.1f tokens/s", device) + fmt(" (%.1f%%)", roof > 0 ? 100 * device / roof : 0)});
  }
  out_ += "</table><h3>Decode speed against the roofline</h3>" +
          barChart(bars, "decode-roofline", "decode tokens per second against the HBM roofline");

  // One decode step of the last request, per layer and the head, against the roofline's time per token.
  const json& last = rows.back();
  std::string wl = where + "[" + std::to_string(rows.size() - 1) + "]";
  int64_t layers = last.contains("layers") ? in_.integer(last, "layers", wl) : 1;
  int64_t firstCycles = in_.integer(last, "layer_cycles_first", wl),
          lastCycles = in_.integer(last, "layer_cycles_last", wl);
  int64_t head = in_.integer(last, "head_cycles", wl);
  double roofUs = 1e6 / std::max(1e-9, in_.number(last, "roofline_tokens_per_s", wl));
  if (layers < 1) in_.fail(wl + ".layers", "is below 1");
  double firstUs =
      (static_cast<double>(layers) * static_cast<double>(firstCycles) + static_cast<double>(head)) / mhz_;
  double lastUs =
      (static_cast<double>(layers) * static_cast<double>(lastCycles) + static_cast<double>(head)) / mhz_;
  double maxUs = std::max({firstUs, lastUs, roofUs});
  if (!std::isfinite(maxUs)) in_.fail(wl, "gives a decode step too long to draw");
  const double W = 1000, left = 150, plotW = W - left - 20;
  std::string s = "<svg class=\"chart decode-step\" viewBox=\"0 0 " + coord(W) + " 150\" width=\"" +
                  coord(W) + "\" role=\"img\"><title>one decode step per layer and head</title>";
  auto stepBar = [&](double y, const std::string& label, int64_t layerCycles) {
    s += "<text x=\"" + coord(left - 8) + "\" y=\"" + coord(y + 15) +
         "\" text-anchor=\"end\" font-size=\"12\">" + esc(label) + "</text>";
    double x = left;
    // A segment per layer; past 512 layers one segment for all (a segment would be under a pixel).
    int64_t segments = layers <= 512 ? layers : 1;
    double perSegment = static_cast<double>(layerCycles) * static_cast<double>(layers / segments);
    for (int64_t l = 0; l < segments; ++l) {
      double w = plotW * perSegment / mhz_ / maxUs;
      std::string what = segments == layers
                             ? "layer " + std::to_string(l) + ": " + grouped(layerCycles) + " cycles"
                             : grouped(layers) + " layers of " + grouped(layerCycles) + " cycles";
      s += "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) +
           "\" height=\"22\" fill=\"" + (l % 2 ? "#3f9b5f" : "#5fb87c") +
           "\" stroke=\"#fff\" stroke-width=\"0.5\"><title>" + what + "</title></rect>";
      x += w;
    }
    double w = plotW * static_cast<double>(head) / mhz_ / maxUs;
    s += "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) +
         "\" height=\"22\" fill=\"#7a4fc9\">"
         "<title>LM head: " +
         grouped(head) + " cycles</title></rect>";
  };
  stepBar(12, "at the first step", firstCycles);
  stepBar(46, "at the last step", lastCycles);
  double rx = left + plotW * roofUs / maxUs;
  s += "<line x1=\"" + coord(rx) + "\" x2=\"" + coord(rx) +
       "\" y1=\"6\" y2=\"78\" stroke=\"#d64541\" stroke-width=\"2\" "
       "stroke-dasharray=\"5 3\"/><text x=\"" +
       coord(rx) +
       "\" y=\"92\" text-anchor=\"middle\" font-size=\"11\" "
       "fill=\"#a12622\">roofline " +
       fmt("%.2f us", roofUs) + "</text>";
  double step = tickStep(maxUs, 8);
  for (double u = 0; u <= maxUs; u += step)
    s += "<text x=\"" + coord(left + plotW * u / maxUs) +
         "\" y=\"118\" font-size=\"10\" text-anchor=\"middle\">" + shortCount(u) + "</text>";
  s += "<text x=\"" + coord(left + plotW / 2) +
       "\" y=\"138\" font-size=\"11\" text-anchor=\"middle\">microseconds per "
       "token: each layer's simulated cycles (" +
       std::to_string(layers) +
       " in green) and the LM head's (violet); the host "
       "loop adds a kernel call per layer</text></svg>";
  out_ += "<h3>One decode step, per layer and head (" + std::to_string(in_.integer(last, "prompt", wl)) +
          ":" + std::to_string(in_.integer(last, "gen", wl)) + ")</h3>" + s;
  out_ += "<p>The decode layer keeps its HBM channels busy " +
          fmt("%.1f%%", 100 * in_.number(last, "layer_hbm_busy_mean", wl)) +
          " of the time on average over the platform's channels, the busiest " +
          fmt("%.1f%%", 100 * in_.number(last, "layer_hbm_busy_max", wl)) + ".</p></section>\n";
  if (last.contains("decode_layer")) {  // the layer itself, simulated at the request's first decode step
    const json& sim = in_.at(last, "decode_layer", wl);
    std::string w = wl + ".decode_layer";
    const json& at = in_.at(sim, "bindings", w);
    bool dead = in_.flag(sim, "deadlock", w);
    int64_t cycles = in_.integer(sim, dead ? "stopped_at" : "cycles", w);
    out_ += "<section id=\"decode-layer\"><h2>The decode layer at the first step" +
            (at.contains("ctx") ? " (ctx " + std::to_string(in_.integer(at, "ctx", w + ".bindings")) + ")"
                                : std::string()) +
            "</h2><p class=\"sub\">" +
            (dead ? "DEADLOCK: progress stopped at cycle " + grouped(cycles)
                  : grouped(cycles) + " cycles, " + timeAt(cycles, mhz_)) +
            ": one layer of one token, as the estimate simulates it.</p></section>\n";
    const json& tl = in_.at(sim, "timeline", w);
    gantt(tl, w + ".timeline");
    hbm(sim, &tl, w);
    curves(sim, tl, w + ".timeline", {});
  }
}

std::string Page::render() {
  if (r_.is_array()) {  // stc simulate MODEL --table --json
    if (r_.empty()) in_.fail("[0]", "is missing (an empty table)");
    head("stc report: " + in_.text(r_.at(0), "model", "[0]") + " decode");
    out_ += "<h1>" + esc(in_.text(r_.at(0), "model", "[0]")) + ": decode</h1>";
    decode(r_, "");
  } else if (!r_.is_object()) {
    in_.fail("(top)", "is not a JSON object or array");
  } else if (r_.contains("roofline_tokens_per_s")) {  // stc simulate MODEL --decode P:G --json
    head("stc report: " + in_.text(r_, "model", "") + " decode");
    out_ += "<h1>" + esc(in_.text(r_, "model", "")) + ": decode " +
            std::to_string(in_.integer(r_, "prompt", "")) + ":" + std::to_string(in_.integer(r_, "gen", "")) +
            "</h1>";
    decode(json::array({r_}), "");
  } else if (r_.contains("command")) {  // stc run|emit --json
    std::string command = in_.text(r_, "command", "");
    std::string input = in_.text(r_, "input", "");
    head("stc report: " + command + " " + input);
    out_ += "<h1>stc " + esc(command) + " " + esc(input) + "</h1>";
    const json& sizing = in_.at(r_, "sizing", "");
    if (!r_.contains("simulation")) {
      out_ += "<section id=\"summary\"><h2>Summary</h2><dl class=\"facts\">";
      platformFacts(r_, "");
      out_ +=
          "<dt>cycles</dt><dd>" + grouped(in_.integer(sizing, "cycles_sized", "sizing")) + " sized</dd></dl>";
      noTimeline("simulation");
      out_ += "</section>\n";
      resources(r_, "", "The design with its sized FIFOs, against the platform's.");
      if (sizing.contains("total_bits") && sizing.contains("baseline_full_bits"))
        sizingSection(sizing.value("sized_fifos", json::array()), sizing, "sizing");
    } else {
      simulation(in_.at(r_, "simulation", ""), "simulation",
                 sizing.contains("baseline_full_bits") ? &sizing : nullptr, "sizing");
    }
  } else if (r_.contains("total_bits")) {  // stc size-fifos --json
    head("stc report: FIFO sizing");
    out_ += "<h1>FIFO sizing" +
            (r_.contains("network") ? ": " + esc(in_.text(r_, "network", "")) : std::string()) + "</h1>";
    if (r_.contains("simulation")) {
      simulation(in_.at(r_, "simulation", ""), "simulation", &r_, "");
    } else {
      out_ += "<section id=\"summary\"><h2>Summary</h2><dl class=\"facts\">";
      platformFacts(r_, "");
      out_ += "</dl>";
      noTimeline("simulation of the sized network");
      out_ += "</section>\n";
      resources(r_, "", "Resources.");
      sizingSection(in_.array(r_, "fifos", ""), r_, "");
    }
  } else if (r_.contains("deadlock") && r_.contains("tasks")) {  // stc simulate NETWORK --json
    std::string name = in_.text(r_, "network", "");
    head("stc report: " + name);
    out_ += "<h1>" + esc(name) + "</h1>";
    simulation(r_, "", nullptr, "");
  } else {
    in_.fail("(top)",
             "says neither a simulation (deadlock, tasks), a sizing (total_bits), a run (command) nor a "
             "decode (roofline_tokens_per_s)");
  }
  out_ +=
      "<footer class=\"muted\"><p>Written by stc report. Times are simulated cycles at the kernel "
      "clock.</p></footer>"
      "</main></body></html>\n";
  return out_;
}

}  // namespace

std::string renderHtml(const json& result, const std::string& source) {
  Reader in(source);
  return Page(result, in).render();
}

}  // namespace stc::report
