// The emulator's device math: the exp model's contract (base correctly rounded, moved by at
// most max_ulp, deterministic across calls and threads) and the integer/bit intrinsics, against
// references computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "emu/device_math.h"
#include "emu/vector_types.h"

namespace {

using emu::math::ExpModel;

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
// Signed distance in ulps between two positive floats (bit patterns are ordered like values).
long ulps_between(float a, float b) {
  return long(bits_of(b)) - long(bits_of(a));
}

// Restores the default model after each test: the model is global state.
class ExpModelTest : public ::testing::Test {
 protected:
  void TearDown() override { emu::math::set_exp_model(ExpModel{}); }
  static void set(ExpModel::Mode mode, int max_ulp, uint64_t seed = 0) {
    ExpModel m;
    m.mode = mode;
    m.max_ulp = max_ulp;
    m.seed = seed;
    emu::math::set_exp_model(m);
  }
};

// Floats across exp's whole interesting range, both signs, and the special values.
std::vector<float> exp_inputs() {
  std::vector<float> xs;
  for (uint32_t u = 0; u < bits_of(104.0f); u += 613) {
    xs.push_back(float_of(u));
    xs.push_back(-float_of(u));
  }
  for (float s : {0.0f, -0.0f, 88.7f, 89.0f, -103.9f, -87.3f, 1e-30f}) xs.push_back(s);
  return xs;
}

// exp(x) rounded to float from long double (64-bit significand), or NaN when the long double
// is too close to a float midpoint to decide (the caller skips those).
float reference_exp(float x, long double (*f)(long double)) {
  const long double e = f(static_cast<long double>(x));
  const float r = static_cast<float>(e);
  if (!(e > 0) || std::isinf(r)) return r;
  const float lo = e < r ? std::nextafter(r, 0.0f) : r;
  const long double mid = ((long double)lo + (long double)std::nextafter(lo, INFINITY)) / 2;
  if (std::fabs(e - mid) <= std::ldexp(mid, -60)) return NAN;
  return r;
}
long double ld_exp(long double v) {
  return std::exp(v);
}
long double ld_exp2(long double v) {
  return std::exp2(v);
}

TEST_F(ExpModelTest, ExactModeIsCorrectlyRoundedExp) {
  int checked = 0;
  for (float x : exp_inputs()) {
    const float want = reference_exp(x, ld_exp);
    if (std::isnan(want)) continue;
    ++checked;
    ASSERT_EQ(bits_of(emu::math::model_exp(x)), bits_of(want)) << std::hexfloat << x;
    ASSERT_EQ(bits_of(__expf(x)), bits_of(want)) << std::hexfloat << x;
    ASSERT_EQ(bits_of(emu::math::device_expf(x)), bits_of(want));
  }
  EXPECT_GT(checked, 3000000);
  // Hardest cases for double evaluation, with results from MPFR (exp correctly rounded).
  EXPECT_EQ(emu::math::model_exp(0x1.97f0f6p+4f), 0x1.b8a17cp+36f);
  EXPECT_EQ(emu::math::model_exp(0x1.112856p+6f), 0x1.6f498ap+98f);
  EXPECT_EQ(emu::math::model_exp(-0x1.d2259ap+3f), 0x1.fa6636p-22f);
  EXPECT_EQ(emu::math::model_exp(0x1.cd3982p-14f), 0x1.000734p+0f);
  EXPECT_EQ(emu::math::model_exp(0.0f), 1.0f);
  EXPECT_EQ(emu::math::model_exp(-INFINITY), 0.0f);
  EXPECT_EQ(emu::math::model_exp(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(emu::math::model_exp(NAN)));
}

TEST_F(ExpModelTest, ExactExp2IncludingCasesWhereDoubleLandsOnAMidpoint) {
  // glibc's double exp2 returns exactly a float midpoint here; MPFR says round up.
  EXPECT_EQ(emu::math::model_exp2(0x1.853a6ep-9f), 0x1.00870ap+0f);
  EXPECT_EQ(emu::math::model_exp2(-0x1.e7526ep-6f), 0x1.f58d62p-1f);
  EXPECT_EQ(emu::math::device_exp2f(3.0f), 8.0f);
  EXPECT_EQ(emu::math::device_exp2f(-149.0f), 0x1p-149f);
  for (uint32_t u = 0; u < bits_of(128.0f); u += 1237)
    for (float x : {float_of(u), -float_of(u)}) {
      const float want = reference_exp(x, ld_exp2);
      if (!std::isnan(want)) {
        ASSERT_EQ(bits_of(emu::math::model_exp2(x)), bits_of(want)) << x;
      }
    }
}

TEST_F(ExpModelTest, RandomWithZeroUlpsIsTheBase) {
  set(ExpModel::Mode::random, 0, 42);
  for (float x : exp_inputs())
    ASSERT_EQ(bits_of(emu::math::model_exp(x)), bits_of(emu::math::exact_exp(x)));
}

TEST_F(ExpModelTest, RandomStaysWithinMaxUlpDeterministicallyAcrossCallsAndThreads) {
  const int max_ulp = 3;
  set(ExpModel::Mode::random, max_ulp, 12345);
  const std::vector<float> xs = exp_inputs();
  std::vector<float> first(xs.size());
  std::vector<int> seen(2 * max_ulp + 1, 0);
  for (size_t i = 0; i < xs.size(); ++i) {
    const float base = emu::math::exact_exp(xs[i]);
    first[i] = __expf(xs[i]);
    if (!(base > 0) || std::isinf(base)) {
      ASSERT_EQ(bits_of(first[i]), bits_of(base));  // 0, inf, NaN untouched
      continue;
    }
    const long d = ulps_between(base, first[i]);
    ASSERT_LE(std::labs(d), max_ulp) << xs[i];
    if (first[i] != 0 && !std::isinf(first[i])) ++seen[size_t(d + max_ulp)];
  }
  // Every offset in [-max_ulp, max_ulp] occurs: the hash really varies k and the direction.
  for (int c : seen) EXPECT_GT(c, 1000);
  // Same answers again, in reverse order, and from two other threads at once.
  for (size_t i = xs.size(); i-- > 0;) ASSERT_EQ(bits_of(__expf(xs[i])), bits_of(first[i]));
  std::vector<float> t1(xs.size()), t2(xs.size());
  std::thread a([&] {
    for (size_t i = 0; i < xs.size(); ++i) t1[i] = __expf(xs[i]);
  });
  std::thread b([&] {
    for (size_t i = xs.size(); i-- > 0;) t2[i] = emu::math::model_exp(xs[i]);
  });
  a.join();
  b.join();
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(bits_of(t1[i]), bits_of(first[i]));
    ASSERT_EQ(bits_of(t2[i]), bits_of(first[i]));
  }
  // Another seed perturbs differently.
  set(ExpModel::Mode::random, max_ulp, 999);
  size_t differ = 0;
  for (size_t i = 0; i < xs.size(); ++i) differ += bits_of(__expf(xs[i])) != bits_of(first[i]);
  EXPECT_GT(differ, xs.size() / 2);
}

TEST_F(ExpModelTest, UpAndDownMoveExactlyMaxUlp) {
  for (int k : {1, 2, 7}) {
    for (ExpModel::Mode mode : {ExpModel::Mode::up, ExpModel::Mode::down}) {
      set(mode, k);
      const long want = mode == ExpModel::Mode::up ? k : -k;
      for (float x : exp_inputs()) {
        const float base = emu::math::exact_exp(x);
        if (!(base > 0) || std::isinf(base)) continue;
        const float got = emu::math::model_exp(x);
        // Away from the ends of the range the move is exact.
        if (bits_of(base) > 64 && bits_of(base) < 0x7f7fff00u) {
          ASSERT_EQ(ulps_between(base, got), want) << x;
        }
      }
    }
  }
}

// adversarial: exactly max_ulp, in the direction the caller's function picks per argument
// (here: up for x < -1, down otherwise), and down when no function is set.
TEST_F(ExpModelTest, AdversarialMovesMaxUlpInTheDirectionTheCallerPicks) {
  ExpModel m;
  m.mode = ExpModel::Mode::adversarial;
  m.max_ulp = 3;
  static const float kEdge = -1.0f;
  m.ctx = &kEdge;
  m.up = [](float x, const void* ctx) { return x < *static_cast<const float*>(ctx); };
  emu::math::set_exp_model(m);
  for (float x : exp_inputs()) {
    const float base = emu::math::exact_exp(x);
    if (!(bits_of(base) > 64 && bits_of(base) < 0x7f7fff00u)) continue;
    ASSERT_EQ(ulps_between(base, emu::math::model_exp(x)), x < kEdge ? 3 : -3) << x;
  }
  m.up = nullptr;
  emu::math::set_exp_model(m);
  EXPECT_EQ(ulps_between(emu::math::exact_exp(-2.0f), emu::math::model_exp(-2.0f)), -3);
}

TEST_F(ExpModelTest, MovesSaturateAtZeroAndInfinity) {
  set(ExpModel::Mode::down, 100);
  EXPECT_EQ(emu::math::model_exp(-103.9f), 0.0f);  // base is a tiny subnormal
  EXPECT_EQ(emu::math::model_exp(-INFINITY), 0.0f);
  set(ExpModel::Mode::up, 1 << 30);
  EXPECT_EQ(emu::math::model_exp(88.7f), INFINITY);
  EXPECT_EQ(emu::math::model_exp(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(emu::math::model_exp(NAN)));
  set(ExpModel::Mode::up, 1);
  EXPECT_EQ(emu::math::model_exp(0.0f), std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(emu::math::exp_model().max_ulp, 1);
}

TEST(DeviceMath, ArithmeticIsCorrectlyRoundedAndNeverContracted) {
  const float a = 1.0f + 0x1p-12f;
  // a*a = 1 + 2^-11 + 2^-24: fma keeps the 2^-24, the separate product rounds it away (tie).
  EXPECT_EQ(__fmaf_rn(a, a, -1.0f), 0x1p-11f + 0x1p-24f);
  EXPECT_EQ(__fadd_rn(__fmul_rn(a, a), -1.0f), 0x1p-11f);
  EXPECT_EQ(fmaf(a, a, -1.0f), 0x1p-11f + 0x1p-24f);
  EXPECT_EQ(__frcp_rn(3.0f), 1.0f / 3.0f);
  EXPECT_EQ(__fdividef(1.0f, 3.0f), static_cast<float>(1.0 / 3.0));
  EXPECT_EQ(__fdividef(1.0f, 0x1p127f), 0.0f);  // CUDA's documented range quirk
  EXPECT_TRUE(std::isnan(__fdividef(INFINITY, 0x1p127f)));
  EXPECT_EQ(__fdividef(1.0f, 0x1p126f), 0x1p-126f);
  EXPECT_EQ(__saturatef(2.0f), 1.0f);
  EXPECT_EQ(__saturatef(-2.0f), 0.0f);
  EXPECT_EQ(__saturatef(NAN), 0.0f);
  EXPECT_EQ(__saturatef(0.25f), 0.25f);
  EXPECT_EQ(rsqrtf(4.0f), 0.5f);
  EXPECT_EQ(rsqrtf(0.0f), INFINITY);
  EXPECT_EQ(__logf(1.0f), 0.0f);
  EXPECT_EQ(__log2f(8.0f), 3.0f);
  EXPECT_EQ(__powf(2.0f, 10.0f), 1024.0f);
  EXPECT_EQ(__exp10f(2.0f), 100.0f);
  EXPECT_EQ(fmaxf(NAN, 1.0f), 1.0f);
  EXPECT_EQ(fminf(2.0f, 1.0f), 1.0f);
  EXPECT_EQ(expf(0.0f), 1.0f);
  EXPECT_EQ(exp2f(3.0f), 8.0f);
}

TEST(DeviceMath, BitReinterpretation) {
  EXPECT_EQ(__float_as_uint(1.0f), 0x3f800000u);
  EXPECT_EQ(__float_as_int(-2.0f), int(0xc0000000u));
  EXPECT_EQ(__int_as_float(0x40400000), 3.0f);
  EXPECT_EQ(__uint_as_float(0x7f800000u), INFINITY);
  EXPECT_EQ(__longlong_as_double(__double_as_longlong(1.5)), 1.5);
}

// Bit-by-bit references for the integer intrinsics.
int ref_popc(uint64_t x) {
  int n = 0;
  for (; x; x >>= 1) n += int(x & 1);
  return n;
}
int ref_clz(uint64_t x, int width) {
  int n = 0;
  for (int b = width - 1; b >= 0 && !((x >> b) & 1); --b) ++n;
  return n;
}
int ref_ffs(uint64_t x, int width) {
  for (int b = 0; b < width; ++b)
    if ((x >> b) & 1) return b + 1;
  return 0;
}
uint64_t ref_brev(uint64_t x, int width) {
  uint64_t r = 0;
  for (int b = 0; b < width; ++b)
    if ((x >> b) & 1) r |= uint64_t(1) << (width - 1 - b);
  return r;
}

TEST(DeviceMath, IntegerBitIntrinsics) {
  std::vector<uint64_t> xs = {0,           1,
                              2,           3,
                              0x80000000u, 0xffffffffu,
                              0x12345678u, 0x8000000000000000ull,
                              ~0ull,       0x0123456789abcdefull};
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 10000; ++i)
    xs.push_back(s = s * 6364136223846793005ull + 1442695040888963407ull);
  for (uint64_t x : xs) {
    const uint32_t w = uint32_t(x);
    ASSERT_EQ(__popc(w), ref_popc(w));
    ASSERT_EQ(__popcll(x), ref_popc(x));
    ASSERT_EQ(__clz(int(w)), ref_clz(w, 32));
    ASSERT_EQ(__clzll((long long)x), ref_clz(x, 64));
    ASSERT_EQ(__ffs(int(w)), ref_ffs(w, 32));
    ASSERT_EQ(__ffsll((long long)x), ref_ffs(x, 64));
    ASSERT_EQ(__brev(w), ref_brev(w, 32));
    ASSERT_EQ(__brevll(x), ref_brev(x, 64));
  }
}

TEST(DeviceMath, MinMaxOverloadsAndLdg) {
  EXPECT_EQ(min(3, -4), -4);
  EXPECT_EQ(max(3, -4), 3);
  EXPECT_EQ(min(3u, 4u), 3u);
  EXPECT_EQ(min(-1, 1u), 1u);  // mixed signedness compares as unsigned, as in CUDA
  EXPECT_EQ(max(size_t(7), size_t(9)), size_t(9));
  EXPECT_EQ(min(int64_t(-5), int64_t(2)), int64_t(-5));
  EXPECT_EQ(max(1LL << 40, 3LL), 1LL << 40);
  EXPECT_EQ(min(ULLONG_MAX, 5ull), 5ull);
  EXPECT_EQ(min(1.5f, 2.5f), 1.5f);
  EXPECT_EQ(max(1.5, 2.5), 2.5);
  EXPECT_EQ(max(NAN, 1.0f), 1.0f);
  // std::min / std::max are untouched.
  EXPECT_EQ(std::min(3, 4), 3);
  EXPECT_EQ(std::max<long>(3, 4), 4);
  EXPECT_EQ(std::min({5, 2, 8}), 2);
  const float v[2] = {1.25f, 2.5f};
  EXPECT_EQ(__ldg(v + 1), 2.5f);
  const float4 q = make_float4(1, 2, 3, 4);
  EXPECT_EQ(__ldg(&q).w, 4.0f);
}

}  // namespace
