// The reduce half of fold_partitions_softmax as a property of any reduction, so the same
// check runs on the kernels' reduce (prop_fold_partitions_softmax_reduce) and on each
// known-wrong reduction of kernels/tests/wrong_reductions.h (test_known_wrong.cpp must
// see every one of those fail).
#pragma once
#include <functional>
#include <vector>
#include "../kernels/tests/wrong_reductions.h"
#include "pagedattn/dtypes.h"
#include "pagedattn/params.h"

namespace pagedattn::prop {

// One row's states in, the row's output (decoded) out, in output dtype `out`.
using Reducer = std::function<std::vector<double>(const test::wrong::States&, DType out)>;

// The kernels' reduce on the emulator (profile h200 or bi-v100), as a Reducer; `numerics`
// the launch's options (our numerics by default; partition_size is set here).
Reducer kernel_reducer(const std::string& profile, const Options& numerics = {});

// The property body: (A) the kernels' V2 partition states of a generated problem, reduced,
// equal the exact output within V2's bound; (B) arbitrary states (o_p differing per
// partition, maxima up to 300 apart, empty states with NaN garbage inside, all-empty rows)
// reduce to their exact fold within the proven reduce bound (theorem fold_error,
// pagedattn_bound/state_bounds.h), all-empty rows to 0.
void reduce_property(const Reducer& reduce);

}  // namespace pagedattn::prop
