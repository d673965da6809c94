// The paged-attention kernel of V1 (one partition spanning the sequence, writing the
// output) and V2 (one partition per grid z, writing its state (m, s, o)): the phases of
// attention_phases.cuh composed for one query head per block.
//
// Grid (num_heads, num_seqs, partitions), kThreadsPerBlock threads. Shared memory
// (resources.h): the block collective's scratch, the query row, the partition's logits.
#pragma once
#include "attention_phases.cuh"
#include "block_collective.cuh"
#include "device_math.cuh"
#include "kernel_args.h"
#include "pagedattn/resources.h"
#include "platform.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

template <class scalar_t, class cache_t, int HEAD_SIZE, int BLOCK_SIZE, int WARP>
__global__ void __launch_bounds__(kThreadsPerBlock) attention_kernel(const AttnArgs a) {
  using P = AttentionPhases<scalar_t, cache_t, HEAD_SIZE, BLOCK_SIZE, WARP>;
  float* const shared = reinterpret_cast<float*>(smem);
  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int part = blockIdx.z;
  const Dest dest = attention_dest(a, seq, head, part);
  const Span sp = attention_span(a, BLOCK_SIZE, seq, head / (a.num_heads / a.num_kv_heads), part);
  if (sp.empty) {  // block-uniform, so no barrier is skipped by some
    store_empty<scalar_t, HEAD_SIZE>(a, dest);
    return;
  }
  BlockCollective<WARP> coll(shared);
  const Heads<HEAD_SIZE, 1> h =
      query_heads<HEAD_SIZE, 1, P::Cache::kFp8>(a, head, 1, seq, part, shared + attn_q_offset(WARP),
                                                shared + attn_logits_offset(WARP, HEAD_SIZE), 0);
  P::load_query(a, sp, h, 0);
  __syncthreads();
  float m[1];
  P::logits_and_max(a, sp, h, coll, m);
  Softmax sm[1];
  P::softmax(a, sp, h, m, coll, sm);
  float acc[1][P::ROWS_PER_LANE];
  P::pv(a, sp, h, acc);
  bool rescue[1];
  P::overflow_check(acc, sm, coll, rescue);
  if (rescue[0]) {  // block-uniform
    P::rescue(a, sp, h.logits(0), dest, sm[0], coll);
    return;
  }
  P::combine_and_store(a, h, sm, acc, rescue);
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
