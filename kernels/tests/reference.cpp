#include "reference.h"

#include <emu/cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

namespace pagedattn::test {
namespace {

// The test's own fp8 decoders (the kernels use pagedattn/dtypes.h's): sign, exponent and
// mantissa fields scaled with ldexp in double.
double ref_e4m3(std::uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  const double mag = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}
double ref_e5m2(std::uint8_t b) {
  const int s = b >> 7, e = (b >> 2) & 31, m = b & 3;
  if (e == 31) return m ? NAN : (s ? -INFINITY : INFINITY);
  const double mag = e == 0 ? std::ldexp(m, -16) : std::ldexp(1.0 + m / 4.0, e - 15);
  return s ? -mag : mag;
}

std::size_t elem_size(const Problem& p) {
  return p.c.cache == CacheFormat::same ? dtype_size(p.c.scalar) : 1;
}

// Stores `v` (already representable) or NaN in a scalar-typed buffer.
void store_scalar(DType t, std::uint8_t* base, std::size_t i, double v) {
  switch (t) {
    case DType::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(base + 4 * i, &f, 4);
      break;
    }
    case DType::f16: {
      const std::uint16_t h = std::isnan(v) ? 0x7e00 : float_to_f16_bits(static_cast<float>(v));
      std::memcpy(base + 2 * i, &h, 2);
      break;
    }
    case DType::bf16: {
      const std::uint16_t h = std::isnan(v) ? 0x7fc0 : float_to_bf16_bits(static_cast<float>(v));
      std::memcpy(base + 2 * i, &h, 2);
      break;
    }
    default:
      break;
  }
}

// A random value of the storage type in [-range, range], returned decoded (unscaled).
double random_element(std::mt19937_64& rng, DType scalar, CacheFormat cache, double range,
                      std::uint8_t* bits_out) {
  if (cache == CacheFormat::same) {
    std::uniform_real_distribution<double> u(-range, range);
    const float f = static_cast<float>(u(rng));
    switch (scalar) {
      case DType::f16:
        return f16_bits_to_float(float_to_f16_bits(f));
      case DType::bf16:
        return bf16_bits_to_float(float_to_bf16_bits(f));
      default:
        return f;
    }
  }
  // fp8: a random code, finite, |value| <= range (range >= 1 keeps plenty of codes).
  for (;;) {
    const std::uint8_t b = static_cast<std::uint8_t>(rng());
    const double v = cache == CacheFormat::fp8_e4m3 ? ref_e4m3(b) : ref_e5m2(b);
    if (std::isfinite(v) && std::fabs(v) <= range) {
      *bits_out = b;
      return v;
    }
  }
}

}  // namespace

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f16:
      return std::ldexp(1.0, -11);
    case DType::bf16:
      return std::ldexp(1.0, -8);
    default:
      return std::ldexp(1.0, -24);
  }
}

double decode_scalar(DType t, const std::uint8_t* base, std::size_t i) {
  switch (t) {
    case DType::f32: {
      float f;
      std::memcpy(&f, base + 4 * i, 4);
      return f;
    }
    case DType::f16: {
      std::uint16_t h;
      std::memcpy(&h, base + 2 * i, 2);
      return f16_bits_to_float(h);
    }
    case DType::bf16: {
      std::uint16_t h;
      std::memcpy(&h, base + 2 * i, 2);
      return bf16_bits_to_float(h);
    }
    default:
      return NAN;
  }
}

Problem make_problem(const Config& c) {
  Problem p;
  p.c = c;
  if (p.c.scale < 0) p.c.scale = 2.0 / std::sqrt(static_cast<double>(c.head_size));
  if (c.cache == CacheFormat::same) p.c.k_scale = p.c.v_scale = 1.0;  // vLLM ignores them
  p.x = static_cast<int>(16 / elem_size(p));
  std::mt19937_64 rng(c.seed);
  const int S = static_cast<int>(c.seq_lens.size()), H = c.num_heads, D = c.head_size;
  const int B = c.block_size;
  p.seq_lens.assign(c.seq_lens.begin(), c.seq_lens.end());
  p.max_seq_len =
      c.max_seq_len >= 0 ? c.max_seq_len : *std::max_element(c.seq_lens.begin(), c.seq_lens.end());
  int used_blocks = 0;
  for (int L : c.seq_lens) {
    p.max_blocks_per_seq = std::max(p.max_blocks_per_seq, (L + B - 1) / B);
    used_blocks += (L + B - 1) / B;
  }
  p.max_blocks_per_seq = std::max(p.max_blocks_per_seq, 1) + 1;  // one padding entry
  p.num_blocks = used_blocks + c.spare_blocks;

  // Physical blocks in random order; entries past a sequence's blocks hold an id far out of
  // range, so a kernel that reads them faults instead of passing by luck.
  std::vector<int> ids(p.num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  p.block_tables.assign(static_cast<std::size_t>(S) * p.max_blocks_per_seq, 1 << 28);
  p.used_slot.assign(static_cast<std::size_t>(p.num_blocks) * B, 0);
  int next = 0;
  for (int s = 0; s < S; ++s) {
    for (int t = 0; t < c.seq_lens[s]; ++t) {
      if (t % B == 0) p.block_tables[s * p.max_blocks_per_seq + t / B] = ids[next++];
      p.used_slot[p.block_tables[s * p.max_blocks_per_seq + t / B] * B + t % B] = 1;
    }
  }

  const std::size_t qn = static_cast<std::size_t>(S) * H * D;
  p.query.resize(qn * dtype_size(c.scalar));
  p.q.resize(qn);
  std::uint8_t unused;
  for (std::size_t i = 0; i < qn; ++i) {
    p.q[i] = random_element(rng, c.scalar, CacheFormat::same, c.q_range, &unused);
    store_scalar(c.scalar, p.query.data(), i, p.q[i]);
  }
  const std::size_t kn = static_cast<std::size_t>(p.num_blocks) * c.num_kv_heads * D * B;
  const std::size_t k_padded = kn / D * ((D + p.x - 1) / p.x) * p.x;  // >= kn
  p.key_cache.resize(k_padded * elem_size(p));
  p.value_cache.resize(kn * elem_size(p));
  p.k.resize(kn);
  p.v.resize(kn);
  for (int blk = 0; blk < p.num_blocks; ++blk) {
    for (int h = 0; h < c.num_kv_heads; ++h) {
      for (int slot = 0; slot < B; ++slot) {
        for (int d = 0; d < D; ++d) {
          const std::size_t li = logical(p, blk, h, slot, d);
          std::uint8_t kb = 0, vb = 0;
          const double kv = random_element(rng, c.scalar, c.cache, c.k_range, &kb);
          const double vv = random_element(rng, c.scalar, c.cache, c.v_range, &vb);
          if (c.cache == CacheFormat::same) {
            store_scalar(c.scalar, p.key_cache.data(), k_index(p, blk, h, slot, d), kv);
            store_scalar(c.scalar, p.value_cache.data(), v_index(p, blk, h, slot, d), vv);
          } else {
            p.key_cache[k_index(p, blk, h, slot, d)] = kb;
            p.value_cache[v_index(p, blk, h, slot, d)] = vb;
          }
          p.k[li] = kv * p.c.k_scale;  // exact in double
          p.v[li] = vv * p.c.v_scale;
        }
      }
    }
  }
  if (c.alibi) {
    // vLLM's slopes are 2^(-8 i / H); any finite values do for the test.
    for (int h = 0; h < H; ++h) p.alibi.push_back(std::ldexp(1.0f, -(8 * (h + 1)) / H));
  }
  return p;
}

void fill_unused_slots(Problem& p, bool nan) {
  const int B = p.c.block_size;
  for (int blk = 0; blk < p.num_blocks; ++blk) {
    for (int slot = 0; slot < B; ++slot) {
      if (p.used_slot[blk * B + slot]) continue;
      for (int h = 0; h < p.c.num_kv_heads; ++h) {
        for (int d = 0; d < p.c.head_size; ++d) {
          const std::size_t ki = k_index(p, blk, h, slot, d), vi = v_index(p, blk, h, slot, d);
          if (p.c.cache == CacheFormat::same) {
            store_scalar(p.c.scalar, p.key_cache.data(), ki, nan ? NAN : 0.0);
            store_scalar(p.c.scalar, p.value_cache.data(), vi, nan ? NAN : 0.0);
          } else {
            p.key_cache[ki] = p.value_cache[vi] = nan ? 0x7f : 0x00;  // NaN in both fp8 formats
          }
          p.k[logical(p, blk, h, slot, d)] = p.v[logical(p, blk, h, slot, d)] = nan ? NAN : 0.0;
        }
      }
    }
  }
}

void set_element(Problem& p, Element e, int seq, int which_index, int kv_head, int d,
                 double value) {
  if (e == Element::query) {
    const std::size_t i =
        (static_cast<std::size_t>(seq) * p.c.num_heads + which_index) * p.c.head_size + d;
    store_scalar(p.c.scalar, p.query.data(), i, value);
    p.q[i] = value;
    return;
  }
  const int B = p.c.block_size, t = which_index;
  const int blk = p.block_tables[seq * p.max_blocks_per_seq + t / B];
  const std::size_t i =
      e == Element::key ? k_index(p, blk, kv_head, t % B, d) : v_index(p, blk, kv_head, t % B, d);
  std::vector<std::uint8_t>& buf = e == Element::key ? p.key_cache : p.value_cache;
  if (p.c.cache == CacheFormat::same) {
    store_scalar(p.c.scalar, buf.data(), i, value);
  } else {
    const bool inf = std::isinf(value) && p.c.cache == CacheFormat::fp8_e5m2;
    buf[i] = inf ? (value > 0 ? 0x7c : 0xfc) : 0x7f;
    if (!inf) value = NAN;
  }
  (e == Element::key ? p.k : p.v)[logical(p, blk, kv_head, t % B, d)] = value;
}

namespace {

// One (seq, head) row's logits in double, and the facts the error bound needs.
struct RowFacts {
  std::vector<double> logits;
  double max_abs_v = 0;    // max |v| over the row's tokens (dequantized)
  double max_dot_abs = 0;  // max_t scale * sum_d |q_d k_td|
  double max_abs_logit = 0;
  double spread = 0;  // max logit - min logit
};

RowFacts row_facts(const Problem& p, int s, int h) {
  RowFacts f;
  const int D = p.c.head_size, B = p.c.block_size, L = p.seq_lens[s];
  const int kvh = h / (p.c.num_heads / p.c.num_kv_heads);
  const double* q = &p.q[(static_cast<std::size_t>(s) * p.c.num_heads + h) * D];
  double lo = INFINITY, hi = -INFINITY;
  for (int t = 0; t < L; ++t) {
    const int blk = p.block_tables[s * p.max_blocks_per_seq + t / B];
    const double* k = &p.k[logical(p, blk, kvh, t % B, 0)];
    const double* v = &p.v[logical(p, blk, kvh, t % B, 0)];
    double dot = 0, dot_abs = 0;
    for (int d = 0; d < D; ++d) {
      dot += q[d] * k[d];
      dot_abs += std::fabs(q[d] * k[d]);
      f.max_abs_v = std::max(f.max_abs_v, std::fabs(v[d]));
    }
    double logit = p.c.scale * dot;
    if (p.c.alibi) logit += p.alibi[h] * static_cast<double>(t - L + 1);
    f.logits.push_back(logit);
    f.max_dot_abs = std::max(f.max_dot_abs, p.c.scale * dot_abs);
    f.max_abs_logit = std::max(f.max_abs_logit, std::fabs(logit));
    lo = std::min(lo, logit);
    hi = std::max(hi, logit);
  }
  f.spread = L > 0 ? hi - lo : 0;
  return f;
}

}  // namespace

LogitFacts logit_facts(const Problem& p, int seq, int head) {
  const RowFacts f = row_facts(p, seq, head);
  const double u = std::ldexp(1.0, -24);
  return {(p.c.head_size + 1) * u * f.max_dot_abs + 3 * u * f.max_abs_logit, f.spread};
}

std::vector<double> reference_attention(const Problem& p) {
  const int S = static_cast<int>(p.seq_lens.size()), H = p.c.num_heads, D = p.c.head_size;
  const int B = p.c.block_size;
  std::vector<double> out(static_cast<std::size_t>(S) * H * D, 0.0);
  for (int s = 0; s < S; ++s) {
    for (int h = 0; h < H; ++h) {
      const RowFacts f = row_facts(p, s, h);
      const int L = p.seq_lens[s];
      if (L == 0) continue;  // defined as 0
      const double m = *std::max_element(f.logits.begin(), f.logits.end());
      double sum = 0;
      std::vector<double> acc(D, 0.0);
      const int kvh = h / (H / p.c.num_kv_heads);
      for (int t = 0; t < L; ++t) {
        const double e = std::exp(f.logits[t] - m);
        sum += e;
        const int blk = p.block_tables[s * p.max_blocks_per_seq + t / B];
        for (int d = 0; d < D; ++d) acc[d] += e * p.v[logical(p, blk, kvh, t % B, d)];
      }
      for (int d = 0; d < D; ++d) out[(static_cast<std::size_t>(s) * H + h) * D + d] = acc[d] / sum;
    }
  }
  return out;
}

// The bound, first order in the unit roundoffs (u = 2^-24 for fp32 arithmetic, u_out of the
// output format, u_s of the scalar type), for a row of n tokens with values |v| <= V:
//  - logits: the fp32 dot of D fma terms errs by <= gamma_D * sum|q k| (inputs are exact in
//    fp32: fp16/bf16/fp8 decode exactly), then the scale multiply, the folded k_scale and the
//    ALiBi fma add u each relative to |logit|: dx <= (D + 1) u A + 3 u |x|max. A logit error
//    dx moves each probability by a relative 2 dx, so the output by <= 2 dx V.
//  - exp: CUDA's __expf is within (2 + 1.173 |y|) ulp at y = x - m (|y| <= R, the spread);
//    an ulp is up to 2u relative, and rounding y itself costs u R: e_i errs by
//    (4 + 3.35 R) u relative; numerator and denominator together: 2 (4 + 3.35 R) u V.
//  - sums of n terms (s and sum e_i v_i, any order): gamma_n each, relative to s V; the
//    division and the fp8 v_scale multiply: u each. -> (2 n + 2) u V.
//  - the output rounding: u_out V.
//  - V2 adds, per partition weight w_p = s_p exp(m_p - M): gamma_P (s_p) plus the exp's
//    (4 + 3.35 R) u; weights off by a relative e move the mean by <= 2 e V; the reduce's two
//    sums over P partitions and its division: (2 P + 1) u V. tmp_out in fp32 adds u V.
//  - vllm_compatible adds: probabilities rounded to scalar (u_s V), the 1e-6 epsilon
//    (1e-6 V, since s >= 1), fp8 elements rounded to scalar (u_s A on logits, u_s V on
//    values), and in V2 tmp_out in scalar (u_s V) and the reduce's epsilon (1e-6 V).
// A factor 1.25 covers the second-order terms (all products of two u's, at most
// 1e-2 relative to the first-order sum for the sizes tested).
std::vector<double> error_bounds(const Problem& p, Kernel kernel) {
  const int S = static_cast<int>(p.seq_lens.size()), H = p.c.num_heads, D = p.c.head_size;
  const double u = std::ldexp(1.0, -24), u_out = unit_roundoff(p.c.scalar);
  const double u_s = u_out;
  const bool compat = p.c.numerics == Numerics::vllm_compatible;
  const bool fp8 = p.c.cache != CacheFormat::same;
  std::vector<double> bounds(static_cast<std::size_t>(S) * H, 0.0);
  for (int s = 0; s < S; ++s) {
    for (int h = 0; h < H; ++h) {
      const RowFacts f = row_facts(p, s, h);
      const int L = p.seq_lens[s];
      if (L == 0) continue;  // exactly 0 expected
      const int n = kernel == Kernel::v2 ? std::min(L, p.c.partition_size) : L;
      const double V = f.max_abs_v, A = f.max_dot_abs, R = f.spread;
      double dx = (D + 1) * u * A + 3 * u * f.max_abs_logit;
      double rel = 2 * (4 + 3.35 * R) * u + (2.0 * n + 2) * u + u_out;
      if (compat) {
        rel += u_s + 1e-6;
        if (fp8) {
          dx += u_s * A;
          rel += u_s;
        }
      }
      rel += 2 * dx;
      if (kernel == Kernel::v2) {
        const double P = std::ceil(static_cast<double>(L) / p.c.partition_size);
        rel += 2 * (P * u + (4 + 3.35 * R) * u) + (2 * P + 1) * u + u;
        if (compat) rel += u_s + 1e-6;
      }
      bounds[s * H + h] = 1.25 * rel * V;
    }
  }
  return bounds;
}

namespace {
// Emulator device memory (cudaMalloc) holding a copy of a vector: under EMU_CHECKS=memcheck
// each allocation ends flush against a guard page, so a kernel that reads or writes even one
// element past any tensor is a finding (a std::vector's storage has no guard).
template <class T>
class DeviceCopy {
 public:
  explicit DeviceCopy(const std::vector<T>& v) : n_(v.size()) {
    if (n_ == 0) return;
    if (cudaMalloc(&ptr_, n_ * sizeof(T)) != cudaSuccess)
      throw std::runtime_error("run_kernel: cudaMalloc of " + std::to_string(n_ * sizeof(T)) +
                               " bytes failed");
    std::memcpy(ptr_, v.data(), n_ * sizeof(T));
  }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  ~DeviceCopy() {
    if (ptr_) cudaFree(ptr_);
  }
  T* data() const { return ptr_; }
  void copy_to(std::vector<T>& v) const {
    if (n_) std::memcpy(v.data(), ptr_, n_ * sizeof(T));
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
};
}  // namespace

Outputs run_kernel(const Problem& p, Kernel kernel, const std::string& profile, bool poison) {
  const Config& c = p.c;
  const std::int64_t S = static_cast<std::int64_t>(p.seq_lens.size()), H = c.num_heads,
                     D = c.head_size, B = c.block_size;
  const DType cache_dtype = c.cache == CacheFormat::same ? c.scalar : DType::u8;
  const char* kv_dtype = c.cache == CacheFormat::same       ? "auto"
                         : c.cache == CacheFormat::fp8_e4m3 ? "fp8"
                                                            : "fp8_e5m2";
  Outputs o;
  o.out_bytes.assign(S * H * D * dtype_size(c.scalar), poison ? 0xff : 0);  // 0xff..: NaN
  const DeviceCopy<std::uint8_t> query(p.query), kc(p.key_cache), vc(p.value_cache);
  const DeviceCopy<std::int32_t> bt(p.block_tables), sl(p.seq_lens);
  const DeviceCopy<float> alibi(p.alibi);
  const DeviceCopy<std::uint8_t> out_dev(o.out_bytes);
  const auto out = TensorView::contiguous(out_dev.data(), c.scalar, {S, H, D});
  const auto q = TensorView::contiguous(query.data(), c.scalar, {S, H, D});
  const auto kt = TensorView::contiguous(kc.data(), cache_dtype,
                                         {p.num_blocks, c.num_kv_heads, D / p.x, B, p.x});
  const auto vt =
      TensorView::contiguous(vc.data(), cache_dtype, {p.num_blocks, c.num_kv_heads, D, B});
  const auto btv = TensorView::contiguous(bt.data(), DType::i32, {S, p.max_blocks_per_seq});
  const auto slv = TensorView::contiguous(sl.data(), DType::i32, {S});
  const auto al = c.alibi ? TensorView::contiguous(alibi.data(), DType::f32, {H}) : TensorView{};
  Options opt;
  opt.partition_size = c.partition_size;
  opt.numerics = c.numerics;
  opt.vllm_choices = c.vllm_choices;
  if (kernel == Kernel::v1) {
    paged_attention_v1(out, q, kt, vt, c.num_kv_heads, p.c.scale, btv, slv, B, p.max_seq_len, al,
                       kv_dtype, p.c.k_scale, p.c.v_scale, Backend::emulator(profile), opt);
  } else {
    const std::int64_t P = (p.max_seq_len + c.partition_size - 1) / c.partition_size;
    const DType tmp_dtype = effective_choices(opt).partials_in_output_dtype ? c.scalar : DType::f32;
    o.exp_sums.assign(S * H * P, NAN);
    o.max_logits.assign(S * H * P, NAN);
    o.tmp_out.assign(S * H * P * D * dtype_size(tmp_dtype), poison ? 0xff : 0);
    const DeviceCopy<float> es(o.exp_sums), ml(o.max_logits);
    const DeviceCopy<std::uint8_t> tmp(o.tmp_out);
    paged_attention_v2(out, TensorView::contiguous(es.data(), DType::f32, {S, H, P}),
                       TensorView::contiguous(ml.data(), DType::f32, {S, H, P}),
                       TensorView::contiguous(tmp.data(), tmp_dtype, {S, H, P, D}), q, kt, vt,
                       c.num_kv_heads, p.c.scale, btv, slv, B, p.max_seq_len, al, kv_dtype,
                       p.c.k_scale, p.c.v_scale, Backend::emulator(profile), opt);
    es.copy_to(o.exp_sums);
    ml.copy_to(o.max_logits);
    tmp.copy_to(o.tmp_out);
  }
  out_dev.copy_to(o.out_bytes);
  o.out.resize(S * H * D);
  for (std::size_t i = 0; i < o.out.size(); ++i)
    o.out[i] = decode_scalar(c.scalar, o.out_bytes.data(), i);
  return o;
}

Comparison compare(const Problem& p, const std::vector<double>& got,
                   const std::vector<double>& want, const std::vector<double>& bounds) {
  Comparison r;
  const int D = p.c.head_size;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    const double b = bounds[i / D];
    if (std::isnan(got[i])) r.any_nan = true;
    const double ratio = b > 0 ? err / b : (err == 0 ? 0 : INFINITY);
    if (std::isnan(got[i]) || ratio > r.worst_ratio) {
      r.worst_ratio = std::isnan(got[i]) ? INFINITY : ratio;
      std::ostringstream os;
      os << "element " << i << " (seq " << i / D / p.c.num_heads << ", head "
         << (i / D) % p.c.num_heads << ", d " << i % D << "): got " << got[i] << ", want "
         << want[i] << ", |err| " << err << ", bound " << b;
      r.worst = os.str();
    }
  }
  return r;
}

}  // namespace pagedattn::test
