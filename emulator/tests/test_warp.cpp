// Warp collectives follow CUDA's documented semantics, over 64 lanes on bi-v100 and 32
// on h200; barriers order shared-memory phases.
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>

#include <vector>

__global__ void xor_reduce(int* out) {
  int v = static_cast<int>(threadIdx.x);
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffff, v, offset);
  out[threadIdx.x] = v;
}

__global__ void shuffles(int* idx, int* up, int* down, int* xr, int* seg) {
  const int lane = static_cast<int>(threadIdx.x) % warpSize;
  const int v = 1000 + static_cast<int>(threadIdx.x);
  idx[threadIdx.x] = __shfl_sync(0xffffffff, v, 3);
  up[threadIdx.x] = __shfl_up_sync(0xffffffff, v, 2, 8);
  down[threadIdx.x] = __shfl_down_sync(0xffffffff, v, 3, 16);
  xr[threadIdx.x] = __shfl_xor_sync(0xffffffff, v, 4, 4);  // lanes ^4 lie in a later segment
  seg[threadIdx.x] = __shfl_sync(0xffffffff, v, lane + 17, 16);
}

__global__ void votes(unsigned long long* ballot, int* any, int* all, unsigned long long* active) {
  const unsigned t = threadIdx.x;
  ballot[t] = __ballot_sync(0xffffffff, t % 3 == 0);
  any[t] = __any_sync(0xffffffff, t == 5);
  all[t] = __all_sync(0xffffffff, t < 1000);
  if (t % 2 == 0) active[t] = __activemask();
  __syncwarp();
}

__global__ void block_sum(const float* in, float* out) {
  extern __shared__ float smem[];
  smem[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = smem[0];
}

__global__ void atomics(int* i, unsigned* u, float* f, int* mx, int* cas, int* exch) {
  extern __shared__ int shm[];
  if (threadIdx.x == 0) shm[0] = 0;
  __syncthreads();
  atomicAdd(&shm[0], 1);
  atomicAdd(i, 1);
  atomicAdd(u, 2u);
  atomicAdd(f, 0.5f);
  atomicMax(mx, static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x));
  atomicCAS(cas, 0, 7);
  atomicExch(exch, 3);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(i, shm[0] * 1000);
}

template <class T>
std::vector<T> run_and_copy(T* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

class Warp : public ::testing::TestWithParam<const char*> {};

TEST_P(Warp, XorReductionSpansTheProfilesWarp) {
  emu::use_profile(GetParam());
  const int ws = emu::current_profile().warp_size;
  int* d;
  ASSERT_EQ(cudaMalloc(&d, 128 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(emu::launch(xor_reduce, dim3(1), dim3(128), 0, d), cudaSuccess);
  auto h = run_and_copy(d, 128);
  for (int t = 0; t < 128; ++t) {
    const int w = t / ws;  // sum of thread ids in this warp
    EXPECT_EQ(h[t], ws * w * ws + ws * (ws - 1) / 2) << "thread " << t;
  }
  cudaFree(d);
}

TEST_P(Warp, ShufflesFollowCudaSemantics) {
  emu::use_profile(GetParam());
  const int ws = emu::current_profile().warp_size;
  const int n = 128;
  int *idx, *up, *down, *xr, *seg;
  for (int** p : {&idx, &up, &down, &xr, &seg})
    ASSERT_EQ(cudaMalloc(p, n * sizeof(int)), cudaSuccess);
  ASSERT_EQ(emu::launch(shuffles, dim3(1), dim3(n), 0, idx, up, down, xr, seg), cudaSuccess);
  auto hi = run_and_copy(idx, n), hu = run_and_copy(up, n), hd = run_and_copy(down, n),
       hx = run_and_copy(xr, n), hs = run_and_copy(seg, n);
  for (int t = 0; t < n; ++t) {
    const int lane = t % ws, base = t - lane;
    EXPECT_EQ(hi[t], 1000 + base + 3);
    // up, width 8: the lowest 2 lanes of each 8-lane segment keep their own value
    EXPECT_EQ(hu[t], 1000 + (lane % 8 >= 2 ? t - 2 : t));
    // down, width 16: lanes whose source would leave the segment keep their own value
    EXPECT_EQ(hd[t], 1000 + (lane % 16 + 3 < 16 ? t + 3 : t));
    // xor 4 with width 4: the source lies in a later segment for every lane
    // whose bit 2 is clear, and in an earlier one otherwise (allowed)
    EXPECT_EQ(hx[t], 1000 + ((lane & 4) ? t - 4 : t));
    // srcLane is taken modulo width within the caller's segment
    EXPECT_EQ(hs[t], 1000 + base + lane / 16 * 16 + (lane + 17) % 16);
  }
  for (int* p : {idx, up, down, xr, seg}) cudaFree(p);
}

TEST_P(Warp, VotesAndActiveMask) {
  emu::use_profile(GetParam());
  const int ws = emu::current_profile().warp_size;
  const int n = 128;
  unsigned long long *ballot, *active;
  int *any, *all;
  ASSERT_EQ(cudaMalloc(&ballot, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&active, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&any, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&all, n * 4), cudaSuccess);
  ASSERT_EQ(emu::launch(votes, dim3(1), dim3(n), 0, ballot, any, all, active), cudaSuccess);
  auto hb = run_and_copy(ballot, n), ha = run_and_copy(active, n);
  auto hany = run_and_copy(any, n), hall = run_and_copy(all, n);
  for (int t = 0; t < n; ++t) {
    const int base = t - t % ws;
    unsigned long long want = 0, evens = 0;
    for (int l = 0; l < ws; ++l) {
      if ((base + l) % 3 == 0) want |= 1ull << l;
      if (l % 2 == 0) evens |= 1ull << l;
    }
    EXPECT_EQ(hb[t], want) << "thread " << t;
    EXPECT_EQ(hany[t], base <= 5 && 5 < base + ws ? 1 : 0);
    EXPECT_EQ(hall[t], 1);
    if (t % 2 == 0) EXPECT_EQ(ha[t], evens) << "only the even lanes reach __activemask";
  }
  for (void* p : {(void*)ballot, (void*)active, (void*)any, (void*)all}) cudaFree(p);
}

INSTANTIATE_TEST_SUITE_P(Profiles, Warp, ::testing::Values("bi-v100", "h200"));

TEST(Barrier, TreeReductionOverSharedMemory) {
  emu::use_profile("bi-v100");
  const int blocks = 5, threads = 256;
  std::vector<float> in(blocks * threads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 17);
  float *din, *dout;
  ASSERT_EQ(cudaMalloc(&din, in.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, blocks * 4), cudaSuccess);
  cudaMemcpy(din, in.data(), in.size() * 4, cudaMemcpyHostToDevice);
  ASSERT_EQ(emu::launch(block_sum, dim3(blocks), dim3(threads), threads * sizeof(float), din, dout),
            cudaSuccess);
  auto h = run_and_copy(dout, blocks);
  for (int b = 0; b < blocks; ++b) {
    float want = 0;  // small integers: every partial sum is exact in float
    for (int t = 0; t < threads; ++t) want += in[b * threads + t];
    EXPECT_EQ(h[b], want);
  }
  cudaFree(din);
  cudaFree(dout);
}

TEST(Atomics, GlobalAndSharedAcrossBlocksAndHostThreads) {
  emu::use_profile("h200");
  emu::set_host_threads(2);
  int *i, *mx, *cas, *exch;
  unsigned* u;
  float* f;
  for (int** p : {&i, &mx, &cas, &exch}) {
    ASSERT_EQ(cudaMalloc(p, 4), cudaSuccess);
    cudaMemset(*p, 0, 4);
  }
  ASSERT_EQ(cudaMalloc(&u, 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&f, 4), cudaSuccess);
  cudaMemset(u, 0, 4);
  cudaMemset(f, 0, 4);
  const int blocks = 8, threads = 64;
  ASSERT_EQ(emu::launch(atomics, dim3(blocks), dim3(threads), 4, i, u, f, mx, cas, exch),
            cudaSuccess);
  EXPECT_EQ(run_and_copy(i, 1)[0], blocks * threads + blocks * threads * 1000);
  EXPECT_EQ(run_and_copy(u, 1)[0], 2u * blocks * threads);
  EXPECT_EQ(run_and_copy(f, 1)[0], 0.5f * blocks * threads);  // exact: multiples of 0.5 below 2^23
  EXPECT_EQ(run_and_copy(mx, 1)[0], blocks * threads - 1);
  EXPECT_EQ(run_and_copy(cas, 1)[0], 7);
  EXPECT_EQ(run_and_copy(exch, 1)[0], 3);
  emu::set_host_threads(0);
}

TEST(Determinism, ResultsDoNotDependOnHostThreads) {
  emu::use_profile("bi-v100");
  const int blocks = 16, threads = 128;
  std::vector<float> in(blocks * threads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 1.0f / static_cast<float>(i + 1);  // inexact sums
  float *din, *dout;
  ASSERT_EQ(cudaMalloc(&din, in.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, blocks * 4), cudaSuccess);
  cudaMemcpy(din, in.data(), in.size() * 4, cudaMemcpyHostToDevice);
  std::vector<std::vector<float>> results;
  for (int n : {1, 2, 3}) {
    emu::set_host_threads(n);
    ASSERT_EQ(emu::launch(block_sum, dim3(blocks), dim3(threads), threads * 4, din, dout),
              cudaSuccess);
    results.push_back(run_and_copy(dout, blocks));
  }
  emu::set_host_threads(0);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
  cudaFree(din);
  cudaFree(dout);
}
