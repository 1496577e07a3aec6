#include "compiler/ir/expr.h"

#include <gtest/gtest.h>

#include "compiler/ir/diagnostics.h"

namespace stc {
namespace {

TEST(Expr, EvaluatesWithBindings) {
  Expr e = Expr::parse("ctx/16 + 1");
  EXPECT_FALSE(e.isConstant());
  EXPECT_EQ(e.eval({{"ctx", 100}}), 7);
  EXPECT_EQ(Expr::parse("(ctx + 15) / 16 * 2").eval({{"ctx", 17}}), 4);
  EXPECT_EQ(Expr::parse("-7 / 2").eval(), -4);  // rounds down
  EXPECT_EQ(Expr::parse("7 % 3").eval(), 1);
  EXPECT_EQ(Expr::parse(" 64 ").str(), "64");
}

TEST(Expr, Errors) {
  EXPECT_THROW(Expr::parse("ctx +"), UserError);
  EXPECT_THROW(Expr::parse(""), UserError);
  try {
    Expr::parse("4 $ 2");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "column 3 of expression '4 $ 2': unexpected '$'");
  }
  try {
    Expr::parse("seq*2").eval({});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "symbol 'seq' in 'seq*2' is not bound (use --ctx N or --bind seq=N)");
  }
  EXPECT_THROW(Expr::parse("4/(ctx-ctx)").eval({{"ctx", 3}}), UserError);
  // Bounds: literals up to 2^40, products checked, nesting limited (no overflow, no stack exhaustion).
  EXPECT_THROW(Expr::parse("2199023255552"), UserError);
  try {
    Expr::parse("ctx*ctx*ctx*ctx").eval({{"ctx", 1 << 20}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "a value of 'ctx*ctx*ctx*ctx' is too large");
  }
  EXPECT_THROW(Expr::parse(std::string(100000, '(') + "1" + std::string(100000, ')')), UserError);
  EXPECT_THROW(Expr::parse(std::string(100000, '-') + "1"), UserError);
}

}  // namespace
}  // namespace stc
