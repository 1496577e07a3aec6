// Helpers the HLS emitters share (see codegen_utils.h).
#include "compiler/emit/codegen_utils.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

namespace stc::emit {

Code& Code::line(const std::string& text) {
  if (!text.empty()) text_ += std::string(static_cast<size_t>(indent_) * 2, ' ') + text;
  text_ += "\n";
  return *this;
}

Code& Code::open(const std::string& head) {
  line(head.empty() ? "{" : head + " {");
  ++indent_;
  return *this;
}

Code& Code::close(const std::string& tail) {
  if (indent_ == 0) throw std::logic_error("emit: a block closed that was never opened");
  --indent_;
  return line(tail);
}

Code& Code::blank() {
  text_ += "\n";
  return *this;
}

Code& Code::raw(const std::string& lines) {
  text_ += lines;
  return *this;
}

std::pair<int64_t, int64_t> symbolRunRange(const Network& net, const Bindings& maxima,
                                           const std::string& symbol) {
  int64_t m = maxima.at(symbol);
  auto sized = net.sizedFor.find(symbol);
  if (sized == net.sizedFor.end()) return {1, m};
  return {std::min(m, sized->second.first), std::min(m, sized->second.second)};
}

std::string identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "t_" + out;
  return out;
}

std::map<std::string, std::string> uniqueIdentifiers(const std::vector<std::string>& names) {
  std::map<std::string, std::string> out;
  std::set<std::string> taken;
  for (const auto& name : names) {
    if (out.count(name)) continue;
    std::string id = identifier(name);
    for (int n = 2; taken.count(id); ++n) id = identifier(name) + "_" + std::to_string(n);
    taken.insert(id);
    out[name] = id;
  }
  return out;
}

std::map<std::string, std::string> dmaArguments(const Network& net) {
  std::vector<std::string> names;
  for (const Task& t : net.tasks)
    if (t.isDma()) names.push_back(t.name);
  return uniqueIdentifiers(names);
}

std::string cxx(const Expr& e) { return e.isConstant() ? std::to_string(e.eval()) : "(" + e.str() + ")"; }

std::string cxxProduct(const std::vector<Expr>& exprs) {
  int64_t constant = 1;
  std::string symbolic;
  for (const Expr& e : exprs) {
    if (e.isConstant()) constant *= e.eval();
    else symbolic += (symbolic.empty() ? "" : " * ") + cxx(e);
  }
  if (symbolic.empty()) return std::to_string(constant);
  return constant == 1 ? symbolic : std::to_string(constant) + " * " + symbolic;
}

void openLoops(Code& code, const StreamOrder& order, const std::string& prefix, int from, int to,
               const std::string& label, const Bindings* maxima) {
  openLoops(code, order.trips, prefix, from, to, label, maxima);
}

void openLoops(Code& code, const std::vector<Expr>& trips, const std::string& prefix, int from, int to,
               const std::string& label, const Bindings* maxima) {
  for (int k = from; k < to; ++k) {
    std::string v = prefix + std::to_string(k);
    const Expr& trip = trips.at(static_cast<size_t>(k));
    code.open((label.empty() ? "" : label + "_" + v + ": ") + "for (int " + v + " = 0; " + v + " < " + cxx(trip) + "; ++" + v + ")");
    if (maxima && !trip.isConstant())
      code.line("#pragma HLS LOOP_TRIPCOUNT min=1 max=" + std::to_string(trip.eval(*maxima)));
  }
}

std::string iterationMark(int64_t latency, int64_t ii) {
  ii = std::max<int64_t>(ii, 1);
  return "ST_ITER(" + std::to_string(std::max<int64_t>(latency, 0) / ii) + ", " +
         (latency % ii != 0 ? "true" : "false") + ");  // make dfsim: the pipeline's accesses by stage group";
}

void FlatLoop::open(const std::string& label, int64_t ii, const Bindings* maxima, int64_t latency,
                    int outer) {
  pipelined_ = std::max(from_, std::min(outer, n_ - 1));
  openLoops(c_, trips_, prefix_, from_, pipelined_, label, maxima);
  std::vector<Expr> used(trips_.begin() + pipelined_, trips_.begin() + n_);
  std::string decl;
  for (int k = pipelined_; k < n_; ++k) decl += (k > pipelined_ ? ", " : "") + var(k) + " = 0";
  c_.open("");  // the counters' scope: a task's phases each have their own
  if (n_ > pipelined_) c_.line("int " + decl + ";");
  c_.open((label.empty() ? "" : label + ": ") + "for (long it = 0; it < " + cxxProduct(used) + "; ++it)");
  c_.line("#pragma HLS PIPELINE II=" + std::to_string(ii));
  if (pipelined_ > from_) c_.line("#pragma HLS LOOP_FLATTEN off");
  bool symbolic = false;
  for (const Expr& t : used) symbolic = symbolic || !t.isConstant();
  if (maxima && symbolic) {
    Bindings at = *maxima;  // a triangular nest's trips at its outer loops' last iterations: its largest
    for (int k = 0; k < pipelined_; ++k) at[var(k)] = trips_[static_cast<size_t>(k)].eval(at) - 1;
    int64_t total = 1;
    for (const Expr& t : used) total *= t.eval(at);
    c_.line("#pragma HLS LOOP_TRIPCOUNT min=1 max=" + std::to_string(total));
  }
  c_.line(iterationMark(latency, ii));
}

void FlatLoop::close() {
  // Advance the counters: the last loop fastest, each carrying into the one outside it.
  for (int k = n_ - 1; k >= pipelined_; --k) {
    c_.open("if (++" + var(k) + " == " + cxx(trips_[static_cast<size_t>(k)]) + ")");
    c_.line(var(k) + " = 0;");
  }
  for (int k = pipelined_; k < n_; ++k) c_.close();
  c_.close();
  c_.close();
  if (pipelined_ > from_)
    c_.line("ST_DRAIN();  // make dfsim: the pipeline drains before the next outer iteration");
  for (int k = from_; k < pipelined_; ++k) c_.close();
}

std::string FlatLoop::first(int level) const {
  std::string s;
  for (int k = std::max(level + 1, from_); k < n_; ++k) s += (s.empty() ? "" : " && ") + var(k) + " == 0";
  return s;
}

std::string FlatLoop::last(int level) const {
  std::string s;
  for (int k = std::max(level + 1, from_); k < n_; ++k) {
    const Expr& t = trips_[static_cast<size_t>(k)];
    s += (s.empty() ? "" : " && ") + var(k) +
         " == " + (t.isConstant() ? std::to_string(t.eval() - 1) : "(" + cxx(t) + ") - 1");
  }
  return s;
}

std::string dataCoord(const StreamOrder& order, int d, const std::string& prefix, const std::string& elem) {
  const AffineExpr& r = order.map.results()[static_cast<size_t>(d)];
  std::string s;
  for (size_t k = 0; k < r.coeffs.size(); ++k) {
    int64_t c = r.coeffs[k] * order.steps[k];
    if (c == 0) continue;
    s += (s.empty() ? "" : " + ") + (c == 1 ? "" : std::to_string(c) + " * ") + prefix + std::to_string(k);
  }
  if (r.constant != 0) s += (s.empty() ? "" : " + ") + std::to_string(r.constant);
  // The element's coordinate within the token, row-major over the element shape.
  int64_t extent = order.element[static_cast<size_t>(d)];
  if (extent > 1) {
    int64_t inner = 1;
    for (size_t e = static_cast<size_t>(d) + 1; e < order.element.size(); ++e) inner *= order.element[e];
    std::string within = inner == 1 ? elem : "(" + elem + ") / " + std::to_string(inner);
    if (inner * extent != tokenElements(order) || inner != 1) within = "(" + within + ") % " + std::to_string(extent);
    s += (s.empty() ? "" : " + ") + within;
  }
  return s.empty() ? "0" : s;
}

std::string rowMajor(const std::vector<Expr>& shape, const std::vector<std::string>& coords) {
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<Expr> inner(shape.begin() + static_cast<std::ptrdiff_t>(d) + 1, shape.end());
    std::string stride = cxxProduct(inner);
    if (coords[d] == "0") continue;
    s += (s.empty() ? "" : " + ") + (stride == "1" ? "(" + coords[d] + ")" : "(" + coords[d] + ") * " + stride);
  }
  return s.empty() ? "0" : s;
}

std::string elementIndex(const TensorInfo& tensor, const StreamOrder& order, const std::string& prefix,
                         const std::string& elem) {
  std::vector<std::string> coords;
  for (int d = 0; d < order.map.numResults(); ++d) coords.push_back(dataCoord(order, d, prefix, elem));
  return rowMajor(tensor.shape, coords);
}

std::string insideTensor(const TensorInfo& tensor, const StreamOrder& order, const std::string& prefix,
                         const std::string& elem) {
  std::string s;
  if (static_cast<int>(tensor.shape.size()) !=
      order.map.numResults())  // (sizes paired with other coordinates)
    throw UserError("unsupported: HLS emission of a stream of '" + tensor.name + "' whose order has " +
                    std::to_string(order.map.numResults()) + " coordinates for its " +
                    std::to_string(tensor.shape.size()) + " dimensions");
  for (int d = 0; d < order.map.numResults(); ++d) {
    const Expr& size = tensor.shape[static_cast<size_t>(d)];
    if (size.isConstant() || order.element[static_cast<size_t>(d)] == 1) continue;
    s += (s.empty() ? "" : " && ") + ("(" + dataCoord(order, d, prefix, elem) + ") < " + cxx(size));
  }
  return s;
}

std::string insideOr(const std::string& inside, const std::string& value, const std::string& zero) {
  return inside.empty() ? value : "(" + inside + ") ? " + value + " : " + zero;
}

std::string ifInside(const std::string& inside) { return inside.empty() ? "" : "if (" + inside + ") "; }

std::string broadcastIndex(const std::vector<int64_t>& from, const std::vector<int64_t>& to, const std::string& elem) {
  size_t shift = from.size() - to.size();
  std::string s;
  int64_t toStride = 1;
  for (size_t d = to.size(); d-- > 0;) {
    int64_t extent = to[d];
    if (extent > 1) {
      int64_t inner = 1;
      for (size_t e = d + shift + 1; e < from.size(); ++e) inner *= from[e];
      std::string coord = inner == 1 ? elem : "(" + elem + ") / " + std::to_string(inner);
      coord = "(" + coord + ") % " + std::to_string(extent);
      s = (toStride == 1 ? coord : coord + " * " + std::to_string(toStride)) + (s.empty() ? "" : " + " + s);
    }
    toStride *= extent;
  }
  return s.empty() ? "0" : s;
}


}  // namespace stc::emit
