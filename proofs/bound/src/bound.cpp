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

RowTerms<double> row_inputs(const KernelConfig& c, const RowMagnitudes& row, bool vllm) {
  check(c);
  const bool fp8 = is_fp8(c.cache);
  RowTerms<double> t;
  t.u = 0x1p-24;
  t.eta = 0x1p-150;
  t.eta_e = 0x1p-126;
  t.eta64 = 0x1p-86;
  t.flt_max = static_cast<double>(std::numeric_limits<float>::max());
  t.eps32 = static_cast<double>(1e-6f);  // 8796093 * 2^-43, the float the kernels add
  t.us = c.scalar == Format::f32 ? 0 : unit_roundoff(c.scalar);
  t.etas = c.scalar == Format::f32 ? 0 : subnormal_half_quantum(c.scalar);
  t.a_exp = c.exp.a_ulp;
  t.b_exp = c.exp.b_ulp;
  t.sc = c.scale;
  t.ks = fp8 ? c.k_scale : 1;
  t.vs = fp8 ? c.v_scale : 1;
  t.D = c.head_size;
  t.B = c.block_size;
  t.W = c.warp_size;
  t.T = c.threads_per_block;
  t.fp8 = fp8;
  t.vl = vllm;
  t.n = static_cast<double>(row.n);
  // V2's partitions (one V2 partition is copied by the reduce: V1's numerics).
  const std::int64_t ps = c.partition_size;
  t.P = ps ? static_cast<double>((row.n + ps - 1) / ps) : 1;
  t.L = static_cast<double>(ps ? std::min<std::int64_t>(row.n, ps) : row.n);
  t.spread = row.spread;
  t.X = row.max_abs_logit;
  t.Qm = row.max_qk;
  t.V = row.max_abs_v;
  t.Sq = row.sum_abs_q;
  t.pgap = row.p_gap;
  t.pqk = row.p_qk;
  t.px = row.p_x;
  return t;
}

ElementTerms<double> element_inputs(const ElementMagnitudes& el) {
  ElementTerms<double> e;
  e.A = el.a;
  e.Y = el.abs_exact >= 0 ? el.abs_exact : el.a;  // |y| <= A always
  e.dev = el.dev;
  e.dgap = el.dev_gap;
  e.dqk = el.dev_qk;
  e.dx = el.dev_x;
  return e;
}

RowBound row_bound(const KernelConfig& c, const RowMagnitudes& row) {
  RowBound b;
  check(c);
  b.empty = row.n <= 0;
  if (b.empty) return b;
  // The theorem covers Numerics::exact_fp32 (vl = 0) and vllm_compatible (vl = 1, the three
  // choices together). A single choice is not in it: its bound is the larger of both.
  const Choices& ch = c.choices;
  const int n_true = ch.partials_in_output_dtype + ch.epsilon_denominator + ch.round_probabilities;
  b.proven = n_true == 0 || n_true == 3;
  for (const bool vllm : {false, true}) {
    if (b.proven && vllm != (n_true == 3)) continue;
    // Every input is a point: the table's doubles are the exact values.
    RowTerms<Interval>& t = b.terms[b.count++];
    t = convert_inputs<Interval>(row_inputs(c, row, vllm));
    evaluate_row(t);
  }
  return b;
}

Bound element_bound(const RowBound& row, const ElementMagnitudes& el) {
  Bound b;
  if (row.empty) return b;  // the kernels write an exact 0
  const double inf = std::numeric_limits<double>::infinity();
  const ElementTerms<Interval> in = convert_inputs<Interval>(element_inputs(el));
  for (int k = 0; k < row.count; ++k) {
    const RowTerms<Interval>& t = row.terms[k];
    if (!t.hypotheses_hold) {  // a hypothesis of the theorem fails (or is not certain)
      b.fp32 = b.total = b.softmax = b.sums = b.tail = b.absolute = b.final_rounding = inf;
      return b;
    }
    ElementTerms<Interval> e = in;
    evaluate_element(t, e);
    // Upper ends; a NaN (a NaN magnitude: a row with non-finite inputs) is no bound at all.
    auto up = [&](const Interval& x) { return std::isnan(x.hi) ? inf : x.hi; };
    if (k > 0 && !(up(e.total) > b.total)) continue;  // the larger of the two evaluations
    b.softmax = up(e.Esm);
    b.sums = up(e.Es);
    b.tail = up(e.Etail);
    b.absolute = up(t.ze);
    b.fp32 = up(e.E32);
    b.final_rounding = up(e.final);
    b.total = up(e.total);
  }
  return b;
}

Bound kernel_error_bound(const KernelConfig& c, const RowMagnitudes& row,
                         const ElementMagnitudes& el) {
  return element_bound(row_bound(c, row), el);
}

}  // namespace pagedattn::bound
