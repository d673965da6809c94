// The fast path: double arithmetic with error-free transformations (TwoSum) and a rigorous
// running error bound for every quantity. u = 2^-53 (binary64, round to nearest).
//
// 1. Products. q*k: q has <= 24 significant bits (f32) and k <= 28 (fp8 byte: <= 4 bits, times a
//    float scale: 24), magnitudes within [2^-330, 2^300]: every product is exact in double.
// 2. Dot. The products are summed with TwoSum in 8 lanes, lanes combined with TwoSum; the
//    rounding errors e_k (|e_k| <= u |s_k|, s_k the rounded partial sums, |s_k| <= (1+gamma_K) A,
//    A = sum |q_d k_d|) are summed in double. With K <= head_size + 8 TwoSums,
//    sum |e_k| <= K u (1+gamma_K) A and summing them costs gamma_K of that, so the double-double
//    (H, Lo) misses the dot by <= 2 K^2 u^2 A; res = fl(H + Lo) adds u |res| (then |res - dot|
//    <= u|res| + 2K^2u^2 A =: e_dot).
// 3. Logit. t1 = fl(scale * res), t2 = fl(slope * (i - L + 1)), x = fl(t1 + t2), d = fl(x - c)
//    (c = max computed logit, any shift is exact for softmax):
//    Delta_i = |scale| e_dot + u (|t1| + |t2| + |x| + |d|) >= |d - (x_exact - c)|.
// 4. Weight. w = exp(d) from libm; we assume <= 2 ulp error (glibc documents < 1 ulp for exp on
//    x86_64; the factor 2 covers other libms; tests check the host's exp against MPFR): for
//    normal results w = e^d (1 + eta), |eta| <= 4u (1 ulp <= 2u |result|). Then with
//    W = exp(x_exact - c): |w - W| <= rho w, rho = (Delta (1 + Delta) + 4u) / (1 - 4u), valid for
//    Delta <= 1 (e^t - 1 <= t + t^2 on [0, 1]). d < -700 gives w = 0 with W < e^-699 < 2^-1008.
// 5. Sums. S and N_d = sum fl(w v_d) are TwoSum-accumulated (K = L): same argument as 2,
//    |S_hat - sum w| <= u S_hat + 2 L^2 u^2 S_hat; products add u T_d, T_d = sum w |v_d|:
//    E_S = u S_hat + (2L^2u^2 + rho) S_hat + Z 2^-1008
//    E_N = u |N_hat| + (2L^2u^2 + u + rho) T_d + (Z + L) 2^-860  (product underflow, and zeroed
//          tokens' W |v| < 2^-1008 2^145)
// 6. Output. y_hat = fl(N_hat / S_hat):
//    |y_hat - y| <= u |y_hat| + (E_N + Y E_S) / S_hat, Y = (|N_hat| + E_N) / (S_hat - E_S)
//    (see mp_path.cpp for the two-line derivation), plus 2^-1070 for a subnormal quotient.
// Every bound is itself evaluated in double: sums of <= 2^31 + 20 nonnegative terms and a few
// products, whose computed value is at least (1 - gamma_{2^31+20}) > 1 - 2^-21 times the exact
// expression; multiplying by kSlack = 1 + 2^-20 therefore makes it an upper bound.
#include <algorithm>
#include <cmath>
#include <limits>

#include "paths.h"

namespace pagedattn::ref::detail {
namespace {

constexpr double u = 0x1p-53;
constexpr double kSlack = 1 + 0x1p-20;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kLanes = 8;

struct Dot {
  double res, abs_sum;
};

// Dot product of exact products, double-double accumulated (step 2 above).
Dot dot2(const double* __restrict q, const double* __restrict k, int n) {
  double hi[kLanes] = {}, lo[kLanes] = {}, a[kLanes] = {};
  for (int d = 0; d < n; d += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      double p = q[d + l] * k[d + l];
      double s = hi[l] + p, bb = s - hi[l];
      lo[l] += (hi[l] - (s - bb)) + (p - bb);
      hi[l] = s;
      a[l] += std::fabs(p);
    }
  double H = hi[0], Lo = lo[0], A = a[0];
  for (int l = 1; l < kLanes; ++l) {
    double s = H + hi[l], bb = s - H;
    Lo += ((H - (s - bb)) + (hi[l] - bb)) + lo[l];
    H = s;
    A += a[l];
  }
  return {H + Lo, A};
}

// acc += w * v with TwoSum, and T += |w v| (step 5).
void axpy2(double w, const double* __restrict v, double* __restrict hi, double* __restrict lo,
           double* __restrict T, int n) {
  for (int d = 0; d < n; ++d) {
    double p = w * v[d];
    double s = hi[d] + p, bb = s - hi[d];
    lo[d] += (hi[d] - (s - bb)) + (p - bb);
    hi[d] = s;
    T[d] += std::fabs(p);
  }
}

}  // namespace

FastGroup fast_group(const View& v, int s, int g) {
  const int hs = v.p.head_size, G = v.group, L = v.seq_len(s);
  FastGroup r;
  r.y.assign(size_t(G) * hs, 0.0);
  r.err.assign(size_t(G) * hs, 0.0);
  r.nan.assign(G, 0);
  if (L == 0) return r;  // out = +0 by definition, exactly

  std::vector<double> q(size_t(G) * hs), k(hs), xs(size_t(G) * L), base(size_t(G) * L);
  for (int j = 0; j < G; ++j) v.query(s, g * G + j, &q[size_t(j) * hs]);
  const double sc = v.p.scale, K = hs + kLanes, cdot = 2 * K * K * u * u;
  for (int i = 0; i < L; ++i) {
    v.key(s, g, i, k.data());
    for (int j = 0; j < G; ++j) {
      Dot dt = dot2(&q[size_t(j) * hs], k.data(), hs);
      double edot = u * std::fabs(dt.res) + cdot * dt.abs_sum;
      double t1 = sc * dt.res, t2 = v.slope(g * G + j) * double(i - L + 1), x = t1 + t2;
      xs[size_t(j) * L + i] = x;
      base[size_t(j) * L + i] =
          std::fabs(sc) * edot + u * (std::fabs(t1) + std::fabs(t2) + std::fabs(x));
    }
  }

  // Weights per head (step 4) and their sum.
  std::vector<double> w(size_t(G) * L), rho(G, 0.0), S(G), ES(G);
  std::vector<long> Z(G, 0);
  const double c2 = 2.0 * double(L) * double(L) * u * u;
  for (int j = 0; j < G; ++j) {
    const double* x = &xs[size_t(j) * L];
    double c = -kInf;
    bool fin = true;
    for (int i = 0; i < L; ++i) {
      fin = fin && std::isfinite(x[i]);
      c = std::max(c, x[i]);
    }
    if (!fin) {
      r.nan[j] = 1;
      continue;
    }
    double shi = 0, slo = 0, dmax = 0;
    for (int i = 0; i < L; ++i) {
      double d = x[i] - c;
      dmax = std::max(dmax, kSlack * (base[size_t(j) * L + i] + u * std::fabs(d)));
      double wi = 0;
      if (d < -700)
        ++Z[j];
      else
        wi = std::exp(d);
      w[size_t(j) * L + i] = wi;
      double t = shi + wi, bb = t - shi;
      slo += (shi - (t - bb)) + (wi - bb);
      shi = t;
    }
    rho[j] = dmax <= 1 ? (dmax * (1 + dmax) + 4 * u) / (1 - 4 * u) : kInf;
    S[j] = shi + slo;
    ES[j] = kSlack * (u * S[j] + (c2 + rho[j]) * S[j]) + double(Z[j]) * 0x1p-1008;
  }

  // Softmax-weighted sums (step 5): one decoded V row serves every head of the group.
  std::vector<double> hi(size_t(G) * hs, 0.0), lo(size_t(G) * hs, 0.0), T(size_t(G) * hs, 0.0);
  std::vector<double> vr(hs);
  for (int i = 0; i < L; ++i) {
    v.value(s, g, i, vr.data());
    for (int j = 0; j < G; ++j)
      if (!r.nan[j])
        axpy2(w[size_t(j) * L + i], vr.data(), &hi[size_t(j) * hs], &lo[size_t(j) * hs],
              &T[size_t(j) * hs], hs);
  }

  // Output and its bound (step 6). A non-finite N means a non-finite v was read (no overflow is
  // possible: |N| <= L 2^145).
  for (int j = 0; j < G; ++j) {
    if (r.nan[j]) continue;
    for (int d = 0; d < hs; ++d)
      if (!std::isfinite(hi[size_t(j) * hs + d])) r.nan[j] = 1;
    if (r.nan[j]) continue;
    for (int d = 0; d < hs; ++d) {
      size_t o = size_t(j) * hs + d;
      double N = hi[o] + lo[o];
      double EN =
          kSlack * (u * std::fabs(N) + (c2 + u + rho[j]) * T[o]) + double(Z[j] + L) * 0x1p-860;
      double y = N / S[j];
      double den = S[j] - ES[j];
      double e = kInf;
      if (den > 0 && std::isfinite(rho[j])) {
        double Y = (std::fabs(N) + EN) / den;
        e = kSlack * (u * std::fabs(y) + (EN + Y * ES[j]) / S[j]) + 0x1p-1070;
      }
      r.y[o] = y;
      r.err[o] = e;
    }
  }
  return r;
}

}  // namespace pagedattn::ref::detail
