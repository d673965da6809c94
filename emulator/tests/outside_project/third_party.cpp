// Third-party CUDA as written for nvcc: CUDA's own header names, `extern __shared__` arrays
// with names no list knows, at namespace scope and inside kernels in nested namespaces.
// Only the launch differs (emu::launch for <<<>>>). Built against the installed package
// (pagedattn::cuda_emulated) and in-tree; exits non-zero on any wrong result.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdio>

extern __shared__ float namespace_scope_dyn[];

namespace vllm {
namespace detail {

// vLLM's spelling: a char pool carved into typed arrays.
template <int NUM_THREADS>
__global__ void block_sum(const __half* in, float* out) {
  extern __shared__ char shared_mem[];
  float* red = reinterpret_cast<float*>(shared_mem);
  red[threadIdx.x] = __half2float(in[blockIdx.x * NUM_THREADS + threadIdx.x]);
  __syncthreads();
  for (int s = NUM_THREADS / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = red[0];
}

}  // namespace detail

// Two differently typed names are one array, as in CUDA: both start the block's dynamic
// shared memory.
__global__ void aliases(int* out) {
  extern __shared__ __nv_bfloat16 logits_bf16[];
  extern __shared__ unsigned int raw_words[];
  out[threadIdx.x] = static_cast<void*>(logits_bf16) == static_cast<void*>(raw_words) &&
                     static_cast<void*>(raw_words) == static_cast<void*>(namespace_scope_dyn);
}

}  // namespace vllm

namespace {
__global__ void reverse_fp8(const float* in, float* out) {
  namespace_scope_dyn[threadIdx.x] = float(__nv_fp8_e4m3(in[threadIdx.x]));
  __syncthreads();
  out[threadIdx.x] = namespace_scope_dyn[blockDim.x - 1 - threadIdx.x];
}
}  // namespace

int main() {
  int failures = 0;
  constexpr int kThreads = 128, kBlocks = 3;
  __half h_in[kThreads * kBlocks];
  for (int i = 0; i < kThreads * kBlocks; ++i) h_in[i] = __float2half(static_cast<float>(i % 7));
  __half* d_in;
  float* d_sum;
  cudaMalloc(&d_in, sizeof h_in);
  cudaMalloc(&d_sum, kBlocks * sizeof(float));
  cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
  cudaError_t e = emu::launch(vllm::detail::block_sum<kThreads>, dim3(kBlocks), dim3(kThreads),
                              kThreads * sizeof(float), d_in, d_sum);
  float sums[kBlocks];
  cudaMemcpy(sums, d_sum, sizeof sums, cudaMemcpyDeviceToHost);
  for (int b = 0; b < kBlocks; ++b) {
    float want = 0;  // small integers: the float sum is exact
    for (int i = 0; i < kThreads; ++i) want += static_cast<float>((b * kThreads + i) % 7);
    if (e != cudaSuccess || sums[b] != want) {
      std::printf("block_sum block %d: %g, want %g (%s)\n", b, sums[b], want,
                  cudaGetErrorString(e));
      ++failures;
    }
  }

  int* d_flags;
  cudaMalloc(&d_flags, 32 * sizeof(int));
  e = emu::launch(vllm::aliases, dim3(1), dim3(32), 64, d_flags);
  int flags[32];
  cudaMemcpy(flags, d_flags, sizeof flags, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 32; ++i)
    if (e != cudaSuccess || flags[i] != 1) {
      std::printf("aliases: thread %d sees distinct extern __shared__ arrays\n", i);
      ++failures;
      break;
    }

  float h[64], *d_a, *d_b;
  // (i % 16) * 0.5 <= 7.5: exact in e4m3 (3 mantissa bits: steps of 0.5 in [4, 8))
  for (int i = 0; i < 64; ++i) h[i] = static_cast<float>(i % 16) * 0.5f;
  cudaMalloc(&d_a, sizeof h);
  cudaMalloc(&d_b, sizeof h);
  cudaMemcpy(d_a, h, sizeof h, cudaMemcpyHostToDevice);
  e = emu::launch(reverse_fp8, dim3(1), dim3(32), 32 * sizeof(float), d_a, d_b);
  cudaMemcpy(h, d_b, sizeof h, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 32; ++i)
    if (e != cudaSuccess || h[i] != static_cast<float>((31 - i) % 16) * 0.5f) {
      std::printf("reverse_fp8 [%d]: %g, want %g\n", i, h[i], ((31 - i) % 16) * 0.5f);
      ++failures;
      break;
    }
  std::printf("third_party: %s (CUDA_VERSION %d)\n", failures ? "FAILED" : "ok", CUDA_VERSION);
  return failures ? 1 : 0;
}
