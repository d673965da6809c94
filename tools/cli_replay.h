// A replay folder: the .npy files of one decode step, named after vLLM's arguments,
// loaded and checked against the contract (shapes, dtypes, index values) before any
// kernel runs, into the one case model (pagedattn::testing::Case). Every error names the
// file and the rule broken.
#pragma once
#include <string>

#include "npy.h"
#include "pagedattn/dtypes.h"
#include "pagedattn_testing/case.h"

namespace cli {

// `bf16`: '<u2' arrays hold bfloat16 bits. `kv_cache_dtype`: "auto" (caches have the
// query's dtype) or "fp8_e4m3"/"fp8_e5m2" (caches are '|u1' bytes). num_kv_heads and
// block_size come from key_cache's shape, max_seq_len is max(seq_lens), scale is
// head_size^-0.5 (as a float) and k_scale = v_scale = 1 until the caller sets them.
// Throws InputError.
pagedattn::testing::Case load_replay(const std::string& dir, bool bf16,
                                     const std::string& kv_cache_dtype);

// The .npy type string of a scalar type's arrays: '<f4', '<f2', or '<u2' (bfloat16 bits).
std::string npy_descr(pagedattn::DType scalar);

}  // namespace cli
