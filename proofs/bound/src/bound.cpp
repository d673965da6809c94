// Theorem kernel_error_bound in code. Every quantity below has the name and the equation
// number it has in proofs/error_bound.md; comments cite the section.
#include "pagedattn_bound/bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace pagedattn::bound {
namespace {

constexpr double kU = 0x1p-24;         // fp32 unit roundoff
constexpr double kTiny = 0x1p-126;     // fp32 smallest normal: any underflow loses less
constexpr double kEps = 1.0000001e-6;  // vLLM's 1e-6f (9.99999997e-7) rounded up
constexpr double kSafety = 1 + 1e-9;   // double evaluation of this formula (section 9)

// (1 + u)^k - 1, the exact product bound that gamma_k = k u / (1 - k u) majorizes.
double grow(double u, double k) {
  return std::expm1(k * std::log1p(u));
}

int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

int log2_exact(int v) {
  int k = 0;
  while ((1 << k) < v) ++k;
  return k;
}

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

Bound kernel_error_bound(const KernelConfig& c, const RowMagnitudes& row,
                         const ElementMagnitudes& el) {
  check(c);
  Bound b;
  if (row.n <= 0) return b;  // the kernels write an exact 0
  const double inf = std::numeric_limits<double>::infinity();
  const double u = kU;
  const double us = unit_roundoff(c.scalar);
  const double eta_s = subnormal_half_quantum(c.scalar);
  const bool fp8 = is_fp8(c.cache);
  const bool eps = c.choices.epsilon_denominator;
  const bool round_p = c.choices.round_probabilities;

  // Section 2: the launch geometry that fixes every summation order.
  const std::int64_t n = row.n;
  const int P = c.partition_size ? ceil_div(n, c.partition_size) : 1;
  const bool v2 = P > 1;  // one V2 partition is copied by the reduce: V1's numerics
  const std::int64_t L = c.partition_size ? std::min<std::int64_t>(n, c.partition_size) : n;
  const int W = c.warp_size, T = c.threads_per_block, NW = T / W, B = c.block_size;
  const int group = std::max(W / B, 1);
  const int v_tokens = std::min(B, 8);
  const int lanes_per_row = B / v_tokens;

  // Section 3, (3.1): roundings a product q_d k_d goes through in its logit.
  const double k_dot = c.head_size / group + log2_exact(group) + 1 /* * qk_scale */ +
                       (fp8 && !round_p ? 1 : 0) /* qk_scale = fl(scale k_scale) */ +
                       (fp8 && round_p ? 1 : 0) /* fl(k k_scale) */;
  const double g_dot = (1 + grow(u, k_dot)) * (fp8 && round_p ? 1 + us : 1) - 1;
  // (3.2): absolute terms of a logit: vLLM's fp8 key rounding below f16's normal range,
  // and fp32 underflow of the products (each at most 2^-126, head_size + 1 of them).
  const double eta_q =
      (fp8 && round_p ? std::fabs(c.scale) * row.sum_abs_q * eta_s * (1 + us) : 0) +
      (c.head_size + 1) * kTiny;
  // (3.3): Xi_i <= g_dot (1+u) Q_i + u |x_i| + eta_q (the ALiBi fma is the u |x_i|).
  const double xi_max = g_dot * (1 + u) * row.max_qk + u * row.max_abs_logit + eta_q;

  // Section 4: weights. t_i = M_hat - x_hat_i <= (x_max - x_i) + 2 Xi_max (4.1).
  const double t_max = row.spread + 2 * xi_max;
  const double alpha = 2 * u * c.exp.a_ulp, beta = 2 * u * c.exp.b_ulp;
  // (4.3) mu_i <= m0 + m1 t_i: one exp (V1), or two exps and the weight's product (V2).
  double m0, m1;
  const double e_max = alpha + beta * t_max * (1 + u);
  if (!v2) {
    m0 = alpha;
    m1 = beta * (1 + u);
  } else {
    m0 = 2 * alpha * (1 + e_max) * (1 + u) + u;
    m1 = beta * (1 + u) * (1 + e_max) * (1 + u);
  }
  const double mu_max = m0 + m1 * t_max;
  const double phi_max = xi_max + u * t_max * (1 + u);
  const double K = std::exp(phi_max) * (1 + mu_max);  // (4.5)
  // (4.6): Phi_i + mu_i <= c_qk Q_i + u |x_i| + c_gap (x_max - x_i) + c_0.
  const double c_qk = g_dot * (1 + u);
  const double c_gap = u * (1 + u) + m1;
  const double c_0 = eta_q + c_gap * 2 * xi_max + m0;
  const double SA = K * (c_qk * el.dev_qk + u * el.dev_x + c_gap * el.dev_gap + c_0 * el.dev);
  const double ST = K * (c_qk * row.p_qk + u * row.p_x + c_gap * row.p_gap + c_0);
  if (!(ST < 1)) {
    b.fp32 = b.total = b.softmax = b.final_rounding = inf;
    return b;
  }
  const double A = el.a;
  const double Y = el.abs_exact >= 0 ? std::min(el.abs_exact, A) : A;
  // Lemma 4.7: sum q_i v_i - y = sum_i p_i tau_i (v_i - y) / R, R >= 1 - ST, so
  // |sum q_i v_i - y| <= SA / (1 - ST); and sum q_i |v_i| <= A (1 + T_max) / (1 - ST).
  const double softmax = SA / (1 - ST);
  const double T_max = K * (phi_max + mu_max);
  const double Aq = A * (1 + T_max) / (1 - ST);
  const double Yq = Y + softmax;

  // Section 5: the sums. Heights of the fixed trees (5.1), (5.2).
  const double h_s = ceil_div(L, T) + log2_exact(W) + (NW - 1);
  const double h_o = v_tokens * ceil_div(ceil_div(L, B), NW) + log2_exact(lanes_per_row) + (NW - 1);
  // Smallest denominator an epsilon is added to (section 7): the max token's exp(0) >= 1 - alpha
  // (twice in V2: e_i and the weight), through at most h_s + P + 1 roundings.
  const double s_min = (1 - alpha) * (1 - alpha) * (1 - grow(u, h_s + P + 1));
  const double eps_rel = eps ? kEps / s_min : 0;
  // Per-token factors of the numerator (5.3).
  double token_n = 1 + grow(u, h_o);
  if (round_p) token_n *= (1 + u) * (1 + us);         // p_i = fl_s(fl(e_i * inv))
  if (fp8 && round_p) token_n *= (1 + u) * (1 + us);  // v = fl_s(fl(v_raw * v_scale))
  // Per-partition factors (5.4): the normalization of o_p and fp8's v_scale.
  double part_n;
  if (round_p)
    part_n = (1 + grow(u, eps ? 2 : 1)) * (1 + eps_rel);  // inv = fl(1 / fl(s + eps))
  else
    part_n = eps ? (1 + grow(u, 3)) * (1 + eps_rel) : 1 + u;  // o * inv, or o / s
  if (fp8 && !round_p) part_n *= 1 + u;                       // o * v_scale
  double aN, aD, tail;
  if (!v2) {
    aN = token_n - 1;
    aD = grow(u, h_s);
    tail = part_n - 1;
  } else {
    const double partial = c.choices.partials_in_output_dtype ? 1 + us : 1;
    aN = token_n * part_n * (1 + grow(u, P)) * partial - 1;
    aD = grow(u, h_s + P - 1);
    tail = eps ? (1 + grow(u, 3)) * (1 + eps_rel) - 1 : u;
  }
  if (!(aD < 1)) {
    b.fp32 = b.total = b.sums = b.final_rounding = inf;
    return b;
  }
  // Lemma 5.5: |N/D - sum q_i v_i| <= (aN Aq + aD Yq) / (1 - aD).
  const double sums = (aN * Aq + aD * Yq) / (1 - aD);
  const double tail_err = tail * (Yq + sums);

  // Section 6: absolute terms, each carried through the normalization by F.
  const double F = (1 + tail) * (1 + aN) / (1 - aD);
  double abs_terms = 0;
  if (round_p) abs_terms += eta_s * static_cast<double>(L) * row.max_abs_v;  // p_i subnormal
  if (fp8 && round_p) abs_terms += eta_s * (1 + us) * (1 + us) * (1 + u);    // v subnormal
  if (v2 && c.choices.partials_in_output_dtype) abs_terms += eta_s;          // o_p subnormal
  // Underflow anywhere in fp32 (exp flushed to zero, weights, fma near 0): (6.2).
  abs_terms += kTiny * (8.0 * static_cast<double>(n + P) + 64) * (row.max_abs_v + 1);
  abs_terms *= F;

  b.softmax = softmax;
  b.sums = sums;
  b.tail = tail_err;
  b.absolute = abs_terms;
  b.fp32 = (softmax + sums + tail_err + abs_terms) * kSafety;
  // Section 8: the final rounding to the output dtype, |fl_s(o) - o| <= us |o| + eta_s.
  b.final_rounding = c.scalar == Format::f32 ? 0 : (us * (Y + b.fp32) + eta_s) * kSafety;
  b.total = b.fp32 + b.final_rounding;
  return b;
}

}  // namespace pagedattn::bound
