// The host API: vLLM's paged_attention_v1 / _v2 with vLLM's argument order, tensors as
// TensorViews, then where to run (Backend) and how (Options). Every entry validates its
// arguments first (pagedattn::Error, nothing written) and throws pagedattn::LaunchError
// when the device refuses the launch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include "pagedattn/attention_call.h"
#include "pagedattn/params.h"
#include "pagedattn/tensor_view.h"
#include "pagedattn/validate.h"

namespace emu {
struct Profile;  // emu/profile.h
}

namespace pagedattn {

// Where a call runs. On the emulator the profile is the call's own (loaded by name, with
// $EMU_PROFILE_SET applied, or given as an object): it is passed to every launch and the
// emulator's current profile is neither read nor changed (except by "", which means the
// current one), so threads may run calls under different profiles at once.
struct Backend {
  enum class Kind { emulator, cuda };
  Kind kind = Kind::emulator;
  std::string profile;     // emulator: device profile ("bi-v100", "h200", ...); "" = current
  void* stream = nullptr;  // cuda: a cudaStream_t
  // emulator: the profile itself, when given as an object (it then wins over `profile`).
  std::shared_ptr<const emu::Profile> device_profile;

  static Backend emulator(std::string profile_name = "") {
    return Backend{Kind::emulator, std::move(profile_name), nullptr, nullptr};
  }
  // A profile object, e.g. a shipped one with a field changed: no file, no environment.
  static Backend emulator(const emu::Profile& profile);
  static Backend cuda(void* cuda_stream = nullptr) {
    return Backend{Kind::cuda, "", cuda_stream, nullptr};
  }
};

// True when this library was built with the CUDA backend (link pagedattn::kernels_cuda).
bool has_cuda_backend();

// The one entry every other form forwards to: V1 (call.exp_sums, max_logits and tmp_out
// undefined) or V2, the arguments by name (attention_call.h).
void paged_attention(Kernel kernel, const AttentionCall& call, const Backend& backend,
                     const Options& options = {});

// out[s, h, :] = softmax(scale * q . K + alibi) V, one partition per (sequence, head).
void paged_attention_v1(const TensorView& out, const TensorView& query, const TensorView& key_cache,
                        const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
                        const TensorView& block_tables, const TensorView& seq_lens,
                        std::int64_t block_size, std::int64_t max_seq_len,
                        const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
                        double k_scale, double v_scale, std::int64_t tp_rank,
                        std::int64_t blocksparse_local_blocks, std::int64_t blocksparse_vert_stride,
                        std::int64_t blocksparse_block_size,
                        std::int64_t blocksparse_head_sliding_step, const Backend& backend,
                        const Options& options = {});

// Partitioned: per partition p, max_logits = m_p, exp_sums = s_p, tmp_out = the
// partition's normalized output (the output dtype when effective_choices(options)
// .partials_in_output_dtype, as under Numerics::vllm_compatible, else f32);
// empty partitions get (-inf, 0, 0). Then the reduce writes out.
void paged_attention_v2(const TensorView& out, const TensorView& exp_sums,
                        const TensorView& max_logits, const TensorView& tmp_out,
                        const TensorView& query, const TensorView& key_cache,
                        const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
                        const TensorView& block_tables, const TensorView& seq_lens,
                        std::int64_t block_size, std::int64_t max_seq_len,
                        const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
                        double k_scale, double v_scale, std::int64_t tp_rank,
                        std::int64_t blocksparse_local_blocks, std::int64_t blocksparse_vert_stride,
                        std::int64_t blocksparse_block_size,
                        std::int64_t blocksparse_head_sliding_step, const Backend& backend,
                        const Options& options = {});

// The same two calls without vLLM's block-sparse tail (tp_rank and blocksparse_*, of
// which only the defaults are supported): for C++ callers.
void paged_attention_v1(const TensorView& out, const TensorView& query, const TensorView& key_cache,
                        const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
                        const TensorView& block_tables, const TensorView& seq_lens,
                        std::int64_t block_size, std::int64_t max_seq_len,
                        const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
                        double k_scale, double v_scale, const Backend& backend,
                        const Options& options = {});
void paged_attention_v2(const TensorView& out, const TensorView& exp_sums,
                        const TensorView& max_logits, const TensorView& tmp_out,
                        const TensorView& query, const TensorView& key_cache,
                        const TensorView& value_cache, std::int64_t num_kv_heads, double scale,
                        const TensorView& block_tables, const TensorView& seq_lens,
                        std::int64_t block_size, std::int64_t max_seq_len,
                        const TensorView& alibi_slopes, const std::string& kv_cache_dtype,
                        double k_scale, double v_scale, const Backend& backend,
                        const Options& options = {});

// V2's reduce alone: merges the partition states (exp_sums, max_logits, tmp_out) of each
// (sequence, head) into out. Streams over partitions: no length cap.
void paged_attention_reduce(const TensorView& out, const TensorView& exp_sums,
                            const TensorView& max_logits, const TensorView& tmp_out,
                            const TensorView& seq_lens, std::int64_t max_seq_len,
                            const Backend& backend, const Options& options = {});

}  // namespace pagedattn
