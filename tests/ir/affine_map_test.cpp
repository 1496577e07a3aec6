#include "compiler/ir/affine_map.h"

#include <gtest/gtest.h>

#include "compiler/ir/diagnostics.h"

namespace stc {
namespace {

TEST(AffineMap, ParsesPermutation) {
  AffineMap m = AffineMap::parse("(d0, d1, d2) -> (d2, d0)");
  EXPECT_EQ(m.numDims(), 3);
  ASSERT_EQ(m.numResults(), 2);
  EXPECT_EQ(m.results()[0].singleDim(), 2);
  EXPECT_EQ(m.results()[1].singleDim(), 0);
  EXPECT_EQ(m.apply({5, 6, 7}), (std::vector<int64_t>{7, 5}));
}

TEST(AffineMap, RoundTripsCanonicalText) {
  for (const char* text : {"(d0, d1, d2) -> (d2, d0)", "(d0, d1) -> (d0 * 2 + d1, 3)", "(d0) -> (d0 + 4)",
                           "() -> ()", "(d0, d1) -> (d0 - d1)"}) {
    EXPECT_EQ(AffineMap::parse(text).str(), text);
    EXPECT_EQ(AffineMap::parse(AffineMap::parse(text).str(true)), AffineMap::parse(text));
  }
  EXPECT_EQ(AffineMap::parse("(d0,d1,d2)->(d2,d0)").str(true), "(d0,d1,d2)->(d2,d0)");
}

TEST(AffineMap, LinearFormsAreCanonical) {
  EXPECT_EQ(AffineMap::parse("(a, b) -> (b + a * 2)"), AffineMap::parse("(d0, d1) -> (2 * d0 + d1)"));
  EXPECT_EQ(AffineMap::parse("(d0) -> (d0 * 2 + 1)").apply({3}), (std::vector<int64_t>{7}));
}

TEST(AffineMap, ErrorsGiveTheColumn) {
  try {
    AffineMap::parse("(d0, d1) -> (d2)");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "column 14: unknown dimension 'd2'");
  }
  try {
    AffineMap::parse("(d0, d1) (d0)");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "column 10: expected '-'");
  }
}

}  // namespace
}  // namespace stc
