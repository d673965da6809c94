// CUDA's half precision (binary16) types and intrinsics for g++ under the emulator.
//
// Storage and layout match nvcc (__half: 2 bytes, __half2: 4 bytes aligned 4, .x low).
// Every operation is correctly rounded (round to nearest even, subnormals kept, no FTZ),
// which is what CUDA documents for these intrinsics on sm_53+.
//
// This header also holds the small rounding core (namespace emu::fp) that cuda_bf16.h and
// cuda_fp8.h reuse: one routine rounds a double to any binary format, so every narrowing
// conversion rounds exactly once from an exact value.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include "emu/vector_types.h"
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace emu::fp {

enum class Round { nearest_even, toward_zero, down, up };

// A binary format with `man_bits` stored significand bits and exponent bias `bias`
// (emin = 1 - bias, subnormals below 2^emin).
struct Format {
  int man_bits;
  int bias;
};
inline constexpr Format kHalf{10, 15};
inline constexpr Format kBf16{7, 127};
inline constexpr Format kE4M3{3, 7};
inline constexpr Format kE5M2{2, 15};

inline uint64_t double_bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}
inline double bits_double(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

// Rounds the finite magnitude |x| to the format's grid (subnormal grid below 2^emin, no
// upper exponent limit) and returns its magnitude encoding, exponent field and mantissa
// packed as usual. Results above the format's largest finite encoding signal overflow; the
// caller applies the format's overflow rule. Integer arithmetic only: no double rounding.
inline uint32_t round_magnitude(double x, Format f, Round mode) {
  const uint64_t b = double_bits(x) & ~(1ull << 63);
  if (b == 0) return 0;
  const bool negative = std::signbit(x);
  const int be = static_cast<int>(b >> 52);
  const uint64_t frac = b & ((1ull << 52) - 1);
  // |x| = sig * 2^e2 exactly; ex = floor(log2 |x|).
  const uint64_t sig = be == 0 ? frac : (frac | (1ull << 52));
  const int e2 = be == 0 ? -1074 : be - 1075;
  const int ex = be == 0 ? (63 - __builtin_clzll(frac)) - 1074 : be - 1023;
  const int emin = 1 - f.bias;
  const int q = (ex > emin ? ex : emin) - f.man_bits;  // exponent of the target quantum
  const int shift = q - e2;                            // >= 52 - man_bits > 0
  uint64_t r;
  bool above_half, at_half, inexact;
  if (shift > 54) {  // |x| < quantum / 2: everything is remainder
    r = 0;
    above_half = at_half = false;
    inexact = true;
  } else {
    r = sig >> shift;
    const uint64_t rem = sig & ((1ull << shift) - 1);
    const uint64_t half = 1ull << (shift - 1);
    above_half = rem > half;
    at_half = rem == half;
    inexact = rem != 0;
  }
  bool up = false;
  switch (mode) {
    case Round::nearest_even:
      up = above_half || (at_half && (r & 1));
      break;
    case Round::toward_zero:
      break;
    case Round::up:
      up = inexact && !negative;
      break;
    case Round::down:
      up = inexact && negative;
      break;
  }
  r += up;
  // r carries the implicit leading one into the exponent field (and a rounding carry too).
  return static_cast<uint32_t>((static_cast<uint64_t>(q - (emin - f.man_bits)) << f.man_bits) + r);
}

// Exact value of a finite magnitude encoding (every format here fits exactly in float).
inline float decode_magnitude(uint32_t mag, Format f) {
  const uint32_t e = mag >> f.man_bits;
  const uint32_t m = mag & ((1u << f.man_bits) - 1);
  if (e == 0) return std::ldexp(static_cast<float>(m), 1 - f.bias - f.man_bits);
  return std::ldexp(static_cast<float>(m | (1u << f.man_bits)),
                    static_cast<int>(e) - f.bias - f.man_bits);
}

// Rounds x to an IEEE-style format (has infinities; all-ones exponent is inf/NaN), returning
// sign | magnitude. NaN becomes the canonical NaN 0x7fff that CUDA produces for fp16/bf16.
inline uint16_t round_ieee16(double x, Format f, Round mode) {
  const uint32_t inf = ((1u << (15 - f.man_bits)) - 1) << f.man_bits;
  if (std::isnan(x)) return 0x7fff;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isinf(x)) return static_cast<uint16_t>(sign | inf);
  uint32_t mag = round_magnitude(x, f, mode);
  if (mag >= inf) {
    // IEEE overflow: nearest goes to inf; directed modes stop at the largest finite value
    // unless they round away from zero.
    const bool to_inf = mode == Round::nearest_even || (mode == Round::up && !sign) ||
                        (mode == Round::down && sign);
    mag = to_inf ? inf : inf - 1;
  }
  return static_cast<uint16_t>(sign | mag);
}

// Round to odd of a*b + c in double, where a*b is exact in double (true for fp16 and bf16
// operands). Rounding that result once more to nearest-even in a format of p <= 51 bits gives
// the correctly rounded fma (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums:
// proved algorithms using rounding to odd", IEEE TC 2008). Only additions after the product,
// so compiler contraction cannot change it.
inline double fma_round_to_odd(double a, double b, double c) {
  const double p = a * b;
  const double s = p + c;
  if (!std::isfinite(s)) return s;
  const double pv = s - c;  // TwoSum: s + err == p + c exactly
  const double cv = s - pv;
  const double err = (p - pv) + (c - cv);
  if (err == 0 || (double_bits(s) & 1)) return s;
  return std::nextafter(s, err > 0 ? INFINITY : -INFINITY);
}

}  // namespace emu::fp

struct __half_raw {
  unsigned short x;
};
struct alignas(4) __half2_raw {
  unsigned short x;
  unsigned short y;
};

// As in CUDA, the bits are not public: kernels reach them through __half_raw or the
// __half_as_ushort family, so code that compiles here also compiles under nvcc.
struct __half {
 protected:
  unsigned short __x;

 public:
  __half() = default;
  constexpr __half(const __half_raw& r) : __x(r.x) {}
  __half(float f) : __x(emu::fp::round_ieee16(f, emu::fp::kHalf, emu::fp::Round::nearest_even)) {}
  // Rounded once from double, not through float (which could round twice).
  __half(double d) : __x(emu::fp::round_ieee16(d, emu::fp::kHalf, emu::fp::Round::nearest_even)) {}
  // Integers convert exactly to double (long long above 2^53 rounds once to 53 bits first,
  // innocuous since 53 >= 2*11+2), then round to nearest even as __int2half_rn does.
  __half(short v) : __half(static_cast<double>(v)) {}
  __half(unsigned short v) : __half(static_cast<double>(v)) {}
  __half(int v) : __half(static_cast<double>(v)) {}
  __half(unsigned int v) : __half(static_cast<double>(v)) {}
  __half(long v) : __half(static_cast<double>(v)) {}
  __half(unsigned long v) : __half(static_cast<double>(v)) {}
  __half(long long v) : __half(static_cast<double>(v)) {}
  __half(unsigned long long v) : __half(static_cast<double>(v)) {}

  __half& operator=(const __half_raw& r) {
    __x = r.x;
    return *this;
  }
  constexpr operator __half_raw() const { return __half_raw{__x}; }
  operator float() const {
#if defined(__F16C__)
    // Where the kernels are built for F16C (PAGEDATTN_EMU_KERNEL_ISA): the instruction is
    // exact too. Not for inf and NaN: it quiets a signaling NaN, the fields below keep it.
    if ((__x & 0x7c00u) != 0x7c00u) return _cvtsh_ss(__x);
#endif
    // Exact: build the float's bits from the half's fields.
    const uint32_t sign = static_cast<uint32_t>(__x & 0x8000u) << 16;
    const uint32_t e = (__x >> 10) & 0x1f;
    const uint32_t m = __x & 0x3ffu;
    float v;
    if (e == 0) {
      v = static_cast<float>(m) * 0x1p-24f;  // subnormal or zero: m * 2^-24, exact
      return sign ? -v : v;
    }
    const uint32_t bits = sign | ((e == 31 ? 255u : e + 112u) << 23) | (m << 13);
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
};
using half = __half;

struct alignas(4) __half2 {
  __half x;  // low 16 bits
  __half y;  // high 16 bits
  __half2() = default;
  constexpr __half2(const __half& a, const __half& b) : x(a), y(b) {}
  constexpr __half2(const __half2_raw& r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
  __half2& operator=(const __half2_raw& r) {
    x = __half_raw{r.x};
    y = __half_raw{r.y};
    return *this;
  }
  constexpr operator __half2_raw() const { return __half2_raw{__half_raw(x).x, __half_raw(y).x}; }
};
using half2 = __half2;

static_assert(sizeof(__half) == 2 && alignof(__half) == 2, "__half must match nvcc's layout");
static_assert(sizeof(__half2) == 4 && alignof(__half2) == 4, "__half2 must match nvcc's layout");

// ---- conversions ----
inline float __half2float(__half h) {
  return static_cast<float>(h);
}
inline __half __float2half_rn(float f) {
  return __half(f);
}
inline __half __float2half(float f) {
  return __half(f);
}
inline __half __float2half_rz(float f) {
  return __half_raw{emu::fp::round_ieee16(f, emu::fp::kHalf, emu::fp::Round::toward_zero)};
}
inline __half __float2half_rd(float f) {
  return __half_raw{emu::fp::round_ieee16(f, emu::fp::kHalf, emu::fp::Round::down)};
}
inline __half __float2half_ru(float f) {
  return __half_raw{emu::fp::round_ieee16(f, emu::fp::kHalf, emu::fp::Round::up)};
}
inline __half __double2half(double d) {
  return __half(d);
}
inline __half __int2half_rn(int i) {
  return __half(i);
}
inline __half2 __floats2half2_rn(float lo, float hi) {
  return __half2(__half(lo), __half(hi));
}
inline __half2 __float2half2_rn(float f) {
  return __half2(__half(f), __half(f));
}
inline __half2 __float22half2_rn(float2 f) {
  return __half2(__half(f.x), __half(f.y));
}
inline float2 __half22float2(__half2 h) {
  return make_float2(float(h.x), float(h.y));
}
inline __half2 __halves2half2(__half lo, __half hi) {
  return __half2(lo, hi);
}
inline __half2 make_half2(__half x, __half y) {
  return __half2(x, y);
}
inline __half2 __half2half2(__half h) {
  return __half2(h, h);
}
inline __half __low2half(__half2 h) {
  return h.x;
}
inline __half __high2half(__half2 h) {
  return h.y;
}
inline __half2 __low2half2(__half2 h) {
  return __half2(h.x, h.x);
}
inline __half2 __high2half2(__half2 h) {
  return __half2(h.y, h.y);
}
inline __half2 __lows2half2(__half2 a, __half2 b) {
  return __half2(a.x, b.x);
}
inline __half2 __highs2half2(__half2 a, __half2 b) {
  return __half2(a.y, b.y);
}
inline __half2 __lowhigh2highlow(__half2 h) {
  return __half2(h.y, h.x);
}
inline float __low2float(__half2 h) {
  return float(h.x);
}
inline float __high2float(__half2 h) {
  return float(h.y);
}
inline unsigned short __half_as_ushort(__half h) {
  return __half_raw(h).x;
}
inline short __half_as_short(__half h) {
  return static_cast<short>(__half_raw(h).x);
}
inline __half __ushort_as_half(unsigned short u) {
  return __half_raw{u};
}
inline __half __short_as_half(short s) {
  return __half_raw{static_cast<unsigned short>(s)};
}

// ---- arithmetic ----
// + - * / run in float and round once more to half. Float holds every half exactly and is
// correctly rounded, so this is a double rounding; it is innocuous because 24 >= 2*11 + 2
// (Figueroa, "When is double rounding innocuous?", SIGNUM Newsl. 1995): the exact result of
// one of these operations on 11-bit operands cannot lie close enough to a half midpoint for the
// float rounding to move it across one. Products (22 bits) and sums landing in half's subnormal
// range are even exact in float. fma is different (not covered): it rounds to odd in double.
inline __half __hadd(__half a, __half b) {
  return __half(float(a) + float(b));
}
inline __half __hsub(__half a, __half b) {
  return __half(float(a) - float(b));
}
inline __half __hmul(__half a, __half b) {
  return __half(float(a) * float(b));
}
inline __half __hdiv(__half a, __half b) {
  return __half(float(a) / float(b));
}
inline __half __hfma(__half a, __half b, __half c) {
  return __half(emu::fp::fma_round_to_odd(float(a), float(b), float(c)));
}
inline __half __hneg(__half a) {
  return __ushort_as_half(static_cast<unsigned short>(__half_as_ushort(a) ^ 0x8000u));
}
inline __half __habs(__half a) {
  return __ushort_as_half(static_cast<unsigned short>(__half_as_ushort(a) & 0x7fffu));
}
inline bool __hisnan(__half a) {
  return (__half_as_ushort(a) & 0x7fffu) > 0x7c00u;
}
// CUDA's __hisinf returns -1 for -inf, 1 for +inf, 0 otherwise.
inline int __hisinf(__half a) {
  const unsigned short u = __half_as_ushort(a);
  return u == 0x7c00u ? 1 : (u == 0xfc00u ? -1 : 0);
}

inline __half2 __hadd2(__half2 a, __half2 b) {
  return {__hadd(a.x, b.x), __hadd(a.y, b.y)};
}
inline __half2 __hsub2(__half2 a, __half2 b) {
  return {__hsub(a.x, b.x), __hsub(a.y, b.y)};
}
inline __half2 __hmul2(__half2 a, __half2 b) {
  return {__hmul(a.x, b.x), __hmul(a.y, b.y)};
}
inline __half2 __h2div(__half2 a, __half2 b) {
  return {__hdiv(a.x, b.x), __hdiv(a.y, b.y)};
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline __half2 __hneg2(__half2 a) {
  return {__hneg(a.x), __hneg(a.y)};
}
inline __half2 __habs2(__half2 a) {
  return {__habs(a.x), __habs(a.y)};
}

// ---- comparisons (ordered: false when either is NaN, except __hne's unordered twin) ----
inline bool __heq(__half a, __half b) {
  return float(a) == float(b);
}
inline bool __hne(__half a, __half b) {
  return float(a) < float(b) || float(a) > float(b);
}
inline bool __hlt(__half a, __half b) {
  return float(a) < float(b);
}
inline bool __hle(__half a, __half b) {
  return float(a) <= float(b);
}
inline bool __hgt(__half a, __half b) {
  return float(a) > float(b);
}
inline bool __hge(__half a, __half b) {
  return float(a) >= float(b);
}
inline bool __hneu(__half a, __half b) {
  return !(float(a) == float(b));
}
// CUDA: a NaN operand yields the other one, two NaNs the canonical NaN, and +0 > -0.
inline __half __hmax(__half a, __half b) {
  if (__hisnan(a)) return __hisnan(b) ? __ushort_as_half(0x7fff) : b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__half_as_ushort(a) & 0x8000u) ? b : a;
  return float(a) > float(b) ? a : b;
}
inline __half __hmin(__half a, __half b) {
  if (__hisnan(a)) return __hisnan(b) ? __ushort_as_half(0x7fff) : b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__half_as_ushort(a) & 0x8000u) ? a : b;
  return float(a) < float(b) ? a : b;
}
inline __half2 __hmax2(__half2 a, __half2 b) {
  return {__hmax(a.x, b.x), __hmax(a.y, b.y)};
}
inline __half2 __hmin2(__half2 a, __half2 b) {
  return {__hmin(a.x, b.x), __hmin(a.y, b.y)};
}

// ---- operators, as cuda_fp16.hpp declares them ----
inline __half operator+(const __half& a, const __half& b) {
  return __hadd(a, b);
}
inline __half operator-(const __half& a, const __half& b) {
  return __hsub(a, b);
}
inline __half operator*(const __half& a, const __half& b) {
  return __hmul(a, b);
}
inline __half operator/(const __half& a, const __half& b) {
  return __hdiv(a, b);
}
inline __half& operator+=(__half& a, const __half& b) {
  return a = __hadd(a, b);
}
inline __half& operator-=(__half& a, const __half& b) {
  return a = __hsub(a, b);
}
inline __half& operator*=(__half& a, const __half& b) {
  return a = __hmul(a, b);
}
inline __half& operator/=(__half& a, const __half& b) {
  return a = __hdiv(a, b);
}
inline __half operator+(const __half& a) {
  return a;
}
inline __half operator-(const __half& a) {
  return __hneg(a);
}
inline __half& operator++(__half& a) {
  return a = __hadd(a, __half(1.0f));
}
inline __half& operator--(__half& a) {
  return a = __hsub(a, __half(1.0f));
}
inline __half operator++(__half& a, int) {
  const __half old = a;
  ++a;
  return old;
}
inline __half operator--(__half& a, int) {
  const __half old = a;
  --a;
  return old;
}
inline bool operator==(const __half& a, const __half& b) {
  return __heq(a, b);
}
inline bool operator!=(const __half& a, const __half& b) {
  return __hneu(a, b);
}
inline bool operator<(const __half& a, const __half& b) {
  return __hlt(a, b);
}
inline bool operator<=(const __half& a, const __half& b) {
  return __hle(a, b);
}
inline bool operator>(const __half& a, const __half& b) {
  return __hgt(a, b);
}
inline bool operator>=(const __half& a, const __half& b) {
  return __hge(a, b);
}

inline __half2 operator+(const __half2& a, const __half2& b) {
  return __hadd2(a, b);
}
inline __half2 operator-(const __half2& a, const __half2& b) {
  return __hsub2(a, b);
}
inline __half2 operator*(const __half2& a, const __half2& b) {
  return __hmul2(a, b);
}
inline __half2 operator/(const __half2& a, const __half2& b) {
  return __h2div(a, b);
}
inline __half2& operator+=(__half2& a, const __half2& b) {
  return a = __hadd2(a, b);
}
inline __half2& operator-=(__half2& a, const __half2& b) {
  return a = __hsub2(a, b);
}
inline __half2& operator*=(__half2& a, const __half2& b) {
  return a = __hmul2(a, b);
}
inline __half2& operator/=(__half2& a, const __half2& b) {
  return a = __h2div(a, b);
}
inline __half2 operator+(const __half2& a) {
  return a;
}
inline __half2 operator-(const __half2& a) {
  return __hneg2(a);
}
inline bool operator==(const __half2& a, const __half2& b) {
  return __heq(a.x, b.x) && __heq(a.y, b.y);
}
inline bool operator!=(const __half2& a, const __half2& b) {
  return __hneu(a.x, b.x) && __hneu(a.y, b.y);
}
