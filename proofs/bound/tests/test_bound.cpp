// kernel_error_bound: its inputs, its first-order value on a case computed by hand from
// proofs/error_bound.md, and the exact magnitudes. The bound against the kernels themselves
// is tested in audit/tests/test_bound_audit.cpp.
#include <gtest/gtest.h>

#include <algorithm>
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
  const double fr = 0x1p-11 * (0.5 + h.fp32) + 0x1p-25;  // rounded to nearest: 3 operations
  EXPECT_GE(h.final_rounding, fr * (1 - 0x1p-51));
  EXPECT_LE(h.final_rounding, fr * (1 + 0x1p-50));
}

// vLLM's numerics add their terms (the epsilon alone about 1e-6 A, twice in V2: the
// partitions' and the reduce's); a single choice, outside the theorem, gets the paper
// formula, which charges that choice alone.
TEST(Bound, VllmChoicesAddTheirTerms) {
  pb::RowMagnitudes row;
  row.n = 1000;
  row.max_abs_v = 1;
  pb::ElementMagnitudes el;
  el.a = el.abs_exact = 1;
  pb::KernelConfig c = f32_v1();
  c.partition_size = 256;
  const double ours = pb::kernel_error_bound(c, row, el).total;
  EXPECT_TRUE(pb::row_bound(c, row).proven);
  c.choices = pb::Choices::vllm_compatible();
  const double vllm = pb::kernel_error_bound(c, row, el).total;
  EXPECT_TRUE(pb::row_bound(c, row).proven);
  EXPECT_GT(vllm - ours, 1.9e-6);
  c.choices = pb::Choices::exact_fp32();
  c.choices.epsilon_denominator = true;
  const double eps = pb::kernel_error_bound(c, row, el).total;
  EXPECT_FALSE(pb::row_bound(c, row).proven);  // the paper formula
  EXPECT_GT(eps - ours, 1.9e-6);
  EXPECT_LT(eps, vllm);
}

// Two tokens, logits 0 and log 3 (p = 1/4, 3/4), values 1 and -1 in one element; the
// query is 1, so the keys are the logits and Q_i = |k_i|.
TEST(Bound, ExactMagnitudesByHand) {
  const double q = 1, k[2] = {0, std::log(3.0)}, v[2] = {1, -1};
  pb::KvSource kv;
  kv.n = 2;
  kv.head_size = 1;
  kv.keys = [&](std::int64_t i0, std::int64_t i1, double* out) { std::copy(k + i0, k + i1, out); };
  kv.values = [&](std::int64_t i0, std::int64_t i1, double* out) {
    std::copy(v + i0, v + i1, out);
  };
  const pb::QueryRow qr{&q, 0};
  pb::RowMagnitudes row;
  pb::ElementMagnitudes el;
  pb::exact_magnitudes(kv, &qr, 1, &row, &el);
  const double l3 = std::log(3.0);
  EXPECT_EQ(row.n, 2);
  EXPECT_NEAR(row.spread, l3, 1e-12);
  EXPECT_NEAR(row.p_gap, 0.25 * l3, 1e-12);
  EXPECT_NEAR(row.p_qk, 0.75 * l3, 1e-12);
  EXPECT_NEAR(el.a, 1, 1e-12);
  EXPECT_NEAR(el.abs_exact, 0.5, 1e-12);
  // y = -1/2: |v - y| = 3/2 and 1/2.
  EXPECT_NEAR(el.dev, 0.25 * 1.5 + 0.75 * 0.5, 1e-12);
  EXPECT_NEAR(el.dev_qk, 0.75 * 0.5 * l3, 1e-12);
  EXPECT_NEAR(el.dev_gap, 0.25 * 1.5 * l3, 1e-12);
  EXPECT_GE(el.a, 1.0);  // an upper bound
  EXPECT_GE(row.max_abs_v, 1.0);
}
