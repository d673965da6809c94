// The absolute error bound the audit tests hold "ours" numerics to, derived from the
// kernels' arithmetic (the derivation is kernels/tests/reference.cpp's error_bounds, for
// the same algorithm), computed from a case's inputs. Per (seq, head) row, with V = max|v|,
// A = max_i scale sum_d |q_d k_id|, |x|max and R (max - min) over the exact logits, n
// tokens per partition and P partitions, u = 2^-24:
//   logits:    dx = (D + 1) u A + 3 u |x|max; the output moves by 2 dx V;
//   exp:       (2 + 1.173 R) ulps (CUDA's __expf; an ulp <= 2u relative) plus u R for the
//              rounded argument, in numerator and denominator: 2 (4 + 3.35 R) u V;
//   partition: its two sums and the division: (2 n + 2) u V;
//   V2 reduce: 2 (P u + (4 + 3.35 R) u) V for the weights, (2 P + 1) u V for its sums and
//              division, u V for tmp_out;
// times 1.25 for the second-order terms (all below 1e-2 of the first-order sum here).
// Then the rounding to the output format: half an ulp at the fp32 result, conservatively
// at |exact| + E. The exp models the audit sweeps (up to 2 ulps) lie within CUDA's bound.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "pagedattn_audit/inputs.h"
#include "pagedattn_audit/metrics.h"

namespace pagedattn::audit::derived {

// The fp32 error bound E (before the output rounding), the largest over the case's rows,
// and the largest |v| read (every exact output lies within it). partition_size 0: V1.
struct CaseBound {
  double fp32 = 0;
  double max_v = 0;
};

inline CaseBound derived_bound(const Inputs& in, int partition_size) {
  const double u = std::ldexp(1.0, -24);
  const int D = in.head_size, B = in.block_size, H = in.num_heads;
  const int group = H / in.num_kv_heads;
  CaseBound cb;
  for (int s = 0; s < in.num_seqs; ++s) {
    const std::int64_t L = in.seq_lens[s];
    if (L == 0) continue;
    for (int h = 0; h < H; ++h) {
      const int g = h / group;
      const float slope = in.alibi_slopes.empty() ? 0.f : in.alibi_slopes[h];
      double V = 0, A = 0, xmax = 0, lo = INFINITY, hi = -INFINITY;
      for (std::int64_t t = 0; t < L; ++t) {
        const std::int64_t blk = in.block_tables[s * in.max_blocks_per_seq + t / B];
        double dot = 0, dot_abs = 0;
        for (int d = 0; d < D; ++d) {
          const double q = element(in, in.query, in.dtype, (std::int64_t(s) * H + h) * D + d);
          const double k = element(in, in.key_cache, in.cache_elem(),
                                   key_offset(in, blk, g, d, static_cast<int>(t % B))) *
                           (in.cache == CacheFormat::same ? 1.0 : in.k_scale);
          const double v = element(in, in.value_cache, in.cache_elem(),
                                   value_offset(in, blk, g, d, static_cast<int>(t % B))) *
                           (in.cache == CacheFormat::same ? 1.0 : in.v_scale);
          dot += q * k;
          dot_abs += std::fabs(q * k);
          V = std::max(V, std::fabs(v));
        }
        const double x = in.scale * dot + double(slope) * double(t - L + 1);
        A = std::max(A, in.scale * dot_abs);
        xmax = std::max(xmax, std::fabs(x));
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
      const double R = hi - lo;
      const double n = partition_size ? std::min<double>(L, partition_size) : double(L);
      const double P = partition_size ? std::ceil(double(L) / partition_size) : 0;
      const double dx = (D + 1) * u * A + 3 * u * xmax;
      double rel = 2 * dx + 2 * (4 + 3.35 * R) * u + (2 * n + 2) * u;
      if (partition_size) rel += 2 * (P * u + (4 + 3.35 * R) * u) + (2 * P + 1) * u + u;
      cb.fp32 = std::max(cb.fp32, 1.25 * rel * V);
      cb.max_v = std::max(cb.max_v, V);
    }
  }
  return cb;
}

// The bound on one output element whose exact value is `exact`, in format `out`.
inline double element_bound(const CaseBound& cb, DType out, double exact) {
  return cb.fp32 + 0.5 * ulp_of(out, std::fabs(exact) + cb.fp32);
}

}  // namespace pagedattn::audit::derived
