// Exact magnitudes of the audit's inputs for kernel_error_bound, and the per-element bounds.
#include "case_bound.h"

#include <cmath>
#include <limits>

namespace pagedattn::audit {
namespace {

DType cache_elem_format(const Inputs& in) {
  return in.cache == CacheFormat::fp8_e4m3   ? DType::fp8_e4m3
         : in.cache == CacheFormat::fp8_e5m2 ? DType::fp8_e5m2
                                             : in.dtype;
}

bound::Format to_format(DType t) {
  switch (t) {
    case DType::f32:
      return bound::Format::f32;
    case DType::bf16:
      return bound::Format::bf16;
    case DType::fp8_e4m3:
      return bound::Format::fp8_e4m3;
    case DType::fp8_e5m2:
      return bound::Format::fp8_e5m2;
    default:
      return bound::Format::f16;
  }
}

}  // namespace

BoundInputs bound_inputs(const Inputs& in) {
  const int S = in.num_seqs, H = in.num_heads, D = in.head_size, B = in.block_size;
  const bool fp8 = in.cache != CacheFormat::same;
  const DType ce = cache_elem_format(in);
  const double ks = fp8 ? in.k_scale : 1.0, vs = fp8 ? in.v_scale : 1.0;
  BoundInputs bi;
  bi.rows.resize(static_cast<std::size_t>(S) * H);
  bi.elements.resize(static_cast<std::size_t>(S) * H * D);
  std::vector<double> q(D), logits, qk;
  for (int s = 0; s < S; ++s) {
    const std::int64_t n = in.seq_lens[s];
    const std::int32_t* table = in.block_tables.data() + std::int64_t{s} * in.max_blocks_per_seq;
    for (int h = 0; h < H; ++h) {
      const int kvh = h / (H / in.num_kv_heads);
      const std::size_t r = static_cast<std::size_t>(s) * H + h;
      double sum_abs_q = 0;
      bool finite = true;
      for (int d = 0; d < D; ++d) {
        q[d] = element(in, in.query, in.dtype, (std::int64_t{s} * H + h) * D + d);
        sum_abs_q += std::fabs(q[d]);
        finite = finite && (n == 0 || std::isfinite(q[d]));  // q is read only if n > 0
      }
      logits.assign(static_cast<std::size_t>(n), 0);
      qk.assign(static_cast<std::size_t>(n), 0);
      const double slope = in.alibi_slopes.empty() ? 0.0 : in.alibi_slopes[h];
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t blk = table[i / B];
        double dot = 0, mag = 0;
        for (int d = 0; d < D; ++d) {
          // Each product is exact in double (at most 24 + 24 significant bits).
          const double k = element(in, in.key_cache, ce, key_offset(in, blk, kvh, d, i % B)) * ks;
          dot += q[d] * k;
          mag += std::fabs(q[d] * k);
        }
        logits[i] = in.scale * dot + slope * static_cast<double>(i - n + 1);
        qk[i] = std::fabs(static_cast<double>(in.scale)) * mag;
        finite = finite && std::isfinite(logits[i]) && std::isfinite(qk[i]);
      }
      bound::RowMagnitudes& row = bi.rows[r];
      bound::ElementMagnitudes* el = bi.elements.data() + r * D;
      bound::exact_magnitudes(
          n, D, logits.data(), qk.data(),
          [&](std::int64_t i, double* v) {
            const std::int64_t blk = table[i / B];
            for (int d = 0; d < D; ++d) {
              v[d] = element(in, in.value_cache, ce, value_offset(in, blk, kvh, d, i % B)) * vs;
              finite = finite && std::isfinite(v[d]);
            }
          },
          sum_abs_q, &row, el);
      if (!finite) {  // a NaN or inf input: the exact row is NaN, nothing to bound
        row.spread = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      // The double dot products above are off by at most D 2^-53 Q_i in absolute terms
      // (recursive summation of exact products), which a relative 1e-12 of x_i need not
      // cover when the logits cancel: widen the gaps and |x| by that much explicitly.
      const double ex = 2 * D * 0x1p-53 * row.max_qk;
      row.spread += 2 * ex;
      row.p_gap += 2 * ex;
      row.p_x += ex;
      row.max_abs_logit += ex;
      for (int d = 0; d < D; ++d) {
        el[d].dev_gap += 2 * ex * el[d].a;
        el[d].dev_x += ex * el[d].a;
      }
    }
  }
  return bi;
}

std::vector<double> element_bounds(const Inputs& in, const BoundInputs& bi, const BoundCase& bc,
                                   const std::vector<double>& exact,
                                   const std::vector<double>& exact_err) {
  bound::KernelConfig c;
  c.scalar = to_format(in.dtype);
  c.cache = to_format(cache_elem_format(in));
  c.head_size = in.head_size;
  c.block_size = in.block_size;
  c.warp_size = bc.warp_size;
  c.threads_per_block = kThreadsPerBlock;
  c.partition_size = bc.partition_size;
  c.choices.partials_in_output_dtype = bc.choices.partials_in_output_dtype;
  c.choices.epsilon_denominator = bc.choices.epsilon_denominator;
  c.choices.round_probabilities = bc.choices.round_probabilities;
  c.exp = bc.exp;
  c.scale = in.scale;
  c.k_scale = in.k_scale;
  c.v_scale = in.v_scale;
  const std::size_t D = static_cast<std::size_t>(in.head_size);
  std::vector<double> out(bi.elements.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t r = 0; r < bi.rows.size(); ++r) {
    if (std::isnan(bi.rows[r].spread)) continue;
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t j = r * D + d;
      bound::ElementMagnitudes el = bi.elements[j];
      if (std::isfinite(exact[j])) el.abs_exact = std::fabs(exact[j]) + exact_err[j];
      out[j] = bound::kernel_error_bound(c, bi.rows[r], el).total;
    }
  }
  return out;
}

}  // namespace pagedattn::audit
