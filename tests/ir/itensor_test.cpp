// Converter inference on the worked examples of DESIGN.md and on cases derived by hand.
#include "compiler/ir/itensor.h"

#include <gtest/gtest.h>

#include "compiler/ir/diagnostics.h"

namespace stc {
namespace {

const char* kA = "itensor<2x2xf32, iter_space: [4,4]*[2,2], iter_map: (d0,d1)->(d0,d1)>";
const char* kB = "itensor<4x2xf32, iter_space: [4,2]*[2,4], iter_map: (d0,d1)->(d1,d0)>";
const char* kC = "itensor<4x2xf32, iter_space: [4,2,2]*[2,1,4], iter_map: (d0,d1,d2)->(d2,d0)>";

ConverterPlan plan(const char* src, const char* dst) {
  return inferConverter(ITensorType::parse(src), ITensorType::parse(dst));
}

TEST(ITensor, ParsesAndPrints) {
  ITensorType t = ITensorType::parse(kC);
  EXPECT_EQ(t.elementShape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(t.dtype, "f32");
  EXPECT_EQ(t.tripcounts, (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(t.steps, (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(t.str(), kC);
  EXPECT_EQ(t.tokenCount(), 16);
  EXPECT_EQ(t.tokenBits(), 256);
  EXPECT_EQ(t.dataShape(), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(ITensorType::parse("itensor< 4x2xf32 ,iter_space:[4, 2, 2] * [2,1,4],iter_map:(d0, d1, d2) -> (d2, d0)>"),
            t);
}

TEST(ITensor, WorkedExampleAtoB) {  // no shared outer loop: the whole 8x8 tensor
  ConverterPlan p = plan(kA, kB);
  EXPECT_FALSE(p.compatible);
  EXPECT_EQ(p.sharedLoops, 0);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(p.bufferBytes, 2 * 8 * 8 * 4);
}

TEST(ITensor, WorkedExampleBtoC) {  // d0 shared: 8x2 regions
  ConverterPlan p = plan(kB, kC);
  EXPECT_FALSE(p.compatible);
  EXPECT_EQ(p.sharedLoops, 1);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(p.bufferBytes, 128);
}

TEST(ITensor, WorkedExampleAtoA) { EXPECT_TRUE(plan(kA, kA).compatible); }

TEST(ITensor, DifferentTileSizesShareRowLoop) {
  // Row tiles of 2x8 feeding 2x4 tiles: the row loop (trip 4, step 2, dim 0, element 2) is shared.
  ConverterPlan p = plan("itensor<2x8xf32, iter_space: [4]*[2], iter_map: (d0)->(d0,0)>",
                         "itensor<2x4xf32, iter_space: [4,2]*[2,4], iter_map: (d0,d1)->(d0,d1)>");
  EXPECT_EQ(p.sharedLoops, 1);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(p.bufferBytes, 2 * 2 * 8 * 4);
}

TEST(ITensor, DifferentOuterTripcountsShareNothing) {
  ConverterPlan p = plan("itensor<4x8xf32, iter_space: [2]*[4], iter_map: (d0)->(d0,0)>",
                         "itensor<2x8xf32, iter_space: [4]*[2], iter_map: (d0)->(d0,0)>");
  EXPECT_EQ(p.sharedLoops, 0);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(p.bufferBytes, 512);
}

TEST(ITensor, RepeatDimInsideSharedPrefix) {
  // The consumer reads each row tile three times (d1 maps to no data dimension).
  ConverterPlan p = plan("itensor<2x8xf32, iter_space: [4]*[2], iter_map: (d0)->(d0,0)>",
                         "itensor<2x8xf32, iter_space: [4,3]*[2,1], iter_map: (d0,d1)->(d0,0)>");
  EXPECT_EQ(p.sharedLoops, 1);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(p.bufferBytes, 128);
}

TEST(ITensor, PartiallySharedPrefixOfThreeLoops) {
  // 8x32 i8 in 1x4 tiles; the two inner loops both move dim 1 but in swapped order: only d0 is shared.
  ConverterPlan p = plan("itensor<1x4xi8, iter_space: [8,4,2]*[1,8,4], iter_map: (d0,d1,d2)->(d0,d1 + d2)>",
                         "itensor<1x4xi8, iter_space: [8,2,4]*[1,4,8], iter_map: (d0,d1,d2)->(d0,d1 + d2)>");
  EXPECT_EQ(p.sharedLoops, 1);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{1, 32}));
  EXPECT_EQ(p.bufferBytes, 64);
}

TEST(ITensor, TwoSharedLoopsAndATrailingRepeat) {
  ConverterPlan p = plan("itensor<2x2xf16, iter_space: [4,4]*[2,2], iter_map: (d0,d1)->(d0,d1)>",
                         "itensor<2x2xf16, iter_space: [4,4,1]*[2,2,1], iter_map: (d0,d1,d2)->(d0,d1)>");
  EXPECT_FALSE(p.compatible);
  EXPECT_EQ(p.sharedLoops, 2);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(p.bufferBytes, 2 * 2 * 2 * 2);
}

TEST(ITensor, SharedLoopNeedsEqualElementSize) {
  // Same outer loop over rows, but one side carries 2-row tiles with step 2 on dim 0 while the other
  // carries 1-row tiles with step 2 and a repeat: element sizes along dim 0 differ, nothing shared.
  ConverterPlan p = plan("itensor<2x4xf32, iter_space: [4]*[2], iter_map: (d0)->(d0,0)>",
                         "itensor<1x4xf32, iter_space: [4,2]*[2,1], iter_map: (d0,d1)->(d0 + d1,0)>");
  EXPECT_EQ(p.sharedLoops, 0);
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{8, 4}));
}

// Row blocks of 4 on an 8x8 tensor in 1x4 tiles. A matmul reading A block by block, each block once per
// column tile of its output (loops mb, n, m, k), against rows streamed in order: the rows loop [8]*[1]
// splits into [2, 4]*[4, 1], the block loop is shared, and the region is the block's 4 rows, whole
// (4 x 8 f32, twice: 256 bytes) instead of the whole tensor.
TEST(ITensor, RowBlocksShareTheBlockLoop) {
  const char* rows = "itensor<1x4xf32, iter_space: [8,2]*[1,4], iter_map: (d0,d1)->(d0,d1)>";
  const char* blocked =
      "itensor<1x4xf32, iter_space: [2,3,4,2]*[4,1,1,4], iter_map: (d0,d1,d2,d3)->(d0 + d2,d3)>";
  ConverterPlan p = plan(rows, blocked);
  EXPECT_EQ(p.sharedLoops, 1);
  EXPECT_EQ(p.producerSplits, (std::vector<LoopSplit>{{0, 2}}));
  EXPECT_TRUE(p.consumerSplits.empty());
  EXPECT_EQ(p.bufferShape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(p.bufferBytes, 2 * 4 * 8 * 4);
  EXPECT_EQ(splitLoops(ITensorType::parse(rows), p.producerSplits).str(),
            "itensor<1x4xf32, iter_space: [2,4,2]*[4,1,4], iter_map: (d0,d1,d2)->(d0 + d1,d2)>");
  // A matmul writing its output block by block, a column tile at a time (mb, n, m), read as rows.
  ConverterPlan back =
      plan("itensor<1x4xf32, iter_space: [2,2,4]*[4,4,1], iter_map: (d0,d1,d2)->(d0 + d2,d1)>", rows);
  EXPECT_EQ(back.sharedLoops, 1);
  EXPECT_TRUE(back.producerSplits.empty());
  EXPECT_EQ(back.consumerSplits, (std::vector<LoopSplit>{{0, 2}}));
  EXPECT_EQ(back.bufferShape, (std::vector<int64_t>{4, 8}));
  // Output blocks of 2 rows against blocks of 4 (both a column tile at a time): the 4-row block loop is
  // the outer part of the 2-row one, and a region holds 4 rows.
  ConverterPlan other =
      plan("itensor<1x4xf32, iter_space: [4,2,2]*[2,4,1], iter_map: (d0,d1,d2)->(d0 + d2,d1)>",
           "itensor<1x4xf32, iter_space: [2,2,4]*[4,4,1], iter_map: (d0,d1,d2)->(d0 + d2,d1)>");
  EXPECT_EQ(other.sharedLoops, 1);
  EXPECT_EQ(other.producerSplits, (std::vector<LoopSplit>{{0, 2}}));
  EXPECT_EQ(other.bufferShape, (std::vector<int64_t>{4, 8}));
  // Rows in order, written as blocks of 2 or as blocks of 4: the same tokens, every loop shared after
  // splits, a region of one token.
  ConverterPlan same =
      plan("itensor<1x4xf32, iter_space: [4,2,2]*[2,1,4], iter_map: (d0,d1,d2)->(d0 + d1,d2)>",
           "itensor<1x4xf32, iter_space: [2,4,2]*[4,1,4], iter_map: (d0,d1,d2)->(d0 + d1,d2)>");
  EXPECT_EQ(same.sharedLoops, 4);
  EXPECT_EQ(same.bufferShape, (std::vector<int64_t>{1, 4}));
}

TEST(ITensor, DifferentTensorsAreRejected) {
  try {
    plan(kA, "itensor<2x2xf32, iter_space: [4,2]*[2,2], iter_map: (d0,d1)->(d0,d1)>");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "the streams cover different data shapes ([8, 8] and [8, 4])");
  }
  EXPECT_THROW(plan(kA, "itensor<2x2xf16, iter_space: [4,4]*[2,2], iter_map: (d0,d1)->(d0,d1)>"), UserError);
}

TEST(ITensor, MalformedTypesPointAtTheColumn) {
  auto message = [](const char* text) {
    try {
      ITensorType::parse(text);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("itensor<4x2xf32 iter_space: [4]*[1], iter_map: (d0)->(d0,0)>"), "column 17: expected ','");
  EXPECT_EQ(message("itensor<4x2xq7, iter_space: [4]*[1], iter_map: (d0)->(d0,0)>"),
            "column 13: unknown element type 'q7'");
  EXPECT_EQ(message("itensor<4x2xf32, iter_space: [4]*[1], iter_map: (d0)->(d1,0)>"),
            "column 56: unknown dimension 'd1'");
  EXPECT_EQ(message("itensor<4x2xf32, iter_space: [4,2]*[1], iter_map: (d0,d1)->(d0,d1)>"),
            "invalid itensor type: iter_space has 2 tripcounts but 1 steps");
  EXPECT_EQ(message("itensor<4x2xf32, iter_space: [4]*[0], iter_map: (d0)->(d0,0)>"),
            "invalid itensor type: steps must be positive, got 0");
  EXPECT_EQ(message("itensor<4x2xf32, iter_space: [4]*[1], iter_map: (d0)->(d0)>"),
            "invalid itensor type: iter_map has 1 results but the element has rank 2");
}

}  // namespace
}  // namespace stc
