// Launch resources, V1's shared-memory limit (and the launch refusal exactly there on
// BI-V100's profile), and version selection.
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>
#include "pagedattn/resources.h"
#include "pagedattn/version_select.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::test {
namespace {

TEST(Resources, LayoutNumbers) {
  // warp 32: 4 warps -> 8 reduction floats; q 128; logits max(512, 3 * 128).
  EXPECT_EQ(attention_smem_bytes(32, 128, 512), 4 * (8 + 128 + 512));
  // warp 64: 2 warps -> 4 floats; P.V scratch (1 * 256) exceeds 64 logits.
  EXPECT_EQ(attention_smem_bytes(64, 256, 64), 4 * (4 + 256 + 256));
  Workload w;
  w.num_seqs = 3;
  w.num_heads = 8;
  w.head_size = 128;
  w.max_seq_len = 1025;
  w.partition_size = 512;
  const LaunchResources v2 = v2_resources(32, w);
  EXPECT_EQ(v2.grid.x, 8u);
  EXPECT_EQ(v2.grid.y, 3u);
  EXPECT_EQ(v2.grid.z, 3u);
  EXPECT_EQ(v2.threads_per_block, 128);
  const LaunchResources r = reduce_resources(64, w);
  EXPECT_EQ(r.dynamic_smem_bytes, 4 * (4 + 128));  // independent of the length
  w.block_size = 16;
  w.max_seq_len = 100;
  const LaunchResources v1 = v1_resources(64, w);
  EXPECT_EQ(v1.dynamic_smem_bytes, attention_smem_bytes(64, 128, 112));
}

TEST(Resources, V1MaxSeqLenIsTheLastLengthThatFits) {
  for (int warp : {32, 64}) {
    for (int head : {32, 128, 256}) {
      for (int block : {8, 16, 32}) {
        for (std::int64_t limit : {16 * 1024, 48 * 1024, 64 * 1024, 227 * 1024}) {
          const std::int64_t L = v1_max_seq_len(warp, head, block, limit);
          ASSERT_GT(L, 0);
          EXPECT_LE(attention_smem_bytes(warp, head, v1_partition_tokens(block, L)), limit);
          EXPECT_GT(attention_smem_bytes(warp, head, v1_partition_tokens(block, L + 1)), limit);
        }
      }
    }
  }
}

// On BI-V100's profile V1 launches at its longest length and is refused one token later,
// with a message naming shared memory, and writes nothing.
TEST(Resources, V1RefusedOnBiV100JustPastItsSharedMemory) {
  emu::use_profile("bi-v100");
  // current_profile() returns a copy (a reference into the emulator once dangled after the
  // next use_profile: AddressSanitizer's heap-use-after-free, scripts/test.d/20-sanitizers.sh).
  const emu::Profile prof = emu::current_profile();
  ASSERT_EQ(prof.warp_size, 64);
  testing::UniformSpec c;
  c.scalar = DType::f16;
  c.head_size = 128;
  c.block_size = 16;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.seq_lens = {40};
  const std::int64_t L = v1_max_seq_len(64, 128, 16, prof.shared_memory_per_block_optin);
  c.max_seq_len = static_cast<int>(L);
  const testing::Case fits = testing::uniform_case(c);
  EXPECT_NO_THROW(testing::run_kernel(fits, Kernel::v1, "bi-v100"));
  c.max_seq_len = static_cast<int>(L + 1);
  const testing::Case refused = testing::uniform_case(c);
  try {
    const testing::Outputs o = testing::run_kernel(refused, Kernel::v1, "bi-v100");
    ADD_FAILURE() << "V1 launched at max_seq_len " << L + 1;
  } catch (const LaunchError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("shared memory"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(prof.shared_memory_per_block_optin)), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(L)), std::string::npos) << m;
  }
  // V2 runs the same call.
  Options v2;
  v2.partition_size = 64;
  EXPECT_NO_THROW(testing::run_kernel(refused, Kernel::v2, "bi-v100", v2));
}

// num_seqs, num_heads, max_seq_len; head 128, block 16, partitions of 512.
Workload call(int num_seqs, int num_heads, std::int64_t max_seq_len) {
  Workload w;
  w.num_seqs = num_seqs;
  w.num_heads = num_heads;
  w.num_kv_heads = 1;
  w.head_size = 128;
  w.block_size = 16;
  w.max_seq_len = max_seq_len;
  w.partition_size = 512;
  return w;
}

// Each rule decides where it should, and says so as a typed rule (which the perf::Device
// overload branches on) and in words.
TEST(VersionSelect, FollowsTheDeviceFacts) {
  DeviceFacts bi{"bi-v100", 64, 16, 48 * 1024};
  DeviceFacts h200{"h200", 32, 132, 227 * 1024};
  const auto expect = [](const VersionChoice& c, Version v, VersionRule rule) {
    EXPECT_EQ(c.version, v) << c.reason;
    EXPECT_EQ(c.rule, rule) << c.reason;
    EXPECT_FALSE(c.reason.empty());
  };
  // A long context on BI-V100: V1 does not fit, V2 (vLLM's rule would pick V1 and fail).
  expect(choose_version(bi, call(64, 32, 8192)), Version::v1,
         VersionRule::grid_fills_device);  // 32 KB fits
  expect(choose_version(bi, call(64, 32, 16384)), Version::v2, VersionRule::v1_does_not_fit);
  EXPECT_EQ(vllm_choose_version(call(64, 32, 8192)), Version::v1);
  // One partition: V1.
  expect(choose_version(h200, call(1, 8, 300)), Version::v1, VersionRule::one_partition);
  // Few blocks, several partitions: V2 adds parallelism.
  expect(choose_version(h200, call(1, 8, 4000)), Version::v2, VersionRule::grid_needs_partitions);
  // Many blocks: V1.
  expect(choose_version(h200, call(64, 32, 4000)), Version::v1, VersionRule::grid_fills_device);
  // Past 8192 tokens: V2 (kept from vLLM).
  expect(choose_version(h200, call(64, 32, 10000)), Version::v2, VersionRule::long_sequence);
  expect(choose_version(bi, call(1, 1, 100000)), Version::v2, VersionRule::v1_does_not_fit);
}

}  // namespace
}  // namespace pagedattn::test
