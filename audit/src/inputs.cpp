// Input generators. Every cache element is drawn from a stream named by (tensor, physical
// block), so filling blocks in parallel gives the same bytes for any thread count.
#include "pagedattn_audit/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "pagedattn_audit/aligned_rounding.h"

#include "cache_steps.h"
#include "parallel_for.h"
#include "rng.h"

namespace pagedattn::audit {
namespace {

enum class Dist {
  vllm_uniform,
  normal,
  dominant,
  near_ties,
  large_logits,
  nan_tail,
  fp16_max,
  aligned_rounding
};

Dist parse_dist(const std::string& name) {
  const auto& names = distribution_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Dist>(i);
  }
  throw std::invalid_argument("unknown distribution '" + name + "'");
}

enum Tag : std::uint64_t { kQuery = 1, kKey, kValue, kLens, kPerm, kDominant, kBase, kLogit };

using testing::Block;
using testing::Dim;
using testing::KvHead;
using testing::Slot;

void store(std::vector<std::uint8_t>& bytes, DType t, std::int64_t i, float v) {
  const std::uint32_t bits = testing::encode(t, v);
  std::memcpy(bytes.data() + i * testing::traits(t).size, &bits, testing::traits(t).size);
}

}  // namespace

const std::vector<std::string>& distribution_names() {
  static const std::vector<std::string> names = {"vllm_uniform", "normal",          "dominant",
                                                 "near_ties",    "large_logits",    "nan_tail",
                                                 "fp16_max",     "aligned_rounding"};
  return names;
}

bool depends_on_warp(const std::string& distribution) {
  return parse_dist(distribution) == Dist::aligned_rounding;
}

testing::Case generate_inputs(const CaseShape& sh, const std::string& distribution,
                              std::uint64_t seed, int threads) {
  const Dist dist = parse_dist(distribution);
  testing::Case in;
  in.num_seqs = sh.num_seqs;
  in.num_heads = sh.num_heads;
  in.num_kv_heads = sh.num_kv_heads;
  in.head_size = sh.head_size;
  in.block_size = sh.block_size;
  in.scalar = sh.dtype;
  in.cache = sh.cache;
  in.scale = testing::float_value(1.0 / std::sqrt(static_cast<double>(sh.head_size)));
  const int S = sh.num_seqs, H = sh.num_heads, KVH = sh.num_kv_heads, D = sh.head_size,
            B = sh.block_size;
  const float r = static_cast<float>(in.scale);  // vLLM's test range: +-head_size^-0.5

  // Lengths: sequence 0 has the longest; the others are seeded in [1, seq_len].
  std::vector<std::int32_t> lens(S);
  for (int s = 0; s < S; ++s) {
    lens[s] = s == 0 ? sh.seq_len : 1 + static_cast<int>(Rng(seed, kLens, s).below(sh.seq_len));
    in.max_seq_len = std::max<std::int64_t>(in.max_seq_len, lens[s]);
  }

  // Block tables: a seeded permutation of the physical blocks, so the gather is exercised;
  // nan_tail adds one spare block no table points to.
  std::vector<int> nblocks(S);
  std::int64_t total = 0;
  for (int s = 0; s < S; ++s) {
    nblocks[s] = (lens[s] + B - 1) / B;
    in.max_blocks_per_seq = std::max(in.max_blocks_per_seq, nblocks[s]);
    total += nblocks[s];
  }
  in.max_blocks_per_seq = std::max(in.max_blocks_per_seq, 1);
  in.num_blocks = total + (dist == Dist::nan_tail ? 1 : 0);
  in.allocate();
  in.seq_lens = lens;
  std::vector<std::int32_t> perm(total);
  for (std::int64_t i = 0; i < total; ++i) perm[i] = static_cast<std::int32_t>(i);
  Rng prng(seed, kPerm);
  for (std::int64_t i = total - 1; i > 0; --i) std::swap(perm[i], perm[prng.below(i + 1)]);
  // Inverse map: physical block -> (sequence, first token), -1 for the spare block.
  std::vector<int> owner(in.num_blocks, -1);
  std::vector<std::int64_t> first_token(in.num_blocks, 0);
  for (int s = 0, next = 0; s < S; ++s) {
    for (int j = 0; j < nblocks[s]; ++j, ++next) {
      const std::int32_t id = perm[next];
      in.table(s, j) = id;
      owner[id] = s;
      first_token[id] = static_cast<std::int64_t>(j) * B;
    }
  }

  if (sh.alibi) {
    in.alibi_slopes.resize(H);  // vLLM's slopes 2^(-8 (h + 1) / H)
    for (int h = 0; h < H; ++h) in.alibi_slopes[h] = std::exp2(-8.0f * (h + 1) / H);
  }

  // aligned_rounding builds every row from the kernel's own summation order: its own file.
  if (dist == Dist::aligned_rounding) {
    fill_aligned_rounding(in, sh.warp_size, seed, threads);
    return in;
  }

  // Queries. dominant and large_logits use positive queries so that a key of equal
  // elements gives a logit of known sign and size.
  const bool positive_q = dist == Dist::dominant || dist == Dist::large_logits;
  for (int s = 0; s < S; ++s) {
    for (int h = 0; h < H; ++h) {
      Rng rng(seed, kQuery, s, h);
      for (int d = 0; d < D; ++d) {
        float v;
        if (positive_q) {
          v = rng.uniform(0.5f, 1.0f);
        } else if (dist == Dist::normal) {
          v = static_cast<float>(2 * rng.normal());
        } else if (dist == Dist::near_ties) {
          v = rng.uniform(-4.0f, 4.0f);
        } else {
          v = rng.uniform(-r, r);
        }
        store(in.query, sh.dtype, static_cast<std::int64_t>(in.q_index(s, h, d)), v);
      }
    }
  }

  // Per-sequence structure: the dominant token, the near-tie base keys.
  std::vector<std::int64_t> dominant_pos(S, -1);
  for (int s = 0; s < S; ++s) {
    if (in.seq_lens[s] > 0) dominant_pos[s] = Rng(seed, kDominant, s).below(in.seq_lens[s]);
  }
  const DType ct = in.cache_element();
  std::vector<float> base;
  if (dist == Dist::near_ties) {
    base.resize(static_cast<std::size_t>(S) * KVH * D);
    for (int s = 0; s < S; ++s) {
      for (int g = 0; g < KVH; ++g) {
        Rng rng(seed, kBase, s, g);
        for (int d = 0; d < D; ++d) {
          // Representable, so nudges are ulps.
          const std::uint32_t b = testing::encode(ct, rng.uniform(-1.0f, 1.0f));
          base[(static_cast<std::size_t>(s) * KVH + g) * D + d] =
              static_cast<float>(testing::decode(ct, &b, 0));
        }
      }
    }
  }
  // dominant: sum(q) >= D/2, so a key of all alpha gives a logit >= alpha sqrt(D)/2 = 48,
  // while every other |logit| <= scale * D * 1 * r = 1: a gap above 40 with room for fp8.
  const float alpha = static_cast<float>(96.0 / std::sqrt(static_cast<double>(D)));
  // large_logits: a key of all t*c gives scale * t * c * sum(q), |.| up to about 600.
  const float c_large = static_cast<float>(600.0 / (0.75 * std::sqrt(static_cast<double>(D))));

  const testing::KvLayout layout = in.layout();
  const std::int64_t per_block = layout.value_block_elements();  // == the key's: x divides D
  // Each block is drawn in its physical element order (the streams' order, so the bytes
  // stay those of earlier runs) into a float buffer, then encoded: the headline case draws
  // 2 x 10^8 elements.
  const int x = layout.x;
  parallel_for(in.num_blocks, threads, [&](std::int64_t blk) {
    const int s = owner[blk];
    Rng kr(seed, kKey, blk), vr(seed, kValue, blk), lr(seed, kLogit, blk);
    std::vector<char> past(B), dominant(B);
    std::vector<float> t_logit(B), buf(per_block);
    for (int slot = 0; slot < B; ++slot) {
      const std::int64_t token = first_token[blk] + slot;
      past[slot] = s < 0 || token >= in.seq_lens[s];
      dominant[slot] = !past[slot] && token == dominant_pos[s];
      t_logit[slot] = lr.uniform(-1.0f, 1.0f);
    }
    const auto key = [&](int g, int d, int slot) -> float {
      switch (dist) {
        case Dist::normal:
          return static_cast<float>(2 * kr.normal());
        case Dist::dominant:
          return dominant[slot] ? alpha : kr.uniform(-r, r);
        case Dist::near_ties: {
          const float b = s < 0 ? 0.0f : base[(static_cast<std::size_t>(s) * KVH + g) * D + d];
          const std::uint64_t u = kr.next();
          return (u & 7) == 0 ? nudge(b, ct, (u >> 3) & 1) : b;
        }
        case Dist::large_logits:
          return t_logit[slot] * c_large;
        default:  // vllm_uniform, nan_tail, fp16_max
          return kr.uniform(-r, r);
      }
    };
    const auto value = [&]() -> float {
      switch (dist) {
        case Dist::normal:
          return static_cast<float>(vr.normal());
        case Dist::dominant:
        case Dist::near_ties:
        case Dist::large_logits:
          return vr.uniform(-1.0f, 1.0f);
        case Dist::fp16_max: {
          const float m = vr.uniform(60000.0f, 65504.0f);
          return (vr.next() & 1) ? m : -m;
        }
        default:  // vllm_uniform, nan_tail
          return vr.uniform(-r, r);
      }
    };
    const bool nan_tail = dist == Dist::nan_tail;
    // Offsets inside the block: the layout's, at block 0.
    for (int g = 0; g < KVH; ++g) {
      for (int dx = 0; dx < D / x; ++dx) {
        for (int slot = 0; slot < B; ++slot) {
          for (int xi = 0; xi < x; ++xi) {
            const float k = key(g, dx * x + xi, slot);
            buf[layout.key(Block{0}, KvHead{g}, Slot{slot}, Dim{dx * x + xi})] =
                nan_tail && past[slot] ? NAN : k;
          }
        }
      }
    }
    const std::size_t es = testing::traits(ct).size;
    testing::encode_run(ct, buf.data(), buf.size(), in.key_cache.data() + blk * per_block * es);
    for (int g = 0; g < KVH; ++g) {
      for (int d = 0; d < D; ++d) {
        for (int slot = 0; slot < B; ++slot) {
          const float v = value();
          buf[layout.value(Block{0}, KvHead{g}, Slot{slot}, Dim{d})] =
              nan_tail && past[slot] ? NAN : v;
        }
      }
    }
    testing::encode_run(ct, buf.data(), buf.size(), in.value_cache.data() + blk * per_block * es);
  });
  return in;
}

}  // namespace pagedattn::audit
