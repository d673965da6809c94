// Non-finite findings: the first NaN or inf in a live input (one the kernels read) or in
// an output, named by its index, so a poisoned input is reported rather than hidden
// behind a plausible-looking number. Shared by `pagedattn run` and the audit.
#pragma once
#include <cstdint>
#include <string>

#include "pagedattn/dtypes.h"
#include "pagedattn_testing/case.h"

namespace pagedattn::audit {

// "query[0][3][17] = nan", "key_cache[block 5][kv head 0][dim 2][slot 7] = inf (seq 0,
// token 87)", "alibi_slopes[2] = nan", or "" when every live input is finite. Live: the
// query and ALiBi slope of a sequence with seq_len > 0, and the key and value slots
// inside seq_len (slots past it are never read, so a NaN there is not a finding).
std::string first_nonfinite_input(const testing::Case& in);

// "out_v2[1][0][5] = nan" for an output [num_seqs, num_heads, head_size] of `dtype`, or "".
std::string first_nonfinite_output(const std::string& name, DType dtype, const void* out,
                                   std::int64_t num_seqs, std::int64_t num_heads,
                                   std::int64_t head_size);

}  // namespace pagedattn::audit
