// The case: the kernels' AttentionCall and the exact reference's ref::Problem view the
// same bytes with the same shape; element access and setters go through the one layout;
// case_of() reads strided tensors back into the same case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>

#include "pagedattn/validate.h"
#include "pagedattn_testing/case.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::testing {
namespace {

UniformSpec spec(DType t, CacheFormat cache) {
  UniformSpec s;
  s.scalar = t;
  s.cache = cache;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.seq_lens = {20, 33};
  s.alibi = true;
  s.k_scale = 0.5;
  s.v_scale = 2;
  return s;
}

TEST(Case, CallAndExactProblemViewTheSameBytes) {
  for (CacheFormat cache : {CacheFormat::same, CacheFormat::fp8_e5m2}) {
    const Case c = uniform_case(spec(DType::f16, cache));
    const AttentionCall a = c.call();
    const ref::Problem p = c.exact_problem();
    EXPECT_EQ(a.query.data, p.query);
    EXPECT_EQ(a.key_cache.data, p.key_cache);
    EXPECT_EQ(a.value_cache.data, p.value_cache);
    EXPECT_EQ(a.block_tables.data, static_cast<const void*>(p.block_tables));
    EXPECT_EQ(a.seq_lens.data, static_cast<const void*>(p.seq_lens));
    EXPECT_EQ(a.alibi_slopes.data, static_cast<const void*>(p.alibi_slopes));
    EXPECT_EQ(a.key_cache.dtype, c.cache_storage());
    EXPECT_EQ(p.cache_dtype, traits(c.cache_element()).ref);
    EXPECT_EQ(a.key_cache.shape[0], p.num_blocks);
    EXPECT_EQ(a.key_cache.shape[1], p.num_kv_heads);
    EXPECT_EQ(a.key_cache.shape[3], p.block_size);
    EXPECT_EQ(a.key_cache.numel() * static_cast<std::int64_t>(traits(c.cache_element()).size),
              static_cast<std::int64_t>(c.key_cache.size()));
    EXPECT_EQ(a.kv_cache_dtype, kv_cache_dtype(cache));
    EXPECT_EQ(a.k_scale, p.k_scale);
    EXPECT_EQ(a.scale, p.scale);
  }
}

// The reference reads float scales: a case whose scale is not one is refused rather than
// judged against a different number than the kernels saw.
TEST(Case, ExactProblemRefusesANonFloatScale) {
  Case c = uniform_case(spec(DType::f32, CacheFormat::same));
  c.scale = 0.1;
  EXPECT_THROW(c.exact_problem(), std::invalid_argument);
  c.scale = float_value(0.1);
  EXPECT_NO_THROW(c.exact_problem());
}

TEST(Case, SettersRoundToTheFormatAndDequantize) {
  Case c = uniform_case(spec(DType::f16, CacheFormat::fp8_e4m3));
  const Physical p = c.where(1, 21);
  // k_scale 0.5: 3.0 is stored as the E4M3 code of 6, and reads back as 3.
  EXPECT_EQ(c.set_key(p.block, KvHead{1}, p.slot, Dim{9}, 3.0), 3.0);
  EXPECT_EQ(c.key(p.block, KvHead{1}, p.slot, Dim{9}), 3.0);
  const std::int64_t at = c.layout().key(p.block, KvHead{1}, p.slot, Dim{9});
  EXPECT_EQ(decode(DType::fp8_e4m3, c.key_cache.data(), static_cast<std::size_t>(at)), 6.0);
  EXPECT_EQ(c.set_value(p.block, KvHead{0}, p.slot, Dim{0}, 1e9), 448.0 * 2);  // saturates
  EXPECT_EQ(c.set_q(0, 3, 1, 1.0 + 0x1p-12), 1.0);                             // f16 rounding
  EXPECT_EQ(c.q(0, 3, 1), 1.0);
  // Token 21 of sequence 1 is live; its slot is marked used, the padding block is not.
  const std::vector<char> used = c.used_slots();
  EXPECT_TRUE(used[static_cast<std::size_t>(p.block.v) * c.block_size + p.slot.v]);
  std::size_t n = 0;
  for (char u : used) n += u;
  EXPECT_EQ(n, 20u + 33u);
}

// The bulk setters store the bytes the element setters store, at the same places, for
// every element format (an fp8 scale that does not divide exactly, values that round,
// saturate, overflow, underflow and NaN). Caught: dividing by the scale in float, a
// value block read d-major, a token's keys written to the wrong chunk.
TEST(Case, BulkSettersStoreWhatTheElementSettersStore) {
  const DType scalars[] = {DType::f32, DType::f16, DType::bf16};
  const CacheFormat caches[] = {CacheFormat::same, CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2};
  std::mt19937_64 rng(5);
  for (DType t : scalars) {
    for (CacheFormat cache : caches) {
      UniformSpec sp = spec(t, cache);
      sp.k_scale = 0.3;  // 0.3f: want / k_scale rounds in double before float
      sp.v_scale = 3;
      const Case base = uniform_case(sp);
      Case bulk = base, each = base;
      const int B = base.block_size, D = base.head_size;
      std::vector<double> want(static_cast<std::size_t>(B) * D);
      for (std::size_t i = 0; i < want.size(); ++i) {
        switch (rng() % 6) {
          case 0:
            want[i] = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), -140);
            break;
          case 1:
            want[i] = (rng() % 2 ? 1 : -1) * 1e39;  // past FLT_MAX
            break;
          case 2:
            want[i] = NAN;
            break;
          default:
            want[i] = std::uniform_real_distribution<double>(-500, 500)(rng);
        }
      }
      const Block b{base.num_blocks - 1};
      for (int h = 0; h < base.num_kv_heads; ++h) {
        bulk.set_value_block(b, KvHead{h}, want.data());
        for (int s = 0; s < B; ++s) {
          bulk.set_key_token(b, KvHead{h}, Slot{s}, &want[static_cast<std::size_t>(s) * D]);
          for (int d = 0; d < D; ++d) {
            const double w = want[static_cast<std::size_t>(s) * D + d];
            each.set_value(b, KvHead{h}, Slot{s}, Dim{d}, w);
            each.set_key(b, KvHead{h}, Slot{s}, Dim{d}, w);
          }
        }
      }
      EXPECT_EQ(bulk.key_cache, each.key_cache) << dtype_name(t) << " " << int(cache);
      EXPECT_EQ(bulk.value_cache, each.value_cache) << dtype_name(t) << " " << int(cache);
      EXPECT_NE(bulk.value_cache, base.value_cache);
    }
  }
}

// case_of reads a call's tensors through their strides: padded query rows, padded cache
// blocks, a padded block table; the case it gives holds the same bytes as the original.
TEST(Case, CaseOfReadsStridedTensors) {
  for (CacheFormat cache : {CacheFormat::same, CacheFormat::fp8_e4m3}) {
    const Case c = uniform_case(spec(DType::bf16, cache));
    const std::int64_t S = c.num_seqs, H = c.num_heads, D = c.head_size, NB = c.num_blocks;
    const std::size_t qs = traits(c.scalar).size, es = traits(c.cache_element()).size;
    const std::int64_t q_row = H * D + 5, block = c.layout().value_block_elements() + 16;
    std::vector<std::uint8_t> q(S * q_row * qs, 0xee), k(NB * block * es, 0xee),
        v(NB * block * es, 0xee);
    for (int s = 0; s < S; ++s)
      std::memcpy(&q[s * q_row * qs], &c.query[s * H * D * qs], H * D * qs);
    const std::size_t blk = static_cast<std::size_t>(c.layout().value_block_elements()) * es;
    for (std::int64_t b = 0; b < NB; ++b) {
      std::memcpy(&k[b * block * es], &c.key_cache[b * blk], blk);
      std::memcpy(&v[b * block * es], &c.value_cache[b * blk], blk);
    }
    const std::int64_t M = c.max_blocks_per_seq, KVH = c.num_kv_heads, B = c.block_size,
                       x = c.layout().x;
    std::vector<std::int32_t> bt(S * (M + 2), -7);
    for (int s = 0; s < S; ++s) std::memcpy(&bt[s * (M + 2)], &c.block_tables[s * M], M * 4);
    AttentionCall a = c.call();
    a.query = TensorView::strided(q.data(), c.scalar, {S, H, D}, {q_row, D, 1});
    const std::int64_t head = D * B;
    a.key_cache = TensorView::strided(k.data(), c.cache_storage(), {NB, KVH, D / x, B, x},
                                      {block, head, B * x, x, 1});
    a.value_cache =
        TensorView::strided(v.data(), c.cache_storage(), {NB, KVH, D, B}, {block, head, B, 1});
    a.block_tables = TensorView::strided(bt.data(), DType::i32, {S, M}, {M + 2, 1});
    const Case back = case_of(a);
    EXPECT_EQ(back.query, c.query);
    EXPECT_EQ(back.key_cache, c.key_cache);
    EXPECT_EQ(back.value_cache, c.value_cache);
    EXPECT_EQ(back.block_tables, c.block_tables);
    EXPECT_EQ(back.seq_lens, c.seq_lens);
    EXPECT_EQ(back.alibi_slopes, c.alibi_slopes);
    EXPECT_EQ(back.k_scale, c.k_scale);
    EXPECT_EQ(back.cache, c.cache);
    EXPECT_EQ(back.max_seq_len, c.max_seq_len);
  }
}

// The judge reads every live slot through the block table, so case_of applies the index
// rules too: an id out of range is refused by name, before anything is read.
TEST(Case, CaseOfRefusesABlockIdOutOfRange) {
  Case c = uniform_case(spec(DType::f32, CacheFormat::same));
  c.table(1, 0) = static_cast<std::int32_t>(c.num_blocks);
  try {
    case_of(c.call());
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_tables[1][0]"), std::string::npos) << e.what();
  }
}

// uniform_case's draw defined one element at a time: the block shuffle, then each query
// element, then per (block, KV head, slot, dim) the key element and then the value element,
// each a uniform double in [-range, range] rounded to float and encoded (fp8: random codes
// until one is finite and within the range). uniform_case fills the caches a (block, KV
// head) region at a time for speed; this holds it to the draw above, bit for bit.
std::vector<std::uint8_t> element_bytes(std::mt19937_64& rng, DType t, double range) {
  const std::size_t size = traits(t).size;
  std::vector<std::uint8_t> b(size);
  if (size > 1) {
    std::uniform_real_distribution<double> u(-range, range);
    const std::uint32_t bits = encode(t, static_cast<float>(u(rng)));
    std::memcpy(b.data(), &bits, size);
    return b;
  }
  for (;;) {
    b[0] = static_cast<std::uint8_t>(rng());
    const double v = detail::decode_table(t)[b[0]];
    if (std::isfinite(v) && std::fabs(v) <= range) return b;
  }
}

Case elementwise_draw(const UniformSpec& s) {
  Case c = uniform_case(s);  // the shapes and tables; every query and cache byte redrawn
  std::fill(c.query.begin(), c.query.end(), 0xAB);
  std::fill(c.key_cache.begin(), c.key_cache.end(), 0xAB);
  std::fill(c.value_cache.begin(), c.value_cache.end(), 0xAB);
  std::mt19937_64 rng(s.seed);
  std::vector<int> ids(static_cast<std::size_t>(c.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const std::size_t qs = traits(c.scalar).size;
  for (std::size_t i = 0; i < c.query.size() / qs; ++i) {
    const auto b = element_bytes(rng, c.scalar, s.q_range);
    std::memcpy(&c.query[i * qs], b.data(), qs);
  }
  const KvLayout l = c.layout();
  const DType ce = c.cache_element();
  const std::size_t es = traits(ce).size;
  for (std::int64_t blk = 0; blk < c.num_blocks; ++blk)
    for (int h = 0; h < c.num_kv_heads; ++h)
      for (int slot = 0; slot < c.block_size; ++slot)
        for (int d = 0; d < c.head_size; ++d) {
          const auto k = element_bytes(rng, ce, s.k_range);
          const auto v = element_bytes(rng, ce, s.v_range);
          std::memcpy(&c.key_cache[l.key(Block{blk}, KvHead{h}, Slot{slot}, Dim{d}) * es], k.data(),
                      es);
          std::memcpy(&c.value_cache[l.value(Block{blk}, KvHead{h}, Slot{slot}, Dim{d}) * es],
                      v.data(), es);
        }
  return c;
}

TEST(Case, FastFillIsTheElementwiseDraw) {
  struct Shape {
    int head_size, block_size;
  };
  std::uint64_t seed = 7;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (CacheFormat cache : {CacheFormat::same, CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2}) {
      for (Shape sh : {Shape{64, 16}, Shape{80, 8}, Shape{128, 32}}) {
        UniformSpec s = spec(t, cache);
        s.head_size = sh.head_size;
        s.block_size = sh.block_size;
        s.k_range = 1.5;  // keys and values from different ranges: a swap shows
        s.v_range = 3.0;
        s.seed = seed++;
        const Case fast = uniform_case(s), slow = elementwise_draw(s);
        SCOPED_TRACE(::testing::Message() << "seed " << s.seed << " head " << sh.head_size);
        EXPECT_EQ(fast.query, slow.query);
        EXPECT_EQ(fast.key_cache, slow.key_cache);
        EXPECT_EQ(fast.value_cache, slow.value_cache);
      }
    }
  }
}

}  // namespace
}  // namespace pagedattn::testing
