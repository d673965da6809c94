// The paged-attention kernel body shared by V1 (one partition spanning the sequence,
// writing the output) and V2 (one partition per grid z, writing its state (m, s, o)).
//
// Grid (num_heads, num_seqs, partitions), kThreadsPerBlock threads. Warp w walks the
// partition's KV blocks w, w + NUM_WARPS, ...; within a warp, thread group g (of
// THREAD_GROUP_SIZE lanes) owns token g of the block for q.k, then lanes split value
// rows and token chunks for P.V.
//
// Numerics (docs/NUMERICS.md): fp32 everywhere; explicit fmaf so nvcc (built with
// --fmad=false) and the emulator round identically; __expf for exp. Slots past seq_len
// are never loaded (selection, not multiplication by 0). Exact mode: the output is
// (sum_i e_i v_i) / s with no epsilon. vLLM's choices (NumericsChoices, runtime flags):
// eps: the denominator is 1 / (s + 1e-6) times; round_p: probabilities e_i * (1 / d)
// rounded to the scalar type before P.V (d = s or s + 1e-6), fp8 elements dequantized
// and rounded per element; !tmp_fp32: V2's partials stored in the scalar type.
//
// Non-finite values (kernels/README.md "NaN and inf"): a NaN or inf in a live input (a
// query element, a key or value element of a token inside seq_len, the slope, the scale)
// makes the row NaN: its logit is NaN, which fmaxf skips but the exp-sum carries (s =
// NaN, so every o = acc / s is NaN and V2's reduce weighs the state NaN). Finite inputs
// whose fp32 intermediates overflow (a logit past FLT_MAX, a sum of e_i v_i past it) are
// recomputed on a rare path from elements scaled by powers of two, and a logit still past
// the range saturates to +-FLT_MAX. The fast path is unchanged bit for bit; the rare paths
// run only when it produced a non-finite value.
#pragma once
#include <cstdint>
#include "convert.cuh"
#include "kernel_args.h"
#include "pagedattn/lse_state.h"
#include "pagedattn/resources.h"
#include "platform.cuh"
#include "warp_reduce.cuh"

// The one dynamic shared-memory array every kernel here carves up (resources.h has the
// layout). There are no static __shared__ arrays: the launch size is all they use.
extern __shared__ __align__(16) char smem[];

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

__device__ __forceinline__ int imin(int a, int b) {
  return a < b ? a : b;
}

constexpr float kFltMax = 3.40282347e38f;
__device__ __forceinline__ bool finite(float x) {
  return fabsf(x) <= kFltMax;  // false for inf and NaN
}
__device__ __forceinline__ float saturate(float x) {
  return x > kFltMax ? kFltMax : (x < -kFltMax ? -kFltMax : x);  // NaN stays NaN
}

// The logit of a token whose fast path gave a non-finite value (one lane, rare): NaN if a
// live input is not finite (row_bad: the slope or the scale; else q or this key);
// otherwise finite inputs overflowed fp32, so q.k is recomputed on elements scaled by
// 2^-70 each (no product or sum of HEAD_SIZE can overflow then), scaled back, and the
// logit saturated to +-FLT_MAX. Past FLT_MAX the logits are beyond fp32 anyway: the row's
// softmax goes to the token(s) saturated at the top.
template <class scalar_t, class cache_t, int HEAD_SIZE, int BLOCK_SIZE, int X>
__device__ float slow_logit(const AttnArgs& a, const float* q_s, const cache_t* k, bool row_bad,
                            bool fp8_round, float slope, float pos) {
  if (row_bad) return NAN;
  const float down = pow2f(-70), up = pow2f(70);
  float dot = 0.f;
  for (int d = 0; d < HEAD_SIZE; ++d) {
    const float kv =
        CacheOps<scalar_t, cache_t>::load(k[(d / X) * (BLOCK_SIZE * X) + d % X], a.fp8_e5m2);
    if (!finite(q_s[d]) || !finite(kv)) return NAN;
    dot = fmaf(q_s[d] * down, fp8_round ? kv * down * a.k_scale : kv * down, dot);
  }
  float logit = saturate(saturate(dot * a.qk_scale * up) * up);
  if (a.alibi_slopes) logit = saturate(fmaf(slope, pos, logit));
  return logit;
}

template <class scalar_t, class cache_t, int HEAD_SIZE, int BLOCK_SIZE, int WARP>
__global__ void __launch_bounds__(kThreadsPerBlock) attention_kernel(const AttnArgs a) {
  using Ops = ScalarOps<scalar_t>;
  using Cache = CacheOps<scalar_t, cache_t>;
  constexpr int NUM_THREADS = kThreadsPerBlock;
  constexpr int NUM_WARPS = NUM_THREADS / WARP;
  // vLLM's THREAD_GROUP_SIZE = max(WARP / BLOCK_SIZE, 1): one group per token of a block.
  constexpr int GROUP = WARP / BLOCK_SIZE > 1 ? WARP / BLOCK_SIZE : 1;
  static_assert(WARP % BLOCK_SIZE == 0 && GROUP * BLOCK_SIZE == WARP,
                "a warp covers exactly one KV block, one thread group per token");
  // Key layout [.., HEAD_SIZE / X, BLOCK_SIZE, X]: X elements of a token are contiguous.
  constexpr int X = 16 / static_cast<int>(sizeof(cache_t));
  // Each lane of a group reads chunks of VEC contiguous elements (16 bytes per group).
  constexpr int VEC_WANT = 16 / (GROUP * static_cast<int>(sizeof(scalar_t)));
  constexpr int VEC = VEC_WANT < 1 ? 1 : (VEC_WANT > X ? X : VEC_WANT);
  static_assert(X % VEC == 0 && HEAD_SIZE % (GROUP * VEC) == 0, "chunks tile the head");
  // P.V: each lane takes V_TOKENS consecutive tokens of a value row; ROWS_PER_PASS rows
  // are covered by a warp at once, ROWS_PER_LANE passes cover the head.
  constexpr int V_TOKENS = BLOCK_SIZE < 8 ? BLOCK_SIZE : 8;
  constexpr int LANES_PER_ROW = BLOCK_SIZE / V_TOKENS;
  constexpr int ROWS_PER_PASS = WARP / LANES_PER_ROW;
  constexpr int ROWS_PER_LANE = (HEAD_SIZE + ROWS_PER_PASS - 1) / ROWS_PER_PASS;

  float* red = reinterpret_cast<float*>(smem);  // [0, NUM_WARPS): max; then exp-sums
  float* q_s = red + attn_q_offset(WARP);
  float* logits = red + attn_logits_offset(WARP, HEAD_SIZE);

  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int part = blockIdx.z;
  const int tid = threadIdx.x;
  const int seq_len = a.seq_lens[seq];
  const std::int64_t row = static_cast<std::int64_t>(seq) * a.num_heads + head;
  const std::int64_t state = row * a.max_num_partitions + part;
  const std::int64_t start64 = static_cast<std::int64_t>(part) * a.partition_size;

  // An empty partition (or seq_len 0) writes the defined empty state (-inf, 0, 0), or a
  // zero output for V1. The branch is block-uniform, so no barrier is skipped by some.
  if (start64 >= seq_len) {
    for (int d = tid; d < HEAD_SIZE; d += NUM_THREADS) {
      if (a.final_output) {
        static_cast<scalar_t*>(a.out)[row * HEAD_SIZE + d] = Ops::from_float(0.f);
      } else if (a.tmp_fp32) {
        static_cast<float*>(a.tmp_out)[state * HEAD_SIZE + d] = 0.f;
      } else {
        static_cast<scalar_t*>(a.tmp_out)[state * HEAD_SIZE + d] = Ops::from_float(0.f);
      }
    }
    if (!a.final_output && tid == 0) {
      a.max_logits[state] = -INFINITY;
      a.exp_sums[state] = 0.f;
    }
    return;
  }
  const int start = static_cast<int>(start64);
  const int end = imin(seq_len, static_cast<int>(start64 + a.partition_size));
  const int n = end - start;
  const int start_blk = start / BLOCK_SIZE;
  const int end_blk = (end + BLOCK_SIZE - 1) / BLOCK_SIZE;
  const int kv_head = head / (a.num_heads / a.num_kv_heads);
  const float slope = a.alibi_slopes ? a.alibi_slopes[head] : 0.f;
  const bool fp8_round = Cache::kFp8 && a.round_p;
  // Scalars that poison the whole row when not finite (the API refuses a non-finite scale
  // or fp8 scale before launch; a slope it cannot check without reading device memory).
  const bool row_bad = !finite(slope) || !finite(a.qk_scale) ||
                       (Cache::kFp8 && (!finite(a.k_scale) || !finite(a.v_scale)));
  const std::int32_t* block_table = a.block_tables + seq * a.block_table_stride;

  const scalar_t* q = static_cast<const scalar_t*>(a.query) + seq * a.q_seq_stride +
                      static_cast<std::int64_t>(head) * HEAD_SIZE;
  for (int d = tid; d < HEAD_SIZE; d += NUM_THREADS) q_s[d] = Ops::to_float(q[d]);
  __syncthreads();

  const int warp = tid / WARP;
  const int lane = tid % WARP;

  // ---- logits = scale * q.k (+ ALiBi), and the partition max ----
  {
    const int token_in_block = lane / GROUP;
    const int group_lane = lane % GROUP;
    const cache_t* k_cache = static_cast<const cache_t*>(a.key_cache);
    float local_max = -INFINITY;
    for (int blk = start_blk + warp; blk < end_blk; blk += NUM_WARPS) {
      const int token = blk * BLOCK_SIZE + token_in_block;
      const bool valid = token < end;  // blocks start at `start` or later: token >= start
      float dot = 0.f;
      if (valid) {
        const cache_t* k = k_cache + block_table[blk] * a.kv_block_stride +
                           kv_head * a.kv_head_stride + token_in_block * X;
        for (int c = group_lane; c < HEAD_SIZE / VEC; c += GROUP) {
#pragma unroll
          for (int v = 0; v < VEC; ++v) {
            const int d = c * VEC + v;
            float kv = Cache::load(k[(d / X) * (BLOCK_SIZE * X) + d % X], a.fp8_e5m2);
            if (fp8_round) kv = round_to<scalar_t>(kv * a.k_scale);
            dot = fmaf(q_s[d], kv, dot);
          }
        }
      }
      dot = group_sum<GROUP>(dot);  // every lane takes part: the shuffle needs the full warp
      if (valid && group_lane == 0) {
        const float pos = static_cast<float>(token - seq_len + 1);
        float logit = dot * a.qk_scale;
        // ALiBi: slope * (i - seq_len + 1), so the last token gets no bias.
        if (a.alibi_slopes) logit = fmaf(slope, pos, logit);
        if (row_bad || !finite(logit)) {
          const cache_t* k = k_cache + block_table[blk] * a.kv_block_stride +
                             kv_head * a.kv_head_stride + token_in_block * X;
          logit = slow_logit<scalar_t, cache_t, HEAD_SIZE, BLOCK_SIZE, X>(a, q_s, k, row_bad,
                                                                          fp8_round, slope, pos);
        }
        logits[token - start] = logit;
        local_max = fmaxf(local_max, logit);  // skips NaN: the exp-sum carries it
      }
    }
    local_max = group_max<WARP>(local_max);
    if (lane == 0) red[warp] = local_max;
  }
  __syncthreads();
  float m = red[0];
#pragma unroll
  for (int w = 1; w < NUM_WARPS; ++w) m = fmaxf(m, red[w]);

  // ---- e_i = exp(logit_i - m), s = sum e_i (fixed order: per thread, butterfly, warps) ----
  // e_i is the weight at m of the one-token state (x_i, 1) (lse_state.h): NaN for a NaN
  // logit, also when every logit is NaN and fmaxf left m = -inf.
  float local_sum = 0.f;
  for (int i = tid; i < n; i += NUM_THREADS) {
    const float e = LseState<float>{logits[i], 1.f}.weight_at(m, FastExp());
    logits[i] = e;
    local_sum += e;
  }
  local_sum = group_sum<WARP>(local_sum);
  if (lane == 0) red[NUM_WARPS + warp] = local_sum;
  __syncthreads();
  float s = red[NUM_WARPS];
#pragma unroll
  for (int w = 1; w < NUM_WARPS; ++w) s += red[NUM_WARPS + w];

  // vLLM's reciprocal of the denominator (eps: s + 1e-6, a bias; s >= 1 needs none).
  const float inv = 1.f / (a.eps ? s + 1e-6f : s);
  if (a.round_p) {  // vLLM: p_i = e_i * inv, rounded to scalar_t before P.V

    for (int i = tid; i < n; i += NUM_THREADS) logits[i] = round_to<scalar_t>(logits[i] * inv);
    __syncthreads();
  }

  // ---- P.V: acc[row] = sum_i p_i v_i[row] over this warp's blocks ----
  const int lane_row = lane / LANES_PER_ROW;
  const int lane_chunk = lane % LANES_PER_ROW;
  float acc[ROWS_PER_LANE];
#pragma unroll
  for (int r = 0; r < ROWS_PER_LANE; ++r) acc[r] = 0.f;
  {
    const cache_t* v_cache = static_cast<const cache_t*>(a.value_cache);
    for (int blk = start_blk + warp; blk < end_blk; blk += NUM_WARPS) {
      const cache_t* v =
          v_cache + block_table[blk] * a.kv_block_stride + kv_head * a.kv_head_stride;
      for (int t = 0; t < V_TOKENS; ++t) {
        const int token_in_block = lane_chunk * V_TOKENS + t;
        const int token = blk * BLOCK_SIZE + token_in_block;
        if (token >= end) break;  // never touch a slot past the partition or sequence
        const float p = logits[token - start];
#pragma unroll
        for (int r = 0; r < ROWS_PER_LANE; ++r) {
          const int d = lane_row + r * ROWS_PER_PASS;
          if (HEAD_SIZE % ROWS_PER_PASS == 0 || d < HEAD_SIZE) {
            float vv = Cache::load(v[d * BLOCK_SIZE + token_in_block], a.fp8_e5m2);
            if (fp8_round) vv = round_to<scalar_t>(vv * a.v_scale);
            acc[r] = fmaf(p, vv, acc[r]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS_PER_LANE; ++r) acc[r] = group_sum<LANES_PER_ROW>(acc[r]);

  // A warp whose partial sum is not finite (a NaN or inf value element, or an e_i NaN) or
  // so large that the cross-warp sum of NUM_WARPS partials could overflow flags the rare
  // path. red[0, NUM_WARPS) (the max slots) is free: every thread read m before the
  // exp-sum barrier.
  {
    float flag = 0.f;
#pragma unroll
    for (int r = 0; r < ROWS_PER_LANE; ++r) {
      if (!(fabsf(acc[r]) <= kFltMax / NUM_WARPS)) flag = 1.f;
    }
    flag = group_max<WARP>(flag);
    if (lane == 0) red[warp] = flag;
  }

  const LseState<float> st{m, s};
  auto store = [&](int d, float o) {
    if (a.final_output) {
      static_cast<scalar_t*>(a.out)[row * HEAD_SIZE + d] = Ops::from_float(o);
    } else if (a.tmp_fp32) {
      static_cast<float*>(a.tmp_out)[state * HEAD_SIZE + d] = o;
    } else {
      static_cast<scalar_t*>(a.tmp_out)[state * HEAD_SIZE + d] = Ops::from_float(o);
    }
  };

  // Cross-warp sum in fixed order; the logits buffer is free again once all warps are here.
  __syncthreads();
  bool rare = false;
#pragma unroll
  for (int w = 0; w < NUM_WARPS; ++w) rare = rare || red[w] != 0.f;
  // With s NaN the row is already NaN (o = acc / s, or p_i NaN): nothing to tell apart.
  if (rare && s == s) {  // block-uniform
    // Rare path: recompute each row from p_i (still in `logits`) and value elements scaled
    // by 2^-64, so no finite input can overflow (|p_i| <= 1, n < 2^31). What is still
    // not finite comes from a NaN or inf value element: the row is poisoned.
    const float down = pow2f(-64), up = pow2f(64);
    const cache_t* v_cache = static_cast<const cache_t*>(a.value_cache);
    float o_row[(HEAD_SIZE + NUM_THREADS - 1) / NUM_THREADS];
    float bad = 0.f;
    for (int k = 0; k * NUM_THREADS < HEAD_SIZE; ++k) {
      const int d = tid + k * NUM_THREADS;
      float sum = 0.f;
      for (int i = 0; d < HEAD_SIZE && i < n; ++i) {
        const int token = start + i;
        const cache_t* v = v_cache + block_table[token / BLOCK_SIZE] * a.kv_block_stride +
                           kv_head * a.kv_head_stride;
        float vv = Cache::load(v[d * BLOCK_SIZE + token % BLOCK_SIZE], a.fp8_e5m2) * down;
        if (fp8_round) vv = vv * a.v_scale;
        sum = fmaf(logits[i], vv, sum);
      }
      if (!finite(sum)) bad = 1.f;
      o_row[k] = sum;
    }
    bad = group_max<WARP>(bad);
    __syncthreads();  // every thread has read the flags in red
    if (lane == 0) red[warp] = bad;
    __syncthreads();
    bool poisoned = false;
#pragma unroll
    for (int w = 0; w < NUM_WARPS; ++w) poisoned = poisoned || red[w] != 0.f;
    for (int k = 0; k * NUM_THREADS < HEAD_SIZE; ++k) {
      const int d = tid + k * NUM_THREADS;
      if (d >= HEAD_SIZE) break;
      float o = o_row[k];
      if (!a.round_p) o = a.eps ? o * inv : st.normalized(o);
      o = o * up;
      // The exact value lies between the smallest and largest value element: in range
      // unless an fp8 v_scale takes it past FLT_MAX, where inf is its rounding.
      if (!Cache::kFp8) o = saturate(o);
      if (Cache::kFp8 && !a.round_p) o = o * a.v_scale;
      store(d, poisoned ? NAN : o);
    }
    if (!a.final_output && tid == 0) {
      a.max_logits[state] = m;
      a.exp_sums[state] = poisoned ? NAN : s;
    }
    return;
  }
  float* pv = logits;  // [NUM_WARPS - 1][HEAD_SIZE]
  if (warp > 0 && lane_chunk == 0) {
#pragma unroll
    for (int r = 0; r < ROWS_PER_LANE; ++r) {
      const int d = lane_row + r * ROWS_PER_PASS;
      if (d < HEAD_SIZE) pv[(warp - 1) * HEAD_SIZE + d] = acc[r];
    }
  }
  __syncthreads();
  if (warp == 0 && lane_chunk == 0) {
#pragma unroll
    for (int r = 0; r < ROWS_PER_LANE; ++r) {
      const int d = lane_row + r * ROWS_PER_PASS;
      if (d >= HEAD_SIZE) continue;
      float o = acc[r];
      for (int w = 1; w < NUM_WARPS; ++w) o += pv[(w - 1) * HEAD_SIZE + d];
      if (!a.round_p) {  // p_i not yet normalized
        // Ours: s >= 1 (the max term contributes exp(0) = 1), one division, no epsilon
        // (lse_state.h's normalized); NaN when s is.
        o = a.eps ? o * inv : st.normalized(o);
        if (Cache::kFp8) o = o * a.v_scale;
      }
      store(d, o);
    }
  }
  if (!a.final_output && tid == 0) {
    a.max_logits[state] = m;
    a.exp_sums[state] = s;
  }
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
