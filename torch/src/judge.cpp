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

  // The magnitudes through the bound's tile API: it computes the logits from the exact q
  // and keys and bounds its own double arithmetic (proofs/bound/src/magnitudes.cpp), once
  // per KV head for its GQA group of query heads.
  const Gather g(p);
  const int group = H / p.num_kv_heads;
  std::vector<double> q(static_cast<std::size_t>(group) * D);
  std::vector<bound::QueryRow> qr(group);
  std::vector<bound::RowMagnitudes> rows(group);
  std::vector<bound::ElementMagnitudes> el(static_cast<std::size_t>(group) * D);
  for (int s = 0; s < S; ++s) {
    const std::int64_t L = p.seq_lens[s];
    for (int kvh = 0; kvh < p.num_kv_heads; ++kvh) {
      for (int gi = 0; gi < group; ++gi) {
        const int h = kvh * group + gi;
        const std::int64_t row0 = (std::int64_t{s} * H + h) * D;
        for (int d = 0; d < D; ++d) q[gi * D + d] = load(p.query, p.scalar_dtype, row0 + d);
        qr[gi].q = q.data() + gi * D;
        qr[gi].alibi_slope = p.alibi_slopes ? p.alibi_slopes[h] : 0.0;
      }
      bound::KvSource kv;
      kv.n = L;
      kv.head_size = D;
      kv.scale = p.scale;
      kv.alibi_position0 = 1 - L;
      kv.keys = [&](std::int64_t i0, std::int64_t i1, double* out) {
        for (std::int64_t i = i0; i < i1; ++i)
          for (int d = 0; d < D; ++d) out[(i - i0) * D + d] = g.key(s, kvh, i, d);
      };
      kv.values = [&](std::int64_t i0, std::int64_t i1, double* out) {
        for (std::int64_t i = i0; i < i1; ++i) g.values(s, kvh, i, out + (i - i0) * D);
      };
      bound::exact_magnitudes(kv, qr.data(), group, rows.data(), el.data());
      for (int gi = 0; gi < group; ++gi) {
        const std::size_t row0 = (static_cast<std::size_t>(s) * H + kvh * group + gi) * D;
        // A non-finite input read: the exact value is NaN, nothing to bound.
        if (std::isnan(ex.value[row0]) || std::isnan(rows[gi].spread)) continue;
        for (int d = 0; d < D; ++d) {
          bound::ElementMagnitudes m = el[gi * D + d];
          const std::size_t i = row0 + d;
          m.abs_exact =
              std::min(m.abs_exact, bound::add_up(std::fabs(ex.value[i]), ex.value_err[i]));
          for (std::size_t c = 0; c < configs.size(); ++c) {
            j.bounds[c * n + i] = bound::kernel_error_bound(configs[c], rows[gi], m).total;
          }
        }
      }
    }
  }
  return j;
}

}  // namespace pagedattn::judge
