// The emulator's fp16, bf16 and fp8 types against references built here from the format
// definitions alone: a table of every value decoded with ldexp, and rounding by searching that
// table (nearest value, ties to the even encoding). No reference calls the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "emu/cuda_bf16.h"
#include "emu/cuda_fp16.h"
#include "emu/cuda_fp8.h"

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A binary format described by its field widths; `ieee` formats have inf and NaN in the
// all-ones exponent, E4M3 only has NaN at S.1111.111.
struct Spec {
  int exp_bits, man_bits, bias;
  bool ieee;
};
constexpr Spec kHalfSpec{5, 10, 15, true};
constexpr Spec kBf16Spec{8, 7, 127, true};
constexpr Spec kE4M3Spec{4, 3, 7, false};
constexpr Spec kE5M2Spec{5, 2, 15, true};

// Value of a magnitude encoding from the format formula; NaN for NaN encodings.
double ref_decode(const Spec& s, uint32_t mag) {
  const uint32_t e = mag >> s.man_bits, m = mag & ((1u << s.man_bits) - 1);
  const uint32_t emax_field = (1u << s.exp_bits) - 1;
  if (s.ieee && e == emax_field) return m == 0 ? INFINITY : NAN;
  if (!s.ieee && e == emax_field && m == (1u << s.man_bits) - 1) return NAN;
  if (e == 0) return std::ldexp(double(m), 1 - s.bias - s.man_bits);
  return std::ldexp(double(m + (1u << s.man_bits)), int(e) - s.bias - s.man_bits);
}

// All finite non-negative values in increasing order with their encodings, plus one entry past
// the largest finite value (the next value the grid would have): rounding to it means overflow.
struct Table {
  Spec spec;
  std::vector<double> v;
  std::vector<uint32_t> enc;
  uint32_t max_finite;
};
Table make_table(const Spec& s) {
  Table t{s, {}, {}, 0};
  for (uint32_t mag = 0; mag < (1u << (s.exp_bits + s.man_bits)); ++mag) {
    const double d = ref_decode(s, mag);
    if (!std::isfinite(d)) break;  // encodings are ordered; the first non-finite ends them
    t.v.push_back(d);
    t.enc.push_back(mag);
  }
  t.max_finite = t.enc.back();
  const double ulp_top = t.v.back() - t.v[t.v.size() - 2];
  t.v.push_back(t.v.back() + ulp_top);
  t.enc.push_back(t.max_finite + 1);
  return t;
}

enum class Mode { rn, rz };
// Reference rounding of a finite |x| (exact double differences: the inputs used here are floats
// or short doubles near the table values). Returns the magnitude encoding, which is
// max_finite + 1 on overflow under rn.
uint32_t ref_round_mag(const Table& t, double ax, Mode mode) {
  auto it = std::upper_bound(t.v.begin(), t.v.end(), ax);
  if (it == t.v.end()) return mode == Mode::rz ? t.max_finite : t.max_finite + 1;
  const size_t hi = size_t(it - t.v.begin()), lo = hi - 1;
  if (t.v[lo] == ax) return t.enc[lo];
  if (mode == Mode::rz) return std::min(t.enc[lo], t.max_finite);
  const double dlo = ax - t.v[lo], dhi = t.v[hi] - ax;
  if (dlo < dhi) return t.enc[lo];
  if (dhi < dlo) return t.enc[hi];
  return (t.enc[lo] & 1) ? t.enc[hi] : t.enc[lo];
}

// Floats that probe every rounding decision of a table: each value, each midpoint, and their
// float neighbours, in both signs, plus a strided sweep of all floats in [lo, hi].
std::vector<float> probe_floats(const Table& t, float lo, float hi, uint32_t stride) {
  std::vector<float> xs;
  for (size_t i = 0; i + 1 < t.v.size(); ++i) {
    const float a = float(t.v[i]), m = float((t.v[i] + t.v[i + 1]) / 2);
    for (float c : {a, m}) {
      xs.push_back(c);
      xs.push_back(std::nextafter(c, INFINITY));
      xs.push_back(std::nextafter(c, 0.0f));
    }
  }
  for (uint32_t u = bits_of(lo); u <= bits_of(hi); u += stride) xs.push_back(float_of(u));
  const size_t n = xs.size();
  for (size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
  return xs;
}

const Table& half_table() {
  static const Table t = make_table(kHalfSpec);
  return t;
}
const Table& bf16_table() {
  static const Table t = make_table(kBf16Spec);
  return t;
}

// Expected fp16/bf16 bits under round to nearest even (rn) or toward zero (rz).
uint16_t ref_ieee16(const Table& t, double x, Mode mode) {
  const uint16_t inf = uint16_t(t.max_finite + 1);
  if (std::isnan(x)) return 0x7fff;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isinf(x)) return sign | inf;
  return uint16_t(sign | ref_round_mag(t, std::fabs(x), mode));
}

// ------------------------------------------------------------------ fp16

TEST(Half, EveryBitPatternDecodesToTheFormulaValue) {
  for (uint32_t u = 0; u < 65536; ++u) {
    const double want = (u & 0x8000 ? -1 : 1) * ref_decode(kHalfSpec, u & 0x7fff);
    const float got = __half2float(__ushort_as_half(uint16_t(u)));
    // NaN: the payload kept, a signaling NaN not quieted (shown failing, built with the
    // kernels' flags, when F16C converts NaN too).
    if (std::isnan(want))
      ASSERT_EQ(bits_of(got), (u & 0x8000) << 16 | 0x7f800000u | (u & 0x3ff) << 13) << u;
    else
      ASSERT_EQ(bits_of(got), bits_of(float(want))) << u;  // bits: keeps -0 apart from +0
  }
}

TEST(Half, FloatToHalfRoundsToNearestEvenOnEveryTieBoundaryAndSweep) {
  const Table& t = half_table();
  for (float x : probe_floats(t, 0x1p-27f, 0x1p17f, 97)) {
    ASSERT_EQ(__half_as_ushort(__float2half_rn(x)), ref_ieee16(t, x, Mode::rn)) << x;
    ASSERT_EQ(__half_as_ushort(__float2half(x)), ref_ieee16(t, x, Mode::rn)) << x;
    ASSERT_EQ(__half_as_ushort(__half(x)), ref_ieee16(t, x, Mode::rn)) << x;
  }
}

TEST(Half, FloatToHalfTowardZero) {
  const Table& t = half_table();
  for (float x : probe_floats(t, 0x1p-27f, 0x1p17f, 997))
    ASSERT_EQ(__half_as_ushort(__float2half_rz(x)), ref_ieee16(t, x, Mode::rz)) << x;
  EXPECT_EQ(__half_as_ushort(__float2half_rz(1e9f)), 0x7bff);  // rz overflow: max finite
  EXPECT_EQ(__half_as_ushort(__float2half_rz(INFINITY)), 0x7c00);
}

TEST(Half, OverflowSubnormalsAndSpecials) {
  EXPECT_EQ(__half_as_ushort(__float2half(65504.0f)), 0x7bff);
  EXPECT_EQ(__half_as_ushort(__float2half(65519.99f)), 0x7bff);
  EXPECT_EQ(__half_as_ushort(__float2half(65520.0f)), 0x7c00);  // tie goes to even: inf
  EXPECT_EQ(__half_as_ushort(__float2half(-65520.0f)), 0xfc00);
  EXPECT_EQ(__half_as_ushort(__float2half(0x1p-24f)), 0x0001);  // smallest subnormal
  EXPECT_EQ(__half_as_ushort(__float2half(0x1p-25f)), 0x0000);  // tie with 0: even
  EXPECT_EQ(__half_as_ushort(__float2half(0x1.000002p-25f)), 0x0001);
  EXPECT_EQ(__half_as_ushort(__float2half(0x1.ffcp-15f)),
            0x0400);  // tie above the largest subnormal: 2^-14
  EXPECT_EQ(__half_as_ushort(__float2half(-0.0f)), 0x8000);
  EXPECT_TRUE(__hisnan(__float2half(NAN)));
  EXPECT_EQ(__hisinf(__float2half(INFINITY)), 1);
  EXPECT_EQ(__hisinf(__float2half(-INFINITY)), -1);
  EXPECT_EQ(__hisinf(__float2half(1.0f)), 0);
}

TEST(Half, DoubleRoundsOnceNotThroughFloat) {
  // Just above the tie between 1 and 1 + 2^-10: through float it would become the tie and
  // round down to 1.
  const double x = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(__half_as_ushort(__double2half(x)), 0x3c01);
  EXPECT_EQ(__half_as_ushort(__half(x)), 0x3c01);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-70000.0, 70000.0);
  for (int i = 0; i < 200000; ++i) {
    const double d = u(rng);
    ASSERT_EQ(__half_as_ushort(__double2half(d)), ref_ieee16(half_table(), d, Mode::rn)) << d;
  }
}

TEST(Half, IntegersConvertLikeIntToHalfRn) {
  for (int i = -70000; i <= 70000; ++i)
    ASSERT_EQ(__half_as_ushort(__half(i)), ref_ieee16(half_table(), double(i), Mode::rn)) << i;
  EXPECT_EQ(__half_as_ushort(__half(2049LL)), 0x6800);  // tie 2048/2050 goes to even 2048
}

TEST(Half, Half2PackingPutsXInTheLowHalf) {
  const __half2 h = __floats2half2_rn(1.0f, 2.0f);
  uint32_t w;
  static_assert(sizeof(h) == 4, "");
  std::memcpy(&w, &h, 4);
  EXPECT_EQ(w, 0x40003c00u);
  EXPECT_EQ(__half_as_ushort(__low2half(h)), 0x3c00);
  EXPECT_EQ(__half_as_ushort(__high2half(h)), 0x4000);
  EXPECT_EQ(__low2float(h), 1.0f);
  EXPECT_EQ(__high2float(h), 2.0f);
  const float2 f = __half22float2(h);
  EXPECT_EQ(f.x, 1.0f);
  EXPECT_EQ(f.y, 2.0f);
  const __half2 g = __float22half2_rn(make_float2(3.0f, 4.0f));
  EXPECT_EQ(__low2float(g), 3.0f);
  EXPECT_EQ(__high2float(g), 4.0f);
  const __half2 b = __float2half2_rn(5.0f);
  EXPECT_EQ(__low2float(b), 5.0f);
  EXPECT_EQ(__high2float(b), 5.0f);
  const __half2 p = __halves2half2(__float2half(6.0f), __float2half(7.0f));
  const __half2_raw raw = p;
  EXPECT_EQ(raw.x, __half_as_ushort(__float2half(6.0f)));
  EXPECT_EQ(raw.y, __half_as_ushort(__float2half(7.0f)));
  EXPECT_EQ(__half_as_ushort(__short_as_half(short(-17408))), 0xbc00);  // -1.0
}

// Random half bit patterns over all finite values, subnormals included.
__half random_finite_half(std::mt19937& rng) {
  for (;;) {
    const uint16_t u = uint16_t(rng());
    if ((u & 0x7c00) != 0x7c00) return __ushort_as_half(u);
  }
}

TEST(Half, AddSubMulDivAreCorrectlyRounded) {
  std::mt19937 rng(2);
  const Table& t = half_table();
  for (int i = 0; i < 400000; ++i) {
    const __half a = random_finite_half(rng), b = random_finite_half(rng);
    const double x = __half2float(a), y = __half2float(b);
    // Exact in double: + - * of halves need at most 40 and 22 bits.
    ASSERT_EQ(__half_as_ushort(__hadd(a, b)), ref_ieee16(t, x + y, Mode::rn)) << x << " " << y;
    ASSERT_EQ(__half_as_ushort(__hsub(a, b)), ref_ieee16(t, x - y, Mode::rn));
    ASSERT_EQ(__half_as_ushort(__hmul(a, b)), ref_ieee16(t, x * y, Mode::rn));
    ASSERT_EQ(__half_as_ushort(a + b), ref_ieee16(t, x + y, Mode::rn));
    ASSERT_EQ(__half_as_ushort(a * b), ref_ieee16(t, x * y, Mode::rn));
    if (y != 0) {
      // x / y in double is within 2^-53 relative; a half quotient cannot be that close to a
      // half midpoint without being on it, so the double rounds to the same half.
      ASSERT_EQ(__half_as_ushort(__hdiv(a, b)), ref_ieee16(t, x / y, Mode::rn));
      ASSERT_EQ(__half_as_ushort(a / b), ref_ieee16(t, x / y, Mode::rn));
    }
  }
}

// Exact a*b + c for halves as an integer multiple of 2^-48, rounded by the table with exact
// integer comparisons.
uint16_t ref_half_fma(double a, double b, double c) {
  using i128 = __int128;
  const i128 ia = i128(std::ldexp(a, 24)), ib = i128(std::ldexp(b, 24));
  const i128 s = ia * ib + i128(std::ldexp(c, 24)) * (i128(1) << 24);  // units of 2^-48
  if (s == 0) return (std::signbit(a) != std::signbit(b) && std::signbit(c)) ? 0x8000 : 0;
  const bool neg = s < 0;
  const i128 as = neg ? -s : s;
  const Table& t = half_table();
  auto scaled = [&](size_t i) { return i128(std::ldexp(t.v[i], 48)); };  // exact: <= 2^65
  // The first table value above |s|, by bisection on exact integers (t.v ascends). Not
  // std::partition_point over an index vector: building that vector per call made this test
  // 130 s under ASan.
  size_t hi = 0;
  for (size_t n = t.v.size(); n > 0;) {
    const size_t half = n / 2;
    if (scaled(hi + half) <= as) {
      hi += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  uint16_t mag;
  if (hi == t.v.size()) {
    mag = uint16_t(t.max_finite + 1);
  } else {
    const size_t lo = hi - 1;
    const i128 dlo = as - scaled(lo), dhi = scaled(hi) - as;
    mag = uint16_t(dlo < dhi   ? t.enc[lo]
                   : dhi < dlo ? t.enc[hi]
                               : (t.enc[lo] & 1 ? t.enc[hi] : t.enc[lo]));
  }
  return uint16_t((neg ? 0x8000 : 0) | mag);
}

TEST(Half, FmaRoundsOnceIncludingNearTies) {
  std::mt19937 rng(3);
  const Table& t = half_table();
  for (int i = 0; i < 20000; ++i) {
    const __half a = random_finite_half(rng), b = random_finite_half(rng);
    const double x = __half2float(a), y = __half2float(b);
    // c chosen so that a*b + c lands on or next to a half midpoint, where a second rounding
    // (through float) would go wrong.
    const double p = std::fabs(x * y);
    auto it = std::upper_bound(t.v.begin(), t.v.end(), p);
    if (it == t.v.end() || it == t.v.begin()) continue;
    const double mid = (*(it - 1) + *it) / 2;
    const __half c0 = __double2half((std::signbit(x * y) ? -mid : mid) - x * y);
    for (__half c :
         {c0, __ushort_as_half(uint16_t(__half_as_ushort(c0) + 1)),
          __ushort_as_half(uint16_t(__half_as_ushort(c0) - 1)), random_finite_half(rng)}) {
      if ((__half_as_ushort(c) & 0x7c00) == 0x7c00) continue;
      const double z = __half2float(c);
      ASSERT_EQ(__half_as_ushort(__hfma(a, b, c)), ref_half_fma(x, y, z))
          << x << " " << y << " " << z;
    }
  }
}

TEST(Half, FmaDoubleRoundingCase) {
  // 3 * 683 = 2049 is the tie between 2048 and 2050; through float, 2049 + 2^-24 would
  // round to the tie and then to 2048 (even).
  const __half a = __float2half(3.0f), b = __float2half(683.0f);
  EXPECT_EQ(__half_as_ushort(__hfma(a, b, __float2half(0x1p-24f))), 0x6801);   // 2050
  EXPECT_EQ(__half_as_ushort(__hfma(a, b, __float2half(-0x1p-24f))), 0x6800);  // 2048
  EXPECT_EQ(__half_as_ushort(__hfma(a, b, __float2half(0.0f))), 0x6800);       // tie: even
}

TEST(Half, NegAbsCompareMinMax) {
  const __half one = __float2half(1.0f), two = __float2half(2.0f), nan = __float2half(NAN);
  EXPECT_EQ(__half_as_ushort(__hneg(one)), 0xbc00);
  EXPECT_EQ(__half_as_ushort(__habs(__hneg(one))), 0x3c00);
  EXPECT_EQ(__half_as_ushort(-one), 0xbc00);
  EXPECT_TRUE(one < two && two > one && one <= one && one == one && one != two);
  EXPECT_FALSE(nan == nan);
  EXPECT_TRUE(nan != nan);
  EXPECT_FALSE(__hlt(nan, one));
  EXPECT_EQ(__half_as_ushort(__hmax(one, two)), 0x4000);
  EXPECT_EQ(__half_as_ushort(__hmin(one, two)), 0x3c00);
  EXPECT_EQ(__half_as_ushort(__hmax(nan, one)), 0x3c00);
  EXPECT_EQ(__half_as_ushort(__hmax(__float2half(-0.0f), __float2half(0.0f))), 0x0000);
  EXPECT_EQ(__half_as_ushort(__hmin(__float2half(0.0f), __float2half(-0.0f))), 0x8000);
  const __half2 v =
      __hfma2(__floats2half2_rn(1, 2), __floats2half2_rn(3, 4), __floats2half2_rn(5, 6));
  EXPECT_EQ(__low2float(v), 8.0f);
  EXPECT_EQ(__high2float(v), 14.0f);
  const __half2 w =
      __hadd2(__floats2half2_rn(1, 2), __hmul2(__floats2half2_rn(3, 4), __floats2half2_rn(5, 6)));
  EXPECT_EQ(__low2float(w), 16.0f);
  EXPECT_EQ(__high2float(w), 26.0f);
  __half h = one;
  h += two;
  h *= two;
  EXPECT_EQ(float(h), 6.0f);
  float f = h;  // implicit conversion, as CUDA allows
  EXPECT_EQ(f, 6.0f);
}

// ------------------------------------------------------------------ bf16

TEST(Bf16, EveryBitPatternDecodesToTheFormulaValue) {
  for (uint32_t u = 0; u < 65536; ++u) {
    const double want = (u & 0x8000 ? -1 : 1) * ref_decode(kBf16Spec, u & 0x7fff);
    const float got = __bfloat162float(__ushort_as_bfloat16(uint16_t(u)));
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(got)) << u;
    else
      ASSERT_EQ(bits_of(got), bits_of(float(want))) << u;
  }
}

TEST(Bf16, FloatToBf16RoundsToNearestEvenAndTowardZero) {
  const Table& t = bf16_table();
  for (float x : probe_floats(t, 0x1p-149f, 0x1.fffffep127f, 1021)) {
    ASSERT_EQ(__bfloat16_as_ushort(__float2bfloat16(x)), ref_ieee16(t, x, Mode::rn)) << x;
    ASSERT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(x)), ref_ieee16(t, x, Mode::rn)) << x;
    ASSERT_EQ(__bfloat16_as_ushort(__float2bfloat16_rz(x)), ref_ieee16(t, x, Mode::rz)) << x;
  }
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16(0x1.ffp127f)), 0x7f80);  // tie: even is inf
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16(0x1.fefffep127f)), 0x7f7f);
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rz(INFINITY)), 0x7f80);
  EXPECT_TRUE(__hisnan(__float2bfloat16(NAN)));
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16(-0.0f)), 0x8000);
  // Through float, 1 + 2^-8 + 2^-40 would become the tie and round to 1.
  EXPECT_EQ(__bfloat16_as_ushort(__double2bfloat16(1.0 + 0x1p-8 + 0x1p-40)), 0x3f81);
}

__nv_bfloat16 random_finite_bf16(std::mt19937& rng) {
  for (;;) {
    const uint16_t u = uint16_t(rng());
    if ((u & 0x7f80) != 0x7f80) return __ushort_as_bfloat16(u);
  }
}

// Verifies that `got` is the correctly rounded |x| / |y| without dividing: the quotient must
// lie between the midpoints around `got` (products of a midpoint and y are exact in double).
::testing::AssertionResult is_rounded_quotient(const Table& t, double x, double y, uint16_t got) {
  const uint32_t idx = got & 0x7fffu;  // table index == magnitude encoding
  if ((got & 0x8000u) != ((std::signbit(x) != std::signbit(y)) ? 0x8000u : 0u))
    return ::testing::AssertionFailure() << "sign";
  if (idx > t.max_finite + 1) return ::testing::AssertionFailure() << "NaN";
  const double ax = std::fabs(x), ay = std::fabs(y);
  const bool even = (idx & 1) == 0;
  if (idx > 0) {
    const double m = (t.v[idx - 1] + t.v[idx]) / 2 * ay;
    if (ax < m || (ax == m && !even)) return ::testing::AssertionFailure() << "too big";
  }
  if (idx <= t.max_finite) {
    const double m = (t.v[idx] + t.v[idx + 1]) / 2 * ay;
    if (ax > m || (ax == m && !even)) return ::testing::AssertionFailure() << "too small";
  }
  return ::testing::AssertionSuccess();
}

TEST(Bf16, ArithmeticIsCorrectlyRoundedIncludingSubnormalResults) {
  std::mt19937 rng(4);
  const Table& t = bf16_table();
  int adds = 0;
  for (int i = 0; i < 400000; ++i) {
    const __nv_bfloat16 a = random_finite_bf16(rng), b = random_finite_bf16(rng);
    const double x = __bfloat162float(a), y = __bfloat162float(b);
    // x + y is exact in double when the exponents are within 40 of each other (or one is 0).
    if (x == 0 || y == 0 || std::abs(std::ilogb(x) - std::ilogb(y)) < 40) {
      ++adds;
      ASSERT_EQ(__bfloat16_as_ushort(__hadd(a, b)), ref_ieee16(t, x + y, Mode::rn))
          << x << " " << y;
      ASSERT_EQ(__bfloat16_as_ushort(a - b), ref_ieee16(t, x - y, Mode::rn));
    }
    ASSERT_EQ(__bfloat16_as_ushort(__hmul(a, b)), ref_ieee16(t, x * y, Mode::rn));  // exact
    ASSERT_EQ(__bfloat16_as_ushort(a * b), ref_ieee16(t, x * y, Mode::rn));
    if (y != 0) {
      ASSERT_TRUE(is_rounded_quotient(t, x, y, __bfloat16_as_ushort(a / b))) << x << " " << y;
    }
  }
  EXPECT_GT(adds, 50000);
  // Results in float's subnormal range, where a float intermediate would round first.
  for (uint32_t ua = 0x0001; ua < 0x0400; ua += 7)
    for (uint32_t ub = 0x3e00; ub < 0x4200; ub += 3) {
      const __nv_bfloat16 a = __ushort_as_bfloat16(uint16_t(ua)),
                          b = __ushort_as_bfloat16(uint16_t(ub));
      const double x = __bfloat162float(a), y = __bfloat162float(b);
      ASSERT_EQ(__bfloat16_as_ushort(__hmul(a, b)), ref_ieee16(t, x * y, Mode::rn));
      ASSERT_TRUE(is_rounded_quotient(t, x, y, __bfloat16_as_ushort(__hdiv(a, b))))
          << x << " " << y;
    }
}

TEST(Bf16, FmaRoundsOnce) {
  // 7 * 37 = 259 is the tie between 258 and 260: a tiny c decides it. Through float, 259 - 1e-30
  // would round to the tie and then to 260 (even).
  const __nv_bfloat16 a = __float2bfloat16(7.0f), b = __float2bfloat16(37.0f);
  EXPECT_EQ(__bfloat16_as_ushort(__hfma(a, b, __float2bfloat16(-1e-30f))), 0x4381);  // 258
  EXPECT_EQ(__bfloat16_as_ushort(__hfma(a, b, __float2bfloat16(0.0f))), 0x4382);     // tie: 260
  EXPECT_EQ(__bfloat16_as_ushort(__hfma(a, b, __float2bfloat16(1e-30f))), 0x4382);
  const __nv_bfloat162 v = __hfma2(__floats2bfloat162_rn(7, 7), __floats2bfloat162_rn(37, 37),
                                   __floats2bfloat162_rn(-1e-30f, 1e-30f));
  EXPECT_EQ(__low2float(v), 258.0f);
  EXPECT_EQ(__high2float(v), 260.0f);
}

TEST(Bf16, Bf162PackingPutsXInTheLowHalf) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(1.0f, 2.0f);
  uint32_t w;
  std::memcpy(&w, &h, 4);
  EXPECT_EQ(w, 0x40003f80u);
  EXPECT_EQ(__bfloat16_as_ushort(__low2bfloat16(h)), 0x3f80);
  EXPECT_EQ(__bfloat16_as_ushort(__high2bfloat16(h)), 0x4000);
  const float2 f = __bfloat1622float2(__float22bfloat162_rn(make_float2(3.0f, 4.0f)));
  EXPECT_EQ(f.x, 3.0f);
  EXPECT_EQ(f.y, 4.0f);
  EXPECT_EQ(__low2float(h), 1.0f);
  EXPECT_EQ(__high2float(h), 2.0f);
  const __nv_bfloat162 v = __hfma2(h, h, h);
  EXPECT_EQ(__low2float(v), 2.0f);
  EXPECT_EQ(__high2float(v), 6.0f);
}

// ------------------------------------------------------------------ fp8

struct Fp8Case {
  __nv_fp8_interpretation_t kind;
  Spec spec;
};
const Fp8Case kFp8[] = {{__NV_E4M3, kE4M3Spec}, {__NV_E5M2, kE5M2Spec}};

double ref_fp8_value(const Spec& s, uint32_t byte) {
  return (byte & 0x80 ? -1 : 1) * ref_decode(s, byte & 0x7f);
}

TEST(Fp8, EveryBitPatternDecodes) {
  for (const Fp8Case& k : kFp8)
    for (uint32_t u = 0; u < 256; ++u) {
      const double want = ref_fp8_value(k.spec, u);
      const __half_raw h = __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(u), k.kind);
      const float got = __half2float(__half(h));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << u;
      } else {
        ASSERT_EQ(bits_of(got), bits_of(float(want))) << u;
      }
    }
  // Named facts from CUDA's documentation.
  EXPECT_EQ(ref_fp8_value(kE4M3Spec, 0x7e), 448.0);
  EXPECT_EQ(ref_fp8_value(kE5M2Spec, 0x7b), 57344.0);
  EXPECT_TRUE(std::isinf(ref_fp8_value(kE5M2Spec, 0x7c)));
  EXPECT_EQ(ref_fp8_value(kE4M3Spec, 0x01), 0x1p-9);
  EXPECT_EQ(ref_fp8_value(kE5M2Spec, 0x01), 0x1p-16);
}

// Expected fp8 byte for x under a saturation mode.
uint8_t ref_fp8(const Table& t, bool e4m3, double x, __nv_saturation_t sat) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return sign | (e4m3 ? 0x7f : 0x7e);
  const uint32_t mag = std::isinf(x) ? t.max_finite + 1 : ref_round_mag(t, std::fabs(x), Mode::rn);
  if (mag <= t.max_finite) return uint8_t(sign | mag);
  if (sat == __NV_SATFINITE) return uint8_t(sign | t.max_finite);
  return uint8_t(sign | (e4m3 ? 0x7f : 0x7c));
}

TEST(Fp8, FloatToFp8EveryTieSweepSaturationAndNosat) {
  for (const Fp8Case& k : kFp8) {
    const Table t = make_table(k.spec);
    const bool e4m3 = k.kind == __NV_E4M3;
    std::vector<float> xs = probe_floats(t, 0x1p-20f, 0x1p20f, 61);
    for (float s : {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, 1e30f, -1e30f}) xs.push_back(s);
    for (float x : xs)
      for (__nv_saturation_t sat : {__NV_SATFINITE, __NV_NOSAT}) {
        const uint8_t want = ref_fp8(t, e4m3, x, sat);
        ASSERT_EQ(__nv_cvt_float_to_fp8(x, sat, k.kind), want) << x << " e4m3=" << e4m3;
        ASSERT_EQ(__nv_cvt_double_to_fp8(x, sat, k.kind), want) << x;
      }
  }
  // The documented thresholds.
  EXPECT_EQ(__nv_cvt_float_to_fp8(464.0f, __NV_NOSAT, __NV_E4M3), 0x7e);  // tie to 448 (even)
  EXPECT_EQ(__nv_cvt_float_to_fp8(464.1f, __NV_NOSAT, __NV_E4M3), 0x7f);  // NaN
  EXPECT_EQ(__nv_cvt_float_to_fp8(464.1f, __NV_SATFINITE, __NV_E4M3), 0x7e);
  EXPECT_EQ(__nv_cvt_float_to_fp8(-INFINITY, __NV_SATFINITE, __NV_E4M3), 0xfe);
  EXPECT_EQ(__nv_cvt_float_to_fp8(61440.0f, __NV_NOSAT, __NV_E5M2), 0x7c);  // tie to inf (even)
  EXPECT_EQ(__nv_cvt_float_to_fp8(61439.0f, __NV_NOSAT, __NV_E5M2), 0x7b);
  EXPECT_EQ(__nv_cvt_float_to_fp8(INFINITY, __NV_SATFINITE, __NV_E5M2), 0x7b);
  EXPECT_EQ(__nv_cvt_float_to_fp8(INFINITY, __NV_NOSAT, __NV_E5M2), 0x7c);
}

TEST(Fp8, DoubleAndHalfAndBf16InputsRoundOnce) {
  // 1 + 2^-4 is the E4M3 tie between 1 and 1.125; a hair above must round up.
  EXPECT_EQ(__nv_cvt_double_to_fp8(1.0 + 0x1p-4 + 0x1p-40, __NV_SATFINITE, __NV_E4M3), 0x39);
  EXPECT_EQ(__nv_cvt_double_to_fp8(1.0 + 0x1p-4, __NV_SATFINITE, __NV_E4M3), 0x38);
  for (const Fp8Case& k : kFp8) {
    const Table t = make_table(k.spec);
    const bool e4m3 = k.kind == __NV_E4M3;
    for (uint32_t u = 0; u < 65536; ++u) {
      // copysign, not a product: the sign of a NaN must survive (fp8 keeps it).
      const double hv = std::copysign(ref_decode(kHalfSpec, u & 0x7fff), u & 0x8000 ? -1 : 1);
      const double bv = std::copysign(ref_decode(kBf16Spec, u & 0x7fff), u & 0x8000 ? -1 : 1);
      for (__nv_saturation_t sat : {__NV_SATFINITE, __NV_NOSAT}) {
        ASSERT_EQ(__nv_cvt_halfraw_to_fp8(__half_raw{uint16_t(u)}, sat, k.kind),
                  ref_fp8(t, e4m3, hv, sat))
            << u;
        ASSERT_EQ(__nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{uint16_t(u)}, sat, k.kind),
                  ref_fp8(t, e4m3, bv, sat))
            << u;
      }
    }
  }
}

TEST(Fp8, PairsAndQuadsPutXInTheLowByte) {
  const __nv_fp8x2_storage_t p =
      __nv_cvt_float2_to_fp8x2(make_float2(1.0f, 2.0f), __NV_SATFINITE, __NV_E4M3);
  EXPECT_EQ(p, 0x4038);  // 1.0 = 0x38, 2.0 = 0x40
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(p, __NV_E4M3);
  EXPECT_EQ(h.x, 0x3c00);
  EXPECT_EQ(h.y, 0x4000);
  const __nv_fp8x2_storage_t q =
      __nv_cvt_halfraw2_to_fp8x2(__floats2half2_rn(1.0f, 2.0f), __NV_SATFINITE, __NV_E5M2);
  EXPECT_EQ(q, 0x403c);  // E5M2 is the top byte of the half
  const __nv_fp8x4_e4m3 v(make_float4(1.0f, 2.0f, -1.0f, 1000.0f));
  EXPECT_EQ(v.__x, 0x7eb84038u);  // 1000 saturates to 448
  const float4 f = static_cast<float4>(v);
  EXPECT_EQ(f.x, 1.0f);
  EXPECT_EQ(f.y, 2.0f);
  EXPECT_EQ(f.z, -1.0f);
  EXPECT_EQ(f.w, 448.0f);
  const __nv_fp8x2_e5m2 w(make_float2(3.0f, -4.0f));
  const float2 g = static_cast<float2>(w);
  EXPECT_EQ(g.x, 3.0f);
  EXPECT_EQ(g.y, -4.0f);
  const __nv_fp8x4_e4m3 hv(__floats2half2_rn(1.0f, 2.0f), __floats2half2_rn(3.0f, 4.0f));
  EXPECT_EQ(static_cast<float4>(hv).z, 3.0f);
}

TEST(Fp8, ClassesSaturateToFinite) {
  EXPECT_EQ(__nv_fp8_e4m3(1000.0f).__x, 0x7e);
  EXPECT_EQ(__nv_fp8_e4m3(-INFINITY).__x, 0xfe);
  EXPECT_EQ(__nv_fp8_e5m2(INFINITY).__x, 0x7b);
  EXPECT_EQ(__nv_fp8_e5m2(1e6).__x, 0x7b);
  EXPECT_TRUE(std::isnan(float(__nv_fp8_e4m3(NAN))));
  EXPECT_TRUE(std::isnan(float(__nv_fp8_e5m2(NAN))));
  EXPECT_EQ(float(__nv_fp8_e4m3(__float2half(0.3f))), 0.3125f);
  EXPECT_EQ(float(__nv_fp8_e5m2(__float2bfloat16(-0.3f))), -0.3125f);
  EXPECT_EQ(__half2float(static_cast<__half>(__nv_fp8_e4m3(2.5))), 2.5f);
  EXPECT_EQ(__half_as_ushort(static_cast<__half>(__nv_fp8_e5m2(0x1p-16f))),
            0x0100);  // 2^-16 = 256 * 2^-24
}

}  // namespace
