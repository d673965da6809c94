// What each kernel asks of the device: threads, grid, dynamic shared memory, and the
// longest sequence V1 fits in a shared-memory limit. The kernels carve their shared memory
// with the same layout functions, so the numbers printed by `pagedattn limits` are the
// numbers launched.
#pragma once
#include <cstdint>
#include "pagedattn/host_device.h"
#include "pagedattn/params.h"  // Kernel
#include "pagedattn/workload.h"

namespace pagedattn {

inline constexpr int kThreadsPerBlock = 128;

PAGEDATTN_HD constexpr std::int64_t round_up(std::int64_t v, std::int64_t m) {
  return (v + m - 1) / m * m;
}
PAGEDATTN_HD constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
PAGEDATTN_HD constexpr int num_warps(int warp_size) {
  return kThreadsPerBlock / warp_size;
}

// The block collective's scratch (src/block_collective.cuh): two halves of max_n values
// per warp, padded to 16 bytes. Both kernels carve it first.
PAGEDATTN_HD constexpr std::int64_t block_collective_floats(int warp_size, int max_n = 1) {
  return round_up(2 * max_n * num_warps(warp_size), 4);
}

// Attention kernel (V1 and V2 share it) dynamic shared memory, in floats:
//   [collective] the block collective's scratch (block max, exp-sum, overflow flags)
//   [q]          the query row in fp32, padded to 16 bytes
//   [logits]     one float per token of the partition (logits, then exps); after the
//                P.V loop it is reused for the cross-warp P.V scratch, (num_warps - 1) rows.
PAGEDATTN_HD constexpr std::int64_t attn_red_floats(int warp_size) {
  return block_collective_floats(warp_size);
}
PAGEDATTN_HD constexpr std::int64_t attn_q_offset(int warp_size) {
  return attn_red_floats(warp_size);
}
PAGEDATTN_HD constexpr std::int64_t attn_logits_offset(int warp_size, int head_size) {
  return attn_q_offset(warp_size) + round_up(head_size, 4);
}
PAGEDATTN_HD constexpr std::int64_t attn_logits_floats(int warp_size, int head_size,
                                                       std::int64_t partition_tokens) {
  return partition_tokens > std::int64_t(num_warps(warp_size) - 1) * head_size
             ? partition_tokens
             : std::int64_t(num_warps(warp_size) - 1) * head_size;
}
PAGEDATTN_HD constexpr std::int64_t attention_smem_bytes(int warp_size, int head_size,
                                                         std::int64_t partition_tokens) {
  return 4 * (attn_logits_offset(warp_size, head_size) +
              attn_logits_floats(warp_size, head_size, partition_tokens));
}

// Grouped attention kernel (src/grouped_attention_kernel.cuh): one block serves
// heads_per_block query heads of one KV head. Dynamic shared memory, in floats:
//   [collective] the block collective's scratch for group_max_heads values per call
//   [queries]    each head's query row (padded to 16 bytes), in the order of the heads
//   [logits]     each head's logits buffer (as above, padded to 16 bytes), likewise
// Packed together, every head's query row lies at a fixed offset from the first (an
// immediate in the kernel's shared loads, not a register per head); the total is
// heads_per_block slices of grouped_head_floats either way.
// The P.V layout of src/attention_phases.cuh (the grouped kernel static_asserts that the
// phases agree): a lane sums up to 8 consecutive tokens of a value row, BLOCK_SIZE / 8 lanes
// share a row, so a warp covers warp_size / lanes rows per pass and a lane keeps
// pv_rows_per_lane partial sums per head.
PAGEDATTN_HD constexpr int pv_rows_per_lane(int warp_size, int head_size, int block_size) {
  const int lanes_per_row = block_size < 8 ? 1 : block_size / 8;
  const int rows_per_pass = warp_size / lanes_per_row;
  return (head_size + rows_per_pass - 1) / rows_per_pass;
}
// A grouped lane holds G x pv_rows_per_lane partial P.V sums in registers. 128 of them
// left hipcc too few of wave 32's 256 VGPRs (gfx1030, fp8 caches at head sizes 128 and
// 256, block size 32: 6 to 22 VGPRs spilled to scratch); 112 leave every shape spill-free
// (kernels/README.md "Registers"). Only warp 32 at block size 32 reaches the bound.
inline constexpr int kGroupedAccPerLane = 112;
// group_max_heads bounds the per-head registers: at most 8 heads (4 past head size 128),
// and at most kGroupedAccPerLane partial P.V sums per lane.
PAGEDATTN_HD constexpr int group_max_heads(int warp_size, int head_size, int block_size) {
  const int by_head = head_size <= 128 ? 8 : 4;
  const int by_acc = kGroupedAccPerLane / pv_rows_per_lane(warp_size, head_size, block_size);
  return by_acc < by_head ? by_acc : by_head;
}
PAGEDATTN_HD constexpr std::int64_t grouped_logits_stride(int warp_size, int head_size,
                                                          std::int64_t partition_tokens) {
  return round_up(attn_logits_floats(warp_size, head_size, partition_tokens), 4);
}
// One head's share: its query row and its logits buffer.
PAGEDATTN_HD constexpr std::int64_t grouped_head_floats(int warp_size, int head_size,
                                                        std::int64_t partition_tokens) {
  return round_up(head_size, 4) + grouped_logits_stride(warp_size, head_size, partition_tokens);
}
PAGEDATTN_HD constexpr std::int64_t grouped_heads_offset(int warp_size, int head_size,
                                                         int block_size) {
  return block_collective_floats(warp_size, group_max_heads(warp_size, head_size, block_size));
}
PAGEDATTN_HD constexpr std::int64_t grouped_logits_offset(int warp_size, int head_size,
                                                          int block_size, int heads_per_block) {
  return grouped_heads_offset(warp_size, head_size, block_size) +
         heads_per_block * round_up(head_size, 4);
}
PAGEDATTN_HD constexpr std::int64_t grouped_smem_bytes(int warp_size, int head_size, int block_size,
                                                       std::int64_t partition_tokens,
                                                       int heads_per_block) {
  return 4 * (grouped_heads_offset(warp_size, head_size, block_size) +
              heads_per_block * grouped_head_floats(warp_size, head_size, partition_tokens));
}
// The shared memory a grouped block may take when choosing how many heads it serves:
// BI-V100's unsure per-block limit (the 32 KB of /work/shared/design is the lower of its
// two readings), so a grouped launch fits it and 48 KB at every shape where one head does.
inline constexpr std::int64_t kGroupedSmemBudget = 32 * 1024;

// How the ratio = num_heads / num_kv_heads query heads of a KV head are split over blocks:
// the fewest blocks whose heads fit group_max_heads and kGroupedSmemBudget (at least one
// head per block), the heads spread evenly (the last block may serve fewer).
struct HeadGroups {
  int heads_per_block = 1;
  int blocks_per_kv_head = 1;
};
PAGEDATTN_HD constexpr HeadGroups head_groups(int warp_size, int head_size, int block_size,
                                              int ratio, std::int64_t partition_tokens) {
  const int g = group_max_heads(warp_size, head_size, block_size);
  int most = ratio < g ? ratio : g;
  while (most > 1 && grouped_smem_bytes(warp_size, head_size, block_size, partition_tokens, most) >
                         kGroupedSmemBudget)
    --most;
  if (most < 1) most = 1;
  const int blocks = static_cast<int>(ceil_div(ratio, most));
  return {static_cast<int>(ceil_div(ratio, blocks)), blocks};
}

// Reduce kernel: the block collective's scratch + one weight per thread: it streams over
// partitions kThreadsPerBlock at a time, so its need does not grow with the sequence.
PAGEDATTN_HD constexpr std::int64_t reduce_red_floats(int warp_size) {
  return block_collective_floats(warp_size);
}
PAGEDATTN_HD constexpr std::int64_t reduce_smem_bytes(int warp_size) {
  return 4 * (reduce_red_floats(warp_size) + kThreadsPerBlock);
}

// V1 is one partition spanning the whole (block-rounded) sequence.
PAGEDATTN_HD constexpr std::int64_t v1_partition_tokens(int block_size, std::int64_t max_seq_len) {
  return max_seq_len > 0 ? round_up(max_seq_len, block_size) : block_size;
}
PAGEDATTN_HD constexpr std::int64_t max_num_partitions(std::int64_t max_seq_len,
                                                       int partition_size) {
  return ceil_div(max_seq_len, partition_size);
}

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct LaunchResources {
  Kernel kernel = Kernel::v1;  // kernel_entry_name() names it in messages
  Dim3 grid;
  int threads_per_block = kThreadsPerBlock;
  std::int64_t dynamic_smem_bytes = 0;
  HeadGroups groups{};  // grouped: grid x is num_kv_heads * groups.blocks_per_kv_head
};

// Grid (num_heads, num_seqs) and V1's shared memory at w.max_seq_len.
LaunchResources v1_resources(int warp_size, const Workload& w);
// V2's partition kernel; grid z is max_num_partitions (0 partitions: nothing to launch).
LaunchResources v2_resources(int warp_size, const Workload& w);
LaunchResources reduce_resources(int warp_size, const Workload& w);
// Why Options::grouped runs the per-head kernels for w (nullptr: it runs grouped): one
// query head per KV head, nothing to share. The grouped kernels are built for every
// supported shape (supported.h).
const char* grouped_fallback_reason(const Workload& w);
// Why Options::grouped runs the per-head kernel for this launch (nullptr: the grouped one):
// grouped_fallback_reason, or a grouped block that would serve one query head (V1's
// logits of a long sequence, or head size 256 with long partitions, leave room for one
// head in kGroupedSmemBudget): it would read what the per-head kernel reads, with a larger
// collective, so V1 would be refused a few tokens below the per-head kernel's limit.
const char* grouped_launch_fallback_reason(Kernel k, int warp_size, const Workload& w);
// The grouped V1 / V2 partition kernels (Options::grouped where grouped_fallback_reason is null):
// grid (num_kv_heads * blocks_per_kv_head, num_seqs, 1 or max_num_partitions).
LaunchResources v1_grouped_resources(int warp_size, const Workload& w);
LaunchResources v2_grouped_resources(int warp_size, const Workload& w);

// The longest max_seq_len whose V1 launch fits `smem_limit_bytes` of dynamic shared
// memory (0 if even one token does not fit).
std::int64_t v1_max_seq_len(int warp_size, int head_size, int block_size,
                            std::int64_t smem_limit_bytes);

// vLLM's own V1 request, for comparison: max(round_up(L, block) * 4, (warps / 2) * head * 4).
std::int64_t vllm_v1_smem_bytes(int warp_size, const Workload& w);

// Dynamic shared memory a launch may use without cudaFuncSetAttribute opt-in.
inline constexpr std::int64_t kSmemWithoutOptIn = 48 * 1024;

}  // namespace pagedattn
