// The model's arithmetic (assumptions in perfmodel/README.md). All sequences of a workload
// have max_seq_len tokens; every (sequence, head) block of a kernel is alike.
#include <algorithm>
#include <cmath>
#include <limits>

#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"

namespace pagedattn::perf {
namespace {

struct BlockShape {
  std::int64_t blocks = 0;
  double cycles_per_block = 0;  // block work when it has an SM to itself
  std::int64_t smem = 0;
};

// Resident blocks per SM and which resource limits them.
void occupancy(const Device& d, KernelEstimate& k) {
  const int by_threads = d.max_threads_per_multiprocessor / k.threads_per_block;
  const int by_regs = static_cast<int>(d.param("registers_per_multiprocessor") /
                                       (d.param("registers_per_thread") * k.threads_per_block));
  const int by_blocks = static_cast<int>(d.param("max_blocks_per_multiprocessor"));
  const int by_smem = k.smem_bytes > 0
                          ? static_cast<int>(std::min<std::int64_t>(
                                d.shared_memory_per_multiprocessor / k.smem_bytes, 1 << 20))
                          : 1 << 20;
  int r = by_threads;
  k.occupancy_limiter = "threads";
  if (by_regs < r) r = by_regs, k.occupancy_limiter = "registers";
  if (by_blocks < r) r = by_blocks, k.occupancy_limiter = "blocks";
  if (by_smem < r) r = by_smem, k.occupancy_limiter = "shared memory";
  k.resident_blocks_per_sm = std::max(r, 0);
  k.occupancy =
      double(k.resident_blocks_per_sm) * k.threads_per_block / d.max_threads_per_multiprocessor;
}

// Time of a kernel: its block work spread evenly over the SMs (a lower bound that stays
// monotone in the work, unlike a wave count), never less than one full block; an SM
// overlaps at most block_overlap blocks (fewer if fewer are resident or assigned).
void finish(const Device& d, KernelEstimate& k, double avg_block_cycles, double max_block_cycles) {
  occupancy(d, k);
  if (k.smem_bytes > d.shared_memory_per_block_optin) {
    k.launchable = false;
    k.reason = "needs " + std::to_string(k.smem_bytes) + " bytes of shared memory; " + d.name +
               " allows " + std::to_string(d.shared_memory_per_block_optin);
  }
  const double inf = std::numeric_limits<double>::infinity();
  if (!k.launchable || k.resident_blocks_per_sm == 0) {
    k.launchable = false;
    if (k.reason.empty()) k.reason = "no block fits on a compute unit";
    k.t_issue_us = k.t_memory_us = k.t_flops_us = k.time_us = inf;
    return;
  }
  const double sms = d.multiprocessor_count;
  k.waves = k.blocks / (sms * k.resident_blocks_per_sm);
  const double per_sm = k.blocks / sms;
  const double overlap =
      std::max(1.0, std::min({d.param("block_overlap"), double(k.resident_blocks_per_sm), per_sm}));
  k.t_issue_us = std::max(per_sm * avg_block_cycles / overlap, max_block_cycles) / d.clock_mhz;
  // One bandwidth figure (the profile's memory_bandwidth_gbps): the time divides by what a
  // copy reaches of it, the fraction below is of it.
  k.t_memory_us = k.dram_bytes / (d.memory_bandwidth_gbps * d.param("bandwidth_efficiency") * 1e3);
  k.t_flops_us = k.flops / (d.fp32_tflops * 1e6);
  k.t_launch_us = d.param("launch_overhead_us");
  double t = k.t_issue_us;
  k.bound = "issue";
  if (k.t_memory_us > t) t = k.t_memory_us, k.bound = "memory";
  if (k.t_flops_us > t) t = k.t_flops_us, k.bound = "flops";
  k.time_us = t + k.t_launch_us;
  k.bandwidth_fraction = k.dram_bytes / (k.time_us * 1e3) / d.memory_bandwidth_gbps;
}

}  // namespace

Estimate estimate(const Device& d, const Workload& w) {
  Estimate e;
  const double heads = double(w.num_seqs) * w.num_heads;
  const double L = double(w.max_seq_len);
  // K and V once per KV head: a group's query heads run side by side (blockIdx.x) and
  // re-read the same cache lines, assumed served by L2.
  const double kv_bytes = 2.0 * w.num_seqs * w.num_kv_heads * L * w.head_size * w.cache_elem_bytes;
  const double table_bytes =
      4.0 * w.num_seqs * double(ceil_div(std::max<std::int64_t>(w.max_seq_len, 1), w.block_size));
  const double q_bytes = heads * w.head_size * w.io_elem_bytes;
  const double out_bytes = q_bytes;
  // q.k and p.v: one multiply-add each per token, head element and head.
  const double attn_flops = 4.0 * heads * L * w.head_size;
  const double token_cycles = d.param("cycles_per_token") * w.head_size / 128.0;
  const double fixed = d.param("block_fixed_cycles");

  KernelEstimate& v1 = e.v1;
  v1.kernel = Kernel::v1;
  v1.blocks = static_cast<std::int64_t>(heads);
  v1.smem_bytes = attention_smem_bytes(d.warp_size, w.head_size,
                                       v1_partition_tokens(w.block_size, w.max_seq_len));
  v1.dram_bytes = kv_bytes + table_bytes + q_bytes + out_bytes;
  v1.flops = attn_flops;
  finish(d, v1, fixed + L * token_cycles, fixed + L * token_cycles);

  const std::int64_t parts =
      std::max<std::int64_t>(max_num_partitions(w.max_seq_len, w.partition_size), 1);
  KernelEstimate& v2 = e.v2;
  v2.kernel = Kernel::v2;
  v2.blocks = static_cast<std::int64_t>(heads) * parts;
  v2.smem_bytes = attention_smem_bytes(d.warp_size, w.head_size, w.partition_size);
  // Partials: fp32 head_size-vector plus max and exp-sum per (head, partition).
  const double partial_bytes = heads * parts * (4.0 * w.head_size + 8.0);
  v2.dram_bytes = kv_bytes + table_bytes + q_bytes + partial_bytes;
  v2.flops = attn_flops;
  finish(d, v2, fixed + L / parts * token_cycles,
         fixed + double(std::min<std::int64_t>(w.max_seq_len, w.partition_size)) * token_cycles);

  KernelEstimate& r = e.reduce;
  r.kernel = Kernel::reduce;
  r.blocks = static_cast<std::int64_t>(heads);
  r.smem_bytes = reduce_smem_bytes(d.warp_size);
  r.dram_bytes = partial_bytes + out_bytes;
  r.flops = heads * parts * (2.0 * w.head_size + 4.0);
  const double reduce_cycles =
      d.param("reduce_fixed_cycles") +
      parts * d.param("reduce_cycles_per_partition") * std::max(1.0, w.head_size / 128.0);
  finish(d, r, reduce_cycles, reduce_cycles);

  e.v1_us = v1.time_us;
  e.v2_us = v2.time_us + r.time_us;
  return e;
}

std::int64_t crossover_seq_len(const Device& device, Workload w, std::int64_t max_len,
                               std::int64_t step) {
  for (std::int64_t L = step; L <= max_len; L += step) {
    w.max_seq_len = L;
    const Estimate e = estimate(device, w);
    if (e.v2_us < e.v1_us) return L;
  }
  return 0;
}

}  // namespace pagedattn::perf
