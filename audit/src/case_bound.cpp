// Exact magnitudes of the audit's inputs for kernel_error_bound, and the per-element bounds.
#include "case_bound.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

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

// Element decoders by table, built once from the project's own conversions (dtypes.h):
// the bound's passes read every key and value twice or three times.
#if defined(__x86_64__) && defined(__GNUC__)
// f16 to double by the F16C conversion (exact, as the table is), 8 elements at a time,
// where the CPU has it: the bound reads every key once and every value twice.
__attribute__((target("f16c,avx"))) void f16_run_f16c(const std::uint8_t* src, std::int64_t count,
                                                      double scale, double* out) {
  const __m256d s = _mm256_set1_pd(scale);
  std::int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const __m256 f =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j)));
    _mm256_storeu_pd(out + j, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(f)), s));
    _mm256_storeu_pd(out + j + 4, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)), s));
  }
  for (; j < count; ++j) {
    std::uint16_t h;
    std::memcpy(&h, src + 2 * j, 2);
    out[j] = f16_bits_to_float(h) * scale;
  }
}
bool has_f16c() {
  unsigned a, b, c, d;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
const bool kHasF16c = has_f16c();
#else
constexpr bool kHasF16c = false;
void f16_run_f16c(const std::uint8_t*, std::int64_t, double, double*) {}
#endif

struct Decoder {
  DType t;
  const std::uint8_t* bytes;
  const float* table;  // f16, bf16 (65,536 entries), fp8 (256); null for f32
  double operator()(std::int64_t i) const {
    double v;
    run(i, 1, 1.0, &v);
    return v;
  }
  // Elements [i, i + count) times scale (exact: an fp8 value times a float) into out.
  void run(std::int64_t i, std::int64_t count, double scale, double* out) const {
    switch (t) {
      case DType::f32:
        for (std::int64_t j = 0; j < count; ++j) {
          float f;
          std::memcpy(&f, bytes + 4 * (i + j), 4);
          out[j] = f * scale;
        }
        break;
      case DType::f16:
        if (kHasF16c) {
          f16_run_f16c(bytes + 2 * i, count, scale, out);
          break;
        }
        [[fallthrough]];
      case DType::bf16:
        for (std::int64_t j = 0; j < count; ++j) {
          std::uint16_t h;
          std::memcpy(&h, bytes + 2 * (i + j), 2);
          out[j] = table[h] * scale;
        }
        break;
      default:
        for (std::int64_t j = 0; j < count; ++j) out[j] = table[bytes[i + j]] * scale;
    }
  }
};

const float* decode_table(DType t) {
  static const std::vector<float> f16 = [] {
    std::vector<float> v(65536);
    for (std::uint32_t h = 0; h < 65536; ++h)
      v[h] = f16_bits_to_float(static_cast<std::uint16_t>(h));
    return v;
  }();
  static const std::vector<float> bf16 = [] {
    std::vector<float> v(65536);
    for (std::uint32_t h = 0; h < 65536; ++h)
      v[h] = bf16_bits_to_float(static_cast<std::uint16_t>(h));
    return v;
  }();
  static const std::vector<float> e4m3 = [] {
    std::vector<float> v(256);
    for (int b = 0; b < 256; ++b) v[b] = fp8_e4m3_to_float(static_cast<std::uint8_t>(b));
    return v;
  }();
  static const std::vector<float> e5m2 = [] {
    std::vector<float> v(256);
    for (int b = 0; b < 256; ++b) v[b] = fp8_e5m2_to_float(static_cast<std::uint8_t>(b));
    return v;
  }();
  switch (t) {
    case DType::f16:
      return f16.data();
    case DType::bf16:
      return bf16.data();
    case DType::fp8_e4m3:
      return e4m3.data();
    case DType::fp8_e5m2:
      return e5m2.data();
    default:
      return nullptr;
  }
}

Decoder decoder(DType t, const std::vector<std::uint8_t>& bytes) {
  return Decoder{t, bytes.data(), decode_table(t)};
}

}  // namespace

BoundInputs bound_inputs(const Inputs& in) {
  const int S = in.num_seqs, H = in.num_heads, D = in.head_size, B = in.block_size,
            KVH = in.num_kv_heads, group = H / KVH;
  const bool fp8 = in.cache != CacheFormat::same;
  const DType ce = cache_elem_format(in);
  // Dequantized elements: an fp8 value times a float scale is exact in double.
  const double ks = fp8 ? in.k_scale : 1.0, vs = fp8 ? in.v_scale : 1.0;
  const Decoder qd = decoder(in.dtype, in.query), kd = decoder(ce, in.key_cache),
                vd = decoder(ce, in.value_cache);
  const int x = 16 / static_cast<int>(dtype_size(in.cache_elem()));  // key chunk (vLLM's x)
  BoundInputs bi;
  bi.rows.resize(static_cast<std::size_t>(S) * H);
  bi.elements.resize(static_cast<std::size_t>(S) * H * D);
  std::vector<double> q(static_cast<std::size_t>(group) * D);
  std::vector<bound::QueryRow> rows(group);
  for (int s = 0; s < S; ++s) {
    const std::int64_t n = in.seq_lens[s];
    const std::int32_t* table = in.block_tables.data() + std::int64_t{s} * in.max_blocks_per_seq;
    for (int kvh = 0; kvh < KVH; ++kvh) {
      for (int g = 0; g < group; ++g) {
        const int h = kvh * group + g;
        for (int d = 0; d < D; ++d) q[g * D + d] = qd((std::int64_t{s} * H + h) * D + d);
        rows[g].q = q.data() + g * D;
        rows[g].alibi_slope = in.alibi_slopes.empty() ? 0.0 : in.alibi_slopes[h];
      }
      // A block's D x B elements of one KV head are contiguous: keys as [D / x][B][x] (vLLM's
      // chunks of x elements per slot), values as [D][B]. Each block of the tile is decoded
      // in one run, then its slots are written token-major.
      bound::KvSource kv;
      kv.n = n;
      kv.head_size = D;
      kv.scale = in.scale;
      kv.alibi_position0 = 1 - n;
      std::vector<double> blk(static_cast<std::size_t>(D) * B);
      auto tile = [&](const Decoder& dec, double scale, bool keys, std::int64_t i0, std::int64_t i1,
                      double* out) {
        for (std::int64_t b0 = i0 - i0 % B; b0 < i1; b0 += B) {
          dec.run((std::int64_t{table[b0 / B]} * KVH + kvh) * D * B, std::int64_t{D} * B, scale,
                  blk.data());
          for (std::int64_t i = std::max(b0, i0); i < std::min(b0 + B, i1); ++i) {
            const int slot = static_cast<int>(i - b0);
            double* o = out + (i - i0) * D;
            if (keys) {
              for (int c = 0; c < D / x; ++c)
                for (int j = 0; j < x; ++j) o[c * x + j] = blk[(c * B + slot) * x + j];
            } else {
              for (int d = 0; d < D; ++d) o[d] = blk[d * B + slot];
            }
          }
        }
      };
      kv.keys = [&](std::int64_t i0, std::int64_t i1, double* out) {
        tile(kd, ks, true, i0, i1, out);
      };
      kv.values = [&](std::int64_t i0, std::int64_t i1, double* out) {
        tile(vd, vs, false, i0, i1, out);
      };
      const std::size_t r0 =
          static_cast<std::size_t>(s) * H + static_cast<std::size_t>(kvh) * group;
      bound::exact_magnitudes(kv, rows.data(), group, bi.rows.data() + r0,
                              bi.elements.data() + r0 * D, nullptr);
      // Rows with a non-finite input come back with spread = NaN (nothing to bound).
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
    const bound::RowBound rb = bound::row_bound(c, bi.rows[r]);
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t j = r * D + d;
      bound::ElementMagnitudes el = bi.elements[j];
      // |y| <= |exact| + exact_err (rounded up), and the magnitudes' own bound of |y|.
      if (std::isfinite(exact[j]))
        el.abs_exact = std::min(el.abs_exact, bound::add_up(std::fabs(exact[j]), exact_err[j]));
      out[j] = bound::element_bound(rb, el).total;
    }
  }
  return out;
}

}  // namespace pagedattn::audit
