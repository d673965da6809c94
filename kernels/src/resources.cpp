#include "pagedattn/resources.h"
#include "pagedattn/supported.h"

namespace pagedattn {

LaunchResources v1_resources(int warp_size, const Workload& w) {
  LaunchResources r;
  r.kernel = Kernel::v1;
  r.grid = {static_cast<unsigned>(w.num_heads), static_cast<unsigned>(w.num_seqs), 1};
  r.dynamic_smem_bytes = attention_smem_bytes(warp_size, w.head_size,
                                              v1_partition_tokens(w.block_size, w.max_seq_len));
  return r;
}

LaunchResources v2_resources(int warp_size, const Workload& w) {
  LaunchResources r;
  r.kernel = Kernel::v2;
  r.grid = {static_cast<unsigned>(w.num_heads), static_cast<unsigned>(w.num_seqs),
            static_cast<unsigned>(max_num_partitions(w.max_seq_len, w.partition_size))};
  r.dynamic_smem_bytes = attention_smem_bytes(warp_size, w.head_size, w.partition_size);
  return r;
}

namespace {
LaunchResources grouped(Kernel k, int warp_size, const Workload& w, std::int64_t tokens,
                        unsigned parts) {
  LaunchResources r;
  r.kernel = k;
  const int ratio = w.num_kv_heads > 0 ? w.num_heads / w.num_kv_heads : 1;
  r.groups = head_groups(warp_size, w.head_size, w.block_size, ratio, tokens);
  r.grid = {static_cast<unsigned>(w.num_kv_heads * r.groups.blocks_per_kv_head),
            static_cast<unsigned>(w.num_seqs), parts};
  r.dynamic_smem_bytes =
      grouped_smem_bytes(warp_size, w.head_size, w.block_size, tokens, r.groups.heads_per_block);
  return r;
}
}  // namespace

const char* grouped_fallback_reason(const Workload& w) {
  if (w.num_kv_heads <= 0 || w.num_heads <= w.num_kv_heads)
    return "one query head per KV head: no KV read to share";
  return nullptr;
}

const char* grouped_launch_fallback_reason(Kernel k, int warp_size, const Workload& w) {
  if (const char* why = grouped_fallback_reason(w)) return why;
  const LaunchResources r =
      k == Kernel::v1 ? v1_grouped_resources(warp_size, w) : v2_grouped_resources(warp_size, w);
  if (r.groups.heads_per_block < 2)
    return "one query head per grouped block fits 32 KB of shared memory here: no KV read to "
           "share";
  return nullptr;
}

LaunchResources v1_grouped_resources(int warp_size, const Workload& w) {
  return grouped(Kernel::v1, warp_size, w, v1_partition_tokens(w.block_size, w.max_seq_len), 1);
}

LaunchResources v2_grouped_resources(int warp_size, const Workload& w) {
  return grouped(Kernel::v2, warp_size, w, w.partition_size,
                 static_cast<unsigned>(max_num_partitions(w.max_seq_len, w.partition_size)));
}

LaunchResources reduce_resources(int warp_size, const Workload& w) {
  LaunchResources r;
  r.kernel = Kernel::reduce;
  r.grid = {static_cast<unsigned>(w.num_heads), static_cast<unsigned>(w.num_seqs), 1};
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

std::int64_t vllm_v1_smem_bytes(int warp_size, const Workload& w) {
  const std::int64_t logits = round_up(w.max_seq_len, w.block_size) * 4;
  const std::int64_t outputs =
      static_cast<std::int64_t>(num_warps(warp_size) / 2) * w.head_size * 4;
  return logits > outputs ? logits : outputs;
}

}  // namespace pagedattn
