// Built-in variables in three dimensions, every atomic on every type in global and
// shared memory, and the remaining runtime calls.
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>

#include <vector>

__global__ void indices(uint4* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  out[block * per_block + thread] =
      make_uint4(threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z,
                 blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z, gridDim.x * gridDim.y * gridDim.z,
                 static_cast<unsigned>(warpSize));
}

// Every thread applies each operation once; slot layout per type:
// [0] add, [1] max, [2] cas-counter, [3] exch.
template <class T>
__device__ void all_ops(T* g, T* s) {
  const T me = static_cast<T>(threadIdx.x + blockIdx.x * blockDim.x);
  for (T* p : {g, s}) {
    atomicAdd(&p[0], static_cast<T>(1));
    atomicMax(&p[1], me);
    // cas loop: increments p[2] by one per thread, exercising atomicCAS's return value
    T old = p[2], seen;
    do {
      seen = old;
      old = atomicCAS(&p[2], seen, static_cast<T>(seen + 1));
    } while (old != seen);
    atomicExch(&p[3], static_cast<T>(7));
  }
}

__global__ void atomics_every_type(int* gi, unsigned* gu, float* gf, int* out_shared_i,
                                   unsigned* out_shared_u, float* out_shared_f) {
  __shared__ int si[4];
  __shared__ unsigned su[4];
  __shared__ float sf[4];
  if (threadIdx.x < 4) {
    si[threadIdx.x] = 0;
    su[threadIdx.x] = 0;
    sf[threadIdx.x] = 0;
  }
  __syncthreads();
  all_ops<int>(gi, si);
  all_ops<unsigned>(gu, su);
  // float: add and exch here; atomicMax/atomicCAS on float are not CUDA built-ins
  atomicAdd(&gf[0], 1.0f);
  atomicAdd(&sf[0], 1.0f);
  atomicExch(&gf[3], 7.0f);
  atomicExch(&sf[3], 7.0f);
  __threadfence();
  __syncthreads();
  if (threadIdx.x < 4) {
    out_shared_i[blockIdx.x * 4 + threadIdx.x] = si[threadIdx.x];
    out_shared_u[blockIdx.x * 4 + threadIdx.x] = su[threadIdx.x];
    out_shared_f[blockIdx.x * 4 + threadIdx.x] = sf[threadIdx.x];
  }
}

__global__ void syncwarp_phases(int* out) {
  extern __shared__ int smem[];
  smem[threadIdx.x] = static_cast<int>(threadIdx.x) * 2;
  __syncwarp();
  const int lane = static_cast<int>(threadIdx.x) % warpSize;
  const int base = static_cast<int>(threadIdx.x) - lane;
  out[threadIdx.x] = smem[base + (lane + 1) % warpSize];
}

TEST(Builtins, IndicesInThreeDimensions) {
  emu::use_profile("bi-v100");
  const dim3 grid(3, 2, 2), block(4, 4, 4);
  const int n = 12 * 64;
  uint4* d;
  ASSERT_EQ(cudaMalloc(&d, n * sizeof(uint4)), cudaSuccess);
  ASSERT_EQ(emu::launch(indices, grid, block, 0, d), cudaSuccess);
  std::vector<uint4> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(uint4), cudaMemcpyDeviceToHost);
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 4; ++tz)
          for (unsigned ty = 0; ty < 4; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx) {
              const unsigned b = bx + 3 * (by + 2 * bz), t = tx + 4 * (ty + 4 * tz);
              const uint4 v = h[b * 64 + t];
              EXPECT_EQ(v.x, tx + 10 * ty + 100 * tz);
              EXPECT_EQ(v.y, bx + 10 * by + 100 * bz);
              EXPECT_EQ(v.z, 12u);
              EXPECT_EQ(v.w, 64u);
            }
  cudaFree(d);
}

TEST(Builtins, AtomicsOnEveryTypeInGlobalAndSharedMemory) {
  emu::use_profile("h200");
  emu::set_host_threads(2);
  const int blocks = 4, threads = 96;
  int *gi, *si;
  unsigned *gu, *su;
  float *gf, *sf;
  ASSERT_EQ(cudaMalloc(&gi, 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&gu, 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&gf, 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&si, blocks * 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&su, blocks * 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&sf, blocks * 16), cudaSuccess);
  for (void* p : {(void*)gi, (void*)gu, (void*)gf}) cudaMemset(p, 0, 16);
  ASSERT_EQ(emu::launch(atomics_every_type, dim3(blocks), dim3(threads), 0, gi, gu, gf, si, su, sf),
            cudaSuccess);
  int hgi[4], hsi[blocks * 4];
  unsigned hgu[4], hsu[blocks * 4];
  float hgf[4], hsf[blocks * 4];
  cudaMemcpy(hgi, gi, 16, cudaMemcpyDeviceToHost);
  cudaMemcpy(hgu, gu, 16, cudaMemcpyDeviceToHost);
  cudaMemcpy(hgf, gf, 16, cudaMemcpyDeviceToHost);
  cudaMemcpy(hsi, si, sizeof hsi, cudaMemcpyDeviceToHost);
  cudaMemcpy(hsu, su, sizeof hsu, cudaMemcpyDeviceToHost);
  cudaMemcpy(hsf, sf, sizeof hsf, cudaMemcpyDeviceToHost);
  const int all = blocks * threads;
  EXPECT_EQ(hgi[0], all);
  EXPECT_EQ(hgi[1], all - 1);
  EXPECT_EQ(hgi[2], all);
  EXPECT_EQ(hgi[3], 7);
  EXPECT_EQ(hgu[0], unsigned(all));
  EXPECT_EQ(hgu[1], unsigned(all - 1));
  EXPECT_EQ(hgu[2], unsigned(all));
  EXPECT_EQ(hgu[3], 7u);
  EXPECT_EQ(hgf[0], float(all));  // integers below 2^24 add exactly in any order
  EXPECT_EQ(hgf[3], 7.0f);
  for (int b = 0; b < blocks; ++b) {
    EXPECT_EQ(hsi[b * 4 + 0], threads);
    EXPECT_EQ(hsi[b * 4 + 1], b * threads + threads - 1);
    EXPECT_EQ(hsi[b * 4 + 2], threads);
    EXPECT_EQ(hsi[b * 4 + 3], 7);
    EXPECT_EQ(hsu[b * 4 + 0], unsigned(threads));
    EXPECT_EQ(hsu[b * 4 + 1], unsigned(b * threads + threads - 1));
    EXPECT_EQ(hsf[b * 4 + 0], float(threads));
    EXPECT_EQ(hsf[b * 4 + 3], 7.0f);
  }
  emu::set_host_threads(0);
  for (void* p : {(void*)gi, (void*)gu, (void*)gf, (void*)si, (void*)su, (void*)sf}) cudaFree(p);
}

TEST(Builtins, SyncwarpOrdersSharedMemoryWithinAWarp) {
  for (const char* profile : {"bi-v100", "h200"}) {
    emu::use_profile(profile);
    emu::set_checks(emu::check_all);
    const int ws = emu::current_profile().warp_size;
    int* d;
    ASSERT_EQ(cudaMalloc(&d, 128 * 4), cudaSuccess);
    ASSERT_EQ(emu::launch(syncwarp_phases, dim3(1), dim3(128), 128 * 4, d), cudaSuccess)
        << emu::last_error_message();
    int h[128];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    for (int t = 0; t < 128; ++t) EXPECT_EQ(h[t], 2 * (t - t % ws + (t % ws + 1) % ws));
    emu::set_checks(emu::check_none);
    cudaFree(d);
  }
}

TEST(Runtime, PeekKeepsTheErrorAndDeviceToDeviceCopies) {
  int *a, *b;
  ASSERT_EQ(cudaMalloc(&a, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(a, 3, 64), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b, a, 64, cudaMemcpyDeviceToDevice), cudaSuccess);
  unsigned char h[64];
  cudaMemcpy(h, b, 64, cudaMemcpyDeviceToHost);
  for (unsigned char c : h) EXPECT_EQ(c, 3);
  EXPECT_EQ(cudaMemcpy(b, a, 64, static_cast<cudaMemcpyKind>(9)), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidMemcpyDirection) << "peek does not clear";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  int count = 0;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(a);
  cudaFree(b);
}
