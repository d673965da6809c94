#include "pagedattn/resources.h"

namespace pagedattn {

LaunchResources v1_resources(int warp_size, int num_seqs, int num_heads, int head_size,
                             int block_size, std::int64_t max_seq_len) {
  LaunchResources r;
  r.kernel = "paged_attention_v1";
  r.grid = {static_cast<unsigned>(num_heads), static_cast<unsigned>(num_seqs), 1};
  r.dynamic_smem_bytes =
      attention_smem_bytes(warp_size, head_size, v1_partition_tokens(block_size, max_seq_len));
  return r;
}

LaunchResources v2_resources(int warp_size, int num_seqs, int num_heads, int head_size,
                             std::int64_t max_seq_len, int partition_size) {
  LaunchResources r;
  r.kernel = "paged_attention_v2";
  r.grid = {static_cast<unsigned>(num_heads), static_cast<unsigned>(num_seqs),
            static_cast<unsigned>(max_num_partitions(max_seq_len, partition_size))};
  r.dynamic_smem_bytes = attention_smem_bytes(warp_size, head_size, partition_size);
  return r;
}

LaunchResources reduce_resources(int warp_size, int num_seqs, int num_heads) {
  LaunchResources r;
  r.kernel = "paged_attention_v2_reduce";
  r.grid = {static_cast<unsigned>(num_heads), static_cast<unsigned>(num_seqs), 1};
  r.dynamic_smem_bytes = reduce_smem_bytes(warp_size);
  return r;
}

std::int64_t v1_max_seq_len(int warp_size, int head_size, int block_size,
                            std::int64_t smem_limit_bytes) {
  // The need is a step function of max_seq_len (one step per block): take the largest
  // whole number of blocks whose logits fit, then check the floor set by the P.V scratch.
  const std::int64_t floats = smem_limit_bytes / 4 - attn_logits_offset(warp_size, head_size);
  if (floats < block_size) return 0;
  const std::int64_t tokens = floats / block_size * block_size;
  if (attention_smem_bytes(warp_size, head_size, tokens) > smem_limit_bytes) return 0;
  return tokens;
}

std::int64_t vllm_v1_smem_bytes(int warp_size, int head_size, int block_size,
                                std::int64_t max_seq_len) {
  const std::int64_t logits = round_up(max_seq_len, block_size) * 4;
  const std::int64_t outputs = static_cast<std::int64_t>(num_warps(warp_size) / 2) * head_size * 4;
  return logits > outputs ? logits : outputs;
}

}  // namespace pagedattn
