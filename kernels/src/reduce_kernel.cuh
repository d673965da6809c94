// V2's reduce: merges the partition states (m_p, s_p, o_p) of one (sequence, head) into
// the output, o = sum_p w_p o_p / sum_p w_p with w_p = s_p exp(m_p - M) and M the exact
// global max. It streams: a first pass finds M, the second walks the partitions
// kThreadsPerBlock at a time through a fixed shared buffer, so any number of partitions
// works (vLLM keeps 8 bytes per partition in shared memory: a length cap).
// Grid (num_heads, num_seqs), kThreadsPerBlock threads.
#pragma once
#include <cstdint>
#include "attention_kernel.cuh"  // smem, imin
#include "convert.cuh"
#include "kernel_args.h"
#include "pagedattn/lse_state.h"
#include "pagedattn/resources.h"
#include "platform.cuh"
#include "warp_reduce.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

template <class scalar_t>
__device__ __forceinline__ float load_tmp(const ReduceArgs& a, std::int64_t i) {
  return a.tmp_fp32 ? static_cast<const float*>(a.tmp_out)[i]
                    : ScalarOps<scalar_t>::to_float(static_cast<const scalar_t*>(a.tmp_out)[i]);
}

template <class scalar_t, int WARP>
__global__ void __launch_bounds__(kThreadsPerBlock) reduce_kernel(const ReduceArgs a) {
  using Ops = ScalarOps<scalar_t>;
  constexpr int NUM_THREADS = kThreadsPerBlock;
  constexpr int NUM_WARPS = NUM_THREADS / WARP;
  constexpr int MAX_ROWS_PER_THREAD = 256 / NUM_THREADS;  // head sizes up to 256

  float* red = reinterpret_cast<float*>(smem);     // [NUM_WARPS]
  float* weights = red + reduce_red_floats(WARP);  // [NUM_THREADS]

  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int tid = threadIdx.x;
  const int hs = a.head_size;
  const std::int64_t row = static_cast<std::int64_t>(seq) * a.num_heads + head;
  scalar_t* out = static_cast<scalar_t*>(a.out) + row * hs;
  const std::int64_t state0 = row * a.max_num_partitions;
  const float* max_logits = a.max_logits + state0;
  const float* exp_sums = a.exp_sums + state0;
  const int seq_len = a.seq_lens[seq];
  // Only this sequence's partitions are read: those past it may hold anything (vLLM
  // leaves them unwritten).
  const int num_parts = (seq_len + a.partition_size - 1) / a.partition_size;

  if (num_parts <= 1) {  // block-uniform; one partition's output is already final
    for (int d = tid; d < hs; d += NUM_THREADS) {
      out[d] = Ops::from_float(num_parts == 1 ? load_tmp<scalar_t>(a, state0 * hs + d) : 0.f);
    }
    return;
  }

  // Pass 1: the exact global max.
  float local_max = -INFINITY;
  for (int p = tid; p < num_parts; p += NUM_THREADS) local_max = fmaxf(local_max, max_logits[p]);
  local_max = group_max<WARP>(local_max);
  if (tid % WARP == 0) red[tid / WARP] = local_max;
  __syncthreads();
  float M = red[0];
#pragma unroll
  for (int w = 1; w < NUM_WARPS; ++w) M = fmaxf(M, red[w]);

  // Pass 2: weights a chunk at a time; each thread accumulates its output rows and (the
  // same in every thread, same order) the total weight.
  float acc[MAX_ROWS_PER_THREAD];
#pragma unroll
  for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) acc[k] = 0.f;
  float total = 0.f;
  for (int c0 = 0; c0 < num_parts; c0 += NUM_THREADS) {
    __syncthreads();  // the previous chunk's weights are consumed
    const int p = c0 + tid;
    if (p < num_parts) {
      // w_p = s_p exp(m_p - M); an empty state weighs 0 by selection (lse_state.h).
      weights[tid] = LseState<float>{max_logits[p], exp_sums[p]}.weight_at(M, FastExp());
    }
    __syncthreads();
    const int count = imin(NUM_THREADS, num_parts - c0);
    for (int j = 0; j < count; ++j) {
      const float w = weights[j];
      if (w == 0.f) continue;  // never multiply a (possibly garbage) tmp_out by 0
      total += w;
      const std::int64_t base = (state0 + c0 + j) * hs;
#pragma unroll
      for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
        const int d = tid + k * NUM_THREADS;
        if (d < hs) acc[k] = fmaf(w, load_tmp<scalar_t>(a, base + d), acc[k]);
      }
    }
  }
  // total >= 1 when M is a real max (its partition has s >= 1, weight s * exp(0));
  // total == 0 only if every state was empty, and then the output is 0.
  // epsilon_denominator: vLLM's 1 / (total + 1e-6) and a multiply.
  const float inv = a.eps ? 1.f / (total + 1e-6f) : 0.f;
#pragma unroll
  for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
    const int d = tid + k * NUM_THREADS;
    if (d >= hs) continue;
    const float o = a.eps ? acc[k] * inv : (total > 0.f ? acc[k] / total : 0.f);
    out[d] = Ops::from_float(o);
  }
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
