// state_bounds.h: fold_error's constants and the reduce's bound by hand, the bound failing
// a reduce whose weights are off by 1e-5 relative (so a check built on it can fail), and the
// per-partition state bound by hand. The kernels against these bounds: kernels/tests/
// test_reduce.cpp, property_tests/reduce_property.cpp and prop_attention.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "pagedattn_bound/state_bounds.h"

namespace pb = pagedattn::bound;

namespace {
constexpr double u = 0x1p-24;
}

// LseRound.v's definitions with e_exp = 0 and G = 0: alpha = u, g = (1 + u)^P - 1 with one
// more factor (1 + alpha), b likewise with P factors, result = (1 + b)(1 + u) / (1 - g) - 1.
TEST(StateBounds, FoldConstantsAreLseRoundsDefinitions) {
  const pb::FoldConstants c = pb::fold_constants(3, 0, 0);
  EXPECT_NEAR(c.alpha, u, 1e-6 * u);
  EXPECT_NEAR(c.g, std::pow(1 + u, 3) - 1, 1e-6 * u);
  EXPECT_NEAR(c.b, std::pow(1 + u, 4) - 1, 1e-6 * u);
  EXPECT_NEAR(c.result, 8 * u, 1e-5 * u);  // b + u + g to first order
  // The exp's accuracy and the gap enter alpha once each: e_exp + G u.
  EXPECT_NEAR(pb::fold_constants(1, 10 * u, 100).alpha, (1 + 10 + 100) * u,
              1e-3 * u);  // + 2nd order
  EXPECT_EQ(pb::fold_constants(0, 0, 0).result, 0);
}

// Two live states of equal weight (m = 3, s = 2) with o = (1, -1) and (-1, 3), one empty
// state with NaN garbage between them: exact (0, 1), bound result * sum_p q_p |o_p|.
TEST(StateBounds, ReduceBoundsByHand) {
  const std::vector<double> m = {3, -INFINITY, 3}, s = {2, 0, 2}, o = {1, -1, NAN, NAN, -1, 3};
  const pb::StateRow row{3, 2, m.data(), s.data(), o.data()};
  const pb::ReduceBounds r = pb::reduce_bounds(pb::Format::f32, pb::ExpAccuracy{0.5, 0}, row);
  EXPECT_EQ(r.exact[0], 0);
  EXPECT_EQ(r.exact[1], 1);
  const pb::FoldConstants c = pb::fold_constants(2, u, 0);  // a = 1/2 ulp: e_exp = 2u a = u
  EXPECT_NEAR(r.bound[0], c.result * 1, 1e-6 * r.bound[0]);
  EXPECT_NEAR(r.bound[1], c.result * 2, 1e-6 * r.bound[1]);
  // f16 output: plus the final rounding u_s (|y| + E) + eta_s.
  const pb::ReduceBounds h = pb::reduce_bounds(pb::Format::f16, pb::ExpAccuracy{0.5, 0}, row);
  EXPECT_NEAR(h.bound[1], r.bound[1] + 0x1p-11 * (1 + r.bound[1]) + 0x1p-25, 1e-6 * h.bound[1]);
}

// The wrong variant the reduce oracle exists for: weights perturbed by a relative 1e-5
// (+ on one partition, - on the other) move the output by 1e-5 |o_1 - o_2| / 2, here 1e-5,
// against a bound of about 10u = 6e-7.
TEST(StateBounds, WeightsOffByOneInTenToTheFiveFailTheReduceBound) {
  const std::vector<double> m = {0, -1}, s = {1, std::exp(1.0)}, o = {1, -1};
  const pb::StateRow row{2, 1, m.data(), s.data(), o.data()};
  const pb::ReduceBounds r = pb::reduce_bounds(pb::Format::f32, pb::ExpAccuracy{0.5, 0}, row);
  const double w0 = 1 * (1 + 1e-5), w1 = std::exp(1.0) * std::exp(-1.0) * (1 - 1e-5);
  const double wrong = (w0 * 1 + w1 * -1) / (w0 + w1);
  EXPECT_GT(std::fabs(wrong - r.exact[0]), 10 * r.bound[0]);
  EXPECT_LT(r.bound[0], 20 * u);
}

// Empty rows reduce to an exact 0; a non-finite live state or partial has nothing to bound.
TEST(StateBounds, EmptyAndPoisonedRows) {
  const std::vector<double> m = {-INFINITY}, s = {0}, o = {NAN};
  const pb::ReduceBounds e = pb::reduce_bounds(pb::Format::f32, pb::ExpAccuracy{},
                                               pb::StateRow{1, 1, m.data(), s.data(), o.data()});
  EXPECT_EQ(e.exact[0], 0);
  EXPECT_EQ(e.bound[0], 0);
  const std::vector<double> m2 = {1}, s2 = {1}, o2 = {INFINITY};
  const pb::ReduceBounds n = pb::reduce_bounds(pb::Format::f32, pb::ExpAccuracy{},
                                               pb::StateRow{1, 1, m2.data(), s2.data(), o2.data()});
  EXPECT_TRUE(std::isnan(n.exact[0]));
  EXPECT_TRUE(std::isnan(n.bound[0]));
}

// proofs/error_bound.md section 2's example partition (f32, head 128, block 16, warp 32, n = 1000)
// with every logit equal (Q = 0, spread 0) and a correctly rounded exp (a = 1/2): the max is
// exact up to the products' underflow term, and the exp-sum errs by its tree, h_s = 16
// roundings, plus the exp's u: 17 u to first order.
TEST(StateBounds, PartitionStateByHand) {
  pb::KernelConfig c;
  c.scalar = c.cache = pb::Format::f32;
  c.head_size = 128;
  c.block_size = 16;
  c.warp_size = 32;
  c.exp = pb::ExpAccuracy{0.5, 0};
  pb::RowMagnitudes part;
  part.n = 1000;
  const pb::PartitionStateBound b = pb::partition_state_bound(c, part);
  EXPECT_LT(b.max_logit, 1e-30);
  EXPECT_NEAR(b.exp_sum_rel, 17 * u, 1e-3 * u);
  EXPECT_NEAR(b.exp_sum_abs, 1000 * 0x1p-126, 1e-3 * 1000 * 0x1p-126);
  // Logits whose Q_i is 10: the max moves by k_dot u Q to first
  // order (h_dot = 128 / 2 + 1 and the scale multiply: k_dot = 66 roundings).
  part.max_qk = 10;
  EXPECT_NEAR(pb::partition_state_bound(c, part).max_logit, 66 * u * 10, 1e-2 * u);  // + 2nd order
}
