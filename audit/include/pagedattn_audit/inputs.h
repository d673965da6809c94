// The audit's input distributions: generators of pagedattn::testing::Case values.
// Generation is deterministic in (shape, distribution, seed) and independent of how many
// host threads fill it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pagedattn/dtypes.h"
#include "pagedattn_testing/case.h"

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
// aligned_rounding: every q.k rounds each partial sum the same way, by nearly half an ulp,
//               in the direction (sign of v_i - y) that moves the output: the logits' error
//               at the bound's worst case (pagedattn_audit/aligned_rounding.h). Logits about
//               24, spread over about 4; values of magnitude in [1/2, 1).
const std::vector<std::string>& distribution_names();
// Whether a distribution's inputs follow one warp width's summation order
// (CaseShape::warp_size): aligned_rounding.
bool depends_on_warp(const std::string& distribution);

struct CaseShape {
  int num_seqs = 1, num_heads = 8, num_kv_heads = 8, head_size = 128, block_size = 16;
  DType dtype = DType::f16;               // query and output
  CacheFormat cache = CacheFormat::same;  // kv_cache_dtype
  int seq_len = 16;                       // sequence 0's length; others uniform in [1, seq_len]
  bool alibi = false;
  int warp_size = 64;  // depends_on_warp distributions: the warp whose order they follow
};

// A case of `distribution`, deterministic in (shape, distribution, seed) and independent
// of the host threads that fill it (a pagedattn::testing::Case; the scale is vLLM's
// test scale head_size^-0.5 as a float). Throws std::invalid_argument for an unknown
// distribution.
testing::Case generate_inputs(const CaseShape& shape, const std::string& distribution,
                              std::uint64_t seed, int threads);

}  // namespace pagedattn::audit
