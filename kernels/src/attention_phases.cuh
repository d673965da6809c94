// The attention kernel's phases as callable pieces: load q; logits and max; softmax
// (exp-sum); P.V; the overflow check and rescue (the rare paths); combine and store. The
// V1/V2 kernel (attention_kernel.cuh) composes them for one query head; a kernel serving
// the G query heads of one KV head composes the same phases with G > 1, reading every key
// and value element once for all G (kernels/README.md, "Phases").
//
// Work split (vLLM's): kThreadsPerBlock threads; warp w walks the span's KV blocks w,
// w + NUM_WARPS, ...; within a warp, thread group g (of GROUP lanes) owns token g of the
// block for q.k, then lanes split value rows and token chunks for P.V.
//
// Contract of every phase:
// - Called by every thread of the block, from block-uniform control flow (the phases
//   contain barriers and warp shuffles).
// - G query heads at once (G >= 1, the same KV head): per head, each phase performs
//   exactly the arithmetic of G = 1, in the same order, so a head's results do not depend
//   on G or on the other heads. A slot with !live (G > 1 only) computes nothing and
//   touches nothing: its m stays -inf, s 0, acc 0, and its scratch is never read or
//   written; the caller skips it when storing. Scratch is per head: Heads::q and ::logits,
//   disjoint across heads; the block collective is shared and takes G values per call.
// - Barriers are named per phase below; a phase's reads of shared memory written by an
//   earlier phase rely only on those.
//
// Numerics (kernels/README.md "Numerics"): fp32 everywhere; explicit fmaf so nvcc (built
// with --fmad=false) and the emulator round identically; __expf for exp. Slots past the
// span are never loaded (selection, not multiplication by 0). Exact mode: the output is
// (sum_i e_i v_i) / s with no epsilon. vLLM's choices (NumericsChoices, runtime flags):
// eps: the denominator is 1 / (s + 1e-6) times; round_p: probabilities e_i * (1 / d)
// rounded to the scalar type before P.V (d = s or s + 1e-6), fp8 elements dequantized
// and rounded per element; !tmp_fp32: V2's partials stored in the scalar type.
//
// Non-finite values (kernels/README.md "NaN and inf"): a NaN or inf in a live input makes
// the row NaN: its logit is NaN, which fmaxf skips but the exp-sum carries. Finite inputs
// whose fp32 intermediates overflow are recomputed on rare paths from elements scaled by
// powers of two (slow_logit, rescue); the fast path is unchanged bit for bit, and the rare
// paths run only when it produced a non-finite value.
#pragma once
#include <cstdint>
#include "block_collective.cuh"
#include "convert.cuh"
#include "device_math.cuh"
#include "kernel_args.h"
#include "pagedattn/lse_state.h"
#include "pagedattn/resources.h"
#include "platform.cuh"
#include "static_for.cuh"
#include "warp_reduce.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

// Where one query head's results go: its output row and (V2) its partition state.
struct Dest {
  std::int64_t row;    // (seq, head): out[row], and the first of the row's states
  std::int64_t state;  // (seq, head, partition): exp_sums, max_logits, tmp_out[state]
};

__device__ __forceinline__ Dest attention_dest(const AttnArgs& a, int seq, int head, int part) {
  const std::int64_t row = static_cast<std::int64_t>(seq) * a.num_heads + head;
  return {row, row * a.max_num_partitions + part};
}

// The tokens [start, end) of one sequence a block attends to, in one KV head's cache.
struct Span {
  bool empty;  // the partition starts at or past seq_len (or seq_len is 0)
  int seq, seq_len, kv_head;
  int start, end, n;       // n = end - start tokens
  int start_blk, end_blk;  // the KV blocks (logical) holding them
  const std::int32_t* block_table;
};

// Reads seq_lens[seq] only.
__device__ __forceinline__ Span attention_span(const AttnArgs& a, int block_size, int seq,
                                               int kv_head, int part) {
  Span s{};
  s.seq = seq;
  s.kv_head = kv_head;
  s.seq_len = a.seq_lens[seq];
  const std::int64_t start64 = static_cast<std::int64_t>(part) * a.partition_size;
  s.empty = start64 >= s.seq_len;
  if (s.empty) return s;
  s.start = static_cast<int>(start64);
  s.end = imin(s.seq_len, static_cast<int>(start64 + a.partition_size));
  s.n = s.end - s.start;
  s.start_blk = s.start / block_size;
  s.end_blk = (s.end + block_size - 1) / block_size;
  s.block_table = a.block_tables + seq * a.block_table_stride;
  return s;
}

// The query heads a block serves, as slots g = 0 .. G-1: slot g is head first + g and is
// live iff g < n (G = 1: the block's one head, always live). Its shared-memory scratch: its
// query row in fp32 at q(g) = q0 + g * kQFloats (HEAD_SIZE floats, padded to 16 bytes), and
// its logits buffer at logits(g) = logits0 + g * stride (max(span.n, (NUM_WARPS - 1) *
// HEAD_SIZE) floats: logits, exps, P.V scratch). A spare slot's scratch lies past the
// block's: the phases test live(g) before touching it. Nothing is held per slot: head,
// destination, scratch and ALiBi slope are computed (the slope read) where used, on HIP from
// opaque copies (platform.cuh's uniform_at_use) so that hipcc cannot hoist them back out of
// the loops. An array of G per-head structs, as before, was kept in local memory or scratch
// by every compiler, and G slopes or addresses held in registers pushed gfx90a into SGPR
// spills (kernels/README.md "Phases" and "Registers").
template <int HEAD_SIZE, int G>
struct Heads {
  static constexpr int kQFloats = static_cast<int>(round_up(HEAD_SIZE, 4));
  int first;         // slot 0's head
  int n;             // live slots
  int seq, part;     // the block's sequence and partition
  float* q0;         // slot 0's query row
  float* logits0;    // slot 0's logits buffer
  int stride;        // floats from one slot's logits buffer to the next (within shared memory)
  bool scalars_bad;  // a scalar that poisons every row (the scales) is not finite

  // Forced inline: uniform_at_use needs the kernel's own (scalar) copy of the fields.
  __device__ __forceinline__ bool live(int g) const { return G == 1 || g < uniform_at_use(n); }
  __device__ __forceinline__ int head(int g) const { return first + g; }
  __device__ __forceinline__ float* q(int g) const { return q0 + g * kQFloats; }
  __device__ __forceinline__ float* logits(int g) const {
    return uniform_at_use(logits0) + g * uniform_at_use(stride);
  }
  __device__ __forceinline__ Dest dest(const AttnArgs& a, int g) const {
    return attention_dest(a, seq, first + g, part);
  }
  // A live slot's ALiBi slope (0 without ALiBi).
  __device__ __forceinline__ float slope(const AttnArgs& a, int g) const {
    return a.alibi_slopes ? a.alibi_slopes[uniform_at_use(first) + g] : 0.f;
  }
  // Whether a row with this slope is poisoned whatever its q and keys hold.
  __device__ __forceinline__ bool row_bad(float slope) const {
    return scalars_bad || !finite(slope);
  }
};

template <int HEAD_SIZE, int G, bool kFp8>
__device__ __forceinline__ Heads<HEAD_SIZE, G> query_heads(const AttnArgs& a, int first, int n,
                                                           int seq, int part, float* q0,
                                                           float* logits0, int stride) {
  Heads<HEAD_SIZE, G> h;
  h.first = first;
  h.n = n;
  h.seq = seq;
  h.part = part;
  h.q0 = q0;
  h.logits0 = logits0;
  h.stride = stride;
  // The API refuses a non-finite scale or fp8 scale before launch; a slope it cannot check
  // without reading device memory (row_bad).
  h.scalars_bad = !finite(a.qk_scale) || (kFp8 && (!finite(a.k_scale) || !finite(a.v_scale)));
  return h;
}

// Element d of the head's output (V1) or of its partition's normalized output (V2).
template <class scalar_t, int HEAD_SIZE>
__device__ __forceinline__ void store_output(const AttnArgs& a, const Dest& dest, int d, float o) {
  using Ops = ScalarOps<scalar_t>;
  if (a.final_output) {
    static_cast<scalar_t*>(a.out)[dest.row * HEAD_SIZE + d] = Ops::from_float(o);
  } else if (a.tmp_fp32) {
    static_cast<float*>(a.tmp_out)[dest.state * HEAD_SIZE + d] = o;
  } else {
    static_cast<scalar_t*>(a.tmp_out)[dest.state * HEAD_SIZE + d] = Ops::from_float(o);
  }
}

// V2's partition state (m, s); V1 has none. One thread writes it.
__device__ __forceinline__ void store_state(const AttnArgs& a, const Dest& dest, float m, float s) {
  if (!a.final_output && threadIdx.x == 0) {
    a.max_logits[dest.state] = m;
    a.exp_sums[dest.state] = s;
  }
}

// An empty span: the defined empty state (-inf, 0, 0), or a zero output for V1. No barrier.
template <class scalar_t, int HEAD_SIZE>
__device__ __forceinline__ void store_empty(const AttnArgs& a, const Dest& dest) {
  for (int d = threadIdx.x; d < HEAD_SIZE; d += kThreadsPerBlock)
    store_output<scalar_t, HEAD_SIZE>(a, dest, d, 0.f);
  store_state(a, dest, -INFINITY, 0.f);
}

// A head's softmax: the partition max m, exp-sum s and vLLM's reciprocal of the denominator.
struct Softmax {
  float m, s, inv;
};

template <class scalar_t, class cache_t, int HEAD_SIZE, int BLOCK_SIZE, int WARP>
struct AttentionPhases {
  using Ops = ScalarOps<scalar_t>;
  using Cache = CacheOps<scalar_t, cache_t>;
  static constexpr int NUM_THREADS = kThreadsPerBlock;
  static constexpr int NUM_WARPS = NUM_THREADS / WARP;
  // vLLM's THREAD_GROUP_SIZE = max(WARP / BLOCK_SIZE, 1): one group per token of a block.
  static constexpr int GROUP = WARP / BLOCK_SIZE > 1 ? WARP / BLOCK_SIZE : 1;
  static_assert(WARP % BLOCK_SIZE == 0 && GROUP * BLOCK_SIZE == WARP,
                "a warp covers exactly one KV block, one thread group per token");
  // Key layout [.., HEAD_SIZE / X, BLOCK_SIZE, X]: X elements of a token are contiguous.
  static constexpr int X = 16 / static_cast<int>(sizeof(cache_t));
  // Each lane of a group reads chunks of VEC contiguous elements (16 bytes per group).
  static constexpr int VEC_WANT = 16 / (GROUP * static_cast<int>(sizeof(scalar_t)));
  static constexpr int VEC = VEC_WANT < 1 ? 1 : (VEC_WANT > X ? X : VEC_WANT);
  static_assert(X % VEC == 0 && HEAD_SIZE % (GROUP * VEC) == 0, "chunks tile the head");
  // P.V: each lane takes V_TOKENS consecutive tokens of a value row; ROWS_PER_PASS rows
  // are covered by a warp at once, ROWS_PER_LANE passes cover the head.
  static constexpr int V_TOKENS = BLOCK_SIZE < 8 ? BLOCK_SIZE : 8;
  static constexpr int LANES_PER_ROW = BLOCK_SIZE / V_TOKENS;
  static constexpr int ROWS_PER_PASS = WARP / LANES_PER_ROW;
  static constexpr int ROWS_PER_LANE = (HEAD_SIZE + ROWS_PER_PASS - 1) / ROWS_PER_PASS;
  // The rescue's output elements per thread.
  static constexpr int RESCUE_ROWS = (HEAD_SIZE + NUM_THREADS - 1) / NUM_THREADS;

  // The physical block of a warp's j-th KV block (blk = start_blk + warp + j * NUM_WARPS),
  // for every lane: the entries are read WARP at a time, lane l taking block j + l of the
  // warp when j % WARP == 0, and iteration j gets its entry from lane j % WARP. Each entry
  // is then read once per warp and phase; loaded by every lane, it would be read WARP times
  // (one address: a broadcast on a GPU, but a dependent load at the head of every
  // iteration, and WARP times the table in the emulator's traffic counts). Contract: every
  // lane calls it, for every j in order (the loops are warp-uniform); `chunk` is the lane's
  // entry, carried between calls; entries past the span are never read.
  __device__ static int block_number(const Span& sp, int blk, int j, int lane, int& chunk) {
    if (j % WARP == 0) {
      const int b = blk + lane * NUM_WARPS;
      chunk = b < sp.end_blk ? sp.block_table[b] : 0;
    }
    return __shfl_sync(PAGEDATTN_FULL_MASK, chunk, j % WARP, WARP);
  }

  // Phase 1, load q: slot g's query row into h.q(g) in fp32 (a live slot). No barrier: the
  // caller __syncthreads() once after loading every head, before logits_and_max.
  template <int G>
  __device__ __forceinline__ static void load_query(const AttnArgs& a, const Span& sp,
                                                    const Heads<HEAD_SIZE, G>& h, int g) {
    const scalar_t* q = static_cast<const scalar_t*>(a.query) + sp.seq * a.q_seq_stride +
                        static_cast<std::int64_t>(h.head(g)) * HEAD_SIZE;
    float* const q_s = h.q(g);
    for (int d = threadIdx.x; d < HEAD_SIZE; d += NUM_THREADS) q_s[d] = Ops::to_float(q[d]);
  }

  // Phase 2, logits and max: logits[i] = scale * q.k_i (+ ALiBi) for every token of the
  // span, each key element loaded once for all G heads; m[g] the block max (fmaxf: NaN
  // logits skipped, the exp-sum carries them). One barrier (the collective's), after which
  // every thread may read every logit.
  template <int G, int MAX_N>
  __device__ __forceinline__ static void logits_and_max(const AttnArgs& a, const Span& sp,
                                                        const Heads<HEAD_SIZE, G>& h,
                                                        BlockCollective<WARP, MAX_N>& coll,
                                                        float (&m)[G]) {
    const int warp = threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    const int token_in_block = lane / GROUP;
    const int group_lane = lane % GROUP;
    const bool fp8_round = Cache::kFp8 && a.round_p;
    const cache_t* k_cache = static_cast<const cache_t*>(a.key_cache);
#pragma unroll
    for (int g = 0; g < G; ++g) m[g] = -INFINITY;
    int chunk = 0;
    for (int blk = sp.start_blk + warp, j = 0; blk < sp.end_blk; blk += NUM_WARPS, ++j) {
      const int phys = block_number(sp, blk, j, lane, chunk);
      const int token = blk * BLOCK_SIZE + token_in_block;
      const bool valid = token < sp.end;  // blocks start at `start` or later: token >= start
      float dot[G];
#pragma unroll
      for (int g = 0; g < G; ++g) dot[g] = 0.f;
      const cache_t* k = nullptr;
      if (valid) {
        k = k_cache + phys * a.kv_block_stride + sp.kv_head * a.kv_head_stride + token_in_block * X;
        for (int c = group_lane; c < HEAD_SIZE / VEC; c += GROUP) {
#pragma unroll
          for (int v = 0; v < VEC; ++v) {
            const int d = c * VEC + v;
            float kv = Cache::load(k[(d / X) * (BLOCK_SIZE * X) + d % X], a.fp8_e5m2);
            if (fp8_round) kv = round_to<scalar_t>(kv * a.k_scale);
#pragma unroll
            for (int g = 0; g < G; ++g)
              if (h.live(g)) dot[g] = fmaf(h.q(g)[d], kv, dot[g]);
          }
        }
      }
      // Every lane takes part: the shuffle needs the full warp.
#pragma unroll
      for (int g = 0; g < G; ++g) dot[g] = group_sum<GROUP>(dot[g]);
      if (valid && group_lane == 0) {
        const float pos = static_cast<float>(token - sp.seq_len + 1);
#pragma unroll
        for (int g = 0; g < G; ++g) {
          if (!h.live(g)) continue;
          float logit = dot[g] * a.qk_scale;
          // ALiBi: slope * (i - seq_len + 1), so the last token gets no bias.
          const float slope = h.slope(a, g);
          if (a.alibi_slopes) logit = fmaf(slope, pos, logit);
          const bool row_bad = h.row_bad(slope);
          if (row_bad || !finite(logit))
            logit = slow_logit(a, h.q(g), k, row_bad, fp8_round, slope, pos);
          h.logits(g)[token - sp.start] = logit;
          m[g] = fmaxf(m[g], logit);
        }
      }
    }
    coll.max(m);
  }

  // Phase 3, softmax: logits[i] becomes e_i = exp(logit_i - m), the weight at m of the
  // one-token state (x_i, 1) (lse_state.h: NaN for a NaN logit, also when every logit is
  // NaN and fmaxf left m = -inf), and s = sum e_i (per thread in token order, then the
  // collective's fixed order). With round_p, logits[i] becomes p_i = e_i * inv rounded to
  // the scalar type. Barriers: the collective's, plus one after rounding (round_p).
  template <int G, int MAX_N>
  __device__ __forceinline__ static void softmax(const AttnArgs& a, const Span& sp,
                                                 const Heads<HEAD_SIZE, G>& h, const float (&m)[G],
                                                 BlockCollective<WARP, MAX_N>& coll,
                                                 Softmax (&sm)[G]) {
    float s[G];
#pragma unroll
    for (int g = 0; g < G; ++g) s[g] = 0.f;
    for (int i = threadIdx.x; i < sp.n; i += NUM_THREADS) {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (!h.live(g)) continue;
        float* const e_s = h.logits(g);
        const float e = LseState<float>{e_s[i], 1.f}.weight_at(m[g], FastExp());
        e_s[i] = e;
        s[g] += e;
      }
    }
    coll.sum(s);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      // vLLM's reciprocal of the denominator (eps: s + 1e-6, a bias; s >= 1 needs none).
      sm[g] = {m[g], s[g], 1.f / (a.eps ? s[g] + 1e-6f : s[g])};
    }
    if (a.round_p) {  // vLLM: p_i = e_i * inv, rounded to scalar_t before P.V
      for (int i = threadIdx.x; i < sp.n; i += NUM_THREADS) {
#pragma unroll
        for (int g = 0; g < G; ++g)
          if (h.live(g)) h.logits(g)[i] = round_to<scalar_t>(h.logits(g)[i] * sm[g].inv);
      }
      __syncthreads();
    }
  }

  // Phase 4, P.V: acc[g][r] = sum_i p_i v_i[d] over this warp's blocks, d = row r of this
  // lane (pv_row), summed over the lanes sharing the row; each value element loaded once
  // for all G heads. No barrier; reads the logits (p_i) only.
  template <int G>
  __device__ __forceinline__ static void pv(const AttnArgs& a, const Span& sp,
                                            const Heads<HEAD_SIZE, G>& h,
                                            float (&acc)[G][ROWS_PER_LANE]) {
    const int warp = threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    const int lane_chunk = lane % LANES_PER_ROW;
    const bool fp8_round = Cache::kFp8 && a.round_p;
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int r = 0; r < ROWS_PER_LANE; ++r) acc[g][r] = 0.f;
    }
    const cache_t* v_cache = static_cast<const cache_t*>(a.value_cache);
    int chunk = 0;
    for (int blk = sp.start_blk + warp, j = 0; blk < sp.end_blk; blk += NUM_WARPS, ++j) {
      const cache_t* v = v_cache + block_number(sp, blk, j, lane, chunk) * a.kv_block_stride +
                         sp.kv_head * a.kv_head_stride;
      for (int t = 0; t < V_TOKENS; ++t) {
        const int token_in_block = lane_chunk * V_TOKENS + t;
        const int token = blk * BLOCK_SIZE + token_in_block;
        if (token >= sp.end) break;  // never touch a slot past the partition or sequence
        float p[G];
#pragma unroll
        for (int g = 0; g < G; ++g) p[g] = h.live(g) ? h.logits(g)[token - sp.start] : 0.f;
#pragma unroll
        for (int r = 0; r < ROWS_PER_LANE; ++r) {
          const int d = pv_row(r);
          if (HEAD_SIZE % ROWS_PER_PASS == 0 || d < HEAD_SIZE) {
            float vv = Cache::load(v[d * BLOCK_SIZE + token_in_block], a.fp8_e5m2);
            if (fp8_round) vv = round_to<scalar_t>(vv * a.v_scale);
#pragma unroll
            for (int g = 0; g < G; ++g)
              if (h.live(g)) acc[g][r] = fmaf(p[g], vv, acc[g][r]);
          }
        }
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int r = 0; r < ROWS_PER_LANE; ++r) acc[g][r] = group_sum<LANES_PER_ROW>(acc[g][r]);
    }
  }

  // Phase 5a, overflow check: rescue[g] when some warp's partial sum of head g is not
  // finite (a NaN or inf value element) or so large that the cross-warp sum of NUM_WARPS
  // partials could overflow, and s is a number (with s NaN the row is already NaN: o =
  // acc / s, or p_i NaN). One barrier (the collective's); after it no thread reads p_i
  // again on the fast path, so combine_and_store may reuse the logits as P.V scratch.
  template <int G, int MAX_N>
  __device__ __forceinline__ static void overflow_check(const float (&acc)[G][ROWS_PER_LANE],
                                                        const Softmax (&sm)[G],
                                                        BlockCollective<WARP, MAX_N>& coll,
                                                        bool (&rescue)[G]) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      rescue[g] = false;
#pragma unroll
      for (int r = 0; r < ROWS_PER_LANE; ++r) {
        if (!(fabsf(acc[g][r]) <= kFltMax / NUM_WARPS)) rescue[g] = true;
      }
    }
    coll.any(rescue);
#pragma unroll
    for (int g = 0; g < G; ++g) rescue[g] = rescue[g] && sm[g].s == sm[g].s;
  }

  // Phase 5b, overflow rescue (rare; block-uniform: call iff overflow_check said so for
  // this head): recompute each output element from p_i (still in the head's logits buffer,
  // p) and value
  // elements scaled by 2^-64, so no finite input can overflow (|p_i| <= 1, n < 2^31);
  // what is still not finite comes from a NaN or inf value element: the row is poisoned.
  // Stores the head's output and state. One barrier (the collective's).
  template <int MAX_N>
  __device__ static void rescue(const AttnArgs& a, const Span& sp, const float* p, const Dest& dest,
                                const Softmax& sm, BlockCollective<WARP, MAX_N>& coll) {
    const float down = pow2f(-64), up = pow2f(64);
    const bool fp8_round = Cache::kFp8 && a.round_p;
    const cache_t* v_cache = static_cast<const cache_t*>(a.value_cache);
    float o_row[RESCUE_ROWS];
    bool bad = false;
    for (int k = 0; k * NUM_THREADS < HEAD_SIZE; ++k) {
      const int d = threadIdx.x + k * NUM_THREADS;
      float sum = 0.f;
      for (int i = 0; d < HEAD_SIZE && i < sp.n; ++i) {
        const int token = sp.start + i;
        const cache_t* v = v_cache + sp.block_table[token / BLOCK_SIZE] * a.kv_block_stride +
                           sp.kv_head * a.kv_head_stride;
        float vv = Cache::load(v[d * BLOCK_SIZE + token % BLOCK_SIZE], a.fp8_e5m2) * down;
        if (fp8_round) vv = vv * a.v_scale;
        sum = fmaf(p[i], vv, sum);
      }
      if (!finite(sum)) bad = true;
      o_row[k] = sum;
    }
    const bool poisoned = coll.any(bad);
    const LseState<float> st{sm.m, sm.s};
    for (int k = 0; k * NUM_THREADS < HEAD_SIZE; ++k) {
      const int d = threadIdx.x + k * NUM_THREADS;
      if (d >= HEAD_SIZE) break;
      float o = o_row[k];
      if (!a.round_p) o = a.eps ? o * sm.inv : st.normalized(o);
      o = o * up;
      // The exact value lies between the smallest and largest value element: in range
      // unless an fp8 v_scale takes it past FLT_MAX, where inf is its rounding.
      if (!Cache::kFp8) o = saturate(o);
      if (Cache::kFp8 && !a.round_p) o = o * a.v_scale;
      store_output<scalar_t, HEAD_SIZE>(a, dest, d, poisoned ? NAN : o);
    }
    store_state(a, dest, sm.m, poisoned ? NAN : sm.s);
  }

  // Phase 6, combine and store (the fast path; call after overflow_check): warps 1.. put
  // their partial rows into their head's logits buffer, warp 0 adds them in warp order,
  // normalizes (acc / s, no epsilon: s >= 1, lse_state.h's normalized; or vLLM's forms)
  // and stores; then the state. Heads with skip[g] (rescued) are left alone. One barrier.
  template <int G>
  __device__ __forceinline__ static void combine_and_store(const AttnArgs& a,
                                                           const Heads<HEAD_SIZE, G>& h,
                                                           const Softmax (&sm)[G],
                                                           const float (&acc)[G][ROWS_PER_LANE],
                                                           const bool (&skip)[G]) {
    const int warp = threadIdx.x / WARP;
    const int lane_chunk = threadIdx.x % WARP % LANES_PER_ROW;
    // Loops over g: static_for, not a pragma (static_for.cuh).
    if (warp > 0 && lane_chunk == 0) {
      static_for<G>([&](auto gc) PAGEDATTN_INLINE_LAMBDA {
        constexpr int g = decltype(gc)::value;
        if (skip[g]) return;
#pragma unroll
        for (int r = 0; r < ROWS_PER_LANE; ++r) {
          const int d = pv_row(r);
          if (d < HEAD_SIZE) h.logits(g)[(warp - 1) * HEAD_SIZE + d] = acc[g][r];
        }
      });
    }
    __syncthreads();
    static_for<G>([&](auto gc) PAGEDATTN_INLINE_LAMBDA {
      constexpr int g = decltype(gc)::value;
      if (skip[g]) return;
      if (warp == 0 && lane_chunk == 0) {
        const LseState<float> st{sm[g].m, sm[g].s};
#pragma unroll
        for (int r = 0; r < ROWS_PER_LANE; ++r) {
          const int d = pv_row(r);
          if (d >= HEAD_SIZE) continue;
          float o = acc[g][r];
          for (int w = 1; w < NUM_WARPS; ++w) o += h.logits(g)[(w - 1) * HEAD_SIZE + d];
          if (!a.round_p) {  // p_i not yet normalized
            o = a.eps ? o * sm[g].inv : st.normalized(o);
            if (Cache::kFp8) o = o * a.v_scale;
          }
          store_output<scalar_t, HEAD_SIZE>(a, h.dest(a, g), d, o);
        }
      }
      store_state(a, h.dest(a, g), sm[g].m, sm[g].s);
    });
  }

 private:
  // The value row (head element) that P.V pass r of this lane covers.
  __device__ static int pv_row(int r) {
    return static_cast<int>(threadIdx.x % WARP) / LANES_PER_ROW + r * ROWS_PER_PASS;
  }

  // The logit of a token whose fast path gave a non-finite value (one lane, rare): NaN if
  // a live input is not finite (row_bad: the slope or the scale; else q or this key);
  // otherwise finite inputs overflowed fp32, so q.k is recomputed on elements scaled by
  // 2^-70 each (no product or sum of HEAD_SIZE can overflow then), scaled back, and the
  // logit saturated to +-FLT_MAX. Past FLT_MAX the logits are beyond fp32 anyway: the
  // row's softmax goes to the token(s) saturated at the top.
  __device__ static float slow_logit(const AttnArgs& a, const float* q_s, const cache_t* k,
                                     bool row_bad, bool fp8_round, float slope, float pos) {
    if (row_bad) return NAN;
    const float down = pow2f(-70), up = pow2f(70);
    float dot = 0.f;
    for (int d = 0; d < HEAD_SIZE; ++d) {
      const float kv = Cache::load(k[(d / X) * (BLOCK_SIZE * X) + d % X], a.fp8_e5m2);
      if (!finite(q_s[d]) || !finite(kv)) return NAN;
      dot = fmaf(q_s[d] * down, fp8_round ? kv * down * a.k_scale : kv * down, dot);
    }
    float logit = saturate(saturate(dot * a.qk_scale * up) * up);
    if (a.alibi_slopes) logit = saturate(fmaf(slope, pos, logit));
    return logit;
  }
};

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
