// The attention call as one named-argument value: the tensors and scalars of vLLM's
// paged_attention_v1 / _v2, by name instead of by position. Inside the library and its
// tools every call is written this way; the vLLM-ordered entry points (api.h) build one
// and forward to it. Swapping two arguments of the same type no longer compiles silently:
// each is assigned by name.
#pragma once
#include <cstdint>
#include <string>
#include "pagedattn/tensor_view.h"

namespace pagedattn {

// vLLM's block-sparse tail. Only its defaults are supported (validation rejects others);
// kept as a value so the vLLM-ordered entry points can pass what they were given.
struct BlockSparse {
  std::int64_t tp_rank = 0;
  std::int64_t local_blocks = 0;
  std::int64_t vert_stride = 0;
  std::int64_t block_size = 64;
  std::int64_t head_sliding_step = 0;
};

struct AttentionCall {
  TensorView out;                   // [num_seqs, num_heads, head_size], scalar
  TensorView exp_sums, max_logits;  // V2: [num_seqs, num_heads, max_num_partitions], f32
  TensorView tmp_out;               // V2: [.., max_num_partitions, head_size]
  TensorView query;                 // [num_seqs, num_heads, head_size]
  TensorView key_cache;             // [num_blocks, num_kv_heads, head_size/x, block_size, x]
  TensorView value_cache;           // [num_blocks, num_kv_heads, head_size, block_size]
  std::int64_t num_kv_heads = 0;
  double scale = 1.0;
  TensorView block_tables;  // [num_seqs, max_blocks_per_seq], i32
  TensorView seq_lens;      // [num_seqs], i32
  std::int64_t block_size = 16;
  std::int64_t max_seq_len = 0;
  TensorView alibi_slopes;              // undefined: no ALiBi
  std::string kv_cache_dtype = "auto";  // "auto", "fp8", "fp8_e4m3", "fp8_e5m2"
  double k_scale = 1.0;                 // fp8 caches
  double v_scale = 1.0;
  BlockSparse blocksparse{};
};

}  // namespace pagedattn
