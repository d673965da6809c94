// One kernel source, two compilers: nvcc sees CUDA's headers; g++ sees the emulator's,
// which serve the same names. Everything target-specific the kernels need is here.
#pragma once
#include <cstddef>

#if defined(__CUDACC__)
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
#else
#include <emu/cuda_runtime.h>
#include <emu/cuda_fp16.h>
#include <emu/cuda_bf16.h>
#define PAGEDATTN_EXEC_NS emu_exec
#define PAGEDATTN_EMULATED 1  // both warp widths are built: the profile picks one
#endif

namespace emu {
struct Profile;
}

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

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
#if defined(__CUDACC__)
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
#if defined(__CUDACC__)
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
