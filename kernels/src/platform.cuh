// One kernel source, three compilers: nvcc (and clang's CUDA front end, and CoreX's clang)
// see CUDA's headers; hipcc sees HIP's, mapped below to the CUDA names the kernels use; g++
// sees the emulator's, which serve the same names. Everything target-specific the kernels
// need is here.
//
// Warp width: a template parameter of every kernel (WARP), never the target's. A target's
// own width is PAGEDATTN_TARGET_WARP, which only the per-type instantiation files
// (cuda_*.cu) pass as WARP. Lane masks: the kernels pass PAGEDATTN_FULL_MASK, "every lane
// of the warp" (warp_reduce.cuh's contract: all lanes take part):
//   NVIDIA (nvcc, clang): 0xffffffff, the parameter is 32-bit;
//   CoreX (__ILUVATAR__, warp 64): 0xffffffff as well, measured to name all 64 lanes on
//     BI-V100 (the emulator models that: emu/sync.h);
//   HIP (wave 64 or 32): ~0ull, 64-bit as HIP's own masks and ballots are; a 32-bit
//     0xffffffff would name only lanes 0-31 of a 64-wide wave (HIP 6.2+ refuses it).
#pragma once
#include <cstddef>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>  // ROCm >= 5.7: __hip_bfloat16 with CUDA's conversion names
using __nv_bfloat16 = __hip_bfloat16;
#else
#include <hip/hip_bfloat16.h>  // ROCm 5.2 (Debian 12): hip_bfloat16, round to nearest even
using __nv_bfloat16 = hip_bfloat16;
__host__ __device__ inline float __bfloat162float(hip_bfloat16 v) {
  return static_cast<float>(v);
}
__host__ __device__ inline hip_bfloat16 __float2bfloat16(float v) {
  return hip_bfloat16(v);  // round to nearest even, NaN kept NaN (hip_bfloat16.h)
}
#endif
// The CUDA runtime names the launch code uses.
using cudaError_t = hipError_t;
using cudaStream_t = hipStream_t;
constexpr hipError_t cudaSuccess = hipSuccess;
constexpr hipError_t cudaErrorInvalidValue = hipErrorInvalidValue;
inline hipError_t cudaGetLastError() {
  return hipGetLastError();
}
#if HIP_VERSION < 60200000
// HIP before 6.2 has no *_sync collectives: its shuffles and ballots are wave-wide. The
// kernels call them with every lane active (warp_reduce.cuh), which is what the mask
// says, so dropping it changes nothing. As HIP 6.2's own, they take only a 64-bit mask,
// so a 32-bit one (lanes 0-31 of a 64-wide wave) fails to compile here too.
template <class M, class T>
__device__ inline T __shfl_xor_sync(M, T v, int lane_mask, int width = warpSize) {
  static_assert(sizeof(M) == 8, "HIP lane masks are 64-bit: pass PAGEDATTN_FULL_MASK");
  return __shfl_xor(v, lane_mask, width);
}
template <class M, class T>
__device__ inline T __shfl_sync(M, T v, int src_lane, int width = warpSize) {
  static_assert(sizeof(M) == 8, "HIP lane masks are 64-bit: pass PAGEDATTN_FULL_MASK");
  return __shfl(v, src_lane, width);
}
template <class M>
__device__ inline unsigned long long __ballot_sync(M, int predicate) {
  static_assert(sizeof(M) == 8, "HIP lane masks are 64-bit: pass PAGEDATTN_FULL_MASK");
  return __ballot(predicate);
}
#endif
#define PAGEDATTN_EXEC_NS hip_exec
// The build names its wave width (64: gfx9/CDNA; 32: gfx10/gfx11 by default): hipcc's host
// pass does not know the offload target's, and host stubs and device kernels must
// instantiate the same templates. The device pass checks the target agrees.
#if !defined(PAGEDATTN_HIP_WARP)
#error "hipcc builds define PAGEDATTN_HIP_WARP (32 or 64), the offload target's wave width"
#endif
#if defined(__HIP_DEVICE_COMPILE__) && PAGEDATTN_HIP_WARP != __AMDGCN_WAVEFRONT_SIZE
#error "PAGEDATTN_HIP_WARP differs from the offload target's wave width (__AMDGCN_WAVEFRONT_SIZE)"
#endif
#define PAGEDATTN_TARGET_WARP PAGEDATTN_HIP_WARP
#define PAGEDATTN_FULL_MASK (~0ull)
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Kernel templates get a namespace per executor: an emulated kernel is a host function
// and a CUDA kernel has a host stub, and both would otherwise share one mangled name.
#define PAGEDATTN_EXEC_NS cuda_exec
#if defined(__ILUVATAR__)
#define PAGEDATTN_TARGET_WARP 64  // CoreX clang for BI-V100
#else
#define PAGEDATTN_TARGET_WARP 32
#endif
#define PAGEDATTN_FULL_MASK 0xffffffffu
#else
#include <emu/cuda_runtime.h>
#include <emu/cuda_fp16.h>
#include <emu/cuda_bf16.h>
#define PAGEDATTN_EXEC_NS emu_exec
#define PAGEDATTN_EMULATED 1  // both warp widths are built: the profile picks one
// 64-bit, as the emulator's collectives take; it names every lane at either width.
#define PAGEDATTN_FULL_MASK (~0ull)
#endif

namespace emu {
struct Profile;
}

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

// Register-class hints for hipcc on wave-64 targets; the identity for nvcc, clang's CUDA,
// the emulator and wave-32 AMD targets, so they change no arithmetic anywhere. AMD GPUs
// hold a wave-uniform value in a scalar register (102 per wave on gfx90a), and the grouped
// kernel's G heads overran them: hipcc hoisted each head's loop-invariant addresses and
// flags out of the KV loops and spilled the excess into VGPR lanes. On the wave-32 target
// the same hints made things worse, so they stay off there (kernels/README.md,
// "Registers", has both measurements).
#if defined(__HIP_DEVICE_COMPILE__) && __AMDGCN_WAVEFRONT_SIZE == 64
#define PAGEDATTN_REGISTER_HINTS 1
#endif
//
// uniform_at_use(x): an opaque copy of a block-uniform x, read where it is used; what is
// derived from it is recomputed there (one scalar instruction) instead of held across the
// loop. x must be uniform and the call inlined into the kernel: a value in a vector
// register fails the compile ("illegal SGPR to VGPR copy"), it is never miscompiled.
template <class T>
__device__ __forceinline__ T uniform_at_use(T x) {
#if defined(PAGEDATTN_REGISTER_HINTS)
  asm volatile("" : "+s"(x));
#endif
  return x;
}
// per_lane(x): x held in a vector register, each lane its own copy, leaving the scalar
// registers to the values the hot loops use.
template <class T>
__device__ __forceinline__ T per_lane(T x) {
#if defined(PAGEDATTN_REGISTER_HINTS)
  asm volatile("" : "+v"(x));
#endif
  return x;
}

// Where a launch runs, passed with every launch: CUDA's stream, or the emulator's device
// profile (per call: the emulator's current profile is neither read nor changed, so
// threads may launch under different profiles at once; null means the current one).
struct Device {
  void* stream = nullptr;                 // CUDA: a cudaStream_t
  const emu::Profile* profile = nullptr;  // emulator
};

// kernel<<<grid, block, smem, stream>>>(args...) on either executor; returns the launch's
// error (the emulator also runs the kernel to completion before returning).
template <class... P, class... A>
inline cudaError_t launch_kernel(void (*kernel)(P...), dim3 grid, dim3 block,
                                 std::size_t smem_bytes, const Device& device, const A&... args) {
#if defined(__CUDACC__) || defined(__HIPCC__)
  kernel<<<grid, block, smem_bytes, static_cast<cudaStream_t>(device.stream)>>>(args...);
  return cudaGetLastError();
#else
  return device.profile ? emu::launch(*device.profile, kernel, grid, block, smem_bytes, args...)
                        : emu::launch(kernel, grid, block, smem_bytes, args...);
#endif
}

// CUDA refuses more than 48 KB of dynamic shared memory unless the kernel opts in; the
// opt-in itself fails above the device's per-block limit.
template <class... P>
inline cudaError_t allow_dynamic_smem(void (*kernel)(P...), std::size_t smem_bytes,
                                      const Device& device) {
  if (smem_bytes <= 48 * 1024) return cudaSuccess;
  // Clamped, not wrapped: a request past INT_MAX must still be refused.
  const int bytes = smem_bytes > 0x7fffffff ? 0x7fffffff : static_cast<int>(smem_bytes);
#if defined(__HIPCC__)
  (void)device;
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                             hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
#elif defined(__CUDACC__)
  (void)device;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
#else
  if (!device.profile)
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return emu::set_max_dynamic_shared_memory(*device.profile, reinterpret_cast<const void*>(kernel),
                                            bytes);
#endif
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
