// The V2 reduce's derived error bound against the exact fold of its own fp32 states, and
// the check that uses it; shared by kernels/tests/test_reduce.cpp (emulator) and
// kernels/tools/gpu_check.cpp (the native reduce on the same states).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>
#include "wrong_reductions.h"

namespace pagedattn::test {

// The reduce's error against the exact fold of its own fp32 states, first order in u =
// 2^-24, per output element d, from what the reduce computes (lse_state.h's WeightedSum):
//  - each weight w_p = fl(s_p fl(exp(fl(m_p - M)))) errs by a relative delta_p <= u (the
//    product) + 2u (2 + 1.173 |x_p|) (exp: CUDA documents __expf within 2 + 1.173|x| ulps,
//    an ulp <= 2u relative; the emulator's default is tighter) + u |x_p| (rounding x_p =
//    m_p - M; exact by Sterbenz when close). Weights off by delta_p move out = A / T by
//    sum_p delta_p w_p |o_p - out| / T (A = sum w_p o_p, T = sum w_p);
//  - the two running sums, one rounding per step (fmaf for A): u sum_k |A_k| and
//    u sum_k |T_k| over the partial sums (Higham, running error analysis), moving out by
//    (u sum|A_k| + |out| u sum|T_k|) / T; the division: u |out|.
// Every first-order term is at most (P + 200) u < 1e-3 relative, so the second-order ones
// are below 1e-3 of the bound: factor 1.01.
inline std::vector<double> reduce_bounds(const wrong::States& st) {
  const double u = std::ldexp(1.0, -24);
  const int P = st.parts(), D = st.head_size;
  double M = -INFINITY;
  for (int p = 0; p < P; ++p) M = std::max(M, st.m[p]);
  std::vector<double> w(P, 0.0), delta(P, 0.0);
  double T = 0, sumT = 0;
  for (int p = 0; p < P; ++p) {
    if (st.s[p] == 0) continue;
    const double x = st.m[p] - M;
    w[p] = st.s[p] * std::exp(x);
    delta[p] = u + 2 * u * (2 + 1.173 * std::fabs(x)) + u * std::fabs(x);
    T += w[p];
    sumT += T;
  }
  const std::vector<double> out = wrong::reduce(wrong::Reduction::right, st);
  std::vector<double> bound(D);
  for (int d = 0; d < D; ++d) {
    double A = 0, sumA = 0, wt = 0;
    for (int p = 0; p < P; ++p) {
      if (w[p] == 0) continue;
      A += w[p] * st.o_at(p, d);
      sumA += std::fabs(A);
      wt += delta[p] * w[p] * std::fabs(st.o_at(p, d) - out[d]);
    }
    bound[d] = 1.01 * ((wt + u * sumA + std::fabs(out[d]) * u * sumT) / T + u * std::fabs(out[d]));
  }
  return bound;
}

// max_d |got_d - exact_d| / bound_d (NaN counts as infinitely wrong).
inline double worst_ratio(const std::vector<double>& got, const std::vector<double>& exact,
                          const std::vector<double>& bound) {
  double r = 0;
  for (std::size_t d = 0; d < got.size(); ++d) {
    const double e = std::fabs(got[d] - exact[d]);
    r = std::isnan(e) ? INFINITY : std::max(r, e / bound[d]);
  }
  return r;
}

}  // namespace pagedattn::test
