// The inputs of one audited case, owned, in vLLM's layout, and the generators of each
// input distribution. Generation is deterministic in (shape, distribution, seed) and
// independent of how many host threads fill it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pagedattn/dtypes.h"

namespace pagedattn::audit {

// vllm_uniform: vLLM's test inputs, every element uniform in +-head_size^-0.5.
// normal:       q, k ~ N(0, 2^2), v ~ N(0, 1): logits with a standard deviation of 4.
// dominant:     one token per sequence (random position) whose logit beats every other by
//               more than 40, so its softmax weight is above 1 - n e^-40.
// near_ties:    every key of a KV head is one base key with some elements moved by one
//               ulp of the cache type: logits differ only in their last bits.
// large_logits: logits spread over about +-600 (exp of the unshifted logit overflows).
// nan_tail:     vllm_uniform, with NaN in every cache slot past seq_len (the last block's
//               tail and a spare unused block): a kernel that reads one turns NaN.
// fp16_max:     vllm_uniform q and k; values of magnitude in [60000, 65504].
const std::vector<std::string>& distribution_names();

struct CaseShape {
  int num_seqs = 1, num_heads = 8, num_kv_heads = 8, head_size = 128, block_size = 16;
  DType dtype = DType::f16;               // query and output
  CacheFormat cache = CacheFormat::same;  // kv_cache_dtype
  int seq_len = 16;                       // sequence 0's length; others uniform in [1, seq_len]
  bool alibi = false;
};

struct Inputs {
  int num_seqs = 0, num_heads = 0, num_kv_heads = 0, head_size = 0, block_size = 0;
  DType dtype = DType::f16;
  CacheFormat cache = CacheFormat::same;
  std::int64_t num_blocks = 0;
  int max_blocks_per_seq = 0;
  std::int64_t max_seq_len = 0;
  float scale = 1, k_scale = 1, v_scale = 1;
  std::vector<std::uint8_t> query, key_cache, value_cache;  // raw element bytes
  std::vector<std::int32_t> block_tables, seq_lens;
  std::vector<float> alibi_slopes;  // empty: no ALiBi
  std::string distribution;         // or "replay"
  std::uint64_t seed = 0;

  DType cache_elem() const { return cache == CacheFormat::same ? dtype : DType::u8; }
  const char* kv_cache_dtype() const;  // vLLM's name: "auto", "fp8_e4m3", "fp8_e5m2"
};

// Throws std::invalid_argument for an unknown distribution.
Inputs generate_inputs(const CaseShape& shape, const std::string& distribution, std::uint64_t seed,
                       int threads);

// Physical element offsets of token slot `slot` of block `block`, KV head `kvh`, dim `d`.
std::int64_t key_offset(const Inputs& in, std::int64_t block, int kvh, int d, int slot);
std::int64_t value_offset(const Inputs& in, std::int64_t block, int kvh, int d, int slot);
// An element of a tensor of `in` as float (fp8 bytes decoded, no scale applied).
float element(const Inputs& in, const std::vector<std::uint8_t>& bytes, DType elem,
              std::int64_t index);

// float -> binary16 bits, round to nearest even (the generators' fast encoder; equal to
// pagedattn::float_to_f16_bits for every float).
std::uint16_t fast_f16_bits(float f);

}  // namespace pagedattn::audit
