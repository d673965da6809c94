// The exact magnitudes of a case for kernel_error_bound, through the bound's tile API
// (bound::exact_magnitudes(KvSource, ...)): it computes the logits itself from the exact q
// and keys and bounds its own double arithmetic a priori (proofs/bound/src/magnitudes.cpp),
// so nothing here adds a margin. Each KV head's keys and values are decoded once, block by
// block, for its whole GQA group of query heads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "pagedattn_testing/judge.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace pagedattn::testing {
namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// f16 to double by the F16C conversion (exact, as the library's decoder is), 8 elements
// at a time, where the CPU has it: the magnitudes read every key once and every value twice.
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
  for (; j < count; ++j) out[j] = decode(DType::f16, src, static_cast<std::size_t>(j)) * scale;
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

// Elements [i, i + count) of a cache times `scale` (exact: a float or fp8 value times a
// float scale is exact in double) into out.
void decode_run(DType t, const std::uint8_t* bytes, std::int64_t i, std::int64_t count,
                double scale, double* out) {
  const float* table = detail::decode_table(t);
  switch (t) {
    case DType::f32:
      for (std::int64_t j = 0; j < count; ++j) {
        float f;
        std::memcpy(&f, bytes + 4 * (i + j), 4);
        out[j] = f * scale;
      }
      return;
    case DType::f16:
      if (kHasF16c) return f16_run_f16c(bytes + 2 * i, count, scale, out);
      [[fallthrough]];
    case DType::bf16:
      for (std::int64_t j = 0; j < count; ++j) {
        std::uint16_t h;
        std::memcpy(&h, bytes + 2 * (i + j), 2);
        out[j] = table[h] * scale;
      }
      return;
    default:
      for (std::int64_t j = 0; j < count; ++j) out[j] = table[bytes[i + j]] * scale;
  }
}

// Tokens [first, end) of sequence seq for the query heads h0 .. h0 + count - 1 (one KV
// head's group, or one head), into rows[0, count) and el[0, count * head_size).
void group_magnitudes(const Case& c, int seq, int h0, int count, std::int64_t first,
                      std::int64_t end, bound::RowMagnitudes* rows, bound::ElementMagnitudes* el,
                      bool* finite) {
  const int D = c.head_size, B = c.block_size;
  const KvLayout l = c.layout();
  const DType ce = c.cache_element();
  const KvHead kvh{c.kv_head_of(h0)};
  std::vector<double> q(static_cast<std::size_t>(count) * D);
  std::vector<bound::QueryRow> qr(static_cast<std::size_t>(count));
  for (int g = 0; g < count; ++g) {
    for (int d = 0; d < D; ++d) q[static_cast<std::size_t>(g) * D + d] = c.q(seq, h0 + g, d);
    qr[g].q = q.data() + static_cast<std::size_t>(g) * D;
    qr[g].alibi_slope = c.has_alibi() ? c.alibi_slopes[h0 + g] : 0.0;
  }
  // One physical block of this KV head is contiguous in both caches (kv_layout.h): decode
  // it in one run, then place each token's elements by the layout's own index.
  const std::int64_t key_run = std::int64_t{l.key_chunks()} * l.x * B,
                     value_run = std::int64_t{D} * B;
  std::vector<double> blk(static_cast<std::size_t>(std::max(key_run, value_run)));
  auto tile = [&](bool keys, std::int64_t i0, std::int64_t i1, double* out) {
    const std::uint8_t* bytes = keys ? c.key_cache.data() : c.value_cache.data();
    const double scale = keys ? c.key_scale() : c.value_scale();
    const std::int64_t t0 = first + i0, t1 = first + i1;
    for (std::int64_t b0 = t0 - t0 % B; b0 < t1; b0 += B) {
      const Block b{c.table(seq, static_cast<int>(b0 / B))};
      const std::int64_t base =
          keys ? l.key(b, kvh, Slot{0}, Dim{0}) : l.value(b, kvh, Slot{0}, Dim{0});
      decode_run(ce, bytes, base, keys ? key_run : value_run, scale, blk.data());
      for (std::int64_t t = std::max(b0, t0); t < std::min(b0 + B, t1); ++t) {
        const Slot s{static_cast<int>(t - b0)};
        double* o = out + (t - t0) * D;
        for (int d = 0; d < D; ++d)
          o[d] = blk[(keys ? l.key(b, kvh, s, Dim{d}) : l.value(b, kvh, s, Dim{d})) - base];
      }
    }
  };
  bound::KvSource kv;
  kv.n = end - first;
  kv.head_size = D;
  kv.scale = c.scale;
  kv.alibi_position0 = first - c.seq_lens[seq] + 1;  // ALiBi counts from the sequence's end
  kv.keys = [&](std::int64_t i0, std::int64_t i1, double* out) { tile(true, i0, i1, out); };
  kv.values = [&](std::int64_t i0, std::int64_t i1, double* out) { tile(false, i0, i1, out); };
  bound::exact_magnitudes(kv, qr.data(), count, rows, el, finite);
}

}  // namespace

bool row_magnitudes(const Case& c, int seq, int head, std::int64_t first, std::int64_t end,
                    bound::RowMagnitudes* row, bound::ElementMagnitudes* el) {
  bool finite = true;
  group_magnitudes(c, seq, head, 1, first, end, row, el, &finite);
  return finite;
}

Magnitudes magnitudes(const Case& c) {
  Magnitudes m;
  m.head_size = c.head_size;
  const int group = c.num_heads / c.num_kv_heads;
  const std::size_t rows = static_cast<std::size_t>(c.num_seqs) * c.num_heads;
  m.rows.resize(rows);
  m.elements.resize(rows * c.head_size);
  for (int s = 0; s < c.num_seqs; ++s) {
    for (int h0 = 0; h0 < c.num_heads; h0 += group) {
      const std::size_t r = static_cast<std::size_t>(s) * c.num_heads + h0;
      group_magnitudes(c, s, h0, group, 0, c.seq_lens[s], &m.rows[r], &m.elements[r * c.head_size],
                       nullptr);
    }
  }
  return m;
}

}  // namespace pagedattn::testing
