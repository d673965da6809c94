// Non-finite findings: the first NaN or inf in a live input (one the kernels read) or in
// an output, named by its index, so a poisoned input is reported rather than hidden
// behind a plausible-looking number. Shared by `pagedattn run` and the audit.
#pragma once
#include <cstdint>
#include <string>

#include "pagedattn/dtypes.h"

namespace pagedattn::audit {

// The tensors of one decode step in vLLM's layout (raw element bytes; see inputs.h).
struct LiveInputs {
  std::int64_t num_seqs = 0, num_heads = 0, num_kv_heads = 0, head_size = 0, block_size = 0;
  std::int64_t max_blocks_per_seq = 0;
  DType scalar = DType::f32;  // query
  DType cache = DType::f32;   // cache elements: f32/f16/bf16, or fp8_e4m3/fp8_e5m2 bytes
  const void* query = nullptr;
  const void* key_cache = nullptr;
  const void* value_cache = nullptr;
  const std::int32_t* block_tables = nullptr;
  const std::int32_t* seq_lens = nullptr;
  const float* alibi_slopes = nullptr;  // null: no ALiBi
  double scale = 1;
};

// "query[0][3][17] = nan", "key_cache[block 5][kv head 0][dim 2][slot 7] = inf (seq 0,
// token 87)", "alibi_slopes[2] = nan", or "" when every live input is finite. Live: the
// query and ALiBi slope of a sequence with seq_len > 0, and the key and value slots
// inside seq_len (slots past it are never read, so a NaN there is not a finding).
std::string first_nonfinite_input(const LiveInputs& in);

// "out_v2[1][0][5] = nan" for an output [num_seqs, num_heads, head_size] of `dtype`, or "".
std::string first_nonfinite_output(const std::string& name, DType dtype, const void* out,
                                   std::int64_t num_seqs, std::int64_t num_heads,
                                   std::int64_t head_size);

// An element as float (f32, f16, bf16 or fp8 bits), exact.
float element_value(DType dtype, const void* data, std::int64_t index);

}  // namespace pagedattn::audit
