// Host side of a launch, the same for both executors: validated params -> kernel
// arguments -> launches, and a refused launch -> LaunchError naming the resource.
#pragma once
#include <string>
#include "dispatch.h"
#include "pagedattn/params.h"
#include "pagedattn/resources.h"
#include "pagedattn/validate.h"
#include "platform.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

struct Target {
  int warp_size = 32;
  Device device;  // the stream (CUDA) or the profile (emulator) every launch gets
  long long smem_optin = 48 * 1024;  // the device's per-block dynamic shared-memory ceiling
  std::string (*detail)(cudaError_t) = nullptr;  // the executor's own words for an error
};

// Grouped only where it changes something (more than one query head per block:
// resources.h, grouped_launch_fallback_reason); elsewhere the per-head kernels, same bits.
inline bool launches_grouped(const AttentionParams& p, int warp_size) {
  return p.grouped && grouped_launch_fallback_reason(p.kernel, warp_size, p.workload()) == nullptr;
}

inline AttnArgs make_attn_args(const AttentionParams& p, const HeadGroups& groups) {
  const bool fp8 = p.cache != CacheFormat::same;
  const bool round_p = p.choices.round_probabilities;
  AttnArgs a{};
  a.out = p.out;
  a.exp_sums = p.exp_sums;
  a.max_logits = p.max_logits;
  a.tmp_out = p.tmp_out;
  a.query = p.query;
  a.key_cache = p.key_cache;
  a.value_cache = p.value_cache;
  a.block_tables = p.block_tables;
  a.seq_lens = p.seq_lens;
  a.alibi_slopes = p.alibi_slopes;
  a.num_heads = p.num_heads;
  a.num_kv_heads = p.num_kv_heads;
  a.max_num_partitions = p.max_num_partitions;
  a.heads_per_block = groups.heads_per_block;
  a.blocks_per_kv_head = groups.blocks_per_kv_head;
  a.partition_size = p.partition_size;
  a.q_seq_stride = p.q_seq_stride;
  a.kv_block_stride = p.kv_block_stride;
  a.kv_head_stride = p.kv_head_stride;
  a.block_table_stride = p.block_table_stride;
  // Exact numerics fold k_scale into the logit scale (one rounding, in double, instead of
  // one per element); vLLM scales (and rounds) every dequantized element.
  a.qk_scale = static_cast<float>(fp8 && !round_p ? p.scale * p.k_scale : p.scale);
  a.k_scale = static_cast<float>(p.k_scale);
  a.v_scale = static_cast<float>(p.v_scale);
  a.fp8_e5m2 = p.cache == CacheFormat::fp8_e5m2;
  a.final_output = p.kernel == Kernel::v1;
  a.eps = p.choices.epsilon_denominator;
  a.round_p = round_p;
  a.tmp_fp32 = !p.choices.partials_in_output_dtype;
  return a;
}

inline ReduceArgs make_reduce_args(const AttentionParams& p) {
  ReduceArgs r{};
  r.out = p.out;
  r.exp_sums = p.exp_sums;
  r.max_logits = p.max_logits;
  r.tmp_out = p.tmp_out;
  r.seq_lens = p.seq_lens;
  r.num_heads = p.num_heads;
  r.head_size = p.head_size;
  r.max_num_partitions = p.max_num_partitions;
  r.partition_size = p.partition_size;
  r.eps = p.choices.epsilon_denominator;
  r.tmp_fp32 = !p.choices.partials_in_output_dtype;
  return r;
}

template <int WARP, bool GROUPED>
LaunchResult attention_for_warp(const AttentionParams& p, const AttnArgs& a, dim3 grid,
                                std::size_t smem, const Device& dev) {
  const bool fp8 = p.cache != CacheFormat::same;
  switch (p.scalar) {
    case DType::f32:
      return launch_attention<float, WARP, GROUPED>(a, p.head_size, p.block_size, fp8, grid, smem,
                                                    dev);
    case DType::f16:
      return launch_attention<__half, WARP, GROUPED>(a, p.head_size, p.block_size, fp8, grid, smem,
                                                     dev);
    case DType::bf16:
      return launch_attention<__nv_bfloat16, WARP, GROUPED>(a, p.head_size, p.block_size, fp8, grid,
                                                            smem, dev);
    default:
      return {cudaErrorInvalidValue, LaunchStage::launch};
  }
}

template <int WARP>
LaunchResult reduce_for_warp(const AttentionParams& p, const ReduceArgs& r, dim3 grid,
                             std::size_t smem, const Device& dev) {
  switch (p.scalar) {
    case DType::f32:
      return launch_reduce<float, WARP>(r, grid, smem, dev);
    case DType::f16:
      return launch_reduce<__half, WARP>(r, grid, smem, dev);
    case DType::bf16:
      return launch_reduce<__nv_bfloat16, WARP>(r, grid, smem, dev);
    default:
      return {cudaErrorInvalidValue, LaunchStage::launch};
  }
}

inline dim3 to_dim3(const Dim3& d) {
  return dim3(d.x, d.y, d.z);
}

[[noreturn]] inline void throw_launch_error(const AttentionParams& p, const LaunchResources& res,
                                            const Target& t, LaunchResult r) {
  std::string msg = std::string("pagedattn: ") + kernel_entry_name(res.kernel) +
                    " launch refused (" + cudaGetErrorName(r.error) + ")";
  if (r.stage == LaunchStage::opt_in || res.dynamic_smem_bytes > t.smem_optin) {
    msg += ": it needs " + std::to_string(res.dynamic_smem_bytes) +
           " bytes of dynamic shared memory per block and the device allows " +
           std::to_string(t.smem_optin) + " (shared memory per block, opt-in limit)";
    if (p.kernel == Kernel::v1) {
      msg += "; V1 keeps the whole sequence's logits in shared memory and fits max_seq_len <= " +
             std::to_string(v1_max_seq_len(t.warp_size, p.head_size, p.block_size, t.smem_optin)) +
             " here (got " + std::to_string(p.max_seq_len) + "): use paged_attention_v2";
    }
  }
  if (t.detail) msg += ". " + t.detail(r.error);
  throw LaunchError(msg);
}

template <int WARP>
void run_for_warp(const AttentionParams& p, const Target& t) {
  if (p.num_seqs == 0) return;  // an empty batch: nothing to launch (grid y would be 0)
  if (p.kernel == Kernel::v1 || p.kernel == Kernel::v2) {
    const bool grouped = launches_grouped(p, WARP);
    const bool v1 = p.kernel == Kernel::v1;
    const LaunchResources res =
        grouped ? (v1 ? v1_grouped_resources(WARP, p.workload())
                      : v2_grouped_resources(WARP, p.workload()))
                : (v1 ? v1_resources(WARP, p.workload()) : v2_resources(WARP, p.workload()));
    if (res.grid.z > 0) {  // V2 with max_seq_len 0 has no partitions; the reduce writes 0
      const AttnArgs a = make_attn_args(p, res.groups);
      const LaunchResult r = grouped
                                 ? attention_for_warp<WARP, true>(p, a, to_dim3(res.grid),
                                                                  res.dynamic_smem_bytes, t.device)
                                 : attention_for_warp<WARP, false>(
                                       p, a, to_dim3(res.grid), res.dynamic_smem_bytes, t.device);
      if (r.error != cudaSuccess) throw_launch_error(p, res, t, r);
    }
    if (p.kernel == Kernel::v1) return;
  }
  const LaunchResources res = reduce_resources(WARP, p.workload());
  const LaunchResult r = reduce_for_warp<WARP>(p, make_reduce_args(p), to_dim3(res.grid),
                                               res.dynamic_smem_bytes, t.device);
  if (r.error != cudaSuccess) throw_launch_error(p, res, t, r);
}

inline void run(const AttentionParams& p, const Target& t) {
#if defined(PAGEDATTN_EMULATED)
  if (t.warp_size == 32) return run_for_warp<32>(p, t);
  if (t.warp_size == 64) return run_for_warp<64>(p, t);
#else
  if (t.warp_size == PAGEDATTN_TARGET_WARP) return run_for_warp<PAGEDATTN_TARGET_WARP>(p, t);
#endif
  throw LaunchError("pagedattn: warp size " + std::to_string(t.warp_size) +
                    " is not built (kernels exist for warp 32 and 64)");
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
