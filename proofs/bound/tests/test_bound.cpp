// kernel_error_bound: its inputs, its first-order value on a case computed by hand from
// proofs/error_bound.md, and the exact magnitudes. The bound against the kernels themselves
// is tested in audit/tests/test_bound_audit.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "pagedattn_bound/bound.h"

namespace pb = pagedattn::bound;

namespace {
constexpr double u = 0x1p-24;

pb::KernelConfig f32_v1() {
  pb::KernelConfig c;
  c.scalar = c.cache = pb::Format::f32;
  c.head_size = 128;
  c.block_size = 16;
  c.warp_size = 32;
  c.exp = pb::ExpAccuracy{0.5, 0};  // correctly rounded exp
  return c;
}
}  // namespace

TEST(Bound, EmptyRowIsExact) {
  const pb::Bound b = pb::kernel_error_bound(f32_v1(), pb::RowMagnitudes{}, {});
  EXPECT_EQ(b.total, 0);
}

TEST(Bound, RejectsInconsistentConfigNamingTheField) {
  pb::KernelConfig c = f32_v1();
  c.scalar = pb::Format::fp8_e4m3;
  try {
    pb::kernel_error_bound(c, {}, {});
    FAIL() << "accepted an fp8 scalar";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("scalar"), std::string::npos);
  }
  c = f32_v1();
  c.partition_size = 24;  // not a multiple of 16
  EXPECT_THROW(pb::kernel_error_bound(c, {}, {}), std::invalid_argument);
}

// Section 10 of proofs/error_bound.md, by hand: f32 V1, head 128, block 16, warp 32, 128
// threads, n = 1000, all logits equal (spread 0, Q = 0), exp correctly rounded (a = 1/2):
// h_s = ceil(1000/128) + log2 32 + 3 = 16, h_o = 8 ceil(63/4) + log2 2 + 3 = 132, one
// division, and the weights' perturbation (lemma 4.7: alpha = u times sum p_i |v_i - y|,
// here 0.5 = A): (1 + 132 + 16 + 1) u A to first order. A wrong tree height or a missing
// term moves it by >= u A, far beyond the 1e-4 checked.
TEST(Bound, FirstOrderValueByHand) {
  pb::RowMagnitudes row;
  row.n = 1000;
  row.max_abs_v = 1;
  pb::ElementMagnitudes el;
  el.a = el.abs_exact = el.dev = 0.5;
  const pb::Bound b = pb::kernel_error_bound(f32_v1(), row, el);
  EXPECT_NEAR(b.fp32 / (u * 0.5), 150.0, 1e-4 * 150);
  EXPECT_EQ(b.final_rounding, 0);
  // f16 output: + u_16 (|y| + fp32) + 2^-25 for the final rounding (section 8).
  pb::KernelConfig c = f32_v1();
  c.scalar = c.cache = pb::Format::f16;
  const pb::Bound h = pb::kernel_error_bound(c, row, el);
  EXPECT_NEAR(h.final_rounding, (0x1p-11 * (0.5 + h.fp32) + 0x1p-25) * (1 + 1e-9), 1e-15);
}

// Each of vLLM's choices only adds error terms; the epsilon alone adds about 1e-6 A.
TEST(Bound, VllmChoicesAddTheirTerms) {
  pb::RowMagnitudes row;
  row.n = 1000;
  row.max_abs_v = 1;
  pb::ElementMagnitudes el;
  el.a = el.abs_exact = 1;
  pb::KernelConfig c = f32_v1();
  c.partition_size = 256;
  const double ours = pb::kernel_error_bound(c, row, el).total;
  c.choices.epsilon_denominator = true;
  const double eps = pb::kernel_error_bound(c, row, el).total;
  EXPECT_GT(eps - ours, 1.9e-6);  // two epsilons: the partitions' and the reduce's
  c.choices = pb::Choices::vllm_compatible();
  EXPECT_GT(pb::kernel_error_bound(c, row, el).total, eps);
}

// Two tokens, logits 0 and log 3 (p = 1/4, 3/4), values 1 and -1 in one element.
TEST(Bound, ExactMagnitudesByHand) {
  const double x[2] = {0, std::log(3.0)}, q[2] = {2, 5}, v[2] = {1, -1};
  pb::RowMagnitudes row;
  pb::ElementMagnitudes el;
  pb::exact_magnitudes(2, 1, x, q, v, 7, &row, &el);
  EXPECT_EQ(row.n, 2);
  EXPECT_NEAR(row.spread, std::log(3.0), 1e-8);
  EXPECT_NEAR(row.p_gap, 0.25 * std::log(3.0), 1e-8);
  EXPECT_NEAR(row.p_qk, 0.25 * 2 + 0.75 * 5, 1e-8);
  EXPECT_NEAR(el.a, 1, 1e-8);
  EXPECT_NEAR(el.abs_exact, 0.5, 1e-8);
  // y = -1/2: |v - y| = 3/2 and 1/2.
  EXPECT_NEAR(el.dev, 0.25 * 1.5 + 0.75 * 0.5, 1e-8);
  EXPECT_NEAR(el.dev_qk, 0.25 * 1.5 * 2 + 0.75 * 0.5 * 5, 1e-8);
  EXPECT_NEAR(el.dev_gap, 0.25 * 1.5 * std::log(3.0), 1e-8);
  EXPECT_GE(el.a, 1.0);  // inflated: an upper bound
  EXPECT_EQ(row.max_abs_v >= 1.0, true);
}

// widen_for_logit_error: magnitudes from logits moved by up to e each, then widened by e,
// bound those of the exact logits, field by field (e large, so the 1e-9 inflation of
// exact_magnitudes cannot hide a missing term; without the weights' factor exp(2e) - 1 the
// p-weighted sums fail here).
TEST(Bound, WideningCoversLogitsOffByE) {
  std::uint64_t state = 7;
  auto rnd = [&] {  // uniform in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) * 0x1p-52 - 1;
  };
  const int n = 9, D = 3;
  for (double e : {0.0, 1e-3, 0.05, 0.5}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<double> x(n), xt(n), q(n), v(n * D);
      for (int i = 0; i < n; ++i) {
        x[i] = 4 * rnd();
        xt[i] = x[i] + e * rnd();
        q[i] = 5 + 4 * rnd();
      }
      for (double& w : v) w = rnd() + (trial % 2 ? 0.9 : 0.0);  // some rows cancel less
      pb::RowMagnitudes row, rt;
      std::vector<pb::ElementMagnitudes> el(D), et(D);
      pb::exact_magnitudes(n, D, x.data(), q.data(), v.data(), 1, &row, el.data());
      pb::exact_magnitudes(n, D, xt.data(), q.data(), v.data(), 1, &rt, et.data());
      pb::widen_for_logit_error(e, D, &rt, et.data());
      EXPECT_GE(rt.spread, row.spread);
      EXPECT_GE(rt.max_abs_logit, row.max_abs_logit);
      EXPECT_GE(rt.p_gap, row.p_gap);
      EXPECT_GE(rt.p_qk, row.p_qk);
      EXPECT_GE(rt.p_x, row.p_x);
      for (int d = 0; d < D; ++d) {
        EXPECT_GE(et[d].a, el[d].a);
        EXPECT_GE(et[d].dev, el[d].dev);
        EXPECT_GE(et[d].dev_gap, el[d].dev_gap);
        EXPECT_GE(et[d].dev_qk, el[d].dev_qk);
        EXPECT_GE(et[d].dev_x, el[d].dev_x);
        EXPECT_GE(et[d].abs_exact, el[d].abs_exact - 2e-9 * el[d].a);
      }
      if (e == 0) {
        EXPECT_EQ(rt.p_gap, row.p_gap);  // nothing moved: nothing widened
      }
    }
  }
}
