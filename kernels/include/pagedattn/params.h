// Options callers choose, and the validated parameter set every launcher consumes.
#pragma once
#include <cstdint>
#include "pagedattn/dtypes.h"
#include "pagedattn/workload.h"

namespace pagedattn {

// kExactFp32 numerics are ours (the default); vllm_compatible reproduces vLLM's
// accuracy-costing choices so the two can be measured side by side (docs/VLLM_CONTRACT.md).
enum class Numerics : std::uint8_t {
  exact_fp32,       // fp32 tmp_out, no epsilon, fp32 probabilities, fp32 dequantized cache
  vllm_compatible,  // tmp_out in the output dtype, +1e-6 in denominators, probabilities and
                    // dequantized fp8 cache values rounded to the scalar type
};

// vLLM's three accuracy-costing choices, each selectable alone so each can be measured
// against ours (docs/VLLM_CONTRACT.md). All false: our numerics; all true: vllm_compatible.
// Runtime flags in the kernel arguments: no extra kernel instantiations.
struct NumericsChoices {
  // V2 keeps tmp_out (each partition's normalized output) in the output dtype, so every
  // partial is rounded before the reduce; tmp_out must then have the output dtype.
  bool partials_in_output_dtype = false;
  // Denominators as vLLM forms them: 1 / (s + 1e-6), then a multiply (attention kernel and
  // reduce), instead of one division by s.
  bool epsilon_denominator = false;
  // Probabilities normalized and rounded to the scalar type before P.V; with an fp8 cache
  // also every dequantized key and value element (times k_scale / v_scale) is rounded to
  // the scalar type, as vLLM does.
  bool round_probabilities = false;

  bool any() const {
    return partials_in_output_dtype || epsilon_denominator || round_probabilities;
  }
  bool operator==(const NumericsChoices& o) const {
    return partials_in_output_dtype == o.partials_in_output_dtype &&
           epsilon_denominator == o.epsilon_denominator &&
           round_probabilities == o.round_probabilities;
  }
  static NumericsChoices all() { return {true, true, true}; }
};

struct Options {
  int partition_size = 512;  // V2: tokens per partition, a multiple of block_size in [64, 4096]
  // Numerics::vllm_compatible turns every choice on; with exact_fp32, `vllm_choices` picks
  // single vLLM choices (default none). effective_choices() is what the kernels use.
  Numerics numerics = Numerics::exact_fp32;
  NumericsChoices vllm_choices{};
  // Grouped-query attention: one thread block serves the query heads sharing a KV head
  // (up to group_max_heads(head_size) of them), so each key and value element is read
  // once per group instead of once per query head. The same outputs bit for bit (every
  // head's arithmetic is the same: kernels/README.md, "Grouped kernels"); with one query
  // head per KV head it changes nothing.
  bool grouped = false;
  // Check every used block id against [0, num_blocks) and seq_lens against max_seq_len.
  // On the CUDA backend this copies block_tables and seq_lens to the host (a sync).
  bool check_indices = true;
};

// The choices a launch uses: all of them under vllm_compatible, else options.vllm_choices.
inline NumericsChoices effective_choices(const Options& o) {
  return o.numerics == Numerics::vllm_compatible ? NumericsChoices::all() : o.vllm_choices;
}

enum class Kernel : std::uint8_t { v1, v2, reduce };

// "v1", "v2", "reduce": how people and the tools' flags and JSON name a kernel.
inline const char* kernel_name(Kernel k) {
  return k == Kernel::v1 ? "v1" : k == Kernel::v2 ? "v2" : "reduce";
}
// The kernel's entry point as vLLM names it: "paged_attention_v1", ...
inline const char* kernel_entry_name(Kernel k) {
  return k == Kernel::v1   ? "paged_attention_v1"
         : k == Kernel::v2 ? "paged_attention_v2"
                           : "paged_attention_v2_reduce";
}

// Everything a launcher needs, after validation. Pointers are as the caller gave them
// (host memory for the emulator backend, device memory for CUDA).
struct AttentionParams {
  Kernel kernel = Kernel::v1;
  void* out = nullptr;
  float* exp_sums = nullptr;    // V2 / reduce
  float* max_logits = nullptr;  // V2 / reduce
  void* tmp_out = nullptr;      // V2 / reduce: f32, or the scalar type (partials_in_output_dtype)
  const void* query = nullptr;
  const void* key_cache = nullptr;
  const void* value_cache = nullptr;
  const std::int32_t* block_tables = nullptr;
  const std::int32_t* seq_lens = nullptr;
  const float* alibi_slopes = nullptr;  // null: no ALiBi

  bool grouped = false;       // Options::grouped (launches grouped only with ratio > 1)
  DType scalar = DType::f32;  // query / out
  CacheFormat cache = CacheFormat::same;
  Numerics numerics = Numerics::exact_fp32;
  NumericsChoices choices{};  // effective_choices(options)

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

  Workload workload() const {
    Workload w;
    w.num_seqs = num_seqs;
    w.num_heads = num_heads;
    w.num_kv_heads = num_kv_heads;
    w.head_size = head_size;
    w.block_size = block_size;
    w.max_seq_len = max_seq_len;
    w.partition_size = partition_size;
    w.cache_elem_bytes = cache == CacheFormat::same ? static_cast<int>(dtype_size(scalar)) : 1;
    w.io_elem_bytes = static_cast<int>(dtype_size(scalar));
    return w;
  }
};

}  // namespace pagedattn
