// The output-digest grid (digest_grid.h).
#include "digest_grid.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "pagedattn_testing/run.h"

namespace pagedattn::digest {
namespace {

struct Rng {  // splitmix64
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() {  // [-1, 1), exact in double
    return static_cast<double>(next() >> 11) * 0x1p-52 - 1.0;
  }
};

std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void store(DType t, CacheFormat cache, std::vector<std::uint8_t>& bytes, std::size_t i, double v) {
  const float f = static_cast<float>(v);
  if (cache == CacheFormat::fp8_e4m3) {
    bytes[i] = std::isnan(f) ? 0x7f : float_to_fp8_e4m3(f);
  } else if (cache == CacheFormat::fp8_e5m2) {
    bytes[i] = std::isnan(f) ? 0x7f : float_to_fp8_e5m2(f);
  } else if (t == DType::f32) {
    std::memcpy(&bytes[4 * i], &f, 4);
  } else {
    const std::uint16_t h = t == DType::f16 ? float_to_f16_bits(f) : float_to_bf16_bits(f);
    std::memcpy(&bytes[2 * i], &h, 2);
  }
}

}  // namespace

std::string Setting::name() const {
  std::ostringstream o;
  o << dtype_name(scalar) << '/' << cache_format_name(cache) << '/'
    << (numerics == Numerics::exact_fp32 ? "exact" : "vllm") << "/h" << head_size << "/b"
    << block_size << "/p" << partition_size << (alibi ? "/alibi/" : "/noalibi/")
    << input_name(input);
  return o.str();
}

testing::Case make(const Setting& st, std::uint64_t seed) {
  using testing::Block, testing::Dim, testing::KvHead, testing::Slot;
  testing::Case c;
  c.scalar = st.scalar;
  c.cache = st.cache;
  c.num_seqs = 4;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = st.head_size;
  c.block_size = st.block_size;
  c.max_seq_len = 200;
  c.max_blocks_per_seq = static_cast<int>((c.max_seq_len + c.block_size - 1) / c.block_size);
  c.num_blocks = c.num_seqs * c.max_blocks_per_seq + 2;  // two spare blocks no sequence uses
  c.scale = 1.0 / std::sqrt(static_cast<double>(c.head_size));
  c.allocate();
  c.seq_lens = {37, 1, 200, 0};
  const bool fp8 = c.cache != CacheFormat::same;
  const testing::KvLayout l = c.layout();
  Rng rng{seed};
  // Block tables: a fixed permutation of the physical blocks, so sequences interleave.
  for (std::size_t i = 0; i < c.block_tables.size(); ++i)
    c.block_tables[i] = static_cast<std::int32_t>((i * 7 + 3) % (c.num_blocks - 2));
  // Magnitudes: `huge` takes f32 / bf16 logits and P.V sums past FLT_MAX; f16 cannot
  // overflow either, so it gets its widest values instead; fp8 gets scales that do.
  const bool wide = c.scalar != DType::f16;
  const double qk_big = st.input == Input::huge ? (wide && !fp8 ? 1e19 : (fp8 ? 1 : 200)) : 1;
  const double v_big = st.input == Input::huge ? (wide && !fp8 ? 3e38 : (fp8 ? 1 : 65504)) : 1;
  if (fp8 && st.input == Input::huge) {
    c.k_scale = wide ? 1e30 : 4;
    c.v_scale = wide ? 1e34 : 200;  // f16 out: 448 * 200 > 65504 rounds to inf
  } else if (fp8) {
    c.k_scale = 0.5;
    c.v_scale = 2;
  }
  for (std::size_t i = 0; i < c.query.size() / dtype_size(c.scalar); ++i)
    store(c.scalar, CacheFormat::same, c.query, i, rng.uniform() * qk_big);
  // The generator's order: element i of the cache buffers, keys and values alternating.
  const std::size_t cache_elems = static_cast<std::size_t>(c.num_blocks * l.value_block_elements());
  for (std::size_t i = 0; i < cache_elems; ++i) {
    store(c.scalar, c.cache, c.key_cache, i, rng.uniform() * (fp8 ? 448 : qk_big));
    // Mostly positive values in `huge`, so the sums grow instead of cancelling.
    const double u = rng.uniform();
    store(c.scalar, c.cache, c.value_cache, i,
          (st.input == Input::huge ? 0.75 + 0.25 * u : u) * v_big);
  }
  if (st.alibi) {
    for (int h = 0; h < c.num_heads; ++h) c.alibi_slopes.push_back(std::ldexp(1.0f, -(h + 1)));
  }
  if (st.input == Input::poisoned) {
    const auto key_at = [&](std::int64_t blk, int h, int slot, int d) {
      return static_cast<std::size_t>(l.key(Block{blk}, KvHead{h}, Slot{slot}, Dim{d}));
    };
    const auto value_at = [&](std::int64_t blk, int h, int slot, int d) {
      return static_cast<std::size_t>(l.value(Block{blk}, KvHead{h}, Slot{slot}, Dim{d}));
    };
    // Dead slots (past seq_len, spare blocks): NaN everywhere; never read.
    const std::vector<char> live = c.used_slots();
    for (std::int64_t blk = 0; blk < c.num_blocks; ++blk)
      for (int slot = 0; slot < c.block_size; ++slot)
        if (!live[static_cast<std::size_t>(blk) * c.block_size + slot])
          for (int h = 0; h < c.num_kv_heads; ++h)
            for (int d = 0; d < c.head_size; ++d) {
              store(c.scalar, c.cache, c.key_cache, key_at(blk, h, slot, d), NAN);
              store(c.scalar, c.cache, c.value_cache, value_at(blk, h, slot, d), NAN);
            }
    // Live poison: a query element (seq 0, head 1), a key of token 5 (seq 2, KV head 1,
    // inf), a value of token 100 (seq 2, KV head 0, second partition), a slope (head 3).
    store(c.scalar, CacheFormat::same, c.query, c.q_index(0, 1, 3), NAN);
    const testing::Physical k5 = c.where(2, 5), v100 = c.where(2, 100);
    store(c.scalar, c.cache, c.key_cache, key_at(k5.block.v, 1, k5.slot.v, 7), INFINITY);
    store(c.scalar, c.cache, c.value_cache, value_at(v100.block.v, 0, v100.slot.v, 2), NAN);
    if (st.alibi) c.alibi_slopes[3] = NAN;
  }
  return c;
}

std::uint64_t run(const Setting& st, const testing::Case& c, Kernel kernel,
                  const Backend& backend, bool grouped) {
  Options opt;
  opt.grouped = grouped;
  opt.partition_size = st.partition_size;
  opt.numerics = st.numerics;
  const testing::Outputs o = testing::run_kernel(c, kernel, backend, opt);
  std::uint64_t h = fnv1a(0xcbf29ce484222325ull, o.out_bytes.data(), o.out_bytes.size());
  if (kernel == Kernel::v2) {
    h = fnv1a(h, o.exp_sums.data(), o.exp_sums.size() * sizeof(float));
    h = fnv1a(h, o.max_logits.data(), o.max_logits.size() * sizeof(float));
    h = fnv1a(h, o.tmp_out.data(), o.tmp_out.size());
  }
  return h;
}

std::vector<std::pair<Setting, std::uint64_t>> grid() {
  std::vector<std::pair<Setting, std::uint64_t>> r;
  const int head_sizes[] = {64, 80, 128, 256};
  const int block_sizes[] = {8, 16, 32};
  std::uint64_t seed = 1;
  int rot = 0;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (CacheFormat cf : {CacheFormat::same, CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2})
      for (Numerics n : {Numerics::exact_fp32, Numerics::vllm_compatible})
        for (int hs : head_sizes)
          for (bool alibi : {false, true})
            for (Input in : {Input::plain, Input::poisoned, Input::huge}) {
              const int bs = block_sizes[rot % 3];
              const int ps = (rot / 3) % 2 == 0 ? 64 : 128;  // both multiples of every block
              ++rot;
              r.push_back({Setting{t, cf, n, hs, bs, ps, alibi, in}, seed++});
            }
  return r;
}

}  // namespace pagedattn::digest
