// Run by ctest with EMU_PROFILE=bi-v100 and EMU_CHECKS=memcheck,synccheck.
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>

#include <cstdlib>

TEST(Environment, ProfileAndChecksComeFromTheEnvironment) {
  const char* profile = std::getenv("EMU_PROFILE");
  ASSERT_NE(profile, nullptr) << "run through ctest, which sets EMU_PROFILE";
  EXPECT_EQ(emu::current_profile().name, "bi-v100");
  EXPECT_EQ(emu::current_profile().warp_size, 64);
  EXPECT_EQ(emu::enabled_checks(), unsigned(emu::check_memcheck | emu::check_synccheck));
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_EQ(p.warpSize, 64);
}
