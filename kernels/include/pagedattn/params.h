// Options callers choose, and the validated parameter set every launcher consumes.
#pragma once
#include <cstdint>
#include "pagedattn/dtypes.h"

namespace pagedattn {

// kExactFp32 numerics are ours (the default); vllm_compatible reproduces vLLM's
// accuracy-costing choices so the two can be measured side by side (VLLM_CONTRACT.md).
enum class Numerics : std::uint8_t {
  exact_fp32,       // fp32 tmp_out, no epsilon, fp32 probabilities, fp32 dequantized cache
  vllm_compatible,  // tmp_out in the output dtype, +1e-6 in denominators, probabilities and
                    // dequantized fp8 cache values rounded to the scalar type
};

struct Options {
  int partition_size = 512;  // V2: tokens per partition, a multiple of block_size in [64, 4096]
  Numerics numerics = Numerics::exact_fp32;
  // Check every used block id against [0, num_blocks) and seq_lens against max_seq_len.
  // On the CUDA backend this copies block_tables and seq_lens to the host (a sync).
  bool check_indices = true;
};

enum class Kernel : std::uint8_t { v1, v2, reduce };

// Everything a launcher needs, after validation. Pointers are as the caller gave them
// (host memory for the emulator backend, device memory for CUDA).
struct AttentionParams {
  Kernel kernel = Kernel::v1;
  void* out = nullptr;
  float* exp_sums = nullptr;    // V2 / reduce
  float* max_logits = nullptr;  // V2 / reduce
  void* tmp_out = nullptr;      // V2 / reduce: f32 (exact_fp32) or the scalar type
  const void* query = nullptr;
  const void* key_cache = nullptr;
  const void* value_cache = nullptr;
  const std::int32_t* block_tables = nullptr;
  const std::int32_t* seq_lens = nullptr;
  const float* alibi_slopes = nullptr;  // null: no ALiBi

  DType scalar = DType::f32;  // query / out
  CacheFormat cache = CacheFormat::same;
  Numerics numerics = Numerics::exact_fp32;

  int num_seqs = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_size = 0;
  int block_size = 0;
  std::int64_t num_blocks = 0;
  int max_blocks_per_seq = 0;
  std::int64_t max_seq_len = 0;
  int partition_size = 0;      // V2 / reduce
  int max_num_partitions = 0;  // V2 / reduce: the third dimension of exp_sums

  std::int64_t q_seq_stride = 0;  // elements between sequences in query
  std::int64_t kv_block_stride = 0;
  std::int64_t kv_head_stride = 0;
  std::int64_t block_table_stride = 0;

  double scale = 1.0;
  double k_scale = 1.0;
  double v_scale = 1.0;
};

}  // namespace pagedattn
