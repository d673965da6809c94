// The exact quantities kernel_error_bound takes (proofs/error_bound.md, section 9), as
// upper bounds whatever n: computed in double round to nearest (u = 2^-53 below, eta =
// 2^-1074 bounds one product's or quotient's underflow error), then enlarged by an a
// priori bound of that arithmetic's error, evaluated in outward-rounded intervals
// (interval.h). Nothing here is a tolerance: each step below names what it bounds.
//
// (M1) Logits. Lane l of 8 sums the products q_d k_d with d = l mod 8 in order, then a tree
//   of 3 levels adds the lanes, so a product passes through h_q = 1 + ceil(D/8) + (D mod 8)
//   + 3 roundings (its own, its lane's, the tree's): the dot product errs by at most
//   gamma_hq sum_d |q_d k_d| plus D eta for underflowing products (Higham, Accuracy and
//   Stability, 2nd ed., section 4.2), and the same sum of |q_d k_d| is at least
//   (1 - gamma_hq) of the exact one. With x0 = fl(scale dot), s = fl(slope pos) and
//   x_hat = fl(x0 + s), each rounding errs by at most u times its result, so
//   |x_hat_i - x_i| <= delta_x := gamma_hq max_i Q_i + |scale| D eta + u (max|x0| + max|s|
//   + max|x_hat|) + 2 eta, and Q_i <= rho_Q Q_hat_i + sigma_Q with rho_Q = (1+u)/(1 -
//   gamma_hq), sigma_Q = (eta + |scale| D eta)/(1 - gamma_hq).
// (M2) Weights. With c = max_i x_hat_i, g_i = fl(c - x_hat_i) and t_i = -g_i (exact), t_i is
//   within Delta := delta_x + u max_i g_i of x_i - c, and e_i = exp_rn(t_i) is within
//   eps = kExpRelErr of e^t_i (exp_rn.h; 0 below t = -700). So E_i = e^(x_i - c) lies in
//   e_i [k_lo, k_hi], k_hi = e^Delta / (1 - eps), k_lo = e^-Delta / (1 + eps), for e_i > 0,
//   and in [0, eta_E], eta_E = e^(-700 + Delta), where e_i = 0. p_i = E_i / S with
//   S = sum E_j >= k_lo sum e_j, so for real a_i >= 0:
//     sum_i p_i a_i <= (k_hi sum_i e_i a_i + eta_E n_u max a) / (k_lo sum e_j),  (n_u: e_i = 0)
// (M3) Sums. Every sum is blocked: tiles of kTile tokens summed in order, each tile's sum
//   added to a running total, so a term passes through at most h = kTile + ceil(n/kTile)
//   additions: a computed sum of nonnegative terms is at least (1 - gamma_h) of their sum,
//   and sum_j e_j >= S_hat / (1 + gamma_h). Terms are products of nonnegative doubles with
//   one rounding, fl(e_i a_i) >= e_i a_i (1 - u) - eta, or two, fl(fl(e_i a_i) b_i): so
//     sum_i e_i a_i <= (N_hat / (1 - gamma_h) + n eta) / (1 - u)                 (one)
//     sum_i e_i a_i b_i <= (N_hat / (1 - gamma_h) + n eta (1 + max b)) / (1 - u)^2  (two)
// (M4) y. y_hat = fl(N_y / S_hat) with N_y the blocked sum of fl(e_i v_i). Writing
//   y - Y* = sum_i (E_i - kbar e_i)(v_i - Y*) / S for Y* = sum e_i v_i / sum e_i and
//   kbar = (k_lo + k_hi) / 2: |y - Y*| <= (k_hi / k_lo - 1) Ba / sum e + 2 eta_E n_u
//   max|v| / (k_lo sum e) with Ba >= sum e_i |v_i| (M3, one rounding); |N_y - sum e v| <=
//   e_N := (gamma_h (1 + u) + u) Ba + (1 + gamma_h) n eta and S_hat = sum e (1 + theta),
//   |theta| <= gamma_h, so |N_y / S_hat - Y*| <= (e_N + gamma_h Ba) / S_hat; the division
//   adds u |y_hat| + eta. delta_y is the sum: |y - y_hat| <= delta_y.
// (M5) The fields. |v_i - y| <= tv_i (1 + u) + delta_y with tv_i = fl(|v_i - y_hat|);
//   x_max - x_i <= g_i (1 + u) + 2 delta_x; |x_i| <= |x_hat_i| + delta_x; Q_i as in (M1);
//   each field is then a combination of the sums (M2)-(M3) of e_i times these factors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "pagedattn_bound/bound.h"

namespace pagedattn::bound {
namespace {

constexpr double kU = 0x1p-53;      // double unit roundoff
constexpr double kEta = 0x1p-1074;  // > one product's or quotient's underflow error
constexpr std::int64_t kTile = 64;  // tokens per tile: the inner level of every sum
constexpr int kLanes = 8;           // partial sums of a dot product

// 4-wide vectors of doubles (GCC's vector extension). The helpers are internal and
// inlined, so their vector values cross no ABI boundary (hence -Wpsabi is off in this file).
#pragma GCC diagnostic ignored "-Wpsabi"
typedef double V4 __attribute__((vector_size(32)));
typedef std::uint64_t U4 __attribute__((vector_size(32)));
inline V4 load4(const double* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline V4 abs4(V4 v) {
  const U4 mask = {~(std::uint64_t{1} << 63), ~(std::uint64_t{1} << 63), ~(std::uint64_t{1} << 63),
                   ~(std::uint64_t{1} << 63)};
  return reinterpret_cast<V4>(reinterpret_cast<U4>(v) & mask);
}

// The two hot loops (the key pass, the value passes) are built twice, for AVX2 and for the
// baseline, and picked at load time: vector lanes run over the head dimension, so no sum
// is reordered (the build's -ffp-contract=off keeps every product and sum rounded as
// written): both clones do the same IEEE operations in the same order.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PAGEDATTN_BOUND_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PAGEDATTN_BOUND_CLONES
#endif

// gamma_h = h u / (1 - h u), upward.
Interval gamma(double h) {
  const Interval hu = Interval(h) * kU;
  return hu / (1 - hu);
}
double hi(const Interval& x) {
  return x.hi;
}

// One query row of a group, from the key pass to its magnitudes.
struct Row {
  const double* q = nullptr;
  double slope = 0;
  bool finite = true;
  std::vector<double> x, qk;  // x_hat_i, Q_hat_i; then (weights) fl(e_i |x_hat_i|), fl(e_i Q_hat_i)
  double delta_x = 0;         // |x_hat_i - x_i| <= delta_x (M1)
  Interval rho_q = 1, sigma_q = 0;
  double sum_abs_q = 0;  // an upper bound of sum_d |q_d|
  // (M2): the weights and the per-token factors times the weight (4 doubles a token in all).
  std::vector<double> e, eg;  // e_i, fl(e_i g_i)
  double g_max = 0, max_abs_x = 0, max_qk = 0;
  std::int64_t n_under = 0;
  double s = 0, sg = 0, sq = 0, sx = 0;  // blocked sums of e, eg, eq, ex
  // Per element: blocked sums of fl(e v), fl(e |v|), then of fl(e tv), fl(eg tv), fl(eq tv),
  // fl(ex tv) with tv = fl(|v - y_hat|).
  std::vector<double> ny, na, y, nd, ng, nq, nx;
};

// The key pass (M1) for every row of the group, one tile of keys at a time.
PAGEDATTN_BOUND_CLONES void logits(const KvSource& kv, std::vector<Row>& rows) {
  const std::int64_t n = kv.n;
  const int D = kv.head_size;
  const double scale = kv.scale, scale_abs = std::fabs(kv.scale);
  std::vector<double> k(static_cast<std::size_t>(kTile) * D);
  std::vector<double> max_x0(rows.size(), 0), max_s(rows.size(), 0);
  for (Row& r : rows) {
    r.x.resize(static_cast<std::size_t>(n));
    r.qk.resize(static_cast<std::size_t>(n));
  }
  for (std::int64_t i0 = 0; i0 < n; i0 += kTile) {
    const std::int64_t i1 = std::min(n, i0 + kTile);
    kv.keys(i0, i1, k.data());
    for (std::size_t ri = 0; ri < rows.size(); ++ri) {
      Row& r = rows[ri];
      for (std::int64_t i = i0; i < i1; ++i) {
        const double* kr = k.data() + (i - i0) * D;
        // Lanes 0-3 and 4-7 as two 4-wide vectors (GCC's vector extension: each lane an
        // IEEE double operation, as the scalar code would do).
        V4 a_lo = {}, a_hi = {}, m_lo = {}, m_hi = {};
        int d = 0;
        for (; d + kLanes <= D; d += kLanes) {
          const V4 p_lo = load4(r.q + d) * load4(kr + d);
          const V4 p_hi = load4(r.q + d + 4) * load4(kr + d + 4);
          a_lo += p_lo;
          a_hi += p_hi;
          m_lo += abs4(p_lo);
          m_hi += abs4(p_hi);
        }
        double acc[kLanes], mag[kLanes];
        for (int l = 0; l < 4; ++l) {
          acc[l] = a_lo[l], acc[l + 4] = a_hi[l];
          mag[l] = m_lo[l], mag[l + 4] = m_hi[l];
        }
        for (; d < D; ++d) {
          const double p = r.q[d] * kr[d];
          acc[0] += p;
          mag[0] += std::fabs(p);
        }
        const double dot =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        const double m =
            ((mag[0] + mag[1]) + (mag[2] + mag[3])) + ((mag[4] + mag[5]) + (mag[6] + mag[7]));
        const double x0 = scale * dot;
        const double s = r.slope * static_cast<double>(kv.alibi_position0 + i);
        const double x = x0 + s;
        r.x[i] = x;
        r.qk[i] = scale_abs * m;
        max_x0[ri] = std::max(max_x0[ri], std::fabs(x0));
        max_s[ri] = std::max(max_s[ri], std::fabs(s));
        // A NaN or inf key element makes m non-finite (0 * inf is NaN), as does q's.
        r.finite &= std::isfinite(x) && std::isfinite(r.qk[i]);
      }
    }
  }
  const double h_q = 1 + (D / kLanes + D % kLanes) + 3;
  const Interval g = gamma(h_q);
  for (std::size_t ri = 0; ri < rows.size(); ++ri) {
    Row& r = rows[ri];
    double max_qk = 0, max_x = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      max_qk = std::max(max_qk, r.qk[i]);
      max_x = std::max(max_x, std::fabs(r.x[i]));
    }
    r.rho_q = (1 + Interval(kU)) / (1 - g);
    r.sigma_q = (kEta + Interval(scale_abs) * D * kEta) / (1 - g);
    const Interval q_max = r.rho_q * max_qk + r.sigma_q;
    r.delta_x = hi(g * q_max + Interval(scale_abs) * D * kEta +
                   Interval(kU) * (Interval(max_x0[ri]) + max_s[ri] + max_x) + 2 * kEta);
  }
}

// Blocked sum (M3) of f(i) over [0, n).
template <class F>
double blocked_sum(std::int64_t n, F&& f) {
  double total = 0;
  for (std::int64_t i0 = 0; i0 < n; i0 += kTile) {
    const std::int64_t i1 = std::min(n, i0 + kTile);
    double t = 0;
    for (std::int64_t i = i0; i < i1; ++i) t += f(i);
    total += t;
  }
  return total;
}

// (M2): the weights and the row's factor sums.
void weights(std::int64_t n, Row& r) {
  double c = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < n; ++i) c = std::max(c, r.x[i]);
  r.e.resize(static_cast<std::size_t>(n));
  r.eg.resize(r.e.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = c - r.x[i];  // >= 0; t_i = -g exactly
    const double ax = std::fabs(r.x[i]);
    r.g_max = std::max(r.g_max, g);
    r.max_abs_x = std::max(r.max_abs_x, ax);
    r.max_qk = std::max(r.max_qk, r.qk[i]);
    double e = 0;
    if (-g >= kExpMinArg) {
      e = exp_rn(-g);
    } else {
      ++r.n_under;
    }
    r.e[i] = e;
    r.eg[i] = e * g;
    r.qk[i] = e * r.qk[i];  // fl(e_i Q_hat_i) and fl(e_i |x_hat_i|) in place: Q_hat_i
    r.x[i] = e * ax;        // and x_hat_i are no longer needed
  }
  r.s = blocked_sum(n, [&](std::int64_t i) { return r.e[i]; });
  r.sg = blocked_sum(n, [&](std::int64_t i) { return r.eg[i]; });
  r.sq = blocked_sum(n, [&](std::int64_t i) { return r.qk[i]; });
  r.sx = blocked_sum(n, [&](std::int64_t i) { return r.x[i]; });
}

// The value passes (M3)-(M4): pass 0 sums fl(e v) and fl(e |v|); pass 1 the deviations.
PAGEDATTN_BOUND_CLONES void value_sums(const KvSource& kv, std::vector<Row>& rows, int pass,
                                       double* max_abs_v, bool* values_finite) {
  const std::int64_t n = kv.n;
  const int D = kv.head_size;
  std::vector<double> v(static_cast<std::size_t>(kTile) * D);
  std::vector<double> part(static_cast<std::size_t>(4) * D), vmax(D, 0.0);
  for (std::int64_t i0 = 0; i0 < n; i0 += kTile) {
    const std::int64_t i1 = std::min(n, i0 + kTile);
    kv.values(i0, i1, v.data());
    if (pass == 0) {
      for (std::int64_t i = i0; i < i1; ++i) {
        const double* __restrict vi = v.data() + (i - i0) * D;
        for (int d = 0; d < D; ++d) {
          const double a = std::fabs(vi[d]);
          vmax[d] = vmax[d] > a ? vmax[d] : a;  // a NaN is seen in the sums below
        }
      }
    }
    for (Row& r : rows) {
      if (!r.finite) continue;
      double* __restrict p0 = part.data();
      double* __restrict p1 = p0 + D;
      double* __restrict p2 = p1 + D;
      double* __restrict p3 = p2 + D;
      std::fill(part.begin(), part.end(), 0.0);
      if (pass == 0) {
        for (std::int64_t i = i0; i < i1; ++i) {
          const double* __restrict vi = v.data() + (i - i0) * D;
          const double e = r.e[i];
          for (int d = 0; d < D; ++d) {
            p0[d] += e * vi[d];
            p1[d] += e * std::fabs(vi[d]);
          }
        }
        for (int d = 0; d < D; ++d) {
          r.ny[d] += p0[d];
          r.na[d] += p1[d];
        }
      } else {
        const double* __restrict y = r.y.data();
        for (std::int64_t i = i0; i < i1; ++i) {
          const double* __restrict vi = v.data() + (i - i0) * D;
          const double e = r.e[i], eg = r.eg[i], eq = r.qk[i], ex = r.x[i];
          for (int d = 0; d < D; ++d) {
            const double tv = std::fabs(vi[d] - y[d]);
            p0[d] += e * tv;
            p1[d] += eg * tv;
            p2[d] += eq * tv;
            p3[d] += ex * tv;
          }
        }
        for (int d = 0; d < D; ++d) {
          r.nd[d] += p0[d];
          r.ng[d] += p1[d];
          r.nq[d] += p2[d];
          r.nx[d] += p3[d];
        }
      }
    }
  }
  if (pass != 0) return;
  for (int d = 0; d < D; ++d) *max_abs_v = std::max(*max_abs_v, vmax[d]);
  // A NaN or inf value makes its element's sum of e |v| non-finite (0 * inf is NaN too).
  for (const Row& r : rows)
    for (int d = 0; d < D && r.finite; ++d) *values_finite &= std::isfinite(r.na[d]);
}

// (M2)-(M5): the bounds of one row's fields from its sums. Every factor that does not
// depend on the element is evaluated once per row; each element's expressions are the
// same interval operations in the same order as written out in full, so hoisting changes
// no bit of the result (it halves the interval operations per element).
void finish(std::int64_t n, int D, double max_abs_v, const Row& r, RowMagnitudes* out,
            ElementMagnitudes* el) {
  const Interval u = kU, one_u = 1 + u, dx = r.delta_x;
  const Interval gh = gamma(static_cast<double>(kTile + (n + kTile - 1) / kTile));
  const Interval delta = dx + u * r.g_max;
  const Interval eps = kExpRelErr;
  const Interval k_hi = exp(delta) / (1 - eps), k_lo = exp(-delta) / (1 + eps);
  const Interval eta_e = exp(Interval(kExpMinArg) + delta);
  const Interval nn = static_cast<double>(n), n_u = static_cast<double>(r.n_under);
  const Interval sum_e_lo = Interval(r.s) / (1 + gh);  // sum_j e_j >= this
  const Interval s_lo = k_lo * sum_e_lo;               // S >= this
  // sum_i p_i a_i b_i from a blocked sum of one or two roundings per term (M2, M3):
  //   one:  ea = (sum / (1 - gh) + n eta) / (1 - u)
  //   two:  ea = (sum / (1 - gh) + n eta (1 + b_max)) / ((1 - u) (1 - u))
  //   then (k_hi ea + eta_E n_u (a_max b_max)) / s_lo.
  const Interval one_gh = 1 - gh, n_eta = nn * kEta, one_mu = 1 - u, one_mu2 = one_mu * one_mu;
  const Interval eta_nu = eta_e * n_u;
  struct Weighted {
    Interval numerator_add, denominator, under;  // n eta [(1 + b_max)], (1 - u)^k, eta_E n_u a b
  };
  auto weighted_for = [&](int roundings, double a_max, double b_max) {
    Weighted w;
    w.numerator_add = roundings == 1 ? n_eta : n_eta * (1 + Interval(b_max));
    w.denominator = roundings == 1 ? one_mu : one_mu2;
    w.under = eta_nu * (Interval(a_max) * b_max);
    return w;
  };
  auto ea_of = [&](double sum, const Weighted& w) {
    return (Interval(sum) / one_gh + w.numerator_add) / w.denominator;
  };
  auto weighted_ea = [&](const Interval& ea, const Weighted& w) {
    return (k_hi * ea + w.under) / s_lo;
  };
  auto weighted = [&](double sum, const Weighted& w) { return weighted_ea(ea_of(sum, w), w); };
  const Interval mq = r.rho_q * r.max_qk + r.sigma_q;  // max Q_i
  *out = RowMagnitudes{};
  out->n = n;
  out->spread = hi(Interval(r.g_max) * one_u + 2 * dx);
  out->max_abs_logit = hi(Interval(r.max_abs_x) + dx);
  out->max_qk = hi(mq);
  out->max_abs_v = max_abs_v;
  out->sum_abs_q = r.sum_abs_q;
  const Interval pg = weighted(r.sg, weighted_for(1, r.g_max, 1)),
                 pq = weighted(r.sq, weighted_for(1, r.max_qk, 1)),
                 px = weighted(r.sx, weighted_for(1, r.max_abs_x, 1));
  out->p_gap = hi(one_u * pg + 2 * dx);
  out->p_qk = hi(r.rho_q * pq + r.sigma_q);
  out->p_x = hi(px + dx);
  double max_y = 0;
  for (int d = 0; d < D; ++d) max_y = std::max(max_y, std::fabs(r.y[d]));
  const double tv_max = hi((Interval(max_abs_v) + max_y) * one_u);  // >= every fl(|v - y_hat|)
  const Interval k_ratio = k_hi / k_lo - 1;
  // The element-independent factors of the loop below.
  const Weighted w_a = weighted_for(1, max_abs_v, 1), w_pt = weighted_for(1, tv_max, 1),
                 w_ptg = weighted_for(2, r.g_max, tv_max),
                 w_ptq = weighted_for(2, r.max_qk, tv_max),
                 w_ptx = weighted_for(2, r.max_abs_x, tv_max);
  const Interval en_factor = gh * one_u + u, en_add = (1 + gh) * nn * kEta;
  const Interval dy_under = 2 * eta_e * n_u * max_abs_v / (k_lo * sum_e_lo);
  const Interval one_u2 = one_u * one_u, dx2 = 2 * dx, dx2_u = dx2 * one_u;
  const Interval u_rho = one_u * r.rho_q, u_sigma = one_u * r.sigma_q, u_dx = one_u * dx;
  for (int d = 0; d < D; ++d) {
    // ea for sum e |v| (one rounding) is both ba and the first step of weighted(na[d]).
    const Interval ba = ea_of(r.na[d], w_a);  // >= sum e |v|
    const Interval e_n = en_factor * ba + en_add;
    const Interval delta_y =
        k_ratio * ba / sum_e_lo + dy_under + (e_n + gh * ba) / r.s + u * std::fabs(r.y[d]) + kEta;
    const Interval a = weighted_ea(ba, w_a);
    const Interval pt = weighted(r.nd[d], w_pt);  // sum p tv
    const Interval ptg = weighted(r.ng[d], w_ptg);
    const Interval ptq = weighted(r.nq[d], w_ptq);
    const Interval ptx = weighted(r.nx[d], w_ptx);
    ElementMagnitudes& m = el[d];
    m.a = hi(a);
    m.abs_exact = hi(std::fabs(r.y[d]) + delta_y);
    m.dev = hi(one_u * pt + delta_y);
    m.dev_gap = hi(one_u2 * ptg + dx2_u * pt + delta_y * one_u * pg + dx2 * delta_y);
    m.dev_qk = hi(u_rho * ptq + u_sigma * pt + delta_y * r.rho_q * pq + delta_y * r.sigma_q);
    m.dev_x = hi(one_u * ptx + u_dx * pt + delta_y * px + delta_y * dx);
  }
}

// The rows of one group from their logits: weights, the two value passes, the bounds.
void from_logits(const KvSource& kv, std::vector<Row>& rows, RowMagnitudes* out,
                 ElementMagnitudes* el, bool* finite) {
  const std::int64_t n = kv.n;
  const int D = kv.head_size;
  for (Row& r : rows) {
    if (!r.finite) continue;
    weights(n, r);
    r.ny.assign(D, 0);
    r.na.assign(D, 0);
    r.nd.assign(D, 0);
    r.ng.assign(D, 0);
    r.nq.assign(D, 0);
    r.nx.assign(D, 0);
    r.y.assign(D, 0);
  }
  double max_abs_v = 0;
  bool values_finite = true;
  value_sums(kv, rows, 0, &max_abs_v, &values_finite);
  for (Row& r : rows) {
    r.finite &= values_finite;
    if (!r.finite) continue;
    for (int d = 0; d < D; ++d) r.y[d] = r.ny[d] / r.s;
  }
  value_sums(kv, rows, 1, &max_abs_v, &values_finite);
  for (std::size_t ri = 0; ri < rows.size(); ++ri) {
    const Row& r = rows[ri];
    if (finite) finite[ri] = r.finite;
    if (!r.finite) {
      out[ri] = RowMagnitudes{};
      out[ri].n = n;
      out[ri].spread = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    finish(n, D, max_abs_v, r, out + ri, el + ri * D);
  }
}

void empty_rows(int num_rows, int D, RowMagnitudes* out, ElementMagnitudes* el) {
  for (int r = 0; r < num_rows; ++r) {
    out[r] = RowMagnitudes{};
    for (int d = 0; d < D; ++d) el[r * D + d] = ElementMagnitudes{0, 0, 0, 0, 0, 0};
  }
}

}  // namespace

void exact_magnitudes(const KvSource& kv, const QueryRow* query_rows, int num_rows,
                      RowMagnitudes* out, ElementMagnitudes* el, bool* finite) {
  const int D = kv.head_size;
  std::vector<Row> rows(static_cast<std::size_t>(num_rows));
  for (int ri = 0; ri < num_rows; ++ri) {
    Row& r = rows[ri];
    r.q = query_rows[ri].q;
    r.slope = query_rows[ri].alibi_slope;
    // The kernels read q and the slope only when there is a token.
    double s = 0;
    for (int d = 0; d < D; ++d) {
      s += std::fabs(r.q[d]);
      r.finite &= kv.n == 0 || std::isfinite(r.q[d]);
    }
    r.finite &= kv.n == 0 || std::isfinite(r.slope);
    r.sum_abs_q = hi(Interval(s) / (1 - gamma(D)));  // D - 1 additions, no underflow error
    if (finite) finite[ri] = r.finite;
  }
  if (kv.n <= 0) {
    empty_rows(num_rows, D, out, el);
    for (int ri = 0; ri < num_rows; ++ri) {
      out[ri].sum_abs_q = rows[ri].sum_abs_q;
      if (!rows[ri].finite) out[ri].spread = std::numeric_limits<double>::quiet_NaN();
    }
    return;
  }
  logits(kv, rows);
  from_logits(kv, rows, out, el, finite);
}

}  // namespace pagedattn::bound
