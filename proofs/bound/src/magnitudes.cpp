// The exact quantities kernel_error_bound takes, from exact values given as doubles
// (proofs/error_bound.md, section 9).
#include <algorithm>
#include <cmath>
#include <vector>

#include "pagedattn_bound/bound.h"

namespace pagedattn::bound {

void exact_magnitudes(std::int64_t n, int head_size, const double* logits, const double* qk_abs,
                      const double* values, double sum_abs_q, RowMagnitudes* row,
                      ElementMagnitudes* el) {
  exact_magnitudes(
      n, head_size, logits, qk_abs,
      [&](std::int64_t i, double* out) {
        std::copy(values + i * head_size, values + (i + 1) * head_size, out);
      },
      sum_abs_q, row, el);
}

void exact_magnitudes(std::int64_t n, int head_size, const double* logits, const double* qk_abs,
                      const std::function<void(std::int64_t, double*)>& value_row, double sum_abs_q,
                      RowMagnitudes* row, ElementMagnitudes* el) {
  // Inputs within 1e-12 relative; a double sum of n nonnegative terms is within about
  // n * 2^-53 relative of the exact sum in the worst case ((n - 1) u / (1 - (n - 1) u),
  // u = 2^-53). Inflating by 1e-9 therefore keeps each result an upper bound only for
  // n up to about 9e6 terms (9e6 * 2^-53 = 1.0e-9); past that the worst case is not
  // covered (2^31 terms: 2.4e-7). abs_exact gets an absolute margin of 1e-9 A instead.
  constexpr double kUp = 1 + 1e-9;
  *row = RowMagnitudes{};
  row->n = n;
  row->sum_abs_q = sum_abs_q * kUp;
  for (int d = 0; d < head_size; ++d) el[d] = ElementMagnitudes{0, 0, 0, 0, 0};
  if (n <= 0) return;
  double x_max = -INFINITY, x_min = INFINITY;
  for (std::int64_t i = 0; i < n; ++i) {
    x_max = std::max(x_max, logits[i]);
    x_min = std::min(x_min, logits[i]);
  }
  std::vector<double> p(static_cast<std::size_t>(n));
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += p[i] = std::exp(logits[i] - x_max);
  std::vector<double> y(static_cast<std::size_t>(head_size), 0.0);
  std::vector<double> v(static_cast<std::size_t>(head_size));
  // Pass 1: the row maxima, A and y.
  for (std::int64_t i = 0; i < n; ++i) {
    const double pi = p[i] / s, ax = std::fabs(logits[i]);
    row->max_abs_logit = std::max(row->max_abs_logit, ax);
    row->max_qk = std::max(row->max_qk, qk_abs[i]);
    row->p_gap += pi * (x_max - logits[i]);
    row->p_qk += pi * qk_abs[i];
    row->p_x += pi * ax;
    value_row(i, v.data());
    for (int d = 0; d < head_size; ++d) {
      row->max_abs_v = std::max(row->max_abs_v, std::fabs(v[d]));
      y[d] += pi * v[d];
      el[d].a += pi * std::fabs(v[d]);
    }
  }
  // Pass 2: the deviations |v_i - y|, and the same sums weighted by |v_i| (for margins).
  std::vector<double> a_gap(head_size, 0.0), a_qk(head_size, 0.0), a_x(head_size, 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    const double pi = p[i] / s, gap = x_max - logits[i], ax = std::fabs(logits[i]);
    value_row(i, v.data());
    for (int d = 0; d < head_size; ++d) {
      const double w = pi * std::fabs(v[d] - y[d]), wa = pi * std::fabs(v[d]);
      el[d].dev += w;
      el[d].dev_gap += w * gap;
      el[d].dev_qk += w * qk_abs[i];
      el[d].dev_x += w * ax;
      a_gap[d] += wa * gap;
      a_qk[d] += wa * qk_abs[i];
      a_x[d] += wa * ax;
    }
  }
  // Gaps x_max - x_i of doubles within 1e-12 relative: off by at most 2e-12 max|x|.
  const double gap_margin = 1e-9 * row->max_abs_logit;
  row->spread = (x_max - x_min) * kUp + gap_margin;
  row->p_gap = row->p_gap * kUp + gap_margin;
  row->max_abs_logit *= kUp;
  row->max_qk *= kUp;
  row->max_abs_v *= kUp;
  row->p_qk *= kUp;
  row->p_x *= kUp;
  // |v_i - y| with y in double is off by at most 1e-12 (|v_i| + |y|) <= 2e-12 |v_i| + ...:
  // each deviation sum gets 1e-9 of the matching |v_i|-weighted sum as an absolute margin.
  for (int d = 0; d < head_size; ++d) {
    el[d].a *= kUp;
    el[d].dev = el[d].dev * kUp + 1e-9 * el[d].a;
    el[d].dev_gap = el[d].dev_gap * kUp + 1e-9 * a_gap[d] + gap_margin * el[d].a;
    el[d].dev_qk = el[d].dev_qk * kUp + 1e-9 * a_qk[d];
    el[d].dev_x = el[d].dev_x * kUp + 1e-9 * a_x[d];
    el[d].abs_exact = std::fabs(y[d]) + 1e-9 * el[d].a;
  }
}

void widen_for_logit_error(double e, int head_size, RowMagnitudes* row, ElementMagnitudes* el) {
  if (!(e > 0) || row->n <= 0) return;
  // Every computed logit is within e of the exact one, so p_i = exp(x_i) / sum_j exp(x_j)
  // has numerator and denominator within factors exp(+-e): |p_i - p~_i| <= r p~_i with
  // r = exp(2e) - 1, and for f >= 0, sum p_i f_i <= g sum p~_i f_i with g = 1 + r. The exact
  // y = sum p_i v_i is within r A~ of the computed one (A~ = sum p~_i |v_i|, el.a), so
  // |v_i - y| <= |v_i - y~| + r A~. With gap_i <= gap~_i + 2e and |x_i| <= |x~_i| + e:
  //   sum p_i gap_i             <= g (p_gap~ + 2e)
  //   sum p_i |v - y| gap_i     <= g (dev_gap~ + 2e (dev~ + r A~) + r A~ p_gap~)
  //   sum p_i |v - y| |x_i|     <= g (dev_x~ + e (dev~ + r A~) + r A~ p_x~)
  //   sum p_i |v - y| Q_i       <= g (dev_qk~ + r A~ p_qk~)
  // and likewise for p_x, p_qk, A and dev.
  const double r = std::expm1(2 * e) * (1 + 1e-9), g = 1 + r;
  const double p_gap = row->p_gap, p_x = row->p_x, p_qk = row->p_qk;
  row->spread += 2 * e;
  row->max_abs_logit += e;
  row->p_gap = g * (p_gap + 2 * e);
  row->p_x = g * (p_x + e);
  row->p_qk = g * p_qk;
  for (int d = 0; d < head_size; ++d) {
    ElementMagnitudes& m = el[d];
    const double ra = r * m.a, dev = m.dev + ra;
    m.dev_gap = g * (m.dev_gap + 2 * e * dev + ra * p_gap);
    m.dev_x = g * (m.dev_x + e * dev + ra * p_x);
    m.dev_qk = g * (m.dev_qk + ra * p_qk);
    m.dev = g * dev;
    m.a = g * m.a;
    if (m.abs_exact >= 0) m.abs_exact += ra;
  }
}

}  // namespace pagedattn::bound
