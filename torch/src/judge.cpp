// The check's judge: the exact reference and kernel_error_bound on one decode step.
// The exact magnitudes the bound takes (bound.h, RowMagnitudes / ElementMagnitudes) are
// computed here from the contract's gather (VLLM layout, GQA, fp8 dequantization, ALiBi)
// with the reference's exact element decoders.
#include "judge.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "pagedattn_bound/bound.h"
#include "pagedattn_ref/formats.h"

namespace pagedattn::judge {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int bytes_of(ref::DType t) {
  return t == ref::DType::f32 ? 4 : (t == ref::DType::f16 || t == ref::DType::bf16) ? 2 : 1;
}

// Element i of an array of format t, decoded exactly.
double load(const void* base, ref::DType t, std::int64_t i) {
  const auto* p = static_cast<const unsigned char*>(base);
  switch (t) {
    case ref::DType::f32: {
      std::uint32_t b;
      std::memcpy(&b, p + 4 * i, 4);
      return ref::decode_f32(b);
    }
    case ref::DType::f16:
    case ref::DType::bf16: {
      std::uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return t == ref::DType::f16 ? ref::decode_f16(b) : ref::decode_bf16(b);
    }
    case ref::DType::fp8_e4m3:
      return ref::decode_e4m3(p[i]);
    case ref::DType::fp8_e5m2:
      return ref::decode_e5m2(p[i]);
  }
  return kNaN;
}

bound::Format bound_format(ref::DType t) {
  switch (t) {
    case ref::DType::f32:
      return bound::Format::f32;
    case ref::DType::f16:
      return bound::Format::f16;
    case ref::DType::bf16:
      return bound::Format::bf16;
    case ref::DType::fp8_e4m3:
      return bound::Format::fp8_e4m3;
    case ref::DType::fp8_e5m2:
      return bound::Format::fp8_e5m2;
  }
  return bound::Format::f32;
}

// The spacing of format f at |y|: 2^(e - P + 1) for 2^e <= |y| < 2^(e+1), never below the
// subnormal quantum 2^qmin.
double spacing(double y, const ref::Format& f) {
  if (!std::isfinite(y) || y == 0) return std::ldexp(1.0, f.qmin);
  int e;
  std::frexp(y, &e);  // 2^(e-1) <= |y| < 2^e
  return std::ldexp(1.0, std::max(e - f.P, f.qmin));
}

// The tokens of one (sequence, KV head) in the contract's terms: token i of sequence s is
// slot i % B of physical block block_tables[s][i / B]; keys are [blk, kvh, d / x, slot, x],
// values [blk, kvh, d, slot]; fp8 elements are scaled by k_scale / v_scale.
struct Gather {
  const ref::Problem& p;
  int x;
  double ks, vs;
  ref::DType cache;
  explicit Gather(const ref::Problem& pr)
      : p(pr),
        x(16 / bytes_of(pr.cache_dtype)),
        ks(pr.cache_dtype == pr.scalar_dtype ? 1.0 : pr.k_scale),
        vs(pr.cache_dtype == pr.scalar_dtype ? 1.0 : pr.v_scale),
        cache(pr.cache_dtype) {}
  std::int64_t block(int s, std::int64_t i) const {
    return p.block_tables[std::int64_t{s} * p.max_blocks_per_seq + i / p.block_size];
  }
  double key(int s, int kvh, std::int64_t i, int d) const {
    const std::int64_t D = p.head_size, B = p.block_size;
    const std::int64_t at =
        (((block(s, i) * p.num_kv_heads + kvh) * (D / x) + d / x) * B + i % B) * x + d % x;
    return load(p.key_cache, cache, at) * ks;  // fp8 (<= 4 bits) times a float: exact
  }
  void values(int s, int kvh, std::int64_t i, double* v) const {
    const std::int64_t D = p.head_size, B = p.block_size;
    const std::int64_t base = (block(s, i) * p.num_kv_heads + kvh) * D * B + i % B;
    for (int d = 0; d < D; ++d) v[d] = load(p.value_cache, cache, base + d * B) * vs;
  }
};

}  // namespace

Judgement judge(const Request& r) {
  const ref::Problem& p = r.problem;
  ref::validate(p);
  for (int ps : r.partition_sizes) {
    if (ps < 0 || ps % p.block_size != 0) {
      throw std::invalid_argument(
          "partition_sizes: each must be 0 (V1) or a positive multiple "
          "of block_size " +
          std::to_string(p.block_size) + ", got " + std::to_string(ps));
    }
  }
  ref::Options opt;
  opt.out_dtype = p.scalar_dtype;
  const ref::Output ex = ref::reference_attention(p, opt);
  const ref::Format of = ref::format_of(p.scalar_dtype);

  const int S = p.num_seqs, H = p.num_heads, D = p.head_size;
  const std::size_t n = static_cast<std::size_t>(S) * H * D;
  Judgement j;
  j.num_seqs = S, j.num_heads = H, j.head_size = D;
  j.exact = ex.value;
  j.exact_err = ex.value_err;
  j.exact_bits = ex.bits;
  j.ulp.resize(n);
  for (std::size_t i = 0; i < n; ++i) j.ulp[i] = spacing(ex.value[i], of);
  j.bounds.assign(r.partition_sizes.size() * 2 * n, kNaN);

  // One configuration per (partition size, numerics), as the kernels would be launched.
  std::vector<bound::KernelConfig> configs;
  for (int ps : r.partition_sizes) {
    for (bool vllm : {false, true}) {
      bound::KernelConfig c;
      c.scalar = bound_format(p.scalar_dtype);
      c.cache = bound_format(p.cache_dtype);
      c.head_size = D;
      c.block_size = p.block_size;
      c.warp_size = r.warp_size;
      c.threads_per_block = 128;  // vLLM's and pagedattn's NUM_THREADS
      c.partition_size = ps;
      c.choices = vllm ? bound::Choices::vllm_compatible() : bound::Choices::exact_fp32();
      c.exp = bound::ExpAccuracy::cuda_fast();  // any device exp within __expf's accuracy
      c.scale = p.scale;
      c.k_scale = p.k_scale;
      c.v_scale = p.v_scale;
      configs.push_back(c);
    }
  }

  const Gather g(p);
  const double u = 0x1p-53;  // double's unit roundoff
  std::vector<double> q(D), logits, qk;
  std::vector<bound::ElementMagnitudes> el(D);
  for (int s = 0; s < S; ++s) {
    const std::int64_t L = p.seq_lens[s];
    for (int h = 0; h < H; ++h) {
      const std::size_t row0 = (static_cast<std::size_t>(s) * H + h) * D;
      if (std::isnan(ex.value[row0])) continue;  // a non-finite input read: nothing to bound
      const int kvh = h / (H / p.num_kv_heads);
      double sum_abs_q = 0;
      for (int d = 0; d < D; ++d) {
        q[d] = load(p.query, p.scalar_dtype, static_cast<std::int64_t>(row0) + d);
        sum_abs_q += std::fabs(q[d]);
      }
      const double slope = p.alibi_slopes ? p.alibi_slopes[h] : 0.0;
      logits.assign(static_cast<std::size_t>(L), 0);
      qk.assign(static_cast<std::size_t>(L), 0);
      // Each logit in double is off from the exact one by at most e_i: the D products are
      // exact (<= 24 + 28 significant bits), their recursive sum errs by <= gamma_D sum|q k|
      // <= 1.01 D u sum|q k|, the product by scale and the ALiBi term (slope * integer) and
      // the final sum each add <= u of their magnitude, and |scale dot| <= Q_i: so
      // e_i <= (1.01 D + 4) u Q_i + 4 u |alibi_i|. bound.h asks for relative 1e-12, which a
      // cancelling logit does not meet: widen_for_logit_error takes e.
      double e = 0;
      for (std::int64_t i = 0; i < L; ++i) {
        double dot = 0, mag = 0;
        for (int d = 0; d < D; ++d) {
          const double t = q[d] * g.key(s, kvh, i, d);
          dot += t;
          mag += std::fabs(t);
        }
        const double bias = slope * static_cast<double>(i - L + 1);
        logits[i] = static_cast<double>(p.scale) * dot + bias;
        qk[i] = std::fabs(static_cast<double>(p.scale)) * mag;
        e = std::max(e, (1.01 * D + 4) * u * qk[i] + 4 * u * std::fabs(bias));
      }
      bound::RowMagnitudes row;
      bound::exact_magnitudes(
          L, D, logits.data(), qk.data(),
          [&](std::int64_t i, double* v) { g.values(s, kvh, i, v); }, sum_abs_q, &row, el.data());
      bound::widen_for_logit_error(e, D, &row, el.data());
      for (int d = 0; d < D; ++d) {
        bound::ElementMagnitudes m = el[d];
        const std::size_t i = row0 + d;
        m.abs_exact = std::fabs(ex.value[i]) + ex.value_err[i];
        for (std::size_t c = 0; c < configs.size(); ++c) {
          j.bounds[c * n + i] = bound::kernel_error_bound(configs[c], row, m).total;
        }
      }
    }
  }
  return j;
}

}  // namespace pagedattn::judge
