// The directed-rounding primitives of interval.h and exp_rn against MPFR.
// Wrong variants each test caught (run once, then reverted): add_up returning the
// round-to-nearest sum (RoundsExactlyUpward: 50% of inexact sums below MPFR's upward
// result); mul_up without the fma check, always stepping up (RoundsExactlyUpward: not the
// upward rounding of an exact product); exp_rn's Horner chain cut to degree 8
// (ExpRnWithinItsProvenError: errors of 2e-10 relative against 2^-47).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "mp.h"
#include "pagedattn_bound/interval.h"

namespace pb = pagedattn::bound;
using pb::test::Mp;

namespace {

// Random doubles over the whole range: a random sign, exponent and significand, with
// subnormals, zeros and values next to DBL_MAX now and then.
double random_double(std::mt19937_64& g) {
  const int kind = static_cast<int>(g() % 16);
  const double sign = (g() & 1) ? -1.0 : 1.0;
  if (kind == 0) return sign * std::ldexp(static_cast<double>(g() % (1u << 20)), -1074);
  if (kind == 1) return sign * std::numeric_limits<double>::max() * (1 - std::ldexp(1.0, -40));
  if (kind == 2) return 0.0;
  const double m = 1 + std::ldexp(static_cast<double>(g() >> 12), -52);
  const int e = kind < 8 ? static_cast<int>(g() % 200) - 100 : static_cast<int>(g() % 2000) - 1000;
  return sign * std::ldexp(m, e);
}

// The double MPFR rounds the exact result to, upward (53 bits, with subnormals).
double mpfr_up(int op, double a, double b) {
  mpfr_t x, y, r;
  mpfr_inits2(2200, x, y, r, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_d(x, a, MPFR_RNDN);
  mpfr_set_d(y, b, MPFR_RNDN);
  if (op == 0) mpfr_add(r, x, y, MPFR_RNDN);  // exact at 2200 bits
  if (op == 1) mpfr_mul(r, x, y, MPFR_RNDN);  // exact
  if (op == 2) mpfr_div(r, x, y, MPFR_RNDU);  // above the quotient, by < 2^-2199 relative
  // Round to a double upward, honouring the subnormal range (mpfr_get_d does).
  const double d = mpfr_get_d(r, MPFR_RNDU);
  mpfr_clears(x, y, r, static_cast<mpfr_ptr>(nullptr));
  return d;
}

}  // namespace

// add_up and div_up are IEEE's round toward +inf exactly; mul_up too outside the 2^-969
// underflow margin, where it may be one double above (still an upper bound).
TEST(Directed, RoundsExactlyUpward) {
  std::mt19937_64 g(20261130);
  for (int i = 0; i < 200000; ++i) {
    const double a = random_double(g), b = random_double(g);
    const double s = mpfr_up(0, a, b);
    ASSERT_EQ(pb::add_up(a, b), s) << a << " + " << b;
    ASSERT_EQ(pb::add_down(a, b), -mpfr_up(0, -a, -b)) << a << " + " << b;
    const double p = mpfr_up(1, a, b), pu = pb::mul_up(a, b);
    if (std::fabs(a * b) >= 0x1p-969 || a == 0 || b == 0) {
      ASSERT_EQ(pu, p) << a << " * " << b;
    } else {
      ASSERT_TRUE(pu == p || pu == pb::next_up(p)) << a << " * " << b;
    }
    if (b != 0) {
      const double q = mpfr_up(2, a, b), qu = pb::div_up(a, b);
      if (std::fabs(a / b) >= 0x1p-969 && std::fabs(a) >= 0x1p-969) {
        ASSERT_EQ(qu, q) << a << " / " << b;
      } else {
        ASSERT_TRUE(qu == q || qu == pb::next_up(q) || (a == 0 && qu == 0)) << a << " / " << b;
      }
    }
  }
}

// |exp_rn(t) - e^t| <= 2^-47 e^t over the whole range, at random arguments and at the
// argument reduction's worst points (t near (k + 1/2) ln 2, where |r| is largest).
TEST(Directed, ExpRnWithinItsProvenError) {
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> wide(pb::kExpMinArg, pb::kExpMaxArg), small(-1, 1);
  double worst = 0;
  mpfr_t e, t, err;
  mpfr_inits2(200, e, t, err, static_cast<mpfr_ptr>(nullptr));
  auto check = [&](double x) {
    if (!(x >= pb::kExpMinArg && x <= pb::kExpMaxArg)) return;
    mpfr_set_d(t, x, MPFR_RNDN);
    mpfr_exp(e, t, MPFR_RNDN);
    mpfr_set_d(err, pb::exp_rn(x), MPFR_RNDN);
    mpfr_sub(err, err, e, MPFR_RNDN);
    mpfr_div(err, err, e, MPFR_RNDN);
    const double rel = std::fabs(mpfr_get_d(err, MPFR_RNDN));
    worst = std::max(worst, rel);
    ASSERT_LE(rel, pb::kExpRelErr) << "t = " << x;
    // The enclosure.
    mpfr_set_d(err, pb::exp_up(x), MPFR_RNDN);
    ASSERT_GE(mpfr_cmp(err, e), 0) << x;
    mpfr_set_d(err, pb::exp_down(x), MPFR_RNDN);
    ASSERT_LE(mpfr_cmp(err, e), 0) << x;
  };
  for (int i = 0; i < 100000; ++i) {
    check(wide(g));
    check(small(g) * 1e-3);
  }
  const double ln2 = std::log(2.0);
  for (int k = -1010; k <= 1023; ++k) {
    for (double off : {-1e-12, 0.0, 1e-12}) {
      check((k + 0.5) * ln2 + off);
      check((k - 0.5) * ln2 + off);
    }
  }
  for (double x : {0.0, -0.0, pb::kExpMinArg, pb::kExpMaxArg, 1e-300, -1e-300}) check(x);
  mpfr_clears(e, t, err, static_cast<mpfr_ptr>(nullptr));
  RecordProperty("worst_relative_error", std::to_string(worst));
  // Outside the range: the stated one-sided bounds.
  EXPECT_EQ(pb::exp_up(-800), pb::kExpBelowMin);
  EXPECT_GT(pb::kExpBelowMin, std::exp(-700.0));
  EXPECT_EQ(pb::exp_up(710), std::numeric_limits<double>::infinity());
}

// grow_down <= (1 + u)^k - 1 <= grow_up, within a relative 2^-45 of each other, for the
// kernels' roundings (u = 2^-24, k up to 2^22) and past the series' range.
TEST(Directed, GrowEnclosesTheProduct) {
  Mp u(0x1p-24);
  for (double k : {0.0, 1.0, 2.0, 3.0, 16.0, 132.0, 258.0, 4095.0, 65535.0, 65536.0 + 258,
                   1048576.0, 4194304.0, 1e7, 2e9}) {
    const Mp exact = pb::test::grow(u, Mp(k));  // MPFR, upward, 320 bits
    const double up = pb::grow_up(0x1p-24, k), down = pb::grow_down(0x1p-24, k);
    const Mp lo = Mp(exact) * Mp(1 - pb::test::kMpSlack);
    EXPECT_FALSE(Mp(up) < lo) << k;
    EXPECT_FALSE(Mp(exact) < Mp(down)) << k;
    if (k > 0 && k * 0x1p-24 <= 1) {
      EXPECT_LE(up, down * (1 + 0x1p-45)) << k;
    }
  }
}
