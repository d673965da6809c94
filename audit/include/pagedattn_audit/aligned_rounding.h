// The aligned_rounding distribution (issue 19, item 4): inputs on which the logits' rounding
// reaches what the bound charges for it. The bound charges each logit its dot product's
// worst case, gamma_{h_dot + 1} sum_d |q_d k_d| (proofs/error_bound.md section 3); on random
// inputs the partial sums' rounding errors have random signs and add like a random walk, so
// the fp32 bound sits far above the errors seen. Here, per token:
// - every term q_d k_d is positive (|dot| = sum_d |q_d k_d|, the bound's charge): q_d is a
//   power of two, 1 on the first element of each lane's chain ("lead", carrying the dot's
//   size) and 2^(e-24) elsewhere, so each later term is about half an ulp of its lane's
//   running sum (that sum is about 2^e);
// - every other key element is chosen by simulating the kernel's own summation (each lane's
//   fmaf chain, then the group_sum butterfly, then the scale multiply, kernel_dot below)
//   among the cache format's values next to half an ulp, so every rounding moves the
//   logit the same way by nearly half an ulp (up: just above half an ulp, the sum rounds
//   up; down: just below, the term is lost), and the butterfly's ties break that way too
//   (the last element of each lane picks its lane sum's parity);
// - the way is the sign of v_i - y (y the exact output, from the row's softmax), so every
//   token's logit error moves the output the same way (testing::AdversarialExp's idea, for
//   the logits): values are v_id = s_i m_id with a random sign s_i and m_id in [1/2, 1),
//   so the sign of v_id - y_d is s_i in every element d (|y_d| < 1/2) and one key serves the
//   whole row.
// Logits: scale * G * 2^e (1 + delta_i), e chosen so that the size is about 24 and delta_i
// uniform such that the logits spread over about 4 (weights within e^-4 of each other: the
// softmax is not degenerate). The size matters: the logit term is u (h_dot + 2) Q_i against
// the P.V sums' (h_o + h_s) u A.
// Query heads of one KV group share their query (the keys are the group's), so every row is
// aligned; ALiBi (which differs per head) is in the directions of the group's first head.
// The summation order is the kernel's for `warp_size` (the first profile of the audit) and
// the case's dtypes; on another warp width the rounding directions are no longer aligned.
// Directions and logits assume the default positive scale (--scale changes the logits after
// generation).
#pragma once
#include <cstdint>
#include <vector>

#include "pagedattn_testing/case.h"

namespace pagedattn::audit {

// The order in which the attention kernel sums one token's q.k
// (kernels/src/attention_phases.cuh, logits_and_max and the constants above it;
// warp_reduce.cuh, group_sum): the GROUP = max(warp / block_size, 1) lanes of the token's
// thread group each run dot = fmaf(q_d, k_d, dot) from 0 over their chunks of VEC
// contiguous elements (chunk c = lane, lane + GROUP, ...), then log2(GROUP) butterfly levels
// of v + shfl_xor(v, offset), offset GROUP/2 down to 1.
struct DotOrder {
  int lanes = 1;
  std::vector<std::vector<int>> dims;  // [lane]: the elements in that lane's fmaf order
};
// scalar_bytes: sizeof(scalar_t) of the query (4 f32, 2 f16/bf16); cache_bytes: sizeof
// the cache element (the scalar's, or 1 for fp8).
DotOrder dot_order(int warp_size, int block_size, int head_size, int scalar_bytes, int cache_bytes);
DotOrder dot_order(const testing::Case& c, int warp_size);
// The dot product as the kernel computes it (q and k as the kernel holds them: decoded,
// fp8 keys without k_scale).
float kernel_dot(const DotOrder& order, const float* q, const float* k);

// Writes the queries, keys and values of `c` (its shape, lengths and block tables set, its
// caches zero): the aligned_rounding inputs, deterministic in (c's shape, seed) for any
// thread count. Slots past a sequence's end stay zero.
void fill_aligned_rounding(testing::Case& c, int warp_size, std::uint64_t seed, int threads);

}  // namespace pagedattn::audit
