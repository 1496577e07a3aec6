// HLS emission end to end, as a user runs it: `stc emit` writes a project, `make csim` builds it with g++
// alone and compares the kernels' outputs with the reference interpreter's, and `make conform` checks the
// C simulation's stream accesses against the project's network. The project text is checked
// against the network that `stc compile` and `stc size-fifos` produce for the same graph.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "cli/run_stc.h"
#include "compiler/ir/network.h"
#include "compiler/ir/yaml_io.h"

namespace {

namespace fs = std::filesystem;

using stc::test::Outcome;
using stc::test::shell;
using stc::test::stc;

std::string model(const std::string& rel) { return STC_SOURCE_DIR "/models/" + rel; }

std::string fresh(const std::string& name) {
  std::string dir = ::testing::TempDir() + "emit_" + name;
  fs::remove_all(dir);
  return dir;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string sources(const std::string& dir) {
  std::string all;
  for (const auto& e : fs::directory_iterator(dir + "/src"))
    if (e.path().extension() == ".cpp") all += readAll(e.path().string());
  return all;
}

// No DMA token of the project's network is wider than a 512-bit beat (#22: a DMA token of several beats
// cannot move at one an iteration through one m_axi port).
void expectDmaTokensOfOneBeat(const std::string& dir) {
  std::string cfgPath = dir + "/network.yaml";
  stc::Network n = stc::parseNetwork(readAll(cfgPath), cfgPath);
  std::map<std::string, int64_t> width;
  for (const stc::Fifo& f : n.fifos) width[f.name] = f.width;
  int dmas = 0;
  for (const stc::Task& t : n.tasks)
    for (const stc::Port& p : t.dmaPorts) {
      ++dmas;
      EXPECT_LE(width.at(p.fifo), 512) << t.name;
    }
  EXPECT_GT(dmas, 0);
}

// Emits `input` and runs its C simulation; expects both to pass. Returns what the C simulation printed.
std::string emitAndSimulate(const std::string& input, const std::string& name, const std::string& flags = "") {
  std::string dir = fresh(name);
  Outcome e = stc("emit " + input + " -o " + dir + " " + flags);
  EXPECT_EQ(e.code, 0) << e.out;
  if (e.code != 0) return "";
  // The C simulation with its stream accesses traced (it checks the outputs as make csim does), and the
  // trace checked against the network the project holds (#16): the code accesses its streams as simulated.
  Outcome m = shell("make -s -C " + dir + " conform STC=" STC_BINARY);
  EXPECT_EQ(m.code, 0) << m.out;
  EXPECT_NE(m.out.find("csim: PASS"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("conform: PASS"), std::string::npos) << m.out;
  // The kernels run concurrently at the emitted depths, iterations gated as a stall pipeline gates them:
  // they complete (make dfsim).
  Outcome d = shell("make -s -C " + dir + " dfsim");
  EXPECT_EQ(d.code, 0) << d.out;
  EXPECT_NE(d.out.find("dfsim: PASS"), std::string::npos) << d.out;
  // The host program compiles against XRT's native API (declared by tests/emit/xrt_stub; XRT itself is
  // not installed here), warnings included.
  Outcome host = shell("g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I" STC_SOURCE_DIR "/tests/emit/xrt_stub " + dir +
                       "/host/host.cpp");
  EXPECT_EQ(host.code, 0) << host.out;
  // The outputs the C simulation wrote are the expected ones, value for value within the tolerance.
  std::string out = readAll(dir + "/data/outputs.bin"), expected = readAll(dir + "/data/expected.bin");
  EXPECT_EQ(out.size(), expected.size());
  EXPECT_GT(out.size(), 0u);
  return m.out;
}

// Whether `text` names `word` as a whole identifier.
bool mentions(const std::string& text, const std::string& word) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1))
    if ((at == 0 || !ident(text[at - 1])) &&
        (at + word.size() == text.size() || !ident(text[at + word.size()])))
      return true;
  return false;
}

// The float recurrences of each pipelined loop in emitted sources: lines inside the loop that compute a
// float declared before it (in the same task) from its own value by arithmetic (`+=`, `*=`, or `v = ...
// v ...` with + - * /; a comparison and select is a cycle), each with the loop's II times the distance
// its DEPENDENCE pragma declares. A float addition takes 7 cycles at 4 ns (dse/cost_model.cpp), so such a
// line below 7 is a recurrence HLS cannot schedule.
struct FloatRecurrence {
  int ii;
  std::string line;
};
std::vector<FloatRecurrence> floatRecurrences(const std::string& src) {
  std::vector<FloatRecurrence> found;
  std::vector<std::string> floats;
  int ii = 0;  // 0 outside a pipelined loop
  int distance = 1;
  std::istringstream lines(src);
  for (std::string line; std::getline(lines, line);) {
    size_t text = line.find_first_not_of(' ');
    if (text == std::string::npos) continue;
    std::string body = line.substr(text);
    if (text == 0) {  // a new function
      floats.clear();
      ii = 0;
      continue;
    }
    if (body.rfind("#pragma HLS PIPELINE II=", 0) == 0) {
      ii = std::atoi(body.c_str() + 24);
      distance = 1;
      continue;
    }
    if (body.rfind("#pragma HLS DEPENDENCE", 0) == 0 && body.find("distance=") != std::string::npos) {
      distance = std::atoi(body.c_str() + body.find("distance=") + 9);
      continue;
    }
    if (ii == 0 && body.rfind("float ", 0) == 0) {  // `float a = x, b[4];`: a and b
      std::stringstream names(body.substr(6));
      for (std::string piece; std::getline(names, piece, ',');) {
        size_t from = piece.find_first_not_of(' '), to = from;
        while (to < piece.size() && (std::isalnum(static_cast<unsigned char>(piece[to])) || piece[to] == '_'))
          ++to;
        if (from != std::string::npos && to > from) floats.push_back(piece.substr(from, to - from));
      }
      continue;
    }
    if (ii == 0) continue;
    for (const std::string& v : floats) {
      size_t at = body.find(v);
      if (at != 0) continue;  // updates start their statement with the variable
      std::string rest = body.substr(v.size());
      while (!rest.empty() && rest[0] == '[') rest = rest.substr(rest.find(']') + 1);  // acc[i3][n]
      bool compound = rest.rfind(" += ", 0) == 0 || rest.rfind(" -= ", 0) == 0 || rest.rfind(" *= ", 0) == 0;
      std::string rhs = rest.size() > 3 ? rest.substr(3) : "";
      bool arithmetic = false;
      for (const char* op : {" + ", " - ", " * ", " / "})
        arithmetic = arithmetic || rhs.find(op) != std::string::npos;
      bool self = rest.rfind(" = ", 0) == 0 && mentions(rhs, v) && arithmetic;
      if (compound || self) found.push_back({ii * distance, body});
    }
  }
  return found;
}

// W4A8 (README, "W4A8"): the C simulation equals the quantised reference bit for bit, and stays close to
// the f32 reference: the cosine similarity it reports.
double cosineOf(const std::string& csim) {
  auto at = csim.find("cosine ");
  return at == std::string::npos ? 0.0 : std::atof(csim.c_str() + at + 7);
}

void expectBitExact(const std::string& input, const std::string& name, const std::string& flags, double minCosine) {
  std::string out = emitAndSimulate(input, name, flags);
  EXPECT_NE(out.find("int8 outputs equal the W4A8 reference bit for bit"), std::string::npos) << out;
  EXPECT_GE(cosineOf(out), minCosine) << out;
}

// The graph file of one matmul, a [M, K] input times a [K, N] f32 weight, named `name`.
std::string matmulGraph(const std::string& name, int M, int K, int N) {
  std::string path = ::testing::TempDir() + name + ".yaml";
  std::ofstream(path) << "graph: " << name << "\n"
                      << "inputs: [{name: a, shape: [" << M << ", " << K << "], dtype: f32}]\n"
                      << "weights: [{name: w, shape: [" << K << ", " << N << "], dtype: f32}]\n"
                      << "ops: [{name: mm, op: matmul, inputs: [a, w], output: y}]\n"
                      << "outputs: [y]\n";
  return path;
}

TEST(Emit, MatmulCsimMatchesTheReference) {
  std::string path = matmulGraph("matmul", 3, 96, 40);
  emitAndSimulate(path, "matmul");
  expectBitExact(path, "q_matmul", "--set quant=w4a8", 0.99);
}

// A weight tile of 27 floats (K = 27, N = 29 a prime: the tile is 1 wide and 27 deep), 108 bytes: striped
// over channels only at whole floats (two stripes of 54 bytes would split one; the emitted tile lost it).
TEST(Emit, AWeightTileOfAnOddNumberOfFloatsCsimMatchesTheReference) {
  emitAndSimulate(matmulGraph("odd_tile", 2, 27, 29), "odd_tile");
}

// Widths whose gcd with the tile is small stream in their largest divisor up to it: K = 21 in tokens of 7,
// N = 42 in tokens of 14 (gcd(16, 42) = 2).
TEST(Emit, AwkwardWidthsCsimMatchesTheReference) {
  std::string path = matmulGraph("awkward", 3, 21, 42);
  emitAndSimulate(path, "awkward");
  expectBitExact(path, "q_awkward", "--set quant=w4a8", 0.99);
}

// Elementwise ops with broadcasts, transposes (of an input and of an on-chip tensor), a slice, a
// concatenation along each axis and the three reductions.
TEST(Emit, ElementwiseAndDataMovementCsimMatchesTheReference) {
  std::string path = ::testing::TempDir() + "misc.yaml";
  std::ofstream(path) << "graph: misc\n"
                         "inputs: [{name: a, shape: [6, 32]}, {name: b, shape: [32, 6]}]\n"
                         "weights: [{name: r, shape: [32]}, {name: c, shape: [6, 1]}]\n"
                         "ops:\n"
                         "  - {name: bt, op: transpose, inputs: [b], output: b_t, perm: [1, 0]}\n"
                         "  - {name: s1, op: sub, inputs: [a, b_t], output: d}\n"
                         "  - {name: m1, op: mul, inputs: [d, r], output: e}\n"
                         "  - {name: a1, op: add, inputs: [e, c], output: f}\n"
                         "  - {name: r1, op: relu, inputs: [f], output: g}\n"
                         "  - {name: g1, op: sigmoid, inputs: [f], output: h}\n"
                         "  - {name: g2, op: gelu, inputs: [g], output: i, approximate: tanh}\n"
                         "  - {name: x1, op: exp, inputs: [h], output: j}\n"
                         "  - {name: t1, op: tanh, inputs: [i], output: k}\n"
                         "  - {name: d1, op: div, inputs: [k, j], output: l}\n"
                         "  - {name: s2, op: silu, inputs: [l], output: m}\n"
                         "  - {name: cut, op: slice, inputs: [m], output: n, axis: 1, start: 8, end: 24}\n"
                         "  - {name: cat0, op: concat, inputs: [n, n], output: o, axis: 0}\n"
                         "  - {name: cat1, op: concat, inputs: [m, n], output: p, axis: 1}\n"
                         "  - {name: back, op: transpose, inputs: [p], output: q, perm: [1, 0]}\n"
                         "  - {name: sum, op: reduce_sum, inputs: [o], output: z1, axis: -1}\n"
                         "  - {name: mean, op: reduce_mean, inputs: [p], output: z2, axis: -1}\n"
                         "  - {name: peak, op: reduce_max, inputs: [q], output: z3, axis: -1}\n"
                         "outputs: [z1, z2, z3, q]\n";
  emitAndSimulate(path, "misc");
  expectBitExact(path, "q_misc_ops", "--set quant=w4a8", 0.99);
}

// An embedding lookup gathers table rows by token id (the ids are drawn as whole rows of the table).
TEST(Emit, EmbeddingLookupCsimMatchesTheReference) { emitAndSimulate(model("graphs/misc_ops.yaml"), "misc_ops"); }

// Ops reading a reshape view stream its base, whose tokens are the view's but whose rows are not: the
// norm, the reduction, the concat and the residual add below read [4, 16] views of [4, 4, 4] tensors.
// (Random graphs found emission taking the base's row length and loops.)
TEST(Emit, OpsOverReshapeViewsCsimMatchesTheReference) {
  std::string path = ::testing::TempDir() + "views.yaml";
  std::ofstream(path) << "graph: views\n"
                         "inputs: [{name: x, shape: [4, 16]}]\n"
                         "weights: [{name: wq, shape: [16, 16]}, {name: kc, shape: [4, 4, 5]}, {name: vc, shape: [4, 5, 4]},\n"
                         "          {name: g, shape: [16]}]\n"
                         "ops:\n"
                         "  - {name: q, op: matmul, inputs: [x, wq], output: qo}\n"
                         "  - {name: r, op: reshape, inputs: [qo], output: ro, shape: [4, 4, 4]}\n"
                         "  - {name: p, op: transpose, inputs: [ro], output: po, perm: [1, 0, 2]}\n"
                         "  - {name: s, op: matmul, inputs: [po, kc], output: so}\n"
                         "  - {name: m, op: softmax, inputs: [so], output: mo, axis: -1}\n"
                         "  - {name: o, op: matmul, inputs: [mo, vc], output: oo}\n"
                         "  - {name: b, op: transpose, inputs: [oo], output: bo, perm: [1, 0, 2]}\n"
                         "  - {name: f, op: reshape, inputs: [bo], output: t, shape: [4, 16]}\n"
                         "  - {name: n, op: rmsnorm, inputs: [t, g], output: nt}\n"
                         "  - {name: sum, op: reduce_sum, inputs: [t], output: z, axis: -1}\n"
                         "  - {name: cat, op: concat, inputs: [t, nt], output: c, axis: 0}\n"
                         "  - {name: res, op: add, inputs: [t, x], output: y}\n"
                         "outputs: [c, z, y]\n";
  emitAndSimulate(path, "views");
  expectBitExact(path, "q_views", "--set quant=w4a8", 0.98);  // 3-D weights stay int8
}

// Reshapes between sides of other tiles keep the graph's tile through adapters (a row's sum gating its
// row, `s[:, None] * x`, a reduction's [64, 1] flattened, a view as an output, heads of 32 in tiles of 64):
// csim equals the reference in f32 and bit for bit in W4A8.
TEST(Emit, ReshapesToAnotherTileCsimMatchesTheReference) {
  std::string path = ::testing::TempDir() + "retile.yaml";
  std::ofstream(path) << "graph: retile\n"
                         "inputs: [{name: x, shape: [64, 256]}, {name: v, shape: [64]}]\n"
                         "weights: [{name: w, shape: [256, 128]}]\n"
                         "ops:\n"
                         "  - {name: col, op: reshape, inputs: [v], output: v1, shape: [64, 1]}\n"
                         "  - {name: gate, op: mul, inputs: [x, v1], output: y}\n"
                         "  - {name: total, op: reduce_sum, inputs: [y], output: s, axis: -1, keepdims: 0}\n"
                         "  - {name: col2, op: reshape, inputs: [s], output: s1, shape: [64, 1]}\n"
                         "  - {name: proj, op: matmul, inputs: [y, w], output: p}\n"
                         "  - {name: back, op: add, inputs: [p, s1], output: z}\n"
                         "  - {name: heads, op: reshape, inputs: [z], output: zh, shape: [64, 4, 32]}\n"
                         "  - {name: act, op: relu, inputs: [zh], output: r}\n"
                         "  - {name: peak, op: reduce_max, inputs: [r], output: m, axis: -1}\n"
                         "  - {name: flat, op: reshape, inputs: [m], output: mf, shape: [64, 4]}\n"
                         "outputs: [r, s1, mf]\n";
  emitAndSimulate(path, "retile", "--set tile=64");
  expectBitExact(path, "q_retile", "--set quant=w4a8 --set tile=64", 0.99);
}

// Causal self-attention over 16 rows of 4 heads, heads split and merged by transposes
// (models/graphs/attention_rows.yaml): the transposes and the batched products walk the rows first, in the
// order the projections make them (the scores, the softmax with its mask and P.V over (row, head)); the
// scores and P.V hold K and V in buffers of their own (`held`), a key read with each (row, head).
TEST(Emit, SelfAttentionOverRowsCsimMatchesTheReference) {
  std::string path = model("graphs/attention_rows.yaml");
  std::string dir = ::testing::TempDir() + "attn_rows_net.yaml";
  Outcome c = stc("compile " + path + " -o " + dir);
  ASSERT_EQ(c.code, 0) << c.out;
  std::string net = readAll(dir);
  EXPECT_NE(net.find("trip: [16, 4,"), std::string::npos) << "the products loop over rows first";
  emitAndSimulate(path, "attn_rows");
  std::string source;
  for (const auto& e : fs::directory_iterator(::testing::TempDir() + "emit_attn_rows/src")) source += readAll(e.path());
  EXPECT_NE(source.find("fresh_key = s_kt_scores.read();"), std::string::npos);
  EXPECT_NE(source.find("fresh_key = s_vh_mix.read();"), std::string::npos);
  expectBitExact(path, "q_attn_rows", "--set quant=w4a8", 0.98);
  // The scores over K as [heads, keys, 16] with transpose_b, at a stream tile of 8: two tiles of keys and
  // two of the head's 16 values, so the held tile's key and value indices move with both loops.
  std::string text = readAll(path);
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("output: kt, perm: [1, 2, 0]}", "output: kt, perm: [1, 0, 2]}");
  replace("output: s}", "output: s, transpose_b: 1}");
  std::string tb = ::testing::TempDir() + "attn_rows_tb.yaml";
  std::ofstream(tb) << text;
  emitAndSimulate(tb, "attn_rows_tb", "--set tile=8");
  expectBitExact(tb, "q_attn_rows_tb", "--set quant=w4a8 --set tile=8", 0.98);
}

// The same causal attention over 64 rows with the masked half skipped (causal_triangles=on; measured, the
// compiler would run every key at this size): the kernels walk 4 blocks of 16 rows outside their
// pipelines, block i0 its i0 + 1 key tiles, and the converter sides a row at a time; csim equals the
// reference in f32 and bit for bit in W4A8 (each row's keys past its block were weighed 0, and skipping
// them changes no sum), the code accesses its streams as the network says (conform) and runs at its depths
// (dfsim).
TEST(Emit, CausalAttentionSkipsTheMaskedHalf) {
  std::string text = readAll(model("graphs/attention_rows.yaml"));
  for (std::string from : {"[16, 64]", "[16, 4, 16]", "[16, 4, 16]", "[16, 4, 16]", "[16, 64]"}) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), from == "[16, 64]" ? "[64, 64]" : "[64, 4, 16]");
  }
  std::string path = ::testing::TempDir() + "attn_tri.yaml";
  std::ofstream(path) << text;
  emitAndSimulate(path, "attn_tri", "--set causal_triangles=on");
  std::string source;
  for (const auto& e : fs::directory_iterator(::testing::TempDir() + "emit_attn_tri/src"))
    source += readAll(e.path());
  size_t scores = source.find("scores: for (long it = 0; it < ");
  ASSERT_NE(scores, std::string::npos);
  std::string loop = source.substr(scores, source.find('\n', scores) - scores);
  EXPECT_NE(loop.find(" * (i0 + 1); ++it)"), std::string::npos) << loop;  // a block's rows, heads and tiles
  EXPECT_NE(source.find("for (long it = 0; it < (i0 / 16 + 1); ++it)"),
            std::string::npos);  // a converter side
  expectBitExact(path, "q_attn_tri", "--set quant=w4a8 --set causal_triangles=on", 0.98);
}

// The same causal attention with its projections written head by head (pinned: panels of a head, every
// row): the products walk the heads outside the rows and each holds one head's keys or values, every head
// storing its own over the last's (`held[1][16][16]`, Kernel::heldGroup). csim equals the references in
// f32 and bit for bit in W4A8.
TEST(Emit, CausalAttentionHeadByHeadHoldsAHeadOfKeys) {
  std::string path = model("graphs/attention_rows.yaml"), pins;
  for (const char* op : {"qp", "kp", "vp"})
    pins += std::string(" --set tn.") + op + "=16 --set row_block." + op + "=0";
  std::string net = ::testing::TempDir() + "attn_heads_net.yaml";
  Outcome c = stc("compile " + path + pins + " -o " + net);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("row_block.qp=0"), std::string::npos) << c.out;
  emitAndSimulate(path, "attn_heads", pins);
  std::string source;
  for (const auto& e : fs::directory_iterator(::testing::TempDir() + "emit_attn_heads/src"))
    source += readAll(e.path());
  EXPECT_NE(source.find("static float held[1][16][16];"), std::string::npos);
  EXPECT_EQ(source.find("held[4]"), std::string::npos) << "a product holds every head";
  expectBitExact(path, "q_attn_heads", "--set quant=w4a8" + pins, 0.98);
}

// The attention's core over q, k and v from HBM (16 rows, 4 heads of 16): the products walk the heads
// first, and the heads transposed into rows, a graph output as they are ([16, 4, 16], masked) or merged
// into [16, 64] (not masked), leave the chip in that order: the DMA writes each head's 16 values of a row
// at their row-major place (row * 64 + head * 16), and no converter holds the output to reorder it (in f32:
// a head's row is one 512-bit beat). csim equals the references in f32 and bit for bit in W4A8.
TEST(Emit, AnOutputLeavesTheChipInItsProducersOrder) {
  for (bool causal : {false, true}) {
    std::string name = causal ? "core_heads_causal" : "core_heads", out = causal ? "ot" : "y";
    std::string path = ::testing::TempDir() + name + ".yaml";
    std::ofstream(path)
        << "graph: " << name << "\n"
        << "inputs: [{name: q, shape: [16, 64]}, {name: k, shape: [16, 64]}, {name: v, shape: [16, 64]}]\n"
           "weights: [{name: scale, shape: [1]}]\n"
           "ops:\n"
           "  - {name: q4, op: reshape, inputs: [q], output: q4, shape: [16, 4, 16]}\n"
           "  - {name: qt, op: transpose, inputs: [q4], output: qh, perm: [1, 0, 2]}\n"
           "  - {name: k4, op: reshape, inputs: [k], output: k4, shape: [16, 4, 16]}\n"
           "  - {name: kt, op: transpose, inputs: [k4], output: kt, perm: [1, 2, 0]}\n"
           "  - {name: v4, op: reshape, inputs: [v], output: v4, shape: [16, 4, 16]}\n"
           "  - {name: vt, op: transpose, inputs: [v4], output: vh, perm: [1, 0, 2]}\n"
           "  - {name: scores, op: matmul, inputs: [qh, kt], output: s}\n"
           "  - {name: scaled, op: mul, inputs: [s, scale], output: ss}\n"
           "  - {name: probs, op: softmax, inputs: [ss], output: p, axis: -1"
        << (causal ? ", causal: true" : "")
        << "}\n"
           "  - {name: mix, op: matmul, inputs: [p, vh], output: o}\n"
           "  - {name: ot, op: transpose, inputs: [o], output: ot, perm: [1, 0, 2]}\n"
        << (causal ? "" : "  - {name: merge, op: reshape, inputs: [ot], output: y, shape: [16, 64]}\n")
        << "outputs: [" << out << "]\n";
    std::string net = ::testing::TempDir() + name + "_net.yaml";
    Outcome c = stc("compile " + path + " -o " + net);
    ASSERT_EQ(c.code, 0) << c.out;
    std::string text = readAll(net);
    EXPECT_EQ(text.find("name: o.cvt"), std::string::npos) << "a converter reorders the output";
    // ot copies o as mix makes it, heads outer: (head, row) -> ot's (row, head), and the DMA takes it so.
    EXPECT_NE(text.find("- {fifo: " + out +
                        ">hbm, dir: out, type: \"itensor<1x1x16xf32, iter_space: [4,16,1]*[1,1,16], "
                        "iter_map: (d0,d1,d2)->(d1,d0,d2)>\"}"),
              std::string::npos)
        << text;
    // In W4A8 a head's row is 16 bytes, a quarter of a beat: written in that order, element by element, it
    // would take longer than the bytes the HBM model counts, so a converter reorders it into whole beats.
    Outcome q = stc("compile " + path + " --set quant=w4a8 -o " + net);
    ASSERT_EQ(q.code, 0) << q.out;
    EXPECT_NE(readAll(net).find("name: o.cvt"), std::string::npos);
    emitAndSimulate(path, name);
    expectBitExact(path, "q_" + name, "--set quant=w4a8", 0.99);
  }
}

TEST(Emit, MlpCsimMatchesTheReference) { emitAndSimulate(model("graphs/mlp.yaml"), "mlp"); }

TEST(Emit, LayernormAndSoftmaxRowsCsimMatchesTheReference) { emitAndSimulate(model("graphs/rows.yaml"), "rows"); }

// Rows with a large mean (100) and a small spread: a variance taken as E[x^2] - mean^2 in f32 would lose
// it to cancellation; the statistics kernel sums around the row's first value instead.
TEST(Emit, LayernormOfRowsWithALargeMeanStaysAccurate) {
  std::string path = ::testing::TempDir() + "ln.yaml", inputs = ::testing::TempDir() + "ln.bin";
  std::ofstream(path) << "graph: ln\n"
                         "inputs: [{name: x, shape: [4, 512]}]\n"
                         "weights: [{name: g, shape: [512]}, {name: b, shape: [512]}]\n"
                         "ops: [{name: norm, op: layernorm, inputs: [x, g, b], output: y}]\n"
                         "outputs: [y]\n";
  std::vector<float> x(4 * 512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 100.0f + 0.5f * static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  std::ofstream(inputs, std::ios::binary).write(reinterpret_cast<const char*>(x.data()), static_cast<long>(x.size() * 4));
  emitAndSimulate(path, "ln", "--inputs " + inputs + " --rtol 1e-4 --atol 1e-4");
}

TEST(Emit, AttentionOverASymbolicCacheCsimMatchesTheReference) {
  emitAndSimulate(model("graphs/attention_decode.yaml"), "attention", "--ctx 24");
  // Its output o, 32 floats a token (P.V's widened tile), is written a beat an iteration after a split.
  std::string dir = ::testing::TempDir() + "emit_attention";
  expectDmaTokensOfOneBeat(dir);
  EXPECT_NE(sources(dir).find("mem[4 * i0 + 2 * i2 + i3] = s_o_hbm_beats.read();"), std::string::npos);
}

TEST(Emit, TwoLayerTinyGpt2CsimMatchesTheReference) {
  emitAndSimulate(model("gpt2-tiny.yaml"), "gpt2_tiny", "--ctx 8");
  std::string readme = readAll(::testing::TempDir() + "emit_gpt2_tiny/README.md");
  EXPECT_NE(readme.find("ctx = 8"), std::string::npos);
  // Two layers: layer 1 reads layer 0's output; expected outputs hold both layers' y, k_new, v_new: int8
  // (the model is W4A8), and f32 from the f32 reference.
  EXPECT_EQ(readAll(::testing::TempDir() + "emit_gpt2_tiny/data/expected.bin").size(), 2u * 3 * 64);
  EXPECT_EQ(readAll(::testing::TempDir() + "emit_gpt2_tiny/data/expected_f32.bin").size(), 2u * 3 * 64 * 4);
}

TEST(Emit, TwoLayerTinyGpt2InF32OnRequest) {
  emitAndSimulate(model("gpt2-tiny.yaml"), "gpt2_tiny_f32", "--ctx 8 --set quant=none");
  EXPECT_EQ(readAll(::testing::TempDir() + "emit_gpt2_tiny_f32/data/expected.bin").size(), 2u * 3 * 64 * 4);
}

// The host's decode loop appends each token's keys and values to the layer's caches and advances ctx up
// to its maximum; every buffer is sized for ctx_max. layout::append_* is checked here against the cache
// shapes the model builder gives (keys [heads, head_dim, ctx], values [heads, ctx, head_dim]; gpt2-tiny:
// 4 heads of 16), in f32 exactly and under W4A8 with the new entry requantised to the cache's scale.
TEST(Emit, HostAppendsEachTokensKeysAndValuesToTheCaches) {
  const char* check = R"(#include <cstdio>
#include "layout.h"
int main() {
  const int ctx = 5, H = 4, dh = 16;
  std::vector<T> k(layout::elems_k_cache(ctx)), v(layout::elems_v_cache(ctx));
  std::vector<T> kn(layout::elems_k_new(ctx)), vn(layout::elems_v_new(ctx));
  for (size_t i = 0; i < k.size(); ++i) k[i] = T(i % 97), v[i] = T(i % 89);
  for (size_t i = 0; i < kn.size(); ++i) kn[i] = T(100 + i % 27), vn[i] = T(-100 - int(i % 27));
  std::vector<T> k2 = layout::append_k_cache(k, kn, ctx), v2 = layout::append_v_cache(v, vn, ctx);
  // The caches have room for the token the layer attends to (kv_append): ctx + 1 positions before, ctx + 2
  // after, the new entry at ctx and the room after it empty.
  int bad = k.size() != size_t(H * dh * (ctx + 1)) || k2.size() != size_t(H * dh * (ctx + 2)) || v2.size() != k2.size();
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < dh; ++j)
      for (int c = 0; c <= ctx + 1; ++c) {
        T wantK = c < ctx ? k[(h * dh + j) * (ctx + 1) + c] : c == ctx ? NEW(kn[h * dh + j], k_new, k_cache) : T(0);
        T wantV = c < ctx ? v[(h * (ctx + 1) + c) * dh + j] : c == ctx ? NEW(vn[h * dh + j], v_new, v_cache) : T(0);
        bad += k2[(h * dh + j) * (ctx + 2) + c] != wantK;
        bad += v2[(h * (ctx + 2) + c) * dh + j] != wantV;
      }
  std::printf("append: %d wrong\n", bad);
  return bad != 0;
}
)";
  for (bool quant : {false, true}) {
    std::string dir = fresh(quant ? "q_append" : "append");
    Outcome e = stc("emit " + model("gpt2-tiny.yaml") + " -o " + dir + (quant ? "" : " --set quant=none"));
    ASSERT_EQ(e.code, 0) << e.out;
    std::string host = readAll(dir + "/host/host.cpp");
    EXPECT_NE(host.find("int ctx = 16;"), std::string::npos);
    EXPECT_NE(host.find("const int ctx_min = 1, ctx_max = 64;"), std::string::npos);
    EXPECT_NE(host.find("cache_k_cache[layer] = layout::append_k_cache(cache_k_cache[layer], got, ctx);"),
              std::string::npos);
    EXPECT_NE(host.find("layout::pack_load_v_cache_s0(cache_v_cache[layer].data(), packed.data(), ctx + 1);"),
              std::string::npos)
        << host;
    EXPECT_NE(host.find("++ctx;"), std::string::npos);
    EXPECT_EQ(host.find("bo.read(got.data());"),
              std::string::npos);  // reads its own size of a ctx_max buffer
    Outcome syntax =
        shell("g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I" STC_SOURCE_DIR "/tests/emit/xrt_stub " +
              dir + "/host/host.cpp");
    EXPECT_EQ(syntax.code, 0) << syntax.out;
    std::ofstream(dir + "/append_check.cpp") << check;
    std::string defines = quant ? " -DT=st_i8 '-DNEW(x,f,c)=st_q8(static_cast<float>(x) * layout::kScale_##f "
                                  "* layout::kInverse_##c)'"
                                : " -DT=float '-DNEW(x,f,c)=x'";
    Outcome run = shell("g++ -std=c++17 -Wall -I" + dir + "/src" + defines + " " + dir +
                        "/append_check.cpp -o " + dir + "/append_check && " + dir + "/append_check");
    EXPECT_EQ(run.code, 0) << run.out;
    EXPECT_NE(run.out.find("append: 0 wrong"), std::string::npos) << run.out;
  }
}

// Compute units go to the SLR whose share of the platform's per_slr budgets holds them (connectivity.cfg
// and the README say which and why); a group no SLR holds is split into one kernel per SLR (see
// Compiler.GroupsNoSlrHoldsAreSplitAtSlrBoundaries), and one left whole (slr_split=off) is unpinned, and
// stc emit says so.
TEST(Emit, ComputeUnitsArePlacedInSlrsThatHoldThem) {
  std::string dir = fresh("slr_mlp");
  Outcome small = stc("emit " + model("graphs/mlp.yaml") + " --set quant=w4a8 -o " + dir);
  ASSERT_EQ(small.code, 0) << small.out;
  EXPECT_NE(readAll(dir + "/connectivity.cfg").find("slr=mlp_g0_1:SLR0\n"), std::string::npos);
  EXPECT_NE(readAll(dir + "/README.md").find("  - SLR0: DSP "), std::string::npos);
  EXPECT_EQ(small.out.find("placement:"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/src/parts.h"));
  dir = fresh("slr_layer");
  Outcome big = stc("emit " + model("graphs/gpt2_layer.yaml") + " --set slr_split=off -o " + dir);  // f32: 6,054 DSPs
  ASSERT_EQ(big.code, 0) << big.out;
  std::string cfg = readAll(dir + "/connectivity.cfg");
  EXPECT_EQ(cfg.find("slr="), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("fits no SLR's remaining share and no cut of it fits the SLRs: not pinned"), std::string::npos) << cfg;
  EXPECT_NE(big.out.find("placement: gpt2_layer_g0_1 (DSP "), std::string::npos) << big.out;
}

// The number in `text` after the first `key` ("SLR1: DSP 2592, LUT ...", "DSP " -> 2592), or -1.
int64_t after(const std::string& text, const std::string& key) {
  size_t at = text.find(key);
  return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + key.size());
}

// The f32 mlp (5,172 DSPs) fits no SLR whole: one kernel per SLR, `up` in SLR1 and `act` and `down` in
// SLR2 (Compiler.GroupsNoSlrHoldsAreSplitAtSlrBoundaries says why), joined by one AXI4-Stream link, h>act:
// the writer's port, a stream_connect FIFO of at least the network's depth (16 to 32,768 in powers of two),
// the reader's port, both registered. Each part holds its DMAs' ports and is pinned to its SLR; the C
// simulation runs the parts one after another and passes, make dfsim runs them together at the emitted
// depths (the link at the network's), the trace conforms to the network, and the host starts both parts
// and then waits for both.
TEST(Emit, GroupsNoSlrHoldsAreOneKernelPerSlrJoinedByStreams) {
  emitAndSimulate(model("graphs/mlp.yaml"), "slr_split");
  std::string dir = fresh("slr_split_text");
  ASSERT_EQ(stc("emit " + model("graphs/mlp.yaml") + " -o " + dir).code, 0);
  std::string cfg = readAll(dir + "/connectivity.cfg");
  EXPECT_NE(cfg.find("nk=mlp_g0_slr1:1:mlp_g0_slr1_1\nnk=mlp_g0_slr2:1:mlp_g0_slr2_1\n"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("slr=mlp_g0_slr1_1:SLR1\nslr=mlp_g0_slr2_1:SLR2\n"), std::string::npos) << cfg;
  stc::Network net = stc::parseNetwork(readAll(dir + "/network.yaml"), dir + "/network.yaml");
  int64_t depth = net.fifos.at(static_cast<size_t>(net.findFifo("h>act"))).depth;
  int64_t entries = 16;
  while (entries < depth) entries *= 2;
  EXPECT_NE(cfg.find("stream_connect=mlp_g0_slr1_1.s_h_act:mlp_g0_slr2_1.s_h_act:" + std::to_string(entries) + "\n"),
            std::string::npos)
      << cfg;
  EXPECT_EQ(cfg.find("stream_connect="), cfg.rfind("stream_connect="));  // one link
  // Every DMA port in the part that has its task, each port once.
  for (const stc::Task& t : net.tasks) {
    if (!t.isDma()) continue;
    std::string top = "mlp_g0_slr" + std::to_string(t.slr) + "_1.";
    EXPECT_NE(cfg.find("sp=" + top), std::string::npos);
  }
  std::string up = readAll(dir + "/src/mlp_g0_slr1.cpp"), down = readAll(dir + "/src/mlp_g0_slr2.cpp");
  for (const std::string* src : {&up, &down}) {
    EXPECT_NE(src->find("#pragma HLS INTERFACE axis port=s_h_act register_mode=both register"), std::string::npos);
    EXPECT_NE(src->find("hls::stream<Tok<16>>& s_h_act)"), std::string::npos);  // the last parameter
  }
  EXPECT_TRUE(mentions(up, "up_task"));
  EXPECT_FALSE(mentions(up, "down_task"));
  EXPECT_TRUE(mentions(down, "down_task"));
  EXPECT_NE(down.find("act_task(s_h_act, "), std::string::npos);  // act reads the link itself
  // The host: a run per part made once a layer with its buffers; each call sets the symbols, starts both
  // and then waits for both; the stream ports are left to the link.
  std::string host = readAll(dir + "/host/host.cpp");
  size_t start1 = host.find(".start();  // mlp_g0_slr1\n"), start2 = host.find(".start();  // mlp_g0_slr2\n"),
         wait1 = host.find(".wait();  // mlp_g0_slr1\n");
  EXPECT_NE(host.find("runs[layer].emplace_back(k_mlp_g0_slr1);"), std::string::npos) << host;  // made once a layer
  ASSERT_NE(start1, std::string::npos) << host;
  EXPECT_LT(start1, start2);
  EXPECT_LT(start2, wait1);
  // Each SLR holds its part within its share (the README's per-SLR lines against the platform's).
  std::string readme = readAll(dir + "/README.md");
  for (int s = 1; s <= 2; ++s) {
    std::string line = readme.substr(readme.find("  - SLR" + std::to_string(s) + ": DSP "));
    line = line.substr(0, line.find('\n'));
    std::string used = line.substr(0, line.find(" of DSP ")), share = line.substr(line.find(" of DSP "));
    for (const char* key : {"DSP ", "LUT ", "BRAM_18K ", "URAM "}) {
      EXPECT_GE(after(used, key), 0) << line;
      EXPECT_LE(after(used, key), after(share, key)) << line;
    }
    EXPECT_EQ(line.find("over its share"), std::string::npos) << line;
  }
  EXPECT_NE(readme.find("split (stc compile) into one kernel per SLR"), std::string::npos);
}

// A matmul input read from HBM once per column panel (its buffer beyond the on-chip budget; see
// Compiler.RepeatsBeyondTheBudgetAreReadFromHbmAgain): the DMA walks the tensor again for each panel.
TEST(EmitW4A8, InputsReadAgainPerPanelAreBitExact) {
  std::string path = ::testing::TempDir() + "mlp_rows.yaml";
  std::string mlp = readAll(model("graphs/mlp.yaml"));
  mlp.replace(mlp.find("shape: [1, 256]"), 15, "shape: [64, 256]");
  std::ofstream(path) << mlp;
  expectBitExact(path, "q_reread", "--set quant=w4a8 --set onchip_budget_bytes=100000", 0.99);
  emitAndSimulate(path, "reread", "--set onchip_budget_bytes=40000");  // f32, x striped and read again too
}

// Gate and up hand their column panels to silu and the product as made, in blocks of 4 rows, and one
// converter takes the product's panels into down's blocks of 8 (Compiler.ElementwiseOpsWalkTheColumn-
// PanelsTheirMatmulsMake): the csim equals the references, bit for bit in W4A8, and in f32.
TEST(EmitW4A8, ElementwiseOpsOverColumnPanelsAreBitExact) {
  std::string path = model("graphs/gated_mlp.yaml");
  const std::string blocks = " --set row_block.gate=4 --set row_block.up=4 --set row_block.down=8";
  expectBitExact(path, "q_gated", "--set quant=w4a8" + blocks, 0.99);
  emitAndSimulate(path, "gated_f32", blocks.substr(1));
}

TEST(EmitW4A8, GraphsOfEveryOpAreBitExact) {
  expectBitExact(model("graphs/mlp.yaml"), "q_mlp", "--set quant=w4a8", 0.99);
  expectBitExact(model("graphs/rows.yaml"), "q_rows", "--set quant=w4a8", 0.99);
  expectBitExact(model("graphs/misc_ops.yaml"), "q_misc", "--set quant=w4a8", 0.99);
  expectBitExact(model("graphs/matmul_chain.yaml"), "q_chain", "--set quant=w4a8", 0.99);  // int4 through converters
  expectBitExact(model("graphs/attention_decode.yaml"), "q_attention", "--set quant=w4a8 --ctx 24", 0.99);
  // P.V's output tile widened to the whole head (tn 64: [16, 64] tiles of V, a split to 16 for the store).
  expectBitExact(model("graphs/attention_decode.yaml"), "q_attention_tn", "--set quant=w4a8 --set tn.mix=64 --ctx 24", 0.99);
  expectBitExact(model("graphs/gpt2_layer.yaml"), "q_layer", "--set quant=w4a8", 0.99);
}

// A decode layer's attention drained per head (Phase::outer, drainHeldPipelines) is emitted as the network
// times it: the head loop outside the pipelined one, which is not flattened into it and after which make
// dfsim fires what is in flight (GraphsOfEveryOpAreBitExact runs this layer's csim, trace and dfsim).
TEST(EmitW4A8, ADrainedPipelineKeepsItsHeadLoopOutside) {
  std::string dir = fresh("q_drained");
  ASSERT_EQ(stc("emit " + model("graphs/gpt2_layer.yaml") + " --set quant=w4a8 -o " + dir).code, 0);
  stc::Network net = stc::parseNetwork(readAll(dir + "/network.yaml"), "network.yaml");
  int drained = 0;
  for (const stc::Task& t : net.tasks)
    for (const stc::Phase& ph : t.phases) drained += ph.outer == 1;
  EXPECT_EQ(drained, 5);
  std::string src = sources(dir);
  size_t at = src.find("static void scores_task(");
  ASSERT_NE(at, std::string::npos);
  std::string task = src.substr(at, src.find("\n}\n", at) - at);
  size_t outer = task.find("scores_i0: for (int i0 = 0; i0 < 16; ++i0) {");
  size_t inner = task.find("scores: for (long it = 0; it < ");
  ASSERT_NE(outer, std::string::npos) << task;
  ASSERT_NE(inner, std::string::npos) << task;
  EXPECT_LT(outer, inner);
  EXPECT_NE(task.find("#pragma HLS LOOP_FLATTEN off", inner), std::string::npos) << task;
  EXPECT_NE(task.find("ST_DRAIN();", inner), std::string::npos) << task;
  int drains = 0;  // one a drained task, after its pipelined loop
  for (size_t p = src.find("ST_DRAIN();"); p != std::string::npos; p = src.find("ST_DRAIN();", p + 1))
    ++drains;
  EXPECT_EQ(drains, 5);
}

// A causal softmax of 24 rows over 32 keys (the rows the last 24 positions: row r keeps keys 0 .. r + 8)
// reading a reshape of the scores, so that its kernels stream the tensor the view reads: csim equals the
// references, which mask by the softmax's own shape, in f32 and bit for bit in W4A8.
TEST(Emit, CausalSoftmaxOverAViewMasksTheKeysPastEachRow) {
  std::string path = ::testing::TempDir() + "causal_view.yaml";
  std::ofstream(path) << "graph: causal_view\n"
                         "inputs:\n"
                         "  - {name: q, shape: [2, 24, 16], dtype: f32}\n"
                         "  - {name: kt, shape: [2, 16, 32], dtype: f32}\n"
                         "ops:\n"
                         "  - {name: scores, op: matmul, inputs: [q, kt], output: s}\n"
                         "  - {name: heads, op: reshape, inputs: [s], output: s4, shape: [1, 2, 24, 32]}\n"
                         "  - {name: probs, op: softmax, inputs: [s4], output: p, axis: -1, causal: true}\n"
                         "outputs: [p]\n";
  emitAndSimulate(path, "causal_view");
  expectBitExact(path, "q_causal_view", "--set quant=w4a8", 0.99);
}

// Blocks exported from torch with their own weights: the documented bound is a cosine of at least 0.98.
TEST(EmitW4A8, TorchBlocksStayWithinTheDocumentedBound) {
  expectBitExact(model("onnx/mlp.onnx"), "q_onnx_mlp", "--set quant=w4a8", 0.98);
  expectBitExact(model("onnx/gpt2_block.onnx"), "q_onnx_gpt2", "--set quant=w4a8", 0.98);
  expectBitExact(model("onnx/llama_block.onnx"), "q_onnx_llama", "--set quant=w4a8", 0.98);
  // nanoGPT's masked_fill (a causal softmax now), and erf, pow, sqrt, abs, max, min on their own
  expectBitExact(model("onnx/causal_attention.onnx"), "q_onnx_causal", "--set quant=w4a8", 0.98);
  expectBitExact(model("onnx/pointwise.onnx"), "q_onnx_pointwise", "--set quant=w4a8", 0.98);
}

TEST(EmitW4A8, TorchIdiomsStayWithinTheDocumentedBound) {
  // Selects over comparisons and bounds (the comparisons see int8 values, so a value near a threshold
  // can fall on the other side: cosine 0.988), and einsum attention with a finfo.min mask (a causal
  // softmax).
  expectBitExact(model("onnx/select_mlp.onnx"), "q_onnx_select", "--set quant=w4a8", 0.98);
  expectBitExact(model("onnx/einsum_attention.onnx"), "q_onnx_einsum", "--set quant=w4a8", 0.98);
  // softplus and log (tables of their 256 int8 results), a rope table forward computes, a sliding window.
  expectBitExact(model("onnx/tiled_mlp.onnx"), "q_onnx_tiled", "--set quant=w4a8", 0.99);
  expectBitExact(model("onnx/rope_in_forward.onnx"), "q_onnx_rope_forward", "--set quant=w4a8", 0.98);
  expectBitExact(model("onnx/sliding_window_attention.onnx"), "q_onnx_sliding", "--set quant=w4a8", 0.98);
  // BERT's padding mask, finfo.min added to peaked scores: calibrated without the padded keys, whose -128
  // is -inf (reference/quantized.h, "masks"). The fill set the scores' scale before, every score was 0
  // and each query weighed the kept keys evenly: cosine 0.799.
  expectBitExact(model("onnx/padding_mask_attention.onnx"), "q_onnx_padding_mask", "--set quant=w4a8", 0.99);
  EXPECT_NE(sources(::testing::TempDir() + "emit_q_onnx_padding_mask").find("st_softmax_stats_masked("),
            std::string::npos);
}

// Blocks of other model families as reference implementations write them (tools/export_onnx_models.py):
// Qwen2's rotary table computed in forward (a matmul of constants), GPT-J's interleaved rotary (slices with
// a step, as views and slices), Falcon's k and v taken by a list index (Gather as a slice) of the fused
// multi-query projection. Each bit for bit in W4A8; the strided views in f32 against the reference too.
TEST(EmitW4A8, OtherFamiliesBlocksMatchTheReferences) {
  for (const char* name : {"qwen2_block", "gptj_block", "falcon_block"}) {
    SCOPED_TRACE(name);
    expectBitExact(model(std::string("onnx/") + name + ".onnx"), std::string("q_") + name, "--set quant=w4a8",
                   0.99);
  }
  emitAndSimulate(model("onnx/gptj_block.onnx"), "f_gptj_block");
}

// An embedding table that an LM head also reads (tied embeddings) stays int8: the lookup copies its rows
// and the head multiplies by it as an int8 weight (one constant multiplier, no epilogue).
TEST(EmitW4A8, ATiedEmbeddingTableStaysInt8) {
  std::string path = ::testing::TempDir() + "tied.yaml";
  std::ofstream(path) << "graph: tied\n"
                         "inputs: [{name: ids, shape: [4], dtype: i32}]\n"
                         "weights: [{name: table, shape: [128, 32]}, {name: g, shape: [32]}]\n"
                         "ops:\n"
                         "  - {name: embed, op: embedding, inputs: [ids, table], output: e}\n"
                         "  - {name: norm, op: rmsnorm, inputs: [e, g], output: n}\n"
                         "  - {name: head, op: matmul, inputs: [n, table], output: logits, transpose_b: 1}\n"
                         "outputs: [logits]\n";
  expectBitExact(path, "q_tied", "--set quant=w4a8", 0.98);
  EXPECT_EQ(sources(::testing::TempDir() + "emit_q_tied").find("st_w4("), std::string::npos);
}


TEST(EmitW4A8, KernelsMultiplyIntegersAndStreamPackedWeights) {
  std::string dir = fresh("q_text");
  ASSERT_EQ(stc("emit " + model("graphs/mlp.yaml") + " --set quant=w4a8 -o " + dir).code, 0);
  std::string src = sources(dir);
  EXPECT_NE(src.find("st_i32 acc["), std::string::npos);
  EXPECT_NE(src.find("sum += static_cast<st_i32>(a.v[k]) * st_w4(w.v, "), std::string::npos);
  EXPECT_EQ(src.find("float acc["), std::string::npos);
  // Every stream carries integers but the epilogues' f32 multipliers and offsets.
  std::istringstream lines(src);
  int floatStreams = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find("hls::stream<Tok<") != std::string::npos && line.find(">> s_") != std::string::npos &&
        line.find(", st_") == std::string::npos) {
      ++floatStreams;
      EXPECT_NE(line.find("epilogue"), std::string::npos) << line;
    }
  // up's and down's, each striped in four (a quarter of their weights' 16 stripes: 8 KiB beside 128 KiB),
  // each stripe a 512-bit DMA word split into 8-float tokens
  EXPECT_EQ(floatStreams, 16);
  EXPECT_NE(src.find("hls::stream<Tok<64, st_u8>>"), std::string::npos);  // 512-bit DMA words: 128 int4 weights
  // The DMAs read 512-bit words (Emit.DmaPortsMoveWhole512BitBeats): int4 weights, int8 activations, and
  // the epilogues' 1,024-bit tokens (32 floats) in four stripes; int8 activations in two beats, which the
  // DMA writes a beat an iteration for a join to make the tokens.
  EXPECT_NE(src.find("const Tok<64, st_u8>* "), std::string::npos);
  EXPECT_NE(src.find("const Tok<64, st_i8>* "), std::string::npos);
  EXPECT_EQ(src.find("const st_u8* "), std::string::npos);
  EXPECT_NE(src.find("_beats.write(mem[t * 2 + i2]);"), std::string::npos);
  expectDmaTokensOfOneBeat(dir);
}

// Every DMA port whose accesses are whole aligned beats is typed as the 512-bit beat (Tok<512 / bits, T>)
// and its loop moves one beat an iteration: as many iterations as the network's DMA moves bytes / 64, so
// a DMA token of 512 bits takes one cycle as the simulator says (a widened read used to take 4 or 16), and
// the m_axi depth counts beats. Other ports keep their elements and say why.
void expectBeatPorts(const std::string& dir, int minBeatPorts, int minElementPorts, const stc::Bindings& maxima = {}) {
  std::string src = sources(dir), cfgPath = dir + "/network.yaml";
  stc::Network n = stc::parseNetwork(readAll(cfgPath), cfgPath);
  int beatPorts = 0, elementPorts = 0;
  for (const stc::Task& t : n.tasks) {
    if (!t.isDma()) continue;
    size_t at = src.find("// " + t.name + ": DMA ");
    ASSERT_NE(at, std::string::npos) << t.name;
    std::string fn = src.substr(at, src.find("\n}\n", at) - at);
    std::string signature = fn.substr(0, fn.find(") {"));
    std::string port;
    for (char c : t.name) port += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    size_t pragma = src.find("#pragma HLS INTERFACE m_axi port=" + port + " ");
    ASSERT_NE(pragma, std::string::npos) << port;
    int64_t depth = std::stoll(src.substr(src.find("depth=", pragma) + 6));
    int64_t bytes = t.bytes.eval(maxima);
    size_t mem = signature.find("* mem"), tok = signature.rfind(" Tok<", mem);
    if (tok != std::string::npos && signature.find('&', tok) > mem) {  // the memory argument, not a stream
      ++beatPorts;
      int lanes = std::stoi(signature.substr(tok + 5));
      int bits = signature.find("Tok<" + std::to_string(lanes) + ">* mem") != std::string::npos ? 32 : 8;
      EXPECT_EQ(lanes * bits, 512) << signature;
      EXPECT_NE(fn.find(", a 512-bit beat an access"), std::string::npos) << fn;
      size_t first = fn.find("mem["), loop = fn.find("for (long it = 0; it < ");
      ASSERT_NE(first, std::string::npos) << fn;
      ASSERT_NE(loop, std::string::npos) << fn;
      EXPECT_EQ(fn.find("mem[", first + 1), std::string::npos) << fn;  // one access an iteration,
      EXPECT_EQ(fn.find("for (int j", loop), fn.find("for (int j", first)) << fn;  // not in an element loop
      std::string count = fn.substr(loop + 23, fn.find(';', loop + 23) - loop - 23);
      if (count.find_first_not_of("0123456789") == std::string::npos) {  // a constant count: a beat an iteration
        EXPECT_EQ(std::stoll(count), bytes / 64) << fn;
      }
      EXPECT_EQ(bytes % 64, 0) << t.name;
      if (signature.find("const ") != std::string::npos) {  // a write's depth covers the whole tensor
        EXPECT_EQ(depth, bytes / 64) << t.name;
      }
    } else {
      ++elementPorts;
      EXPECT_NE(fn.find("; element port: "), std::string::npos) << fn.substr(0, 200);
    }
  }
  EXPECT_GE(beatPorts, minBeatPorts) << dir;
  EXPECT_GE(elementPorts, minElementPorts) << dir;
}

TEST(Emit, DmaPortsMoveWhole512BitBeats) {
  // W4A8: int8 x and the f32 epilogues in two beats a token, int4 weight stripes, int8 y packed four tokens a
  // beat into its row-major tensor.
  std::string q = fresh("beats_q");
  ASSERT_EQ(stc("emit " + model("graphs/mlp.yaml") + " --set quant=w4a8 -o " + q).code, 0);
  expectBeatPorts(q, 10, 0);
  std::string src = sources(q);
  // x's 1,024-bit tokens: the DMA writes beats, one an iteration, and a join makes the tokens.
  EXPECT_NE(src.find("static void load_x_task(hls::stream<Tok<64, st_i8>>& s_x_beats, const Tok<64, st_i8>* mem)"),
            std::string::npos);
  EXPECT_NE(src.find("s_x_beats.write(mem[t * 2 + i2]);"), std::string::npos);
  EXPECT_NE(src.find("// join_x: 2 512-bit beats into one token\nstatic void join_x_task(hls::stream<Tok<64, st_i8>>& "
                     "s_x_beats, hls::stream<Tok<128, st_i8>>& s_x_hbm)"),
            std::string::npos);
  expectDmaTokensOfOneBeat(q);
  EXPECT_NE(src.find("mem[i1] = s_y_hbm_wide.read();"), std::string::npos);
  // f32, 64 rows, two fused groups: the tensor one stores row-major and the next reads (32 floats a token,
  // two beats) goes through beat ports too; biases widened to 512-bit tokens, one a beat.
  std::string path = ::testing::TempDir() + "mlp_beats.yaml";
  std::string mlp = readAll(model("graphs/mlp.yaml"));
  mlp.replace(mlp.find("shape: [1, 256]"), 15, "shape: [64, 256]");
  std::ofstream(path) << mlp;
  emitAndSimulate(path, "beats_f32", "--set onchip_budget_bytes=17000");  // (the groups part at g)
  std::string f = ::testing::TempDir() + "emit_beats_f32";
  expectBeatPorts(f, 10, 0);
  std::string fsrc = sources(f);
  EXPECT_NE(fsrc.find("mem[64 * i0 + i1] = s_g_hbm.read();"), std::string::npos);
  EXPECT_NE(fsrc.find("s_g_beats.write(mem[64 * i0 + 2 * i2 + i3]);"), std::string::npos);  // a join makes its tokens
  expectDmaTokensOfOneBeat(f);
  EXPECT_NE(fsrc.find("_wide.write(mem[t]);"), std::string::npos);
  // A column [16, 1] written a value a token, 16 tokens a 512-bit word (its loop of one iteration inside),
  // and an embedding lookup, which reads rows at token ids through element ports.
  std::string misc = fresh("beats_misc");
  ASSERT_EQ(stc("emit " + model("graphs/misc_ops.yaml") + " -o " + misc).code, 0);
  expectBeatPorts(misc, 4, 1);
  EXPECT_NE(sources(misc).find("mem[i0] = s_z_hbm_wide.read();"), std::string::npos);
  EXPECT_NE(sources(misc).find("; element port: an embedding lookup reads rows at token ids"), std::string::npos);
  // A one-value int8 scale is narrower than a beat and not widened: an element port, which says so.
  std::string tiny = fresh("beats_tiny");
  ASSERT_EQ(stc("emit " + model("gpt2-tiny.yaml") + " -o " + tiny).code, 0);
  expectBeatPorts(tiny, 40, 1, {{"ctx", 64}});
  std::string tinySrc = sources(tiny);
  size_t scaleAt = tinySrc.find("DMA read of 'scale' from HBM[");  // (on the channel the assignment gives it)
  ASSERT_NE(scaleAt, std::string::npos);
  EXPECT_EQ(tinySrc.find("]; element port: its tokens of 8 bits are not whole 512-bit beats\nstatic void "
                         "load_scale_task(hls::stream<Tok<1, st_i8>>& s_scale_hbm, const st_i8* mem)",
                         scaleAt),
            tinySrc.find(']', scaleAt));
}

// The ports of one kernel on one HBM pseudo-channel that move 512-bit beats share an m_axi bundle, each
// on a channel of its own (UG1399, "M_AXI Channels": its own load or store unit and AXI ID), so the kernel
// has one AXI master per pseudo-channel it uses instead of one per port. gpt2-tiny's layer reads no tensor
// it stores (every read is a packed input, weight or cache), so every such pair shares; a port alone on
// its channel, and an element port, keep a bundle named after themselves.
TEST(EmitW4A8, PortsOnOneChannelShareAnAxiMaster) {
  std::string dir = fresh("bundles");
  ASSERT_EQ(stc("emit " + model("gpt2-tiny.yaml") + " -o " + dir).code, 0);
  std::string cfg = readAll(dir + "/connectivity.cfg");
  // The text after `key` up to the first of `stops` (or the end).
  auto field = [](const std::string& line, const std::string& key, const std::string& stops) {
    size_t at = line.find(key);
    if (at == std::string::npos) return std::string();
    at += key.size();
    return line.substr(at, line.find_first_of(stops, at) - at);
  };
  int ports = 0, masters = 0, shared = 0;
  for (const auto& e : fs::directory_iterator(dir + "/src")) {
    if (e.path().extension() != ".cpp") continue;
    std::string top = e.path().stem().string(), src = readAll(e.path().string());
    size_t sig = src.find("extern \"C\" void " + top + "(");
    ASSERT_NE(sig, std::string::npos) << top;
    std::string signature = src.substr(sig, src.find('\n', sig) - sig);
    std::map<std::string, std::string> type;  // argument -> pointee: Tok<...> (512-bit beats) or an element
    for (size_t star = signature.find("* "); star != std::string::npos; star = signature.find("* ", star + 1)) {
      std::string name = signature.substr(star + 2, signature.find_first_of(",)", star) - star - 2);
      size_t open = signature[star - 1] == '>' ? signature.rfind("Tok<", star) : signature.rfind(' ', star) + 1;
      type[name] = signature.substr(open, star - open);
    }
    struct Port {
      std::string name, bundle;
      int channel, hbm;
    };
    std::map<std::string, std::vector<Port>> bundles;
    std::vector<Port> all;
    std::istringstream lines(src);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("#pragma HLS INTERFACE m_axi port=") == std::string::npos) continue;
      std::string channel = field(line, " channel=", " ");
      Port p{field(line, "port=", " "), field(line, "bundle=", " "), channel.empty() ? -1 : std::stoi(channel),
             std::stoi(field(line, "// HBM[", "]"))};
      bundles[p.bundle].push_back(p);
      all.push_back(p);
    }
    ASSERT_FALSE(all.empty()) << top;
    ports += static_cast<int>(all.size());
    masters += static_cast<int>(bundles.size());
    auto bank = [&](const std::string& arg) {
      std::string key = "sp=" + top + "_1." + arg + ":";
      size_t at = cfg.find(key);
      EXPECT_NE(at, std::string::npos) << key;
      return at == std::string::npos ? std::string() : cfg.substr(at + key.size(), cfg.find('\n', at) - at - key.size());
    };
    for (const auto& [name, members] : bundles) {
      if (members.size() == 1) {  // a bundle of its own, named after it, no channel option
        EXPECT_EQ(name, members[0].name);
        EXPECT_EQ(members[0].channel, -1) << name;
        continue;
      }
      ++shared;
      // One pseudo-channel, each member's sp= that one bank, channels 0..k-1 once each, 512-bit words.
      EXPECT_EQ(name.rfind("gmem" + std::to_string(members[0].hbm), 0), 0u) << name;
      std::set<int> channels;
      for (const Port& p : members) {
        EXPECT_EQ(p.hbm, members[0].hbm) << p.name;
        EXPECT_EQ(bank(p.name), "HBM[" + std::to_string(p.hbm) + "]") << p.name;
        EXPECT_EQ(type.at(p.name).rfind("Tok<", 0), 0u) << p.name << " " << type.at(p.name);
        channels.insert(p.channel);
      }
      EXPECT_EQ(channels.size(), members.size()) << name;
      EXPECT_EQ(*channels.begin(), 0) << name;
      EXPECT_EQ(*channels.rbegin(), static_cast<int>(members.size()) - 1) << name;
    }
    // Every two beat ports of this kernel on one pseudo-channel and one bank share a bundle.
    for (const Port& a : all)
      for (const Port& b : all)
        if (a.hbm == b.hbm && type.at(a.name).rfind("Tok<", 0) == 0 && type.at(b.name).rfind("Tok<", 0) == 0 &&
            bank(a.name) == "HBM[" + std::to_string(a.hbm) + "]" && bank(b.name) == bank(a.name)) {
          EXPECT_EQ(a.bundle, b.bundle) << top << ": " << a.name << " and " << b.name;
        }
  }
  EXPECT_GT(shared, 0);
  EXPECT_LT(masters, ports);
}

// Qwen's MLP weight tiles take more bytes a cycle than a 512-bit beat per stripe: each stripe's DMA moves
// beats, one an iteration, into a 512-bit FIFO, and a join makes the 1,024-bit tiles the matmul reads
// (before, the DMA tokens were 896 and 1,024 bits wide, which one m_axi access a cycle cannot move). The
// layer still equals the W4A8 reference bit for bit, its trace conforms to the network, and it runs at the
// emitted depths.
TEST(EmitW4A8, WideWeightTilesReachTheirKernelsInWholeBeats) {
  expectBitExact(model("qwen.yaml"), "qwen_beats", "--layers 1 --ctx 16", 0.99);
  std::string dir = ::testing::TempDir() + "emit_qwen_beats";
  expectDmaTokensOfOneBeat(dir);
  std::string src = sources(dir);
  EXPECT_NE(src.find("static void join_w_down_s0_task(hls::stream<Tok<64, st_u8>>& s_w_down_s0_beats, "
                     "hls::stream<Tok<128, st_u8>>& s_w_down_s0_hbm)"),
            std::string::npos);
  EXPECT_NE(src.find("s_w_down_s0_beats.write(mem[t * 2 + i"), std::string::npos);
}

// The kernels have the structure the network times (UG1399): each phase one flattened loop pipelined at its
// II, with the ports of outer levels read at a row's first iteration and written at its last (no fill and
// drain per row); row sums in integers, whose one-cycle addition lets the recurrence run at II=1.
TEST(EmitW4A8, EveryPhaseIsOneFlattenedLoopAndRowSumsAreIntegers) {
  std::string dir = fresh("q_flat");
  ASSERT_EQ(stc("emit " + model("graphs/rows.yaml") + " --set quant=w4a8 -o " + dir).code, 0);
  std::string rope = fresh("q_flat_rope");  // rope: one loop over the rows and a drain row
  ASSERT_EQ(stc("emit " + model("onnx/llama_block.onnx") + " --set quant=w4a8 -o " + rope).code, 0);
  std::string ropeSrc = sources(rope);
  size_t ropeAt = ropeSrc.find("float row[2][");
  ASSERT_NE(ropeAt, std::string::npos);
  std::string ropeTask = ropeSrc.substr(ropeAt, ropeSrc.find("\n}\n", ropeAt) - ropeAt);
  EXPECT_EQ(ropeTask.find("for (long it"), ropeTask.rfind("for (long it")) << ropeTask;  // one loop
  EXPECT_EQ(ropeTask.find("for (int t = 0"), std::string::npos) << ropeTask;
  std::string src = sources(dir);
  std::istringstream lines(src);
  std::string previous;
  int pipelines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("#pragma HLS PIPELINE") != std::string::npos) {
      ++pipelines;
      EXPECT_NE(previous.find(": for (long it = 0; it < "), std::string::npos) << previous;
    }
    previous = line;
  }
  EXPECT_GT(pipelines, 5);
  EXPECT_NE(src.find("st_i64 s1 = 0, s2 = 0;"), std::string::npos);
  EXPECT_NE(src.find("st_layernorm_stats(s1, s2, "), std::string::npos);
  EXPECT_EQ(src.find("s1 += v;"), std::string::npos);          // no f32 recurrence in the layernorm
  EXPECT_EQ(src.find("_i1: for (int i1"), std::string::npos);  // no loop left inside another pipelined one
  EXPECT_EQ(src.find("(void)"), std::string::npos);            // a task takes only the symbols it uses
}

// No W4A8 kernel keeps a float recurrence: the matmuls accumulate int32, the row statistics and reductions
// integer sums, softmax a block floating point sum in integers (st_numeric.h). At lane_ii=1 every pipelined
// loop holds II=1 (otherwise the kernels of f32 lanes share their operators over the II the search chose).
TEST(EmitW4A8, NoPipelinedLoopCarriesAFloatRecurrence) {
  for (const char* graph : {"graphs/rows.yaml", "graphs/gpt2_layer.yaml", "graphs/attention_decode.yaml",
                            "graphs/misc_ops.yaml"}) {
    std::string chosen = fresh("q_recurrence_chosen");
    ASSERT_EQ(stc("emit " + model(graph) + " --set quant=w4a8 -o " + chosen).code, 0) << graph;
    for (const FloatRecurrence& r : floatRecurrences(sources(chosen)))
      ADD_FAILURE() << graph << " (lane II chosen): II=" << r.ii << ": " << r.line;
    std::string dir = fresh("q_recurrence");
    ASSERT_EQ(stc("emit " + model(graph) + " --set quant=w4a8 --set lane_ii=1 -o " + dir).code, 0) << graph;
    std::string src = sources(dir);
    for (const FloatRecurrence& r : floatRecurrences(src))
      ADD_FAILURE() << graph << ": II=" << r.ii << ": " << r.line;
    EXPECT_EQ(src.find("#pragma HLS PIPELINE II=1"), src.find("#pragma HLS PIPELINE II=")) << graph;
    EXPECT_EQ(src.find("PIPELINE II=2"), std::string::npos) << graph;
    if (std::string(graph) != "graphs/misc_ops.yaml") {  // every graph but misc has a softmax
      EXPECT_NE(src.find("st_expsum_add(e_new, s_new, e_tok, s_tok);"), std::string::npos) << graph;
      EXPECT_NE(src.find("static const unsigned exp_mantissa[256] = {"), std::string::npos) << graph;
    }
  }
}

// f32 designs keep their float recurrences, each at an II (times the distance declared to HLS) of at
// least a float addition's 7 cycles: the output-stationary matmul's accumulators (II=7), an
// input-streaming matmul's (one tile in `tiles` each iteration), the row sums (7) and softmax's running
// sum (a multiply and an add, 11). A token's terms are summed by a tree, not a chain.
TEST(Emit, FloatRecurrencesRunAtTheIiOfAFloatAddition) {
  int found = 0;
  for (const char* graph : {"graphs/rows.yaml", "graphs/gpt2_layer.yaml", "graphs/attention_decode.yaml",
                            "graphs/misc_ops.yaml", "graphs/mlp.yaml"}) {
    std::string dir = fresh("f_recurrence");
    ASSERT_EQ(stc("emit " + model(graph) + " -o " + dir).code, 0) << graph;
    std::string src = sources(dir);
    for (const FloatRecurrence& r : floatRecurrences(src)) {
      ++found;
      EXPECT_GE(r.ii, 7) << graph << ": " << r.line;
    }
    EXPECT_EQ(src.find("sum += a.v[k] * w.v["), std::string::npos) << graph;
  }
  EXPECT_GT(found, 10);  // the checker sees them
  // mlp's down projection streams its input: 16 tiles of accumulators, II=1 at distance 16.
  std::string mlp = fresh("f_mlp");
  ASSERT_EQ(stc("emit " + model("graphs/mlp.yaml") + " -o " + mlp).code, 0);
  bool streaming = false;
  for (const FloatRecurrence& r : floatRecurrences(sources(mlp)))
    streaming = streaming || (r.ii == 16 && r.line.rfind("acc[i", 0) == 0);
  EXPECT_TRUE(streaming);
  std::string dir = fresh("f_rows");
  ASSERT_EQ(stc("emit " + model("graphs/rows.yaml") + " -o " + dir).code, 0);
  std::string src = sources(dir);
  EXPECT_NE(src.find("#pragma HLS PIPELINE II=11"), std::string::npos);  // softmax's statistics
  EXPECT_NE(src.find(" ? 0.0f : s2) + st_tree<16>::sum(b);"), std::string::npos);
}

TEST(EmitW4A8, OneWrongByteFailsTheCsim) {
  std::string dir = fresh("q_mismatch");
  ASSERT_EQ(stc("emit " + model("graphs/rows.yaml") + " --set quant=w4a8 -o " + dir).code, 0);
  std::fstream f(dir + "/data/expected.bin", std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(100);
  char was = 0;
  f.read(&was, 1);
  char wrong = static_cast<char>(was + 1);
  f.seekp(100);
  f.write(&wrong, 1);
  f.close();
  Outcome m = shell("make -s -C " + dir + " csim");
  EXPECT_NE(m.code, 0);
  EXPECT_NE(m.out.find("csim: FAIL: 1 of 2048 int8 outputs differ from the W4A8 reference; first at 100"), std::string::npos)
      << m.out;
}

// GPT-2 medium's layer: bit-exact, and its weights file half a byte per weight plus the epilogues.
TEST(EmitW4A8, Gpt2MediumLayerIsBitExactInHalfAByteAWeight) {
  expectBitExact(model("gpt2.yaml"), "q_gpt2", "--layers 1", 0.99);
  // Weights of a layer: q, k, v, o (1024 x 1024 each), fc (1024 x 4096), proj (4096 x 1024), and 9,216
  // output channels of 8 bytes of epilogue; norms and biases (int8) are a few KiB.
  const double matmulWeights = 4.0 * 1024 * 1024 + 2.0 * 1024 * 4096, channels = 3 * 1024 + 1024 + 4096 + 1024;
  double bytes = static_cast<double>(readAll(::testing::TempDir() + "emit_q_gpt2/data/weights.bin").size());
  EXPECT_GE(bytes, matmulWeights / 2 + 8 * channels);
  EXPECT_LE(bytes - 8 * channels, 0.55 * matmulWeights);
}

TEST(Emit, OnnxBlocksWithTheirOwnWeightsCsimMatchesTheReference) {
  emitAndSimulate(model("onnx/gpt2_block.onnx"), "onnx_gpt2");
  emitAndSimulate(model("onnx/llama_block.onnx"), "onnx_llama");
  emitAndSimulate(model("onnx/causal_attention.onnx"), "onnx_causal");
  emitAndSimulate(model("onnx/pointwise.onnx"), "onnx_pointwise");
  // The weights file holds the ONNX initializers, not random values: the first weight of the GPT-2 block
  // is its first LayerNorm's scale, which torch initialises to ones.
  std::string w = readAll(::testing::TempDir() + "emit_onnx_gpt2/data/weights.bin");
  ASSERT_GE(w.size(), 4u);
  float first;
  std::memcpy(&first, w.data(), 4);
  EXPECT_EQ(first, 1.0f);
}

// Exports written with selects, einsum, a sliding window, repeat, softplus and log, and a rotary table that
// forward computes (tools/export_onnx_models.py): each project's csim equals the reference.
TEST(Emit, TorchIdiomsCsimMatchesTheReference) {
  emitAndSimulate(model("onnx/select_mlp.onnx"), "onnx_select");
  emitAndSimulate(model("onnx/einsum_attention.onnx"), "onnx_einsum");
  emitAndSimulate(model("onnx/sliding_window_attention.onnx"), "onnx_sliding");
  emitAndSimulate(model("onnx/tiled_mlp.onnx"), "onnx_tiled");
  emitAndSimulate(model("onnx/rope_in_forward.onnx"), "onnx_rope_forward");
  // A padding mask of -inf over whole tiles of keys: their softmax's running terms stay finite (no NaN).
  emitAndSimulate(model("onnx/masked_fills.onnx"), "onnx_masked_fills");
  // Views of the input read in their own order: the host packs each DMA's stream from the input's data.
  emitAndSimulate(model("onnx/input_views.onnx"), "onnx_input_views");
  // Grouped heads written with matmul's broadcasting ([b, kv, rep, s, d] against [b, kv, 1, s, d]).
  emitAndSimulate(model("onnx/gqa_broadcast.onnx"), "onnx_gqa_broadcast");
}

// An export with a dynamic sequence axis, fixed at import (--set dim.seq=8): its shape arithmetic folds,
// repeat_kv's copies held a KV head per group, and the project's kernels compute what the reference does. The
// network records the setting, so `stc emit` of the compiled network imports the model the same way.
// A softmax straight after a batched product viewed back to heads (GPT-NeoX's baddbmm: [b * h, s, s] viewed
// [b, h, s, s]) reads the product's stream of fewer loops than its own: its padded row's coordinates are
// counted on its own loops (they were one loop off, the row's index taken for the key tile's, and csim
// differed from the reference from the second row on).
TEST(Emit, ASoftmaxOverAViewOfABatchedProductFindsItsPaddedKeys) {
  std::string network = ::testing::TempDir() + "bmm_view_softmax.yaml";
  ASSERT_EQ(stc("compile " + model("onnx/bmm_view_softmax_seq.onnx") + " -o " + network).code, 0);
  for (int seq : {2, 17}) {
    std::string dir = fresh("bmm_view_softmax_" + std::to_string(seq));
    Outcome e = stc("emit " + network + " --bind seq=" + std::to_string(seq) + " -o " + dir);
    ASSERT_EQ(e.code, 0) << e.out;
    Outcome m = shell("make -s -C " + dir + " csim");
    EXPECT_EQ(m.code, 0) << seq << m.out;
  }
}

TEST(Emit, AnExportWithADynamicAxisFixedAtImport) {
  std::string out = emitAndSimulate(model("onnx/gqa_attention_seq.onnx"), "onnx_gqa_seq", "--set dim.seq=8");
  // The network compiled from it (with `settings`) and emitted (with `binding`) passes its C simulation.
  auto compiledAndEmitted = [](const std::string& settings, const std::string& binding,
                               const std::string& name) {
    std::string network = ::testing::TempDir() + name + ".yaml", dir = fresh(name);
    EXPECT_EQ(stc("compile " + model("onnx/gqa_attention_seq.onnx") + settings + " -o " + network).code, 0);
    Outcome e = stc("emit " + network + binding + " -o " + dir);
    EXPECT_EQ(e.code, 0) << e.out;
    Outcome m = shell("make -s -C " + dir + " csim");
    EXPECT_EQ(m.code, 0) << m.out;
    return readAll(network);
  };
  EXPECT_NE(compiledAndEmitted(" --set dim.seq=8", "", "onnx_gqa_seq_net").find("dim.seq=8"),
            std::string::npos);
  // Without the setting the network keeps the axis a symbol (its mask is causal at every length), and its
  // project, emitted at a binding, passes its C simulation.
  EXPECT_EQ(compiledAndEmitted("", " --bind seq=11", "onnx_gqa_seq_symbolic").find("dim.seq"),
            std::string::npos);
  std::string net = ::testing::TempDir() + "gqa_seq_net.yaml";
  // A model whose mask the import cannot keep symbolic (a sliding window of its own) lists what does not
  // fold and says how to fix the axis.
  Outcome refused = stc("compile " + model("onnx/sliding_window_seq.onnx") + " -o " + net);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.out.find("--set dim.seq=N; --bind NAME=N also fixes an axis where the import needs it)"),
            std::string::npos)
      << refused.out;
  // A graph file writes its sizes: the setting is refused there.
  Outcome graph = stc("compile " + model("graphs/mlp.yaml") + " --set dim.seq=8 -o " + net);
  EXPECT_EQ(graph.code, 1);
  EXPECT_NE(graph.out.find("mlp.yaml: error: --set dim.seq: only an ONNX model's dynamic axes are fixed at import"),
            std::string::npos)
      << graph.out;
}

// Every FIFO of the sized network is one stream with its depth, every DMA one sp= line on its channel.
TEST(Emit, ProjectTextCarriesTheSizedDepthsAndHbmBindings) {
  std::string dir = fresh("text");
  std::string net = ::testing::TempDir() + "text_net.yaml", sized = ::testing::TempDir() + "text_sized.yaml";
  ASSERT_EQ(stc("emit " + model("graphs/attention_decode.yaml") + " --ctx 24 -o " + dir).code, 0);
  ASSERT_EQ(stc("compile " + model("graphs/attention_decode.yaml") + " -o " + net).code, 0);
  // emit sizes for every ctx the kernels take (1..max_ctx), as size-fifos does by default.
  ASSERT_EQ(stc("size-fifos " + net + " -o " + sized).code, 0);
  stc::Network n = stc::parseNetwork(readAll(sized), sized);
  EXPECT_EQ(n.sizedFor.at("ctx"), std::make_pair(int64_t{1}, int64_t{4096}));
  std::string src = sources(dir), cfg = readAll(dir + "/connectivity.cfg");
  // Each FIFO's writer and reader, and the regions a converter moves in one call at ctx's maximum.
  std::map<std::string, std::pair<const stc::Task*, const stc::Task*>> ends;
  std::map<std::string, int64_t> regionsPerCall;
  for (const stc::Task& t : n.tasks) {
    for (const stc::Phase& ph : t.phases)
      for (const stc::Port& p : ph.ports) {
        (p.dir == stc::PortDir::kOut ? ends[p.fifo].first : ends[p.fifo].second) = &t;
        if (p.dir == stc::PortDir::kOut) regionsPerCall[p.fifo] = stc::portTokens(ph, p, {{"ctx", 4096}});
      }
    for (const stc::Port& p : t.dmaPorts) (p.dir == stc::PortDir::kOut ? ends[p.fifo].first : ends[p.fifo].second) = &t;
  }
  auto top = [](const stc::Task& t) {
    return "attention_decode_g0" + (t.slr >= 0 ? "_slr" + std::to_string(t.slr) : std::string()) + "_1";
  };
  int regions = 0, streams = 0, dmas = 0, links = 0;
  for (const stc::Fifo& f : n.fifos) {
    std::string var = "s_";
    for (char c : f.name) var += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    // A stream between two SLRs' kernels: the link's FIFO holds at least its depth.
    const auto& [writer, reader] = ends.at(f.name);
    if (writer->slr != reader->slr) {
      size_t at = cfg.find("stream_connect=" + top(*writer) + "." + var + ":" + top(*reader) + "." + var + ":");
      ASSERT_NE(at, std::string::npos) << f.name << "\n" << cfg;
      std::string line = cfg.substr(at, cfg.find('\n', at) - at);
      EXPECT_GE(std::atoll(line.c_str() + line.rfind(':') + 1), f.depth) << line;
      ++links;
      continue;
    }
    // A converter's buffer: the network's written regions, the one read and the one filled (no more than
    // one call's regions), partitioned.
    int64_t blocks = f.isRegion() ? std::min(f.depth + 2, regionsPerCall.at(f.name)) : 0;
    if (src.find("hls::stream_of_blocks<blk_" + var.substr(2) + ", " + std::to_string(blocks) + "> " +
                 var + ";") != std::string::npos) {
      EXPECT_NE(src.find("#pragma HLS ARRAY_PARTITION variable=" + var + " type="), std::string::npos)
          << f.name;
      ++regions;
      continue;
    }
    std::string pragma = "#pragma HLS STREAM variable=" + var + " depth=" + std::to_string(f.depth) + "\n";
    EXPECT_NE(src.find(pragma), std::string::npos) << f.name << " depth " << f.depth;
    ++streams;
  }
  EXPECT_GT(regions, 0);
  size_t pragmas = 0;
  for (size_t p = src.find("#pragma HLS STREAM"); p != std::string::npos; p = src.find("#pragma HLS STREAM", p + 1)) ++pragmas;
  EXPECT_EQ(pragmas, static_cast<size_t>(streams));
  for (const stc::Task& t : n.tasks) {
    if (!t.isDma()) continue;
    ++dmas;
    std::string port;
    for (char c : t.name) port += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    std::string key = "sp=" + top(t) + "." + port + ":HBM[";
    size_t at = cfg.find(key);
    ASSERT_NE(at, std::string::npos) << t.name;
    EXPECT_EQ(std::stoi(cfg.substr(at + key.size())), t.channel) << t.name;  // HBM[n] or a range from n
    // The bursts and outstanding requests the HBM model simulates: 1024 / 64 = 16 beats, 4 in flight; the
    // depth co-simulation needs: the f32 elements the DMA moves at ctx's maximum (4096; a packed input's
    // stripe has a buffer of its own), times its stripes where it writes a row-major tensor (a stripe
    // writes its part of each token into the whole tensor), in beats of 16 where the port moves beats.
    int64_t stripes = 0;
    size_t dot = t.name.find(".s");
    for (const stc::Task& u : n.tasks)
      stripes +=
          dot == std::string::npos ? u.name == t.name : u.name.compare(0, dot + 2, t.name, 0, dot + 2) == 0;
    int64_t depth = t.bytes.eval({{"ctx", 4096}}) / 4 * (t.kind == stc::TaskKind::kDmaWrite ? stripes : 1);
    if (src.find("Tok<16>* " + port + ",") != std::string::npos || src.find("Tok<16>* " + port + ")") != std::string::npos)
      depth = (depth + 15) / 16;  // a port of 512-bit beats (Emit.DmaPortsMoveWhole512BitBeats)
    EXPECT_NE(src.find("#pragma HLS INTERFACE m_axi port=" + port + " bundle=" + port +
                       " offset=slave depth=" + std::to_string(depth) +
                       " max_widen_bitwidth=512 max_read_burst_length=16 max_write_burst_length=16 "
                       "num_read_outstanding=4 num_write_outstanding=4  // HBM["),
              std::string::npos)
        << port << " depth " << depth;
  }
  EXPECT_GT(dmas, 0);
  // One compute unit per part (f32 at max_ctx 4096, no SLR holds the group), pinned to its SLR.
  std::set<int> slrs;
  for (const stc::Task& t : n.tasks) slrs.insert(t.slr);
  for (int slr : slrs) {
    std::string name = "attention_decode_g0" + (slr >= 0 ? "_slr" + std::to_string(slr) : std::string());
    EXPECT_NE(cfg.find("nk=" + name + ":1:" + name + "_1\n"), std::string::npos) << cfg;
    if (slr >= 0) {
      EXPECT_NE(cfg.find("slr=" + name + "_1:SLR" + std::to_string(slr) + "\n"), std::string::npos) << cfg;
    }
  }
  EXPECT_EQ(links > 0, slrs.size() > 1);
  EXPECT_NE(src.find("#pragma HLS DATAFLOW"), std::string::npos);
  EXPECT_NE(src.find("#pragma HLS INTERFACE s_axilite port=ctx"), std::string::npos);
  // ctx goes only to the tasks that use it: the cache loads (ctx rows) do, the loads of q do not.
  EXPECT_EQ(src.find("(void)ctx"), std::string::npos);
  size_t loadQ = src.find("static void load_q_task(hls::stream<Tok<");
  ASSERT_NE(loadQ, std::string::npos);
  std::string loadQLine = src.substr(loadQ, src.find('\n', loadQ) - loadQ);
  EXPECT_NE(loadQLine.find("const Tok<16>* mem) {"), std::string::npos) << loadQLine;  // no ctx
  EXPECT_NE(src.find("const Tok<16>* mem, int ctx) {"), std::string::npos);
  std::string mk = readAll(dir + "/Makefile");
  for (const char* target : {"\ncsim:", "\nhls:", "\nxclbin:", "\nhost:", "\nrun:", "\nemconfig:",
                             "PLATFORM ?= xilinx_u55c_gen3x16_xdma_3_202210_1", "TARGET ?= hw\n",
                             "KERNEL_FREQ ?= 250\n", "--kernel_frequency $(KERNEL_FREQ)",
                             "XCL_EMULATION_MODE=$(TARGET)", "emconfigutil --platform $(PLATFORM)",
                             "TEMP_DIR := _x.$(TARGET).$(XSA)", "BUILD_DIR := build_dir.$(TARGET).$(XSA)"})
    EXPECT_NE(mk.find(target), std::string::npos) << target;
  // make's own reading of the Makefile: the emulation flow's commands, outputs named by target and platform.
  Outcome dry = shell("make -n -C " + dir + " run TARGET=hw_emu");
  EXPECT_EQ(dry.code, 0) << dry.out;
  for (const char* cmd :
       {"emconfigutil --platform xilinx_u55c_gen3x16_xdma_3_202210_1 --od "
        "_x.hw_emu.xilinx_u55c_gen3x16_xdma_3_202210_1",
        "v++ -c -t hw_emu --platform xilinx_u55c_gen3x16_xdma_3_202210_1 --save-temps --kernel_frequency 250 "
        "-g -k attention_decode_g0",
        "v++ -l -t hw_emu", "-o build_dir.hw_emu.xilinx_u55c_gen3x16_xdma_3_202210_1/streamtensor.xclbin",
        "XCL_EMULATION_MODE=hw_emu ./build/host "
        "build_dir.hw_emu.xilinx_u55c_gen3x16_xdma_3_202210_1/streamtensor.xclbin 1"})
    EXPECT_NE(dry.out.find(cmd), std::string::npos) << cmd << "\n" << dry.out;
  EXPECT_NE(readAll(dir + "/xrt.ini").find("[Debug]\n"), std::string::npos);
  // The project holds the network it was emitted from: the sized one.
  stc::Network held = stc::parseNetwork(readAll(dir + "/network.yaml"), dir + "/network.yaml");
  ASSERT_EQ(held.fifos.size(), n.fifos.size());
  EXPECT_EQ(held.sizedFor, n.sizedFor);
  for (size_t i = 0; i < n.fifos.size(); ++i) {
    EXPECT_EQ(held.fifos[i].name, n.fifos[i].name);
    EXPECT_EQ(held.fifos[i].depth, n.fifos[i].depth) << n.fifos[i].name;
  }
  EXPECT_NE(readAll(dir + "/hls_config.cfg").find("part=xcu55c-fsvh2892-2L-e\n"), std::string::npos);
  EXPECT_NE(readAll(dir + "/hls_config.cfg").find("clock=4ns\n"), std::string::npos);
  std::string host = readAll(dir + "/host/host.cpp");
  for (const char* api : {"xrt::device device(0)", "load_xclbin", "xrt::kernel", "group_id(", "XCL_BO_SYNC_BO_TO_DEVICE", ".wait()"})
    EXPECT_NE(host.find(api), std::string::npos) << api;
  // Outputs come back into vectors of their own buffers' sizes (never into input 0's), and the first
  // token's are compared with the reference's.
  for (const char* step :
       {"std::vector<float> got(static_cast<size_t>(layout::elems_",
        "bo.read(got.data(), got.size() * sizeof(got[0]), 0);", "if (got.size() == chained.size())",
        "readBytes(\"data/expected.bin\")", "host: FAIL: ", "host: PASS: "})
    EXPECT_NE(host.find(step), std::string::npos) << step;
  EXPECT_EQ(host.find(".read(chained.data())"), std::string::npos);
}

// A network file from `stc compile` and `stc size-fifos`, with one depth then raised by hand, is emitted
// with exactly its depths.
TEST(Emit, ASizedNetworkFileKeepsItsDepths) {
  std::string net = ::testing::TempDir() + "keep_net.yaml", sized = ::testing::TempDir() + "keep_sized.yaml";
  ASSERT_EQ(stc("compile " + model("graphs/rows.yaml") + " -o " + net).code, 0);
  ASSERT_EQ(stc("size-fifos " + net + " -o " + sized).code, 0);
  stc::Network n = stc::parseNetwork(readAll(sized), sized);
  ASSERT_FALSE(n.sourceFile.empty());
  n.fifos.front().depth += 37;
  std::ofstream(sized) << stc::emitNetwork(n);
  std::string dir = fresh("keep");
  Outcome o = stc("emit " + sized + " -o " + dir);
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("with the file's FIFO depths, no deadlock"), std::string::npos) << o.out;
  std::string src = sources(dir);
  for (const stc::Fifo& f : n.fifos) {
    if (f.name.find(".region") != std::string::npos) continue;
    std::string var = "s_";
    for (char c : f.name) var += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    EXPECT_NE(src.find("#pragma HLS STREAM variable=" + var + " depth=" + std::to_string(f.depth) + "\n"), std::string::npos)
        << f.name;
  }
  Outcome m = shell("make -s -C " + dir + " csim");
  EXPECT_EQ(m.code, 0) << m.out;
}

// The C simulation is a real check: a wrong expected value makes `make csim` fail.
TEST(Emit, CsimFailsWhenTheOutputsDiffer) {
  std::string dir = fresh("mismatch");
  ASSERT_EQ(stc("emit " + model("graphs/rows.yaml") + " -o " + dir).code, 0);
  std::fstream f(dir + "/data/expected.bin", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(4 * 100);
  float wrong = 0.5f;
  f.write(reinterpret_cast<const char*>(&wrong), 4);
  f.close();
  Outcome m = shell("make -s -C " + dir + " csim");
  EXPECT_NE(m.code, 0);
  EXPECT_NE(m.out.find("csim: FAIL: 1 of 2048 outputs differ"), std::string::npos) << m.out;
  // NaN: a NaN input makes its row NaN (the norm and the softmax of a row with a NaN in it). Where the
  // reference says NaN too, they match; a NaN against a number differs, and is named the worst.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto put = [&](const std::string& file, size_t at, size_t count) {
    std::fstream g(dir + file, std::ios::in | std::ios::out | std::ios::binary);
    g.seekp(static_cast<std::streamoff>(4 * at));
    for (size_t i = 0; i < count; ++i) g.write(reinterpret_cast<const char*>(&nan), 4);
  };
  ASSERT_EQ(stc("emit " + model("graphs/rows.yaml") + " -o " + dir + " --force").code, 0);
  put("/data/inputs.bin", 3, 1);  // x[0][3]: row 0 of the output is NaN
  put("/data/expected.bin", 0, 512);
  m = shell("make -s -C " + dir + " csim");
  EXPECT_EQ(m.code, 0) << m.out;
  std::fstream g(dir + "/data/expected.bin", std::ios::in | std::ios::out | std::ios::binary);
  g.seekp(4 * 7);
  float number = 0.25f;
  g.write(reinterpret_cast<const char*>(&number), 4);
  g.close();
  m = shell("make -s -C " + dir + " csim");
  EXPECT_NE(m.code, 0);
  EXPECT_NE(m.out.find("csim: FAIL: 1 of 2048 outputs differ"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("worst at 7: "), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("nan, expected 0.25"), std::string::npos) << m.out;  // printf's nan or -nan
}

TEST(Emit, InputsFromAFileAndTheSameBytesEveryTime) {
  std::string a = fresh("same_a"), b = fresh("same_b");
  ASSERT_EQ(stc("emit " + model("graphs/mlp.yaml") + " --seed 7 -o " + a).code, 0);
  ASSERT_EQ(stc("emit " + model("graphs/mlp.yaml") + " --seed 7 -o " + b + " --inputs " + a + "/data/inputs.bin").code, 0);
  for (const char* f : {"src/mlp_g0_slr1.cpp", "src/mlp_g0_slr2.cpp", "src/parts.h", "src/layout.h", "csim/tb.cpp",
                        "host/host.cpp", "connectivity.cfg",
                        "data/inputs.bin", "data/weights.bin", "data/expected.bin", "Makefile"})
    EXPECT_TRUE(readAll(a + "/" + f) == readAll(b + "/" + f)) << f;
  std::string c = fresh("same_c");
  ASSERT_EQ(stc("emit " + model("graphs/mlp.yaml") + " --seed 8 -o " + c).code, 0);
  EXPECT_FALSE(readAll(a + "/data/inputs.bin") == readAll(c + "/data/inputs.bin"));
}

// An integer input that divides (here through a reshape) is drawn 1 or 2, not 0 or 1: the reference's
// quotients are numbers, not infinities. The draws are the same ones shifted by 1: the same graph with a
// product instead of the quotient draws that input 0 or 1 at each place where it drew 1 or 2, and its
// other inputs alike.
TEST(Emit, AnIntegerDivisorIsDrawnAboveZero) {
  auto graph = [](const std::string& op) {
    std::string path = ::testing::TempDir() + "int_divisor_" + op + ".yaml";
    std::ofstream(path) << "graph: int_divisor\n"
                           "inputs: [{name: x, shape: [4, 16]}, {name: n, shape: [64], dtype: i32},\n"
                           "         {name: m, shape: [4, 16], dtype: i64}]\n"
                           "ops:\n"
                           "  - {name: rows, op: reshape, inputs: [n], output: n2, shape: [4, 16]}\n"
                           "  - {name: q, op: "
                        << op
                        << ", inputs: [x, n2], output: y}\n"
                           "  - {name: z, op: add, inputs: [y, m], output: w}\n"
                           "outputs: [w]\n";
    return path;
  };
  auto floats = [](const std::string& file) {
    std::string bytes = readAll(file);
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
  };
  std::string div = fresh("int_divisor_div"), mul = fresh("int_divisor_mul");
  ASSERT_EQ(stc("emit " + graph("div") + " -o " + div).code, 0);
  ASSERT_EQ(stc("emit " + graph("mul") + " -o " + mul).code, 0);
  std::vector<float> a = floats(div + "/data/inputs.bin"), b = floats(mul + "/data/inputs.bin");
  ASSERT_EQ(a.size(), 64u * 3);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    bool divisor = i >= 64 && i < 128;
    EXPECT_EQ(a[i], b[i] + (divisor ? 1.0f : 0.0f)) << i;
    if (i >= 64) {
      EXPECT_TRUE(b[i] == 0 || b[i] == 1) << i;
    }
  }
  EXPECT_GT(std::count(a.begin() + 64, a.begin() + 128, 2.0f), 16);
  EXPECT_GT(std::count(a.begin() + 128, a.end(), 0.0f), 16);  // the addend is not a divisor
  std::vector<float> w = floats(div + "/data/expected.bin");
  ASSERT_EQ(w.size(), 64u);
  for (size_t i = 0; i < 64; ++i) EXPECT_FLOAT_EQ(w[i], a[i] / a[64 + i] + a[128 + i]) << i;
  Outcome m = shell("make -s -C " + div + " csim");
  EXPECT_EQ(m.code, 0) << m.out;
}

// Bool inputs and token ids as torch reads them. A bool input holds 1 where the value given is not 0 (0.5
// and -2 are true; And of two masks is their min, which 0.5 would break), and 0 or 1 when drawn (it was
// drawn from (-1, 1)). An id of -V .. -1 counts from the end of the table, as ONNX's Gather does; past the
// table the id is its first or last row. Every input of another type than f32 moves as f32 (before, the
// masks' 1-bit tokens did not compile).
TEST(Emit, MasksAndIdsAreReadAsTorchReadsThem) {
  std::string path = ::testing::TempDir() + "masks_ids.yaml";
  std::ofstream(path)
      << "graph: masks_ids\n"
         "inputs: [{name: m, shape: [4, 16], dtype: i1}, {name: n, shape: [4, 16], dtype: i1},\n"
         "         {name: ids, shape: [4], dtype: i64}]\n"
         "weights: [{name: table, shape: [6, 16]}]\n"
         "ops:\n"
         "  - {name: both, op: min, inputs: [m, n], output: y}\n"
         "  - {name: embed, op: embedding, inputs: [ids, table], output: e}\n"
         "outputs: [y, e]\n";
  auto floats = [](const std::string& file) {
    std::string bytes = readAll(file);
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
  };
  std::string drawn = fresh("masks_drawn");
  ASSERT_EQ(stc("emit " + path + " -o " + drawn).code, 0);
  std::vector<float> in = floats(drawn + "/data/inputs.bin");
  ASSERT_EQ(in.size(), 4u * 16 * 2 + 4);
  EXPECT_TRUE(std::all_of(in.begin(), in.begin() + 128, [](float x) { return x == 0 || x == 1; }));
  EXPECT_GT(std::count(in.begin(), in.begin() + 128, 1.0f), 32);
  EXPECT_GT(std::count(in.begin(), in.begin() + 128, 0.0f), 32);
  Outcome m = shell("make -s -C " + drawn + " csim");
  EXPECT_EQ(m.code, 0) << m.out;

  std::vector<float> given(4 * 16 * 2, 0.0f);
  std::fill(given.begin(), given.begin() + 32, 0.5f);  // m: rows 0 and 1
  std::fill(given.begin() + 64, given.end(), -2.0f);   // n: everywhere
  for (float id : {-1.0f, -6.0f, -7.0f, 9.0f}) given.push_back(id);
  std::string file = ::testing::TempDir() + "masks_ids.bin";
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(given.data()), static_cast<std::streamsize>(given.size() * 4));
  std::string dir = fresh("masks_given");
  ASSERT_EQ(stc("emit " + path + " -o " + dir + " --inputs " + file).code, 0);
  std::vector<float> y = floats(dir + "/data/expected.bin");
  ASSERT_EQ(y.size(), 4u * 16 * 2);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(y[i], i < 32 ? 1.0f : 0.0f) << i;
  auto row = [&](size_t r) {
    return std::vector<float>(y.begin() + 64 + 16 * r, y.begin() + 64 + 16 * (r + 1));
  };
  EXPECT_EQ(row(0), row(3));  // -1: the last row; 9: past it, the last
  EXPECT_EQ(row(1), row(2));  // -6: the first row; -7: before it, the first
  EXPECT_NE(row(0), row(1));
  m = shell("make -s -C " + dir + " csim");
  EXPECT_EQ(m.code, 0) << m.out;
  // The W4A8 reference takes the same rows (it clamped -1 to row 0, and the csim failed its own check).
  std::string quantized = fresh("masks_w4a8");
  ASSERT_EQ(stc("emit " + path + " -o " + quantized + " --set quant=w4a8 --inputs " + file).code, 0);
  m = shell("make -s -C " + quantized + " csim");
  EXPECT_EQ(m.code, 0) << m.out;
}

TEST(Emit, RefusesAndExplains) {
  std::string dir = fresh("refuse");
  fs::create_directories(dir);
  std::ofstream(dir + "/keep.txt") << "mine";
  Outcome o = stc("emit " + model("graphs/mlp.yaml") + " -o " + dir);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, dir + ": error: the folder is not empty (pass --force to replace it)\n");
  EXPECT_TRUE(fs::exists(dir + "/keep.txt"));
  o = stc("emit " + model("graphs/mlp.yaml") + " -o " + dir + " --force");
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_FALSE(fs::exists(dir + "/keep.txt"));
  EXPECT_TRUE(fs::exists(dir + "/Makefile"));

  // Layers that cannot chain (output 0 is not shaped like input 0): named, and nothing written.
  std::string gone = fresh("unsupported");
  std::string path = ::testing::TempDir() + "unchained.yaml";
  std::ofstream(path) << "graph: unchained\n"
                         "inputs: [{name: a, shape: [3, 96], dtype: f32}]\n"
                         "weights: [{name: w, shape: [96, 40], dtype: f32}]\n"
                         "ops: [{name: mm, op: matmul, inputs: [a, w], output: y}]\n"
                         "outputs: [y]\n";
  o = stc("emit " + path + " --layers 2 -o " + gone);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(
      o.out,
      path + ": error: unsupported: chaining 2 layers: output 'y' does not have the shape of input 'a'\n");
  EXPECT_FALSE(fs::exists(gone));
  for (const auto& e : fs::directory_iterator(::testing::TempDir()))
    EXPECT_EQ(e.path().filename().string().find(".emit_unsupported.tmp"), std::string::npos);

  // A network file has timing only.
  o = stc("emit " + model("networks/fork_join.yaml") + " -o " + gone);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("this network file holds their timing only (it has no 'source'"), std::string::npos) << o.out;

  // Inputs of the wrong size.
  std::string small = ::testing::TempDir() + "small.bin";
  std::ofstream(small, std::ios::binary) << std::string(12, '\0');
  o = stc("emit " + model("graphs/mlp.yaml") + " -o " + gone + " --inputs " + small);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, small + ": error: the inputs file holds 3 f32 values; the graph's inputs need 256\n");
  EXPECT_FALSE(fs::exists(gone));

  // A symbol named like a variable the emitted code declares (t is every DMA's token count) would not
  // compile: refused with the name, nothing written. T, which no emitted name uses, is emitted.
  std::string attention = readAll(model("graphs/attention_decode.yaml"));
  for (const char* sym : {"t", "i1", "w", "ctx_max", "T"}) {
    std::string renamed = attention;
    for (size_t at = renamed.find("ctx"); at != std::string::npos; at = renamed.find("ctx", at + 1))
      renamed.replace(at, 3, sym);
    std::string file = ::testing::TempDir() + "symbol_" + sym + ".yaml";
    std::ofstream(file) << renamed;
    o = stc("emit " + file + " --bind " + sym + "=24 -o " + gone);
    if (std::string(sym) == "T") {
      EXPECT_EQ(o.code, 0) << o.out;
      continue;
    }
    EXPECT_EQ(o.code, 1) << sym;
    EXPECT_EQ(o.out, std::string("stc emit: error: graph 'attention_decode': the symbol '") + sym +
                         "' is also a name the emitted C++ declares (a loop counter, a local or a generated name); "
                         "rename it in the graph, for example to 'sym_" + sym + "'\n");
    EXPECT_FALSE(fs::exists(gone));
  }
}

// A depth lowered by hand in the emitted source deadlocks the concurrent run, which names the same wait-for
// cycle as stc simulate of the project's network with that depth (tiny GPT-2: softmax's apply pass reads a
// row only after its statistics, so the FIFO of the scores it waits for must hold what the statistics
// pass reads first).
TEST(Emit, ADepthLoweredInTheSourceDeadlocksTheConcurrentRun) {
  std::string dir = fresh("dfsim_lowered");
  Outcome e = stc("emit " + model("gpt2-tiny.yaml") + " -o " + dir);
  ASSERT_EQ(e.code, 0) << e.out;
  const std::string fifo = "scaled>probs_op.apply";
  stc::Network net = stc::loadNetwork(dir + "/network.yaml");
  ASSERT_GE(net.findFifo(fifo), 0);
  ASSERT_GT(net.fifos[static_cast<size_t>(net.findFifo(fifo))].depth, 2);
  // The pragma of that stream, lowered to 2.
  std::string src, text;  // the kernel declaring it (the tiny GPT-2's layer is one kernel per SLR)
  for (const auto& f : fs::directory_iterator(dir + "/src"))
    if (f.path().extension() == ".cpp" && readAll(f.path().string()).find("(\"" + fifo + "\");") != std::string::npos)
      src = f.path().string();
  ASSERT_FALSE(src.empty());
  text = readAll(src);
  size_t decl = text.find("(\"" + fifo + "\");");
  size_t depth = text.find(" depth=", decl), end = text.find('\n', depth);
  text.replace(depth, end - depth, " depth=2");
  std::ofstream(src, std::ios::binary) << text;
  Outcome d = shell("cd " + dir + " && make -s build/dfsim && ./build/dfsim");
  EXPECT_EQ(d.code, 3) << d.out;
  EXPECT_NE(d.out.find("dfsim: DEADLOCK at the emitted depths"), std::string::npos) << d.out;
  // The cycle's lines, as stc simulate words them for the network at that depth (ctx 16, the project's).
  Outcome s = stc("simulate " + dir + "/network.yaml --ctx 16 --set-depth '" + fifo + "=2'");
  EXPECT_EQ(s.code, 3) << s.out;
  auto cycle = [](const std::string& out) {
    std::vector<std::string> lines;
    size_t at = out.find("wait-for cycle:\n");
    if (at == std::string::npos) return lines;
    std::istringstream in(out.substr(at + 16));
    for (std::string l; std::getline(in, l) && l.rfind("  ", 0) == 0;) lines.push_back(l);
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(cycle(d.out).size(), 3u) << d.out;
  EXPECT_EQ(cycle(d.out), cycle(s.out)) << d.out << "\n" << s.out;
  EXPECT_NE(
      d.out.find(
          "  scaled_op waits to write scaled>probs_op.apply: FULL, 2/2 tokens; it needs probs_op.apply"),
      std::string::npos)
      << d.out;
}

TEST(Emit, RunPrintsEveryStage) {
  std::string dir = fresh("run");
  Outcome o = stc("run " + model("graphs/mlp.yaml") + " -o " + dir);
  ASSERT_EQ(o.code, 0) << o.out;
  for (const char* stage :
       {"[1/6] compile", "[2/6] simulate", "[3/6] size", "[4/6] verify", "[5/6] emit", "[6/6] conform"})
    EXPECT_NE(o.out.find(stage), std::string::npos) << stage;
  EXPECT_NE(o.out.find("no deadlock"), std::string::npos);
}

}  // namespace
