#include "pagedattn_testing/case.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "pagedattn/validate.h"

namespace pagedattn::testing {
namespace {

float as_float(double v, const char* name) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) != v) {
    throw std::invalid_argument(std::string("pagedattn::testing: ") + name +
                                " must be a float value (the reference reads it as float), got " +
                                std::to_string(v));
  }
  return f;
}

TensorView view(const void* data, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(const_cast<void*>(data), t, shape);
}

}  // namespace

void Case::allocate() {
  const KvLayout l = layout();
  const std::size_t es = traits(cache_element()).size;
  query.assign(static_cast<std::size_t>(num_seqs) * num_heads * head_size * traits(scalar).size, 0);
  key_cache.assign(static_cast<std::size_t>(num_blocks * l.key_block_elements()) * es, 0);
  value_cache.assign(static_cast<std::size_t>(num_blocks * l.value_block_elements()) * es, 0);
  block_tables.assign(static_cast<std::size_t>(num_seqs) * max_blocks_per_seq, 0);
  seq_lens.assign(static_cast<std::size_t>(num_seqs), 0);
}

KvLayout Case::layout() const {
  return KvLayout::of(num_kv_heads, head_size, block_size,
                      static_cast<int>(traits(cache_element()).size));
}

double Case::q(int seq, int head, int d) const {
  return decode(scalar, query.data(), q_index(seq, head, d));
}
double Case::key(Block b, KvHead h, Slot s, Dim d) const {
  return decode(cache_element(), key_cache.data(),
                static_cast<std::size_t>(layout().key(b, h, s, d))) *
         key_scale();
}
double Case::value(Block b, KvHead h, Slot s, Dim d) const {
  return decode(cache_element(), value_cache.data(),
                static_cast<std::size_t>(layout().value(b, h, s, d))) *
         value_scale();
}

double Case::set_q(int seq, int head, int d, double want) {
  return store(scalar, query.data(), q_index(seq, head, d), want);
}
double Case::set_key(Block b, KvHead h, Slot s, Dim d, double want) {
  return store(cache_element(), key_cache.data(),
               static_cast<std::size_t>(layout().key(b, h, s, d)), want / key_scale()) *
         key_scale();
}
double Case::set_value(Block b, KvHead h, Slot s, Dim d, double want) {
  return store(cache_element(), value_cache.data(),
               static_cast<std::size_t>(layout().value(b, h, s, d)), want / value_scale()) *
         value_scale();
}

namespace {
// Element bytes of `count` values want[i] / scale, encoded as encode() does (rounded to
// float first), written `size` bytes each at base + offset(i) elements.
template <class Offset>
void store_scaled(DType t, const double* want, std::size_t count, double scale, std::uint8_t* base,
                  Offset offset) {
  thread_local std::vector<float> f;
  thread_local std::vector<std::uint8_t> bytes;
  const std::size_t es = traits(t).size;
  f.resize(count);
  bytes.resize(count * es);
  for (std::size_t i = 0; i < count; ++i) f[i] = static_cast<float>(want[i] / scale);
  encode_run(t, f.data(), count, bytes.data());
  for (std::size_t i = 0; i < count; ++i)
    std::memcpy(base + static_cast<std::size_t>(offset(i)) * es, &bytes[i * es], es);
}
}  // namespace

void Case::set_key_token(Block b, KvHead h, Slot s, const double* want) {
  const KvLayout l = layout();
  store_scaled(cache_element(), want, static_cast<std::size_t>(head_size), key_scale(),
               key_cache.data(), [&](std::size_t d) { return l.key(b, h, s, Dim{int(d)}); });
}

void Case::set_value_block(Block b, KvHead h, const double* want) {
  const KvLayout l = layout();
  const int D = head_size;
  store_scaled(cache_element(), want, static_cast<std::size_t>(block_size) * D, value_scale(),
               value_cache.data(),
               [&](std::size_t i) { return l.value(b, h, Slot{int(i / D)}, Dim{int(i % D)}); });
}

std::vector<char> Case::used_slots() const {
  std::vector<char> used(static_cast<std::size_t>(num_blocks) * block_size, 0);
  for (int s = 0; s < num_seqs; ++s) {
    for (std::int64_t t = 0; t < seq_lens[s]; ++t) {
      const Physical p = where(s, t);
      used[static_cast<std::size_t>(p.block.v) * block_size + p.slot.v] = 1;
    }
  }
  return used;
}

AttentionCall Case::call() const {
  const std::int64_t S = num_seqs, H = num_heads, D = head_size;
  const KvLayout l = layout();
  const auto ks = l.key_shape(num_blocks);
  const auto vs = l.value_shape(num_blocks);
  AttentionCall c;
  c.query = view(query.data(), scalar, {S, H, D});
  c.key_cache = view(key_cache.data(), cache_storage(), {ks[0], ks[1], ks[2], ks[3], ks[4]});
  c.value_cache = view(value_cache.data(), cache_storage(), {vs[0], vs[1], vs[2], vs[3]});
  c.num_kv_heads = num_kv_heads;
  c.scale = scale;
  c.block_tables = view(block_tables.data(), DType::i32, {S, max_blocks_per_seq});
  c.seq_lens = view(seq_lens.data(), DType::i32, {S});
  c.block_size = block_size;
  c.max_seq_len = max_seq_len;
  if (has_alibi()) c.alibi_slopes = view(alibi_slopes.data(), DType::f32, {H});
  c.kv_cache_dtype = kv_cache_dtype(cache);
  c.k_scale = k_scale;
  c.v_scale = v_scale;
  return c;
}

ref::Problem Case::exact_problem() const {
  ref::Problem p;
  p.num_seqs = num_seqs;
  p.num_heads = num_heads;
  p.num_kv_heads = num_kv_heads;
  p.head_size = head_size;
  p.block_size = block_size;
  p.num_blocks = static_cast<int>(num_blocks);
  p.max_blocks_per_seq = max_blocks_per_seq;
  p.scalar_dtype = traits(scalar).ref;
  p.cache_dtype = traits(cache_element()).ref;
  p.query = query.data();
  p.key_cache = key_cache.data();
  p.value_cache = value_cache.data();
  p.block_tables = block_tables.data();
  p.seq_lens = seq_lens.data();
  p.alibi_slopes = has_alibi() ? alibi_slopes.data() : nullptr;
  p.scale = as_float(scale, "scale");
  p.k_scale = as_float(k_scale, "k_scale");
  p.v_scale = as_float(v_scale, "v_scale");
  return p;
}

Case case_of(const AttentionCall& given) {
  AttentionCall call = given;
  // The output is not read: without one, a placeholder of the query's shape lets the
  // validation run (it reads no tensor data).
  if (!call.out.defined() && call.query.defined() && call.query.ndim == 3) {
    call.out =
        TensorView::contiguous(call.query.data, call.query.dtype,
                               {call.query.shape[0], call.query.shape[1], call.query.shape[2]});
    call.exp_sums = call.max_logits = call.tmp_out = TensorView{};
  }
  const AttentionParams p =
      validate_attention(call.exp_sums.defined() ? Kernel::v2 : Kernel::v1, call, Options{});
  // The judge reads every live slot through the block table: the index rules too.
  validate_indices(p, static_cast<const std::int32_t*>(call.block_tables.data),
                   static_cast<const std::int32_t*>(call.seq_lens.data));
  Case c;
  c.scalar = p.scalar;
  c.cache = p.cache;
  c.num_seqs = p.num_seqs;
  c.num_heads = p.num_heads;
  c.num_kv_heads = p.num_kv_heads;
  c.head_size = p.head_size;
  c.block_size = p.block_size;
  c.num_blocks = p.num_blocks;
  c.max_blocks_per_seq = p.max_blocks_per_seq;
  c.max_seq_len = p.max_seq_len;
  c.scale = p.scale;
  c.k_scale = p.k_scale;
  c.v_scale = p.v_scale;
  c.allocate();
  const std::size_t qs = traits(c.scalar).size, es = traits(c.cache_element()).size;
  const auto* q = static_cast<const std::uint8_t*>(call.query.data);
  for (int s = 0; s < c.num_seqs; ++s) {
    for (int h = 0; h < c.num_heads; ++h) {
      const std::int64_t from = s * call.query.stride(0) + h * call.query.stride(1);
      std::memcpy(&c.query[c.q_index(s, h, 0) * qs], q + from * qs, c.head_size * qs);
    }
  }
  // A block's elements of one KV head are contiguous in both caches (validation requires
  // the inner dimensions to be, and x to divide head_size); blocks and heads may be strided.
  const std::int64_t head_elems = std::int64_t{c.head_size} * c.block_size;
  const auto* kc = static_cast<const std::uint8_t*>(call.key_cache.data);
  const auto* vc = static_cast<const std::uint8_t*>(call.value_cache.data);
  for (std::int64_t b = 0; b < c.num_blocks; ++b) {
    for (int h = 0; h < c.num_kv_heads; ++h) {
      const std::int64_t to = (b * c.num_kv_heads + h) * head_elems;
      std::memcpy(&c.key_cache[to * es],
                  kc + (b * call.key_cache.stride(0) + h * call.key_cache.stride(1)) * es,
                  head_elems * es);
      std::memcpy(&c.value_cache[to * es],
                  vc + (b * call.value_cache.stride(0) + h * call.value_cache.stride(1)) * es,
                  head_elems * es);
    }
  }
  const auto* bt = static_cast<const std::int32_t*>(call.block_tables.data);
  for (int s = 0; s < c.num_seqs; ++s) {
    std::copy_n(bt + s * call.block_tables.stride(0), c.max_blocks_per_seq, &c.table(s, 0));
  }
  const auto* sl = static_cast<const std::int32_t*>(call.seq_lens.data);
  for (int s = 0; s < c.num_seqs; ++s) c.seq_lens[s] = sl[s * call.seq_lens.stride(0)];
  if (call.alibi_slopes.defined()) {
    const auto* a = static_cast<const float*>(call.alibi_slopes.data);
    for (int h = 0; h < c.num_heads; ++h)
      c.alibi_slopes.push_back(a[h * call.alibi_slopes.stride(0)]);
  }
  return c;
}

}  // namespace pagedattn::testing
