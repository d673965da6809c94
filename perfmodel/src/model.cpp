// The model's arithmetic (assumptions in perfmodel/README.md). All sequences of a workload
// have max_seq_len tokens; every (sequence, head) block of a kernel is alike.
#include <algorithm>
#include <cmath>
#include <limits>

#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"

namespace pagedattn::perf {
namespace {

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
  if (k.launchable && k.smem_bytes > d.shared_memory_per_block_optin) {
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

// The attention kernels' common terms for one workload.
struct Terms {
  double seqs_heads;  // (sequence, query head) pairs
  double L;           // tokens per sequence
  double kv_bytes;    // K and V that exist: once per (sequence, KV head)
  double table_bytes, q_bytes, out_bytes, attn_flops;
  double token_cycles;  // per token, one head, a block alone on a unit (fitted)
  double head_cycles;   // per token, each further head of a grouped block (derived)
  double fixed;
  std::int64_t parts;
  double partial_bytes;
};

Terms terms(const Device& d, const Workload& w) {
  Terms t;
  t.seqs_heads = double(w.num_seqs) * w.num_heads;
  t.L = double(w.max_seq_len);
  t.kv_bytes = 2.0 * w.num_seqs * w.num_kv_heads * t.L * w.head_size * w.cache_elem_bytes;
  t.table_bytes =
      4.0 * w.num_seqs * double(ceil_div(std::max<std::int64_t>(w.max_seq_len, 1), w.block_size));
  t.q_bytes = t.seqs_heads * w.head_size * w.io_elem_bytes;
  t.out_bytes = t.q_bytes;
  // q.k and p.v: one multiply-add each per token, head element and head.
  t.attn_flops = 4.0 * t.seqs_heads * t.L * w.head_size;
  t.token_cycles = d.param("cycles_per_token") * w.head_size / 128.0;
  // A grouped block's further head adds its own q.k and p.v multiply-adds per token
  // (2 x head_size; its loads are the first head's), issued over the block's threads at
  // one per thread per cycle, or over the unit's fp32 lanes (fp32_tflops / (2 x clock x
  // units)) where it has fewer: counted on top of the fitted latency, not hidden under it.
  const double lanes = d.fp32_tflops * 1e6 / (2.0 * d.clock_mhz * d.multiprocessor_count);
  t.head_cycles = 2.0 * w.head_size / std::min<double>(kThreadsPerBlock, lanes);
  t.fixed = d.param("block_fixed_cycles");
  t.parts = std::max<std::int64_t>(max_num_partitions(w.max_seq_len, w.partition_size), 1);
  // Partials: fp32 head_size-vector plus max and exp-sum per (head, partition).
  t.partial_bytes = t.seqs_heads * t.parts * (4.0 * w.head_size + 8.0);
  return t;
}

// V1 (parts = 1) or V2's partition kernel, per head or grouped. Grid and shared memory are
// the kernels' own (resources.h); the DRAM bytes are the same either way (a KV head's
// blocks run side by side in blockIdx.x, so re-reads are assumed served by L2), the loads
// are not (kv_load_bytes).
KernelEstimate attention(const Device& d, const Workload& w, const Terms& t, Kernel k,
                         bool grouped) {
  KernelEstimate e;
  e.kernel = k;
  e.grouped = grouped;
  const bool v1 = k == Kernel::v1;
  const LaunchResources r =
      grouped ? (v1 ? v1_grouped_resources(d.warp_size, w) : v2_grouped_resources(d.warp_size, w))
              : (v1 ? v1_resources(d.warp_size, w) : v2_resources(d.warp_size, w));
  const std::int64_t parts = v1 ? 1 : t.parts;
  e.blocks = std::int64_t(r.grid.x) * r.grid.y * parts;
  e.threads_per_block = r.threads_per_block;
  e.smem_bytes = r.dynamic_smem_bytes;
  const double ratio = w.num_kv_heads > 0 ? double(w.num_heads) / w.num_kv_heads : 1.0;
  // Query heads per block: the most, and the mean (the last block of a KV head may serve
  // fewer: HeadGroups spreads them evenly).
  e.heads_per_block = grouped ? r.groups.heads_per_block : 1;
  const double mean_heads = grouped ? ratio / r.groups.blocks_per_kv_head : 1.0;
  e.kv_load_bytes = t.kv_bytes * (grouped ? r.groups.blocks_per_kv_head : ratio);
  e.dram_bytes = t.kv_bytes + t.table_bytes + t.q_bytes + (v1 ? t.out_bytes : t.partial_bytes);
  e.flops = t.attn_flops;
  const double span = v1 ? t.L : t.L / parts;
  const double longest = v1 ? t.L : double(std::min<std::int64_t>(w.max_seq_len, w.partition_size));
  const auto cycles = [&](double tokens, double heads) {
    return t.fixed + tokens * (t.token_cycles + (heads - 1) * t.head_cycles);
  };
  if (grouped) {
    if (const char* why = grouped_fallback_reason(w)) {
      e.launchable = false;
      e.reason = why;
    }
  }
  finish(d, e, cycles(span, mean_heads), cycles(longest, e.heads_per_block));
  return e;
}

}  // namespace

Estimate estimate(const Device& d, const Workload& w) {
  Estimate e;
  const Terms t = terms(d, w);
  e.v1 = attention(d, w, t, Kernel::v1, false);
  e.v2 = attention(d, w, t, Kernel::v2, false);
  e.v1_grouped = attention(d, w, t, Kernel::v1, true);
  e.v2_grouped = attention(d, w, t, Kernel::v2, true);

  KernelEstimate& r = e.reduce;
  r.kernel = Kernel::reduce;
  r.blocks = static_cast<std::int64_t>(t.seqs_heads);
  r.smem_bytes = reduce_smem_bytes(d.warp_size);
  r.dram_bytes = t.partial_bytes + t.out_bytes;
  r.flops = t.seqs_heads * t.parts * (2.0 * w.head_size + 4.0);
  const double reduce_cycles =
      d.param("reduce_fixed_cycles") +
      t.parts * d.param("reduce_cycles_per_partition") * std::max(1.0, w.head_size / 128.0);
  finish(d, r, reduce_cycles, reduce_cycles);

  e.v1_us = e.v1.time_us;
  e.v2_us = e.v2.time_us + r.time_us;
  e.v1_grouped_us = e.v1_grouped.time_us;
  e.v2_grouped_us = e.v2_grouped.time_us + r.time_us;
  return e;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::v1:
      return "V1";
    case Variant::v2:
      return "V2";
    case Variant::v1_grouped:
      return "grouped V1";
    case Variant::v2_grouped:
      return "grouped V2";
  }
  return "?";
}

double time_us(const Estimate& e, Variant v) {
  switch (v) {
    case Variant::v1:
      return e.v1_us;
    case Variant::v2:
      return e.v2_us;
    case Variant::v1_grouped:
      return e.v1_grouped_us;
    case Variant::v2_grouped:
      return e.v2_grouped_us;
  }
  return std::numeric_limits<double>::infinity();
}

std::int64_t crossover_seq_len(const Device& device, Workload w, std::int64_t max_len,
                               std::int64_t step, Variant first, Variant later) {
  for (std::int64_t L = step; L <= max_len; L += step) {
    w.max_seq_len = L;
    const Estimate e = estimate(device, w);
    if (time_us(e, later) < time_us(e, first)) return L;
  }
  return 0;
}

}  // namespace pagedattn::perf
