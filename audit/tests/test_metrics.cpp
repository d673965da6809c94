// Metric definitions on hand-made outputs whose errors are known exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "pagedattn_audit/inputs.h"
#include "pagedattn_audit/metrics.h"

namespace pagedattn::audit {
namespace {

TEST(Metrics, UlpOfEachFormat) {
  EXPECT_EQ(ulp_of(DType::f16, 1.0), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp_of(DType::f16, 1.5), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp_of(DType::f16, 65504.0), 32.0);
  EXPECT_EQ(ulp_of(DType::f16, 0.0), std::ldexp(1.0, -24));  // subnormal quantum
  EXPECT_EQ(ulp_of(DType::f16, std::ldexp(1.0, -20)), std::ldexp(1.0, -24));
  EXPECT_EQ(ulp_of(DType::bf16, 1.0), std::ldexp(1.0, -7));
  EXPECT_EQ(ulp_of(DType::bf16, -3.0), std::ldexp(1.0, -6));
  EXPECT_EQ(ulp_of(DType::f32, 1.0), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_of(DType::f32, 0.0), std::ldexp(1.0, -149));
}

std::vector<std::uint8_t> f16_out(const std::vector<float>& v) {
  std::vector<std::uint8_t> b(2 * v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint16_t h = float_to_f16_bits(v[i]);
    std::memcpy(&b[2 * i], &h, 2);
  }
  return b;
}

TEST(Metrics, F16KnownErrors) {
  // exact 1 + 2^-12 rounds to 1.0; the kernel gave 1 + 2^-10 (one ulp above 1.0):
  // error 3 * 2^-12 = 0.75 ulp of 1.0. Second element: exact, error 0.
  const double e0 = 1 + std::ldexp(1.0, -12);
  const std::vector<double> exact{e0, 0.5};
  const std::vector<std::uint32_t> rounded{float_to_f16_bits(1.0f), float_to_f16_bits(0.5f)};
  const auto out = f16_out({1.0f + std::ldexp(1.0f, -10), 0.5f});
  const Metrics m = compute_metrics(DType::f16, out.data(), exact, rounded);
  EXPECT_EQ(m.elements, 2);
  EXPECT_DOUBLE_EQ(m.max_abs_err, 3 * std::ldexp(1.0, -12));
  EXPECT_DOUBLE_EQ(m.mean_abs_err, 1.5 * std::ldexp(1.0, -12));
  EXPECT_DOUBLE_EQ(m.max_ulp_err, 0.75);
  EXPECT_DOUBLE_EQ(m.max_rel_err, 3 * std::ldexp(1.0, -12) / e0);
  EXPECT_EQ(m.nonfinite, 0);
}

TEST(Metrics, CorrectlyRoundedScoresAtMostHalf) {
  std::mt19937 gen(1);
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<double> exact;
  std::vector<std::uint32_t> rounded;
  std::vector<float> out;
  for (int i = 0; i < 1000; ++i) {
    exact.push_back(u(gen));
    // Through float: a double rounding could land a hair past a midpoint, hence 0.5 + tiny.
    const std::uint16_t h = float_to_f16_bits(static_cast<float>(exact.back()));
    rounded.push_back(h);
    out.push_back(f16_bits_to_float(h));
  }
  const auto b = f16_out(out);
  EXPECT_LE(compute_metrics(DType::f16, b.data(), exact, rounded).max_ulp_err, 0.5 + 1e-6);
}

TEST(Metrics, Bf16AndF32KnownErrors) {
  // bf16: exact 1.0, kernel 1 + 2^-7 (next bf16): 1 ulp.
  std::vector<std::uint8_t> b(2);
  const std::uint16_t h = float_to_bf16_bits(1.0f + std::ldexp(1.0f, -7));
  std::memcpy(b.data(), &h, 2);
  Metrics m = compute_metrics(DType::bf16, b.data(), {1.0}, {float_to_bf16_bits(1.0f)});
  EXPECT_DOUBLE_EQ(m.max_ulp_err, 1.0);
  // f32: exact 2.0, kernel 2 - 2^-22 (two steps down, in the binade below): the error
  // 2^-22 is measured in the ulp of round(exact) = 2.0, which is 2^-22: 1 ulp.
  const float f = 2.0f - std::ldexp(1.0f, -22);
  std::uint32_t fb;
  std::memcpy(&fb, &f, 4);
  std::uint32_t two;
  const float t = 2.0f;
  std::memcpy(&two, &t, 4);
  m = compute_metrics(DType::f32, &fb, {2.0}, {two});
  EXPECT_DOUBLE_EQ(m.max_ulp_err, 1.0);
  EXPECT_DOUBLE_EQ(m.max_abs_err, std::ldexp(1.0, -22));
}

TEST(Metrics, NanOutputIsInfiniteErrorNeverHidden) {
  const auto out = f16_out({std::numeric_limits<float>::quiet_NaN(), 1.0f});
  const Metrics m = compute_metrics(DType::f16, out.data(), {0.25, 1.0},
                                    {float_to_f16_bits(0.25f), float_to_f16_bits(1.0f)});
  EXPECT_EQ(m.nonfinite, 1);
  EXPECT_TRUE(std::isinf(m.max_abs_err));
  EXPECT_TRUE(std::isinf(m.max_ulp_err));
  EXPECT_TRUE(std::isinf(m.max_rel_err));
  EXPECT_TRUE(std::isinf(m.mean_abs_err));
}

TEST(Metrics, ExactNanIsCountedApart) {
  const auto out = f16_out({1.0f});
  const Metrics m = compute_metrics(DType::f16, out.data(), {std::nan("")}, {0x7e00});
  EXPECT_EQ(m.elements, 0);
  EXPECT_EQ(m.exact_nan, 1);
  EXPECT_EQ(m.exact_nan_mismatch, 1);
}

// err_over_bound counts the reference's own error (testing::ratio_over_bound): an output
// 0.25 off a value that is itself within 0.125 of the exact result, against a bound of 0.3,
// is up to 0.375 off (over the bound), where |out - value| / bound alone reads 0.83.
TEST(Metrics, ErrOverBoundCountsTheReferenceError) {
  const auto out = f16_out({1.25f, 1.0f});
  const std::vector<double> exact = {1.0, 1.0}, bounds = {0.3, 0.3};
  const std::vector<std::uint32_t> rounded = {float_to_f16_bits(1.0f), float_to_f16_bits(1.0f)};
  const std::vector<double> err = {0.125, 0.0};
  const Metrics with = compute_metrics(DType::f16, out.data(), exact, rounded, &bounds, &err);
  EXPECT_GT(*with.err_over_bound, 1.0);
  EXPECT_EQ(with.worst_element, 0);
  const Metrics without = compute_metrics(DType::f16, out.data(), exact, rounded, &bounds);
  EXPECT_LT(*without.err_over_bound, 1.0);
  const std::vector<double> short_err = {0.125};
  EXPECT_THROW(compute_metrics(DType::f16, out.data(), exact, rounded, &bounds, &short_err),
               std::invalid_argument);
}

}  // namespace
}  // namespace pagedattn::audit
