// Each distribution's defining property, checked on the generated tensors themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "pagedattn_audit/inputs.h"

namespace pagedattn::audit {
namespace {

CaseShape small(int seq_len = 300) {
  CaseShape s;
  s.num_seqs = 3;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.head_size = 64;
  s.block_size = 16;
  s.dtype = DType::f16;
  s.seq_len = seq_len;
  return s;
}

using testing::Case;
using testing::Dim;
using testing::KvHead;

float q_at(const Case& in, int s, int h, int d) {
  return static_cast<float>(in.q(s, h, d));
}
std::int64_t block_of(const Case& in, int s, int token) {
  return in.where(s, token).block.v;
}
float k_at(const Case& in, int s, int token, int g, int d) {
  const testing::Physical p = in.where(s, token);
  return static_cast<float>(in.key(p.block, KvHead{g}, p.slot, Dim{d}));
}
float v_at(const Case& in, int s, int token, int g, int d) {
  const testing::Physical p = in.where(s, token);
  return static_cast<float>(in.value(p.block, KvHead{g}, p.slot, Dim{d}));
}
// Element i of a cache buffer of `in`'s format.
float element(const Case& in, const std::vector<std::uint8_t>& bytes, std::int64_t i) {
  return static_cast<float>(testing::decode(in.cache_element(), bytes.data(), i));
}
// Logits of (s, h) in double (exact enough for these properties).
std::vector<double> logits(const Case& in, int s, int h) {
  const int g = h / (in.num_heads / in.num_kv_heads);
  std::vector<double> x(in.seq_lens[s]);
  for (int t = 0; t < in.seq_lens[s]; ++t) {
    double dot = 0;
    for (int d = 0; d < in.head_size; ++d) dot += double(q_at(in, s, h, d)) * k_at(in, s, t, g, d);
    x[t] = in.scale * dot;
  }
  return x;
}

TEST(Inputs, BlockTablesArePermutationsOfPhysicalBlocks) {
  const Case in = generate_inputs(small(), "vllm_uniform", 3, 2);
  std::set<int> seen;
  int used = 0;
  for (int s = 0; s < in.num_seqs; ++s) {
    for (int j = 0; j < (in.seq_lens[s] + in.block_size - 1) / in.block_size; ++j, ++used) {
      seen.insert(in.block_tables[s * in.max_blocks_per_seq + j]);
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), used);
  EXPECT_EQ(used, in.num_blocks);
  EXPECT_EQ(in.seq_lens[0], 300);
  for (int s = 0; s < in.num_seqs; ++s) EXPECT_GE(in.seq_lens[s], 1);
}

TEST(Inputs, SameBytesForAnyThreadCount) {
  for (const std::string& d : distribution_names()) {
    const Case a = generate_inputs(small(), d, 5, 1), b = generate_inputs(small(), d, 5, 3);
    EXPECT_EQ(a.key_cache, b.key_cache) << d;
    EXPECT_EQ(a.value_cache, b.value_cache) << d;
    EXPECT_EQ(a.query, b.query) << d;
  }
}

TEST(Inputs, VllmUniformStaysInRange) {
  const Case in = generate_inputs(small(), "vllm_uniform", 1, 2);
  const float r = 1 / std::sqrt(64.0f) * (1 + 1.0f / 1024);  // + f16 rounding
  for (std::size_t i = 0; i < in.value_cache.size() / 2; ++i) {
    ASSERT_LE(std::fabs(element(in, in.value_cache, i)), r);
    ASSERT_LE(std::fabs(element(in, in.key_cache, i)), r);
  }
}

TEST(Inputs, DominantTokenDominates) {
  for (DType t : {DType::f16, DType::bf16}) {
    CaseShape sh = small();
    sh.dtype = t;
    const Case in = generate_inputs(sh, "dominant", 2, 2);
    for (int s = 0; s < in.num_seqs; ++s) {
      for (int h = 0; h < in.num_heads; ++h) {
        const std::vector<double> x = logits(in, s, h);
        std::size_t top = 0;
        for (std::size_t i = 1; i < x.size(); ++i) top = x[i] > x[top] ? i : top;
        double rest = 0;
        for (std::size_t i = 0; i < x.size(); ++i) rest += i == top ? 0 : std::exp(x[i] - x[top]);
        const double weight = 1 / (1 + rest);
        EXPECT_GT(weight, 1 - 1e-12) << "seq " << s << " head " << h;
      }
    }
  }
}

TEST(Inputs, NanSitsOnlyPastSeqLen) {
  CaseShape sh = small(301);  // 301 = 18 blocks + 13 tokens: a partial last block
  const Case in = generate_inputs(sh, "nan_tail", 4, 2);
  std::vector<char> used_block(in.num_blocks, 0);
  std::int64_t nan_slots = 0;
  for (int s = 0; s < in.num_seqs; ++s) {
    const int L = in.seq_lens[s];
    const int slots = (L + in.block_size - 1) / in.block_size * in.block_size;
    for (int t = 0; t < slots; ++t) {
      used_block[block_of(in, s, t)] = 1;
      for (int g = 0; g < in.num_kv_heads; ++g) {
        for (int d = 0; d < in.head_size; ++d) {
          const bool nk = std::isnan(k_at(in, s, t, g, d)), nv = std::isnan(v_at(in, s, t, g, d));
          ASSERT_EQ(nk, t >= L) << "seq " << s << " token " << t;
          ASSERT_EQ(nv, t >= L) << "seq " << s << " token " << t;
          nan_slots += nk;
        }
      }
    }
  }
  EXPECT_GT(nan_slots, 0);
  // The spare block no table uses is all NaN.
  int spare = 0;
  for (std::int64_t b = 0; b < in.num_blocks; ++b) {
    if (used_block[b]) continue;
    ++spare;
    for (int i = 0; i < in.num_kv_heads * in.head_size; ++i) {
      const std::int64_t first =
          in.layout().value(testing::Block{b}, KvHead{0}, testing::Slot{0}, Dim{0});
      EXPECT_TRUE(std::isnan(element(in, in.value_cache, first + i)));
    }
  }
  EXPECT_EQ(spare, 1);
}

TEST(Inputs, Fp16MaxValuesAreFiniteAndNearMax) {
  const Case in = generate_inputs(small(), "fp16_max", 6, 2);
  float biggest = 0;
  for (std::size_t i = 0; i < in.value_cache.size() / 2; ++i) {
    const float v = element(in, in.value_cache, i);
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_GE(std::fabs(v), 60000.0f);
    ASSERT_LE(std::fabs(v), 65504.0f);
    biggest = std::max(biggest, std::fabs(v));
  }
  EXPECT_GE(biggest, 65000.0f);
}

TEST(Inputs, NearTiesDifferOnlyInTheLastBits) {
  const Case in = generate_inputs(small(), "near_ties", 8, 2);
  for (int h = 0; h < in.num_heads; ++h) {
    const std::vector<double> x = logits(in, 0, h);
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    EXPECT_GT(*hi - *lo, 0.0);   // not exact ties
    EXPECT_LT(*hi - *lo, 0.25);  // but within a fraction of one e-fold
  }
}

TEST(Inputs, LargeLogitsBothSigns) {
  const Case in = generate_inputs(small(), "large_logits", 9, 2);
  for (int h = 0; h < in.num_heads; ++h) {
    const std::vector<double> x = logits(in, 0, h);
    EXPECT_GT(*std::max_element(x.begin(), x.end()), 100.0);
    EXPECT_LT(*std::min_element(x.begin(), x.end()), -100.0);
  }
}

}  // namespace
}  // namespace pagedattn::audit
