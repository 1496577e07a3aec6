#pragma once
// Helpers the HLS emitters share: C++ text with indentation, identifiers from graph names, and the
// arithmetic of stream orders (loop nests, data coordinates, row-major addresses) as C++ expressions.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/shape_inference.h"
#include "compiler/ir/expr.h"
#include "compiler/ir/network.h"
#include "compiler/lower/kernel_graph.h"

namespace stc::emit {

/// C++ source text built line by line; open() and close() indent a block.
class Code {
 public:
  Code& line(const std::string& text);
  Code& open(const std::string& head);  ///< `head {`, then one more indent
  Code& close(const std::string& tail = "}");
  Code& blank();
  /// Appends lines indented already (a block built in another Code).
  Code& raw(const std::string& lines);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int indent_ = 0;
};

/// A C++ identifier from a graph or network name: non-alphanumerics become '_'.
std::string identifier(const std::string& name);

/// The values of a symbol the project runs at: 1 to its maximum (the buffers' size), within the range the
/// network's FIFO depths were sized for where it records one (Network::sizedFor).
std::pair<int64_t, int64_t> symbolRunRange(const Network& net, const Bindings& maxima,
                                           const std::string& symbol);

/// Identifiers for names, unique among them: a clash gets _2, _3, ... in the order given.
std::map<std::string, std::string> uniqueIdentifiers(const std::vector<std::string>& names);

/// The argument of every DMA task of a network (its m_axi port, bundle and sp= name), by task name.
std::map<std::string, std::string> dmaArguments(const Network& net);

/// An expression as C++ (symbols are `int` variables of the same name).
std::string cxx(const Expr& e);

/// The product of exprs as C++, constants folded.
std::string cxxProduct(const std::vector<Expr>& exprs);

/// Opens the loops of `order` from loop `from` to loop `to` (exclusive) with variables prefix+k, labelled
/// label_<variable> unless label is empty; with
/// maxima, a loop over a symbolic count gets its LOOP_TRIPCOUNT for synthesis reports.
void openLoops(Code& code, const StreamOrder& order, const std::string& prefix, int from, int to,
               const std::string& label, const Bindings* maxima = nullptr);
void openLoops(Code& code, const std::vector<Expr>& trips, const std::string& prefix, int from, int to,
               const std::string& label, const Bindings* maxima = nullptr);

/// A perfect loop nest flattened by hand into one pipelined loop, as the network's phase is one loop nest
/// with one pipelined body (HLS flattens a nest by itself only when its inner counts are constant). The
/// indices prefix+k of loops [from, n) of `trips` are counters, the last fastest: open() declares them and
/// opens the loop (label, PIPELINE II=ii, LOOP_TRIPCOUNT at the maxima when a count is symbolic); close()
/// advances them and closes it. first(L) and last(L) are the conditions that the loops inside loop L are
/// at their first or last iteration: where a port of level L reads or writes.
/// ST_ITER(lag, split) for a pipeline of `latency` at `ii`: make dfsim fires an iteration's reads with the
/// writes of the iteration latency / II before it (split: after them, when latency / II is not whole).
std::string iterationMark(int64_t latency, int64_t ii);

class FlatLoop {
 public:
  /// Loops [from, n) of trips; the loops outside `from` are open already (a converter's shared loops).
  FlatLoop(Code& code, std::vector<Expr> trips, std::string prefix, int n, int from = 0)
      : c_(code), trips_(std::move(trips)), prefix_(std::move(prefix)), from_(from), n_(n) {}
  /// latency: the phase's, whose writes trail their iteration's reads by latency / II iterations (make
  /// dfsim). outer (Phase::outer): loops [from, outer) open as plain loops around the pipelined one, which
  /// drains at the end of each of their iterations (LOOP_FLATTEN off; make dfsim fires what is in flight).
  void open(const std::string& label, int64_t ii, const Bindings* maxima, int64_t latency = 0, int outer = 0);
  void close();
  std::string first(int level) const;
  std::string last(int level) const;

 private:
  std::string var(int k) const { return prefix_ + std::to_string(k); }
  Code& c_;
  std::vector<Expr> trips_;
  std::string prefix_;
  int from_, n_;
  int pipelined_ = 0;  ///< the first loop of the pipelined nest: from_, or past the loops outside it
};

/// The data coordinate along dim d of element `elem` (a flat index within the token, an expression)
/// of the token at loop variables prefix+k.
std::string dataCoord(const StreamOrder& order, int d, const std::string& prefix, const std::string& elem);

/// Row-major linear index in a tensor of `shape` of the element at coordinates `coords`.
std::string rowMajor(const std::vector<Expr>& shape, const std::vector<std::string>& coords);

/// The row-major linear index, in `tensor`, of element `elem` of the token at loop variables prefix+k.
std::string elementIndex(const TensorInfo& tensor, const StreamOrder& order, const std::string& prefix,
                         const std::string& elem);

/// The condition that element `elem` of the token at loop variables prefix+k lies inside `tensor`, or ""
/// when the order pads none of its dimensions. A symbolic dimension tiled by more than one element is
/// padded to a multiple of its tile (lower/kernels.h): those positions stream as tokens but hold no data.
std::string insideTensor(const TensorInfo& tensor, const StreamOrder& order, const std::string& prefix,
                         const std::string& elem);
/// `value`, or `zero` where the condition `inside` (from insideTensor) fails; `value` when it is "".
std::string insideOr(const std::string& inside, const std::string& value, const std::string& zero);
/// "if (inside) " before a statement, or "" when `inside` is "".
std::string ifInside(const std::string& inside);

/// The index within a token of element shape `from` (flat `elem`) of the same element in a token of
/// element shape `to`, aligned at the last dimension, where `to` has extent 1 (broadcasts) or the same
/// extent as `from`.
std::string broadcastIndex(const std::vector<int64_t>& from, const std::vector<int64_t>& to, const std::string& elem);


}  // namespace stc::emit
