// Global-memory traffic counts (emu/traffic.h). This file is compiled with the race
// instrumentation; traffic_plain_kernel.cpp is not. Each kernel's loads and stores are
// known, so the counts are asserted exactly.
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>
#include <emu/traffic.h>
#include <cstdint>
#include <vector>

void launch_plain_copy(const float* in, float* out, int n);  // traffic_plain_kernel.cpp

namespace traffic_kernels {

// Thread t of block b: reads in[b * blockDim + t] once, writes out[...] once; a shared
// array and locals in between (not global memory: not counted).
__global__ void copy_through_shared(const float* in, float* out) {
  extern __shared__ float stage[];
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  stage[threadIdx.x] = in[i];
  __syncthreads();
  float local[4];
  for (int k = 0; k < 4; ++k) local[k] = stage[blockDim.x - 1 - threadIdx.x] + k;
  out[i] = local[3];
}

// Every thread reads the whole 16-element row (16 loads of 4 bytes), then thread 0
// writes one 16-byte vector.
__global__ void row_per_thread(const float* row, float4* out) {
  float s = 0.f;
  for (int k = 0; k < 16; ++k) s += row[k];
  if (threadIdx.x == 0) out[blockIdx.x] = float4{s, s, s, s};
}

}  // namespace traffic_kernels

namespace {

struct Buffer {
  explicit Buffer(std::size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~Buffer() { cudaFree(p); }
  void* p = nullptr;
};

class Traffic : public ::testing::Test {
 protected:
  void SetUp() override {
    emu::take_launch_traffic();
    emu::set_count_traffic(true);
  }
  void TearDown() override {
    emu::set_count_traffic(false);
    emu::set_checks(emu::check_none);
    emu::set_host_threads(0);
  }
};

// A wrong variant this catches: counting shared-memory or stack accesses (the kernel's
// shared reads and local array would add 4 + 16 bytes per thread).
TEST_F(Traffic, ExactBytesPerLaunchAndPerAllocation) {
  const int blocks = 3, threads = 128, n = blocks * threads;
  Buffer in(n * 4), out(n * 4), untouched(64);
  ASSERT_EQ(emu::launch(traffic_kernels::copy_through_shared, dim3(blocks), dim3(threads),
                        threads * 4, static_cast<const float*>(in.p), static_cast<float*>(out.p)),
            cudaSuccess);
  const auto log = emu::take_launch_traffic();
  ASSERT_EQ(log.size(), 1u);
  const emu::LaunchTraffic& t = log[0];
  EXPECT_TRUE(t.instrumented);
  EXPECT_NE(t.kernel.find("copy_through_shared"), std::string::npos);
  EXPECT_EQ(t.bytes_read, std::uint64_t(n) * 4);
  EXPECT_EQ(t.bytes_written, std::uint64_t(n) * 4);
  ASSERT_NE(t.find(in.p), nullptr);
  EXPECT_EQ(t.find(in.p)->bytes_read, std::uint64_t(n) * 4);
  EXPECT_EQ(t.find(in.p)->bytes_written, 0u);
  EXPECT_EQ(t.find(out.p)->bytes_read, 0u);
  EXPECT_EQ(t.find(out.p)->bytes_written, std::uint64_t(n) * 4);
  EXPECT_EQ(t.find(untouched.p)->bytes_read + t.find(untouched.p)->bytes_written, 0u);
  EXPECT_EQ(emu::take_launch_traffic().size(), 0u);  // taken
}

// Repeated loads of the same bytes count each time (no cache), and a vector store its
// full 16 bytes. Caught: counting distinct bytes (64 instead of 64 * threads * blocks).
TEST_F(Traffic, RepeatedLoadsCountEachTime) {
  const int blocks = 2, threads = 64;
  Buffer row(64), out(blocks * 16);
  ASSERT_EQ(emu::launch(traffic_kernels::row_per_thread, dim3(blocks), dim3(threads), 0,
                        static_cast<const float*>(row.p), static_cast<float4*>(out.p)),
            cudaSuccess);
  const auto log = emu::take_launch_traffic();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].find(row.p)->bytes_read, std::uint64_t(blocks) * threads * 64);
  EXPECT_EQ(log[0].find(out.p)->bytes_written, std::uint64_t(blocks) * 16);
}

// The counts do not depend on the host threads that run the blocks (each counts its own,
// merged at the end), nor on racecheck/initcheck, whose extra passes replay the launch.
// Caught: counting every pass (3x under racecheck, 4x with initcheck too).
TEST_F(Traffic, SameCountsOnAnyHostThreadsAndUnderChecks) {
  const int blocks = 8, threads = 64, n = blocks * threads;
  Buffer in(n * 4), out(n * 4);
  std::vector<std::uint64_t> reads;
  for (int variant = 0; variant < 3; ++variant) {
    emu::set_host_threads(variant == 1 ? 2 : 1);
    emu::set_checks(variant == 2 ? emu::check_all : emu::check_none);
    ASSERT_EQ(emu::launch(traffic_kernels::copy_through_shared, dim3(blocks), dim3(threads),
                          threads * 4, static_cast<const float*>(in.p), static_cast<float*>(out.p)),
              cudaSuccess);
    const auto log = emu::take_launch_traffic();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].bytes_read, std::uint64_t(n) * 4) << "variant " << variant;
    EXPECT_EQ(log[0].bytes_written, std::uint64_t(n) * 4) << "variant " << variant;
  }
}

// Off: nothing is logged. An uninstrumented kernel: logged with instrumented = false.
TEST_F(Traffic, OffLogsNothingAndUninstrumentedSaysSo) {
  Buffer in(256), out(256);
  emu::set_count_traffic(false);
  ASSERT_EQ(emu::launch(traffic_kernels::copy_through_shared, dim3(1), dim3(64), 256,
                        static_cast<const float*>(in.p), static_cast<float*>(out.p)),
            cudaSuccess);
  EXPECT_EQ(emu::take_launch_traffic().size(), 0u);
  emu::set_count_traffic(true);
  launch_plain_copy(static_cast<const float*>(in.p), static_cast<float*>(out.p), 64);
  const auto log = emu::take_launch_traffic();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_FALSE(log[0].instrumented);
  EXPECT_EQ(log[0].bytes_read + log[0].bytes_written, 0u);
}

}  // namespace
