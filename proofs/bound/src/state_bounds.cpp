// Bounds on the kernels' intermediate states (state_bounds.h). Equation numbers are those
// of proofs/error_bound.md; the reduce's constants are fold_error's (proofs/coq/LseRound.v).
#include "pagedattn_bound/state_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace pagedattn::bound {
namespace {

constexpr double kU = 0x1p-24;        // fp32 unit roundoff
constexpr double kTiny = 0x1p-126;    // fp32 smallest normal
constexpr double kEta = 0x1p-150;     // half fp32's subnormal quantum
constexpr double kSafety = 1 + 1e-9;  // this file's own double evaluation

// (1 + u)^k - 1.
double pow1u(double k) {
  return std::expm1(k * std::log1p(kU));
}

// The geometry of section 2 that the per-partition part needs.
int lg2(int v) {
  int k = 0;
  while ((1 << k) < v) ++k;
  return k;
}

}  // namespace

FoldConstants fold_constants(std::int64_t live, double e_exp, double G) {
  FoldConstants c;
  if (live <= 0) return c;
  const double l1u = std::log1p(kU), l1a_exp = G * kU + std::log1p(e_exp) + l1u;
  c.alpha = std::expm1(l1a_exp);
  c.g = std::expm1(l1a_exp + static_cast<double>(live - 1) * l1u);
  c.b = std::expm1(l1a_exp + static_cast<double>(live) * l1u);
  // (1 + b)(1 + u) / (1 - g) - 1 = (b + u + b u + g) / (1 - g)
  c.result =
      c.g < 1 ? (c.b + kU + c.b * kU + c.g) / (1 - c.g) : std::numeric_limits<double>::infinity();
  return c;
}

// The reduce as reduce_kernel.cuh runs it: pass 1 takes the exact max M of the live states'
// m_p; pass 2 adds w_p = fl(s_p exp_hat(fl(m_p - M))) to the total and fmaf(w_p, o_p, acc) in
// partition order, skipping zero weights; the result is fl(acc / total), then rounded to the
// output dtype. Empty states weigh 0 and are skipped, so the fold over the live states alone
// is the same computation: fold_error is applied to that list (P = live).
//
// Underflow (the weight's product, every fma and the quotient), in the model of
// proofs/error_bound.md section 1 with gradual underflow (fl(z) = z(1 + d) + e, |e| <= 2^-150, d e
// = 0) and an exp flushed to zero below 2^-126 (|exp_hat - exp| <= e_exp exp + 2^-126). Coq's
// fold_error (LseRound.v, Fp.v's rnd with its underflow term, ee = 2^-126) proves the
// absolute terms ws = (1 + u)^(P-1) sum_p [(1 + u) s_p ee + 2^-150], wo = (1 + u)^P sum_p
// [(1 + u) s_p ee + 2^-150] |o_p| + P 2^-150 (1 + u)^P and the quotient's
// (1 + u)(wo + ws (asum / sig)(1 + b) / (1 - g)) / (sig (1 - g) - ws) + 2^-150; the
// allowance below is at least that (Z >= ws, Z max|o| + live 2^-150 (1 + u)^live >= wo,
// 1 + result >= (1 + b) / (1 - g)), derived the same way: the
// computed weight is w_p (1 + a_p) + z_p, |z_p| <= s_p 2^-126 (1 + u) + 2^-150, the fp32
// additions of the total are exact when they underflow, each fma adds at most 2^-150; the
// sums' later roundings multiply all of it by at most (1 + u)^live. So with
// Z = (1 + u)^live sum_p (s_p 2^-126 (1 + u) + 2^-150), the total moves by at most Z and the
// accumulator by Z max|o| + live 2^-150 (1 + u)^live, and the quotient (total >= sig (1 - g)
// - Z, |quotient| <= (asum / sig)(1 + result)) by
//   U = (Z max|o| + live 2^-150 (1 + u)^live + Z (asum / sig)(1 + result)) / (sig (1 - g) - Z)
// times (1 + u) for its rounding, plus 2^-150 if the quotient itself underflows.
//
// The exact fold is evaluated in long double: each w_p within a few 2^-64 relative, each sum
// within live 2^-64 of its magnitudes, so the exact value as a double is within
// (live + 8) 2^-52 asum / sig of the real one; that margin is added to the bound.
//
// The final rounding (section 8): |fl_s(r) - r| <= u_s |r| + eta_s, |r| <= |exact| + E.
ReduceBounds reduce_bounds(Format out, const ExpAccuracy& exp, const StateRow& row) {
  if (!(out == Format::f32 || out == Format::f16 || out == Format::bf16))
    throw std::invalid_argument("reduce_bounds: out must be f32, f16 or bf16");
  const int P = row.parts, D = row.head_size;
  ReduceBounds r;
  r.exact.assign(static_cast<std::size_t>(D), 0.0);
  r.bound.assign(static_cast<std::size_t>(D), 0.0);
  r.underflow.assign(static_cast<std::size_t>(D), 0.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  long double M = -INFINITY;
  std::int64_t live = 0;
  bool poisoned = false;
  for (int p = 0; p < P; ++p) {
    if (row.s[p] == 0) continue;
    ++live;
    if (!std::isfinite(row.s[p]) || !std::isfinite(row.m[p]) || row.s[p] < 0) poisoned = true;
    M = std::max(M, static_cast<long double>(row.m[p]));
  }
  if (live == 0) return r;
  if (poisoned) {
    std::fill(r.exact.begin(), r.exact.end(), nan);
    std::fill(r.bound.begin(), r.bound.end(), nan);
    std::fill(r.underflow.begin(), r.underflow.end(), nan);
    return r;
  }
  std::vector<long double> w(static_cast<std::size_t>(P), 0.0L);
  long double sig = 0;
  double G = 0, s_sum = 0;
  for (int p = 0; p < P; ++p) {
    if (row.s[p] == 0) continue;
    G = std::max(G, static_cast<double>(M - row.m[p]));
    w[p] = row.s[p] * std::exp(static_cast<long double>(row.m[p]) - M);
    sig += w[p];
    s_sum += row.s[p];
  }
  // The exp sees fl(m_p - M), |fl(m_p - M)| <= G (1 + u): bound.h's ulp model there.
  const double e_exp = 2 * kU * (exp.a_ulp + exp.b_ulp * G * (1 + kU));
  r.fold = fold_constants(live, e_exp, G);
  const double inf = std::numeric_limits<double>::infinity();
  const double us = out == Format::f32 ? 0 : unit_roundoff(out);
  const double eta_s = out == Format::f32 ? 0 : subnormal_half_quantum(out);
  const double grow_live = 1 + pow1u(static_cast<double>(live));
  const double Z = grow_live * (s_sum * kTiny * (1 + kU) + static_cast<double>(live) * kEta);
  const double den = static_cast<double>(sig) * (1 - r.fold.g) - Z;
  for (int d = 0; d < D; ++d) {
    long double acc = 0, asum = 0;
    double max_o = 0;
    bool bad = false;
    for (int p = 0; p < P; ++p) {
      if (row.s[p] == 0) continue;
      const double o = row.o[static_cast<std::size_t>(p) * D + d];
      if (!std::isfinite(o)) bad = true;
      acc += w[p] * o;
      asum += w[p] * std::fabs(o);
      max_o = std::max(max_o, std::fabs(o));
    }
    if (bad) {
      r.exact[d] = r.bound[d] = r.underflow[d] = nan;
      continue;
    }
    const double exact = static_cast<double>(acc / sig);
    const double ratio = static_cast<double>(asum / sig);  // asum / sig = sum_p q_p |o_p|
    r.exact[d] = exact;
    if (!(r.fold.g < 1) || !(den > 0)) {
      r.bound[d] = inf;
      continue;
    }
    const double fold = r.fold.result * ratio;
    const double under = (Z * max_o + static_cast<double>(live) * kEta * grow_live +
                          Z * ratio * (1 + r.fold.result)) /
                             den * (1 + kU) +
                         kEta;
    r.underflow[d] = under;
    const double eval = static_cast<double>(live + 8) * 0x1p-52 * ratio;
    const double e32 = (fold + under + eval) * kSafety;
    r.bound[d] = e32 + (us * (std::fabs(exact) + e32) + eta_s) * kSafety;
  }
  return r;
}

// Section 3 and the exp-sum of sections 4-5, for the partition's own tokens (n = part.n):
//  - (3.3) every computed logit is within Xi_max of the exact one, and fmaxf is exact, so
//    the computed max is within Xi_max of the exact max m;
//  - each term e_hat_i = exp_hat(fl(x_hat_i - m_hat)): with t_i = m_hat - x_hat_i <= (m - x_i)
//    + 2 Xi_max, the argument's error (the logits' and the max's, and the subtraction's
//    u t_i, (4.2)) is at most Phi_i = 2 Xi_max + u t_i (the max's error does NOT cancel here,
//    unlike (4.4): s is not normalized), the exp's mu_i <= alpha + beta (1 + u) t_i (4.3);
//    so e_hat_i = e_i (1 + tau_i) + z_i with |tau_i| <= K (Phi_i + mu_i) (4.5) and
//    |z_i| <= 2^-126 (an exp flushed or subnormal);
//  - the exp-sum tree of height h_s (5.1): s_hat = sum_i e_hat_i (1 + theta_i), |theta_i| <=
//    gamma = (1 + u)^h_s - 1 (additions that underflow are exact).
// Hence |s_hat - s| <= s [(1 + gamma) K sum_i pi_i (Phi_i + mu_i) + gamma] + (1 + gamma) n 2^-126,
// pi_i = e_i / s the partition's softmax, and sum_i pi_i (m - x_i) = part.p_gap.
PartitionStateBound partition_state_bound(const KernelConfig& c, const RowMagnitudes& part) {
  PartitionStateBound b;
  if (part.n <= 0) return b;
  const double u = kU;
  const bool fp8 = c.cache == Format::fp8_e4m3 || c.cache == Format::fp8_e5m2;
  const bool round_p = c.choices.round_probabilities;
  const double us = unit_roundoff(c.scalar), eta_s = subnormal_half_quantum(c.scalar);
  const int W = c.warp_size, T = c.threads_per_block, NW = T / W;
  const int group = std::max(W / c.block_size, 1);
  // (3.1)-(3.3), as kernel_error_bound evaluates them.
  const double k_dot = c.head_size / group + lg2(group) + 1 + (fp8 ? 1 : 0);
  const double g_dot = (1 + pow1u(k_dot)) * (fp8 && round_p ? 1 + us : 1) - 1;
  const double eta_q =
      (fp8 && round_p ? std::fabs(c.scale) * part.sum_abs_q * eta_s * (1 + us) : 0) +
      (c.head_size + 1) * kTiny;
  const double xi = g_dot * (1 + u) * part.max_qk + u * part.max_abs_logit + eta_q;
  b.max_logit = xi * kSafety;
  // The exp-sum.
  const double alpha = 2 * u * c.exp.a_ulp, beta = 2 * u * c.exp.b_ulp;
  const double t_max = part.spread + 2 * xi;
  const double phi_max = 2 * xi + u * t_max, mu_max = alpha + beta * (1 + u) * t_max;
  const double K = std::exp(phi_max) * (1 + mu_max);
  const double mean = 2 * xi + (u + beta * (1 + u)) * (part.p_gap + 2 * xi) + alpha;
  const std::int64_t L = part.n;
  const double h_s = static_cast<double>((L + T - 1) / T) + lg2(W) + (NW - 1);
  const double gamma = pow1u(h_s);
  b.exp_sum_rel = ((1 + gamma) * K * mean + gamma) * kSafety;
  b.exp_sum_abs = (1 + gamma) * static_cast<double>(L) * kTiny * kSafety;
  return b;
}

}  // namespace pagedattn::bound
