// CUDA error checking and timing helpers shared by the GPU programs. Under `dry` (the
// programs' --dry) buffers are host memory and times come from the host clock, so the
// programs run end to end on the emulator with no CUDA call.
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpubench {

inline bool dry = false;

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
}

struct Buffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  std::vector<char> host;  // dry only
  explicit Buffer(std::size_t n) : bytes(n) {
    if (dry) {
      host.assign(n ? n : 1, 0);
      ptr = host.data();
    } else {
      check(cudaMalloc(&ptr, n ? n : 1), "cudaMalloc");
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (!dry) cudaFree(ptr);
  }
  void upload(std::size_t offset, const void* src, std::size_t n) {
    if (dry)
      std::memcpy(static_cast<char*>(ptr) + offset, src, n);
    else
      check(cudaMemcpy(static_cast<char*>(ptr) + offset, src, n, cudaMemcpyHostToDevice), "upload");
  }
  template <class T>
  explicit Buffer(const std::vector<T>& v) : Buffer(v.size() * sizeof(T)) {
    if (bytes) upload(0, v.data(), bytes);
  }
  template <class T>
  void to_host(std::vector<T>& v) const {
    if (!bytes) return;
    if (dry)
      std::memcpy(v.data(), ptr, bytes);
    else
      check(cudaMemcpy(v.data(), ptr, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  // Fills the buffer with `pattern` repeated: one upload, then copies that double the
  // filled prefix on the device (a 17 GB cache fills in milliseconds, not a PCIe minute).
  void fill(const void* pattern, std::size_t n) {
    n = n < bytes ? n : bytes;
    if (!n) return;
    upload(0, pattern, n);
    for (std::size_t done = n; done < bytes;) {
      const std::size_t c = done < bytes - done ? done : bytes - done;
      char* base = static_cast<char*>(ptr);
      if (dry)
        std::memcpy(base + done, base, c);
      else
        check(cudaMemcpy(base + done, base, c, cudaMemcpyDeviceToDevice), "fill");
      done += c;
    }
  }
};

// Mean time of `reps` calls of f after `warmup` calls, in microseconds (CUDA events).
template <class F>
double time_us(F&& f, int warmup, int reps) {
  if (dry) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           reps;
  }
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
  if (dry) {
    std::memset(src.ptr, 1, bytes);
    const double us = time_us([&] { std::memcpy(dst.ptr, src.ptr, bytes); }, 0, 3);
    return 2.0 * bytes / (us * 1e3);
  }
  check(cudaMemset(src.ptr, 1, bytes), "cudaMemset");
  const double us = time_us(
      [&] { check(cudaMemcpy(dst.ptr, src.ptr, bytes, cudaMemcpyDeviceToDevice), "copy"); }, 2, 10);
  return 2.0 * bytes / (us * 1e3);
}

}  // namespace gpubench
