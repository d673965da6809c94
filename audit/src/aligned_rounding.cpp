// The aligned_rounding distribution (pagedattn_audit/aligned_rounding.h).
#include "pagedattn_audit/aligned_rounding.h"

#include <algorithm>
#include <cmath>

#include "cache_steps.h"
#include "parallel_for.h"
#include "rng.h"

namespace pagedattn::audit {
namespace {

// This distribution's streams (inputs.cpp's tags stay below 100).
enum Tag : std::uint64_t { kLead = 101, kValueSign, kValueSize };

using testing::Dim;
using testing::KvHead;

// Half an ulp of a positive normal float.
double half_ulp(float s) {
  return std::ldexp(1.0, std::ilogb(s) - 24);
}

// The butterfly of group_sum on the lanes' sums (lane l adds lane l ^ offset's).
float butterfly(std::vector<float> s) {
  const int lanes = static_cast<int>(s.size());
  std::vector<float> t(s.size());
  for (int offset = lanes / 2; offset >= 1; offset /= 2) {
    for (int l = 0; l < lanes; ++l) t[l] = s[l] + s[l ^ offset];
    s.swap(t);
  }
  return s[0];
}

// One lane's chain as built: its float sum, the exact sum of its terms (exact in double:
// the terms' bits span under 53 places), and the key of its last element.
struct Chain {
  float sum = 0;
  double exact = 0;
  float last_k = 0;
};

}  // namespace

DotOrder dot_order(int warp_size, int block_size, int head_size, int scalar_bytes,
                   int cache_bytes) {
  // attention_phases.cuh: GROUP, X, VEC_WANT and VEC, as the kernel defines them.
  DotOrder o;
  o.lanes = warp_size / block_size > 1 ? warp_size / block_size : 1;
  const int x = 16 / cache_bytes;
  const int want = 16 / (o.lanes * scalar_bytes);
  const int vec = want < 1 ? 1 : (want > x ? x : want);
  o.dims.resize(o.lanes);
  for (int l = 0; l < o.lanes; ++l) {
    for (int c = l; c < head_size / vec; c += o.lanes) {
      for (int v = 0; v < vec; ++v) o.dims[l].push_back(c * vec + v);
    }
  }
  return o;
}

DotOrder dot_order(const testing::Case& c, int warp_size) {
  return dot_order(warp_size, c.block_size, c.head_size,
                   static_cast<int>(testing::traits(c.scalar).size),
                   static_cast<int>(testing::traits(c.cache_element()).size));
}

float kernel_dot(const DotOrder& order, const float* q, const float* k) {
  std::vector<float> s(order.lanes, 0.f);
  for (int l = 0; l < order.lanes; ++l) {
    for (int d : order.dims[l]) s[l] = std::fmaf(q[d], k[d], s[l]);
  }
  return butterfly(std::move(s));
}

void fill_aligned_rounding(testing::Case& c, int warp_size, std::uint64_t seed, int threads) {
  const DotOrder order = dot_order(c, warp_size);
  const int G = order.lanes, KVH = c.num_kv_heads, D = c.head_size;
  const int per_group = c.num_heads / KVH;
  const DType qt = c.scalar, ct = c.cache_element();
  // runner.cuh: ours multiplies the dot by scale (times k_scale for fp8) in float.
  const float qk_scale = static_cast<float>(c.scale * c.key_scale());
  // The lanes' sums are about 2^e and the logits about scale G 2^e, near 24. e in [0, 8]:
  // the small query elements 2^(e-24) stay exact in f16, a lead stays below e4m3's 448.
  const int e = std::clamp(static_cast<int>(std::lround(std::log2(24.0 / (c.scale * G)))), 0, 8);
  const double lane_size = std::ldexp(1.0, e);
  const double spread = std::min(0.5, 4.0 / (c.scale * G * lane_size));  // logits over ~4
  const float q_small = in_format(qt, std::ldexp(1.0, e - 24));

  std::vector<float> q(D, q_small);
  for (int l = 0; l < G; ++l) q[order.dims[l][0]] = 1.0f;
  for (int s = 0; s < c.num_seqs; ++s) {
    for (int h = 0; h < c.num_heads; ++h) {
      for (int d = 0; d < D; ++d) c.set_q(s, h, d, q[d]);
    }
  }

  parallel_for(static_cast<std::int64_t>(c.num_seqs) * KVH, threads, [&](std::int64_t row) {
    const int s = static_cast<int>(row / KVH), g = static_cast<int>(row % KVH);
    const std::int64_t L = c.seq_lens[s];
    const int h0 = g * per_group;
    const double slope = c.has_alibi() ? c.alibi_slopes[h0] : 0.0;
    std::vector<float> k(static_cast<std::size_t>(L) * D), v(k.size());
    std::vector<double> x(L);
    // Leads (the logits' size) and values.
    for (std::int64_t t = 0; t < L; ++t) {
      Rng lead(seed, kLead, row, t), sign(seed, kValueSign, row, t), size(seed, kValueSize, row, t);
      const double delta = spread * lead.unit();
      double dot = 0;
      for (int l = 0; l < G; ++l) {
        // A per-lane jitter of under 1/64 gives the lanes' sums different last bits.
        const int d0 = order.dims[l][0];
        k[t * D + d0] = in_format(ct, lane_size * (1 + delta + lead.unit() / 64));
        dot += k[t * D + d0];
      }
      x[t] = c.scale * dot + slope * static_cast<double>(t - L + 1);
      const float sgn = (sign.next() & 1) ? 1.0f : -1.0f;
      for (int d = 0; d < D; ++d) v[t * D + d] = in_format(ct, sgn * size.uniform(0.5f, 1.0f));
    }
    // The row's exact output (of the leads' logits: the other terms move them by ~1e-6)
    // and each token's direction: up where v_i > y in most elements (all, when |y| < 1/2).
    const double m = *std::max_element(x.begin(), x.end());
    std::vector<double> p(L), y(D, 0.0);
    double sum = 0;
    for (std::int64_t t = 0; t < L; ++t) sum += p[t] = std::exp(x[t] - m);
    for (std::int64_t t = 0; t < L; ++t) {
      for (int d = 0; d < D; ++d) y[d] += p[t] / sum * v[t * D + d];
    }
    std::vector<Chain> best(G), alt(G);
    std::vector<float> sums(G);
    for (std::int64_t t = 0; t < L; ++t) {
      int above = 0;
      for (int d = 0; d < D; ++d) above += v[t * D + d] > y[d];
      const double dir = 2 * above >= D ? 1.0 : -1.0;  // +1: round every partial sum up
      // Each lane: its lead, then per element the key next to half an ulp of the running
      // sum whose rounding goes furthest in `dir`; the last element also keeps the best
      // key giving another lane sum (the butterfly's parity).
      for (int l = 0; l < G; ++l) {
        const std::vector<int>& dims = order.dims[l];
        const int d0 = dims[0];
        Chain ch;
        ch.sum = std::fmaf(q[d0], k[t * D + d0], 0.0f);
        ch.exact = static_cast<double>(q[d0]) * k[t * D + d0];
        ch.last_k = k[t * D + d0];
        alt[l] = ch;
        for (std::size_t i = 1; i < dims.size(); ++i) {
          const int d = dims[i];
          const float kc = in_format(ct, half_ulp(ch.sum) / q_small);
          const float cands[3] = {nudge(kc, ct, false), kc, nudge(kc, ct, true)};
          Chain got[3];
          double score[3];
          for (int j = 0; j < 3; ++j) {
            const double term = static_cast<double>(q[d]) * cands[j];
            got[j] = {std::fmaf(q[d], cands[j], ch.sum), ch.exact + term, cands[j]};
            score[j] = cands[j] > 0 ? dir * (got[j].sum - (ch.sum + term)) : -INFINITY;
          }
          const int b = static_cast<int>(std::max_element(score, score + 3) - score);
          int a = -1;
          for (int j = 0; j < 3; ++j) {
            if (got[j].sum != got[b].sum && score[j] > -INFINITY && (a < 0 || score[j] > score[a]))
              a = j;
          }
          alt[l] = a >= 0 ? got[a] : got[b];
          ch = got[b];
          k[t * D + d] = ch.last_k;
        }
        best[l] = ch;
      }
      // The butterfly and the scale multiply: the choice of last keys that moves the
      // logit furthest in `dir`.
      unsigned pick = 0;
      double pick_score = -INFINITY;
      for (unsigned mask = 0; mask < (1u << G); ++mask) {
        double exact = 0;
        for (int l = 0; l < G; ++l) {
          const Chain& ch = (mask >> l) & 1 ? alt[l] : best[l];
          sums[l] = ch.sum;
          exact += ch.exact;
        }
        const float logit = butterfly(sums) * qk_scale;
        const double score = dir * (logit - static_cast<double>(qk_scale) * exact);
        if (score > pick_score) {
          pick_score = score;
          pick = mask;
        }
      }
      for (int l = 0; l < G; ++l) {
        if ((pick >> l) & 1) k[t * D + order.dims[l].back()] = alt[l].last_k;
      }
    }
    for (std::int64_t t = 0; t < L; ++t) {
      const testing::Physical at = c.where(s, t);
      for (int d = 0; d < D; ++d) {
        c.set_key(at.block, KvHead{g}, at.slot, Dim{d}, k[t * D + d] * c.key_scale());
        c.set_value(at.block, KvHead{g}, at.slot, Dim{d}, v[t * D + d] * c.value_scale());
      }
    }
  });
}

}  // namespace pagedattn::audit
