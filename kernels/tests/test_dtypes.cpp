// pagedattn/dtypes.h against independent definitions: fp8 decoders against field
// arithmetic, host fp16/bf16 conversions against the emulator's CUDA types.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <emu/cuda_bf16.h>
#include <emu/cuda_fp16.h>
#include "pagedattn/dtypes.h"

namespace pagedattn {
namespace {

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

TEST(DTypes, Fp8DecodersMatchFieldArithmeticForAll256Codes) {
  for (int b = 0; b < 256; ++b) {
    const int s = b >> 7;
    {  // E4M3: bias 7, no infinities, S.1111.111 NaN
      const int e = (b >> 3) & 15, m = b & 7;
      double want = (e == 15 && m == 7) ? NAN
                    : e == 0            ? m * std::pow(2.0, -9)
                                        : (1 + m / 8.0) * std::pow(2.0, e - 7);
      if (s) want = -want;
      EXPECT_TRUE(same_value(fp8_e4m3_to_float(static_cast<std::uint8_t>(b)), want)) << b;
    }
    {  // E5M2: bias 15, IEEE-like
      const int e = (b >> 2) & 31, m = b & 3;
      double want = e == 31  ? (m ? NAN : INFINITY)
                    : e == 0 ? m * std::pow(2.0, -16)
                             : (1 + m / 4.0) * std::pow(2.0, e - 15);
      if (s) want = -want;
      EXPECT_TRUE(same_value(fp8_e5m2_to_float(static_cast<std::uint8_t>(b)), want)) << b;
    }
  }
  EXPECT_EQ(fp8_e4m3_to_float(0x7e), 448.f);
  EXPECT_EQ(fp8_e5m2_to_float(0x7b), 57344.f);
}

TEST(DTypes, Fp8EncodersRoundTripEveryFiniteCode) {
  for (int b = 0; b < 256; ++b) {
    const float e4 = fp8_e4m3_to_float(static_cast<std::uint8_t>(b));
    if (!std::isnan(e4) && !(e4 == 0 && (b & 0x80))) EXPECT_EQ(float_to_fp8_e4m3(e4), b) << b;
    const float e5 = fp8_e5m2_to_float(static_cast<std::uint8_t>(b));
    if (std::isfinite(e5) && !(e5 == 0 && (b & 0x80))) EXPECT_EQ(float_to_fp8_e5m2(e5), b) << b;
  }
}

TEST(DTypes, HalfAndBf16MatchTheEmulatorsCudaTypes) {
  for (int h = 0; h < 65536; ++h) {
    const auto u = static_cast<unsigned short>(h);
    EXPECT_TRUE(same_value(f16_bits_to_float(u), __half2float(__ushort_as_half(u)))) << h;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    const __half h = __float2half_rn(f);
    EXPECT_EQ(float_to_f16_bits(f), __half_as_ushort(h)) << f;
    const __nv_bfloat16 b = __float2bfloat16(f);
    float bf;
    std::uint32_t bb = static_cast<std::uint32_t>(float_to_bf16_bits(f)) << 16;
    std::memcpy(&bf, &bb, 4);
    EXPECT_EQ(bf, __bfloat162float(b)) << f;
  }
}

}  // namespace
}  // namespace pagedattn
