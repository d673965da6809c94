// What the CPU (emulator) and CUDA registrations share: at::Tensor -> TensorView, the
// one-device rule, pagedattn errors as Python errors, and the calls themselves with the
// Backend left open. Defined in torch_ops.cpp.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <memory>
#include <string>

#include "pagedattn/api.h"
#include "pagedattn/version_select.h"

namespace pagedattn_torch {

// The arguments of vLLM's paged_attention_v1/_v2 after the scales are doubles.
// exp_sums, max_logits, tmp_out are undefined for V1.
struct AttentionArgs {
  at::Tensor out, exp_sums, max_logits, tmp_out, query, key_cache, value_cache;
  std::int64_t num_kv_heads = 0;
  double scale = 1;
  at::Tensor block_tables, seq_lens;
  std::int64_t block_size = 0, max_seq_len = 0;
  c10::optional<at::Tensor> alibi_slopes;
  std::string kv_cache_dtype;
  double k_scale = 1, v_scale = 1;
  std::int64_t tp_rank = 0, blocksparse_local_blocks = 0, blocksparse_vert_stride = 0,
               blocksparse_block_size = 64, blocksparse_head_sliding_step = 0;
};

// Runs V1 (args.exp_sums undefined) or V2 on `backend`. Every tensor must be on
// `device`; a pagedattn::Error becomes a ValueError naming the argument.
void run_attention(const AttentionArgs& args, const pagedattn::Backend& backend,
                   const c10::Device& device);

void run_reduce(const at::Tensor& out, const at::Tensor& exp_sums, const at::Tensor& max_logits,
                const at::Tensor& tmp_out, const at::Tensor& seq_lens, std::int64_t max_seq_len,
                std::int64_t partition_size, const pagedattn::Backend& backend,
                const c10::Device& device);

}  // namespace pagedattn_torch

namespace pagedattn_torch {

// CUDA builds (torch_ops_cuda.cpp): the GPU's facts for "cuda[:N]"; whether the CUDA
// dispatch key is registered. Elsewhere: an error naming the device, and false.
pagedattn::DeviceFacts cuda_device_facts(const std::string& device);
bool cuda_registered();
// Makes `device` current while the returned guard lives (CUDA builds; else nothing).
std::shared_ptr<void> enter_device(const c10::Device& device);

// One-element float32 tensor (vLLM's newer k_scale / v_scale) -> double.
double scale_value(const at::Tensor& t, const char* name);

// The operator bodies, one per schema, for a backend chosen from `out` (the
// registration's dispatch key decides which MakeBackend is used).
using MakeBackend = pagedattn::Backend (*)(const at::Tensor& out);

template <MakeBackend make>
void v1_float(at::Tensor& out, const at::Tensor& query, const at::Tensor& key_cache,
              const at::Tensor& value_cache, std::int64_t num_kv_heads, double scale,
              const at::Tensor& block_tables, const at::Tensor& seq_lens, std::int64_t block_size,
              std::int64_t max_seq_len, const c10::optional<at::Tensor>& alibi_slopes,
              c10::string_view kv_cache_dtype, double k_scale, double v_scale, std::int64_t tp_rank,
              std::int64_t bs_local_blocks, std::int64_t bs_vert_stride, std::int64_t bs_block_size,
              std::int64_t bs_head_sliding_step) {
  AttentionArgs a{out,
                  {},
                  {},
                  {},
                  query,
                  key_cache,
                  value_cache,
                  num_kv_heads,
                  scale,
                  block_tables,
                  seq_lens,
                  block_size,
                  max_seq_len,
                  alibi_slopes,
                  std::string(kv_cache_dtype),
                  k_scale,
                  v_scale,
                  tp_rank,
                  bs_local_blocks,
                  bs_vert_stride,
                  bs_block_size,
                  bs_head_sliding_step};
  run_attention(a, make(out), out.device());
}

template <MakeBackend make>
void v1_tensor(at::Tensor& out, const at::Tensor& query, const at::Tensor& key_cache,
               const at::Tensor& value_cache, std::int64_t num_kv_heads, double scale,
               const at::Tensor& block_tables, const at::Tensor& seq_lens, std::int64_t block_size,
               std::int64_t max_seq_len, const c10::optional<at::Tensor>& alibi_slopes,
               c10::string_view kv_cache_dtype, const at::Tensor& k_scale,
               const at::Tensor& v_scale, std::int64_t tp_rank, std::int64_t bs_local_blocks,
               std::int64_t bs_vert_stride, std::int64_t bs_block_size,
               std::int64_t bs_head_sliding_step) {
  v1_float<make>(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables, seq_lens,
                 block_size, max_seq_len, alibi_slopes, kv_cache_dtype,
                 scale_value(k_scale, "k_scale"), scale_value(v_scale, "v_scale"), tp_rank,
                 bs_local_blocks, bs_vert_stride, bs_block_size, bs_head_sliding_step);
}

template <MakeBackend make>
void v2_float(at::Tensor& out, at::Tensor& exp_sums, at::Tensor& max_logits, at::Tensor& tmp_out,
              const at::Tensor& query, const at::Tensor& key_cache, const at::Tensor& value_cache,
              std::int64_t num_kv_heads, double scale, const at::Tensor& block_tables,
              const at::Tensor& seq_lens, std::int64_t block_size, std::int64_t max_seq_len,
              const c10::optional<at::Tensor>& alibi_slopes, c10::string_view kv_cache_dtype,
              double k_scale, double v_scale, std::int64_t tp_rank, std::int64_t bs_local_blocks,
              std::int64_t bs_vert_stride, std::int64_t bs_block_size,
              std::int64_t bs_head_sliding_step) {
  AttentionArgs a{out,
                  exp_sums,
                  max_logits,
                  tmp_out,
                  query,
                  key_cache,
                  value_cache,
                  num_kv_heads,
                  scale,
                  block_tables,
                  seq_lens,
                  block_size,
                  max_seq_len,
                  alibi_slopes,
                  std::string(kv_cache_dtype),
                  k_scale,
                  v_scale,
                  tp_rank,
                  bs_local_blocks,
                  bs_vert_stride,
                  bs_block_size,
                  bs_head_sliding_step};
  run_attention(a, make(out), out.device());
}

template <MakeBackend make>
void v2_tensor(at::Tensor& out, at::Tensor& exp_sums, at::Tensor& max_logits, at::Tensor& tmp_out,
               const at::Tensor& query, const at::Tensor& key_cache, const at::Tensor& value_cache,
               std::int64_t num_kv_heads, double scale, const at::Tensor& block_tables,
               const at::Tensor& seq_lens, std::int64_t block_size, std::int64_t max_seq_len,
               const c10::optional<at::Tensor>& alibi_slopes, c10::string_view kv_cache_dtype,
               const at::Tensor& k_scale, const at::Tensor& v_scale, std::int64_t tp_rank,
               std::int64_t bs_local_blocks, std::int64_t bs_vert_stride,
               std::int64_t bs_block_size, std::int64_t bs_head_sliding_step) {
  v2_float<make>(out, exp_sums, max_logits, tmp_out, query, key_cache, value_cache, num_kv_heads,
                 scale, block_tables, seq_lens, block_size, max_seq_len, alibi_slopes,
                 kv_cache_dtype, scale_value(k_scale, "k_scale"), scale_value(v_scale, "v_scale"),
                 tp_rank, bs_local_blocks, bs_vert_stride, bs_block_size, bs_head_sliding_step);
}

template <MakeBackend make>
void reduce(at::Tensor& out, const at::Tensor& exp_sums, const at::Tensor& max_logits,
            const at::Tensor& tmp_out, const at::Tensor& seq_lens, std::int64_t max_seq_len,
            std::int64_t partition_size) {
  run_reduce(out, exp_sums, max_logits, tmp_out, seq_lens, max_seq_len, partition_size, make(out),
             out.device());
}

// Registers the five operator bodies for one dispatch key.
#define PAGEDATTN_TORCH_IMPLS(m, make)                                                 \
  do {                                                                                 \
    (m).impl("paged_attention_v1", &::pagedattn_torch::v1_float<make>);                \
    (m).impl("paged_attention_v1.tensor_scales", &::pagedattn_torch::v1_tensor<make>); \
    (m).impl("paged_attention_v2", &::pagedattn_torch::v2_float<make>);                \
    (m).impl("paged_attention_v2.tensor_scales", &::pagedattn_torch::v2_tensor<make>); \
    (m).impl("paged_attention_reduce", &::pagedattn_torch::reduce<make>);              \
  } while (0)

}  // namespace pagedattn_torch
