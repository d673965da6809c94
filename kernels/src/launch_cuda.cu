// The CUDA executor (nvcc only): launches on the caller's stream.
#include <string>
#include "backends.h"
#include "runner.cuh"

namespace pagedattn::detail {
namespace {
std::string cuda_detail(cudaError_t e) {
  return std::string("CUDA: ") + cudaGetErrorString(e);
}
}  // namespace

void cuda_run(const AttentionParams& p, void* stream) {
  int device = 0;
  int optin = 48 * 1024;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
          cudaSuccess) {
    throw LaunchError(std::string("pagedattn: no usable CUDA device: ") +
                      cudaGetErrorString(cudaGetLastError()));
  }
  cuda_exec::Target t;
  t.warp_size = PAGEDATTN_TARGET_WARP;
  t.device.stream = stream;
  t.smem_optin = optin;
  t.detail = &cuda_detail;
  cuda_exec::run(p, t);
}

void cuda_copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    throw LaunchError(std::string("pagedattn: copying block_tables/seq_lens to the host for "
                                  "validation failed: ") +
                      cudaGetErrorString(e));
  }
}

}  // namespace pagedattn::detail
