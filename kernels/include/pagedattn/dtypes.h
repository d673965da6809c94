// Element types of the tensors the kernels read and write, and the exact conversions
// between their bit patterns and float. fp8 decoding is host/device (kernels use it:
// every fp8 value is exactly representable in float, so decoding has no rounding);
// the rounding encoders are host-only helpers for tests and bindings.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include "pagedattn/host_device.h"

namespace pagedattn {

enum class DType : std::uint8_t {
  f32,
  f16,
  bf16,
  fp8_e4m3,  // OCP E4M3 (finite, NaN = S.1111.111), vLLM's "fp8" / "fp8_e4m3"
  fp8_e5m2,  // OCP E5M2 (IEEE-like: inf and NaN), vLLM's "fp8_e5m2"
  u8,        // raw byte storage: vLLM keeps fp8 caches in uint8 tensors
  i32,       // block tables, sequence lengths
};

const char* dtype_name(DType t);
constexpr std::size_t dtype_size(DType t) {
  return t == DType::f32 || t == DType::i32 ? 4 : (t == DType::f16 || t == DType::bf16) ? 2 : 1;
}
// The types queries and outputs may have (vLLM's scalar_t).
constexpr bool is_scalar_dtype(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

// How the KV cache stores its elements: like the query (vLLM's "auto") or as fp8 bytes.
enum class CacheFormat : std::uint8_t { same, fp8_e4m3, fp8_e5m2 };
// Parses vLLM's kv_cache_dtype ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"); false if unknown.
bool parse_kv_cache_dtype(const std::string& name, CacheFormat* out);
const char* cache_format_name(CacheFormat f);

// 2^k for k in the normal float range, exactly.
PAGEDATTN_HD float pow2f(int k) {
  const std::uint32_t bits = static_cast<std::uint32_t>(k + 127) << 23;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#elif defined(__HIP_DEVICE_COMPILE__)  // std::memcpy is host-only under hipcc
  return __builtin_bit_cast(float, bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// fp8 E4M3 bits -> float, exact. Bias 7; exponent field 0 is subnormal (m * 2^-9);
// S.1111.111 is NaN and there is no infinity.
PAGEDATTN_HD float fp8_e4m3_to_float(std::uint8_t b) {
  const int e = (b >> 3) & 0xf, m = b & 0x7;
  float mag;
  if (e == 0xf && m == 0x7) {
    mag = NAN;
  } else if (e == 0) {
    mag = static_cast<float>(m) * pow2f(-9);
  } else {
    mag = static_cast<float>(8 + m) * pow2f(e - 10);
  }
  return (b & 0x80) ? -mag : mag;
}

// fp8 E5M2 bits -> float, exact. Bias 15; exponent field 0 is subnormal (m * 2^-16);
// field 31 is infinity (m = 0) or NaN.
PAGEDATTN_HD float fp8_e5m2_to_float(std::uint8_t b) {
  const int e = (b >> 2) & 0x1f, m = b & 0x3;
  float mag;
  if (e == 0x1f) {
    mag = m == 0 ? INFINITY : NAN;
  } else if (e == 0) {
    mag = static_cast<float>(m) * pow2f(-16);
  } else {
    mag = static_cast<float>(4 + m) * pow2f(e - 17);
  }
  return (b & 0x80) ? -mag : mag;
}

// Host-only bit conversions. Encoders round to nearest, ties to even; fp8 encoders
// saturate finite overflow to the largest finite value (CUDA's __NV_SATFINITE).
float f16_bits_to_float(std::uint16_t h);
std::uint16_t float_to_f16_bits(float f);
float bf16_bits_to_float(std::uint16_t h);
std::uint16_t float_to_bf16_bits(float f);
std::uint8_t float_to_fp8_e4m3(float f);
std::uint8_t float_to_fp8_e5m2(float f);

}  // namespace pagedattn
