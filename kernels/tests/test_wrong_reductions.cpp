// The known-wrong reductions of wrong_reductions.h are wrong: on one small row of states
// built to expose them (partition 0 far below the max, one empty state with NaN garbage
// in o, an fp16-unrepresentable o), each differs from the right reduction by far more
// than double rounding, and the right one equals the merge computed here directly.
#include <gtest/gtest.h>

#include <cmath>
#include "wrong_reductions.h"

namespace pagedattn::test::wrong {
namespace {

States showcase() {
  States st;
  st.head_size = 2;
  st.m = {1.0, 95.0, -INFINITY, 93.5};
  st.s = {3.0, 2.0, 0.0, 5.0};
  st.o = {0.1234567, -0.5, 0.75, 0.25, NAN, NAN, -0.3333333, 0.9};
  return st;
}

TEST(WrongReductions, EachDiffersFromTheRightOne) {
  const States st = showcase();
  const std::vector<double> right = reduce(Reduction::right, st);
  // The right reduction, by hand: w_p = s_p exp(m_p - 4), the empty state skipped.
  double num[2] = {0, 0}, den = 0;
  for (int p : {0, 1, 3}) {
    const double w = st.s[p] * std::exp(st.m[p] - 95.0);
    den += w;
    for (int d = 0; d < 2; ++d) num[d] += w * st.o_at(p, d);
  }
  for (int d = 0; d < 2; ++d) EXPECT_NEAR(right[d], num[d] / den, 1e-15);
  for (Reduction r : all_wrong()) {
    const std::vector<double> got = reduce(r, st);
    double worst = 0;
    for (int d = 0; d < 2; ++d) {
      worst = std::isnan(got[d]) ? INFINITY : std::max(worst, std::fabs(got[d] - right[d]));
    }
    // 1e-9 is far above double rounding (~1e-16 here) and far below every mistake's effect
    // except the epsilon's (1e-6 / den ~ 2e-7), fp16 rounding of o (~1e-4 at worst) and
    // the perturbed weights (1e-5 times q_1 q_3 |o_1 - o_3| ~ 1e-6).
    EXPECT_GT(worst, 1e-9) << name(r);
  }
}

TEST(WrongReductions, AllEmptyRow) {
  States st;
  st.head_size = 1;
  st.m = {-INFINITY, -INFINITY};
  st.s = {0, 0};
  st.o = {NAN, NAN};
  EXPECT_EQ(reduce(Reduction::right, st)[0], 0.0);
  EXPECT_TRUE(std::isnan(reduce(Reduction::empty_merge_nan, st)[0]));
}

}  // namespace
}  // namespace pagedattn::test::wrong
