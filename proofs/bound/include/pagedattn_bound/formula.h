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

// The inputs and coefficients of level `row` (and the hypotheses' outcomes).
template <class N>
struct RowTerms {
#define PAGEDATTN_BOUND_INPUT(level, name, doc) PAGEDATTN_BOUND_FIELD_##level(name)
#define PAGEDATTN_BOUND_COEF(level, name, eq, expr) PAGEDATTN_BOUND_FIELD_##level(name)
#define PAGEDATTN_BOUND_HYPOTHESIS(level, name, eq, lhs, rel, rhs) bool name = false;
  bool hypotheses_hold = false;  // every hypothesis above (evaluate_row sets them)
#define PAGEDATTN_BOUND_FIELD_row(name) N name{};
#define PAGEDATTN_BOUND_FIELD_element(name)
#include "pagedattn_bound/coefficients.def"
#undef PAGEDATTN_BOUND_FIELD_row
#undef PAGEDATTN_BOUND_FIELD_element
#undef PAGEDATTN_BOUND_INPUT
#undef PAGEDATTN_BOUND_COEF
#undef PAGEDATTN_BOUND_HYPOTHESIS
};

// The inputs and coefficients of level `element`.
template <class N>
struct ElementTerms {
#define PAGEDATTN_BOUND_INPUT(level, name, doc) PAGEDATTN_BOUND_FIELD_##level(name)
#define PAGEDATTN_BOUND_COEF(level, name, eq, expr) PAGEDATTN_BOUND_FIELD_##level(name)
#define PAGEDATTN_BOUND_HYPOTHESIS(level, name, eq, lhs, rel, rhs)
#define PAGEDATTN_BOUND_FIELD_row(name)
#define PAGEDATTN_BOUND_FIELD_element(name) N name{};
#include "pagedattn_bound/coefficients.def"
#undef PAGEDATTN_BOUND_FIELD_row
#undef PAGEDATTN_BOUND_FIELD_element
#undef PAGEDATTN_BOUND_INPUT
#undef PAGEDATTN_BOUND_COEF
#undef PAGEDATTN_BOUND_HYPOTHESIS
};

// The inputs of one number type as another's (To constructible from From): the row
// inputs of rf into rt and the element inputs of ef into et, where not null.
template <class To, class From>
void copy_inputs(const RowTerms<From>& rf, const ElementTerms<From>& ef, RowTerms<To>* rt,
                 ElementTerms<To>* et) {
#define PAGEDATTN_BOUND_INPUT(level, name, doc) PAGEDATTN_BOUND_CP_##level(name)
#define PAGEDATTN_BOUND_COEF(level, name, eq, expr)
#define PAGEDATTN_BOUND_HYPOTHESIS(level, name, eq, lhs, rel, rhs)
#define PAGEDATTN_BOUND_CP_row(name) \
  if (rt) rt->name = To(rf.name);
#define PAGEDATTN_BOUND_CP_element(name) \
  if (et) et->name = To(ef.name);
#include "pagedattn_bound/coefficients.def"
#undef PAGEDATTN_BOUND_CP_row
#undef PAGEDATTN_BOUND_CP_element
#undef PAGEDATTN_BOUND_INPUT
#undef PAGEDATTN_BOUND_COEF
#undef PAGEDATTN_BOUND_HYPOTHESIS
}
template <class To, class From>
RowTerms<To> convert_inputs(const RowTerms<From>& f) {
  RowTerms<To> t;
  copy_inputs<To, From>(f, ElementTerms<From>{}, &t, nullptr);
  return t;
}
template <class To, class From>
ElementTerms<To> convert_inputs(const ElementTerms<From>& f) {
  ElementTerms<To> e;
  copy_inputs<To, From>(RowTerms<From>{}, f, nullptr, &e);
  return e;
}

// Computes t's row coefficients from its row inputs. Each entry is a local constant
// defined from the ones above it, so a forward reference does not compile.
template <class N>
void evaluate_row(RowTerms<N>& t) {
  t.hypotheses_hold = true;
#define PAGEDATTN_BOUND_INPUT(level, name, doc) PAGEDATTN_BOUND_IN_##level(name)
#define PAGEDATTN_BOUND_COEF(level, name, eq, expr) PAGEDATTN_BOUND_CO_##level(name, expr)
#define PAGEDATTN_BOUND_HYPOTHESIS(level, name, eq, lhs, rel, rhs) \
  PAGEDATTN_BOUND_HY_##level(name, lhs, rel, rhs)
#define PAGEDATTN_BOUND_IN_row(name) \
  const N name = t.name;             \
  (void)name;
#define PAGEDATTN_BOUND_IN_element(name)
#define PAGEDATTN_BOUND_CO_row(name, expr) \
  const N name = (expr);                   \
  t.name = name;
#define PAGEDATTN_BOUND_CO_element(name, expr)
#define PAGEDATTN_BOUND_HY_row(name, lhs, rel, rhs) \
  t.name = holds_##rel(N(lhs), N(rhs));             \
  t.hypotheses_hold = t.hypotheses_hold && t.name;
#define PAGEDATTN_BOUND_HY_element(name, lhs, rel, rhs)
#include "pagedattn_bound/coefficients.def"
#undef PAGEDATTN_BOUND_IN_row
#undef PAGEDATTN_BOUND_IN_element
#undef PAGEDATTN_BOUND_CO_row
#undef PAGEDATTN_BOUND_CO_element
#undef PAGEDATTN_BOUND_HY_row
#undef PAGEDATTN_BOUND_HY_element
#undef PAGEDATTN_BOUND_INPUT
#undef PAGEDATTN_BOUND_COEF
#undef PAGEDATTN_BOUND_HYPOTHESIS
}

// Computes e's element coefficients from its element inputs and the evaluated row t.
template <class N>
void evaluate_element(const RowTerms<N>& t, ElementTerms<N>& e) {
#define PAGEDATTN_BOUND_INPUT(level, name, doc) PAGEDATTN_BOUND_IN_##level(name)
#define PAGEDATTN_BOUND_COEF(level, name, eq, expr) PAGEDATTN_BOUND_CO_##level(name, expr)
#define PAGEDATTN_BOUND_HYPOTHESIS(level, name, eq, lhs, rel, rhs)
#define PAGEDATTN_BOUND_IN_row(name) \
  const N& name = t.name;            \
  (void)name;
#define PAGEDATTN_BOUND_IN_element(name) const N name = e.name;
#define PAGEDATTN_BOUND_CO_row(name, expr) \
  const N& name = t.name;                  \
  (void)name;
#define PAGEDATTN_BOUND_CO_element(name, expr) \
  const N name = (expr);                       \
  e.name = name;
#include "pagedattn_bound/coefficients.def"
#undef PAGEDATTN_BOUND_IN_row
#undef PAGEDATTN_BOUND_IN_element
#undef PAGEDATTN_BOUND_CO_row
#undef PAGEDATTN_BOUND_CO_element
#undef PAGEDATTN_BOUND_INPUT
#undef PAGEDATTN_BOUND_COEF
#undef PAGEDATTN_BOUND_HYPOTHESIS
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
inline const std::vector<TableEntry>& coefficient_table() {
  static const std::vector<TableEntry> table = {
#define PAGEDATTN_BOUND_INPUT(level, name, doc) {"input", #level, #name, "", "", doc},
#define PAGEDATTN_BOUND_COEF(level, name, eq, expr) {"coef", #level, #name, eq, #expr, ""},
#define PAGEDATTN_BOUND_HYPOTHESIS(level, name, eq, lhs, rel, rhs) \
  {"hypothesis", #level, #name, eq, #lhs PAGEDATTN_BOUND_REL_##rel #rhs, ""},
#define PAGEDATTN_BOUND_REL_lt " < "
#define PAGEDATTN_BOUND_REL_le " <= "
#include "pagedattn_bound/coefficients.def"
#undef PAGEDATTN_BOUND_INPUT
#undef PAGEDATTN_BOUND_COEF
#undef PAGEDATTN_BOUND_HYPOTHESIS
  };
  return table;
}

// Calls f(name, value) for every input and coefficient of t and e, in table order.
template <class N, class F>
void for_each_value(const RowTerms<N>& t, const ElementTerms<N>& e, F&& f) {
#define PAGEDATTN_BOUND_INPUT(level, name, doc) f(#name, PAGEDATTN_BOUND_OF_##level.name);
#define PAGEDATTN_BOUND_COEF(level, name, eq, expr) f(#name, PAGEDATTN_BOUND_OF_##level.name);
#define PAGEDATTN_BOUND_HYPOTHESIS(level, name, eq, lhs, rel, rhs)
#define PAGEDATTN_BOUND_OF_row t
#define PAGEDATTN_BOUND_OF_element e
#include "pagedattn_bound/coefficients.def"
#undef PAGEDATTN_BOUND_OF_row
#undef PAGEDATTN_BOUND_OF_element
#undef PAGEDATTN_BOUND_INPUT
#undef PAGEDATTN_BOUND_COEF
#undef PAGEDATTN_BOUND_HYPOTHESIS
}

}  // namespace pagedattn::bound
