// The format table: its rows agree with the exact reference's formats and the proven
// bound's unit roundoffs, decoding has one rule for what has no element format, and
// store() rounds, saturates and stores NaN and infinity as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>
#include <stdexcept>

#include "pagedattn_ref/formats.h"
#include "pagedattn_testing/formats.h"

namespace pagedattn::testing {
namespace {

const DType kFormats[] = {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2};

// The table against two independent sources: the kernels' dtype_size and dtype_name, and
// the bound's unit_roundoff; max_finite and min_subnormal against the reference's own
// decoder of the formats' extreme codes.
TEST(Formats, TableAgreesWithTheKernelsTheBoundAndTheReference) {
  const std::uint32_t max_bits[] = {0x7f7fffffu, 0x7bffu, 0x7f7fu, 0x7eu, 0x7bu};
  for (int i = 0; i < 5; ++i) {
    const FormatTraits& f = traits(kFormats[i]);
    EXPECT_EQ(f.dtype, kFormats[i]);
    EXPECT_EQ(f.size, dtype_size(f.dtype));
    EXPECT_STREQ(f.name, dtype_name(f.dtype));
    EXPECT_EQ(f.unit_roundoff, bound::unit_roundoff(f.bound)) << f.name;
    EXPECT_EQ(f.unit_roundoff, std::ldexp(1.0, -f.precision)) << f.name;
    EXPECT_EQ(decode(f.dtype, &max_bits[i], 0), f.max_finite) << f.name;
    const std::uint32_t one = 1;
    EXPECT_EQ(decode(f.dtype, &one, 0), f.min_subnormal) << f.name;
    EXPECT_TRUE(std::isnan(decode(f.dtype, &f.nan_bits, 0))) << f.name;
    DType back = DType::i32;
    EXPECT_TRUE(parse_short_name(f.short_name, &back) && back == f.dtype) << f.short_name;
  }
  DType none;
  EXPECT_FALSE(parse_short_name("f64", &none));
  EXPECT_STREQ(traits(DType::fp8_e4m3).short_name, kv_cache_dtype(CacheFormat::fp8_e4m3));
  EXPECT_EQ(traits(DType::f16).ref, ref::DType::f16);
  EXPECT_EQ(traits(DType::fp8_e5m2).ref, ref::DType::fp8_e5m2);
  EXPECT_EQ(ref::decode_e4m3(0x7e), traits(DType::fp8_e4m3).max_finite);
}

// One rule: raw bytes and indices have no element format; decoding them throws and names
// the dtype (a u8 cache is read as fp8_e4m3 or fp8_e5m2). Wrong variant: returning 0 (the
// audit's findings did), which makes a poisoned fp8 byte read as a finite number.
TEST(Formats, U8AndI32HaveNoElementFormat) {
  const std::uint8_t nan_byte = 0x7f;
  for (DType t : {DType::u8, DType::i32}) {
    try {
      decode(t, &nan_byte, 0);
      ADD_FAILURE() << dtype_name(t) << " decoded";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(dtype_name(t)), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(std::isnan(decode(cache_element(DType::f16, CacheFormat::fp8_e4m3), &nan_byte, 0)));
  EXPECT_EQ(cache_storage(DType::f16, CacheFormat::fp8_e4m3), DType::u8);
  EXPECT_EQ(cache_element(DType::bf16, CacheFormat::same), DType::bf16);
}

TEST(Formats, StoreRoundsSaturatesAndKeepsNonFinite) {
  std::uint32_t buf = 0;
  EXPECT_EQ(store(DType::f16, &buf, 0, 1.0 + 0x1p-11), 1.0);  // tie to even
  EXPECT_EQ(store(DType::f16, &buf, 0, 1.0 + 0x1p-10), 1.0 + 0x1p-10);
  EXPECT_EQ(store(DType::fp8_e4m3, &buf, 0, 1e6), 448.0);              // finite overflow saturates
  EXPECT_TRUE(std::isnan(store(DType::fp8_e4m3, &buf, 0, INFINITY)));  // E4M3 has no inf
  EXPECT_EQ(store(DType::fp8_e5m2, &buf, 0, -INFINITY), -INFINITY);
  EXPECT_EQ(store(DType::f16, &buf, 0, INFINITY), INFINITY);
  for (DType t : kFormats) {
    EXPECT_TRUE(std::isnan(store(t, &buf, 0, NAN)));
    EXPECT_EQ(buf & ((1ull << (8 * traits(t).size)) - 1), traits(t).nan_bits);
  }
  // float_value: one rounding to float (0.1 is not a float).
  EXPECT_EQ(float_value(0.1), static_cast<double>(0.1f));
  EXPECT_NE(float_value(0.1), 0.1);
}

TEST(Formats, UlpOf) {
  EXPECT_EQ(ulp_of(DType::f16, 1.0), 0x1p-10);
  EXPECT_EQ(ulp_of(DType::f16, 0.0), 0x1p-24);  // subnormal quantum
  EXPECT_EQ(ulp_of(DType::bf16, 3.0), 0x1p-6);
  EXPECT_EQ(ulp_of(DType::f32, INFINITY), 0x1p104);  // the largest binade's
}

// The fast f16 encoder equals the kernels' on every rounding case and 200,000 random floats
// around f16's range.
TEST(Formats, FastF16EncoderMatchesTheLibrary) {
  std::mt19937 gen(7);
  std::vector<float> v = {0.0f,
                          -0.0f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          -65520.0f,
                          1e-8f,
                          std::ldexp(1.0f, -25),
                          std::ldexp(3.0f, -25),
                          std::ldexp(1.0f, -14),
                          std::ldexp(1023.5f, -24),
                          1.0f + std::ldexp(1.0f, -11),
                          std::numeric_limits<float>::infinity()};
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t u = static_cast<std::uint32_t>(gen());
    u = (u & 0x807fffffu) | ((100 + (u >> 23) % 45) << 23);  // exponents around f16's range
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  for (float f : v) ASSERT_EQ(fast_f16_bits(f), float_to_f16_bits(f)) << f;
}

// encode_run stores encode() of each element, in every format, NaN of either sign and the
// infinities included (a run that skipped encode's NaN rule would store -NaN's sign bit,
// one that took the element size from the wrong format would shift the elements). Shown
// failing with a run that keeps a NaN's sign.
TEST(Formats, EncodeRunEqualsEncodeElementByElement) {
  std::mt19937 gen(11);
  std::vector<float> v = {0.0f,     -0.0f,  NAN,    -NAN,     INFINITY, -INFINITY,
                          65520.0f, 448.0f, 500.0f, 57344.0f, 1e-8f,    std::ldexp(1.0f, -149),
                          3.4e38f};
  for (int i = 0; i < 20000; ++i) {
    std::uint32_t u = static_cast<std::uint32_t>(gen());
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2}) {
    const std::size_t size = traits(t).size;
    std::vector<std::uint8_t> run(v.size() * size), each(v.size() * size);
    encode_run(t, v.data(), v.size(), run.data());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint32_t bits = encode(t, v[i]);
      std::memcpy(each.data() + i * size, &bits, size);
    }
    EXPECT_EQ(run, each) << traits(t).name;
  }
}

}  // namespace
}  // namespace pagedattn::testing

namespace pagedattn::testing {
namespace {

// nonfinite_mask against the decoder, every encoding of the 8- and 16-bit formats and the
// f32 patterns next to each exponent boundary: a mask one bit short (0x7e for fp8_e4m3, or
// the exponent field for it, which would call 256 a NaN) fails here.
TEST(Formats, NonfiniteMaskMarksExactlyTheNonfiniteEncodings) {
  for (DType t : kFormats) {
    const FormatTraits& f = traits(t);
    const std::uint32_t mask = nonfinite_mask(f);
    std::vector<std::uint32_t> codes;
    if (f.size < 4) {
      for (std::uint32_t c = 0; c < (1u << (8 * f.size)); ++c) codes.push_back(c);
    } else {
      for (std::uint32_t e = 0; e < 256; ++e)
        for (std::uint32_t m : {0u, 1u, 0x400000u, 0x7fffffu})
          for (std::uint32_t s : {0u, 0x80000000u}) codes.push_back(s | e << 23 | m);
    }
    for (std::uint32_t c : codes) {
      const double v = decode(t, &c, 0);  // little-endian: the low bytes hold the code
      EXPECT_EQ((c & mask) == mask, !std::isfinite(v)) << f.short_name << " code " << c;
    }
  }
}

}  // namespace
}  // namespace pagedattn::testing
