#include "pagedattn_testing/uniform_case.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

namespace pagedattn::testing {
namespace {

// A random element of format `t` (size bytes) in [-range, range], stored at `index` of
// `buf`. fp8: a random finite code within the range (range >= 1 leaves plenty of codes).
// The value is not read back: filling the caches is most of a property case's setup.
void random_element(std::mt19937_64& rng, DType t, std::size_t size, const float* table, void* buf,
                    std::size_t index, double range) {
  auto* bytes = static_cast<std::uint8_t*>(buf);
  if (size > 1) {
    std::uniform_real_distribution<double> u(-range, range);
    const std::uint32_t bits = encode(t, static_cast<float>(u(rng)));
    std::memcpy(bytes + size * index, &bits, size);  // little-endian host, as store()
    return;
  }
  for (;;) {
    bytes[index] = static_cast<std::uint8_t>(rng());
    const double v = table[bytes[index]];
    if (std::isfinite(v) && std::fabs(v) <= range) return;
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
  std::mt19937_64 rng(spec.seed);

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
  const float* qt = detail::decode_table(c.scalar);
  for (std::size_t i = 0; i < qn; ++i)
    random_element(rng, c.scalar, qs, qt, c.query.data(), i, spec.q_range);
  // Key and value elements drawn in token-major order, each pair together.
  const KvLayout l = c.layout();
  const DType ce = c.cache_element();
  const std::size_t es = traits(ce).size;
  const float* ct = detail::decode_table(ce);
  for (std::int64_t b = 0; b < c.num_blocks; ++b) {
    for (int h = 0; h < c.num_kv_heads; ++h) {
      for (int slot = 0; slot < B; ++slot) {
        for (int d = 0; d < c.head_size; ++d) {
          const Block blk{b};
          const KvHead kvh{h};
          const Slot sl{slot};
          const Dim dim{d};
          random_element(rng, ce, es, ct, c.key_cache.data(),
                         static_cast<std::size_t>(l.key(blk, kvh, sl, dim)), spec.k_range);
          random_element(rng, ce, es, ct, c.value_cache.data(),
                         static_cast<std::size_t>(l.value(blk, kvh, sl, dim)), spec.v_range);
        }
      }
    }
  }
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
