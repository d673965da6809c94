#include "harness.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <emu/profile.h>
#include "pagedattn/resources.h"
#include "pagedattn_bound/bound.h"
#include <random>
#include <sstream>

namespace pagedattn::prop {
namespace {

std::size_t elem_size(const Problem& p) {
  return p.c.cache == CacheFormat::same ? dtype_size(p.c.scalar) : 1;
}
// Rounds `want` to the scalar format and stores it; returns the stored value. NaN and inf
// are stored as such.
double store_scalar(DType t, std::uint8_t* base, std::size_t i, double want) {
  const float f = static_cast<float>(want);
  switch (t) {
    case DType::f16: {
      const std::uint16_t h = std::isnan(f) ? 0x7e00 : float_to_f16_bits(f);
      std::memcpy(base + 2 * i, &h, 2);
      return f16_bits_to_float(h);
    }
    case DType::bf16: {
      const std::uint16_t h = std::isnan(f) ? 0x7fc0 : float_to_bf16_bits(f);
      std::memcpy(base + 2 * i, &h, 2);
      return bf16_bits_to_float(h);
    }
    default:
      std::memcpy(base + 4 * i, &f, 4);
      return f;
  }
}

// fp8: the byte nearest want / scale (NaN and inf map to the format's NaN / inf codes).
double store_fp8(CacheFormat c, std::uint8_t* byte, double want, double scale) {
  const double x = want / scale;
  const bool e4 = c == CacheFormat::fp8_e4m3;
  std::uint8_t b;
  if (std::isnan(x)) {
    b = 0x7f;  // NaN in both formats
  } else if (std::isinf(x)) {
    b = e4 ? 0x7f : (x > 0 ? 0x7c : 0xfc);  // e4m3 has no inf: NaN is its only poison
  } else {
    b = e4 ? float_to_fp8_e4m3(static_cast<float>(x)) : float_to_fp8_e5m2(static_cast<float>(x));
  }
  *byte = b;
  const double v = e4 ? fp8_e4m3_to_float(b) : fp8_e5m2_to_float(b);
  return v * scale;
}

}  // namespace

int Spec::max_seq_len() const {
  return *std::max_element(seq_lens.begin(), seq_lens.end()) + extra_len;
}

std::ostream& operator<<(std::ostream& os, const Spec& s) {
  static const char* shapes[] = {"uniform", "spread", "ties", "dominant", "steps"};
  static const char* classes[] = {"uniform", "subnormal", "nearmax"};
  os << "{" << dtype_name(s.scalar) << " cache=" << cache_format_name(s.cache);
  if (s.cache != CacheFormat::same) os << " k_scale=" << s.k_scale << " v_scale=" << s.v_scale;
  os << " D=" << s.head_size << " B=" << s.block_size << " kv_heads=" << s.num_kv_heads
     << " gqa=" << s.gqa << (s.alibi ? " alibi" : "") << " P=" << s.partition_size << " seq_lens=[";
  for (std::size_t i = 0; i < s.seq_lens.size(); ++i) os << (i ? "," : "") << s.seq_lens[i];
  os << "] extra_len=" << s.extra_len
     << (s.layout == BlockLayout::repeated ? " blocks=repeated" : " blocks=distinct")
     << " logits=" << shapes[static_cast<int>(s.logits)];
  if (s.logits != LogitShape::uniform) os << "(span=" << s.span << " offset=" << s.offset << ")";
  os << " q_lanes=" << classes[static_cast<int>(s.q_lanes)]
     << " v=" << classes[static_cast<int>(s.v_class)] << " seed=" << s.seed
     << " profile=" << s.profile << "}";
  return os;
}

double format_max(DType scalar, CacheFormat cache) {
  if (cache == CacheFormat::fp8_e4m3) return 448;
  if (cache == CacheFormat::fp8_e5m2) return 57344;
  if (scalar == DType::f16) return 65504;
  if (scalar == DType::bf16) return 3.3895313892515355e38;
  return FLT_MAX;
}
double format_min_subnormal(DType scalar, CacheFormat cache) {
  if (cache == CacheFormat::fp8_e4m3) return std::ldexp(1.0, -9);
  if (cache == CacheFormat::fp8_e5m2) return std::ldexp(1.0, -16);
  if (scalar == DType::f16) return std::ldexp(1.0, -24);
  if (scalar == DType::bf16) return std::ldexp(1.0, -133);
  return std::ldexp(1.0, -149);
}

void set_q(Problem& p, int seq, int head, int d, double want) {
  const std::size_t i = (static_cast<std::size_t>(seq) * p.c.num_heads + head) * p.c.head_size + d;
  p.q[i] = store_scalar(p.c.scalar, p.query.data(), i, want);
}
void set_k(Problem& p, int blk, int kvh, int slot, int d, double want) {
  const std::size_t ki = k_index(p, blk, kvh, slot, d), li = logical(p, blk, kvh, slot, d);
  p.k[li] = p.c.cache == CacheFormat::same
                ? store_scalar(p.c.scalar, p.key_cache.data(), ki, want)
                : store_fp8(p.c.cache, &p.key_cache[ki], want, p.c.k_scale);
}
void set_v(Problem& p, int blk, int kvh, int slot, int d, double want) {
  const std::size_t vi = v_index(p, blk, kvh, slot, d), li = logical(p, blk, kvh, slot, d);
  p.v[li] = p.c.cache == CacheFormat::same
                ? store_scalar(p.c.scalar, p.value_cache.data(), vi, want)
                : store_fp8(p.c.cache, &p.value_cache[vi], want, p.c.v_scale);
}
double get_k(const Problem& p, int blk, int kvh, int slot, int d) {
  return p.k[logical(p, blk, kvh, slot, d)];
}
double get_v(const Problem& p, int blk, int kvh, int slot, int d) {
  return p.v[logical(p, blk, kvh, slot, d)];
}
std::pair<int, int> where(const Problem& p, int seq, int t) {
  const int B = p.c.block_size;
  return {p.block_tables[static_cast<std::size_t>(seq) * p.max_blocks_per_seq + t / B], t % B};
}
void recompute_used_slots(Problem& p) {
  p.used_slot.assign(static_cast<std::size_t>(p.num_blocks) * p.c.block_size, 0);
  for (std::size_t s = 0; s < p.seq_lens.size(); ++s) {
    for (int t = 0; t < p.seq_lens[s]; ++t) {
      const auto [blk, slot] = where(p, static_cast<int>(s), t);
      p.used_slot[static_cast<std::size_t>(blk) * p.c.block_size + slot] = 1;
    }
  }
}

namespace {

double class_value(std::mt19937_64& rng, ValueClass c, DType scalar, CacheFormat cache,
                   double scale) {
  std::uniform_real_distribution<double> u(-1, 1);
  switch (c) {
    case ValueClass::subnormal: {
      const double tiny = format_min_subnormal(scalar, cache) * scale;
      switch (rng() % 4) {
        case 0:
          return 0.0;
        case 1:
          return -0.0;
        default:  // a few quanta up to well into the subnormal range
          return tiny * static_cast<double>(1 + rng() % 64) * (rng() % 2 ? 1 : -1);
      }
    }
    case ValueClass::nearmax: {
      // Within the output format too (fp8 * v_scale can pass f16's 65504): a finite exact
      // output must be representable for "finite in, finite out" to be a claim.
      // fp8 rounds the value to 2 (e5m2) or 3 mantissa bits, up by at most 2^-3: 0.75 keeps
      // the stored value below the output format's maximum.
      double mx =
          std::min(format_max(scalar, cache) * scale, (cache == CacheFormat::same ? 1.0 : 0.75) *
                                                          format_max(scalar, CacheFormat::same));
      // f32 and bf16 up to FLT_MAX: the kernels' fp32 sums of e_i v_i overflowed there
      // although the exact output is finite (README.md, "found by properties"); the
      // kernels now rescale on overflow.
      return mx * (0.5 + 0.5 * std::fabs(u(rng))) * (rng() % 2 ? 1 : -1);
    }
    default:
      return u(rng);
  }
}

}  // namespace

Problem build(const Spec& s) {
  test::Config c;
  c.scalar = s.scalar;
  c.cache = s.cache;
  // The kernels and the reference take the scales as float: the decoded doubles must use
  // the same values.
  c.k_scale = static_cast<float>(s.k_scale);
  c.v_scale = static_cast<float>(s.v_scale);
  c.head_size = s.head_size;
  c.block_size = s.block_size;
  c.num_heads = s.num_heads();
  c.num_kv_heads = s.num_kv_heads;
  c.seq_lens = s.seq_lens;
  c.max_seq_len = s.max_seq_len();
  c.alibi = s.alibi;
  c.partition_size = s.partition_size;
  c.seed = s.seed;
  c.spare_blocks = 2;
  if (s.logits != LogitShape::uniform) c.scale = 1.0;
  Problem p = test::make_problem(c);
  std::mt19937_64 rng(s.seed ^ 0x9e3779b97f4a7c15ULL);
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads(), D = s.head_size;

  if (s.layout == BlockLayout::repeated) {
    // Logical blocks share a small pool of physical blocks (vLLM's prefix sharing; here
    // also within one sequence). Unused table entries keep make_problem's out-of-range id.
    const int pool = std::max(1, p.num_blocks / 2);
    for (int q = 0; q < S; ++q) {
      const int nb = (s.seq_lens[q] + s.block_size - 1) / s.block_size;
      for (int b = 0; b < nb; ++b) {
        p.block_tables[static_cast<std::size_t>(q) * p.max_blocks_per_seq + b] =
            static_cast<int>(rng() % pool);
      }
    }
    recompute_used_slots(p);
  }

  if (s.logits != LogitShape::uniform) {
    // q = (1, lanes...), k = (x_t, 0, ...): the dot is x_t exactly plus lane * 0 terms
    // (signed zeros and subnormals in q meet zeros in k).
    for (int q = 0; q < S; ++q) {
      for (int h = 0; h < H; ++h) {
        set_q(p, q, h, 0, 1.0);
        for (int d = 1; d < D; ++d) {
          set_q(p, q, h, d, class_value(rng, s.q_lanes, s.scalar, CacheFormat::same, 1.0));
        }
      }
    }
    std::uniform_real_distribution<double> u(0, 1);
    for (int q = 0; q < S; ++q) {
      const int L = s.seq_lens[q];
      const int dominant = L > 0 ? static_cast<int>(rng() % L) : 0;
      std::vector<double> step(L / s.partition_size + 1);
      for (double& st : step) st = 10.0 * static_cast<double>(rng() % 8);
      for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
        for (int t = 0; t < L; ++t) {
          double x = s.offset;
          switch (s.logits) {
            case LogitShape::spread:
              x -= s.span * u(rng);
              break;
            case LogitShape::dominant:
              x += t == dominant ? s.span : 0.0;
              break;
            case LogitShape::steps:
              x += step[t / s.partition_size] + u(rng);
              break;
            default:  // ties
              break;
          }
          const auto [blk, slot] = where(p, q, t);
          set_k(p, blk, kvh, slot, 0, x);
          for (int d = 1; d < D; ++d) set_k(p, blk, kvh, slot, d, 0.0);
        }
      }
    }
  }
  if (s.v_class != ValueClass::uniform) {
    const double vs = s.cache == CacheFormat::same ? 1.0 : s.v_scale;
    for (int blk = 0; blk < p.num_blocks; ++blk) {
      for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
        for (int slot = 0; slot < s.block_size; ++slot) {
          for (int d = 0; d < D; ++d) {
            set_v(p, blk, kvh, slot, d, class_value(rng, s.v_class, s.scalar, s.cache, vs));
          }
        }
      }
    }
  }
  return p;
}

ref::Output exact(const Problem& p) {
  ref::Options o;
  o.out_dtype = p.c.scalar == DType::f32   ? ref::DType::f32
                : p.c.scalar == DType::f16 ? ref::DType::f16
                                           : ref::DType::bf16;
  return ref::reference_attention(to_ref(p), o);
}

namespace {
bound::Format to_format(DType t) {
  return t == DType::f32   ? bound::Format::f32
         : t == DType::f16 ? bound::Format::f16
                           : bound::Format::bf16;
}
bound::Format cache_format(const Problem& p) {
  return p.c.cache == CacheFormat::fp8_e4m3   ? bound::Format::fp8_e4m3
         : p.c.cache == CacheFormat::fp8_e5m2 ? bound::Format::fp8_e5m2
                                              : to_format(p.c.scalar);
}
}  // namespace

std::vector<double> element_bounds(const Problem& p, Kernel k, const ref::Output& ex,
                                   const std::string& profile) {
  static thread_local std::map<std::string, int> warp;
  if (!warp.count(profile)) warp[profile] = emu::load_profile(profile).warp_size;
  bound::KernelConfig c;
  c.scalar = to_format(p.c.scalar);
  c.cache = cache_format(p);
  c.head_size = p.c.head_size;
  c.block_size = p.c.block_size;
  c.warp_size = warp[profile];
  c.threads_per_block = kThreadsPerBlock;
  c.partition_size = k == Kernel::v2 ? p.c.partition_size : 0;
  c.exp = bound::ExpAccuracy::cuda_fast();
  Options opt;
  opt.numerics = p.c.numerics;
  opt.vllm_choices = p.c.vllm_choices;
  const NumericsChoices ch = effective_choices(opt);  // what the kernels use
  c.choices = {ch.partials_in_output_dtype, ch.epsilon_denominator, ch.round_probabilities};
  c.scale = p.c.scale;
  c.k_scale = p.c.k_scale;
  c.v_scale = p.c.v_scale;
  const int S = static_cast<int>(p.seq_lens.size()), H = p.c.num_heads, D = p.c.head_size;
  std::vector<double> out(static_cast<std::size_t>(S) * H * D, std::nan(""));
  std::vector<double> logits, qk;
  std::vector<bound::ElementMagnitudes> el(D);
  for (int s = 0; s < S; ++s) {
    const int L = p.seq_lens[s];
    for (int h = 0; h < H; ++h) {
      const int kvh = h / (H / p.c.num_kv_heads);
      const double* q = &p.q[(static_cast<std::size_t>(s) * H + h) * D];
      double sum_abs_q = 0;
      bool finite = true;
      for (int d = 0; d < D; ++d) {
        sum_abs_q += std::fabs(q[d]);
        finite = finite && std::isfinite(q[d]);
      }
      logits.assign(L, 0);
      qk.assign(L, 0);
      double max_qk = 0;
      for (int t = 0; t < L; ++t) {
        const auto [blk, slot] = where(p, s, t);
        double dot = 0, mag = 0;
        for (int d = 0; d < D; ++d) {  // products exact in double (<= 24 + 24 bits)
          const double kv = get_k(p, blk, kvh, slot, d);
          dot += q[d] * kv;
          mag += std::fabs(q[d] * kv);
        }
        logits[t] = p.c.scale * dot;
        if (p.c.alibi) logits[t] += static_cast<double>(p.alibi[h]) * (t - L + 1);
        qk[t] = std::fabs(p.c.scale) * mag;
        max_qk = std::max(max_qk, qk[t]);
        finite = finite && std::isfinite(logits[t]) && std::isfinite(qk[t]);
      }
      if (p.c.alibi) finite = finite && std::isfinite(p.alibi[h]);
      bound::RowMagnitudes row;
      bound::exact_magnitudes(
          L, D, logits.data(), qk.data(),
          [&](std::int64_t t, double* v) {
            const auto [blk, slot] = where(p, s, static_cast<int>(t));
            for (int d = 0; d < D; ++d) {
              v[d] = get_v(p, blk, kvh, slot, d);
              finite = finite && std::isfinite(v[d]);
            }
          },
          sum_abs_q, &row, el.data());
      if (!finite) continue;
      // The double dot products err by <= D 2^-53 Q_i absolutely (recursive summation of
      // exact products), which bound.h's relative 1e-12 need not cover when logits cancel
      // (and ALiBi's product and sum add 2^-52 |x|): widen gaps and |x| by that.
      const double e = 2 * D * 0x1p-53 * max_qk + 0x1p-51 * row.max_abs_logit;
      row.spread += 2 * e;
      row.p_gap += 2 * e;
      row.p_x += e;
      row.max_abs_logit += e;
      for (int d = 0; d < D; ++d) {
        bound::ElementMagnitudes m = el[d];
        // dev_gap and dev_x weigh the gaps by p_i |v_i - y|, summing to dev.
        const double w = std::max(m.dev, m.a);
        m.dev_gap += 2 * e * w;
        m.dev_x += e * w;
        const std::size_t i = (static_cast<std::size_t>(s) * H + h) * D + d;
        if (std::isfinite(ex.value[i])) m.abs_exact = std::fabs(ex.value[i]) + ex.value_err[i];
        out[i] = bound::kernel_error_bound(c, row, m).total;
      }
    }
  }
  return out;
}

Err err_over_bound(const Problem& p, const std::vector<double>& got, const ref::Output& want,
                   const std::vector<double>& bounds) {
  Err e;
  const int D = p.c.head_size;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double b = bounds[i], x = want.value[i];
    double r;
    if (std::isnan(x)) {
      r = std::isnan(got[i]) ? 0 : INFINITY;
    } else if (!std::isfinite(got[i])) {
      r = INFINITY;
    } else {
      const double diff = std::fabs(got[i] - x);
      r = diff == 0 ? 0 : (b > 0 ? diff / b : INFINITY);
    }
    if (r > e.worst || (e.where.empty() && i == 0)) {
      e.worst = std::max(e.worst, r);
      std::ostringstream os;
      os.precision(17);
      os << "row " << i / D << " d " << i % D << ": got " << got[i] << " exact " << x << " bound "
         << b;
      e.where = os.str();
    }
  }
  return e;
}

bool same_bits(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

Observation& observation() {
  static thread_local Observation o;
  return o;
}
void observe(double r, const std::string& what) {
  Observation& o = observation();
  if (r > o.worst) {
    o.worst = r;
    o.what = what;
  }
}

}  // namespace pagedattn::prop
