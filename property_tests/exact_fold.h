// The fold of partition states along a random binary tree of lse_state.h's merges, in
// real arithmetic (MPFR at 512 decimal digits, about 1,700 bits): by the monoid laws
// (proofs/equivalence.md) it equals the reduce's fold of the same states in real
// arithmetic, which the proven bound covers (the theorem holds for every rounding
// |delta| <= u, zero included), so a tree of the kernel's states must land within V2's
// bound of the exact output.
#pragma once
#include <cstdint>
#include <vector>

#include "../kernels/tests/wrong_reductions.h"

namespace pagedattn::prop {

// The tree fold of one row's states, rounded to double per element. The merge tree (and
// the order of its leaves) is drawn from `tree_seed`. Every MPFR operation errs by less
// than a relative 2^-512 (about 2^-1700 at this precision) and exp of |m_p - M| <= 2^12
// amplifies its argument's error by at most that much, over fewer than 16 operations per
// merge: the real tree fold lies within tree_fold_slack() of the returned value (rounding
// to double included).
std::vector<double> tree_fold_exact(const test::wrong::States& st, std::uint32_t tree_seed);
// 2^-52 of |result| plus 2^-400 of max_p |o_p|: the double rounding, and the MPFR error.
double tree_fold_slack(const test::wrong::States& st, double result);

}  // namespace pagedattn::prop
