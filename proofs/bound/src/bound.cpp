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

// The inputs both tables name alike: fp32's unit roundoff, the exp's accuracy, the launch
// geometry, the cache's kind and the row's magnitudes.
template <class Terms>
void common_inputs(const KernelConfig& c, const RowMagnitudes& row, Terms& t) {
  t.u = 0x1p-24;
  t.a_exp = c.exp.a_ulp;
  t.b_exp = c.exp.b_ulp;
  t.D = c.head_size;
  t.B = c.block_size;
  t.W = c.warp_size;
  t.T = c.threads_per_block;
  t.fp8 = is_fp8(c.cache);
  t.n = static_cast<double>(row.n);
  t.spread = row.spread;
  t.X = row.max_abs_logit;
  t.Qm = row.max_qk;
  t.V = row.max_abs_v;
  t.Sq = row.sum_abs_q;
  t.pgap = row.p_gap;
  t.pqk = row.p_qk;
  t.px = row.p_x;
}

// The element inputs, named alike in both tables: Y = |y| (A when |y| is unknown: |y| <= A).
template <class Terms>
Terms element_terms(const ElementMagnitudes& el) {
  Terms e;
  e.A = el.a;
  e.Y = el.abs_exact >= 0 ? el.abs_exact : el.a;
  e.dev = el.dev;
  e.dgap = el.dev_gap;
  e.dqk = el.dev_qk;
  e.dx = el.dev_x;
  return e;
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

RowTerms<double> row_inputs(const KernelConfig& c, const RowMagnitudes& row, bool vllm) {
  check(c);
  const bool fp8 = is_fp8(c.cache);
  RowTerms<double> t;
  common_inputs(c, row, t);
  t.eta = 0x1p-150;
  t.eta_e = 0x1p-126;
  t.eta64 = 0x1p-86;
  t.flt_max = static_cast<double>(std::numeric_limits<float>::max());
  t.eps32 = static_cast<double>(1e-6f);  // 8796093 * 2^-43, the float the kernels add
  t.us = c.scalar == Format::f32 ? 0 : unit_roundoff(c.scalar);
  t.etas = c.scalar == Format::f32 ? 0 : subnormal_half_quantum(c.scalar);
  t.sc = c.scale;
  t.ks = fp8 ? c.k_scale : 1;
  t.vs = fp8 ? c.v_scale : 1;
  t.vl = vllm;
  // V2's partitions (one V2 partition is copied by the reduce: V1's numerics).
  const std::int64_t ps = c.partition_size;
  t.P = ps ? static_cast<double>((row.n + ps - 1) / ps) : 1;
  t.L = static_cast<double>(ps ? std::min<std::int64_t>(row.n, ps) : row.n);
  return t;
}

paper::RowTerms<double> paper_row_inputs(const KernelConfig& c, const RowMagnitudes& row) {
  check(c);
  paper::RowTerms<double> t;
  common_inputs(c, row, t);
  t.us = unit_roundoff(c.scalar);
  t.eta_s = subnormal_half_quantum(c.scalar);
  t.tiny = 0x1p-126;
  t.eps_f = static_cast<double>(1e-6f);  // the float the kernels add, exactly
  t.scale_abs = std::fabs(c.scale);
  t.PS = c.partition_size;
  t.round_p = c.choices.round_probabilities;
  t.eps = c.choices.epsilon_denominator;
  t.partials = c.choices.partials_in_output_dtype;
  t.f32_out = c.scalar == Format::f32;
  return t;
}

paper::ElementTerms<double> paper_element_inputs(const ElementMagnitudes& el) {
  return element_terms<paper::ElementTerms<double>>(el);
}

ElementTerms<double> element_inputs(const ElementMagnitudes& el) {
  return element_terms<ElementTerms<double>>(el);
}

RowBound row_bound(const KernelConfig& c, const RowMagnitudes& row) {
  RowBound b;
  check(c);
  b.empty = row.n <= 0;
  if (b.empty) return b;
  // The theorem covers Numerics::exact_fp32 (vl = 0) and vllm_compatible (vl = 1, its three
  // choices together); any other combination of choices gets the paper formula.
  const Choices& ch = c.choices;
  const int n_true = ch.partials_in_output_dtype + ch.epsilon_denominator + ch.round_probabilities;
  b.proven = n_true == 0 || n_true == 3;
  // Every input is a point: the table's doubles are the exact values.
  if (b.proven) {
    b.terms = convert_inputs<Interval>(row_inputs(c, row, n_true == 3));
    evaluate_row(b.terms);
  } else {
    b.paper_terms = paper::convert_inputs<Interval>(paper_row_inputs(c, row));
    paper::evaluate_row(b.paper_terms);
  }
  return b;
}

namespace {
// The Bound from an evaluated element (upper ends; a NaN, a NaN magnitude of a row with
// non-finite inputs, is no bound at all).
template <class E>
Bound upper_ends(const E& softmax, const E& sums, const E& tail, const E& absolute, const E& fp32,
                 const E& final_rounding, const E& total) {
  const double inf = std::numeric_limits<double>::infinity();
  auto up = [&](const Interval& x) { return std::isnan(x.hi) ? inf : x.hi; };
  Bound b;
  b.softmax = up(softmax);
  b.sums = up(sums);
  b.tail = up(tail);
  b.absolute = up(absolute);
  b.fp32 = up(fp32);
  b.final_rounding = up(final_rounding);
  b.total = up(total);
  return b;
}
}  // namespace

Bound element_bound(const RowBound& row, const ElementMagnitudes& el) {
  if (row.empty) return Bound{};  // the kernels write an exact 0
  const double inf = std::numeric_limits<double>::infinity();
  if (!(row.proven ? row.terms.hypotheses_hold : row.paper_terms.hypotheses_hold)) {
    Bound b;  // a hypothesis fails (or is not certain)
    b.fp32 = b.total = b.softmax = b.sums = b.tail = b.absolute = b.final_rounding = inf;
    return b;
  }
  if (row.proven) {
    ElementTerms<Interval> e = convert_inputs<Interval>(element_inputs(el));
    evaluate_element(row.terms, e);
    return upper_ends(e.Esm, e.Es, e.Etail, row.terms.ze, e.E32, e.final, e.total);
  }
  paper::ElementTerms<Interval> e = paper::convert_inputs<Interval>(paper_element_inputs(el));
  paper::evaluate_element(row.paper_terms, e);
  return upper_ends(e.E_softmax, e.E_sums, e.E_tail, row.paper_terms.E_abs, e.E_32, e.E_final,
                    e.total);
}

Bound kernel_error_bound(const KernelConfig& c, const RowMagnitudes& row,
                         const ElementMagnitudes& el) {
  return element_bound(row_bound(c, row), el);
}

}  // namespace pagedattn::bound
