// The CUDA runtime API subset over the emulator. Device memory is guarded host memory;
// every call is synchronous, so streams only order what is already ordered.
#include "emu/runtime_api.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "emu/launch.h"
#include "emu/profile.h"
#include "elf_symbols.h"
#include "internal.h"
#include "tls.h"

namespace emu::detail {

namespace {
std::mutex g_sync_mutex;
cudaError_t g_pending_sync = cudaSuccess;
}  // namespace

cudaError_t set_error(cudaError_t code, std::string message) {
  auto& c = cold_tls();
  if (!c.last_message) c.last_message = new std::string();
  c.last_error = code;
  *c.last_message = std::move(message);
  return code;
}

void set_pending_sync_error(cudaError_t code) {
  std::lock_guard<std::mutex> lock(g_sync_mutex);
  g_pending_sync = code;
}

}  // namespace emu::detail

using emu::detail::set_error;

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (!ptr) return set_error(cudaErrorInvalidValue, "cudaMalloc: ptr is null");
  *ptr = emu::detail::guarded_alloc(bytes);
  if (!*ptr) {
    std::ostringstream o;
    o << "cudaMalloc: out of memory allocating " << bytes << " bytes";
    return set_error(cudaErrorMemoryAllocation, o.str());
  }
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  if (!emu::detail::guarded_free(ptr))
    return set_error(cudaErrorInvalidDevicePointer,
                     "cudaFree: pointer was not returned by cudaMalloc (or is freed already)");
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return set_error(cudaErrorInvalidMemcpyDirection, "cudaMemcpy: kind must be 0..4");
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src) return set_error(cudaErrorInvalidValue, "cudaMemcpy: null pointer");
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if ((dst_dev && !emu::detail::is_device_range(dst, bytes)) ||
      (src_dev && !emu::detail::is_device_range(src, bytes))) {
    std::ostringstream o;
    o << "cudaMemcpy: the "
      << (dst_dev && !emu::detail::is_device_range(dst, bytes) ? "destination" : "source")
      << " range of " << bytes << " bytes is not inside one cudaMalloc allocation";
    return set_error(cudaErrorInvalidValue, o.str());
  }
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!emu::detail::is_device_range(ptr, bytes))
    return set_error(cudaErrorInvalidValue,
                     "cudaMemset: the range is not inside one cudaMalloc allocation");
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t) {
  return cudaMemset(ptr, value, bytes);
}

cudaError_t cudaDeviceSynchronize() {
  std::lock_guard<std::mutex> lock(emu::detail::g_sync_mutex);
  cudaError_t e = emu::detail::g_pending_sync;
  emu::detail::g_pending_sync = cudaSuccess;
  return e;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaDeviceSynchronize();
}

cudaError_t cudaGetLastError() {
  auto& c = emu::detail::cold_tls();
  cudaError_t e = c.last_error;
  c.last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() {
  return emu::detail::cold_tls().last_error;
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError:
      return "cudaErrorInitializationError";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorLaunchOutOfResources:
      return "cudaErrorLaunchOutOfResources";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidDeviceFunction:
      return "cudaErrorInvalidDeviceFunction";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorAssert:
      return "cudaErrorAssert";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  auto& c = emu::detail::cold_tls();
  if (e != cudaSuccess && c.last_message && !c.last_message->empty() && e == c.last_error)
    return c.last_message->c_str();
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer:
      return "invalid device pointer";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    default:
      return cudaGetErrorName(e);
  }
}

namespace emu {
std::string last_error_message() {
  auto& c = detail::cold_tls();
  return c.last_message ? *c.last_message : std::string();
}
}  // namespace emu

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return set_error(cudaErrorInvalidValue, "cudaGetDeviceCount: count is null");
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (!device) return set_error(cudaErrorInvalidValue, "cudaGetDevice: device is null");
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device != 0)
    return set_error(cudaErrorInvalidValue, "cudaSetDevice: the emulator has one device, 0");
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop || device != 0)
    return set_error(cudaErrorInvalidValue, "cudaGetDeviceProperties: prop null or device != 0");
  const emu::Profile& p = emu::current_profile();
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "emulated %s", p.name.c_str());
  prop->totalGlobalMem = static_cast<size_t>(p.total_global_memory);
  prop->sharedMemPerBlock = static_cast<size_t>(p.shared_memory_per_block);
  prop->sharedMemPerBlockOptin = static_cast<size_t>(p.shared_memory_per_block_optin);
  prop->sharedMemPerMultiprocessor = static_cast<size_t>(p.shared_memory_per_multiprocessor);
  prop->regsPerBlock = p.registers_per_block;
  prop->warpSize = p.warp_size;
  prop->maxThreadsPerBlock = p.max_threads_per_block;
  for (int i = 0; i < 3; ++i) {
    prop->maxThreadsDim[i] = p.max_block_dim[i];
    prop->maxGridSize[i] = static_cast<int>(std::min<long long>(p.max_grid_dim[i], 2147483647LL));
  }
  prop->clockRate = static_cast<int>(p.clock_mhz * 1000);
  prop->major = p.compute_capability_major;
  prop->minor = p.compute_capability_minor;
  prop->multiProcessorCount = p.multiprocessor_count;
  prop->l2CacheSize = static_cast<int>(p.l2_cache_bytes);
  prop->maxThreadsPerMultiProcessor = p.max_threads_per_multiprocessor;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (!func) return set_error(cudaErrorInvalidDeviceFunction, "cudaFuncSetAttribute: func is null");
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize)
    return set_error(
        cudaErrorInvalidValue,
        "cudaFuncSetAttribute: attr must be cudaFuncAttributeMaxDynamicSharedMemorySize "
        "or cudaFuncAttributePreferredSharedMemoryCarveout");
  return emu::set_max_dynamic_shared_memory(emu::current_profile(), func, value);
}
