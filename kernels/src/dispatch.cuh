// Runtime (dtype, cache format, head size, block size) -> one template instantiation, for
// exactly the head and block sizes of supported.h.
// Instantiations are split per (scalar type, warp width) over small files so the build
// parallelizes and stays incremental (instantiate.inc).
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include "attention_kernel.cuh"
#include "grouped_attention_kernel.cuh"
#include "dispatch.h"
#include "kernel_args.h"
#include "pagedattn/supported.h"
#include "platform.cuh"
#include "reduce_kernel.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

namespace dispatch {

template <class K>
LaunchResult launch_with_smem(K kernel, const AttnArgs& args, dim3 grid, std::size_t smem,
                              const Device& dev) {
  cudaError_t e = allow_dynamic_smem(kernel, smem, dev);
  if (e != cudaSuccess) return {e, LaunchStage::opt_in};
  return {launch_kernel(kernel, grid, dim3(kThreadsPerBlock), smem, dev, args),
          LaunchStage::launch};
}

// The instantiation for (HS, B), or an error for a pair validation refuses (fp8 with a
// head size its 16-element key chunks cannot tile: none is instantiated).
template <bool GROUPED, class scalar_t, class cache_t, int WARP, int HS, int B>
LaunchResult one(const AttnArgs& a, dim3 g, std::size_t smem, const Device& dev) {
  if constexpr (HS % (16 / sizeof(cache_t)) == 0) {
    if constexpr (GROUPED)
      return launch_with_smem(&grouped_attention_kernel<scalar_t, cache_t, HS, B, WARP>, a, g, smem,
                              dev);
    else
      return launch_with_smem(&attention_kernel<scalar_t, cache_t, HS, B, WARP>, a, g, smem, dev);
  } else {
    return {cudaErrorInvalidValue, LaunchStage::launch};
  }
}

template <bool GROUPED, class scalar_t, class cache_t, int WARP, int HS, int... B>
LaunchResult by_block(IntList<B...>, const AttnArgs& a, int block_size, dim3 g, std::size_t smem,
                      const Device& dev) {
  LaunchResult r{cudaErrorInvalidValue, LaunchStage::launch};
  (void)((block_size == B &&
          (r = one<GROUPED, scalar_t, cache_t, WARP, HS, B>(a, g, smem, dev), true)) ||
         ...);
  return r;
}

// Every (head size, block size) of supported.h's lists (the grouped lists for GROUPED),
// and nothing else.
template <bool GROUPED, class scalar_t, class cache_t, int WARP, int... HS>
LaunchResult by_head(IntList<HS...>, const AttnArgs& a, int head_size, int block_size, dim3 g,
                     std::size_t smem, const Device& dev) {
  LaunchResult r{cudaErrorInvalidValue, LaunchStage::launch};
  using Blocks = std::conditional_t<GROUPED, GroupedBlockSizeList, BlockSizeList>;
  (void)((head_size == HS && (r = by_block<GROUPED, scalar_t, cache_t, WARP, HS>(
                                  Blocks{}, a, block_size, g, smem, dev),
                              true)) ||
         ...);
  return r;
}

}  // namespace dispatch

template <class scalar_t, int WARP, bool GROUPED>
LaunchResult launch_attention(const AttnArgs& args, int head_size, int block_size, bool fp8_cache,
                              dim3 grid, std::size_t smem_bytes, const Device& dev) {
  using Heads = std::conditional_t<GROUPED, GroupedHeadSizeList, HeadSizeList>;
  return fp8_cache ? dispatch::by_head<GROUPED, scalar_t, std::uint8_t, WARP>(
                         Heads{}, args, head_size, block_size, grid, smem_bytes, dev)
                   : dispatch::by_head<GROUPED, scalar_t, scalar_t, WARP>(
                         Heads{}, args, head_size, block_size, grid, smem_bytes, dev);
}

template <class scalar_t, int WARP>
LaunchResult launch_reduce(const ReduceArgs& args, dim3 grid, std::size_t smem_bytes,
                           const Device& dev) {
  auto kernel = &reduce_kernel<scalar_t, WARP>;
  cudaError_t e = allow_dynamic_smem(kernel, smem_bytes, dev);
  if (e != cudaSuccess) return {e, LaunchStage::opt_in};
  return {launch_kernel(kernel, grid, dim3(kThreadsPerBlock), smem_bytes, dev, args),
          LaunchStage::launch};
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
