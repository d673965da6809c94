// Each sanitizer-like check catches its deliberate bug, says so on stderr in a line
// beginning with the check's name, fails the launch, and nothing hangs.
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>
#include <emu/portable.h>

#include <string>

__global__ void missing_barrier(int* out) {
  extern __shared__ int shm[];
  if (threadIdx.x == 0) shm[0] = 42;
  // BUG: no __syncthreads() between the write and the reads
  out[threadIdx.x] = shm[0];
}

__global__ void early_return_barrier(int* out) {
  if (threadIdx.x >= 32) return;  // BUG: the others then wait at a barrier they cannot all reach
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void barrier_against_shuffle(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x % 32 < 16)
    __syncthreads();  // BUG: lanes 16..31 wait in the shuffle for lanes parked here
  else
    v = __shfl_xor_sync(0xffffffff, v, 1);
  out[threadIdx.x] = v;
}

__global__ void mismatched_collectives(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x % 2)
    v = static_cast<int>(__ballot_sync(0xffffffff, 1));  // BUG: half the warp votes,
  else
    v = __shfl_xor_sync(0xffffffff, v, 2);  // the other half shuffles
  out[threadIdx.x] = v;
}

__global__ void store_past_end(float* out, int n) {
  out[threadIdx.x + n] = 1.0f;  // BUG: writes n..n+blockDim-1
}

__global__ void load_past_end(const float* in, float* out, int n) {
  out[threadIdx.x] = in[threadIdx.x + 1024 * n];  // BUG: far past the end
}

__global__ void reads_unwritten_static_shared(float* out) {
  __shared__ float s[64];
  if (threadIdx.x < 32) s[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];  // BUG: s[32..63] were never written
}

__global__ void reads_unwritten_dynamic_shared(float* out) {
  extern __shared__ float smem[];
  if (threadIdx.x < 32) smem[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = smem[threadIdx.x];  // BUG: smem[32..63] were never written
}

__global__ void shared_store_past_end(float* out) {
  extern __shared__ float smem[];
  smem[threadIdx.x * 1024] = 1.0f;  // BUG: the launch gives 1 KB; thread 1 writes at 4 KB
  __syncthreads();
  out[threadIdx.x] = smem[0];
}

namespace kernels_in_a_namespace {
__global__ void portable_shared_read_past_end(float* out, int n) {
  EMU_DYNAMIC_SHARED(float, tile);
  tile[threadIdx.x] = 2.0f;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x + n];  // BUG for n >= launch size
}
}  // namespace kernels_in_a_namespace

__global__ void clean_kernel(float* out) {
  extern __shared__ float smem[];
  smem[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = smem[blockDim.x - 1 - threadIdx.x];
}

namespace {

struct ChecksOn {
  explicit ChecksOn(unsigned c) { emu::set_checks(c); }
  ~ChecksOn() { emu::set_checks(emu::check_none); }
};

bool has_line_starting(const std::string& text, const std::string& prefix) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (text.compare(pos, prefix.size(), prefix) == 0) return true;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return false;
}

template <class F>
std::string stderr_of(F f) {
  testing::internal::CaptureStderr();
  f();
  return testing::internal::GetCapturedStderr();
}

}  // namespace

TEST(Racecheck, MissingBarrierIsReported) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_racecheck);
  int* out;
  ASSERT_EQ(cudaMalloc(&out, 64 * 4), cudaSuccess);
  cudaError_t e;
  std::string err = stderr_of([&] { e = emu::launch(missing_barrier, dim3(1), dim3(64), 4, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  EXPECT_TRUE(has_line_starting(err, "racecheck:")) << err;
  EXPECT_NE(err.find("missing_barrier"), std::string::npos) << err;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure) << "the sync after reports it too";
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(out);
}

TEST(Synccheck, EarlyReturnBeforeBarrierIsReported) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_synccheck);
  int* out;
  ASSERT_EQ(cudaMalloc(&out, 64 * 4), cudaSuccess);
  cudaError_t e;
  std::string err =
      stderr_of([&] { e = emu::launch(early_return_barrier, dim3(1), dim3(64), 0, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  EXPECT_TRUE(has_line_starting(err, "synccheck:")) << err;
  EXPECT_NE(err.find("never reached by 32 thread"), std::string::npos) << err;
  cudaFree(out);
}

TEST(Synccheck, DeadlockIsReportedEvenWithChecksOff) {
  emu::use_profile("h200");
  int* out;
  ASSERT_EQ(cudaMalloc(&out, 64 * 4), cudaSuccess);
  for (auto kernel : {barrier_against_shuffle, mismatched_collectives}) {
    cudaError_t e;
    std::string err = stderr_of([&] { e = emu::launch(kernel, dim3(2), dim3(64), 0, out); });
    EXPECT_EQ(e, cudaErrorLaunchFailure);
    EXPECT_TRUE(has_line_starting(err, "synccheck:")) << err;
    EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
    EXPECT_NE(emu::last_error_message().find("wait site(s)"), std::string::npos);
  }
  cudaFree(out);
}

__global__ void stuck_shuffle(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  if (t >= 250) return;  // threads 250..255 exit
  int v = t;
  if (t >= 64 && t < 80)
    v = __shfl_xor_sync(0xffffffff, v, 1);  // BUG: lanes 80..95 of this warp are at the barrier
  else
    __syncthreads();
  out[t] = v;
}

// The report names every wait site with its thread count and ranges, so the culprits
// (threads 64..79 at a shuffle) are there however many threads wait elsewhere; a report
// listing the first few waiting threads only (the old one stopped at 8) fails this.
TEST(Synccheck, DeadlockReportGroupsThreadsBySite) {
  emu::use_profile("h200");
  int* out;
  ASSERT_EQ(cudaMalloc(&out, 256 * 4), cudaSuccess);
  cudaError_t e;
  std::string err = stderr_of([&] { e = emu::launch(stuck_shuffle, dim3(1), dim3(256), 0, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  EXPECT_NE(err.find("deadlock: 2 wait site(s): "), std::string::npos) << err;
  EXPECT_NE(err.find("__shfl_xor_sync at "), std::string::npos) << err;
  EXPECT_NE(err.find(": 16 thread(s) 64..79"), std::string::npos) << err;
  EXPECT_NE(err.find("__syncthreads at "), std::string::npos) << err;
  EXPECT_NE(err.find(": 234 thread(s) 0..63,80..249"), std::string::npos) << err;
  EXPECT_NE(err.find("; 6 thread(s) exited (250..255)"), std::string::npos) << err;
  cudaFree(out);
}

TEST(Memcheck, OutOfBoundsStoreNamesKernelBlockThreadAndOffset) {
  emu::use_profile("bi-v100");
  ChecksOn on(emu::check_memcheck);
  float* out;
  const int n = 100;
  ASSERT_EQ(cudaMalloc(&out, n * sizeof(float)), cudaSuccess);
  cudaError_t e;
  std::string err =
      stderr_of([&] { e = emu::launch(store_past_end, dim3(1), dim3(64), 0, out, n); });
  EXPECT_EQ(e, cudaErrorIllegalAddress);
  EXPECT_TRUE(has_line_starting(err, "memcheck:")) << err;
  EXPECT_NE(err.find("store_past_end"), std::string::npos) << err;
  EXPECT_NE(err.find("write"), std::string::npos) << err;
  EXPECT_NE(err.find("block (0,0,0)"), std::string::npos) << err;
  cudaFree(out);
}

TEST(Memcheck, FarOutOfBoundsLoadIsCaught) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_memcheck);
  float *in, *out;
  ASSERT_EQ(cudaMalloc(&in, 64 * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, 64 * 4), cudaSuccess);
  cudaError_t e;
  std::string err =
      stderr_of([&] { e = emu::launch(load_past_end, dim3(1), dim3(1), 0, in, out, 0); });
  EXPECT_EQ(e, cudaSuccess) << "offset 0 is in bounds: " << err;
  // 1024 floats past a 256-byte allocation is 4 KB in: exactly the guard page
  err = stderr_of([&] { e = emu::launch(load_past_end, dim3(1), dim3(1), 0, in, out, 1); });
  EXPECT_EQ(e, cudaErrorIllegalAddress) << err;
  EXPECT_NE(err.find("memcheck: invalid read"), std::string::npos) << err;
  EXPECT_NE(err.find("thread (0,0,0)"), std::string::npos) << err;
  cudaFree(in);
  cudaFree(out);
}

TEST(Memcheck, SharedMemoryPastTheLaunchSizeIsCaught) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_memcheck);
  float* out;
  ASSERT_EQ(cudaMalloc(&out, 64 * 4), cudaSuccess);
  cudaError_t e;
  std::string err =
      stderr_of([&] { e = emu::launch(shared_store_past_end, dim3(1), dim3(2), 1024, out); });
  EXPECT_EQ(e, cudaErrorIllegalAddress) << err;
  EXPECT_TRUE(has_line_starting(err, "memcheck:")) << err;
  EXPECT_NE(err.find("invalid write of dynamic shared memory 'shm,smem' at byte offset 4096"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("thread (1,0,0)"), std::string::npos) << err;

  // EMU_DYNAMIC_SHARED's pool ends flush against a guard page: the first byte past the
  // launch's 256 bytes faults.
  using kernels_in_a_namespace::portable_shared_read_past_end;
  err = stderr_of(
      [&] { e = emu::launch(portable_shared_read_past_end, dim3(1), dim3(64), 256, out, 0); });
  EXPECT_EQ(e, cudaSuccess) << err;
  err = stderr_of(
      [&] { e = emu::launch(portable_shared_read_past_end, dim3(1), dim3(64), 256, out, 1); });
  EXPECT_EQ(e, cudaErrorIllegalAddress) << err;
  EXPECT_NE(
      err.find("invalid read of dynamic shared memory 'EMU_DYNAMIC_SHARED' at byte offset 256"),
      std::string::npos)
      << err;
  EXPECT_NE(err.find("thread (63,0,0)"), std::string::npos) << err;
  cudaFree(out);
}

TEST(Initcheck, ReadOfNeverWrittenSharedMemoryIsReported) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_initcheck);
  float* out;
  ASSERT_EQ(cudaMalloc(&out, 64 * 4), cudaSuccess);
  cudaError_t e;
  std::string err =
      stderr_of([&] { e = emu::launch(reads_unwritten_static_shared, dim3(1), dim3(64), 0, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  EXPECT_TRUE(has_line_starting(err, "initcheck:")) << err;
  err = stderr_of(
      [&] { e = emu::launch(reads_unwritten_dynamic_shared, dim3(1), dim3(64), 256, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  EXPECT_TRUE(has_line_starting(err, "initcheck:")) << err;
  cudaFree(out);
}

TEST(Checks, CleanKernelPassesEveryCheck) {
  ChecksOn on(emu::check_all);
  for (const char* profile : {"bi-v100", "h200"}) {
    emu::use_profile(profile);
    float* out;
    ASSERT_EQ(cudaMalloc(&out, 128 * 4), cudaSuccess);
    cudaError_t e;
    std::string err =
        stderr_of([&] { e = emu::launch(clean_kernel, dim3(3), dim3(128), 512, out); });
    EXPECT_EQ(e, cudaSuccess) << err;
    // This file is not instrumented: racecheck's and memcheck's notes saying so (each
    // printed once per process) are the only lines allowed.
    for (const std::string note :
         {"racecheck: note: kernel clean_kernel", "memcheck: note: kernel clean_kernel"})
      if (err.compare(0, note.size(), note) == 0) err.erase(0, err.find('\n') + 1);
    EXPECT_TRUE(err.empty()) << err;
    float h[128];
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 128; ++i) EXPECT_EQ(h[i], 127 - i);
    cudaFree(out);
  }
}

TEST(Checks, ParseNamesTheAllowedWords) {
  EXPECT_EQ(emu::parse_checks("all"), emu::check_all);
  EXPECT_EQ(emu::parse_checks("memcheck,initcheck"), emu::check_memcheck | emu::check_initcheck);
  try {
    emu::parse_checks("memcheck,leakcheck");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("leakcheck"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("racecheck"), std::string::npos);
  }
}

__global__ void spin_wait(volatile int* flag) {
  // Legal on sm_70+ (independent thread scheduling), a hang for a fiber emulator: thread 0
  // waits for thread 1, which never gets a turn.
  if (threadIdx.x == 0)
    while (*flag == 0) {
    }
  else
    *flag = 1;
}

__global__ void spin_after_barrier(volatile int* flag) {
  __syncthreads();
  if (threadIdx.x == 63)
    while (*flag == 0) {  // BUG: nobody sets the flag
    }
  __syncthreads();
}

TEST(Watchdog, SpinWaitIsReportedInsteadOfHanging) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("EMU_WATCHDOG_SECONDS", "1", 1);
        int* flag;
        cudaMalloc(&flag, sizeof(int));
        cudaMemset(flag, 0, sizeof(int));
        emu::launch(spin_wait, dim3(1), dim3(2), 0, flag);
      },
      ::testing::ExitedWithCode(124), "synccheck: watchdog: kernel spin_wait.*no progress");
}

// The watchdog names the spinning thread and groups the others by where they wait.
TEST(Watchdog, ReportNamesTheRunningThreadAndTheWaitSites) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("EMU_WATCHDOG_SECONDS", "1", 1);
        int* flag;
        cudaMalloc(&flag, sizeof(int));
        cudaMemset(flag, 0, sizeof(int));
        emu::launch(spin_after_barrier, dim3(1), dim3(64), 0, flag);
      },
      ::testing::ExitedWithCode(124),
      "kernel spin_after_barrier.* block \\(0,0,0\\): after [0-9]+ s: thread 63 \\(63,0,0\\) "
      "is running.*1 wait site\\(s\\): __syncthreads at .*test_checks.cpp:[0-9]+: 63 thread\\(s\\) "
      "0..62; 0 thread\\(s\\) exited");
}

__global__ void partial_syncwarp(int* out) {
  extern __shared__ int shm[];
  if (threadIdx.x < 16) {
    shm[threadIdx.x] = 1;
    __syncwarp(0xffff);  // lanes 0..15 only: fine on NVIDIA, unsupported on BI-V100
    out[threadIdx.x] = shm[15 - threadIdx.x];
  }
}

TEST(Synccheck, PartialMaskSyncwarpIsReportedWhereTheProfileLacksIt) {
  ChecksOn on(emu::check_synccheck);
  int* out;
  ASSERT_EQ(cudaMalloc(&out, 64 * 4), cudaSuccess);
  cudaError_t e;
  emu::use_profile("h200");
  std::string err =
      stderr_of([&] { e = emu::launch(partial_syncwarp, dim3(1), dim3(32), 64, out); });
  EXPECT_EQ(e, cudaSuccess) << err;
  emu::use_profile("bi-v100");
  err = stderr_of([&] { e = emu::launch(partial_syncwarp, dim3(1), dim3(64), 64, out); });
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  EXPECT_NE(err.find("synccheck: kernel partial_syncwarp"), std::string::npos) << err;
  EXPECT_NE(err.find("partial mask (lanes 0..15)"), std::string::npos) << err;
  cudaFree(out);
}
