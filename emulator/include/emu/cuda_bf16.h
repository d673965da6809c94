// CUDA's bfloat16 types and intrinsics for g++ under the emulator.
//
// bf16 is float's upper 16 bits: 8 significant bits, float's exponent range. Layout matches
// nvcc (__nv_bfloat162: 4 bytes aligned 4, .x low). Every operation is correctly rounded
// (nearest even, subnormals kept), as CUDA documents for sm_80+.
#pragma once
#include <cstdint>
#include <cstring>
#include "emu/cuda_fp16.h"
#include "emu/vector_types.h"

struct __nv_bfloat16_raw {
  unsigned short x;
};
struct alignas(4) __nv_bfloat162_raw {
  unsigned short x;
  unsigned short y;
};

namespace emu::fp {
inline uint16_t to_bf16(double d, Round mode = Round::nearest_even) {
  return round_ieee16(d, kBf16, mode);
}
}  // namespace emu::fp

// Bits are protected as in CUDA; reach them through __nv_bfloat16_raw or __bfloat16_as_ushort.
struct __nv_bfloat16 {
 protected:
  unsigned short __x;

 public:
  __nv_bfloat16() = default;
  constexpr __nv_bfloat16(const __nv_bfloat16_raw& r) : __x(r.x) {}
  __nv_bfloat16(float f) : __x(emu::fp::to_bf16(f)) {}
  __nv_bfloat16(double d) : __x(emu::fp::to_bf16(d)) {}  // one rounding, not via float
  __nv_bfloat16(short v) : __nv_bfloat16(static_cast<double>(v)) {}
  __nv_bfloat16(unsigned short v) : __nv_bfloat16(static_cast<double>(v)) {}
  __nv_bfloat16(int v) : __nv_bfloat16(static_cast<double>(v)) {}
  __nv_bfloat16(unsigned int v) : __nv_bfloat16(static_cast<double>(v)) {}
  __nv_bfloat16(long v) : __nv_bfloat16(static_cast<double>(v)) {}
  __nv_bfloat16(unsigned long v) : __nv_bfloat16(static_cast<double>(v)) {}
  __nv_bfloat16(long long v) : __nv_bfloat16(static_cast<double>(v)) {}
  __nv_bfloat16(unsigned long long v) : __nv_bfloat16(static_cast<double>(v)) {}

  __nv_bfloat16& operator=(const __nv_bfloat16_raw& r) {
    __x = r.x;
    return *this;
  }
  constexpr operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
  operator float() const {
    const uint32_t bits = static_cast<uint32_t>(__x) << 16;  // exact by definition
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
};
using nv_bfloat16 = __nv_bfloat16;

struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x;  // low 16 bits
  __nv_bfloat16 y;  // high 16 bits
  __nv_bfloat162() = default;
  constexpr __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
  constexpr __nv_bfloat162(const __nv_bfloat162_raw& r)
      : x(__nv_bfloat16_raw{r.x}), y(__nv_bfloat16_raw{r.y}) {}
  __nv_bfloat162& operator=(const __nv_bfloat162_raw& r) {
    x = __nv_bfloat16_raw{r.x};
    y = __nv_bfloat16_raw{r.y};
    return *this;
  }
  constexpr operator __nv_bfloat162_raw() const {
    return __nv_bfloat162_raw{__nv_bfloat16_raw(x).x, __nv_bfloat16_raw(y).x};
  }
};
using nv_bfloat162 = __nv_bfloat162;

static_assert(sizeof(__nv_bfloat16) == 2 && alignof(__nv_bfloat16) == 2, "nvcc layout");
static_assert(sizeof(__nv_bfloat162) == 4 && alignof(__nv_bfloat162) == 4, "nvcc layout");

// ---- conversions ----
inline float __bfloat162float(__nv_bfloat16 h) {
  return static_cast<float>(h);
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  return __nv_bfloat16(f);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return __nv_bfloat16(f);
}
inline __nv_bfloat16 __float2bfloat16_rz(float f) {
  return __nv_bfloat16_raw{emu::fp::to_bf16(f, emu::fp::Round::toward_zero)};
}
inline __nv_bfloat16 __float2bfloat16_rd(float f) {
  return __nv_bfloat16_raw{emu::fp::to_bf16(f, emu::fp::Round::down)};
}
inline __nv_bfloat16 __float2bfloat16_ru(float f) {
  return __nv_bfloat16_raw{emu::fp::to_bf16(f, emu::fp::Round::up)};
}
inline __nv_bfloat16 __double2bfloat16(double d) {
  return __nv_bfloat16(d);
}
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) {
  return __nv_bfloat162(__nv_bfloat16(lo), __nv_bfloat16(hi));
}
inline __nv_bfloat162 __float2bfloat162_rn(float f) {
  return __nv_bfloat162(__nv_bfloat16(f), __nv_bfloat16(f));
}
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) {
  return __nv_bfloat162(__nv_bfloat16(f.x), __nv_bfloat16(f.y));
}
inline float2 __bfloat1622float2(__nv_bfloat162 h) {
  return make_float2(float(h.x), float(h.y));
}
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return __nv_bfloat162(lo, hi);
}
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 x, __nv_bfloat16 y) {
  return __nv_bfloat162(x, y);
}
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 h) {
  return __nv_bfloat162(h, h);
}
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) {
  return h.x;
}
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) {
  return h.y;
}
inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(a.x, b.x);
}
inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(a.y, b.y);
}
inline float __low2float(__nv_bfloat162 h) {
  return float(h.x);
}
inline float __high2float(__nv_bfloat162 h) {
  return float(h.y);
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) {
  return __nv_bfloat16_raw(h).x;
}
inline short __bfloat16_as_short(__nv_bfloat16 h) {
  return static_cast<short>(__nv_bfloat16_raw(h).x);
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
  return __nv_bfloat16_raw{u};
}
inline __nv_bfloat16 __short_as_bfloat16(short s) {
  return __nv_bfloat16_raw{static_cast<unsigned short>(s)};
}

// ---- arithmetic ----
// + - * / run in double and round once more to bf16. A float intermediate would be innocuous
// in float's normal range (24 >= 2*8 + 2, Figueroa 1995), but bf16 shares float's exponent
// range, so results can fall among float's subnormals, where float has fewer than 18 bits and
// that argument fails. Double covers every bf16 result in its normal range (53 >= 2*8 + 2),
// and products (16 bits) are exact there. fma rounds to odd in double (see cuda_fp16.h).
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(double(float(a)) + double(float(b)));
}
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(double(float(a)) - double(float(b)));
}
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(double(float(a)) * double(float(b)));
}
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(double(float(a)) / double(float(b)));
}
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __nv_bfloat16(emu::fp::fma_round_to_odd(float(a), float(b), float(c)));
}
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(__bfloat16_as_ushort(a) ^ 0x8000u));
}
inline __nv_bfloat16 __habs(__nv_bfloat16 a) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(__bfloat16_as_ushort(a) & 0x7fffu));
}
inline bool __hisnan(__nv_bfloat16 a) {
  return (__bfloat16_as_ushort(a) & 0x7fffu) > 0x7f80u;
}
inline int __hisinf(__nv_bfloat16 a) {
  const unsigned short u = __bfloat16_as_ushort(a);
  return u == 0x7f80u ? 1 : (u == 0xff80u ? -1 : 0);
}

inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return {__hadd(a.x, b.x), __hadd(a.y, b.y)};
}
inline __nv_bfloat162 __hsub2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return {__hsub(a.x, b.x), __hsub(a.y, b.y)};
}
inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return {__hmul(a.x, b.x), __hmul(a.y, b.y)};
}
inline __nv_bfloat162 __h2div(__nv_bfloat162 a, __nv_bfloat162 b) {
  return {__hdiv(a.x, b.x), __hdiv(a.y, b.y)};
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline __nv_bfloat162 __hneg2(__nv_bfloat162 a) {
  return {__hneg(a.x), __hneg(a.y)};
}
inline __nv_bfloat162 __habs2(__nv_bfloat162 a) {
  return {__habs(a.x), __habs(a.y)};
}

// ---- comparisons (ordered, as for __half) ----
inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) == float(b);
}
inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) < float(b) || float(a) > float(b);
}
inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) < float(b);
}
inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) <= float(b);
}
inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) > float(b);
}
inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) >= float(b);
}
inline bool __hneu(__nv_bfloat16 a, __nv_bfloat16 b) {
  return !(float(a) == float(b));
}
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
  if (__hisnan(a)) return __hisnan(b) ? __ushort_as_bfloat16(0x7fff) : b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__bfloat16_as_ushort(a) & 0x8000u) ? b : a;
  return float(a) > float(b) ? a : b;
}
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
  if (__hisnan(a)) return __hisnan(b) ? __ushort_as_bfloat16(0x7fff) : b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__bfloat16_as_ushort(a) & 0x8000u) ? a : b;
  return float(a) < float(b) ? a : b;
}
inline __nv_bfloat162 __hmax2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return {__hmax(a.x, b.x), __hmax(a.y, b.y)};
}
inline __nv_bfloat162 __hmin2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return {__hmin(a.x, b.x), __hmin(a.y, b.y)};
}

// ---- operators ----
inline __nv_bfloat16 operator+(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hadd(a, b);
}
inline __nv_bfloat16 operator-(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hsub(a, b);
}
inline __nv_bfloat16 operator*(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hmul(a, b);
}
inline __nv_bfloat16 operator/(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hdiv(a, b);
}
inline __nv_bfloat16& operator+=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = __hadd(a, b);
}
inline __nv_bfloat16& operator-=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = __hsub(a, b);
}
inline __nv_bfloat16& operator*=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = __hmul(a, b);
}
inline __nv_bfloat16& operator/=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = __hdiv(a, b);
}
inline __nv_bfloat16 operator+(const __nv_bfloat16& a) {
  return a;
}
inline __nv_bfloat16 operator-(const __nv_bfloat16& a) {
  return __hneg(a);
}
inline bool operator==(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __heq(a, b);
}
inline bool operator!=(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hneu(a, b);
}
inline bool operator<(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hlt(a, b);
}
inline bool operator<=(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hle(a, b);
}
inline bool operator>(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hgt(a, b);
}
inline bool operator>=(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hge(a, b);
}

inline __nv_bfloat162 operator+(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __hadd2(a, b);
}
inline __nv_bfloat162 operator-(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __hsub2(a, b);
}
inline __nv_bfloat162 operator*(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __hmul2(a, b);
}
inline __nv_bfloat162 operator/(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __h2div(a, b);
}
inline __nv_bfloat162& operator+=(__nv_bfloat162& a, const __nv_bfloat162& b) {
  return a = __hadd2(a, b);
}
inline __nv_bfloat162& operator-=(__nv_bfloat162& a, const __nv_bfloat162& b) {
  return a = __hsub2(a, b);
}
inline __nv_bfloat162& operator*=(__nv_bfloat162& a, const __nv_bfloat162& b) {
  return a = __hmul2(a, b);
}
inline __nv_bfloat162& operator/=(__nv_bfloat162& a, const __nv_bfloat162& b) {
  return a = __h2div(a, b);
}
inline __nv_bfloat162 operator-(const __nv_bfloat162& a) {
  return __hneg2(a);
}
inline bool operator==(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __heq(a.x, b.x) && __heq(a.y, b.y);
}
inline bool operator!=(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __hneu(a.x, b.x) && __hneu(a.y, b.y);
}
