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
// One KV head per query head: the per-head rules 1 to 5 (G1: nothing to group).
Workload call(int num_seqs, int num_heads, std::int64_t max_seq_len) {
  Workload w;
  w.num_seqs = num_seqs;
  w.num_heads = num_heads;
  w.num_kv_heads = num_heads;
  w.head_size = 128;
  w.block_size = 16;
  w.max_seq_len = max_seq_len;
  w.partition_size = 512;
  return w;
}

void expect_choice(const VersionChoice& c, Version v, VersionRule rule) {
  EXPECT_EQ(c.version, v) << c.reason;
  EXPECT_EQ(c.rule, rule) << c.reason;
  EXPECT_FALSE(c.reason.empty());
}

// Each rule decides where it should, and says so as a typed rule (which the perf::Device
// overload branches on) and in words.
TEST(VersionSelect, FollowsTheDeviceFacts) {
  DeviceFacts bi{"bi-v100", 64, 16, 48 * 1024};
  DeviceFacts h200{"h200", 32, 132, 227 * 1024};
  const auto expect = expect_choice;
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
  EXPECT_FALSE(choose_version(h200, call(64, 32, 4000)).grouped);
}

// 32 query heads over 8 KV heads, head 128, fp16, block 16: the grouped kernels' shapes.
Workload gqa(int num_seqs, std::int64_t max_seq_len) {
  Workload w = call(num_seqs, 32, max_seq_len);
  w.num_kv_heads = 8;
  return w;
}

// Wrong variants caught: a chooser that never picks grouped (the headline), one that picks
// grouped where the kernels fall back (one query head per KV head) or not grouped at a
// shape that has grouped kernels (f32, head size 96, block size 32), one
// that ignores the grouped launch's shared memory (`tiny`), one that keeps grouped V1 where
// its blocks serve one head each (rule 6 / G3), and rule 4 counting query heads for the
// grouped grid (64 x 8 = 512 blocks < 528 must give V2). Shown: each assertion failed once
// with the matching line of choose_version removed or inverted.
TEST(VersionSelect, GroupedWhereBuiltAndShared) {
  DeviceFacts bi{"bi-v100", 64, 16, 48 * 1024};
  DeviceFacts h200{"h200", 32, 132, 227 * 1024};
  const auto grouped = [](const VersionChoice& c, Version v, VersionRule rule) {
    EXPECT_TRUE(c.grouped) << c.grouped_reason;
    EXPECT_EQ(c.grouped_rule, GroupedRule::shares_kv) << c.grouped_reason;
    expect_choice(c, v, rule);
  };
  // The headline: grouped V2, 4 heads per block (resources.h: head_groups).
  for (const DeviceFacts& d : {bi, h200}) {
    const VersionChoice c = choose_version(d, gqa(1, 100000));
    grouped(c, Version::v2, VersionRule::v1_does_not_fit);
    EXPECT_NE(c.grouped_reason.find("once for 4 query heads"), std::string::npos)
        << c.grouped_reason;
  }
  // One partition: grouped V1 (4 heads' 304 logits fit the 32 KB budget).
  grouped(choose_version(bi, gqa(1, 300)), Version::v1, VersionRule::one_partition);
  // Rule 4 on the grouped grid: 64 sequences x 8 KV heads = 512 < 4 x 132.
  grouped(choose_version(h200, gqa(64, 1000)), Version::v2, VersionRule::grid_needs_partitions);
  // Rule 4 with 2 heads per block at 2,000 tokens: 64 x 8 x 2 = 1024 blocks fill h200.
  const VersionChoice two = choose_version(h200, gqa(64, 2000));
  grouped(two, Version::v1, VersionRule::grid_fills_device);
  EXPECT_EQ(v1_grouped_resources(32, gqa(64, 2000)).groups.heads_per_block, 2);
  // Rule 6: at 4,000 tokens two heads' logits pass 32 KB, grouped V1 would serve one head
  // per block; grouped V2's 512-token partitions still serve 4.
  grouped(choose_version(h200, gqa(64, 4000)), Version::v2, VersionRule::grouped_v1_shares_nothing);
  // G3 without partitions to fall back on: one 4,096-token partition, one head per block.
  Workload one = gqa(64, 4000);
  one.partition_size = 4096;
  const VersionChoice unshared = choose_version(h200, one);
  EXPECT_FALSE(unshared.grouped);
  EXPECT_EQ(unshared.grouped_rule, GroupedRule::one_head_per_block) << unshared.grouped_reason;
  EXPECT_EQ(unshared.version, Version::v1);
  EXPECT_EQ(unshared.rule, VersionRule::one_partition);

  // G1: never grouped where the kernels fall back (one query head per KV head); the reason
  // is grouped_fallback_reason's. The shapes that fell back before the grouped kernels were
  // built for every shape (f32, head size 96, block size 32) now go grouped.
  Workload f32 = gqa(1, 100000), h96 = f32, b32 = f32, mha = f32;
  f32.io_elem_bytes = 4;
  h96.head_size = 96;
  b32.block_size = 32;
  mha.num_kv_heads = 32;
  {
    const VersionChoice c = choose_version(h200, mha);
    EXPECT_FALSE(c.grouped) << c.grouped_reason;
    EXPECT_EQ(c.grouped_rule, GroupedRule::falls_back);
    EXPECT_EQ(c.grouped_reason, grouped_fallback_reason(mha));
    EXPECT_EQ(c.version, Version::v2);
  }
  for (const Workload& w : {f32, h96, b32})
    grouped(choose_version(h200, w), Version::v2, VersionRule::v1_does_not_fit);
  // G4: a device whose 8 KB cannot hold grouped V2's 4 heads (10,496 bytes): per head.
  const DeviceFacts tiny{"tiny", 32, 16, 8 * 1024};
  ASSERT_GT(v2_grouped_resources(32, gqa(1, 100000)).dynamic_smem_bytes, 8 * 1024);
  ASSERT_LE(v2_resources(32, gqa(1, 100000)).dynamic_smem_bytes, 8 * 1024);
  const VersionChoice small = choose_version(tiny, gqa(1, 100000));
  EXPECT_FALSE(small.grouped);
  EXPECT_EQ(small.grouped_rule, GroupedRule::does_not_fit) << small.grouped_reason;
  EXPECT_EQ(small.version, Version::v2);
}

}  // namespace
}  // namespace pagedattn::test
