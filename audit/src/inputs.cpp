// Input generators. Every cache element is drawn from a stream named by (tensor, physical
// block), so filling blocks in parallel gives the same bytes for any thread count.
#include "pagedattn_audit/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "rng.h"

namespace pagedattn::audit {
namespace {

enum class Dist { vllm_uniform, normal, dominant, near_ties, large_logits, nan_tail, fp16_max };

Dist parse_dist(const std::string& name) {
  const auto& names = distribution_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Dist>(i);
  }
  throw std::invalid_argument("unknown distribution '" + name + "'");
}

enum Tag : std::uint64_t { kQuery = 1, kKey, kValue, kLens, kPerm, kDominant, kBase, kLogit };

void store(std::vector<std::uint8_t>& bytes, DType t, std::int64_t i, float v) {
  switch (t) {
    case DType::f32:
      std::memcpy(bytes.data() + 4 * i, &v, 4);
      break;
    case DType::f16: {
      const std::uint16_t h = fast_f16_bits(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      break;
    }
    case DType::bf16: {
      const std::uint16_t h = float_to_bf16_bits(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      break;
    }
    case DType::fp8_e4m3:
      bytes[i] = std::isnan(v) ? 0x7f : float_to_fp8_e4m3(v);
      break;
    case DType::fp8_e5m2:
      bytes[i] = std::isnan(v) ? 0x7f : float_to_fp8_e5m2(v);
      break;
    default:
      throw std::invalid_argument("audit: cannot store elements of this dtype");
  }
}

// The element type the cache's bytes hold (fp8 formats rather than raw u8).
DType cache_format_dtype(const Inputs& in) {
  return in.cache == CacheFormat::fp8_e4m3   ? DType::fp8_e4m3
         : in.cache == CacheFormat::fp8_e5m2 ? DType::fp8_e5m2
                                             : in.dtype;
}

// v moved by one step of `t`'s bit pattern away from or toward zero (never across it).
float nudge(float v, DType t, bool up) {
  std::vector<std::uint8_t> b(4);
  store(b, t, 0, v);
  std::uint32_t bits = 0;
  std::memcpy(&bits, b.data(), dtype_size(t));
  const std::uint32_t mag_mask = t == DType::f32      ? 0x7fffffffu
                                 : dtype_size(t) == 2 ? 0x7fffu
                                                      : 0x7fu;
  if ((bits & mag_mask) == 0 && !up) return v;
  bits = up ? bits + 1 : bits - 1;
  std::memcpy(b.data(), &bits, dtype_size(t));
  Inputs tmp;
  return element(tmp, b, t, 0);
}

// Runs fn(block) for every block in [0, n) on `threads` host threads.
template <class F>
void parallel_blocks(std::int64_t n, int threads, F fn) {
  threads = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      for (std::int64_t b = t; b < n; b += threads) fn(b);
    });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace

// float -> binary16, round to nearest even, in integer arithmetic: the library's encoder is
// exact but goes through frexp/ldexp, too slow for 2 x 10^8 elements. The tests check the
// two agree.
std::uint16_t fast_f16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (a >= 0x38800000u) {  // >= 2^-14: normal; rebias the exponent, round 13 bits away
    std::uint32_t m = a - 0x38000000u;
    m += 0xfffu + ((m >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (m >> 13));
  }
  float mag;
  std::memcpy(&mag, &a, 4);  // subnormal: count quanta of 2^-24 (exact scaling), round even
  return static_cast<std::uint16_t>(sign |
                                    static_cast<std::uint32_t>(std::nearbyint(mag * 0x1p24f)));
}

const std::vector<std::string>& distribution_names() {
  static const std::vector<std::string> names = {
      "vllm_uniform", "normal", "dominant", "near_ties", "large_logits", "nan_tail", "fp16_max"};
  return names;
}

const char* Inputs::kv_cache_dtype() const {
  return cache == CacheFormat::fp8_e4m3   ? "fp8_e4m3"
         : cache == CacheFormat::fp8_e5m2 ? "fp8_e5m2"
                                          : "auto";
}

std::int64_t key_offset(const Inputs& in, std::int64_t block, int kvh, int d, int slot) {
  const int x = 16 / static_cast<int>(dtype_size(in.cache_elem()));
  return (((block * in.num_kv_heads + kvh) * (in.head_size / x) + d / x) * in.block_size + slot) *
             x +
         d % x;
}

std::int64_t value_offset(const Inputs& in, std::int64_t block, int kvh, int d, int slot) {
  return ((block * in.num_kv_heads + kvh) * in.head_size + d) * in.block_size + slot;
}

float element(const Inputs&, const std::vector<std::uint8_t>& bytes, DType t, std::int64_t i) {
  switch (t) {
    case DType::f32: {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      return f;
    }
    case DType::f16: {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      return f16_bits_to_float(h);
    }
    case DType::bf16: {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      return bf16_bits_to_float(h);
    }
    case DType::fp8_e4m3:
      return fp8_e4m3_to_float(bytes[i]);
    case DType::fp8_e5m2:
      return fp8_e5m2_to_float(bytes[i]);
    default:
      throw std::invalid_argument("audit: cannot read elements of this dtype");
  }
}

Inputs generate_inputs(const CaseShape& sh, const std::string& distribution, std::uint64_t seed,
                       int threads) {
  const Dist dist = parse_dist(distribution);
  Inputs in;
  in.num_seqs = sh.num_seqs;
  in.num_heads = sh.num_heads;
  in.num_kv_heads = sh.num_kv_heads;
  in.head_size = sh.head_size;
  in.block_size = sh.block_size;
  in.dtype = sh.dtype;
  in.cache = sh.cache;
  in.distribution = distribution;
  in.seed = seed;
  in.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.head_size)));
  const int S = sh.num_seqs, H = sh.num_heads, KVH = sh.num_kv_heads, D = sh.head_size,
            B = sh.block_size;
  const float r = in.scale;  // vLLM's test range: +-head_size^-0.5

  // Lengths: sequence 0 has the longest; the others are seeded in [1, seq_len].
  in.seq_lens.resize(S);
  for (int s = 0; s < S; ++s) {
    in.seq_lens[s] =
        s == 0 ? sh.seq_len : 1 + static_cast<int>(Rng(seed, kLens, s).below(sh.seq_len));
    in.max_seq_len = std::max<std::int64_t>(in.max_seq_len, in.seq_lens[s]);
  }

  // Block tables: a seeded permutation of the physical blocks, so the gather is exercised;
  // nan_tail adds one spare block no table points to.
  std::vector<int> nblocks(S);
  std::int64_t total = 0;
  for (int s = 0; s < S; ++s) {
    nblocks[s] = (in.seq_lens[s] + B - 1) / B;
    in.max_blocks_per_seq = std::max(in.max_blocks_per_seq, nblocks[s]);
    total += nblocks[s];
  }
  in.max_blocks_per_seq = std::max(in.max_blocks_per_seq, 1);
  in.num_blocks = total + (dist == Dist::nan_tail ? 1 : 0);
  std::vector<std::int32_t> perm(total);
  for (std::int64_t i = 0; i < total; ++i) perm[i] = static_cast<std::int32_t>(i);
  Rng prng(seed, kPerm);
  for (std::int64_t i = total - 1; i > 0; --i) std::swap(perm[i], perm[prng.below(i + 1)]);
  in.block_tables.assign(static_cast<std::size_t>(S) * in.max_blocks_per_seq, 0);
  // Inverse map: physical block -> (sequence, first token), -1 for the spare block.
  std::vector<int> owner(in.num_blocks, -1);
  std::vector<std::int64_t> first_token(in.num_blocks, 0);
  for (int s = 0, next = 0; s < S; ++s) {
    for (int j = 0; j < nblocks[s]; ++j, ++next) {
      const std::int32_t id = perm[next];
      in.block_tables[static_cast<std::size_t>(s) * in.max_blocks_per_seq + j] = id;
      owner[id] = s;
      first_token[id] = static_cast<std::int64_t>(j) * B;
    }
  }

  // Queries. dominant and large_logits use positive queries so that a key of equal
  // elements gives a logit of known sign and size.
  const bool positive_q = dist == Dist::dominant || dist == Dist::large_logits;
  in.query.assign(static_cast<std::size_t>(S) * H * D * dtype_size(sh.dtype), 0);
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
        store(in.query, sh.dtype, (static_cast<std::int64_t>(s) * H + h) * D + d, v);
      }
    }
  }

  if (sh.alibi) {
    in.alibi_slopes.resize(H);
    for (int h = 0; h < H; ++h) in.alibi_slopes[h] = std::exp2(-8.0f * (h + 1) / H);
  }

  // Per-sequence structure: the dominant token, the near-tie base keys.
  std::vector<std::int64_t> dominant_pos(S, -1);
  for (int s = 0; s < S; ++s) {
    if (in.seq_lens[s] > 0) dominant_pos[s] = Rng(seed, kDominant, s).below(in.seq_lens[s]);
  }
  const DType ct = cache_format_dtype(in);
  std::vector<float> base;
  if (dist == Dist::near_ties) {
    base.resize(static_cast<std::size_t>(S) * KVH * D);
    for (int s = 0; s < S; ++s) {
      for (int g = 0; g < KVH; ++g) {
        Rng rng(seed, kBase, s, g);
        for (int d = 0; d < D; ++d) {
          std::vector<std::uint8_t> b(4);
          store(b, ct, 0, rng.uniform(-1.0f, 1.0f));  // representable, so nudges are ulps
          base[(static_cast<std::size_t>(s) * KVH + g) * D + d] = element(in, b, ct, 0);
        }
      }
    }
  }
  // dominant: sum(q) >= D/2, so a key of all alpha gives a logit >= alpha sqrt(D)/2 = 48,
  // while every other |logit| <= scale * D * 1 * r = 1: a gap above 40 with room for fp8.
  const float alpha = static_cast<float>(96.0 / std::sqrt(static_cast<double>(D)));
  // large_logits: a key of all t*c gives scale * t * c * sum(q), |.| up to about 600.
  const float c_large = static_cast<float>(600.0 / (0.75 * std::sqrt(static_cast<double>(D))));

  const std::size_t esz = dtype_size(in.cache_elem());
  const std::int64_t per_block = static_cast<std::int64_t>(KVH) * D * B;
  in.key_cache.assign(static_cast<std::size_t>(in.num_blocks * per_block) * esz, 0);
  in.value_cache.assign(static_cast<std::size_t>(in.num_blocks * per_block) * esz, 0);
  // Each block is drawn in its physical element order (one pass, no index arithmetic per
  // element) into a float buffer, then encoded: the headline case draws 2 x 10^8 elements.
  const int x = 16 / static_cast<int>(esz);
  parallel_blocks(in.num_blocks, threads, [&](std::int64_t blk) {
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
    // key_cache block: [KVH][D/x][B][x]
    std::int64_t i = 0;
    for (int g = 0; g < KVH; ++g) {
      for (int dx = 0; dx < D / x; ++dx) {
        for (int slot = 0; slot < B; ++slot) {
          for (int xi = 0; xi < x; ++xi, ++i) {
            const float k = key(g, dx * x + xi, slot);
            buf[i] = nan_tail && past[slot] ? NAN : k;
          }
        }
      }
    }
    for (std::int64_t j = 0; j < per_block; ++j)
      store(in.key_cache, ct, blk * per_block + j, buf[j]);
    // value_cache block: [KVH][D][B]
    i = 0;
    for (int g = 0; g < KVH; ++g) {
      for (int d = 0; d < D; ++d) {
        for (int slot = 0; slot < B; ++slot, ++i) {
          const float v = value();
          buf[i] = nan_tail && past[slot] ? NAN : v;
        }
      }
    }
    for (std::int64_t j = 0; j < per_block; ++j)
      store(in.value_cache, ct, blk * per_block + j, buf[j]);
  });
  return in;
}

}  // namespace pagedattn::audit
