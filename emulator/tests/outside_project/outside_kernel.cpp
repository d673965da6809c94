// An outside CUDA file: only the include and the launch expression differ from nvcc's.
#include <emu/cuda_runtime.h>

#include <cstdio>

__global__ void warp_sum(const int* in, int* out) {
  int v = in[threadIdx.x];
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffff, v, offset);
  if (threadIdx.x % warpSize == 0) out[threadIdx.x / warpSize] = v;
}

__global__ void big_shared(int* out) {
  extern __shared__ int shmem[];
  shmem[threadIdx.x * 1000] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = shmem[(blockDim.x - 1 - threadIdx.x) * 1000];
}

static int check_profile(const char* name, int want_warp) {
  emu::use_profile(name);
  int h[128], *in, *out;
  for (int i = 0; i < 128; ++i) h[i] = 1;
  cudaMalloc(&in, sizeof h);
  cudaMalloc(&out, sizeof h);
  cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
  if (emu::launch(warp_sum, dim3(1), dim3(128), 0, in, out) != cudaSuccess) return 1;
  cudaMemcpy(h, out, sizeof(int) * (128 / want_warp), cudaMemcpyDeviceToHost);
  std::printf("%s: warp sums", name);
  for (int w = 0; w < 128 / want_warp; ++w) std::printf(" %d", h[w]);
  std::printf("\n");
  for (int w = 0; w < 128 / want_warp; ++w)
    if (h[w] != want_warp) return 1;
  cudaFree(in);
  cudaFree(out);
  return 0;
}

int main() {
  if (check_profile("bi-v100", 64) || check_profile("h200", 32)) return 1;
  int* out;
  cudaMalloc(&out, 64 * sizeof(int));
  const size_t bytes = 200 * 1024;
  emu::use_profile("bi-v100");
  cudaError_t e = emu::launch(big_shared, dim3(1), dim3(51), bytes, out);
  std::printf("bi-v100, 200 KB: %s\n", cudaGetErrorString(e));
  if (e == cudaSuccess) return 1;
  emu::use_profile("h200");
  cudaFuncSetAttribute(big_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(bytes));
  e = emu::launch(big_shared, dim3(1), dim3(51), bytes, out);
  std::printf("h200, 200 KB after cudaFuncSetAttribute: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
