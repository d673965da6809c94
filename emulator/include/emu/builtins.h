// CUDA's built-in variables. They are per fiber: threadIdx and friends are macros that
// read the running fiber's context. warpSize is an object converting to int (not a
// macro, so cudaDeviceProp::warpSize still compiles); its value comes from the profile.
#pragma once
#include "emu/thread_context.h"

#define threadIdx (::emu::detail::this_thread().thread_idx)
#define blockIdx (::emu::detail::this_block().block_idx)
#define blockDim (::emu::detail::this_block().block_dim)
#define gridDim (::emu::detail::this_block().grid_dim)

namespace emu::detail {
struct WarpSizeBuiltin {
  operator int() const { return this_block().warp_size; }
};
}  // namespace emu::detail
inline constexpr ::emu::detail::WarpSizeBuiltin warpSize{};
