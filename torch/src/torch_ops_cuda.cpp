// The CUDA dispatch key: the same operator bodies on the CUDA kernels, on torch's
// current stream of out's device. Built only with a CUDA-enabled torch and nvcc
// (torch/CMakeLists.txt); Debian's torch is CPU-only, so this file is not compiled there.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <memory>
#include <string>

#include "torch_bridge.h"

namespace pagedattn_torch {
namespace {

pagedattn::Backend cuda_backend(const at::Tensor& out) {
  return pagedattn::Backend::cuda(at::cuda::getCurrentCUDAStream(out.device().index()).stream());
}

}  // namespace

std::shared_ptr<void> enter_device(const c10::Device& device) {
  if (!device.is_cuda()) return nullptr;
  return std::make_shared<c10::cuda::CUDAGuard>(device);
}

pagedattn::DeviceFacts cuda_device_facts(const std::string& device) {
  const c10::Device d(device);  // "cuda" or "cuda:N"; throws naming a malformed string
  const int index = d.has_index() ? d.index() : static_cast<int>(c10::cuda::current_device());
  cudaDeviceProp prop{};
  const cudaError_t e = cudaGetDeviceProperties(&prop, index);
  TORCH_CHECK_VALUE(e == cudaSuccess, "pagedattn: device \"", device,
                    "\": cudaGetDeviceProperties failed: ", cudaGetErrorString(e));
  return {prop.name, prop.warpSize, prop.multiProcessorCount,
          static_cast<std::int64_t>(prop.sharedMemPerBlockOptin)};
}

bool cuda_registered() {
  return true;
}

}  // namespace pagedattn_torch

TORCH_LIBRARY_IMPL(pagedattn, CUDA, m) {
  PAGEDATTN_TORCH_IMPLS(m, pagedattn_torch::cuda_backend);
}
