// The single by-value argument of each kernel. Plain data so it is the same object for
// nvcc's parameter buffer and the emulator's per-thread copy.
#pragma once
#include <cstdint>

namespace pagedattn::detail {

struct AttnArgs {
  void* out;          // final_output: [num_seqs, num_heads, head_size] scalar
  float* exp_sums;    // else: [num_seqs, num_heads, max_num_partitions]
  float* max_logits;  //       [num_seqs, num_heads, max_num_partitions]
  void* tmp_out;      //       [.., max_num_partitions, head_size], f32 or scalar
  const void* query;
  const void* key_cache;
  const void* value_cache;
  const std::int32_t* block_tables;
  const std::int32_t* seq_lens;
  const float* alibi_slopes;  // null: no ALiBi
  int num_heads;
  int num_kv_heads;
  int max_num_partitions;  // grid z (1 for V1)
  int heads_per_block;     // grouped kernel: resources.h's HeadGroups
  int blocks_per_kv_head;
  int partition_size;  // tokens; V1: the whole block-rounded sequence
  std::int64_t q_seq_stride;
  std::int64_t kv_block_stride;
  std::int64_t kv_head_stride;
  std::int64_t block_table_stride;
  float qk_scale;  // multiplies q.k: scale (times k_scale for fp8 under exact numerics)
  float k_scale;   // fp8 with round_p: applied per element, as vLLM does
  float v_scale;   // fp8: per element (round_p) or once on the output (exact)
  bool fp8_e5m2;   // fp8 cache format (else E4M3); ignored for scalar caches
  bool final_output;
  // NumericsChoices, one runtime flag each (no extra instantiations):
  bool eps;       // epsilon_denominator: scale by 1 / (s + 1e-6) instead of dividing by s
  bool round_p;   // round_probabilities (and fp8-dequantized elements) to the scalar type
  bool tmp_fp32;  // !partials_in_output_dtype: tmp_out holds floats (else the scalar type)
};

struct ReduceArgs {
  void* out;
  const float* exp_sums;
  const float* max_logits;
  const void* tmp_out;
  const std::int32_t* seq_lens;
  int num_heads;
  int head_size;
  int max_num_partitions;
  int partition_size;
  bool eps;       // epsilon_denominator
  bool tmp_fp32;  // !partials_in_output_dtype
};

}  // namespace pagedattn::detail
