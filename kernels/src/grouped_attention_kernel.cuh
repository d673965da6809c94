// The grouped paged-attention kernel (Options::grouped): one block serves up to
// G = group_max_heads(WARP, HEAD_SIZE, BLOCK_SIZE) query heads sharing one KV head, so
// each key and value element of the span is loaded once for all of them (attention_kernel.cuh:
// once per query head). V1 (final_output) and V2 (one partition per grid z) as there: the
// same phases (attention_phases.cuh) composed with G slots, of which the block's
// a.heads_per_block (or fewer, in a KV head's last block) are live. Per head the phases do
// the arithmetic of G = 1, so every output and state is bit-identical to attention_kernel's.
//
// Grid (num_kv_heads * blocks_per_kv_head, num_seqs, partitions), kThreadsPerBlock threads;
// at least 1 block per SM: else ptxas trades up to 392 bytes of spills for occupancy
// (kernels/README.md "Registers"). Shared memory (resources.h, grouped_smem_bytes).
#pragma once
#include "attention_phases.cuh"
#include "block_collective.cuh"
#include "device_math.cuh"
#include "kernel_args.h"
#include "pagedattn/resources.h"
#include "platform.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

template <class scalar_t, class cache_t, int HEAD_SIZE, int BLOCK_SIZE, int WARP>
__global__ void __launch_bounds__(kThreadsPerBlock, 1) grouped_attention_kernel(const AttnArgs a) {
  using P = AttentionPhases<scalar_t, cache_t, HEAD_SIZE, BLOCK_SIZE, WARP>;
  constexpr int G = group_max_heads(WARP, HEAD_SIZE, BLOCK_SIZE);
  float* const shared = reinterpret_cast<float*>(smem);
  const int ratio = a.num_heads / a.num_kv_heads;
  const int kv_head = blockIdx.x / a.blocks_per_kv_head;
  const int first =
      kv_head * ratio + static_cast<int>(blockIdx.x) % a.blocks_per_kv_head * a.heads_per_block;
  const int n = imin(a.heads_per_block, kv_head * ratio + ratio - first);  // live heads
  const int seq = blockIdx.y;
  const int part = blockIdx.z;
  Span sp = attention_span(a, BLOCK_SIZE, seq, kv_head, part);
  if (sp.empty) {  // block-uniform
    for (int g = 0; g < n; ++g)
      store_empty<scalar_t, HEAD_SIZE>(a, attention_dest(a, seq, first + g, part));
    return;
  }
  // On HIP the span's bounds live in vector registers, leaving the scalar ones to the G
  // heads' values (platform.cuh); elsewhere this changes nothing.
  sp.seq = per_lane(sp.seq);
  sp.kv_head = per_lane(sp.kv_head);
  sp.seq_len = per_lane(sp.seq_len);
  sp.start = per_lane(sp.start);
  sp.end = per_lane(sp.end);
  sp.n = per_lane(sp.n);
  sp.start_blk = per_lane(sp.start_blk);
  sp.end_blk = per_lane(sp.end_blk);
  BlockCollective<WARP, G> coll(shared);
  // resources.h's layout: the heads' query rows packed after the collective, then their
  // logits buffers (a buffer is well within the shared memory, so an int holds the stride).
  static_assert(Heads<HEAD_SIZE, G>::kQFloats == round_up(HEAD_SIZE, 4), "resources.h's layout");
  const Heads<HEAD_SIZE, G> h = query_heads<HEAD_SIZE, G, P::Cache::kFp8>(
      a, first, n, seq, part, shared + grouped_heads_offset(WARP, HEAD_SIZE, BLOCK_SIZE),
      shared + grouped_logits_offset(WARP, HEAD_SIZE, BLOCK_SIZE, a.heads_per_block),
      static_cast<int>(grouped_logits_stride(WARP, HEAD_SIZE, a.partition_size)));
  for (int g = 0; g < n; ++g) P::load_query(a, sp, h, g);
  __syncthreads();
  float m[G];
  P::logits_and_max(a, sp, h, coll, m);
  Softmax sm[G];
  P::softmax(a, sp, h, m, coll, sm);
  float acc[G][P::ROWS_PER_LANE];
  P::pv(a, sp, h, acc);
  bool rescue[G];
  P::overflow_check(acc, sm, coll, rescue);
  bool skip[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    skip[g] = rescue[g] || !h.live(g);
    // Rescued heads read only their own p_i; combine_and_store writes only other heads'.
    if (h.live(g) && rescue[g])  // block-uniform
      P::rescue(a, sp, h.logits(g), h.dest(a, g), sm[g], coll);
  }
  P::combine_and_store(a, h, sm, acc, skip);
  static_assert(P::ROWS_PER_LANE == pv_rows_per_lane(WARP, HEAD_SIZE, BLOCK_SIZE),
                "resources.h's P.V layout, which bounds G");
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
