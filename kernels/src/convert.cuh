// Element conversions inside kernels: scalar types through CUDA's intrinsics, fp8 cache
// bytes through the exact decoders of pagedattn/dtypes.h.
#pragma once
#include <cstdint>
#include "pagedattn/dtypes.h"
#include "platform.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

template <class T>
struct ScalarOps;

template <>
struct ScalarOps<float> {
  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
};

template <>
struct ScalarOps<__half> {
  static __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
};

template <>
struct ScalarOps<__nv_bfloat16> {
  static __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float v) {
    return __float2bfloat16(v);  // round to nearest even
  }
};

// The kernels' exp (CUDA's fast intrinsic; the emulator's exp model), as a policy for
// the merge algebra of lse_state.h.
struct FastExp {
  __device__ __forceinline__ float operator()(float x) const { return __expf(x); }
};

// Rounds a float to the scalar type and back (round_probabilities rounds probabilities so).
template <class T>
__device__ __forceinline__ float round_to(float v) {
  return ScalarOps<T>::to_float(ScalarOps<T>::from_float(v));
}

// A cache element as float, before k_scale / v_scale: the scalar type itself, or an fp8
// byte whose format (E4M3 or E5M2) is a runtime flag so one instantiation serves both.
template <class scalar_t, class cache_t>
struct CacheOps {
  static constexpr bool kFp8 = false;
  static __device__ __forceinline__ float load(cache_t v, bool) {
    return ScalarOps<scalar_t>::to_float(v);
  }
};

template <class scalar_t>
struct CacheOps<scalar_t, std::uint8_t> {
  static constexpr bool kFp8 = true;
  static __device__ __forceinline__ float load(std::uint8_t v, bool e5m2) {
    return e5m2 ? fp8_e5m2_to_float(v) : fp8_e4m3_to_float(v);
  }
};

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
