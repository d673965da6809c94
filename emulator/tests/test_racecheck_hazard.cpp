// racecheck's hazard mode (this file is compiled with the race instrumentation): a write
// and another thread's access to the same byte with no barrier between them is a finding
// even when every run order gives the same output, which the reordering check cannot see.
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>
#include <string>

namespace hazard_kernels {

// Warp 1 reads what warp 0 wrote, separated only by a shuffle. In the emulator a shuffle
// completes only once every thread of the block is blocked, so every order gives the same
// output; on a GPU warp 1 may run ahead of warp 0.
__global__ void race_across_shuffle(int* out) {
  extern __shared__ int exchange[];
  const int lane = static_cast<int>(threadIdx.x) % warpSize;
  if (threadIdx.x < static_cast<unsigned>(warpSize)) exchange[lane] = lane;
  const int v = __shfl_xor_sync(0xffffffff, lane, 1);
  if (threadIdx.x >= static_cast<unsigned>(warpSize)) out[threadIdx.x] = exchange[lane] + v;
}

// vLLM V1's logits buffer reused as the output buffer, without the barrier vLLM documents
// as required before the reuse. Each thread writes back the value it read, so the output
// agrees in every order; thread t's write still races with the other threads' reads.
__global__ void reuse_without_barrier(float* out) {
  extern __shared__ float logits[];
  const unsigned t = threadIdx.x;
  logits[t] = static_cast<float>(t);
  __syncthreads();
  float sum = 0.0f;
  for (unsigned i = 0; i < blockDim.x; ++i) sum += logits[i];
  float* out_smem = logits;  // reused, BUG: no __syncthreads() before it
  out_smem[t] = static_cast<float>(t);
  __syncthreads();
  out[t] = out_smem[blockDim.x - 1 - t] + sum;
}

__global__ void reuse_with_barrier(float* out) {
  extern __shared__ float logits[];
  const unsigned t = threadIdx.x;
  logits[t] = static_cast<float>(t);
  __syncthreads();
  float sum = 0.0f;
  for (unsigned i = 0; i < blockDim.x; ++i) sum += logits[i];
  __syncthreads();
  float* out_smem = logits;
  out_smem[t] = static_cast<float>(t) * 2.0f;
  __syncthreads();
  out[t] = out_smem[blockDim.x - 1 - t] + sum;
}

// Correct: lanes of one warp exchange through shared memory ordered by __syncwarp, a
// static __shared__ array reduced with barriers, distinct global writes, an atomic.
__global__ void correct_mix(float* out, int* counter) {
  __shared__ float partial[64];
  extern __shared__ float scratch[];
  const unsigned t = threadIdx.x;
  const unsigned lane = t % static_cast<unsigned>(warpSize);
  const unsigned base = t - lane;
  scratch[t] = static_cast<float>(t);
  __syncwarp();
  float mine = scratch[base + (lane + 1) % static_cast<unsigned>(warpSize)];
  for (int o = warpSize / 2; o > 0; o /= 2) mine += __shfl_xor_sync(0xffffffff, mine, o);
  if (t < 64) partial[t] = 0.0f;
  __syncthreads();
  if (lane == 0) partial[t / warpSize] = mine;
  __syncthreads();
  if (t == 0) {
    float s = 0.0f;
    for (unsigned w = 0; w < blockDim.x / warpSize; ++w) s += partial[w];
    out[blockIdx.x * (blockDim.x + 1) + blockDim.x] = s;
  }
  out[blockIdx.x * (blockDim.x + 1) + t] = mine;
  atomicAdd(counter, 1);
}

// Blocks write the same global byte: nothing orders blocks.
__global__ void blocks_share_a_cell(int* out) {
  if (threadIdx.x == 0) out[0] = static_cast<int>(blockIdx.x);
}

}  // namespace hazard_kernels

namespace {

struct ChecksOn {
  explicit ChecksOn(unsigned c) { emu::set_checks(c); }
  ~ChecksOn() { emu::set_checks(emu::check_none); }
};

template <class F>
std::string stderr_of(F f) {
  testing::internal::CaptureStderr();
  f();
  return testing::internal::GetCapturedStderr();
}

}  // namespace

using namespace hazard_kernels;

TEST(RacecheckHazard, RaceAcrossAShuffleIsReported) {
  for (const char* profile : {"h200", "bi-v100"}) {
    emu::use_profile(profile);
    const int ws = emu::current_profile().warp_size;
    int* out;
    ASSERT_EQ(cudaMalloc(&out, 2 * ws * sizeof(int)), cudaSuccess);
    cudaError_t e;
    {
      // The reordering passes run one warp at a time through its collectives, so warp 1
      // reads before warp 0 writes and the output differs: the fast mode sees it too
      // (when every thread ran up to each shuffle first, it could not).
      ChecksOn fast(emu::check_racecheck_reorder);
      std::string err = stderr_of(
          [&] { e = emu::launch(race_across_shuffle, dim3(1), dim3(2 * ws), 4 * ws, out); });
      EXPECT_EQ(e, cudaErrorLaunchFailure) << err;
      EXPECT_NE(err.find("racecheck: kernel hazard_kernels::race_across_shuffle"),
                std::string::npos)
          << err;
    }
    ChecksOn on(emu::check_racecheck);
    std::string err = stderr_of(
        [&] { e = emu::launch(race_across_shuffle, dim3(1), dim3(2 * ws), 4 * ws, out); });
    EXPECT_EQ(e, cudaErrorLaunchFailure) << profile << ": " << err;
    EXPECT_NE(err.find("racecheck: hazard: kernel hazard_kernels::race_across_shuffle"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("read-after-write on shared memory 'extern __shared__'"), std::string::npos)
        << err;
    EXPECT_NE(err.find("(warp 1) reads it"), std::string::npos) << err;
    EXPECT_NE(err.find("(warp 0) wrote it with no __syncthreads between (a warp collective "
                       "orders only its own lanes)"),
              std::string::npos)
        << err;
    cudaFree(out);
  }
}

TEST(RacecheckHazard, MissingBarrierBeforeBufferReuseIsReported) {
  emu::use_profile("h200");
  float* out;
  ASSERT_EQ(cudaMalloc(&out, 64 * sizeof(float)), cudaSuccess);
  cudaError_t e;
  {
    ChecksOn fast(emu::check_racecheck_reorder);
    std::string err =
        stderr_of([&] { e = emu::launch(reuse_without_barrier, dim3(1), dim3(64), 256, out); });
    EXPECT_EQ(e, cudaSuccess) << "the output agrees in every order: " << err;
  }
  ChecksOn on(emu::check_racecheck);
  std::string err =
      stderr_of([&] { e = emu::launch(reuse_without_barrier, dim3(1), dim3(64), 256, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure) << err;
  EXPECT_NE(err.find("write-after-read on shared memory 'extern __shared__'"), std::string::npos)
      << err;
  err = stderr_of([&] { e = emu::launch(reuse_with_barrier, dim3(1), dim3(64), 256, out); });
  EXPECT_EQ(e, cudaSuccess) << "with the barrier: " << err;
  cudaFree(out);
}

TEST(RacecheckHazard, CorrectKernelHasNoFinding) {
  for (const char* profile : {"h200", "bi-v100"}) {
    emu::use_profile(profile);
    ChecksOn on(emu::check_racecheck);
    float* out;
    int* counter;
    ASSERT_EQ(cudaMalloc(&out, 3 * 257 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&counter, sizeof(int)), cudaSuccess);
    cudaError_t e;
    std::string err = stderr_of([&] {
      e = emu::launch(correct_mix, dim3(3), dim3(256), 256 * sizeof(float), out, counter);
    });
    EXPECT_EQ(e, cudaSuccess) << profile << ": " << err;
    EXPECT_EQ(err.find("racecheck"), std::string::npos) << err;
    cudaFree(out);
    cudaFree(counter);
  }
}

TEST(RacecheckHazard, BlocksWritingOneGlobalCellAreReported) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_racecheck);
  int* out;
  ASSERT_EQ(cudaMalloc(&out, sizeof(int)), cudaSuccess);
  cudaError_t e;
  std::string err =
      stderr_of([&] { e = emu::launch(blocks_share_a_cell, dim3(2), dim3(32), 0, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure) << err;
  EXPECT_NE(err.find("write-after-write on device allocation #"), std::string::npos) << err;
  EXPECT_NE(err.find("in another block: nothing orders blocks within a launch"), std::string::npos)
      << err;
  cudaFree(out);
}
