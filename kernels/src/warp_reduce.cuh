// Butterfly all-reductions over aligned groups of LANES consecutive lanes (LANES a power
// of two <= the warp width). Contract: every lane of the warp calls it (PAGEDATTN_FULL_MASK,
// platform.cuh, names the whole warp at the target's mask width); on
// return every lane of a group holds the group's result, bit-identical across the group
// because + and max are commutative in IEEE arithmetic.
#pragma once
#include "platform.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

template <int LANES>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int offset = LANES / 2; offset >= 1; offset /= 2) {
    v += __shfl_xor_sync(PAGEDATTN_FULL_MASK, v, offset);
  }
  return v;
}

template <int LANES>
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
  for (int offset = LANES / 2; offset >= 1; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(PAGEDATTN_FULL_MASK, v, offset));
  }
  return v;
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
