// V2's reduce: merges the partition states (m_p, s_p, o_p) of one (sequence, head) into
// the output, o = sum_p w_p o_p / sum_p w_p with w_p = s_p exp(m_p - M) and M the exact
// global max. It streams: a first pass finds M, the second walks the partitions
// kThreadsPerBlock at a time through a fixed shared buffer, so any number of partitions
// works (vLLM keeps 8 bytes per partition in shared memory: a length cap).
// Grid (num_heads, num_seqs), kThreadsPerBlock threads.
#pragma once
#include <cstdint>
#include "block_collective.cuh"
#include "convert.cuh"
#include "device_math.cuh"
#include "kernel_args.h"
#include "pagedattn/lse_state.h"
#include "pagedattn/resources.h"
#include "pagedattn/supported.h"
#include "platform.cuh"

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
  // Output elements per thread: enough for every supported head size (supported.h), so a
  // larger head size in the list grows it instead of leaving rows unwritten.
  constexpr int MAX_ROWS_PER_THREAD = (kMaxHeadSize + NUM_THREADS - 1) / NUM_THREADS;
  static_assert(MAX_ROWS_PER_THREAD * NUM_THREADS >= kMaxHeadSize, "every head element");

  float* const shared = reinterpret_cast<float*>(smem);
  float* weights = shared + reduce_red_floats(WARP);  // [NUM_THREADS]

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
  // leaves them unwritten). Clamped to the row: with check_indices off a seq_len past
  // max_seq_len must not send the reduce into the next row (or past the buffer); the
  // attention grid wrote only max_num_partitions states.
  const std::int64_t parts64 =
      (static_cast<std::int64_t>(seq_len) + a.partition_size - 1) / a.partition_size;
  const int num_parts =
      static_cast<int>(parts64 < a.max_num_partitions ? parts64 : a.max_num_partitions);

  if (num_parts <= 1) {  // block-uniform; one partition's state is already the fold
    // Its weight at its own max: s (the output is o as written), 0 when empty, NaN when
    // poisoned (lse_state.h), so a NaN exp-sum is never dropped. A live state with a NaN or
    // infinite element poisons its whole row, as the fold's rare path below does: one rule
    // for NaN whatever the partition count.
    float w = 0.f;
    if (num_parts == 1)
      w = LseState<float>{max_logits[0], exp_sums[0]}.weight_at(max_logits[0], FastExp());
    const bool live = w != 0.f && w == w;  // an empty state's tmp_out is never read
    float o[MAX_ROWS_PER_THREAD];
    bool bad = false;
#pragma unroll
    for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
      const int d = tid + k * NUM_THREADS;
      o[k] = live && d < hs ? load_tmp<scalar_t>(a, state0 * hs + d) : 0.f;
      if (!finite(o[k])) bad = true;
    }
    BlockCollective<WARP> coll(shared);
    const bool poisoned = coll.any(bad) || w != w;
#pragma unroll
    for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
      const int d = tid + k * NUM_THREADS;
      if (d < hs) out[d] = Ops::from_float(poisoned ? NAN : o[k]);
    }
    return;
  }

  // Pass 1: the exact global max. fmaxf skips NaN maxima: a poisoned state is carried by
  // its weight instead.
  BlockCollective<WARP> coll(shared);
  float local_max = -INFINITY;
  for (int p = tid; p < num_parts; p += NUM_THREADS) local_max = fmaxf(local_max, max_logits[p]);
  const float M = coll.max(local_max);

  // Pass 2: the fold of lse_state.h's WeightedSum, weights a chunk at a time; each thread
  // accumulates its output rows and (the same in every thread, same order) the total.
  WeightedSum<float, MAX_ROWS_PER_THREAD> sum(M);
  for (int c0 = 0; c0 < num_parts; c0 += NUM_THREADS) {
    __syncthreads();  // the previous chunk's weights are consumed
    const int p = c0 + tid;
    if (p < num_parts)
      weights[tid] = sum.weight(LseState<float>{max_logits[p], exp_sums[p]}, FastExp());
    __syncthreads();
    const int count = imin(NUM_THREADS, num_parts - c0);
    for (int j = 0; j < count; ++j) {
      const float w = weights[j];
      if (!sum.add_weight(w)) continue;  // never multiply a (possibly garbage) tmp_out by 0
      const std::int64_t base = (state0 + c0 + j) * hs;
#pragma unroll
      for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
        const int d = tid + k * NUM_THREADS;
        if (d < hs) sum.add_output(k, w, load_tmp<scalar_t>(a, base + d));
      }
    }
  }
  // total >= 1 when M is a real max (its partition has s >= 1, weight s * exp(0)); 0 only
  // if every state was empty (output 0); NaN if any state was poisoned (output NaN).
  // epsilon_denominator: vLLM's 1 / (total + 1e-6) and a multiply.
  const float inv = a.eps ? 1.f / (sum.total + 1e-6f) : 0.f;

  // A sum that is not finite while the total is: a NaN or inf output element in a live
  // state (its row is poisoned), or finite partials near FLT_MAX whose weighted sum
  // overflowed.
  bool flag = false;
#pragma unroll
  for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
    if (tid + k * NUM_THREADS < hs && !finite(sum.acc[k])) flag = true;
  }
  const bool rare = coll.any(flag);
  if (rare && sum.total == sum.total) {  // block-uniform
    // Rare path: the same fold on partials scaled by 2^-64 (weights are <= total and
    // partials <= FLT_MAX, so no finite input overflows now); what is still not finite
    // came from a non-finite partial, which poisons the whole row.
    const float down = pow2f(-64), up = pow2f(64);
    WeightedSum<float, MAX_ROWS_PER_THREAD> scaled(M);
    for (int p = 0; p < num_parts; ++p) {
      const float w = scaled.weight(LseState<float>{max_logits[p], exp_sums[p]}, FastExp());
      if (!scaled.add_weight(w)) continue;
#pragma unroll
      for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
        const int d = tid + k * NUM_THREADS;
        if (d < hs) scaled.add_output(k, w, load_tmp<scalar_t>(a, (state0 + p) * hs + d) * down);
      }
    }
    bool bad = false;
#pragma unroll
    for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
      if (tid + k * NUM_THREADS < hs && !finite(scaled.acc[k])) bad = true;
    }
    const bool poisoned = coll.any(bad);
#pragma unroll
    for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
      const int d = tid + k * NUM_THREADS;
      if (d >= hs) continue;
      // A convex combination of partials <= FLT_MAX: saturation only undoes rounding.
      const float o = saturate((a.eps ? scaled.acc[k] * inv : scaled.result(k)) * up);
      out[d] = Ops::from_float(poisoned ? NAN : o);
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < MAX_ROWS_PER_THREAD; ++k) {
    const int d = tid + k * NUM_THREADS;
    if (d >= hs) continue;
    out[d] = Ops::from_float(a.eps ? sum.acc[k] * inv : sum.result(k));
  }
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
