// The host API: validate, check indices, hand the params to the chosen executor.
// Compiled once per library: PAGEDATTN_HAVE_CUDA is 1 in pagedattn_kernels_cuda.
#include "pagedattn/api.h"

#include <vector>
#include "backends.h"
#include "emu/profile.h"

#ifndef PAGEDATTN_HAVE_CUDA
#define PAGEDATTN_HAVE_CUDA 0
#endif

namespace pagedattn {
namespace {

void check_indices_and_run(const AttentionParams& p, const Backend& backend,
                           const Options& options) {
  if (backend.kind == Backend::Kind::cuda && !PAGEDATTN_HAVE_CUDA) {
    throw Error(
        "pagedattn: backend Backend::cuda is not in this build: link pagedattn::kernels_cuda "
        "(built when nvcc is found), or use Backend::emulator");
  }
  if (options.check_indices && p.num_seqs > 0) {
    const bool tables = p.kernel != Kernel::reduce;
    if (backend.kind == Backend::Kind::emulator) {
      validate_indices(p, tables ? p.block_tables : nullptr, p.seq_lens);
    } else {
#if PAGEDATTN_HAVE_CUDA
      const std::size_t table_ints =
          tables ? static_cast<std::size_t>((p.num_seqs - 1) * p.block_table_stride +
                                            p.max_blocks_per_seq)
                 : 0;
      std::vector<std::int32_t> lens(p.num_seqs), table(table_ints);
      detail::cuda_copy_to_host(lens.data(), p.seq_lens, lens.size() * 4, backend.stream);
      if (tables) {
        detail::cuda_copy_to_host(table.data(), p.block_tables, table.size() * 4, backend.stream);
      }
      validate_indices(p, tables ? table.data() : nullptr, lens.data());
#endif
    }
  }
  if (backend.kind == Backend::Kind::emulator) {
    detail::emu_run(p, backend);
  } else {
#if PAGEDATTN_HAVE_CUDA
    detail::cuda_run(p, backend.stream);
#endif
  }
}

}  // namespace

Backend Backend::emulator(const emu::Profile& profile) {
  Backend b = emulator(profile.name);
  b.device_profile = std::make_shared<const emu::Profile>(profile);
  return b;
}

bool has_cuda_backend() {
  return PAGEDATTN_HAVE_CUDA != 0;
}

void paged_attention(Kernel kernel, const AttentionCall& call, const Backend& backend,
                     const Options& options) {
  if (kernel == Kernel::reduce) {
    throw Error(
        "pagedattn: paged_attention takes Kernel::v1 or Kernel::v2; the reduce alone is "
        "paged_attention_reduce");
  }
  check_indices_and_run(validate_attention(kernel, call, options), backend, options);
}

namespace {

// vLLM's positional arguments as the named call: written once for the four vLLM-ordered
// entry points below.
void forward(Kernel kernel, const TensorView& out, const TensorView& exp_sums,
             const TensorView& max_logits, const TensorView& tmp_out, const TensorView& query,
             const TensorView& key_cache, const TensorView& value_cache, std::int64_t num_kv_heads,
             double scale, const TensorView& block_tables, const TensorView& seq_lens,
             std::int64_t block_size, std::int64_t max_seq_len, const TensorView& alibi_slopes,
             const std::string& kv_cache_dtype, double k_scale, double v_scale,
             const BlockSparse& blocksparse, const Backend& backend, const Options& options) {
  AttentionCall c;
  c.out = out;
  c.exp_sums = exp_sums;
  c.max_logits = max_logits;
  c.tmp_out = tmp_out;
  c.query = query;
  c.key_cache = key_cache;
  c.value_cache = value_cache;
  c.num_kv_heads = num_kv_heads;
  c.scale = scale;
  c.block_tables = block_tables;
  c.seq_lens = seq_lens;
  c.block_size = block_size;
  c.max_seq_len = max_seq_len;
  c.alibi_slopes = alibi_slopes;
  c.kv_cache_dtype = kv_cache_dtype;
  c.k_scale = k_scale;
  c.v_scale = v_scale;
  c.blocksparse = blocksparse;
  paged_attention(kernel, c, backend, options);
}

}  // namespace

void paged_attention_v1(const TensorView& out, const TensorView& query, const TensorView& key_cache,
                        const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
                        const TensorView& block_tables, const TensorView& seq_lens,
                        std::int64_t block_size, std::int64_t max_seq_len,
                        const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
                        double k_scale, double v_scale, std::int64_t tp_rank,
                        std::int64_t blocksparse_local_blocks, std::int64_t blocksparse_vert_stride,
                        std::int64_t blocksparse_block_size,
                        std::int64_t blocksparse_head_sliding_step, const Backend& backend,
                        const Options& options) {
  forward(Kernel::v1, out, {}, {}, {}, query, key_cache, value_cache, num_kv_heads, scale,
          block_tables, seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
          v_scale,
          {tp_rank, blocksparse_local_blocks, blocksparse_vert_stride, blocksparse_block_size,
           blocksparse_head_sliding_step},
          backend, options);
}

void paged_attention_v2(
    const TensorView& out, const TensorView& exp_sums, const TensorView& max_logits,
    const TensorView& tmp_out, const TensorView& query, const TensorView& key_cache,
    const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
    const TensorView& block_tables, const TensorView& seq_lens, std::int64_t block_size,
    std::int64_t max_seq_len, const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
    double k_scale, double v_scale, std::int64_t tp_rank, std::int64_t blocksparse_local_blocks,
    std::int64_t blocksparse_vert_stride, std::int64_t blocksparse_block_size,
    std::int64_t blocksparse_head_sliding_step, const Backend& backend, const Options& options) {
  forward(Kernel::v2, out, exp_sums, max_logits, tmp_out, query, key_cache, value_cache,
          num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len, alibi_slopes,
          kv_cache_dtype, k_scale, v_scale,
          {tp_rank, blocksparse_local_blocks, blocksparse_vert_stride, blocksparse_block_size,
           blocksparse_head_sliding_step},
          backend, options);
}

void paged_attention_v1(const TensorView& out, const TensorView& query, const TensorView& key_cache,
                        const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
                        const TensorView& block_tables, const TensorView& seq_lens,
                        std::int64_t block_size, std::int64_t max_seq_len,
                        const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
                        double k_scale, double v_scale, const Backend& backend,
                        const Options& options) {
  forward(Kernel::v1, out, {}, {}, {}, query, key_cache, value_cache, num_kv_heads, scale,
          block_tables, seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
          v_scale, BlockSparse{}, backend, options);
}

void paged_attention_v2(const TensorView& out, const TensorView& exp_sums,
                        const TensorView& max_logits, const TensorView& tmp_out,
                        const TensorView& query, const TensorView& key_cache,
                        const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
                        const TensorView& block_tables, const TensorView& seq_lens,
                        std::int64_t block_size, std::int64_t max_seq_len,
                        const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
                        double k_scale, double v_scale, const Backend& backend,
                        const Options& options) {
  forward(Kernel::v2, out, exp_sums, max_logits, tmp_out, query, key_cache, value_cache,
          num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len, alibi_slopes,
          kv_cache_dtype, k_scale, v_scale, BlockSparse{}, backend, options);
}

void paged_attention_reduce(const TensorView& out, const TensorView& exp_sums,
                            const TensorView& max_logits, const TensorView& tmp_out,
                            const TensorView& seq_lens, std::int64_t max_seq_len,
                            const Backend& backend, const Options& options) {
  const AttentionParams p =
      validate_reduce(out, exp_sums, max_logits, tmp_out, seq_lens, max_seq_len, options);
  check_indices_and_run(p, backend, options);
}

}  // namespace pagedattn
