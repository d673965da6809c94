// Decoding of every bit pattern, and single rounding to each output format.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstring>
#include <random>

#include "pagedattn_ref/formats.h"

namespace pagedattn::ref {
namespace {

// The compiler's _Float16 is the independent witness here; clang 14 on x86 (the sanitizer
// build, scripts/sanitizer_build.sh) has none, so there these checks say they are skipped
// and run in the gcc build.
#ifdef __FLT16_MANT_DIG__
#define PAGEDATTN_HAVE_FLOAT16 1
#else
#define PAGEDATTN_HAVE_FLOAT16 0
#endif

TEST(Decode, EveryF16PatternMatchesCompilerHalf) {
#if !PAGEDATTN_HAVE_FLOAT16
  GTEST_SKIP() << "this compiler has no _Float16 to compare with";
#else
  for (uint32_t b = 0; b < 65536; ++b) {
    _Float16 h;
    uint16_t bb = uint16_t(b);
    std::memcpy(&h, &bb, 2);
    double ref = double(h), got = decode_f16(bb);
    if (std::isnan(ref))
      EXPECT_TRUE(std::isnan(got)) << b;
    else
      EXPECT_EQ(got, ref) << b;
  }
#endif
}

TEST(Decode, EveryBf16PatternIsTheHighHalfOfAFloat) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint32_t f = b << 16;
    float v;
    std::memcpy(&v, &f, 4);
    double got = decode_bf16(uint16_t(b));
    if (std::isnan(v))
      EXPECT_TRUE(std::isnan(got));
    else
      EXPECT_EQ(got, double(v)) << b;
  }
}

// (-1)^s 2^(E - bias) (1 + M / 2^m) for E > 0, (-1)^s 2^(1 - bias) M / 2^m for E = 0, written
// with pow rather than ldexp.
double formula(int s, int E, int M, int mbits, int bias) {
  double mag = E ? std::pow(2.0, E - bias) * (1 + M / std::pow(2.0, mbits))
                 : std::pow(2.0, 1 - bias) * (M / std::pow(2.0, mbits));
  return s ? -mag : mag;
}

TEST(Decode, EveryFp8Pattern) {
  for (int b = 0; b < 256; ++b) {
    int s = b >> 7;
    int E4 = (b >> 3) & 15, M3 = b & 7, E5 = (b >> 2) & 31, M2 = b & 3;
    if (E4 == 15 && M3 == 7)
      EXPECT_TRUE(std::isnan(decode_e4m3(uint8_t(b))));
    else
      EXPECT_EQ(decode_e4m3(uint8_t(b)), formula(s, E4, M3, 3, 7)) << b;
    if (E5 == 31)
      EXPECT_TRUE(M2 ? std::isnan(decode_e5m2(uint8_t(b))) : std::isinf(decode_e5m2(uint8_t(b))));
    else
      EXPECT_EQ(decode_e5m2(uint8_t(b)), formula(s, E5, M2, 2, 15)) << b;
  }
  EXPECT_EQ(decode_e4m3(0x7E), 448.0);
  EXPECT_EQ(decode_e4m3(0x01), 0x1p-9);
  EXPECT_EQ(decode_e5m2(0x7B), 57344.0);
  EXPECT_EQ(decode_e5m2(0x01), 0x1p-16);
}

// MPFR rounding to P bits with the format's exponent range and subnormals, as the oracle.
double oracle_round(double x, int P, int emin, int emax) {
  mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
  mpfr_set_emin(emin - P + 1);  // MPFR exponents: x = 0.1xxx * 2^e
  mpfr_set_emax(emax);
  mpfr_t m;
  mpfr_init2(m, P);
  int t = mpfr_set_d(m, x, MPFR_RNDN);
  t = mpfr_subnormalize(m, t, MPFR_RNDN);
  double r = mpfr_get_d(m, MPFR_RNDN);
  mpfr_clear(m);
  mpfr_set_emin(old_min);
  mpfr_set_emax(old_max);
  return r;
}

TEST(Round, MatchesMpfrAndCompiler) {
  std::mt19937_64 r(3);
  struct F {
    DType t;
    int emin, emax;  // MPFR-style: normal numbers 0.1xxx * 2^e with emin <= e <= emax
  } fs[] = {{DType::f32, -125, 128}, {DType::f16, -13, 16}, {DType::bf16, -125, 128}};
  for (auto f : fs) {
    Format fm = format_of(f.t);
    for (int i = 0; i < 200000; ++i) {
      double x;
      uint64_t bits = r();
      if (i % 3 == 0) {
        // A midpoint, or a neighbour of one: quantum-scaled odd halves.
        int e = int(r() % (f.emax - f.emin + fm.P)) + f.emin - fm.P;
        x = std::ldexp(double(r() % (1u << fm.P)) + 0.5, e);
        if (i % 2) x = std::nextafter(x, (r() & 1) ? INFINITY : -INFINITY);
      } else {
        int e = int(r() % (f.emax - f.emin + 30)) + f.emin - 20;
        x = std::ldexp(1.0 + double(bits >> 12) * 0x1p-52, e);
      }
      if (r() & 1) x = -x;
      double got = round_to_format(x, fm);
      double want = oracle_round(x, fm.P, f.emin, f.emax);
      EXPECT_EQ(got, want) << to_string(f.t) << " x=" << x;
      EXPECT_EQ(std::signbit(got), std::signbit(want));
#if PAGEDATTN_HAVE_FLOAT16
      if (f.t == DType::f16) {
        _Float16 h = (_Float16)x;  // direct double -> half, correctly rounded by the compiler
        EXPECT_EQ(encode_bits(got, DType::f16), [&] {
          uint16_t b;
          std::memcpy(&b, &h, 2);
          return uint32_t(b);
        }()) << x;
      }
#endif
      if (f.t == DType::f32) EXPECT_EQ(got, double(float(x)));
    }
  }
  EXPECT_EQ(round_to_format(65520.0, format_of(DType::f16)), INFINITY);  // tie to even: inf
  EXPECT_EQ(round_to_format(65519.99, format_of(DType::f16)), 65504.0);
}

}  // namespace
}  // namespace pagedattn::ref
