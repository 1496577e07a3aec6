#pragma once
// Iterative tensor (itensor) types: the stream order of a tensor, from the StreamTensor paper.
//   itensor<4x2xf32, iter_space: [4,2,2]*[2,1,4], iter_map: (d0,d1,d2)->(d2,d0)>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/affine_map.h"

namespace stc {

/// Bits of one element of a dtype name (f32, f16, bf16, i32, i8, i4, ...); 0 when unknown.
int dtypeBits(const std::string& dtype);

/// A stream of tiles: each token carries an element (tile) of `elementShape`; the loop nest
/// `tripcounts`/`steps` (outermost first) enumerates the tokens and `iterMap` gives each one's offset.
struct ITensorType {
  std::vector<int64_t> elementShape;
  std::string dtype = "f32";
  std::vector<int64_t> tripcounts;
  std::vector<int64_t> steps;
  AffineMap iterMap;

  /// Parses the syntax above; throws UserError("column N: ...") relative to text.
  static ITensorType parse(const std::string& text);
  /// The type in the syntax above (compact map).
  std::string str() const;
  /// Problems with the type (ranks disagree, non-positive sizes, unknown dtype); empty when valid.
  std::vector<std::string> verify() const;

  /// Tokens in the stream: the product of tripcounts.
  int64_t tokenCount() const;
  /// Bits of one token: elements of a tile times the dtype's bits.
  int64_t tokenBits() const;
  /// The data shape the stream covers: per data dimension, the largest offset plus the element size.
  std::vector<int64_t> dataShape() const;

  bool operator==(const ITensorType& o) const {
    return elementShape == o.elementShape && dtype == o.dtype && tripcounts == o.tripcounts &&
           steps == o.steps && iterMap == o.iterMap;
  }
  bool operator!=(const ITensorType& o) const { return !(*this == o); }
};

/// Loop `loop` of a nest split in two that enumerate the same tokens: an outer loop of `outer` iterations
/// (its step times trip/outer) around the rest (trip/outer iterations of the old step).
struct LoopSplit {
  int loop = 0;
  int64_t outer = 1;
  bool operator==(const LoopSplit& o) const { return loop == o.loop && outer == o.outer; }
};

/// The steps and map of a loop nest after split s, whose inner part runs `inner` iterations (the trips
/// are the caller's: concrete here, symbolic in the compiler's stream orders).
void splitLoopIndexing(std::vector<int64_t>& steps, AffineMap& map, const LoopSplit& s, int64_t inner);

/// `t` with `splits` applied in turn (each names a loop of the nest the earlier ones left).
ITensorType splitLoops(ITensorType t, const std::vector<LoopSplit>& splits);

/// What connects a producer stream to a consumer stream.
struct ConverterPlan {
  bool compatible = false;             ///< equal types: a plain FIFO, no converter
  int sharedLoops = 0;                 ///< length of the common outer loop prefix (of the split nests)
  std::vector<LoopSplit> producerSplits, consumerSplits;  ///< loops split so that the prefixes match
  std::vector<int64_t> bufferShape;    ///< one region of the ping-pong buffer
  int64_t bufferBytes = 0;             ///< both halves
  int64_t regions = 1;                 ///< regions a stream fills: the shared loops' iterations
  /// Bytes a stream's regions take: both halves, or one where the stream is a single region (a whole
  /// tensor), which hls::stream_of_blocks then holds once (Fifo::storedTokens).
  int64_t storedBytes() const { return regions > 1 ? bufferBytes : bufferBytes / 2; }
};

/// Converter inference of DESIGN.md: the buffer is the smallest region both sides traverse in the same
/// order. Where a loop of one side walks a dimension in the same steps as two nested loops of the other
/// (a row-blocked order against a plain one), it is split in two first, so that the outer part can be
/// shared; a dimension bound by a shared loop and moved again by unshared ones inside it (the rows of a
/// block) is buffered over the extent those cover. Throws UserError when the two streams do not carry
/// the same tensor (shape or dtype), unless consumerReadsPart allows the consumer to read a box inside
/// the producer's data (a slice).
ConverterPlan inferConverter(const ITensorType& producer, const ITensorType& consumer, bool consumerReadsPart = false);

}  // namespace stc
