// Small device helpers both kernels use: the one dynamic shared-memory array, integer min,
// and the finiteness tests and saturation of the rare paths.
#pragma once
#include "platform.cuh"

// The one dynamic shared-memory array every kernel here carves up (resources.h has the
// layout). There are no static __shared__ arrays: the launch size is all they use.
extern __shared__ __align__(16) char smem[];

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

__device__ __forceinline__ int imin(int a, int b) {
  return a < b ? a : b;
}

constexpr float kFltMax = 3.40282347e38f;
__device__ __forceinline__ bool finite(float x) {
  return fabsf(x) <= kFltMax;  // false for inf and NaN
}
__device__ __forceinline__ float saturate(float x) {
  return x > kFltMax ? kFltMax : (x < -kFltMax ? -kFltMax : x);  // NaN stays NaN
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
