// The kernel tests' Problem (reference.h) as the exact reference's ref::Problem, over the
// same bytes: one conversion for the kernel tests and the property tests.
#pragma once
#include "pagedattn_ref/reference.h"
#include "reference.h"

namespace pagedattn::test {

inline ref::DType to_ref(DType t) {
  return t == DType::f32 ? ref::DType::f32 : t == DType::f16 ? ref::DType::f16 : ref::DType::bf16;
}

inline ref::Problem to_ref(const Problem& p) {
  ref::Problem r;
  r.num_seqs = static_cast<int>(p.seq_lens.size());
  r.num_heads = p.c.num_heads;
  r.num_kv_heads = p.c.num_kv_heads;
  r.head_size = p.c.head_size;
  r.block_size = p.c.block_size;
  r.num_blocks = p.num_blocks;
  r.max_blocks_per_seq = p.max_blocks_per_seq;
  r.scalar_dtype = to_ref(p.c.scalar);
  r.cache_dtype = p.c.cache == CacheFormat::same       ? r.scalar_dtype
                  : p.c.cache == CacheFormat::fp8_e4m3 ? ref::DType::fp8_e4m3
                                                       : ref::DType::fp8_e5m2;
  r.query = p.query.data();
  r.key_cache = p.key_cache.data();
  r.value_cache = p.value_cache.data();
  r.block_tables = p.block_tables.data();
  r.seq_lens = p.seq_lens.data();
  r.alibi_slopes = p.c.alibi ? p.alibi.data() : nullptr;
  r.scale = static_cast<float>(p.c.scale);
  r.k_scale = static_cast<float>(p.c.k_scale);
  r.v_scale = static_cast<float>(p.c.v_scale);
  return r;
}

}  // namespace pagedattn::test
