// Bounds on the kernels' intermediate states, sharper than kernel_error_bound on the final
// output because each judges one step against its own exact value:
//  - the V2 reduce on ANY row of fp32 partition states, against the exact fold of those
//    states: theorem `fold_error` (proofs/coq/LseRound.v, machine-checked), its relative
//    part and its underflow terms (ws, wo, the quotient's 2^-150);
//  - a V2 partition's max_logits and exp_sums against the exact partition state
//    (ref::reference_partitions): the per-partition part of kernel_error_bound, sections 3
//    and 4-5 of proofs/error_bound.md (the tmp_out rows are kernel_error_bound itself, V1
//    over the partition's tokens, its fp32 part).
// Plain C++17 on bound.h's public types; no dependency on kernels/, the emulator or the
// reference.
#pragma once
#include <cstdint>
#include <vector>

#include "pagedattn_bound/bound.h"

namespace pagedattn::bound {

// fold_error's constants for a fold of `live` non-empty states whose maxima lie at most G
// below the row's max, with the exp within a relative e_exp on every argument it sees:
//   alpha = exp(G u)(1 + e_exp)(1 + u) - 1         (the weight s_p exp(m_p - M), rounded)
//   g = (1 + alpha)(1 + u)^(live - 1) - 1            (the total's error, relative to sig)
//   b = (1 + alpha)(1 + u)^live - 1                  (the accumulator's, relative to asum)
//   result = (1 + b)(1 + u) / (1 - g) - 1            (the quotient's, relative to asum/sig)
// with sig = sum_p s_p exp(m_p - M), asum = sum_p s_p exp(m_p - M) |o_p|. result is +inf
// when g >= 1 (outside the theorem).
struct FoldConstants {
  double alpha = 0, g = 0, b = 0, result = 0;
};
FoldConstants fold_constants(std::int64_t live, double e_exp, double G);

// One row of partition states as the reduce reads them: parts states (m_p, s_p) and
// o[p * head_size + d]; a state with s_p == 0 is empty (m_p -inf, o_p garbage: unread).
struct StateRow {
  int parts = 0, head_size = 0;
  const double* m = nullptr;
  const double* s = nullptr;
  const double* o = nullptr;
};

// The exact fold of a row and the reduce's bound per element d:
//   |out_d - exact_d| <= bound_d,  exact_d = sum_p w_p o_pd / sum_p w_p,  w_p = s_p exp(m_p - M)
// for the reduce as reduce_kernel.cuh runs it (lse_state.h's WeightedSum), with the exp of
// accuracy `exp` (bound.h's ulp model, taken at its worst argument G: e_exp = 2u(a + bG)),
// and the output rounded to `out` (f32: nothing rounded; f16/bf16: round to nearest).
//   bound_d = [fold.result * asum_d / sig + underflow_d] (1 + 1e-9) + final rounding
// (state_bounds.cpp: the underflow allowance is at least fold_error's absolute terms, and
// the final rounding). The allowance is needed and sufficient where a live state's max lies
// more than 87 below the row's (its weight subnormal): Properties.prop_reduce_underflow_allowance.
// A row with no live state gives exact 0 and bound 0 (the reduce writes 0). Inputs must be finite
// for live states; a NaN o_p gives a NaN exact (nothing to bound).
struct ReduceBounds {
  std::vector<double> exact, bound;  // [head_size]
  std::vector<double> underflow;     // [head_size]: underflow_d, the part of bound_d for it
  FoldConstants fold;
};
ReduceBounds reduce_bounds(Format out, const ExpAccuracy& exp, const StateRow& row);

// The per-partition part of the proven bound for one V2 partition (or a V1 row): the
// partition's tokens only, `part` their exact magnitudes (exact_magnitudes over them, the
// softmax and gaps taken within the partition), `cfg` the kernel as launched with
// partition_size 0 (V1's body runs on them). With m, s the exact partition max and
// exp-sum sum_i exp(x_i - m):
//   |max_logit_hat - m| <= max_logit              (fmaxf is exact: Xi_max, (3.3))
//   |exp_sum_hat - s| <= exp_sum_rel * s + exp_sum_abs
struct PartitionStateBound {
  double max_logit = 0;
  double exp_sum_rel = 0, exp_sum_abs = 0;
};
PartitionStateBound partition_state_bound(const KernelConfig& cfg, const RowMagnitudes& part);

}  // namespace pagedattn::bound
