// Host-side dtype names and bit conversions (round to nearest even, done on the bits so
// no double rounding through an intermediate format).
#include "pagedattn/dtypes.h"

#include <cmath>
#include <cstring>

namespace pagedattn {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::fp8_e4m3:
      return "float8_e4m3fn";
    case DType::fp8_e5m2:
      return "float8_e5m2";
    case DType::u8:
      return "uint8";
    case DType::i32:
      return "int32";
  }
  return "unknown";
}

bool parse_kv_cache_dtype(const std::string& name, CacheFormat* out) {
  if (name == "auto") {
    *out = CacheFormat::same;
  } else if (name == "fp8" || name == "fp8_e4m3") {
    *out = CacheFormat::fp8_e4m3;
  } else if (name == "fp8_e5m2") {
    *out = CacheFormat::fp8_e5m2;
  } else {
    return false;
  }
  return true;
}

const char* cache_format_name(CacheFormat f) {
  switch (f) {
    case CacheFormat::same:
      return "auto";
    case CacheFormat::fp8_e4m3:
      return "fp8_e4m3";
    case CacheFormat::fp8_e5m2:
      return "fp8_e5m2";
  }
  return "unknown";
}

namespace {

std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds |f| (finite, not NaN) to a binary format with `mant` fraction bits, exponent
// bias `bias` and largest biased exponent field `emax_field` for finite values; returns
// the magnitude bits, or `overflow` when the rounded value exceeds `max_bits`.
std::uint32_t round_magnitude(float f, int mant, int bias, std::uint32_t max_bits,
                              std::uint32_t overflow) {
  const double x = std::fabs(static_cast<double>(f));  // exact
  if (x == 0.0) return 0;
  int e;
  std::frexp(x, &e);  // x = fr * 2^e, fr in [0.5, 1)
  int exp_unbiased = e - 1;
  const int emin = 1 - bias;
  if (exp_unbiased < emin) exp_unbiased = emin;  // subnormal: fixed quantum
  const double quantum = std::ldexp(1.0, exp_unbiased - mant);
  const double q = x / quantum;  // exact (power-of-two scaling)
  double r = std::floor(q);
  const double rem = q - r;
  if (rem > 0.5 || (rem == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  if (r == 0.0) return 0;  // underflow to zero
  // r * quantum is the rounded value; re-encode it.
  const double v = r * quantum;
  int ev;
  std::frexp(v, &ev);
  int field = ev - 1 + bias;
  std::uint32_t bits;
  if (field <= 0) {
    bits = static_cast<std::uint32_t>(std::ldexp(v, bias - 1 + mant));  // subnormal
  } else {
    const double frac = std::ldexp(v, -(ev - 1)) - 1.0;  // in [0, 1)
    bits = (static_cast<std::uint32_t>(field) << mant) |
           static_cast<std::uint32_t>(std::ldexp(frac, mant));
  }
  return bits > max_bits ? overflow : bits;
}

}  // namespace

float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const int e = (h >> 10) & 0x1f;
  const std::uint32_t m = h & 0x3ffu;
  float mag;
  if (e == 0x1f) {
    mag = m ? NAN : INFINITY;
  } else if (e == 0) {
    mag = static_cast<float>(m) * pow2f(-24);
  } else {
    mag = static_cast<float>(1024 + m) * pow2f(e - 25);
  }
  return bits_float(float_bits(mag) | sign);
}

std::uint16_t float_to_f16_bits(float f) {
  const std::uint16_t sign = static_cast<std::uint16_t>((float_bits(f) >> 16) & 0x8000u);
  if (std::isnan(f)) return sign | 0x7e00u;
  if (std::isinf(f)) return sign | 0x7c00u;
  return sign | static_cast<std::uint16_t>(round_magnitude(f, 10, 15, 0x7bffu, 0x7c00u));
}

float bf16_bits_to_float(std::uint16_t h) {
  return bits_float(static_cast<std::uint32_t>(h) << 16);
}

std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u = float_bits(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even on the dropped 16 bits
  return static_cast<std::uint16_t>(u >> 16);
}

std::uint8_t float_to_fp8_e4m3(float f) {
  const std::uint8_t sign = (float_bits(f) >> 24) & 0x80u;
  if (std::isnan(f)) return 0x7f;
  if (std::isinf(f)) return sign | 0x7e;  // saturate
  return sign | static_cast<std::uint8_t>(round_magnitude(f, 3, 7, 0x7e, 0x7e));
}

std::uint8_t float_to_fp8_e5m2(float f) {
  const std::uint8_t sign = (float_bits(f) >> 24) & 0x80u;
  if (std::isnan(f)) return 0x7f;
  if (std::isinf(f)) return sign | 0x7b;  // saturate
  return sign | static_cast<std::uint8_t>(round_magnitude(f, 2, 15, 0x7b, 0x7b));
}

}  // namespace pagedattn
