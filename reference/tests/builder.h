// The reference tests' generator: problems in vLLM's layout, written from logical per-slot
// values through the one KV layout (pagedattn_testing/kv_layout.h, dependency-free; its
// agreement with the reference's own gather is test_gather_layout.cpp). The element
// encoders are the reference's own (formats.h), so nothing here comes from the kernels
// (reference/ may not see kernels/: testing::Case is built by the kernels' encoders and
// carries their views, so these tests keep their own owned buffers, `Case` below). Slots
// that no token reads hold NaN (or a NaN byte) so a read past seq_len shows.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "pagedattn_ref/formats.h"
#include "pagedattn_ref/reference.h"
#include "pagedattn_testing/kv_layout.h"

namespace pagedattn::ref::testing {

inline int esize(DType t) {
  return t == DType::f32 ? 4 : (t == DType::f16 || t == DType::bf16) ? 2 : 1;
}

// Nearest value of the dtype (scalar dtypes), as raw bits.
inline uint32_t to_dtype(double v, DType t) {
  return encode_bits(round_to_format(v, format_of(t)), t);
}
inline void put(std::vector<uint8_t>& buf, size_t idx, uint32_t bits, int es) {
  std::memcpy(&buf[idx * es], &bits, es);  // little endian
}

struct Case {
  Problem p;
  std::vector<uint8_t> q, kc, vc;
  std::vector<int32_t> bt, lens;
  std::vector<float> slopes;
  // The logical (dequantized) value each read slot was given, for the tests' naive evaluation:
  // slot_of[(block, offset)] -> slot; klog / vlog [slot][kv_head][d].
  std::map<std::pair<int, int>, int> slot_of;
  std::vector<double> klog, vlog;
  void wire() {
    p.query = q.data();
    p.key_cache = kc.data();
    p.value_cache = vc.data();
    p.block_tables = bt.data();
    p.seq_lens = lens.data();
    p.alibi_slopes = slopes.empty() ? nullptr : slopes.data();
  }
};

struct Spec {
  int heads = 4, kv_heads = 2, head_size = 32, block_size = 16;
  DType scalar = DType::f16, cache = DType::f16;
  std::vector<int> lens = {40};
  bool alibi = false, repeat_blocks = false;
  float scale = 0.0f;  // 0: 1/sqrt(head_size)
  float k_scale = 1, v_scale = 1;
  // Generators of logical values (doubles, rounded to the element type by the builder); fp8
  // caches take a byte generator instead.
  std::function<double(std::mt19937_64&, int s, int h, int d)> qgen;
  std::function<double(std::mt19937_64&, int tok, int g, int d)> kgen, vgen;
  uint64_t seed = 1;
};

inline bool is_fp8(DType t) {
  return t == DType::fp8_e4m3 || t == DType::fp8_e5m2;
}

inline uint8_t random_fp8(std::mt19937_64& r, DType t) {
  for (;;) {
    uint8_t b = uint8_t(r());
    if (std::isfinite(t == DType::fp8_e4m3 ? decode_e4m3(b) : decode_e5m2(b))) return b;
  }
}

inline Case build(const Spec& sp) {
  Case c;
  std::mt19937_64 rng(sp.seed);
  Problem& p = c.p;
  p.num_seqs = int(sp.lens.size());
  p.num_heads = sp.heads;
  p.num_kv_heads = sp.kv_heads;
  p.head_size = sp.head_size;
  p.block_size = sp.block_size;
  p.scalar_dtype = sp.scalar;
  p.cache_dtype = sp.cache;
  p.scale = sp.scale != 0 ? sp.scale : float(1 / std::sqrt(double(sp.head_size)));
  p.k_scale = sp.k_scale;
  p.v_scale = sp.v_scale;
  int maxb = 1;
  for (int L : sp.lens) maxb = std::max(maxb, (L + sp.block_size - 1) / sp.block_size);
  p.max_blocks_per_seq = maxb + 1;
  int total = 0;
  for (int L : sp.lens) total += (L + sp.block_size - 1) / sp.block_size;
  p.num_blocks = sp.repeat_blocks ? std::max(2, total / 2) : total + 3;
  // Block table: a shuffled assignment, or draws with repetition.
  std::vector<int> ids(p.num_blocks);
  for (int i = 0; i < p.num_blocks; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  c.bt.assign(size_t(p.num_seqs) * p.max_blocks_per_seq, 0);
  int next = 0;
  for (int s = 0; s < p.num_seqs; ++s)
    for (int j = 0; j < (sp.lens[s] + sp.block_size - 1) / sp.block_size; ++j)
      c.bt[s * p.max_blocks_per_seq + j] =
          sp.repeat_blocks ? int(rng() % p.num_blocks) : ids[next++];
  c.lens.assign(sp.lens.begin(), sp.lens.end());
  if (sp.alibi) {
    for (int h = 0; h < sp.heads; ++h) c.slopes.push_back(std::ldexp(1.0f, -(h % 8 + 1)));
  }
  const int hs = sp.head_size, bs = sp.block_size, kvh = sp.kv_heads, es = esize(sp.cache);
  const pagedattn::testing::KvLayout layout = pagedattn::testing::KvLayout::of(kvh, hs, bs, es);
  size_t cache_elems = size_t(p.num_blocks) * layout.value_block_elements();
  uint32_t nanb = is_fp8(sp.cache)         ? 0x7F
                  : sp.cache == DType::f32 ? 0x7FC00000u
                  : sp.cache == DType::f16 ? 0x7E00u
                                           : 0x7FC0u;
  c.kc.resize(cache_elems * es);
  c.vc.resize(cache_elems * es);
  for (size_t i = 0; i < cache_elems; ++i) put(c.kc, i, nanb, es), put(c.vc, i, nanb, es);
  // Mark the slots that some token reads, then give each such physical slot a value.
  std::set<std::pair<int, int>> used;  // (block, offset)
  for (int s = 0; s < p.num_seqs; ++s)
    for (int i = 0; i < sp.lens[s]; ++i)
      used.insert({c.bt[s * p.max_blocks_per_seq + i / bs], i % bs});
  int tok = 0;
  c.klog.resize(used.size() * kvh * hs);
  c.vlog.resize(used.size() * kvh * hs);
  auto decode = [&](const std::vector<uint8_t>& buf, size_t idx, float scale) {
    uint32_t bits = 0;
    std::memcpy(&bits, &buf[idx * es], es);
    switch (sp.cache) {
      case DType::f32:
        return decode_f32(bits);
      case DType::f16:
        return decode_f16(uint16_t(bits));
      case DType::bf16:
        return decode_bf16(uint16_t(bits));
      case DType::fp8_e4m3:
        return decode_e4m3(uint8_t(bits)) * scale;
      default:
        return decode_e5m2(uint8_t(bits)) * scale;
    }
  };
  for (auto [b, o] : used) {
    c.slot_of[{b, o}] = tok;
    for (int g = 0; g < kvh; ++g)
      for (int d = 0; d < hs; ++d) {
        using pagedattn::testing::Block, pagedattn::testing::Dim, pagedattn::testing::KvHead,
            pagedattn::testing::Slot;
        const size_t ki = size_t(layout.key(Block{b}, KvHead{g}, Slot{o}, Dim{d}));
        const size_t vi = size_t(layout.value(Block{b}, KvHead{g}, Slot{o}, Dim{d}));
        if (is_fp8(sp.cache)) {
          put(c.kc, ki, sp.kgen ? uint32_t(sp.kgen(rng, tok, g, d)) : random_fp8(rng, sp.cache), 1);
          put(c.vc, vi, sp.vgen ? uint32_t(sp.vgen(rng, tok, g, d)) : random_fp8(rng, sp.cache), 1);
        } else {
          std::normal_distribution<double> nd(0, 1);
          put(c.kc, ki, to_dtype(sp.kgen ? sp.kgen(rng, tok, g, d) : nd(rng), sp.cache), es);
          put(c.vc, vi, to_dtype(sp.vgen ? sp.vgen(rng, tok, g, d) : nd(rng), sp.cache), es);
        }
        c.klog[(size_t(tok) * kvh + g) * hs + d] = decode(c.kc, ki, sp.k_scale);
        c.vlog[(size_t(tok) * kvh + g) * hs + d] = decode(c.vc, vi, sp.v_scale);
      }
    ++tok;
  }
  int qes = esize(sp.scalar);
  c.q.resize(size_t(p.num_seqs) * sp.heads * hs * qes);
  std::normal_distribution<double> nd(0, 1);
  for (int s = 0; s < p.num_seqs; ++s)
    for (int h = 0; h < sp.heads; ++h)
      for (int d = 0; d < hs; ++d)
        put(c.q, (size_t(s) * sp.heads + h) * hs + d,
            to_dtype(sp.qgen ? sp.qgen(rng, s, h, d) : nd(rng), sp.scalar), qes);
  c.wire();
  return c;
}

}  // namespace pagedattn::ref::testing
