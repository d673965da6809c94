#include "pagedattn_testing/uniform_case.h"

#include "pagedattn_testing/mt19937_64.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

namespace pagedattn::testing {
namespace {

// A random element of the 2- or 4-byte format `t` in [-range, range], stored at `index`
// of `buf` (the query; the caches, fp8 included, are drawn by fill_kv).
void random_element(Mt19937_64& rng, DType t, std::size_t size, void* buf, std::size_t index,
                    double range) {
  const std::uint32_t bits = encode(t, static_cast<float>(uniform_real(rng, -range, range)));
  std::memcpy(static_cast<std::uint8_t*>(buf) + size * index, &bits, size);  // little-endian
}

// Element bytes of `bytes` (each `size` bytes, consecutive) stored at base + off[i] elements.
void scatter(const std::uint8_t* bytes, std::size_t size, const std::int64_t* off, std::size_t n,
             std::int64_t base, std::uint8_t* out) {
  switch (size) {
    case 4:
      for (std::size_t i = 0; i < n; ++i) std::memcpy(out + (base + off[i]) * 4, bytes + i * 4, 4);
      return;
    case 2:
      for (std::size_t i = 0; i < n; ++i) std::memcpy(out + (base + off[i]) * 2, bytes + i * 2, 2);
      return;
    default:
      for (std::size_t i = 0; i < n; ++i) out[base + off[i]] = bytes[i];
      return;
  }
}

// The key and value caches, one element at a time in token-major order with each key
// element before its value element: a uniform double in the range rounded to float and
// encoded, or for fp8 random codes until one is finite and within the range (test
// Case.FastFillIsTheElementwiseDraw holds this fill to that element-by-element draw, bit
// for bit). One (block, KV head) at a
// time: its B x D pairs drawn into a buffer, encoded by encode_run (the format's encoder
// without a per-element call), then stored at the layouts' offsets, which differ from
// block to block and head to head only by the region's first element.
void fill_kv(Case& c, const UniformSpec& spec, Mt19937_64& rng) {
  const KvLayout l = c.layout();
  const DType ce = c.cache_element();
  const std::size_t es = traits(ce).size;
  const float* ct = detail::decode_table(ce);
  const int B = c.block_size, D = c.head_size;
  const std::size_t n = static_cast<std::size_t>(B) * static_cast<std::size_t>(D);
  std::vector<std::int64_t> koff(n), voff(n);
  for (int slot = 0; slot < B; ++slot) {
    for (int d = 0; d < D; ++d) {
      const std::size_t i = static_cast<std::size_t>(slot) * D + d;
      koff[i] = l.key(Block{0}, KvHead{0}, Slot{slot}, Dim{d});
      voff[i] = l.value(Block{0}, KvHead{0}, Slot{slot}, Dim{d});
    }
  }
  std::vector<float> kf(n), vf(n);
  std::vector<std::uint8_t> kb(n * es), vb(n * es);
  bool k_ok[256] = {}, v_ok[256] = {};  // fp8: the codes accepted, tested once per code
  if (es == 1) {
    for (int code = 0; code < 256; ++code) {
      const double v = ct[code];
      k_ok[code] = std::isfinite(v) && std::fabs(v) <= spec.k_range;
      v_ok[code] = std::isfinite(v) && std::fabs(v) <= spec.v_range;
    }
  }
  for (std::int64_t b = 0; b < c.num_blocks; ++b) {
    for (int h = 0; h < c.num_kv_heads; ++h) {
      if (es > 1) {
        for (std::size_t i = 0; i < n; ++i) {
          kf[i] = static_cast<float>(uniform_real(rng, -spec.k_range, spec.k_range));
          vf[i] = static_cast<float>(uniform_real(rng, -spec.v_range, spec.v_range));
        }
        encode_run(ce, kf.data(), n, kb.data());
        encode_run(ce, vf.data(), n, vb.data());
      } else {  // fp8: random codes until one is finite and within the range
        for (std::size_t i = 0; i < n; ++i) {
          do kb[i] = static_cast<std::uint8_t>(rng());
          while (!k_ok[kb[i]]);
          do vb[i] = static_cast<std::uint8_t>(rng());
          while (!v_ok[vb[i]]);
        }
      }
      scatter(kb.data(), es, koff.data(), n, l.key(Block{b}, KvHead{h}, Slot{0}, Dim{0}),
              c.key_cache.data());
      scatter(vb.data(), es, voff.data(), n, l.value(Block{b}, KvHead{h}, Slot{0}, Dim{0}),
              c.value_cache.data());
    }
  }
}

}  // namespace

Case uniform_case(const UniformSpec& spec) {
  Case c;
  c.scalar = spec.scalar;
  c.cache = spec.cache;
  c.num_seqs = static_cast<int>(spec.seq_lens.size());
  c.num_heads = spec.num_heads;
  c.num_kv_heads = spec.num_kv_heads;
  c.head_size = spec.head_size;
  c.block_size = spec.block_size;
  c.scale = float_value(spec.scale < 0 ? 2.0 / std::sqrt(double(spec.head_size)) : spec.scale);
  // vLLM ignores the scales of a cache of the query's type.
  c.k_scale = spec.cache == CacheFormat::same ? 1.0 : float_value(spec.k_scale);
  c.v_scale = spec.cache == CacheFormat::same ? 1.0 : float_value(spec.v_scale);
  const int B = spec.block_size, S = c.num_seqs;
  c.max_seq_len = spec.max_seq_len >= 0
                      ? spec.max_seq_len
                      : *std::max_element(spec.seq_lens.begin(), spec.seq_lens.end());
  int used_blocks = 0, max_blocks = 0;
  for (int L : spec.seq_lens) {
    max_blocks = std::max(max_blocks, (L + B - 1) / B);
    used_blocks += (L + B - 1) / B;
  }
  c.max_blocks_per_seq = std::max(max_blocks, 1) + (spec.tight_table ? 0 : 1);
  c.num_blocks = used_blocks + spec.spare_blocks;
  c.allocate();
  Mt19937_64 rng(spec.seed);  // std::mt19937_64's stream (mt19937_64.h), faster

  // Physical blocks in random order; unused table entries far out of range.
  std::vector<int> ids(static_cast<std::size_t>(c.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::fill(c.block_tables.begin(), c.block_tables.end(), 1 << 28);
  int next = 0;
  for (int s = 0; s < S; ++s) {
    c.seq_lens[s] = spec.seq_lens[s];
    for (int j = 0; j < (spec.seq_lens[s] + B - 1) / B; ++j) c.table(s, j) = ids[next++];
  }

  const std::size_t qs = traits(c.scalar).size, qn = c.query.size() / qs;
  for (std::size_t i = 0; i < qn; ++i)
    random_element(rng, c.scalar, qs, c.query.data(), i, spec.q_range);
  fill_kv(c, spec, rng);
  if (spec.alibi) {
    for (int h = 0; h < c.num_heads; ++h) {
      c.alibi_slopes.push_back(std::ldexp(1.0f, -(8 * (h + 1)) / c.num_heads));
    }
  }
  return c;
}

void fill_unused_slots(Case& c, bool nan) {
  const std::vector<char> used = c.used_slots();
  const KvLayout l = c.layout();
  const DType ce = c.cache_element();
  const std::size_t es = traits(ce).size;
  const std::uint32_t bits = encode(ce, nan ? NAN : 0.0);  // the same element everywhere
  for (std::int64_t b = 0; b < c.num_blocks; ++b) {
    for (int slot = 0; slot < c.block_size; ++slot) {
      if (used[static_cast<std::size_t>(b) * c.block_size + slot]) continue;
      for (int h = 0; h < c.num_kv_heads; ++h) {
        for (int d = 0; d < c.head_size; ++d) {
          const Block blk{b};
          std::memcpy(&c.key_cache[l.key(blk, KvHead{h}, Slot{slot}, Dim{d}) * es], &bits, es);
          std::memcpy(&c.value_cache[l.value(blk, KvHead{h}, Slot{slot}, Dim{d}) * es], &bits, es);
        }
      }
    }
  }
}

double set_live(Case& c, Element e, int seq, int index, int kv_head, int d, double value) {
  if (e == Element::query) return c.set_q(seq, index, d, value);
  const Physical p = c.where(seq, index);
  return e == Element::key ? c.set_key(p.block, KvHead{kv_head}, p.slot, Dim{d}, value)
                           : c.set_value(p.block, KvHead{kv_head}, p.slot, Dim{d}, value);
}

}  // namespace pagedattn::testing
