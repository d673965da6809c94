// Runtime (dtype, cache format, head size, block size) -> one template instantiation.
// Instantiations are split per (scalar type, warp width) over small files so the build
// parallelizes and stays incremental (instantiate.inc).
#pragma once
#include <cstddef>
#include <cstdint>
#include "attention_kernel.cuh"
#include "dispatch.h"
#include "kernel_args.h"
#include "platform.cuh"
#include "reduce_kernel.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

namespace dispatch {

template <class K>
LaunchResult launch_with_smem(K kernel, const AttnArgs& args, dim3 grid, std::size_t smem,
                              void* stream) {
  cudaError_t e = allow_dynamic_smem(kernel, smem);
  if (e != cudaSuccess) return {e, LaunchStage::opt_in};
  return {launch_kernel(kernel, grid, dim3(kThreadsPerBlock), smem, stream, args),
          LaunchStage::launch};
}

template <class scalar_t, class cache_t, int HS, int WARP>
LaunchResult by_block(const AttnArgs& a, int block_size, dim3 g, std::size_t smem, void* st) {
  switch (block_size) {
    case 8:
      return launch_with_smem(&attention_kernel<scalar_t, cache_t, HS, 8, WARP>, a, g, smem, st);
    case 16:
      return launch_with_smem(&attention_kernel<scalar_t, cache_t, HS, 16, WARP>, a, g, smem, st);
    case 32:
      return launch_with_smem(&attention_kernel<scalar_t, cache_t, HS, 32, WARP>, a, g, smem, st);
    default:
      return {cudaErrorInvalidValue, LaunchStage::launch};
  }
}

template <class scalar_t, class cache_t, int WARP>
LaunchResult by_head(const AttnArgs& a, int head_size, int block_size, dim3 g, std::size_t smem,
                     void* st) {
  switch (head_size) {
    case 32:
      return by_block<scalar_t, cache_t, 32, WARP>(a, block_size, g, smem, st);
    case 64:
      return by_block<scalar_t, cache_t, 64, WARP>(a, block_size, g, smem, st);
    case 80:
      return by_block<scalar_t, cache_t, 80, WARP>(a, block_size, g, smem, st);
    case 96:
      return by_block<scalar_t, cache_t, 96, WARP>(a, block_size, g, smem, st);
    case 112:
      return by_block<scalar_t, cache_t, 112, WARP>(a, block_size, g, smem, st);
    case 120:  // fp8 (x = 16) cannot lay out 120 (validation rejects it): no instantiation
      if constexpr (120 % (16 / sizeof(cache_t)) == 0) {
        return by_block<scalar_t, cache_t, 120, WARP>(a, block_size, g, smem, st);
      }
      return {cudaErrorInvalidValue, LaunchStage::launch};
    case 128:
      return by_block<scalar_t, cache_t, 128, WARP>(a, block_size, g, smem, st);
    case 192:
      return by_block<scalar_t, cache_t, 192, WARP>(a, block_size, g, smem, st);
    case 256:
      return by_block<scalar_t, cache_t, 256, WARP>(a, block_size, g, smem, st);
    default:
      return {cudaErrorInvalidValue, LaunchStage::launch};
  }
}

}  // namespace dispatch

template <class scalar_t, int WARP>
LaunchResult launch_attention(const AttnArgs& args, int head_size, int block_size, bool fp8_cache,
                              dim3 grid, std::size_t smem_bytes, void* stream) {
  return fp8_cache ? dispatch::by_head<scalar_t, std::uint8_t, WARP>(args, head_size, block_size,
                                                                     grid, smem_bytes, stream)
                   : dispatch::by_head<scalar_t, scalar_t, WARP>(args, head_size, block_size, grid,
                                                                 smem_bytes, stream);
}

template <class scalar_t, int WARP>
LaunchResult launch_reduce(const ReduceArgs& args, dim3 grid, std::size_t smem_bytes,
                           void* stream) {
  auto kernel = &reduce_kernel<scalar_t, WARP>;
  cudaError_t e = allow_dynamic_smem(kernel, smem_bytes);
  if (e != cudaSuccess) return {e, LaunchStage::opt_in};
  return {launch_kernel(kernel, grid, dim3(kThreadsPerBlock), smem_bytes, stream, args),
          LaunchStage::launch};
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
