// CUDA device math intrinsics for g++ under the emulator, and the exp model.
//
// Rounding model of the emulator (what a bound about emulated kernels may assume):
// - Arithmetic is host IEEE binary32: round to nearest even, subnormals kept (no FTZ, unlike
//   -use_fast_math), NaN and inf as IEEE says.
// - No implicit contraction: the project builds with -ffp-contract=off, so a*b+c rounds
//   twice unless the source writes fmaf/__fmaf_rn (nvcc would contract by default).
// - x/y, 1/x, sqrtf, __fdividef, __frcp_rn, the __f*_rn family: correctly rounded (CUDA
//   documents 0 ulp for /, and 2 ulp for __fdividef, so this is within CUDA's error).
//   __fdividef keeps CUDA's documented quirk for 2^126 < |y| < 2^128 (0, or NaN for inf x).
// - __expf and emu::math::device_expf / device_exp2f follow the exp model below; the other
//   fast intrinsics (__logf, __log2f, __powf, __exp10f, rsqrtf) are the host's double result
//   rounded to float: within 1 ulp, tighter than CUDA's documented errors.
// - Plain expf/exp2f/fmaf/fmaxf/fminf in kernel code are the host <cmath> functions: g++ cannot
//   replace ::expf, so kernels that want the model call __expf (or device_expf).
//
// The exp model: model_exp(x) = base(x) moved k ulps, where base(x) = exp(x) correctly rounded
// to float: std::exp in double rounded to float, except where that double lies within 4 double
// ulps of a float midpoint, where std::exp in long double decides. Checked against MPFR for
// every float x with glibc 2.36: for exp, all 26 cases within 12 double ulps of a midpoint
// round correctly through double; for exp2 (model_exp2), 2 of 22 do not (glibc's double exp2
// lands exactly on the midpoint, e.g. x = 0x1.853a6ep-9) and long double fixes both. Elsewhere
// the double is farther from a midpoint than glibc's error (< 1 double ulp), so the base is
// correctly rounded for all float inputs. k and its direction come from ExpModel:
//   exact_host: k = 0;   up / down: k = max_ulp toward +inf / toward 0;
//   random: k in [0, max_ulp] and the direction from a hash of (seed, bits of x), so results
//   are deterministic and do not depend on call order or on which host thread calls;
//   adversarial: k = max_ulp, the direction per argument from the caller's `up(x, ctx)`: a
//   test that knows which token an argument belongs to picks the direction that moves the
//   output furthest (the sign of v_i - y), within the same ulp model as up / down.
// Moving stops at 0 and +inf (a result never changes sign or becomes NaN); bases 0, inf and
// NaN are returned unchanged (exp(-inf) = 0 and exp(inf) = inf exactly, as on the GPU).
// The model is global state: set it between launches, never while a launch runs.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>

namespace emu::math {

struct ExpModel {
  enum class Mode { exact_host, random, up, down, adversarial };
  Mode mode = Mode::exact_host;
  int max_ulp = 0;
  uint64_t seed = 0;
  // adversarial: true moves exp(x) up, false down. Called from every host thread of a
  // launch at once: it must only read `ctx`. Null: down.
  bool (*up)(float x, const void* ctx) = nullptr;
  const void* ctx = nullptr;
};

namespace detail {
inline ExpModel g_exp_model{};  // C++17 inline variable: one instance across translation units

inline uint32_t f2u(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float u2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// SplitMix64's finalizer: a well-mixed 64-bit hash, cheap and stateless.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Rounds a positive double to float once, refining with long double when d is within a few
// double ulps of a float midpoint (where the host's double exp error could flip the rounding).
template <class Exact>
inline float round_refined(double d, float x, Exact exact_ld) {
  const float f = static_cast<float>(d);
  if (!(d > 0) || std::isinf(f) || std::isinf(d)) return f;
  const float lo = d < static_cast<double>(f) ? std::nextafter(f, 0.0f) : f;
  const double mid =
      (static_cast<double>(lo) + static_cast<double>(std::nextafter(lo, INFINITY))) / 2;
  if (std::fabs(d - mid) > 8 * std::ldexp(std::fabs(mid), -53)) return f;
  return static_cast<float>(exact_ld(static_cast<long double>(x)));
}

// Moves a positive finite float k ulps up or down, stopping at +inf and at 0.
inline float move_ulps(float v, int k, bool up) {
  const uint64_t u = f2u(v);  // v > 0: bit patterns are ordered like values
  const uint64_t kk = static_cast<uint64_t>(k);
  if (up) return u2f(static_cast<uint32_t>(u + kk >= 0x7f800000u ? 0x7f800000u : u + kk));
  return u2f(static_cast<uint32_t>(u > kk ? u - kk : 0u));
}

// tag separates exp and exp2 so their perturbations are not correlated.
inline float apply_model(float base, float x, uint64_t tag) {
  const ExpModel& m = g_exp_model;
  if (m.mode == ExpModel::Mode::exact_host || m.max_ulp <= 0) return base;
  if (!(base > 0) || std::isinf(base)) return base;  // 0, inf, NaN stay as they are
  switch (m.mode) {
    case ExpModel::Mode::up:
      return move_ulps(base, m.max_ulp, true);
    case ExpModel::Mode::down:
      return move_ulps(base, m.max_ulp, false);
    case ExpModel::Mode::adversarial:
      return move_ulps(base, m.max_ulp, m.up != nullptr && m.up(x, m.ctx));
    case ExpModel::Mode::random: {
      const uint64_t h = mix64(mix64(m.seed ^ tag) ^ f2u(x));
      const int k = static_cast<int>((h >> 1) % (static_cast<uint64_t>(m.max_ulp) + 1));
      return move_ulps(base, k, h & 1);
    }
    case ExpModel::Mode::exact_host:
      break;
  }
  return base;
}
}  // namespace detail

// Not thread safe by design: call between launches only.
inline void set_exp_model(const ExpModel& m) {
  detail::g_exp_model = m;
}
inline const ExpModel& exp_model() {
  return detail::g_exp_model;
}

// exp(x) correctly rounded to float (see the header comment).
inline float exact_exp(float x) {
  return detail::round_refined(std::exp(static_cast<double>(x)), x,
                               [](long double v) { return std::exp(v); });
}
inline float exact_exp2(float x) {
  return detail::round_refined(std::exp2(static_cast<double>(x)), x,
                               [](long double v) { return std::exp2(v); });
}

inline float model_exp(float x) {
  return detail::apply_model(exact_exp(x), x, 0x65787066u);
}
inline float model_exp2(float x) {
  return detail::apply_model(exact_exp2(x), x, 0x65787032u);
}

// The emulator's device expf / exp2f (the names ::expf and ::exp2f belong to the host libm).
inline float device_expf(float x) {
  return model_exp(x);
}
inline float device_exp2f(float x) {
  return model_exp2(x);
}

}  // namespace emu::math

// ---- fast-math intrinsics ----
inline float __expf(float x) {
  return emu::math::model_exp(x);
}
inline float __exp10f(float x) {
  return static_cast<float>(std::pow(10.0, static_cast<double>(x)));
}
inline float __logf(float x) {
  return static_cast<float>(std::log(static_cast<double>(x)));
}
inline float __log2f(float x) {
  return static_cast<float>(std::log2(static_cast<double>(x)));
}
inline float __log10f(float x) {
  return static_cast<float>(std::log10(static_cast<double>(x)));
}
inline float __powf(float x, float y) {
  return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
}
inline float __fdividef(float x, float y) {
  const float ay = std::fabs(y);
  if (ay > 0x1p126f && ay < INFINITY) return std::isinf(x) ? NAN : 0.0f;  // CUDA's documented quirk
  return x / y;
}
inline float rsqrtf(float x) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
}
inline float __saturatef(float x) {
  return x > 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f);
}  // NaN -> 0

// ---- correctly rounded arithmetic, never contracted ----
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __frcp_rn(float a) {
  return 1.0f / a;
}
inline float __fsqrt_rn(float a) {
  return std::sqrt(a);
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}

// ---- bit reinterpretation ----
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}
inline unsigned int __float_as_uint(float f) {
  unsigned int u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float __uint_as_float(unsigned int u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline long long __double_as_longlong(double d) {
  long long i;
  std::memcpy(&i, &d, sizeof i);
  return i;
}
inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, sizeof d);
  return d;
}

// ---- integer bit intrinsics ----
inline int __popc(unsigned int x) {
  return __builtin_popcount(x);
}
inline int __popcll(unsigned long long x) {
  return __builtin_popcountll(x);
}
inline int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x));
}
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}  // 1-based lowest set bit, 0 if none
inline int __ffsll(long long x) {
  return __builtin_ffsll(x);
}
inline unsigned int __brev(unsigned int x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned int>(x))) << 32) |
         __brev(static_cast<unsigned int>(x >> 32));
}

// Read-only cache load: on the CPU a plain load.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// ---- min / max as CUDA device code has them ----
// Non-template overloads in the global namespace, as in CUDA's math_functions.h. They do not
// touch std::min/std::max; after `using namespace std`, an unqualified call with two equal
// types picks the non-template here, which returns the same value. Mixed signed/unsigned pairs
// compare as unsigned, as CUDA's do. long and unsigned long are listed because int64_t and
// size_t are those types on LP64 hosts.
#define EMU_MINMAX(T)      \
  inline T min(T a, T b) { \
    return b < a ? b : a;  \
  }                        \
  inline T max(T a, T b) { \
    return a < b ? b : a;  \
  }
EMU_MINMAX(int)
EMU_MINMAX(unsigned int)
EMU_MINMAX(long)
EMU_MINMAX(unsigned long)
EMU_MINMAX(long long)
EMU_MINMAX(unsigned long long)
#undef EMU_MINMAX
#define EMU_MINMAX_MIXED(S, U)        \
  inline U min(S a, U b) {            \
    return min(static_cast<U>(a), b); \
  }                                   \
  inline U min(U a, S b) {            \
    return min(a, static_cast<U>(b)); \
  }                                   \
  inline U max(S a, U b) {            \
    return max(static_cast<U>(a), b); \
  }                                   \
  inline U max(U a, S b) {            \
    return max(a, static_cast<U>(b)); \
  }
EMU_MINMAX_MIXED(int, unsigned int)
EMU_MINMAX_MIXED(long, unsigned long)
EMU_MINMAX_MIXED(long long, unsigned long long)
#undef EMU_MINMAX_MIXED
inline float min(float a, float b) {
  return std::fmin(a, b);
}
inline float max(float a, float b) {
  return std::fmax(a, b);
}
inline double min(double a, double b) {
  return std::fmin(a, b);
}
inline double max(double a, double b) {
  return std::fmax(a, b);
}
inline double min(float a, double b) {
  return std::fmin(static_cast<double>(a), b);
}
inline double min(double a, float b) {
  return std::fmin(a, static_cast<double>(b));
}
inline double max(float a, double b) {
  return std::fmax(static_cast<double>(a), b);
}
inline double max(double a, float b) {
  return std::fmax(a, static_cast<double>(b));
}

// fmaxf, fminf, fmaf, expf, exp2f are the host's ::functions from <math.h> (fmaf is
// correctly rounded; fmaxf/fminf return the other operand for one NaN, as CUDA's do; for
// expf/exp2f see the note at the top).
