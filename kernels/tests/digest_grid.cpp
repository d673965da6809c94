// The output-digest grid (digest_grid.h).
#include "digest_grid.h"

#include <emu/cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

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

// Element (token slot, d) of physical block `blk`, KV head `h`: the key's index in
// [blocks, KVH, D/x, B, x] and the value's in [blocks, KVH, D, B].
std::size_t key_at(const Problem& p, int blk, int h, int slot, int d) {
  return ((static_cast<std::size_t>(blk) * p.KVH + h) * (p.D / p.x) + d / p.x) * p.B * p.x +
         static_cast<std::size_t>(slot) * p.x + d % p.x;
}
std::size_t value_at(const Problem& p, int blk, int h, int slot, int d) {
  return ((static_cast<std::size_t>(blk) * p.KVH + h) * p.D + d) * p.B + slot;
}

// One device buffer holding a host vector's bytes, copied back on request.
struct Buf {
  void* ptr = nullptr;
  std::size_t n = 0;
  explicit Buf(const void* src, std::size_t bytes) : n(bytes) {
    if (cudaMalloc(&ptr, n ? n : 1) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
    if (n) std::memcpy(ptr, src, n);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { cudaFree(ptr); }
};

}  // namespace

std::string Case::name() const {
  std::ostringstream o;
  o << dtype_name(scalar) << '/' << cache_format_name(cache) << '/'
    << (numerics == Numerics::exact_fp32 ? "exact" : "vllm") << "/h" << head_size << "/b"
    << block_size << "/p" << partition_size << (alibi ? "/alibi/" : "/noalibi/")
    << input_name(input);
  return o.str();
}

Problem make(const Case& c, std::uint64_t seed) {
  Problem p;
  p.D = c.head_size;
  p.B = c.block_size;
  const bool fp8 = c.cache != CacheFormat::same;
  p.x = 16 / (fp8 ? 1 : static_cast<int>(dtype_size(c.scalar)));
  p.max_blocks = (p.max_seq_len + p.B - 1) / p.B;
  p.blocks = p.S * p.max_blocks + 2;  // two spare blocks no sequence uses
  p.scale = 1.0 / std::sqrt(static_cast<double>(p.D));
  Rng rng{seed};
  // Block tables: a fixed permutation of the physical blocks, so sequences interleave.
  p.tables.assign(static_cast<std::size_t>(p.S) * p.max_blocks, 0);
  for (std::size_t i = 0; i < p.tables.size(); ++i)
    p.tables[i] = static_cast<std::int32_t>((i * 7 + 3) % (p.blocks - 2));
  const std::size_t es = fp8 ? 1 : dtype_size(c.scalar);
  const std::size_t cache_elems = static_cast<std::size_t>(p.blocks) * p.KVH * p.D * p.B;
  p.q.assign(static_cast<std::size_t>(p.S) * p.H * p.D * dtype_size(c.scalar), 0);
  p.k.assign(cache_elems * es, 0);
  p.v.assign(cache_elems * es, 0);
  // Magnitudes: `huge` takes f32 / bf16 logits and P.V sums past FLT_MAX; f16 cannot
  // overflow either, so it gets its widest values instead; fp8 gets scales that do.
  const bool wide = c.scalar != DType::f16;
  const double qk_big = c.input == Input::huge ? (wide && !fp8 ? 1e19 : (fp8 ? 1 : 200)) : 1;
  const double v_big = c.input == Input::huge ? (wide && !fp8 ? 3e38 : (fp8 ? 1 : 65504)) : 1;
  if (fp8 && c.input == Input::huge) {
    p.k_scale = wide ? 1e30 : 4;
    p.v_scale = wide ? 1e34 : 200;  // f16 out: 448 * 200 > 65504 rounds to inf
  } else if (fp8) {
    p.k_scale = 0.5;
    p.v_scale = 2;
  }
  for (std::size_t i = 0; i < p.q.size() / dtype_size(c.scalar); ++i)
    store(c.scalar, CacheFormat::same, p.q, i, rng.uniform() * qk_big);
  for (std::size_t i = 0; i < cache_elems; ++i) {
    store(c.scalar, c.cache, p.k, i, rng.uniform() * (fp8 ? 448 : qk_big));
    // Mostly positive values in `huge`, so the sums grow instead of cancelling.
    const double u = rng.uniform();
    store(c.scalar, c.cache, p.v, i, (c.input == Input::huge ? 0.75 + 0.25 * u : u) * v_big);
  }
  if (c.alibi) {
    for (int h = 0; h < p.H; ++h) p.slopes.push_back(std::ldexp(1.0f, -(h + 1)));
  }
  if (c.input == Input::poisoned) {
    // Dead slots (past seq_len, spare blocks): NaN everywhere; never read.
    std::vector<char> live(static_cast<std::size_t>(p.blocks) * p.B, 0);
    for (int s = 0; s < p.S; ++s)
      for (int t = 0; t < p.seq_lens[s]; ++t)
        live[static_cast<std::size_t>(p.tables[s * p.max_blocks + t / p.B]) * p.B + t % p.B] = 1;
    for (int blk = 0; blk < p.blocks; ++blk)
      for (int slot = 0; slot < p.B; ++slot)
        if (!live[static_cast<std::size_t>(blk) * p.B + slot])
          for (int h = 0; h < p.KVH; ++h)
            for (int d = 0; d < p.D; ++d) {
              store(c.scalar, c.cache, p.k, key_at(p, blk, h, slot, d), NAN);
              store(c.scalar, c.cache, p.v, value_at(p, blk, h, slot, d), NAN);
            }
    auto phys = [&](int s, int t) { return p.tables[s * p.max_blocks + t / p.B]; };
    // Live poison: a query element (seq 0, head 1), a key of token 5 (seq 2, KV head 1,
    // inf), a value of token 100 (seq 2, KV head 0, second partition), a slope (head 3).
    store(c.scalar, CacheFormat::same, p.q, (0 * p.H + 1) * p.D + 3, NAN);
    store(c.scalar, c.cache, p.k, key_at(p, phys(2, 5), 1, 5 % p.B, 7), INFINITY);
    store(c.scalar, c.cache, p.v, value_at(p, phys(2, 100), 0, 100 % p.B, 2), NAN);
    if (c.alibi) p.slopes[3] = NAN;
  }
  return p;
}

std::uint64_t run(const Case& c, const Problem& p, Kernel kernel, const Backend& backend,
                  bool grouped) {
  const bool fp8 = c.cache != CacheFormat::same;
  const DType cache_dtype = fp8 ? DType::u8 : c.scalar;
  const std::int64_t S = p.S, H = p.H, D = p.D, B = p.B;
  const std::int64_t P = (p.max_seq_len + c.partition_size - 1) / c.partition_size;
  const DType tmp_dtype = c.numerics == Numerics::exact_fp32 ? DType::f32 : c.scalar;
  // Outputs start as 0xA5 bytes: a byte the kernels leave unwritten shows in the digest.
  const std::vector<std::uint8_t> out0(S * H * D * dtype_size(c.scalar), 0xA5);
  const std::vector<std::uint8_t> states0(S * H * P * 4, 0xA5);
  const std::vector<std::uint8_t> tmp0(S * H * P * D * dtype_size(tmp_dtype), 0xA5);
  Buf q(p.q.data(), p.q.size()), k(p.k.data(), p.k.size()), v(p.v.data(), p.v.size());
  Buf bt(p.tables.data(), p.tables.size() * 4), sl(p.seq_lens.data(), p.seq_lens.size() * 4);
  Buf al(p.slopes.data(), p.slopes.size() * 4), out(out0.data(), out0.size());
  Buf es(states0.data(), states0.size()), ml(states0.data(), states0.size());
  Buf tmp(tmp0.data(), tmp0.size());
  AttentionCall call;
  call.out = TensorView::contiguous(out.ptr, c.scalar, {S, H, D});
  call.query = TensorView::contiguous(q.ptr, c.scalar, {S, H, D});
  call.key_cache = TensorView::contiguous(k.ptr, cache_dtype, {p.blocks, p.KVH, D / p.x, B, p.x});
  call.value_cache = TensorView::contiguous(v.ptr, cache_dtype, {p.blocks, p.KVH, D, B});
  call.num_kv_heads = p.KVH;
  call.scale = p.scale;
  call.block_tables = TensorView::contiguous(bt.ptr, DType::i32, {S, p.max_blocks});
  call.seq_lens = TensorView::contiguous(sl.ptr, DType::i32, {S});
  call.block_size = B;
  call.max_seq_len = p.max_seq_len;
  if (c.alibi) call.alibi_slopes = TensorView::contiguous(al.ptr, DType::f32, {H});
  call.kv_cache_dtype = c.cache == CacheFormat::same       ? "auto"
                        : c.cache == CacheFormat::fp8_e4m3 ? "fp8_e4m3"
                                                           : "fp8_e5m2";
  call.k_scale = p.k_scale;
  call.v_scale = p.v_scale;
  if (kernel == Kernel::v2) {
    call.exp_sums = TensorView::contiguous(es.ptr, DType::f32, {S, H, P});
    call.max_logits = TensorView::contiguous(ml.ptr, DType::f32, {S, H, P});
    call.tmp_out = TensorView::contiguous(tmp.ptr, tmp_dtype, {S, H, P, D});
  }
  Options opt;
  opt.partition_size = c.partition_size;
  opt.numerics = c.numerics;
  opt.grouped = grouped;
  paged_attention(kernel, call, backend, opt);
  std::uint64_t h = fnv1a(0xcbf29ce484222325ull, out.ptr, out.n);
  if (kernel == Kernel::v2) {
    h = fnv1a(h, es.ptr, es.n);
    h = fnv1a(h, ml.ptr, ml.n);
    h = fnv1a(h, tmp.ptr, tmp.n);
  }
  return h;
}

std::vector<std::pair<Case, std::uint64_t>> grid() {
  std::vector<std::pair<Case, std::uint64_t>> r;
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
              r.push_back({Case{t, cf, n, hs, bs, ps, alibi, in}, seed++});
            }
  return r;
}

}  // namespace pagedattn::digest
