// Task bodies in HLS C++. Every stream carries f32 tokens `Tok<N>` (N elements, row-major over the
// token's element shape); a token's place in its tensor follows from its itensor type, so every task
// is a loop nest over its stream orders:
//
//   DMA read     for each token of `order`: N elements from HBM (packed buffers in stream order, tensors
//                of earlier groups row-major); 512-bit tokens collect 16 elements
//   DMA write    for each token of the producer's order: its elements to their row-major addresses
//   converter    .w: per iteration of the shared loops, fill a block (hls::stream_of_blocks, the
//                ping-pong buffer) in the source order; .r: stream the block in the consumer's order
//   kernels      the op, token by token: elementwise (with broadcasts), matmul (a row tile of A times a
//                [Tk, Tn] tile of W, accumulated over k), row ops in two passes (.stats then .apply),
//                reductions, copies (move, transpose, slice), concat (a buffer), rope (a row buffer:
//                an output element needs its partner in the other half of the row)
#include "compiler/emit/task_bodies.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "compiler/dse/cost_model.h"
#include "compiler/emit/runtime/st_numeric.h"
#include "compiler/ir/diagnostics.h"
#include "compiler/lower/kernels.h"
#include "compiler/reference/elementwise.h"

namespace stc::emit {

namespace {

// A 512-bit DMA token of dtype.
std::string wideToken(const std::string& dtype) { return tokenOf(512 / storageOf(dtype).bits, dtype); }

// The dequantised value of int8 element `v` of tensor scale s, as an f32 expression (reference/
// quantized.h: dequantised).
std::string deq(const std::string& v, const QuantScale& s) {
  std::string real = "(static_cast<float>(" + v + ") * " + floatLiteral(s.scale) + ")";
  return s.masked ? "(" + v + " == -128 ? -INFINITY : " + real + ")" : real;
}
// Requantisation of f32 expression `v` into a tensor of scale s.
std::string req(const std::string& v, const QuantScale& s) {
  return std::string(s.masked ? "st_q8_masked" : "st_q8") + "((" + v + ") * " + floatLiteral(s.inverse) + ")";
}

void pipeline(Code& c, int64_t ii) { c.line("#pragma HLS PIPELINE II=" + std::to_string(ii)); }

// `for (int e = 0; e < n; ++e)` unrolled.
void openElements(Code& c, const std::string& var, int64_t n) {
  c.open("for (int " + var + " = 0; " + var + " < " + std::to_string(n) + "; ++" + var + ")");
  c.line("#pragma HLS UNROLL");
}

// Reads a kernel port's token into `var`: from one FIFO, or reassembled from its stripes.
// With declare false, `var` exists already (a token read at an outer level, held across iterations).
void readPort(const EmitContext& ctx, Code& c, const std::string& var, int64_t elements,
              const std::vector<std::string>& fifos, const std::string& dtype, bool declare = true) {
  std::string decl = declare ? tokenOf(elements, dtype) + " " : "";
  if (fifos.size() == 1) {
    c.line(decl + var + " = " + ctx.fifoVar(fifos[0]) + ".read();");
    return;
  }
  if (declare) c.line(decl + var + ";");
  int64_t part = elements / static_cast<int64_t>(fifos.size());
  for (size_t s = 0; s < fifos.size(); ++s) {
    c.open("");
    c.line(tokenOf(part, dtype) + " part = " + ctx.fifoVar(fifos[s]) + ".read();");
    openElements(c, "j", part);
    c.line(var + ".v[" + std::to_string(static_cast<int64_t>(s) * part) + " + j] = part.v[j];");
    c.close().close();
  }
}

void writePort(const EmitContext& ctx, Code& c, const std::string& var, const std::vector<std::string>& fifos) {
  for (const auto& f : fifos) c.line(ctx.fifoVar(f) + ".write(" + var + ");");
}

class KernelBody {
 public:
  KernelBody(const EmitContext& ctx, const Task& task, const TaskRole& role, Code& c)
      : ctx_(ctx), task_(task), role_(role), c_(c),
        kernel_(ctx.compiled->kernels.kernels[static_cast<size_t>(role.kernel)]),
        op_(ctx.graph->ops[static_cast<size_t>(kernel_.opIndex)]) {}

  void emit() {
    const std::string& k = kernel_.op;
    auto dot = k.find('.');
    std::string base = k.substr(0, dot), pass = dot == std::string::npos ? "" : k.substr(dot + 1);
    if (k == "matmul" || k == "linear") return matmul();
    if (k == kEpilogueOp) return epilogue();
    bool copy = k == "move" || k == "transpose" || k == "slice";
    if (quant() && (pass == "apply" || k == "rope" || (elementwiseArity(k) > 0 && !copy &&
                                                        !lanesLookUp(kernel_, ctx_.compiled->options.quant))))
      dequantTables();
    if (pass == "stats") return rowStats(base);
    if (pass == "apply") return rowApply(base);
    if (k == "reduce_sum" || k == "reduce_max" || k == "reduce_mean") return reduce();
    if (k == "concat") return concat();
    if (k == "rope") return rope();
    if (k == "move" || k == "transpose" || k == "slice" || elementwiseArity(k) > 0) return elementwise();
    throw UserError(formatError(op_.loc, "unsupported: HLS emission of op '" + op_.name + "' (" + op_.op + ")"));
  }

 private:
  const KernelPort& port(size_t ph, size_t p) const { return kernel_.phases[ph].ports[p]; }
  const std::vector<std::string>& fifos(size_t ph, size_t p) const { return role_.portFifos[ph][p]; }
  int64_t ii(size_t ph) const { return task_.phases[ph].ii; }
  const TensorInfo& info(const std::string& tensor) const { return ctx_.compiled->kernels.tensors.at(tensor); }
  void read(size_t ph, size_t p, const std::string& var) {
    readPort(ctx_, c_, var, storageUnits(port(ph, p).order), fifos(ph, p), port(ph, p).order.dtype);
  }
  std::string portTok(size_t ph, size_t p) const {
    return tokenOf(storageUnits(port(ph, p).order), port(ph, p).order.dtype);
  }
  // A token read at an outer level of the flattened loop: declared before it, read where the loops inside
  // its level start (a port of level L reads at the first iteration of the loops inside L).
  void declareHeld(size_t ph, size_t p, const std::string& var) { c_.line(portTok(ph, p) + " " + var + ";"); }
  void readHeld(size_t ph, size_t p, const std::string& var, const FlatLoop& f) {
    std::string cond = f.first(level(ph, p));
    if (!cond.empty()) c_.open("if (" + cond + ")");
    readPort(ctx_, c_, var, storageUnits(port(ph, p).order), fifos(ph, p), port(ph, p).order.dtype, false);
    if (!cond.empty()) c_.close();
  }
  int level(size_t ph, size_t p) const {
    return port(ph, p).level == -2 ? numLoops(ph) - 1 : port(ph, p).level;
  }
  // Phase ph's loop nest as one flattened pipelined loop (closed by its close()).
  FlatLoop flat(size_t ph) {
    FlatLoop f(c_, kernel_.phases[ph].trip, "i", numLoops(ph));
    f.open(identifier(kernel_.name) + (kernel_.phases.size() > 1 ? "_p" + std::to_string(ph) : ""), ii(ph),
           &ctx_.compiled->options.maxima, task_.phases[ph].latency, task_.phases[ph].outer);
    return f;
  }
  bool quant() const { return ctx_.quant != nullptr; }
  // An f32 view of element `v` of port p: dequantised under W4A8, looked up in the port's table where it
  // has one (dequantTables).
  std::string value(size_t ph, size_t p, const std::string& v) const {
    if (!quant()) return v;
    if (ph == 0 && tables_.count(p)) return "dq" + std::to_string(p) + "[" + v + " + 128]";
    return deq(v, ctx_.scale(port(ph, p).tensor));
  }

  // A table of the 256 dequantised values of each int8 input port of phase 0 (dq<p>): each entry the f32
  // product the dequantisation computes (q * scale, rounded once), so a lane looks its value up instead of
  // converting and multiplying (a multiplier of 3 DSPs a lane and input, dse/cost_model.cpp); read by
  // every lane at once, the constant table is folded into logic.
  void dequantTables() {
    const auto& ports = kernel_.phases[0].ports;
    for (size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].out || ports[p].order.dtype != "i8") continue;
      const QuantScale& scale = ctx_.scale(ports[p].tensor);
      std::string name = "dq" + std::to_string(p);
      c_.line("static const float " + name + "[256] = {");
      for (int row = 0; row < 256; row += 8) {
        std::string line = "    ";
        for (int q = row - 128; q < row - 128 + 8; ++q)
          line += floatLiteral(dequantised(q, scale)) + (q == 127 ? "" : ", ");
        c_.line(line);
      }
      c_.line("};");
      c_.line("#pragma HLS ARRAY_PARTITION variable=" + name + " complete");
      tables_.insert(p);
    }
  }
  // The statement storing f32 expression `v` as element `target` of port p's token.
  std::string store(size_t ph, size_t p, const std::string& target, const std::string& v) const {
    return target + " = " + (quant() ? req(v, ctx_.scale(port(ph, p).tensor)) : v) + ";";
  }
  std::string outTok(size_t ph, size_t p, int64_t elements) const {
    return tokenOf(elements, port(ph, p).order.dtype);
  }
  void write(size_t ph, size_t p, const std::string& var) { writePort(ctx_, c_, var, fifos(ph, p)); }
  size_t outPort(size_t ph) const {
    const auto& ports = kernel_.phases[ph].ports;
    for (size_t p = 0; p < ports.size(); ++p)
      if (ports[p].out) return p;
    throw UserError(formatError(op_.loc, "internal: kernel '" + kernel_.name + "' has no output"));
  }
  int numLoops(size_t ph) const { return static_cast<int>(kernel_.phases[ph].trip.size()); }

  // One output token per iteration from one token of each input (broadcast inputs re-read through their
  // own orders); copies read the permuted or offset order and keep the element order.
  void elementwise() {
    size_t out = outPort(0);
    const std::string& k = kernel_.op;
    bool copy = k == "move" || k == "transpose" || k == "slice";  // the same values: no requantisation
    bool table = quant() && lanesLookUp(kernel_, ctx_.compiled->options.quant);
    if (table) unaryTable();
    FlatLoop f = flat(0);
    std::vector<std::string> args = readInputs(0, out, copy || table);
    int64_t elems = tokenElements(port(0, out).order);
    c_.line(outTok(0, out, elems) + " out;");
    openElements(c_, "e", elems);
    if (table) c_.line("out.v[e] = lut[" + args[0] + " + 128];");
    else c_.line(copy ? "out.v[e] = " + args[0] + ";" : store(0, out, "out.v[e]", apply(args)));
    c_.close();
    write(0, out, "out");
    f.close();
  }

  // A unary op on int8 values under W4A8: its 256 results, each computed here as the W4A8 reference computes
  // it (dequantised, the f32 op, requantised), looked up per lane; a constant table read by every lane
  // at once, which synthesis folds into logic.
  void unaryTable() {
    const QuantScale &in = ctx_.scale(port(0, 0).tensor), &res = ctx_.scale(port(0, outPort(0)).tensor);
    c_.line("static const st_i8 lut[256] = {");
    for (int row = 0; row < 256; row += 16) {
      std::string line = "    ";
      for (int q = row - 128; q < row - 128 + 16; ++q)
        line += std::to_string(
                    static_cast<int>(requantised(elementwiseValue(op_, dequantised(q, in), 0.0f), res))) +
                (q == 127 ? "" : ", ");
      c_.line(line);
    }
    c_.line("};");
    c_.line("#pragma HLS ARRAY_PARTITION variable=lut complete");
  }

  std::string apply(const std::vector<std::string>& a) const {
    if (elementwiseArity(kernel_.op) == 0) return a[0];  // move, transpose, slice
    return elementwiseCode(op_, a[0], a.size() > 1 ? a[1] : "");
  }

  // Output stationary, loops (batch.., m|n, n|m, k): A [.., Tk] and W [Tk, Tn] tiles every iteration,
  // accumulated over k; the bias and the output once per (batch.., m, n). Input streaming (two phases,
  // lower/kernels.cpp): phase 0 loops (batch.., m, k, n) with an A tile per k and a W tile per n into
  // every output tile's accumulators; phase 1 writes the output tiles.
  void matmul() {
    bool streaming = kernel_.phases.size() == 2;
    int n = numLoops(0);
    size_t outPh = streaming ? 1 : 0, out = outPort(outPh);
    bool held = kernel_.heldKeys != Kernel::HeldKeys::kNone;
    bool transposeB = numberAttr(op_, "transpose_b", 0) != 0;
    const auto& we = port(0, 1).order.element;
    int64_t Tk = held ? port(0, 0).order.element.back() : transposeB ? we.back() : we[we.size() - 2];
    int64_t Tn = held ? tokenElements(port(outPh, out).order) : transposeB ? we[we.size() - 2] : we.back();
    bool bias = operandPorts(kernel_) == (streaming ? 2u : 4u);
    size_t biasPort = streaming ? 0 : 2;
    // W4A8: int8 x int4 (or int8) products summed in int32, then the epilogue (reference/quantized.h).
    bool q = quant(), epilogue = bias && port(outPh, biasPort).tensor == epilogueTensor(op_.name);
    std::string accType = q ? "st_i32" : "float", zero = q ? "0" : "0.0f";
    if (streaming) {
      const Expr& tiles = kernel_.phases[0].trip.back();
      c_.line(accType + " acc[" + cxx(tiles) + "][" + std::to_string(Tn) + "];");
      c_.line("#pragma HLS ARRAY_PARTITION variable=acc dim=2 complete");
      declareHeld(0, 0, "a");
      FlatLoop f = flat(0);
      if (!q && ii(0) < kFloatAddLatency) {  // a tile's sum is added to once every `tiles` iterations
        c_.line("#pragma HLS DEPENDENCE variable=acc type=inter direction=RAW dependent=true distance=" +
                std::to_string(tiles.eval()));
      }
      readHeld(0, 0, "a", f);
      read(0, 1, "w");
      // The first k iteration starts each tile's sum (no clearing loop the network does not have).
      accumulate(Tk, Tn, transposeB, "acc[i" + std::to_string(n - 1) + "][n]", "i" + std::to_string(n - 2) + " == 0");
      f.close();
      FlatLoop g = flat(1);
      if (bias) read(1, biasPort, epilogue ? "epi" : "bias");
      writeTile(1, out, Tn, bias, epilogue, "acc[i" + std::to_string(numLoops(1) - 1) + "][n]");
      g.close();
      return;
    }
    // One flattened loop over (batch.., m|n, n|m, k): the first k iteration starts the sums and reads the
    // bias or epilogue, the last writes the tile, as the network's ports of level n - 2 do.
    c_.line(accType + " acc[" + std::to_string(Tn) + "];");
    c_.line("#pragma HLS ARRAY_PARTITION variable=acc complete");
    if (bias) declareHeld(0, 2, epilogue ? "epi" : "bias");
    if (kernel_.appendPort >= 0) declareHeld(0, static_cast<size_t>(kernel_.appendPort), "fresh");
    if (held) declareHeldRight(Tk, Tn);
    FlatLoop f = flat(0);
    if (bias) readHeld(0, 2, epilogue ? "epi" : "bias", f);
    read(0, 0, "a");
    if (held) heldTile(f, Tk, Tn);
    else read(0, 1, "w");
    if (kernel_.appendPort >= 0) appendRow(f);
    std::string first = f.first(level(0, out));
    accumulate(Tk, Tn, transposeB && !held, "acc[n]", first.empty() ? "true" : first);
    std::string last = f.last(level(0, out));
    if (!last.empty()) c_.open("if (" + last + ")");
    writeTile(0, out, Tn, bias, epilogue, "acc[n]");
    if (!last.empty()) c_.close();
    f.close();
  }

  // The right side held whole (Kernel::heldKeys), `held`, in its own shape; its key dim and the other one.
  struct HeldDims {
    size_t key, other;
  };
  HeldDims heldDims() const {
    const StreamOrder& o = port(0, 1).order;
    size_t r = o.element.size(), key = heldKeyDim(o);  // advances with the row loop; the other is whole
    return {key, key == r - 1 ? r - 2 : r - 1};
  }
  void declareHeldRight(int64_t Tk, int64_t Tn) {
    const KernelPort& hp = port(0, 1);
    const TensorInfo& W = info(hp.tensor);
    HeldDims d = heldDims();
    std::string dims;
    for (size_t i = 0; i < W.shape.size(); ++i)  // a head per group (Kernel::heldGroup)
      dims +=
          "[" +
          (static_cast<int>(i) == kernel_.heldGroupDim ? std::to_string(W.shape[i].eval() / kernel_.heldGroup)
                                                       : cxx(W.shape[i])) +
          "]";
    // Static: as large as the right side, a head per group (a stack could not hold it in the C simulation);
    // every key a row reads is stored in the same call before it is read. Copies of a head store its values
    // again; heads outside the rows store theirs over the last head's.
    c_.line("static " + storageOf(hp.order.dtype).type + " held" + dims + ";");
    bool alongN = kernel_.heldKeys == Kernel::HeldKeys::kAlongN;
    c_.line("#pragma HLS ARRAY_PARTITION variable=held cyclic factor=" + std::to_string(alongN ? Tn : Tk) +
            " dim=" + std::to_string(d.key + 1));
    c_.line("#pragma HLS ARRAY_PARTITION variable=held complete dim=" + std::to_string(d.other + 1));
    declareHeld(0, 1, "fresh_key");
  }
  // At the first iteration of the (batch.., m) loops the key of the row's index arrives and is stored; the
  // [Tk, Tn] tile (w, k-major) comes from the buffer, 0 at the keys past the row, which have not arrived and
  // which the causal softmax weighs 0.
  void heldTile(const FlatLoop& f, int64_t Tk, int64_t Tn) {
    const KernelPort& hp = port(0, 1);
    const TensorInfo& W = info(hp.tensor);
    HeldDims d = heldDims();
    size_t r = W.shape.size();
    std::string cond = f.first(level(0, 1));
    if (!cond.empty()) c_.open("if (" + cond + ")");
    readPort(ctx_, c_, "fresh_key", storageUnits(hp.order), fifos(0, 1), hp.order.dtype, false);
    openElements(c_, "e", tokenElements(hp.order));
    // The held buffer's index of coordinate `c` of dim i: a group's head for copies (Kernel::heldGroup).
    auto index = [&](size_t i, const std::string& c) {
      return static_cast<int>(i) == kernel_.heldGroupDim
                 ? "[(" + c + ") / " + std::to_string(kernel_.heldGroup) + "]"
                 : "[" + c + "]";
    };
    std::string at;
    for (size_t i = 0; i < r; ++i) at += index(i, dataCoord(hp.order, static_cast<int>(i), "i", "e"));
    c_.line("held" + at + " = fresh_key.v[e];");
    c_.close();
    if (!cond.empty()) c_.close();
    int n = numLoops(0);
    bool alongN = kernel_.heldKeys == Kernel::HeldKeys::kAlongN;
    std::string pn = "i" + std::to_string(n - 2), pk = "i" + std::to_string(n - 1);
    std::string key = alongN ? pn + " * " + std::to_string(Tn) + " + n" : pk + " * " + std::to_string(Tk) + " + k";
    std::string other = alongN ? pk + " * " + std::to_string(Tk) + " + k" : pn + " * " + std::to_string(Tn) + " + n";
    // The row: the index of the key it reads (its row loop's, or a block's and the row's within it where a
    // triangular nest splits the rows: lower/triangles.h).
    std::string row = "(" + dataCoord(hp.order, static_cast<int>(d.key), "i", "0") + ")";
    c_.line(tokenOf(Tk * Tn, hp.order.dtype) + " w;");
    openElements(c_, "k", Tk);
    openElements(c_, "n", Tn);
    std::string at2;
    for (size_t i = 0; i < r; ++i)
      at2 += index(i, i == d.key     ? key
                      : i == d.other ? other
                                     : dataCoord(hp.order, static_cast<int>(i), "i", "0"));
    std::string zero = quant() ? "0" : "0.0f";
    c_.line("w.v[k * " + std::to_string(Tn) + " + n] = (" + key + ") <= " + row + " && (" + other + ") < " +
            cxx(W.shape[d.other]) + " ? held" + at2 + " : " + zero + ";");
    c_.close();
    c_.close();
  }

  // A W4A8 matmul's epilogue apart from it (lower/kernels.cpp): a token of int32 sums and the [Tn, 2] tile
  // of multipliers and offsets in, the int8 output token out, at the II of its matmul's output tokens, over
  // which HLS shares the lanes' multipliers and adders.
  void epilogue() {
    FlatLoop f = flat(0);
    read(0, 0, "acc");
    read(0, 1, "epi");
    size_t out = outPort(0);
    writeTile(0, out, tokenElements(port(0, out).order), true, true, "acc.v[n]");
    f.close();
  }

  // kv_append: the token's own row, a head's slice read at the head's first iteration, takes the cache's
  // last position in each right-side tile that holds it (the cache in HBM has room there).
  void appendRow(const FlatLoop& f) {
    size_t p = static_cast<size_t>(kernel_.appendPort);
    readHeld(0, p, "fresh", f);
    const StreamOrder& w = port(0, 1).order;
    const Expr& positions = info(port(0, 1).tensor).shape[static_cast<size_t>(kernel_.appendAxis)];
    std::string value = "fresh.v[" + dataCoord(w, 3 - kernel_.appendAxis, "i", "e") + "]";
    if (quant()) {
      const QuantScale &sc = ctx_.scale(port(0, 1).tensor), &sr = ctx_.scale(port(0, p).tensor);
      if (sc.scale != sr.scale)
        value = "st_q8(static_cast<float>(" + value + ") * " +
                floatLiteral(static_cast<float>(static_cast<double>(sr.scale) / sc.scale)) + ")";
    }
    openElements(c_, "e", tokenElements(w));
    c_.line("if (" + dataCoord(w, kernel_.appendAxis, "i", "e") + " == " + cxx(positions) + " - 1) w.v[e] = " +
            value + ";");
    c_.close();
  }

  // acc (indexed by n) += the tile product of token a [Tk] and token w [Tk, Tn] ([Tn, Tk] transposed); the
  // padded positions of a symbolic K add nothing.
  void accumulate(int64_t Tk, int64_t Tn, bool transposeB, const std::string& acc, const std::string& first = "") {
    bool q = quant(), int4 = q && port(0, 1).order.dtype == "i4";
    std::string accType = q ? "st_i32" : "float", zero = q ? "0" : "0.0f";
    std::string padded = inside(0, 0, "k");
    openElements(c_, "n", Tn);
    std::string wi = transposeB ? "n * " + std::to_string(Tk) + " + k" : "k * " + std::to_string(Tn) + " + n";
    if (q) {  // integer additions: HLS balances the chain into a tree itself
      c_.line(accType + " sum = " + zero + ";");
      openElements(c_, "k", Tk);
      c_.line(ifInside(padded) + "sum += static_cast<st_i32>(a.v[k]) * " +
              (int4 ? "st_w4(w.v, " + wi + ")" : "static_cast<st_i32>(w.v[" + wi + "])") + ";");
      c_.close();
    } else {  // float additions keep their order: the products summed by an explicit tree
      c_.line("float prod[" + std::to_string(Tk) + "];");
      c_.line("#pragma HLS ARRAY_PARTITION variable=prod complete");
      openElements(c_, "k", Tk);
      c_.line("prod[k] = " + insideOr(padded, "a.v[k] * w.v[" + wi + "]", "0.0f") + ";");
      c_.close();
      c_.line("const float sum = st_tree<" + std::to_string(Tk) + ">::sum(prod);");
    }
    if (first.empty()) c_.line(acc + " += sum;");
    else c_.line(acc + " = (" + first + " ? " + zero + " : " + acc + ") + sum;");
    c_.close();
  }

  // The output token from the accumulators (indexed by n), with the bias or the W4A8 epilogue; the sums
  // themselves where an epilogue kernel applies it.
  void writeTile(size_t ph, size_t out, int64_t Tn, bool bias, bool epilogue, const std::string& acc) {
    c_.line(outTok(ph, out, Tn) + " out;");
    openElements(c_, "n", Tn);
    if (quant() && port(ph, out).order.dtype == "i32") {
      c_.line("out.v[n] = " + acc + ";");
    } else if (!quant()) {
      c_.line("out.v[n] = " + acc + (bias ? " + bias.v[n]" : "") + ";");
    } else if (epilogue) {
      c_.line("out.v[n] = st_q8(static_cast<float>(" + acc + ") * epi.v[2 * n] + epi.v[2 * n + 1]);");
    } else {
      if (bias) throw UserError(formatError(op_.loc, "unsupported: W4A8 emission of matmul '" + op_.name + "' with a bias and no int4 weight"));
      const QuantScale &sa = ctx_.scale(port(0, 0).tensor), &sb = ctx_.scale(port(0, 1).tensor),
                       &so = ctx_.scale(port(ph, out).tensor);
      float r = static_cast<float>(static_cast<double>(sa.scale) * sb.scale / so.scale);
      c_.line("out.v[n] = st_q8(static_cast<float>(" + acc + ") * " + floatLiteral(r) + ");");
    }
    c_.close();
    write(ph, out, "out");
  }

  // The length of the rows a phase walks: its last loop's tripcount times the elements of a token (a
  // port reading a reshape view streams the view's base, whose rows may be shorter); a symbolic row
  // length is the tensor's own (its tiles are padded).
  std::string rowLength(size_t ph, size_t p) const {
    const Expr& last = info(port(ph, p).tensor).shape.back();
    if (!last.isConstant()) return cxx(last);
    return cxx(kernel_.phases[ph].trip.back()) + " * " + std::to_string(tokenElements(port(ph, p).order));
  }

  // Whether element `elem` of port p's token is inside its tensor (insideTensor): "" when the order pads
  // none. A causal softmax's kernels add the mask (graph.h: isCausal): key <= row + K - R of the scores [..,
  // R, K]. The kernels loop over the order of their port reading the scores (lower/kernels.cpp: lowerRowOp),
  // which gives the key and row even where the port streams another tensor: the scores' canonical order then
  // (the base a reshape of the scores reads).
  // A port's order over the kernel's loop counters: a port of fewer loops than the phase (a view's base,
  // [4, s, s] under bmm(q, k).view(1, 4, s, s)) whose loops are the phase's trailing ones, the leading ones
  // of one iteration each: its loop k is the kernel's loop k + (the phase's loops - its own).
  StreamOrder kernelLoops(const StreamOrder& order, size_t ph) const {
    const std::vector<Expr>& trips = kernel_.phases[ph].trip;
    size_t n = order.trips.size(), k = trips.size();
    if (n >= k) return order;
    for (size_t i = 0; i < k; ++i)  // (another port's order, a weight's: its own loops, as they were)
      if (i < k - n ? trips[i] != Expr(1) : trips[i] != order.trips[i - (k - n)]) return order;
    StreamOrder aligned = order;
    aligned.trips.insert(aligned.trips.begin(), trips.begin(), trips.begin() + static_cast<long>(k - n));
    aligned.steps.insert(aligned.steps.begin(), k - n, 1);
    std::vector<AffineExpr> results = order.map.results();
    for (AffineExpr& r : results) r.coeffs.insert(r.coeffs.begin(), k - n, 0);
    aligned.map = AffineMap(static_cast<int>(k), results);
    return aligned;
  }

  std::string inside(size_t ph, size_t p, const std::string& elem) const {
    const KernelPort& port = this->port(ph, p);
    // A port that reads a view (softmax over bmm(q, k).view(b, h, s, s)) streams in the view's order, over
    // its base's values: the view's sizes, of the order's rank, bound its coordinates.
    const TensorInfo* tensor = &info(port.tensor);
    const auto& viewOf = ctx_.compiled->kernels.viewOf;
    for (const std::string& in : op_.inputs)
      for (std::string v = in; static_cast<int>(tensor->shape.size()) != port.order.map.numResults();) {
        auto base = viewOf.find(v);
        if (base == viewOf.end()) break;
        if (base->second == port.tensor &&
            static_cast<int>(info(in).shape.size()) == port.order.map.numResults())
          tensor = &info(in);
        v = base->second;
      }
    std::string s = insideTensor(*tensor, kernelLoops(port.order, ph), "i", elem);
    if (!isCausal(op_)) return s;
    const TensorInfo& scores = info(op_.inputs[0]);
    int r = static_cast<int>(scores.shape.size());
    const Expr &R = scores.shape[static_cast<size_t>(r - 2)], &K = scores.shape.back();
    std::string past = R.isConstant() && K.isConstant() ? std::to_string(K.eval() - R.eval())
                                                        : "(" + cxx(K) + " - " + cxx(R) + ")";
    StreamOrder loops = canonicalOrder(scores, ctx_.compiled->options.tile);
    for (const KernelPort& q : kernel_.phases[ph].ports)
      if (!q.out && q.tensor == op_.inputs[0]) loops = kernelLoops(q.order, ph);
    std::string causal = "(" + dataCoord(loops, r - 1, "i", elem) + ") <= (" + dataCoord(loops, r - 2, "i", elem) +
                         ") + " + past;
    return s.empty() ? causal : s + " && " + causal;
  }

  // Reads phase 0's input ports from `first` on (in<p>) and returns, for each, its value at output element
  // `e`: f32 (dequantised under W4A8), or the stored element itself with raw.
  std::vector<std::string> readInputs(size_t first, size_t out, bool raw = false) {
    std::vector<std::string> values;
    for (size_t p = first; p < kernel_.phases[0].ports.size(); ++p) {
      if (p == out) continue;
      std::string var = "in" + std::to_string(p);
      read(0, p, var);
      std::string element = var + ".v[" + elementOf(0, p, out) + "]";
      values.push_back(raw ? element : value(0, p, element));
    }
    return values;
  }

  // The index in port p's token of element `e` of the output token. A copy, or a port streaming a
  // reshape's base (the same row-major tokens), takes it as it is; a broadcast input drops the
  // dimensions it broadcasts.
  std::string elementOf(size_t ph, size_t p, size_t out) const {
    const KernelPort& in = port(ph, p);
    bool copy = kernel_.op == "move" || kernel_.op == "transpose" || kernel_.op == "slice";
    const auto& inputs = op_.inputs;
    bool viewBase = std::find(inputs.begin(), inputs.end(), in.tensor) == inputs.end();
    if (copy || viewBase) return "e";
    return broadcastIndex(port(ph, out).order.element, in.order.element, "e");
  }

  // Row statistics in one pass over a flattened loop, reset at a row's first token and written at its
  // last. Under W4A8 layernorm and rmsnorm sum the int8 values and their squares in integers (one cycle
  // an addition, so II=1 holds; st_numeric.h turns the sums into statistics). Otherwise softmax keeps a
  // running maximum and rescales the running sum of exponentials (online softmax); f32 layernorm sums
  // values and squares around the row's first value; f32 rmsnorm sums squares.
  void rowStats(const std::string& base) {
    if (quant() && base == "softmax") return softmaxStats();
    int64_t T = tokenElements(port(0, 0).order);
    bool integer = quant();
    if (integer)
      c_.line("st_i64 s1 = 0, s2 = 0;");
    else if (base == "softmax")
      c_.line("float m = -INFINITY, sum = 0.0f;");
    else c_.line("float s1 = 0.0f, s2 = 0.0f, shift = 0.0f;");
    FlatLoop f = flat(0);
    read(0, 0, "x");
    std::string first = f.first(level(0, 1)), last = f.last(level(0, 1));
    if (first.empty()) first = "true";
    if (integer) {
      // A token's sums fit 32 bits (T * 128^2); padded positions of a symbolic row add nothing.
      c_.line("st_i32 t1 = 0, t2 = 0;");
      openElements(c_, "e", T);
      std::string padded = inside(0, 0, "e");
      c_.line("const st_i32 q = " +
              (padded.empty() ? "x.v[e]" : "(" + padded + ") ? st_i32(x.v[e]) : st_i32(0)") + ";");
      c_.line("t1 += q;");
      c_.line("t2 += q * q;");
      c_.close();
      c_.line("s1 = (" + first + " ? st_i64(0) : s1) + t1;");
      c_.line("s2 = (" + first + " ? st_i64(0) : s2) + t2;");
    } else {
      // f32: a token's terms summed by a tree (st_tree), then one recurrence a token: an addition (II =
      // kFloatAddLatency), or softmax's rescale and addition; layernorm sums around the row's first value,
      // so that a large mean does not cancel the variance.
      if (base == "layernorm") c_.line("shift = " + first + " ? " + value(0, 0, "x.v[0]") + " : shift;");
      std::string padded = inside(0, 0, "e");  // padded positions of a symbolic row add nothing
      std::string Ts = std::to_string(T);
      c_.line(base == "rmsnorm" ? "float b[" + Ts + "];" : "float a[" + Ts + "], b[" + Ts + "];");
      if (base != "rmsnorm") c_.line("#pragma HLS ARRAY_PARTITION variable=a complete");
      c_.line("#pragma HLS ARRAY_PARTITION variable=b complete");
      openElements(c_, "e", T);
      std::string x = value(0, 0, "x.v[e]");
      if (base == "softmax") {
        c_.line("a[e] = " + insideOr(padded, x, "-INFINITY") + ";");
      } else {
        c_.line("const float v = " + insideOr(padded, base == "layernorm" ? x + " - shift" : x, "0.0f") +
                ";");
        if (base == "layernorm") c_.line("a[e] = v;");
        c_.line("b[e] = v * v;");
      }
      c_.close();
      if (base == "softmax") {
        c_.line("const float tm = st_tree<" + Ts + ">::max(a);");
        openElements(c_, "e", T);
        c_.line("b[e] = " + insideOr(padded, "st_exp_from(a[e], tm)", "0.0f") + ";");
        c_.close();
        c_.line("const float mx = (" + first + " || tm > m) ? tm : m;");
        c_.line("sum = (" + first + " ? 0.0f : sum * st_exp_from(m, mx)) + st_tree<" + Ts +
                ">::sum(b) * st_exp_from(tm, mx);");
        c_.line("m = mx;");
      } else {
        if (base == "layernorm") c_.line("s1 = (" + first + " ? 0.0f : s1) + st_tree<" + Ts + ">::sum(a);");
        c_.line("s2 = (" + first + " ? 0.0f : s2) + st_tree<" + Ts + ">::sum(b);");
      }
    }
    if (!last.empty()) c_.open("if (" + last + ")");
    c_.line("Tok<2> stats;");
    if (integer) {
      std::string D = "static_cast<long>(" + rowLength(0, 0) + ")",
                  scale = floatLiteral(ctx_.scale(port(0, 0).tensor).scale);
      if (base == "layernorm") {
        c_.line("st_layernorm_stats(s1, s2, " + D + ", " + scale + ", &stats.v[0], &stats.v[1]);");
      } else {
        c_.line("stats.v[0] = st_rmsnorm_stats(s2, " + D + ", " + scale + ");");
        c_.line("stats.v[1] = 0.0f;");
      }
    } else if (base == "softmax") {
      c_.line("stats.v[0] = m;");
      c_.line("stats.v[1] = sum;");
    } else {
      c_.line("const float D = " + rowLength(0, 0) + ";");
      if (base == "layernorm") {
        c_.line("const float mean = s1 / D;");
        c_.line("stats.v[0] = shift + mean;");
        c_.line("stats.v[1] = s2 / D - mean * mean;");
      } else {
        c_.line("stats.v[0] = s2 / D;");
        c_.line("stats.v[1] = 0.0f;");
      }
    }
    write(0, 1, "stats");
    if (!last.empty()) c_.close();
    f.close();
  }

  // W4A8 softmax statistics in integers (st_numeric.h: st_softmax_stats): each score's exponential from
  // two tables (reference/quantized.h: softmaxTable) as a mantissa and an exponent; a token sums its
  // mantissas aligned to its largest exponent, then joins one of two lanes in turn, so that a lane's
  // recurrence (subtract, shift, add) has two cycles at II=1; the row's largest score is a comparison a
  // cycle. Reset at a row's first token; the lanes merge at its last.
  void softmaxStats() {
    int64_t T = tokenElements(port(0, 0).order);
    const QuantScale& in = ctx_.scale(port(0, 0).tensor);
    const float scale = in.scale;
    SoftmaxTable table = softmaxTable(scale, in.masked);
    auto emitTable = [&](const std::string& decl, auto values) {
      c_.line("static const " + decl + "[256] = {");
      for (size_t i = 0; i < values.size(); i += 8) {
        std::string row = "    ";
        for (size_t j = i; j < i + 8; ++j)
          row += std::to_string(values[j]) + (j + 1 == values.size() ? "" : j + 1 < i + 8 ? ", " : ",");
        c_.line(row);
      }
      c_.line("};");
    };
    emitTable("unsigned exp_mantissa", table.mantissa);
    emitTable("int exp_exponent", table.exponent);
    // Constant contents read T times a cycle: registers that synthesis folds into logic.
    c_.line("#pragma HLS ARRAY_PARTITION variable=exp_mantissa complete");
    c_.line("#pragma HLS ARRAY_PARTITION variable=exp_exponent complete");
    c_.line("int lane_e0 = st_exp_empty, lane_e1 = st_exp_empty, q_max = -128;");
    c_.line("st_u64 lane_s0 = 0, lane_s1 = 0;");
    if (in.masked) c_.line("long n_masked = 0;  // the row's masked keys (st_softmax_stats_masked)");
    FlatLoop f = flat(0);
    read(0, 0, "x");
    std::string first = f.first(level(0, 1)), last = f.last(level(0, 1));
    if (first.empty()) first = "true";
    std::string padded = inside(0, 0, "e");  // padded positions of a symbolic row add nothing
    c_.line("int q_tok = -128;");
    openElements(c_, "e", T);
    c_.line(ifInside(padded) + "q_tok = x.v[e] > q_tok ? int(x.v[e]) : q_tok;");
    c_.close();
    c_.line("const int e_tok = exp_exponent[q_tok + 128];");
    c_.line("st_u64 s_tok = 0;");
    openElements(c_, "e", T);
    c_.line(ifInside(padded) +
            "s_tok += st_shr(exp_mantissa[x.v[e] + 128], e_tok - exp_exponent[x.v[e] + 128]);");
    c_.close();
    if (in.masked) {  // an integer count: one addition a cycle
      c_.line("int m_tok = 0;");
      openElements(c_, "e", T);
      c_.line(ifInside(padded) + "m_tok += x.v[e] == -128;");
      c_.close();
      c_.line("n_masked = (" + first + " ? 0 : n_masked) + m_tok;");
    }
    c_.line("int e_new = " + first + " ? st_exp_empty : lane_e0;");
    c_.line("st_u64 s_new = " + first + " ? st_u64(0) : lane_s0;");
    c_.line("st_expsum_add(e_new, s_new, e_tok, s_tok);");
    c_.line("lane_e0 = " + first + " ? st_exp_empty : lane_e1;");
    c_.line("lane_s0 = " + first + " ? st_u64(0) : lane_s1;");
    c_.line("lane_e1 = e_new;");
    c_.line("lane_s1 = s_new;");
    c_.line("q_max = (" + first + " || q_tok > q_max) ? q_tok : q_max;");
    if (!last.empty()) c_.open("if (" + last + ")");
    c_.line("int e_row = lane_e0;");
    c_.line("st_u64 s_row = lane_s0;");
    c_.line("st_expsum_add(e_row, s_row, lane_e1, lane_s1);");
    c_.line("Tok<2> stats;");
    if (in.masked)
      c_.line("st_softmax_stats_masked(s_row, exp_mantissa[q_max + 128], q_max, n_masked, " +
              floatLiteral(scale) + ", &stats.v[0], &stats.v[1]);");
    else
      c_.line("st_softmax_stats(s_row, exp_mantissa[q_max + 128], q_max, " + floatLiteral(scale) +
              ", &stats.v[0], &stats.v[1]);");
    write(0, 1, "stats");
    if (!last.empty()) c_.close();
    f.close();
  }

  // The row's statistics read at its first token (with the reciprocal the row shares), then one output
  // token per input token.
  void rowApply(const std::string& base) {
    size_t out = outPort(0);
    double eps = numberAttr(op_, "eps", base == "rmsnorm" ? 1e-6 : 1e-5);
    declareHeld(0, 0, "stats");
    c_.line("float inv = 0.0f;");
    FlatLoop f = flat(0);
    std::string first = f.first(level(0, 0));
    if (!first.empty()) c_.open("if (" + first + ")");
    readPort(ctx_, c_, "stats", 2, fifos(0, 0), "f32", false);
    if (base == "softmax")
      c_.line("inv = 1.0f / stats.v[1];");
    else if (base == "layernorm")
      c_.line("inv = 1.0f / std::sqrt(stats.v[1] + " + floatLiteral(static_cast<float>(eps)) + ");");
    else
      c_.line("inv = 1.0f / std::sqrt(stats.v[0] + " + floatLiteral(static_cast<float>(eps)) + ");");
    if (!first.empty()) c_.close();
    read(0, 1, "x");
    std::vector<std::string> extra = readInputs(2, out);
    int64_t T = tokenElements(port(0, out).order);
    c_.line(outTok(0, out, T) + " out;");
    openElements(c_, "e", T);
    std::string x = value(0, 1, "x.v[e]"), v;
    if (base == "softmax") v = "std::exp(" + x + " - stats.v[0]) * inv";
    else if (base == "layernorm") v = "(" + x + " - stats.v[0]) * inv";
    else v = x + " * inv";
    if (base == "softmax" && quant()) {  // st_softmax_stats_masked: a row of masked keys alone
      const QuantScale& in = ctx_.scale(port(0, 1).tensor);
      if (in.masked)
        v = "(stats.v[0] == -INFINITY ? " + std::string(in.nanRows ? "0.0f" : "inv") + " : " + v + ")";
    }
    if (base != "softmax") {
      if (!extra.empty()) v = "(" + v + ") * " + extra[0];
      if (extra.size() > 1) v += " + " + extra[1];
    }
    v = insideOr(inside(0, 1, "e"), v, "0.0f");  // padding stays zero
    c_.line(store(0, out, "out.v[e]", v));
    c_.close();
    write(0, out, "out");
    f.close();
  }

  // A row's sum, mean or maximum: in integers under W4A8 (the int8 values, then the scale), in f32
  // otherwise; reset at the row's first token, written at its last.
  void reduce() {
    bool max = kernel_.op == "reduce_max", integer = quant();
    int64_t T = tokenElements(port(0, 0).order);
    std::string type = integer ? "st_i64" : "float", lowest = integer ? "st_i64(-128)" : "-INFINITY",
                zero = integer ? "st_i64(0)" : "0.0f";
    c_.line(type + " acc = " + (max ? lowest : zero) + ";");
    FlatLoop f = flat(0);
    read(0, 0, "x");
    std::string first = f.first(level(0, 1)), last = f.last(level(0, 1));
    if (integer) {  // integer additions and comparisons: one cycle, a chain HLS balances
      c_.line(
          type + " r = " +
          (first.empty() ? (max ? lowest : zero) : "(" + first + ") ? " + (max ? lowest : zero) + " : acc") +
          ";");
      c_.open("for (int e = 0; e < " + std::to_string(T) + "; ++e)");
      c_.line("const " + type + " x_e = x.v[e];");
      c_.line(ifInside(inside(0, 0, "e")) + (max ? "r = x_e > r ? x_e : r;" : "r += x_e;"));
      c_.close();
      c_.line("acc = r;");
    } else {  // f32: the token's tree (st_tree), then one addition (II = kFloatAddLatency) or comparison
      std::string Ts = std::to_string(T);
      c_.line("float v[" + Ts + "];");
      c_.line("#pragma HLS ARRAY_PARTITION variable=v complete");
      openElements(c_, "e", T);
      c_.line("v[e] = " + insideOr(inside(0, 0, "e"), value(0, 0, "x.v[e]"), max ? "-INFINITY" : "0.0f") +
              ";");
      c_.close();
      c_.line(std::string("const float t = st_tree<") + Ts + ">::" + (max ? "max" : "sum") + "(v);");
      std::string next = max ? "(t > acc ? t : acc)" : "acc + t";
      c_.line("acc = " + (first.empty() ? std::string("t") : "(" + first + ") ? t : " + next) + ";");
    }
    if (!last.empty()) c_.open("if (" + last + ")");
    c_.line(outTok(0, 1, 1) + " out;");
    std::string y =
        integer ? "static_cast<float>(acc) * " + floatLiteral(ctx_.scale(port(0, 0).tensor).scale) : "acc";
    if (kernel_.op == "reduce_mean")
      y = integer ? "(" + y + ") / static_cast<float>(" + rowLength(0, 0) + ")"
                  : "acc / (" + rowLength(0, 0) + ")";
    c_.line(store(0, 1, "out.v[0]", y));
    write(0, 1, "out");
    if (!last.empty()) c_.close();
    f.close();
  }

  // Each input phase stores its tokens at their place in the output (a buffer of the whole output);
  // the last phase streams the output.
  void concat() {
    const TensorInfo& outT = info(op_.output);
    int64_t rank = static_cast<int64_t>(outT.shape.size());
    int64_t axis = static_cast<int64_t>(numberAttr(op_, "axis", 0));
    if (axis < 0) axis += rank;
    int64_t capacity = 1;
    for (const Expr& d : outT.shape) capacity *= d.eval(ctx_.compiled->options.maxima);
    c_.line("static " + storageOf(outT.dtype).type + " buf[" + std::to_string(capacity) + "];");
    std::string offset = "0";
    for (size_t i = 0; i + 1 < kernel_.phases.size(); ++i) {
      const TensorInfo& inT = info(op_.inputs[i]);
      // The input's own row-major order (its port may stream a reshape's base: the same tokens).
      StreamOrder order = canonicalOrder(inT, ctx_.compiled->options.tile);
      FlatLoop f = flat(i);
      read(i, 0, "x");
      openElements(c_, "e", tokenElements(order));
      c_.line("const long lin = " + elementIndex(inT, order, "i", "e") + ";");
      std::vector<std::string> coords;
      for (size_t d = 0; d < inT.shape.size(); ++d) {
        std::vector<Expr> inner(inT.shape.begin() + static_cast<std::ptrdiff_t>(d) + 1, inT.shape.end());
        std::string c = "(lin / (" + cxxProduct(inner) + ")) % " + cxx(inT.shape[d]);
        if (static_cast<int64_t>(d) == axis && offset != "0") c = "(" + c + ") + " + offset;
        coords.push_back(c);
      }
      std::string x = "x.v[e]";
      if (quant()) {  // into the output's scale
        float m = static_cast<float>(static_cast<double>(ctx_.scale(op_.inputs[i]).scale) / ctx_.scale(op_.output).scale);
        x = "st_q8(static_cast<float>(x.v[e]) * " + floatLiteral(m) + ")";
      }
      c_.line(ifInside(inside(i, 0, "e")) + "buf[" + rowMajor(outT.shape, coords) + "] = " + x + ";");
      c_.close();
      f.close();
      offset = offset == "0" ? cxx(inT.shape[static_cast<size_t>(axis)]) : offset + " + " + cxx(inT.shape[static_cast<size_t>(axis)]);
    }
    size_t last = kernel_.phases.size() - 1;
    const KernelPort& o = port(last, 0);
    FlatLoop f = flat(last);
    int64_t T = tokenElements(o.order);
    c_.line(outTok(last, 0, T) + " out;");
    openElements(c_, "e", T);
    c_.line("out.v[e] = " +
            insideOr(insideTensor(outT, o.order, "i", "e"),
                     "buf[" + elementIndex(outT, o.order, "i", "e") + "]",
                     storageOf(outT.dtype).type + "(0)") +
            ";");
    c_.close();
    write(last, 0, "out");
    f.close();
  }

  // Rotates each head's two halves (graph.h: ropeHeadDim, ropeOffset). One flattened loop over the rows and
  // one more (a drain): iteration (r, t) stores input token t of row r in one half of a ping-pong row buffer
  // and writes output token t of row r - 1 from the other half (an element's partner is half a row away, so a
  // row is whole before its first output). Each output token leaves a row's tokens after its input, as the
  // network's latency says (dse/cost_model.cpp). The cos and sin of a row's head_dim / 2 angles are computed
  // once, not per lane: while the row comes in, ropeTableUnits of them an iteration go into the ping-pong
  // table cs, each angle pos * inv_freq[i] with inv_freq[i] = theta^(-2i/hd) a constant computed here as the
  // W4A8 reference rounds it, so the lanes look up the very values the reference computes.
  void rope() {
    const TensorInfo& inT = info(op_.inputs[0]);
    const std::vector<Expr>& trips = kernel_.phases[0].trip;
    if (!inT.shape.back().isConstant() || !trips.back().isConstant())
      throw UserError(formatError(op_.loc, "unsupported: HLS emission of rope '" + op_.name + "' over a symbolic row length"));
    int64_t D = inT.shape.back().eval();
    std::string positions = inT.shape.size() >= 2 ? cxx(inT.shape[inT.shape.size() - 2]) : "1";
    int64_t T = tokenElements(port(0, 0).order);
    int64_t tiles = trips.back().eval(), hd = ropeHeadDim(op_, D), h = hd / 2;
    int64_t units = ropeTableUnits(hd, tiles);
    std::string rows = cxxProduct(std::vector<Expr>(trips.begin(), trips.end() - 1));
    std::string offset = ropeOffset(op_);
    offset = offset == "0" ? "" : cxx(Expr::parse(offset)) + " + ";
    const float theta = static_cast<float>(ropeTheta(op_));
    c_.line("static const float inv_freq[" + std::to_string(h) + "] = {");
    for (int64_t i = 0; i < h; i += 8) {
      std::string line = "    ";
      for (int64_t j = i; j < std::min(h, i + 8); ++j)
        line += floatLiteral(std::pow(theta, -2.0f * static_cast<float>(j) / static_cast<float>(hd))) +
                (j + 1 == h ? "" : ", ");
      c_.line(line);
    }
    c_.line("};");
    c_.line("float row[2][" + std::to_string(D) + "];");
    c_.line("#pragma HLS ARRAY_PARTITION variable=row dim=1 complete");
    c_.line("#pragma HLS ARRAY_PARTITION variable=row dim=2 cyclic factor=" + std::to_string(T));
    c_.line("float cs[2][" + std::to_string(h) + "][2];");
    c_.line("#pragma HLS ARRAY_PARTITION variable=cs dim=1 complete");
    c_.line("#pragma HLS ARRAY_PARTITION variable=cs dim=2 cyclic factor=" + std::to_string(std::min(T, h)));
    c_.line("#pragma HLS ARRAY_PARTITION variable=cs dim=3 complete");
    c_.open("");
    c_.line("long r = 0;");
    c_.line("int t = 0;");
    c_.open(identifier(kernel_.name) + ": for (long it = 0; it < ((" + rows + ") + 1) * " +
            std::to_string(tiles) + "; ++it)");
    pipeline(c_, ii(0));
    // A partner read at (r, t) was written during row r - 1 at most half a head's tokens after token t:
    // at least tiles - head_dim / (2 T) iterations before; a table entry by iteration tiles / 2 of row r - 1.
    c_.line("#pragma HLS DEPENDENCE variable=row type=inter direction=RAW dependent=true distance=" +
            std::to_string(std::max<int64_t>(1, tiles - hd / (2 * T))));
    c_.line("#pragma HLS DEPENDENCE variable=cs type=inter direction=RAW dependent=true distance=" +
            std::to_string(std::max<int64_t>(1, tiles - (h + units - 1) / units + 1)));
    // make dfsim: the pipeline's lag, less the row this code's writes already trail its reads by (the
    // network's latency counts both).
    c_.line(iterationMark(std::max<int64_t>(0, task_.phases[0].latency - tiles * ii(0)), ii(0)));
    c_.open("if (r < (" + rows + "))");
    read(0, 0, "x");
    openElements(c_, "e", T);
    c_.line("row[r % 2][t * " + std::to_string(T) + " + e] = " + value(0, 0, "x.v[e]") + ";");
    c_.close();
    c_.line("const int pos = static_cast<int>(" + offset + "r % (" + positions + "));");
    openElements(c_, "u", units);
    c_.line("const int i = t * " + std::to_string(units) + " + u;");
    c_.open("if (i < " + std::to_string(h) + ")");
    c_.line("const float angle = pos * inv_freq[i];");
    c_.line("cs[r % 2][i][0] = std::cos(angle);");
    c_.line("cs[r % 2][i][1] = std::sin(angle);");
    c_.close().close().close();
    c_.open("if (r > 0)");
    c_.line("const int b = static_cast<int>((r - 1) % 2);");
    c_.line(outTok(0, outPort(0), T) + " out;");
    openElements(c_, "e", T);
    c_.line("const int j = t * " + std::to_string(T) + " + e, jj = j % " + std::to_string(hd) +
            ", h = " + std::to_string(h) + ", i = jj % h;");
    c_.line("const float c = cs[b][i][0], s = cs[b][i][1];");
    c_.line(store(0, outPort(0), "out.v[e]",
                  "jj < h ? row[b][j] * c - row[b][j + h] * s : row[b][j] * c + row[b][j - h] * s"));
    c_.close();
    write(0, outPort(0), "out");
    c_.close();
    c_.open("if (++t == " + std::to_string(tiles) + ")");
    c_.line("t = 0;");
    c_.line("++r;");
    c_.close();
    c_.close();
    c_.close();
  }

  const EmitContext& ctx_;
  const Task& task_;
  const TaskRole& role_;
  Code& c_;
  const Kernel& kernel_;
  const Op& op_;
  std::set<size_t> tables_;  // phase 0's ports with a dequantisation table
};

std::string firstPort(const Task& task, PortDir dir) {
  const auto& ports = task.isDma() ? task.dmaPorts : task.phases.at(0).ports;
  for (const Port& p : ports)
    if (p.dir == dir) return p.fifo;
  throw UserError("internal: task '" + task.name + "' has no port of that direction");
}

// The trips of `trips` with `by` (a power of two dividing the product of the constant ones) taken out of
// the innermost constant ones: the iterations of a loop that moves `by` tokens at a time.
std::vector<Expr> groupedTrips(std::vector<Expr> trips, int64_t by) {
  for (size_t k = trips.size(); k-- > 0 && by > 1;)
    if (trips[k].isConstant()) {
      int64_t g = std::gcd(trips[k].eval(), by);
      trips[k] = Expr(trips[k].eval() / g);
      by /= g;
    }
  if (by != 1) throw UserError("internal: a DMA's token count is not a whole number of 512-bit beats");
  return trips;
}

// The beat address sum_k coeff[k] * i_k + first.
std::string beatAddress(const RowMajorBeats& r) {
  std::string s;
  for (size_t k = 0; k < r.coeff.size(); ++k)
    if (r.coeff[k] != 0) s += (s.empty() ? "" : " + ") + (r.coeff[k] == 1 ? "" : std::to_string(r.coeff[k]) + " * ") + "i" + std::to_string(k);
  if (r.first != 0 || s.empty()) s += (s.empty() ? "" : " + ") + std::to_string(r.first);
  return s;
}

// A token of `beats` beats assembled from, or taken apart into, beats: a loop of one beat an iteration
// (variable q the beat within the token). Loads write the token at its last beat; stores read it at its
// first.
void beatsOfToken(Code& c, const std::string& tokType, int64_t per, int64_t beats, const std::string& q,
                  const std::string& beatRef, bool load, const std::string& fifo) {
  if (load) {
    c.line("const auto beat = " + beatRef + ";");
    openElements(c, "j", per);
    c.line("tok.v[" + q + " * " + std::to_string(per) + " + j] = beat.v[j];");
    c.close();
    c.open("if (" + q + " == " + std::to_string(beats - 1) + ")");
    c.line(fifo + ".write(tok);");
    c.line("++t;");
    c.close();
    return;
  }
  c.line("if (" + q + " == 0) tok = " + fifo + ".read();");
  c.line(tokType + " beat;");
  openElements(c, "j", per);
  c.line("beat.v[j] = tok.v[" + q + " * " + std::to_string(per) + " + j];");
  c.close();
  c.line(beatRef + " = beat;");
}

// A DMA over a port of whole beats (DmaPort): one beat an iteration, a token (or a 512-bit token of
// `ratio` narrow ones) a beat or several.
void dmaBeats(const EmitContext& ctx, const Task& task, const TaskRole& role, const DmaPort& port,
              const std::string& mem, Code& c) {
  const StreamOrder& o = role.order;
  const bool load = task.kind == TaskKind::kDmaRead;
  const std::string fifoName = firstPort(task, load ? PortDir::kOut : PortDir::kIn), fifo = ctx.fifoVar(fifoName);
  const int n = static_cast<int>(o.trips.size());
  const int64_t per = port.per, fifoUnits = ctx.elements(fifoName);
  std::vector<Expr> trips = o.trips;
  int64_t beats = 1;
  std::string address;
  if (role.packed) {  // the buffer is the stream: beat after beat
    if (role.ratio > 1) trips = groupedTrips(o.trips, role.ratio);
    beats = role.ratio > 1 ? 1 : storageUnits(o) / role.stripes / per;
    c.line("long t = 0;");
    address = beats == 1 ? "t" : "t * " + std::to_string(beats);
  } else {
    RowMajorBeats r = rowMajorBeats(ctx.compiled->kernels.tensors.at(role.tensor), o, role.ratio, per, role.stripes);
    beats = r.beatsPerToken;
    if (role.ratio > 1) {
      const size_t L = static_cast<size_t>(r.groupLoop);
      trips[L] = Expr(o.trips[L].eval() / role.ratio);
    }
    if (beats > 1 && fifoUnits != per) c.line("long t = 0;");
    address = beatAddress(r);
  }
  // A DMA whose FIFO carries beats (a join after a read makes the tokens, a split before a write takes them
  // apart; lower/streams.cpp) moves each beat straight through.
  const bool beatFifo = beats > 1 && fifoUnits == per;
  if (beats > 1) {
    if (!beatFifo) c.line(tokenOf(per * beats, o.dtype) + " tok;");
    trips.push_back(Expr(beats));
  }
  FlatLoop f(c, trips, "i", static_cast<int>(trips.size()));
  f.open(identifier(task.name), 1, &ctx.compiled->options.maxima);
  if (beatFifo) {
    const std::string q = "i" + std::to_string(n), at = mem + "[" + address + " + " + q + "]";
    c.line(load ? fifo + ".write(" + at + ");" : at + " = " + fifo + ".read();");
    if (role.packed) c.line("if (" + q + " == " + std::to_string(beats - 1) + ") ++t;");
  } else if (beats > 1) {
    std::string q = "i" + std::to_string(n);
    beatsOfToken(c, port.type(), per, beats, q, mem + "[" + address + " + " + q + "]", load, fifo);
  } else if (load) {
    c.line(fifo + ".write(" + mem + "[" + address + "]);");
    if (role.packed) c.line("++t;");
  } else {
    c.line(mem + "[" + address + "] = " + fifo + ".read();");
  }
  f.close();
}

// A DMA read over an element port: element j of the narrow token at running count t, placed in or taken
// from the 512-bit token `wide`.
void dmaLoad(const EmitContext& ctx, const Task& task, const TaskRole& role, const std::string& mem, Code& c) {
  const StreamOrder& o = role.order;
  const std::string& dtype = o.dtype;
  int64_t E = storageUnits(o), part = E / role.stripes;
  std::string out = ctx.fifoVar(firstPort(task, PortDir::kOut));
  const TensorInfo& t = ctx.compiled->kernels.tensors.at(role.tensor);
  if (!role.packed && E != tokenElements(o))
    throw UserError("unsupported: HLS emission of '" + task.name + "': a row-major " + dtype + " tensor read from HBM");
  DmaPort port = dmaPort(*ctx.compiled, role);
  if (port.beats()) return dmaBeats(ctx, task, role, port, mem, c);
  // A packed token wider than an AXI beat (512 bits) is read a beat per iteration, so that the loop's one
  // m_axi access a cycle holds at II=1: the token is written at its last beat.
  int64_t bits = part * storageOf(dtype).bits,
          beats = role.packed ? (bits + kDmaTokenBits - 1) / kDmaTokenBits : 1;
  if (beats > 1) {
    int64_t per = kDmaTokenBits / storageOf(dtype).bits;
    int n = static_cast<int>(o.trips.size());
    std::vector<Expr> trips = o.trips;
    trips.push_back(Expr(beats));
    c.line("long t = 0;");
    c.line(tokenOf(part, dtype) + " tok;");
    FlatLoop f(c, trips, "i", n + 1);
    f.open(identifier(task.name), 1, &ctx.compiled->options.maxima);
    std::string q = "i" + std::to_string(n), at = q + " * " + std::to_string(per) + " + j";
    openElements(c, "j", per);
    std::string copy = "tok.v[" + at + "] = " + mem + "[t * " + std::to_string(part) + " + " + at + "];";
    c.line(part % per == 0
               ? copy
               : "if (" + at + " < " + std::to_string(part) + ") " + copy);  // a last beat in part
    c.close();
    c.open("if (" + q + " == " + std::to_string(beats - 1) + ")");
    c.line(out + ".write(tok);");
    c.line("++t;");
    c.close();
    f.close();
    return;
  }
  c.line("long t = 0;");
  if (role.ratio > 1) c.line(wideToken(dtype) + " wide;");
  FlatLoop f(c, o.trips, "i", static_cast<int>(o.trips.size()));
  f.open(identifier(task.name), 1, &ctx.compiled->options.maxima);
  c.line(tokenOf(part, dtype) + " tok;");
  openElements(c, "j", part);
  std::string elem = role.stripes > 1 ? std::to_string(role.stripe * part) + " + j" : "j";
  if (role.packed) {
    c.line("tok.v[j] = " + mem + "[t * " + std::to_string(part) + " + j];");
  } else {  // row-major: padded positions read as zeros
    c.line("tok.v[j] = " + insideOr(insideTensor(t, o, "i", elem), mem + "[" + elementIndex(t, o, "i", elem) + "]",
                                    storageOf(dtype).type + "(0)") + ";");
  }
  c.close();
  if (role.ratio > 1) {
    openElements(c, "j", part);
    c.line("wide.v[(t % " + std::to_string(role.ratio) + ") * " + std::to_string(part) + " + j] = tok.v[j];");
    c.close();
    c.line("if (t % " + std::to_string(role.ratio) + " == " + std::to_string(role.ratio - 1) + ") " + out + ".write(wide);");
  } else {
    c.line(out + ".write(tok);");
  }
  c.line("++t;");
  f.close();
}

void dmaStore(const EmitContext& ctx, const Task& task, const TaskRole& role, const std::string& mem, Code& c) {
  const StreamOrder& o = role.order;
  const std::string& dtype = o.dtype;
  int64_t E = storageUnits(o);
  if (E != tokenElements(o)) throw UserError("unsupported: HLS emission of '" + task.name + "': an int4 tensor written to HBM");
  DmaPort port = dmaPort(*ctx.compiled, role);
  if (port.beats()) return dmaBeats(ctx, task, role, port, mem, c);
  std::string in = ctx.fifoVar(firstPort(task, PortDir::kIn));
  const TensorInfo& t = ctx.compiled->kernels.tensors.at(role.tensor);
  c.line("long t = 0;");
  if (role.ratio > 1) c.line(wideToken(dtype) + " wide;");
  FlatLoop f(c, o.trips, "i", static_cast<int>(o.trips.size()));
  f.open(identifier(task.name), 1, &ctx.compiled->options.maxima);
  if (role.ratio > 1) {
    c.line("if (t % " + std::to_string(role.ratio) + " == 0) wide = " + in + ".read();");
    c.line(tokenOf(E, dtype) + " tok;");
    openElements(c, "j", E);
    c.line("tok.v[j] = wide.v[(t % " + std::to_string(role.ratio) + ") * " + std::to_string(E) + " + j];");
    c.close();
  } else {
    c.line(tokenOf(E, dtype) + " tok = " + in + ".read();");
  }
  openElements(c, "j", E);
  // Padded positions are not stored.
  c.line(ifInside(insideTensor(t, o, "i", "j")) + mem + "[" + elementIndex(t, o, "i", "j") + "] = tok.v[j];");
  c.close();
  c.line("++t;");
  f.close();
}

// Split: one wide token (512 bits from a DMA, a kernel's tile, or a token of several beats before a DMA
// write) into `ratio` narrow ones; pack: the reverse; join: `ratio` 512-bit beats from a DMA read into one
// token.
void adapter(const EmitContext& ctx, const Task& task, const TaskRole& role, Code& c) {
  const Phase& ph = task.phases.at(0);
  std::string in = firstPort(task, PortDir::kIn), out = firstPort(task, PortDir::kOut);
  bool split = role.kind == TaskRole::kSplit;
  int64_t narrow = ctx.elements(split ? out : in), r = role.ratio;
  const std::string& dtype = role.order.dtype;
  // One flattened loop over (wide token, narrow token): the wide side is read or written once per r.
  c.line(tokenOf(narrow * r, dtype) + " wide;");
  FlatLoop f(c, {ph.trip[0], Expr(r)}, "i", 2);
  f.open(identifier(task.name), ph.ii, &ctx.compiled->options.maxima, ph.latency);
  c.line(tokenOf(narrow, dtype) + " tok;");
  if (split)
    c.line("if (i1 == 0) wide = " + ctx.fifoVar(in) + ".read();");
  else
    c.line("tok = " + ctx.fifoVar(in) + ".read();");
  openElements(c, "j", narrow);
  c.line(split ? "tok.v[j] = wide.v[i1 * " + std::to_string(narrow) + " + j];"
               : "wide.v[i1 * " + std::to_string(narrow) + " + j] = tok.v[j];");
  c.close();
  if (split) c.line(ctx.fifoVar(out) + ".write(tok);");
  else
    c.line("if (i1 == " + std::to_string(r - 1) + ") " + ctx.fifoVar(out) + ".write(wide);");
  f.close();
}

// Row-major strides of the region's dims.
std::vector<int64_t> regionStrides(const TaskRole& role) {
  std::vector<int64_t> st(role.region.size(), 1);
  for (size_t d = role.region.size(); d-- > 1;) st[d - 1] = st[d] * role.region[d];
  return st;
}

// The element offset in the region block of element e of a token, relative to the token's first element:
// e's coordinate within the token along each dim, row-major over the region (regionIndex without the
// loop counters, which move the whole token).
int64_t elementOffset(const TaskRole& role, const StreamOrder& order, int64_t e) {
  const std::vector<int64_t>& el = order.element;
  std::vector<int64_t> st = regionStrides(role);
  int64_t off = 0, inner = 1;
  for (size_t d = el.size(); d-- > 0;) {
    off += ((e / inner) % el[d]) * st.at(d);
    inner *= el[d];
  }
  return off;
}

// How far, in elements, one step of each of the region's loops moves a token (regionIndex's counter part).
std::vector<int64_t> loopStrides(const TaskRole& role, const StreamOrder& order) {
  std::vector<int64_t> st = regionStrides(role), out;
  for (int k = role.sharedLoops; k < order.map.numDims(); ++k) {
    int64_t s = 0;
    for (int d = 0; d < order.map.numResults(); ++d)
      s += order.map.results()[static_cast<size_t>(d)].coeffs[static_cast<size_t>(k)] *
           order.steps[static_cast<size_t>(k)] * st.at(static_cast<size_t>(d));
    out.push_back(s);
  }
  return out;
}

// An int4 token whose element pairs (2j, 2j + 1) sit in one byte of the block, at every position: its
// bytes are the block's.
bool pairedBytes(const TaskRole& role, const StreamOrder& order) {
  for (int64_t s : loopStrides(role, order))
    if (s % 2 != 0) return false;
  for (int64_t e = 0; e + 1 < tokenElements(order); e += 2) {
    int64_t a = elementOffset(role, order, e), b = elementOffset(role, order, e + 1);
    if (a % 2 != 0 || b != a + 1) return false;
  }
  return true;
}

// The offset of an element within its converter region: its data coordinates without the shared loops'
// part, row-major over the region shape.
std::string regionIndex(const TaskRole& role, const StreamOrder& order, const std::string& elem) {
  StreamOrder local = order;
  std::vector<AffineExpr> results = local.map.results();
  for (auto& r : results)
    for (int k = 0; k < role.sharedLoops; ++k) r.coeffs[static_cast<size_t>(k)] = 0;
  local.map = AffineMap(local.map.numDims(), results);
  std::vector<Expr> shape;
  for (int64_t d : role.region) shape.emplace_back(d);
  std::vector<std::string> coords;
  for (int d = 0; d < local.map.numResults(); ++d) coords.push_back(dataCoord(local, d, "i", elem));
  return rowMajor(shape, coords);
}

void converter(const EmitContext& ctx, const Task& task, const TaskRole& role, Code& c) {
  bool writer = role.kind == TaskRole::kConverterWrite;
  const StreamOrder& o = writer ? role.order : role.target;
  std::string region = writer ? firstPort(task, PortDir::kOut) : firstPort(task, PortDir::kIn);
  std::string label = identifier(task.name);
  int n = static_cast<int>(o.trips.size());
  openLoops(c, o, "i", 0, role.sharedLoops, label, &ctx.compiled->options.maxima);
  c.open("");
  c.line(std::string(writer ? "hls::write_lock<" : "hls::read_lock<") + ctx.blockType(region) + "> block(" +
         ctx.fifoVar(region) + ");");
  FlatLoop f(c, o.trips, "i", n, role.sharedLoops);  // the region's loops, flattened
  f.open(label + "_region", task.phases.at(0).ii, &ctx.compiled->options.maxima, task.phases.at(0).latency,
         task.phases.at(0).outer);
  int64_t E = tokenElements(o);
  const std::string& dtype = o.dtype;
  bool int4 = storageUnits(o) != E;  // two weights a byte, in the token and in the block
  bool bytewise = int4 && pairedBytes(role, o);
  std::string index = regionIndex(role, o, "e");
  if (writer) {
    std::vector<std::string> feeds;  // one FIFO, or the stripes of a weight re-streamed per row block
    for (const Port& p : task.phases.at(0).ports)
      if (p.dir == PortDir::kIn) feeds.push_back(p.fifo);
    readPort(ctx, c, "tok", storageUnits(o), feeds, dtype);
    if (bytewise) {  // the token's bytes are the block's: one store a byte, no read-modify-write
      openElements(c, "e", E / 2);
      c.line("block[(" + regionIndex(role, o, "2 * e") + ") / 2] = tok.v[e];");
    } else {
      openElements(c, "e", E);
      c.line(int4 ? "st_set_w4(block, " + index + ", st_w4(tok.v, e));" : "block[" + index + "] = tok.v[e];");
    }
    c.close();
  } else {
    c.line(tokenOf(storageUnits(o), dtype) + " tok" + (int4 ? " = {}" : "") + ";");
    if (bytewise) {
      openElements(c, "e", E / 2);
      c.line("tok.v[e] = block[(" + regionIndex(role, o, "2 * e") + ") / 2];");
    } else {
      openElements(c, "e", E);
      c.line(int4 ? "st_set_w4(tok.v, e, st_w4(block, " + index + "));" : "tok.v[e] = block[" + index + "];");
    }
    c.close();
    for (const Port& p : task.phases.at(0).ports)
      if (p.dir == PortDir::kOut) c.line(ctx.fifoVar(p.fifo) + ".write(tok);");
  }
  f.close();
  c.close();
  for (int k = 0; k < role.sharedLoops; ++k) c.close();
}

// An embedding lookup: for each output token, the row of the table its token id names (embeddingRow, as
// the references take it), read from `ids` (the graph input) and `mem` (the table, row-major).
void gather(const EmitContext& ctx, const Task& task, const TaskRole& role, const std::string& mem, Code& c) {
  const StreamOrder& o = role.order;
  const TensorInfo& table = ctx.compiled->kernels.tensors.at(role.tensor);
  int64_t V = table.shape.front().eval(ctx.compiled->options.maxima);
  std::string D = cxx(table.shape.back());
  int n = static_cast<int>(o.trips.size());
  int64_t T = tokenElements(o);
  FlatLoop f(c, o.trips, "i", n);
  f.open(identifier(task.name), 1, &ctx.compiled->options.maxima);
  std::vector<Expr> rowTrips(o.trips.begin(), o.trips.end() - 1);
  std::vector<std::string> rowVars;
  for (int k = 0; k + 1 < n; ++k) rowVars.push_back("i" + std::to_string(k));
  c.line("const float token = ids[" + rowMajor(rowTrips, rowVars) + "];");
  c.line("const float wrapped = token < 0 ? token + " + std::to_string(V) + ".0f : token;");
  c.line("const long id = wrapped < 0 ? 0 : wrapped > " + std::to_string(V - 1) + " ? " +
         std::to_string(V - 1) + " : static_cast<long>(wrapped);");
  c.line(tokenOf(T, o.dtype) + " out;");
  openElements(c, "e", T);
  c.line("out.v[e] = " + mem + "[id * " + D + " + " + dataCoord(o, o.map.numResults() - 1, "i", "e") + "];");
  c.close();
  c.line(ctx.fifoVar(firstPort(task, PortDir::kOut)) + ".write(out);");
  f.close();
}

}  // namespace

Storage storageOf(const std::string& dtype) {
  if (dtype == "f32") return {"float", 32};
  if (dtype == "i8") return {"st_i8", 8};
  if (dtype == "i4") return {"st_u8", 8};
  if (dtype == "i32") return {"st_i32", 32};
  throw UserError("unsupported: HLS emission of " + dtype + " streams (f32, i8, i4 and i32 are emitted)");
}

std::string tokenOf(int64_t units, const std::string& dtype) {
  Storage st = storageOf(dtype);
  return "Tok<" + std::to_string(units) + (st.type == "float" ? "" : ", " + st.type) + ">";
}

int64_t storageUnits(const StreamOrder& order) {
  const std::string& d = order.dtype;
  return tokenElements(order) * dtypeBits(d) / storageOf(d).bits;
}

std::string DmaPort::type() const { return beats() ? tokenOf(per, dtype) : storageOf(dtype).type; }

DmaPort dmaPort(const CompileResult& compiled, const TaskRole& role) {
  const std::string& dtype = role.order.dtype;
  const Storage st = storageOf(dtype);
  DmaPort p;
  p.dtype = dtype;
  const int64_t per = kDmaTokenBits / st.bits, units = tokenElements(role.order) * dtypeBits(dtype) / st.bits;
  if (role.kind == TaskRole::kGather) {
    p.reason = "an embedding lookup reads rows at token ids";
  } else if (role.kind == TaskRole::kLoad && role.packed) {
    int64_t part = units / role.stripes;
    if (role.ratio > 1 || part % per == 0)
      p.per = per;
    else
      p.reason = "its tokens of " + std::to_string(part * st.bits) + " bits are not whole 512-bit beats";
  } else if (units != tokenElements(role.order)) {
    p.reason = "int4 elements";
  } else {
    p.reason = rowMajorBeats(compiled.kernels.tensors.at(role.tensor), role.order, role.ratio, per, role.stripes).reason;
    if (p.reason.empty()) p.per = per;
  }
  return p;
}

std::string floatLiteral(float v) {
  if (std::isnan(v)) return "std::numeric_limits<float>::quiet_NaN()";
  if (std::isinf(v)) return v < 0 ? "-std::numeric_limits<float>::infinity()" : "std::numeric_limits<float>::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9gf", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s.insert(s.size() - 1, ".0");
  return s;
}

std::string EmitContext::fifoDtype(const std::string& fifo) const {
  auto it = fifoDtypes.find(fifo);
  return it == fifoDtypes.end() ? "f32" : it->second;
}

int64_t EmitContext::elements(const std::string& fifo) const { return fifos.at(fifo)->width / storageOf(fifoDtype(fifo)).bits; }

std::string EmitContext::tokenType(const std::string& fifo) const { return tokenOf(elements(fifo), fifoDtype(fifo)); }

const QuantScale& EmitContext::scale(const std::string& tensor) const {
  // A matmul's panels and its wide tokens (lower/kernels.cpp) are its output, in another order (a graph's
  // own tensor of such a name keeps its scale).
  if (!quant->scales.count(tensor))
    for (const std::string suffix : {".panels", ".wide"})
      if (tensor.size() > suffix.size() && tensor.compare(tensor.size() - suffix.size(), suffix.size(), suffix) == 0)
        return quant->of(tensor.substr(0, tensor.size() - suffix.size()));
  return quant->of(tensor);
}

int64_t regionElements(const TaskRole& role) {
  int64_t n = 1;
  for (int64_t d : role.region) n *= d;
  return n;
}

int64_t regionUnits(const TaskRole& role) {
  const std::string& dtype = role.order.dtype;
  int64_t bits = storageOf(dtype).bits;
  return (regionElements(role) * dtypeBits(dtype) + bits - 1) / bits;
}

namespace {

// The storage units of the block one token of `order` touches, relative to its first one's.
std::vector<int64_t> tokenUnits(const TaskRole& role, const StreamOrder& order) {
  std::vector<int64_t> units;
  int64_t E = tokenElements(order), perUnit = storageUnits(order) == E ? 1 : 2;  // int4: two a byte
  for (int64_t e = 0; e < E; ++e) units.push_back(elementOffset(role, order, e) / perUnit);
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  return units;
}

bool separates(const std::vector<int64_t>& units, int64_t factor) {
  std::vector<bool> used(static_cast<size_t>(factor), false);
  for (int64_t u : units) {
    size_t bank = static_cast<size_t>(((u % factor) + factor) % factor);
    if (used[bank]) return false;
    used[bank] = true;
  }
  return true;
}

}  // namespace

int64_t regionBanks(const TaskRole& role) {
  std::vector<int64_t> w = tokenUnits(role, role.order), r = tokenUnits(role, role.target);
  // HLS must see which bank each access of the unrolled token takes: every loop moves a token by a
  // multiple of the factor, so a token's first unit is always in bank 0 (an int4 stride must be whole bytes).
  std::vector<int64_t> strides = loopStrides(role, role.order), rs = loopStrides(role, role.target);
  strides.insert(strides.end(), rs.begin(), rs.end());
  bool int4 = storageUnits(role.order) != tokenElements(role.order);
  int64_t all = regionUnits(role);
  for (int64_t f = static_cast<int64_t>(std::max(w.size(), r.size())); f < all; ++f) {
    bool aligned = true;
    for (int64_t s : strides) aligned = aligned && (int4 ? s % 2 == 0 && (s / 2) % f == 0 : s % f == 0);
    if (aligned && separates(w, f) && separates(r, f)) return f;
  }
  return all;
}

void emitTaskBody(const EmitContext& ctx, const Task& task, const TaskRole& role, const std::string& memory,
                  Code& code) {
  switch (role.kind) {
    case TaskRole::kKernel:
      KernelBody(ctx, task, role, code).emit();
      return;
    case TaskRole::kLoad:
      dmaLoad(ctx, task, role, memory, code);
      return;
    case TaskRole::kStore:
      dmaStore(ctx, task, role, memory, code);
      return;
    case TaskRole::kSplit:
    case TaskRole::kPack:
    case TaskRole::kJoin:
      adapter(ctx, task, role, code);
      return;
    case TaskRole::kConverterWrite:
    case TaskRole::kConverterRead:
      converter(ctx, task, role, code);
      return;
    case TaskRole::kGather:
      gather(ctx, task, role, memory, code);
      return;
  }
}

}  // namespace stc::emit
