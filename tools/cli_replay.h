// A replay folder: the .npy files of one decode step, named after vLLM's arguments,
// loaded and checked against the contract (shapes, dtypes, index values) before any
// kernel runs. Every error names the file and the rule broken.
#pragma once
#include <cstdint>
#include <string>

#include "npy.h"
#include "pagedattn/dtypes.h"
#include "pagedattn/tensor_view.h"

namespace cli {

struct Replay {
  npy::Array query, key_cache, value_cache, block_tables, seq_lens, alibi_slopes;
  bool has_alibi = false;

  pagedattn::DType scalar = pagedattn::DType::f32;  // query / out
  pagedattn::DType cache = pagedattn::DType::f32;   // key_cache / value_cache elements
  std::string out_descr;                            // .npy type string of the outputs

  // Derived as vLLM's caller derives them.
  int num_seqs = 0, num_heads = 0, head_size = 0;
  int num_kv_heads = 0;  // key_cache.shape[1]
  int block_size = 0;    // key_cache.shape[3]
  std::int64_t num_blocks = 0;
  int max_blocks_per_seq = 0;
  std::int64_t max_seq_len = 0;  // max(seq_lens), 0 with no sequences
};

// `bf16`: '<u2' arrays hold bfloat16 bits. `kv_cache_dtype`: "auto" (caches have the
// query's dtype) or "fp8_e4m3"/"fp8_e5m2" (caches are '|u1' bytes). Throws InputError.
Replay load_replay(const std::string& dir, bool bf16, const std::string& kv_cache_dtype);

// A contiguous view of an array's bytes as `dtype` (an empty array stays "defined").
pagedattn::TensorView view_of(npy::Array& a, pagedattn::DType dtype);

}  // namespace cli
