// kernel_error_bound's table (coefficients.def) instantiated for a number type N:
// Interval (outward rounding: what bound.cpp evaluates, never below the real value),
// double (plain round to nearest: the tests' counterexample that directed rounding is
// needed) or a multiprecision type (the tests' MPFR reference). Each entry becomes a field
// of RowTerms<N> or ElementTerms<N>, computed in table order from the entries above it.
#pragma once
#include <cmath>
#include <vector>

#include "pagedattn_bound/interval.h"

namespace pagedattn::bound {

// The table's functions for N = double, in round to nearest (Interval's are in interval.h).
inline double exp(double x) {
  return std::exp(x);
}
inline double grow(double u, double k) {
  return std::expm1(k * std::log1p(u));
}
inline double comb(double a, double b) {
  return a + b + a * b;
}
inline double max(double a, double b) {
  return a > b ? a : b;
}
inline double min(double a, double b) {
  return a < b ? a : b;
}
inline double sel(double flag, double a, double b) {
  return flag != 0 ? a : b;
}
inline double step(double x) {
  return x > 0 ? 1 : 0;
}
inline double ceil_div(double a, double b) {
  return std::ceil(a / b);
}
inline double abs(double x) {
  return std::fabs(x);
}
inline double le(double a, double b) {
  return a <= b ? 1 : 0;
}
inline bool holds_lt(double lhs, double rhs) {
  return lhs < rhs;
}
inline bool holds_le(double lhs, double rhs) {
  return lhs <= rhs;
}

// The table as data (bound_table prints it as JSON): kind is "input", "coef" or
// "hypothesis"; expr is the expression's text ("lhs < rhs" or "lhs <= rhs" for a
// hypothesis).
struct TableEntry {
  const char* kind;
  const char* level;
  const char* name;
  const char* eq;  // "" for inputs
  const char* expr;
  const char* doc;  // inputs only
};
}  // namespace pagedattn::bound

// The theorem's table (coefficients.def) in pagedattn::bound, and the paper formula's
// (paper_coefficients.def) in pagedattn::bound::paper.
#define PAGEDATTN_BOUND_TABLE "pagedattn_bound/coefficients.def"
namespace pagedattn::bound {
#include "pagedattn_bound/formula_body.inc"
}  // namespace pagedattn::bound
#undef PAGEDATTN_BOUND_TABLE
#define PAGEDATTN_BOUND_TABLE "pagedattn_bound/paper_coefficients.def"
namespace pagedattn::bound::paper {
#include "pagedattn_bound/formula_body.inc"
}  // namespace pagedattn::bound::paper
#undef PAGEDATTN_BOUND_TABLE
