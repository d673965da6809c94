// Declarations of the per-(scalar type, warp width) launch entry points, defined in
// dispatch.cuh and instantiated once each by the small per-type files. Host code includes
// only this, so it never instantiates a kernel itself.
#pragma once
#include <cstddef>
#include "kernel_args.h"
#include "platform.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

// Where a launch failed: at the shared-memory opt-in or at the launch itself.
enum class LaunchStage { opt_in, launch };

struct LaunchResult {
  cudaError_t error = cudaSuccess;
  LaunchStage stage = LaunchStage::launch;
};

// GROUPED: grouped_attention_kernel (one block per KV head's group of query heads),
// instantiated in files of its own (instantiate_grouped.inc).
template <class scalar_t, int WARP, bool GROUPED>
LaunchResult launch_attention(const AttnArgs& args, int head_size, int block_size, bool fp8_cache,
                              dim3 grid, std::size_t smem_bytes, const Device& device);

template <class scalar_t, int WARP>
LaunchResult launch_reduce(const ReduceArgs& args, dim3 grid, std::size_t smem_bytes,
                           const Device& device);

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
