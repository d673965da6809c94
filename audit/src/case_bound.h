// The audit's side of theorem kernel_error_bound (proofs/error_bound.md): the exact
// magnitudes of an input set, once, and each launched case's per-element bounds.
#pragma once
#include <string>
#include <vector>

#include "pagedattn/params.h"
#include "pagedattn/resources.h"
#include "pagedattn_audit/inputs.h"
#include "pagedattn_bound/bound.h"

namespace pagedattn::audit {

// Per (sequence, head) row and per output element, [num_seqs, num_heads(, head_size)].
struct BoundInputs {
  std::vector<bound::RowMagnitudes> rows;
  std::vector<bound::ElementMagnitudes> elements;
};

// From the inputs alone, through bound::exact_magnitudes (upper bounds of the exact
// magnitudes; each KV head's keys and values decoded once for its GQA group of heads).
// Rows with a non-finite input read get spread = NaN (their exact values are NaN).
BoundInputs bound_inputs(const Inputs& in);

// What a case ran with, as the bound needs it.
struct BoundCase {
  int warp_size = 32;
  int partition_size = 0;  // 0: V1
  NumericsChoices choices{};
  bound::ExpAccuracy exp;
};

// Bound::total of every output element; `exact` and `exact_err` (the reference's value and
// its rigorous error) give |y| <= |exact| + exact_err.
std::vector<double> element_bounds(const Inputs& in, const BoundInputs& bi, const BoundCase& bc,
                                   const std::vector<double>& exact,
                                   const std::vector<double>& exact_err);

}  // namespace pagedattn::audit
