// Theorem kernel_error_bound in code: the inputs of coefficients.def's table from a
// configuration and a row, the table evaluated in outward-rounded intervals (formula.h),
// and the upper ends as the Bound.
#include "pagedattn_bound/bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace pagedattn::bound {
namespace {

bool is_scalar(Format f) {
  return f == Format::f32 || f == Format::f16 || f == Format::bf16;
}
bool is_fp8(Format f) {
  return f == Format::fp8_e4m3 || f == Format::fp8_e5m2;
}

void check(const KernelConfig& c) {
  auto bad = [](const std::string& m) { throw std::invalid_argument("kernel_error_bound: " + m); };
  if (!is_scalar(c.scalar)) bad("scalar must be f32, f16 or bf16");
  if (!(c.cache == c.scalar || is_fp8(c.cache)))
    bad("cache must equal scalar or be fp8_e4m3 / fp8_e5m2");
  if (c.head_size <= 0) bad("head_size must be positive");
  if (c.block_size <= 0 || c.warp_size <= 0 || c.warp_size % c.block_size != 0)
    bad("warp_size must be a positive multiple of block_size");
  if (c.threads_per_block <= 0 || c.threads_per_block % c.warp_size != 0)
    bad("threads_per_block must be a positive multiple of warp_size");
  if (c.partition_size < 0 || c.partition_size % c.block_size != 0)
    bad("partition_size must be 0 (V1) or a positive multiple of block_size");
  if (!(c.exp.a_ulp >= 0) || !(c.exp.b_ulp >= 0)) bad("exp accuracy must be >= 0 ulps");
}

}  // namespace

double unit_roundoff(Format f) {
  switch (f) {
    case Format::f32:
      return 0x1p-24;
    case Format::f16:
      return 0x1p-11;
    case Format::bf16:
      return 0x1p-8;
    case Format::fp8_e4m3:
      return 0x1p-4;
    case Format::fp8_e5m2:
      return 0x1p-3;
  }
  return 1;
}

double subnormal_half_quantum(Format f) {
  switch (f) {
    case Format::f32:
      return 0x1p-150;
    case Format::f16:
      return 0x1p-25;
    case Format::bf16:
      return 0x1p-134;
    case Format::fp8_e4m3:
      return 0x1p-10;
    case Format::fp8_e5m2:
      return 0x1p-17;
  }
  return 1;
}

RowTerms<double> row_inputs(const KernelConfig& c, const RowMagnitudes& row) {
  check(c);
  RowTerms<double> t;
  t.u = 0x1p-24;
  t.us = unit_roundoff(c.scalar);
  t.eta_s = subnormal_half_quantum(c.scalar);
  t.tiny = 0x1p-126;
  t.eps_f = static_cast<double>(1e-6f);  // the float the kernels add, exactly
  t.a_exp = c.exp.a_ulp;
  t.b_exp = c.exp.b_ulp;
  t.scale_abs = std::fabs(c.scale);
  t.D = c.head_size;
  t.B = c.block_size;
  t.W = c.warp_size;
  t.T = c.threads_per_block;
  t.PS = c.partition_size;
  t.fp8 = is_fp8(c.cache);
  t.round_p = c.choices.round_probabilities;
  t.eps = c.choices.epsilon_denominator;
  t.partials = c.choices.partials_in_output_dtype;
  t.f32_out = c.scalar == Format::f32;
  t.n = static_cast<double>(row.n);
  t.spread = row.spread;
  t.max_abs_logit = row.max_abs_logit;
  t.max_qk = row.max_qk;
  t.max_abs_v = row.max_abs_v;
  t.sum_abs_q = row.sum_abs_q;
  t.p_gap = row.p_gap;
  t.p_qk = row.p_qk;
  t.p_x = row.p_x;
  return t;
}

ElementTerms<double> element_inputs(const ElementMagnitudes& el) {
  ElementTerms<double> e;
  e.A = el.a;
  e.Y = el.abs_exact >= 0 ? std::min(el.abs_exact, el.a) : el.a;
  e.dev = el.dev;
  e.dev_gap = el.dev_gap;
  e.dev_qk = el.dev_qk;
  e.dev_x = el.dev_x;
  return e;
}

RowBound row_bound(const KernelConfig& c, const RowMagnitudes& row) {
  const RowTerms<double> in = row_inputs(c, row);
  RowBound b;
  b.empty = row.n <= 0;
  if (b.empty) return b;
    // Every input is a point: the table's doubles are the exact values.
  b.terms = convert_inputs<Interval>(in);
  evaluate_row(b.terms);
  return b;
}

Bound element_bound(const RowBound& row, const ElementMagnitudes& el) {
  Bound b;
  if (row.empty) return b;  // the kernels write an exact 0
  const ElementTerms<double> in = element_inputs(el);
  ElementTerms<Interval> e = convert_inputs<Interval>(in);
  const RowTerms<Interval>& t = row.terms;
  const double inf = std::numeric_limits<double>::infinity();
  if (!(t.weights_perturbation_below_one && t.denominator_error_below_one)) {
    b.fp32 = b.total = b.softmax = b.sums = b.final_rounding = inf;
    return b;
  }
  evaluate_element(t, e);
  // Upper ends; a NaN (a NaN magnitude: a row with non-finite inputs) is no bound at all.
  auto up = [&](const Interval& x) { return std::isnan(x.hi) ? inf : x.hi; };
  b.softmax = up(e.E_softmax);
  b.sums = up(e.E_sums);
  b.tail = up(e.E_tail);
  b.absolute = up(t.E_abs);
  b.fp32 = up(e.E_32);
  b.final_rounding = up(e.E_final);
  b.total = up(e.total);
  return b;
}

Bound kernel_error_bound(const KernelConfig& c, const RowMagnitudes& row,
                         const ElementMagnitudes& el) {
  return element_bound(row_bound(c, row), el);
}

}  // namespace pagedattn::bound
