// Validation and gather through the block table, from the contract's layout description only.
#include "view.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "pagedattn_ref/formats.h"

namespace pagedattn::ref {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument(what);
}

int elem_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    default:
      return 1;
  }
}

// f16 decoding by table: the fast path decodes hundreds of millions of elements. The table is
// filled from decode_f16 (the format formula), so it is exact by construction.
const float* f16_table() {
  static const std::vector<float> t = [] {
    std::vector<float> v(65536);
    for (uint32_t b = 0; b < 65536; ++b) v[b] = float(decode_f16(uint16_t(b)));
    return v;
  }();
  return t.data();
}

const double* fp8_table(DType t) {
  static const std::array<std::array<double, 256>, 2> tabs = [] {
    std::array<std::array<double, 256>, 2> a{};
    for (int b = 0; b < 256; ++b) {
      a[0][b] = decode_e4m3(uint8_t(b));
      a[1][b] = decode_e5m2(uint8_t(b));
    }
    return a;
  }();
  return tabs[t == DType::fp8_e4m3 ? 0 : 1].data();
}

}  // namespace

void validate(const Problem& p) {
  static const int kHeads[] = {32, 64, 80, 96, 112, 120, 128, 192, 256};
  if (p.num_seqs < 0) bad("num_seqs: must be >= 0, got " + std::to_string(p.num_seqs));
  if (p.num_heads <= 0) bad("num_heads: must be > 0, got " + std::to_string(p.num_heads));
  if (p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0)
    bad("num_kv_heads: must be > 0 and divide num_heads (" + std::to_string(p.num_heads) +
        "), got " + std::to_string(p.num_kv_heads));
  if (std::find(std::begin(kHeads), std::end(kHeads), p.head_size) == std::end(kHeads))
    bad("head_size: allowed 32, 64, 80, 96, 112, 120, 128, 192, 256; got " +
        std::to_string(p.head_size));
  if (p.block_size != 8 && p.block_size != 16 && p.block_size != 32)
    bad("block_size: allowed 8, 16, 32; got " + std::to_string(p.block_size));
  if (p.scalar_dtype != DType::f32 && p.scalar_dtype != DType::f16 && p.scalar_dtype != DType::bf16)
    bad(std::string("scalar_dtype: allowed f32, f16, bf16; got ") + to_string(p.scalar_dtype));
  bool fp8 = p.cache_dtype == DType::fp8_e4m3 || p.cache_dtype == DType::fp8_e5m2;
  if (!fp8 && p.cache_dtype != p.scalar_dtype)
    bad(std::string("cache_dtype: allowed the scalar dtype (") + to_string(p.scalar_dtype) +
        "), fp8_e4m3, fp8_e5m2; got " + to_string(p.cache_dtype));
  int x = 16 / elem_size(p.cache_dtype);
  if (p.head_size % x != 0)
    bad("head_size: must be a multiple of x = " + std::to_string(x) + " for cache dtype " +
        to_string(p.cache_dtype));
  if (!std::isfinite(p.scale)) bad("scale: must be finite");
  if (!std::isfinite(p.k_scale) || !std::isfinite(p.v_scale))
    bad("k_scale/v_scale: must be finite");
  if (p.num_blocks < 0) bad("num_blocks: must be >= 0");
  if (p.max_blocks_per_seq < 0) bad("max_blocks_per_seq: must be >= 0");
  if (p.num_seqs == 0) return;
  if (!p.query) bad("query: null");
  if (!p.key_cache) bad("key_cache: null");
  if (!p.value_cache) bad("value_cache: null");
  if (!p.seq_lens) bad("seq_lens: null");
  if (!p.block_tables && p.max_blocks_per_seq > 0) bad("block_tables: null");
  // A non-finite ALiBi slope is data, not a usage error: like a non-finite q, k or v element
  // that is read, it makes its head's rows NaN (reference.h), as the kernels do.
  int64_t bt = p.bt_stride ? p.bt_stride : p.max_blocks_per_seq;
  int64_t cap = int64_t(p.max_blocks_per_seq) * p.block_size;
  for (int s = 0; s < p.num_seqs; ++s) {
    int L = p.seq_lens[s];
    if (L < 0 || L > cap)
      bad("seq_lens[" + std::to_string(s) + "]: allowed 0.." + std::to_string(cap) +
          " (max_blocks_per_seq * block_size), got " + std::to_string(L));
    for (int j = 0; j < (L + p.block_size - 1) / p.block_size; ++j) {
      int32_t b = p.block_tables[s * bt + j];
      if (b < 0 || b >= p.num_blocks)
        bad("block_tables[" + std::to_string(s) + "][" + std::to_string(j) + "]: allowed 0.." +
            std::to_string(p.num_blocks - 1) + " (num_blocks - 1), got " + std::to_string(b));
    }
  }
}

namespace detail {

View::View(const Problem& pr) : p(pr) {
  validate(p);
  group = p.num_heads / p.num_kv_heads;
  x = 16 / elem_size(p.cache_dtype);
  int64_t hs = p.head_size, bs = p.block_size;
  qh_ = p.q_stride_head ? p.q_stride_head : hs;
  qs_ = p.q_stride_seq ? p.q_stride_seq : p.num_heads * qh_;
  kh_ = p.k_stride_head ? p.k_stride_head : hs * bs;
  kb_ = p.k_stride_block ? p.k_stride_block : p.num_kv_heads * kh_;
  vh_ = p.v_stride_head ? p.v_stride_head : hs * bs;
  vb_ = p.v_stride_block ? p.v_stride_block : p.num_kv_heads * vh_;
  bt_ = p.bt_stride ? p.bt_stride : p.max_blocks_per_seq;
  f16_table();
}

double View::cache_elem(const void* base, int64_t idx) const {
  switch (p.cache_dtype) {
    case DType::f32:
      return static_cast<const float*>(base)[idx];
    case DType::f16:
      return f16_table()[static_cast<const uint16_t*>(base)[idx]];
    case DType::bf16:
      return decode_bf16(static_cast<const uint16_t*>(base)[idx]);
    default:
      return fp8_table(p.cache_dtype)[static_cast<const uint8_t*>(base)[idx]];
  }
}

void View::query(int s, int h, double* out) const {
  int64_t base = s * qs_ + h * qh_;
  for (int d = 0; d < p.head_size; ++d) {
    int64_t i = base + d;
    switch (p.scalar_dtype) {
      case DType::f32:
        out[d] = static_cast<const float*>(p.query)[i];
        break;
      case DType::f16:
        out[d] = f16_table()[static_cast<const uint16_t*>(p.query)[i]];
        break;
      default:
        out[d] = decode_bf16(static_cast<const uint16_t*>(p.query)[i]);
        break;
    }
  }
}

void View::key(int s, int g, int i, double* out) const {
  int64_t base = block_of(s, i) * kb_ + g * kh_ + int64_t(i % p.block_size) * x;
  int64_t chunk = int64_t(p.block_size) * x;  // stride of the head_size/x dimension
  for (int d = 0; d < p.head_size; ++d)
    out[d] = cache_elem(p.key_cache, base + (d / x) * chunk + d % x);
  bool fp8 = p.cache_dtype == DType::fp8_e4m3 || p.cache_dtype == DType::fp8_e5m2;
  if (fp8)
    for (int d = 0; d < p.head_size; ++d) out[d] *= double(p.k_scale);
}

void View::value(int s, int g, int i, double* out) const {
  int64_t base = block_of(s, i) * vb_ + g * vh_ + i % p.block_size;
  for (int d = 0; d < p.head_size; ++d)
    out[d] = cache_elem(p.value_cache, base + int64_t(d) * p.block_size);
  bool fp8 = p.cache_dtype == DType::fp8_e4m3 || p.cache_dtype == DType::fp8_e5m2;
  if (fp8)
    for (int d = 0; d < p.head_size; ++d) out[d] *= double(p.v_scale);
}

}  // namespace detail
}  // namespace pagedattn::ref
