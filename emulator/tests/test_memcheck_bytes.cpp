// memcheck at byte granularity, and stray accesses outside every allocation: each is
// reported by the check (or, without checks, still named) instead of passing unnoticed or
// ending in a bare SIGSEGV.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <emu/cuda_runtime.h>
#include <string>

__global__ void read_byte(const unsigned char* in, unsigned char* out, int i) {
  out[0] = in[i];
}
__global__ void write_byte(unsigned char* out, int i) {
  out[i] = 7;
}
__global__ void read_float(const float* in, float* out, int i) {
  out[0] = in[i];
}
// A block-table row off by one, in miniature: thread 5 of block 1 reads through a pointer
// that lies outside every allocation.
__global__ void stray_read(const float* wild, float* out) {
  if (blockIdx.x == 1 && threadIdx.x == 5) out[0] = wild[0];
}

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

// An address nothing may touch: a reserved PROT_NONE region no allocation owns.
const float* wild_pointer() {
  static void* hole = mmap(nullptr, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return static_cast<const float*>(hole) + 1000;
}

}  // namespace

// With allocations flush to 16 bytes, a read 1..15 bytes past a 10-byte allocation
// returned the canary unnoticed; flush to the byte, the first byte past faults.
TEST(MemcheckBytes, OneByteReadPastTheEndIsReported) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_memcheck);
  unsigned char *in, *out;
  ASSERT_EQ(cudaMalloc(&in, 10), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, 1), cudaSuccess);
  cudaError_t e;
  std::string err = stderr_of([&] { e = emu::launch(read_byte, dim3(1), dim3(1), 0, in, out, 9); });
  EXPECT_EQ(e, cudaSuccess) << "byte 9 is the last in bounds: " << err;
  err = stderr_of([&] { e = emu::launch(read_byte, dim3(1), dim3(1), 0, in, out, 10); });
  EXPECT_EQ(e, cudaErrorIllegalAddress) << err;
  EXPECT_NE(err.find("memcheck: invalid read of device allocation"), std::string::npos) << err;
  EXPECT_NE(err.find("(10 bytes) at offset 10 (past its end) by thread (0,0,0) of block (0,0,0) "
                     "in kernel read_byte"),
            std::string::npos)
      << err;
  cudaFree(in);
  cudaFree(out);
}

TEST(MemcheckBytes, ReadAndWritePastTheEndByAnyCountAreReported) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_memcheck);
  float *in, *out;
  ASSERT_EQ(cudaMalloc(&in, 3 * sizeof(float)), cudaSuccess);  // 12 bytes: 4 of old slack
  ASSERT_EQ(cudaMalloc(&out, sizeof(float)), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(in) % 4, 0u) << "aligned as its size allows";
  for (int i : {3, 4, 100, 1023}) {
    cudaError_t e;
    std::string err =
        stderr_of([&] { e = emu::launch(read_float, dim3(1), dim3(1), 0, in, out, i); });
    EXPECT_EQ(e, cudaErrorIllegalAddress) << "index " << i << ": " << err;
    EXPECT_NE(err.find("invalid read of device allocation"), std::string::npos) << err;
    EXPECT_NE(err.find("at offset " + std::to_string(4 * i) + " (past its end)"), std::string::npos)
        << err;
  }
  unsigned char* bytes;
  ASSERT_EQ(cudaMalloc(&bytes, 13), cudaSuccess);
  cudaError_t e;
  std::string err = stderr_of([&] { e = emu::launch(write_byte, dim3(1), dim3(1), 0, bytes, 13); });
  EXPECT_EQ(e, cudaErrorIllegalAddress) << err;
  EXPECT_NE(err.find("invalid write of device allocation"), std::string::npos) << err;
  EXPECT_NE(err.find("(13 bytes) at offset 13 (past its end)"), std::string::npos) << err;
  cudaFree(bytes);
  cudaFree(in);
  cudaFree(out);
}

// Outside every allocation: a finding naming the address, the nearest allocation and the
// offset from it, thread, block and kernel; the process ends non-zero, with what it had
// buffered on stdout written first.
TEST(MemcheckBytes, StrayReadIsReportedAndEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        dup2(2, 1);  // stdout into the captured stderr, fully buffered (not a terminal)
        std::setvbuf(stdout, nullptr, _IOFBF, 4096);
        emu::set_checks(emu::check_memcheck);
        float* out;
        cudaMalloc(&out, sizeof(float));
        std::printf("buffered-before-the-fault ");
        emu::launch(stray_read, dim3(2), dim3(32), 0, wild_pointer(), out);
      },
      ::testing::ExitedWithCode(139),
      // The nearest region depends on where mmap placed the hole: the 4-byte allocation or
      // (under ASan's address layout) the launch's guarded shared-memory pool.
      "buffered-before-the-fault .*memcheck: invalid read at address 0x[0-9a-f]+, outside every "
      "device allocation; nearest: (device allocation #[0-9]+ \\(4 bytes\\)|dynamic shared memory "
      "'EMU_DYNAMIC_SHARED' \\([0-9]+ bytes\\)) at 0x[0-9a-f]+, offset -?[0-9]+ by thread "
      "\\(5,0,0\\) of block \\(1,0,0\\) in kernel stray_read");
}

TEST(MemcheckBytes, StrayReadWithoutChecksStillNamesKernelAndBlock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        emu::set_checks(emu::check_none);
        float* out;
        cudaMalloc(&out, sizeof(float));
        emu::launch(stray_read, dim3(2), dim3(32), 0, wild_pointer(), out);
      },
      ::testing::ExitedWithCode(139),
      "emu: invalid read at address 0x[0-9a-f]+.* by thread \\(5,0,0\\) of block \\(1,0,0\\) in "
      "kernel stray_read");
}

// Freed device memory is kept mapped for reuse (memory.cpp's cache), but wholly
// inaccessible until an allocation takes it again: a kernel reading through a freed
// pointer is a stray access, as it was when cudaFree unmapped it. A cache that left freed
// pages readable fails here.
TEST(MemcheckBytes, ReadThroughAFreedPointerIsAStrayAccess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        emu::set_checks(emu::check_memcheck);
        float* freed;
        float* out;
        cudaMalloc(&out, sizeof(float));  // first: it must not take the freed mapping
        cudaMalloc(&freed, 4096 * sizeof(float));
        cudaMemset(freed, 0, 4096 * sizeof(float));
        cudaFree(freed);
        emu::launch(stray_read, dim3(2), dim3(32), 0, static_cast<const float*>(freed), out);
      },
      ::testing::ExitedWithCode(139),
      "memcheck: invalid read at address 0x[0-9a-f]+, outside every device allocation.* by "
      "thread \\(5,0,0\\) of block \\(1,0,0\\) in kernel stray_read");
}

// An allocation of a length freed before reuses that mapping: it starts poisoned (0xff,
// never the old contents) and its guard still catches the first byte past its end.
TEST(MemcheckBytes, AReusedAllocationStartsPoisonedAndGuarded) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_memcheck);
  constexpr std::size_t n = 3000;
  unsigned char *first, *out;
  ASSERT_EQ(cudaMalloc(&first, n), cudaSuccess);
  ASSERT_EQ(cudaMemset(first, 0x11, n), cudaSuccess);
  ASSERT_EQ(cudaFree(first), cudaSuccess);
  unsigned char* again;
  ASSERT_EQ(cudaMalloc(&again, n), cudaSuccess);
  EXPECT_EQ(again, first) << "the same length takes the freed mapping (the path under test)";
  ASSERT_EQ(cudaMalloc(&out, 1), cudaSuccess);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(again[i], 0xff) << "byte " << i;
  cudaError_t e;
  std::string err =
      stderr_of([&] { e = emu::launch(read_byte, dim3(1), dim3(1), 0, again, out, int(n) - 1); });
  EXPECT_EQ(e, cudaSuccess) << err;
  err = stderr_of([&] { e = emu::launch(read_byte, dim3(1), dim3(1), 0, again, out, int(n)); });
  EXPECT_EQ(e, cudaErrorIllegalAddress) << err;
  EXPECT_NE(err.find("(3000 bytes) at offset 3000 (past its end)"), std::string::npos) << err;
  cudaFree(again);
  cudaFree(out);
}
