// CUDA error checking and timing helpers shared by the GPU programs.
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace gpubench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
}

struct Buffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit Buffer(std::size_t n) : bytes(n) { check(cudaMalloc(&ptr, n ? n : 1), "cudaMalloc"); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { cudaFree(ptr); }
};

// Mean time of `reps` calls of f after `warmup` calls, in microseconds (CUDA events).
template <class F>
double time_us(F&& f, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) f();
  check(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  check(cudaEventRecord(a), "cudaEventRecord");
  for (int i = 0; i < reps; ++i) f();
  check(cudaEventRecord(b), "cudaEventRecord");
  check(cudaEventSynchronize(b), "kernel execution");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1e3 / reps;
}

// Device-to-device copy bandwidth (bytes read + bytes written per second, GB/s) over
// `bytes`, the same way the kernels' achieved bandwidth is counted.
inline double copy_bandwidth_gbps(std::size_t bytes) {
  Buffer src(bytes), dst(bytes);
  check(cudaMemset(src.ptr, 1, bytes), "cudaMemset");
  const double us = time_us(
      [&] { check(cudaMemcpy(dst.ptr, src.ptr, bytes, cudaMemcpyDeviceToDevice), "copy"); }, 2, 10);
  return 2.0 * bytes / (us * 1e3);
}

}  // namespace gpubench
