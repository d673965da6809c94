// Directed rounding without the floating-point environment: each operation is done in the
// default round-to-nearest, its exact error is recovered with an error-free transformation
// (TwoSum; fma for products and the division's remainder) and the result is moved one
// double outward only when it was inexact, so add_up/mul_up/div_up return exactly what
// IEEE round-toward-+inf would. Nothing depends on fesetround, on -frounding-math or on the
// compiler keeping a rounding mode across reordered code; the build's -ffp-contract=off
// keeps a*b+c from being fused behind our back (the fma calls here are explicit).
//
// Where an error-free transformation could itself be inexact (products and quotients
// within 2^-969 of zero, where the error may fall below the subnormal range) the result is
// moved outward unconditionally: round to nearest errs by at most half the subnormal
// quantum there, so one step outward still encloses the exact value.
//
// Interval is a closed interval [lo, hi] of reals with these outward operations, exp
// (bounded by exp_rn's proven error, never by libm's) and grow(u, k) = (1 + u)^k - 1.
// It is the number type proofs/bound evaluates kernel_error_bound in (formula.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "pagedattn_bound/exp_rn.h"

// The few-instruction operations are forced inline: GCC's heuristics keep them as calls
// otherwise, and the formula's element part is mostly these calls.
#define PAGEDATTN_BOUND_INLINE [[gnu::always_inline]] inline

namespace pagedattn::bound {

// The smallest double above x (x itself for +inf and NaN).
PAGEDATTN_BOUND_INLINE double next_up(double x) {
  if (!(x < std::numeric_limits<double>::infinity())) return x;  // +inf, NaN
  if (x == 0) return 0x1p-1074;
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  b = x > 0 ? b + 1 : b - 1;
  std::memcpy(&x, &b, sizeof b);
  return x;
}
inline double next_down(double x) {
  return -next_up(-x);
}

namespace detail {
// An upper bound of the exact result whose round-to-nearest is r, when r is not finite:
// +inf stays +inf; -inf from overflow means the exact value is at most -DBL_MAX.
inline double overflow_up(double r) {
  return r == -std::numeric_limits<double>::infinity() ? -std::numeric_limits<double>::max() : r;
}
constexpr double kUnsafeTiny = 0x1p-969;  // below this an fma-recovered error may be inexact
}  // namespace detail

// a + b rounded toward +inf.
PAGEDATTN_BOUND_INLINE double add_up(double a, double b) {
  const double s = a + b;
  if (!std::isfinite(s)) return detail::overflow_up(s);
  const double bb = s - a;
  const double err = (a - (s - bb)) + (b - bb);  // TwoSum: exactly (a + b) - s
  return err > 0 ? next_up(s) : s;
}
// a * b rounded toward +inf.
PAGEDATTN_BOUND_INLINE double mul_up(double a, double b) {
  const double p = a * b;
  if (!std::isfinite(p)) return detail::overflow_up(p);
  if (a == 0 || b == 0) return p;
  if (std::fabs(p) < detail::kUnsafeTiny) return next_up(p);
  return std::fma(a, b, -p) > 0 ? next_up(p) : p;  // fma: exactly a b - p
}
// a / b rounded toward +inf (b == 0 gives +inf: no finite upper bound).
PAGEDATTN_BOUND_INLINE double div_up(double a, double b) {
  if (b == 0)
    return a == 0 ? std::numeric_limits<double>::quiet_NaN()
                  : std::numeric_limits<double>::infinity();
  const double q = a / b;
  if (!std::isfinite(q)) return detail::overflow_up(q);
  if (a == 0) return q;
  if (std::fabs(q) < detail::kUnsafeTiny || std::fabs(a) < detail::kUnsafeTiny) return next_up(q);
  const double r = std::fma(-q, b, a);  // exactly a - q b, so a/b - q = r / b
  return (r != 0 && ((r > 0) == (b > 0))) ? next_up(q) : q;
}
PAGEDATTN_BOUND_INLINE double add_down(double a, double b) {
  return -add_up(-a, -b);
}
PAGEDATTN_BOUND_INLINE double mul_down(double a, double b) {
  return -mul_up(-a, b);
}
PAGEDATTN_BOUND_INLINE double div_down(double a, double b) {
  return -div_up(-a, b);
}

// e^t enclosed: exp_rn(t) within kExpRelErr, scaled outward (exp_rn.h has the proof).
inline double exp_up(double t) {
  if (std::isnan(t)) return t;
  if (t > kExpMaxArg) return std::numeric_limits<double>::infinity();
  if (t < kExpMinArg) return kExpBelowMin;  // e^t < e^-700 < 2^-1009
  return mul_up(exp_rn(t), 1 + kExpRelErr);
}
inline double exp_down(double t) {
  if (std::isnan(t)) return t;
  if (t > kExpMaxArg) return exp_down(kExpMaxArg);
  if (t < kExpMinArg) return 0;
  return mul_down(exp_rn(t), 1 - kExpRelErr);
}

// (1 + u)^k - 1 for u >= 0 and an integer k >= 0, rounded toward +inf (up) or -inf: the
// binomial series sum_{j>=1} C(k, j) u^j, whose terms t_{j+1} = t_j (k - j) u / (j + 1)
// are positive with ratios (k - j) u / (j + 1) <= k u / 2 <= 1/2 (for k u <= 1). Up:
// summed upward until a term is below 2^-60 of the sum, then that term again bounds the
// rest (a tail of ratios <= 1/2 is at most its first term). Above k u = 1 (a relative
// error past 100%, where the bound is infinite anyway) the cruder (1 + u)^k <= e^{k u}
// and >= 1 + k u are used.
inline double grow_up(double u, double k) {
  if (!(u > 0) || !(k > 0)) return 0;
  const double ku = mul_up(k, u);
  if (ku > 1) return add_up(exp_up(ku), -1);
  double t = ku, s = ku;
  for (double j = 1; j < k; ++j) {
    t = mul_up(t, div_up(mul_up(k - j, u), j + 1));
    s = add_up(s, t);
    if (t < s * 0x1p-60) return add_up(s, t);
  }
  return s;  // the series is finite: every term added
}
inline double grow_down(double u, double k) {
  if (!(u > 0) || !(k > 0)) return 0;
  const double ku = mul_down(k, u);
  if (ku > 1) return ku;
  double t = ku, s = ku;
  for (double j = 1; j < k; ++j) {
    t = mul_down(t, div_down(mul_down(k - j, u), j + 1));
    if (t < s * 0x1p-60) break;  // the rest is positive: leaving it out keeps a lower bound
    s = add_down(s, t);
  }
  return s;
}

struct Interval {
  double lo = 0, hi = 0;
  constexpr Interval() = default;
  constexpr Interval(double x) : lo(x), hi(x) {}  // NOLINT: a point, implicitly
  constexpr Interval(double l, double h) : lo(l), hi(h) {}
  bool point() const { return lo == hi; }
};

PAGEDATTN_BOUND_INLINE Interval operator+(const Interval& a, const Interval& b) {
  return {add_down(a.lo, b.lo), add_up(a.hi, b.hi)};
}
inline Interval operator-(const Interval& a) {
  return {-a.hi, -a.lo};
}
PAGEDATTN_BOUND_INLINE Interval operator-(const Interval& a, const Interval& b) {
  return {add_down(a.lo, -b.hi), add_up(a.hi, -b.lo)};
}
PAGEDATTN_BOUND_INLINE Interval operator/(const Interval& a, const Interval& b);

namespace detail {
// The products and quotients of intervals with a negative end: every corner.
inline Interval mul_corners(const Interval& a, const Interval& b) {
  const double lo = std::min(
      {mul_down(a.lo, b.lo), mul_down(a.lo, b.hi), mul_down(a.hi, b.lo), mul_down(a.hi, b.hi)});
  const double hi =
      std::max({mul_up(a.lo, b.lo), mul_up(a.lo, b.hi), mul_up(a.hi, b.lo), mul_up(a.hi, b.hi)});
  return {lo, hi};
}
inline Interval div_corners(const Interval& a, const Interval& b) {
  const double inf = std::numeric_limits<double>::infinity();
  if (b.hi < 0) return -(a / -b);
  if (!(b.lo > 0)) return {-inf, inf};  // 0 in the divisor (or NaN): nothing is bounded
  return {std::min(div_down(a.lo, b.lo), div_down(a.lo, b.hi)),
          std::max(div_up(a.hi, b.lo), div_up(a.hi, b.hi))};
}
}  // namespace detail

// The bound's terms are almost all nonnegative: that case is two roundings, inlined where
// the formula is evaluated (formula.h); the rest takes every corner, out of the hot path.
PAGEDATTN_BOUND_INLINE Interval operator*(const Interval& a, const Interval& b) {
  if (a.lo >= 0 && b.lo >= 0) return {mul_down(a.lo, b.lo), mul_up(a.hi, b.hi)};
  return detail::mul_corners(a, b);
}
PAGEDATTN_BOUND_INLINE Interval operator/(const Interval& a, const Interval& b) {
  if (a.lo >= 0 && b.lo > 0) return {div_down(a.lo, b.hi), div_up(a.hi, b.lo)};
  return detail::div_corners(a, b);
}
inline Interval exp(const Interval& a) {
  return {exp_down(a.lo), exp_up(a.hi)};
}
// (1 + u)^k - 1 over u in [u.lo, u.hi], k in [k.lo, k.hi] (increasing in both; a k that
// is not an integer is rounded outward to one).
inline Interval grow(const Interval& u, const Interval& k) {
  return {grow_down(u.lo, std::floor(k.lo)), grow_up(u.hi, std::ceil(k.hi))};
}
// (1 + a)(1 + b) - 1 = a + b + a b, without 1 + a's cancellation.
inline Interval comb(const Interval& a, const Interval& b) {
  return a + b + a * b;
}
inline Interval max(const Interval& a, const Interval& b) {
  return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}
inline Interval min(const Interval& a, const Interval& b) {
  return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
}
// flag ? a : b for a flag known exactly (0 or 1); an uncertain flag gives the hull.
inline Interval sel(const Interval& flag, const Interval& a, const Interval& b) {
  if (flag.point()) return flag.lo != 0 ? a : b;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}
inline Interval abs(const Interval& a) {
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return -a;
  return {0, std::max(-a.lo, a.hi)};
}
// 1 if a <= b, else 0 (the hull [0, 1] where the intervals overlap: then sel takes both).
inline Interval le(const Interval& a, const Interval& b) {
  if (a.hi <= b.lo) return 1;
  if (a.lo > b.hi) return 0;
  return {0, 1};
}
// 1 if x > 0, else 0 (the hull [0, 1] if x straddles 0).
inline Interval step(const Interval& x) {
  return {x.lo > 0 ? 1.0 : 0.0, x.hi > 0 ? 1.0 : 0.0};
}
// ceil(a / b) of nonnegative integers (exact for points below 2^53).
inline Interval ceil_div(const Interval& a, const Interval& b) {
  return {std::ceil(div_down(a.lo, b.hi)), std::ceil(div_up(a.hi, b.lo))};
}
// The least integer k >= 0 with 2^k >= x (log2 of a power of two), x >= 1.
inline double ceil_log2(double x) {
  int k = 0;
  while (std::ldexp(1.0, k) < x) ++k;
  return k;
}
inline Interval ceil_log2(const Interval& x) {
  return {ceil_log2(x.lo), ceil_log2(x.hi)};
}
// lhs < rhs (lhs <= rhs) for every value in the intervals: a hypothesis holds.
inline bool holds_lt(const Interval& lhs, const Interval& rhs) {
  return lhs.hi < rhs.lo;
}
inline bool holds_le(const Interval& lhs, const Interval& rhs) {
  return lhs.hi <= rhs.lo;
}

}  // namespace pagedattn::bound
