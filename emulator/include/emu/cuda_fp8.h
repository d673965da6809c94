// CUDA's fp8 types and conversions (cuda_fp8.h) for g++ under the emulator.
//
// E4M3: bias 7, no infinities, NaN = S.1111.111, largest finite 448 = 0x7e.
// E5M2: bias 15, IEEE-like (inf = S.11111.00, NaN = S.11111.{01,10,11}), largest finite 57344.
// Narrowing rounds once, to nearest even, from the exact input (float, half and bf16 are
// exact in double), with subnormals. Out of range after rounding (and infinities):
//   __NV_SATFINITE  clamps to +-largest finite;
//   __NV_NOSAT      E4M3 gives NaN (it has no inf), E5M2 gives +-inf.
// So E4M3 keeps 448 for |x| <= 464 (the tie goes to 448, whose mantissa is even) and
// overflows above; E5M2 overflows from 61440 (the tie goes away from 57344, odd).
// NaN in gives NaN out, sign kept: 0x7f | s for E4M3, 0x7e | s for E5M2.
// Widening to half is exact (every fp8 value is a half); an E4M3 NaN widens to 0x7fff | s.
#pragma once
#include <cmath>
#include <cstdint>
#include "emu/cuda_bf16.h"
#include "emu/cuda_fp16.h"
#include "emu/vector_types.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short int __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;

enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

namespace emu::fp {
inline __nv_fp8_storage_t to_fp8(double x, __nv_saturation_t sat, __nv_fp8_interpretation_t k) {
  const bool e4m3 = k == __NV_E4M3;
  const unsigned sign = std::signbit(x) ? 0x80u : 0u;
  const unsigned max_finite = e4m3 ? 0x7eu : 0x7bu;
  unsigned mag;
  if (std::isnan(x)) {
    mag = e4m3 ? 0x7fu : 0x7eu;
  } else {
    const uint32_t r =
        std::isinf(x) ? 0xffu : round_magnitude(x, e4m3 ? kE4M3 : kE5M2, Round::nearest_even);
    if (r <= max_finite)
      mag = r;
    else if (sat == __NV_SATFINITE)
      mag = max_finite;
    else
      mag = e4m3 ? 0x7fu : 0x7cu;
  }
  return static_cast<__nv_fp8_storage_t>(sign | mag);
}

// Exact value of an fp8 encoding as float (NaN and, for E5M2, inf included).
inline float fp8_to_float(__nv_fp8_storage_t v, __nv_fp8_interpretation_t k) {
  const bool neg = v & 0x80u;
  const unsigned mag = v & 0x7fu;
  float r;
  if (k == __NV_E4M3)
    r = mag == 0x7fu ? NAN : decode_magnitude(mag, kE4M3);
  else
    r = mag > 0x7cu ? NAN : (mag == 0x7cu ? INFINITY : decode_magnitude(mag, kE5M2));
  return neg ? -r : r;
}

// Pairs: the first (.x) element goes to the low byte.
inline __nv_fp8x2_storage_t pack_fp8x2(__nv_fp8_storage_t lo, __nv_fp8_storage_t hi) {
  return static_cast<__nv_fp8x2_storage_t>(lo | (hi << 8));
}

inline __half_raw fp8_to_halfraw(__nv_fp8_storage_t v, __nv_fp8_interpretation_t k) {
  if (k == __NV_E5M2) return __half_raw{static_cast<unsigned short>(v << 8)};  // E5M2 = top of half
  if ((v & 0x7fu) == 0x7fu)
    return __half_raw{static_cast<unsigned short>(((v & 0x80u) << 8) | 0x7fffu)};
  return __half_raw(__half(fp8_to_float(v, k)));  // exact: the value is a half
}
}  // namespace emu::fp

// ---- conversion functions ----
inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t sat,
                                                 __nv_fp8_interpretation_t k) {
  return emu::fp::to_fp8(x, sat, k);
}
inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t sat,
                                                __nv_fp8_interpretation_t k) {
  return emu::fp::to_fp8(x, sat, k);
}
inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t sat,
                                                  __nv_fp8_interpretation_t k) {
  return emu::fp::to_fp8(float(__half(x)), sat, k);
}
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t sat,
                                                      __nv_fp8_interpretation_t k) {
  return emu::fp::to_fp8(float(__nv_bfloat16(x)), sat, k);
}
inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t sat,
                                                      __nv_fp8_interpretation_t k) {
  return emu::fp::pack_fp8x2(emu::fp::to_fp8(x.x, sat, k), emu::fp::to_fp8(x.y, sat, k));
}
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t sat,
                                                     __nv_fp8_interpretation_t k) {
  return emu::fp::pack_fp8x2(emu::fp::to_fp8(x.x, sat, k), emu::fp::to_fp8(x.y, sat, k));
}
inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t sat,
                                                       __nv_fp8_interpretation_t k) {
  return emu::fp::pack_fp8x2(__nv_cvt_halfraw_to_fp8(__half_raw{x.x}, sat, k),
                             __nv_cvt_halfraw_to_fp8(__half_raw{x.y}, sat, k));
}
inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x,
                                                           __nv_saturation_t sat,
                                                           __nv_fp8_interpretation_t k) {
  return emu::fp::pack_fp8x2(__nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.x}, sat, k),
                             __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.y}, sat, k));
}
inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t k) {
  return emu::fp::fp8_to_halfraw(x, k);
}
inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t k) {
  return __half2_raw{emu::fp::fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(x & 0xffu), k).x,
                     emu::fp::fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(x >> 8), k).x};
}

// ---- classes: construction saturates to finite (as CUDA's constructors do) ----
// One template makes both interpretations; the CUDA names are aliases of its instances.
namespace emu::fp {
template <__nv_fp8_interpretation_t K>
struct fp8 {
  __nv_fp8_storage_t __x;

  fp8() = default;
  explicit fp8(float f) : __x(to_fp8(f, __NV_SATFINITE, K)) {}
  explicit fp8(double d) : __x(to_fp8(d, __NV_SATFINITE, K)) {}
  explicit fp8(__half h) : __x(to_fp8(float(h), __NV_SATFINITE, K)) {}
  explicit fp8(__nv_bfloat16 b) : __x(to_fp8(float(b), __NV_SATFINITE, K)) {}
  explicit fp8(int v) : __x(to_fp8(static_cast<double>(v), __NV_SATFINITE, K)) {}
  explicit fp8(long long v) : __x(to_fp8(static_cast<double>(v), __NV_SATFINITE, K)) {}

  explicit operator float() const { return fp8_to_float(__x, K); }
  explicit operator double() const { return fp8_to_float(__x, K); }
  explicit operator __half() const { return __half(fp8_to_halfraw(__x, K)); }
  explicit operator __nv_bfloat16() const { return __nv_bfloat16(fp8_to_float(__x, K)); }
};

template <__nv_fp8_interpretation_t K>
struct alignas(2) fp8x2 {
  __nv_fp8x2_storage_t __x;  // .x in the low byte

  fp8x2() = default;
  explicit fp8x2(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, K)) {}
  explicit fp8x2(double2 d) : __x(__nv_cvt_double2_to_fp8x2(d, __NV_SATFINITE, K)) {}
  explicit fp8x2(__half2 h) : __x(__nv_cvt_halfraw2_to_fp8x2(h, __NV_SATFINITE, K)) {}
  explicit fp8x2(__nv_bfloat162 b) : __x(__nv_cvt_bfloat16raw2_to_fp8x2(b, __NV_SATFINITE, K)) {}

  explicit operator __half2() const { return __half2(__nv_cvt_fp8x2_to_halfraw2(__x, K)); }
  explicit operator float2() const {
    return make_float2(fp8_to_float(static_cast<__nv_fp8_storage_t>(__x & 0xffu), K),
                       fp8_to_float(static_cast<__nv_fp8_storage_t>(__x >> 8), K));
  }
};

template <__nv_fp8_interpretation_t K>
struct alignas(4) fp8x4 {
  __nv_fp8x4_storage_t __x;  // .x in the lowest byte, .w in the highest

  fp8x4() = default;
  explicit fp8x4(float4 f)
      : __x(pack(__nv_cvt_float2_to_fp8x2(make_float2(f.x, f.y), __NV_SATFINITE, K),
                 __nv_cvt_float2_to_fp8x2(make_float2(f.z, f.w), __NV_SATFINITE, K))) {}
  explicit fp8x4(double4 d)
      : __x(pack(__nv_cvt_double2_to_fp8x2(double2{d.x, d.y}, __NV_SATFINITE, K),
                 __nv_cvt_double2_to_fp8x2(double2{d.z, d.w}, __NV_SATFINITE, K))) {}
  fp8x4(__half2 lo, __half2 hi)
      : __x(pack(__nv_cvt_halfraw2_to_fp8x2(lo, __NV_SATFINITE, K),
                 __nv_cvt_halfraw2_to_fp8x2(hi, __NV_SATFINITE, K))) {}
  fp8x4(__nv_bfloat162 lo, __nv_bfloat162 hi)
      : __x(pack(__nv_cvt_bfloat16raw2_to_fp8x2(lo, __NV_SATFINITE, K),
                 __nv_cvt_bfloat16raw2_to_fp8x2(hi, __NV_SATFINITE, K))) {}

  explicit operator float4() const {
    auto at = [this](int i) {
      return fp8_to_float(static_cast<__nv_fp8_storage_t>(__x >> (8 * i)), K);
    };
    return make_float4(at(0), at(1), at(2), at(3));
  }

 private:
  static __nv_fp8x4_storage_t pack(__nv_fp8x2_storage_t lo, __nv_fp8x2_storage_t hi) {
    return static_cast<__nv_fp8x4_storage_t>(lo) | (static_cast<__nv_fp8x4_storage_t>(hi) << 16);
  }
};
}  // namespace emu::fp

// Distinct named structs (not aliases), so `struct __nv_fp8_e4m3` works as under nvcc.
struct __nv_fp8_e4m3 : emu::fp::fp8<__NV_E4M3> {
  using fp8::fp8;
};
struct __nv_fp8_e5m2 : emu::fp::fp8<__NV_E5M2> {
  using fp8::fp8;
};
struct __nv_fp8x2_e4m3 : emu::fp::fp8x2<__NV_E4M3> {
  using fp8x2::fp8x2;
};
struct __nv_fp8x2_e5m2 : emu::fp::fp8x2<__NV_E5M2> {
  using fp8x2::fp8x2;
};
struct __nv_fp8x4_e4m3 : emu::fp::fp8x4<__NV_E4M3> {
  using fp8x4::fp8x4;
};
struct __nv_fp8x4_e5m2 : emu::fp::fp8x4<__NV_E5M2> {
  using fp8x4::fp8x4;
};

static_assert(sizeof(__nv_fp8_e4m3) == 1 && sizeof(__nv_fp8x2_e4m3) == 2 &&
                  sizeof(__nv_fp8x4_e4m3) == 4,
              "fp8 types must match nvcc's sizes");
