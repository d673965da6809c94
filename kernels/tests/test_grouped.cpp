// The grouped kernels (Options::grouped) over GQA ratios 2..16: bit-identical to the
// per-query-head kernels (every byte of out, exp_sums, max_logits, tmp_out), within the
// proven bound, and within 32 KB of shared memory at every supported shape. The digest
// grid (kernels.output_digests_grouped) covers every dtype, cache, numerics and rare path
// at ratio 2; this covers the ratios, the uneven splits (ratio 5 or 7 over blocks of at
// most group_max_heads heads) and head size 256's smaller groups.
#include <gtest/gtest.h>

#include <emu/traffic.h>
#include <string>

#include "pagedattn/resources.h"
#include "pagedattn/supported.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace {

using namespace pagedattn;
using namespace pagedattn::testing;

// The names of the attention kernels a call launched (the emulator's traffic log names
// every launch, instrumented or not).
std::string attention_kernels(const Case& c, Kernel k, const std::string& profile, const Options& o,
                              Outputs* out) {
  emu::take_launch_traffic();
  emu::set_count_traffic(true);
  *out = run_kernel(c, k, profile, o);
  emu::set_count_traffic(false);
  std::string names;
  for (const emu::LaunchTraffic& t : emu::take_launch_traffic())
    if (t.kernel.find("attention_kernel") != std::string::npos) names += t.kernel + ";";
  return names;
}

// Wrong variants caught: any per-head difference of the grouped arithmetic (e.g. a spare
// slot that writes, a head's dest or slope taken from its neighbour, the last block of an
// uneven split serving too many heads), and Options::grouped not reaching the launch.
// Ratios 2..16 at head size 128; every other head size at two ratios (one block's worth
// and an uneven split past group_max_heads); the dtype, block size and cache rotate so
// every dtype, block size and cache kind meets G = 8 and G = 4 (head sizes above 128).
TEST(Grouped, BitIdenticalToPerHeadKernelsOverRatios) {
  const DType dtypes[] = {DType::f16, DType::bf16, DType::f32};
  const CacheFormat caches[] = {CacheFormat::same, CacheFormat::fp8_e4m3, CacheFormat::same,
                                CacheFormat::fp8_e5m2};
  int runs = 0, shapes = 0;
  for (int hs : kHeadSizes) {
    for (int ratio = 2; ratio <= 16; ++ratio) {
      if (hs != 128 && ratio != 3 + hs % 5 && ratio != 9 + hs % 7) continue;
      UniformSpec s;
      s.scalar = dtypes[(ratio + hs / 8) % 3];
      s.block_size = kBlockSizes[(ratio + hs / 16) % 3];
      s.cache = caches[(ratio + hs / 8) % 4];
      // fp8 keys come in 16-element chunks: head size 120 has no fp8 instantiation.
      if (hs % 16 != 0) s.cache = CacheFormat::same;
      s.head_size = hs;
      s.num_kv_heads = 2;
      s.num_heads = 2 * ratio;
      s.seq_lens = {70, 1, 0, 150};
      s.alibi = ratio % 5 == 0;
      s.seed = 100 + ratio * 7 + hs;
      const Judge judge(uniform_case(s));
      ++shapes;
      for (const char* profile : {"h200", "bi-v100"}) {
        for (Kernel k : {Kernel::v1, Kernel::v2}) {
          Options o;
          o.partition_size = 64;
          Outputs plain, grouped;
          attention_kernels(judge.input(), k, profile, o, &plain);
          o.grouped = true;
          const std::string names = attention_kernels(judge.input(), k, profile, o, &grouped);
          const std::string what = "ratio " + std::to_string(ratio) + " head " +
                                   std::to_string(hs) + " block " + std::to_string(s.block_size) +
                                   " " + dtype_name(s.scalar) + " " + profile + " " +
                                   kernel_name(k);
          EXPECT_NE(names.find("grouped_attention_kernel"), std::string::npos) << what;
          EXPECT_EQ(grouped.out_bytes, plain.out_bytes) << what;
          EXPECT_EQ(grouped.exp_sums, plain.exp_sums) << what;
          EXPECT_EQ(grouped.max_logits, plain.max_logits) << what;
          EXPECT_EQ(grouped.tmp_out, plain.tmp_out) << what;
          const Verdict v = judge.verdict(grouped.out, k, o, profile);
          EXPECT_LE(v.worst, 1.0) << what << ": " << v.where;
          ++runs;
        }
      }
    }
  }
  EXPECT_EQ(shapes, 15 + 2 * (HeadSizeList::size - 1));
  EXPECT_EQ(runs, 4 * shapes);
}

// G's two limits (resources.h, group_max_heads): 8 heads up to head size 128, else 4, and at
// most kGroupedAccPerLane partial P.V sums a lane, which only warp 32 at block size 32
// reaches: 7 heads at head sizes 120 and 128, 3 at 256 (kernels/README.md, "Registers": at
// 8 and 4, gfx1030 spilled). Caught: the sums' bound dropped (G = 8 at head size 128 there).
TEST(Grouped, HeadsPerBlockBoundedByPartialSumsALane) {
  for (int hs : kHeadSizes)
    for (int ws : {32, 64})
      for (int bs : kBlockSizes) {
        const int g = group_max_heads(ws, hs, bs);
        EXPECT_LE(g * pv_rows_per_lane(ws, hs, bs), kGroupedAccPerLane) << hs << " " << ws;
        const bool bounded = ws == 32 && bs == 32 && (hs == 120 || hs == 128 || hs == 256);
        EXPECT_EQ(g, bounded ? (hs == 256 ? 3 : 7) : (hs <= 128 ? 8 : 4))
            << "head " << hs << " warp " << ws << " block " << bs;
      }
}

// Every supported head size, both warp widths, every block size (G depends on it), every
// partition size (multiples of 8 from 64 to 4096) and ratios 2..16: a block's heads within
// G, V2's grouped block within 32 KB, and 48 KB;
// V1's wherever the one-head V1 block fits 32 KB less the larger collective. Caught: a
// split that takes group_max_heads heads without the budget (head size 256, partitions
// of 4096: 4 heads need 70 KB).
TEST(Grouped, SharedMemoryWithinBudgetAtEverySupportedShape) {
  for (int hs : kHeadSizes)
    for (int ws : {32, 64})
      for (int bs : kBlockSizes)
        for (int ratio = 2; ratio <= 16; ++ratio)
          for (int ps = 64; ps <= 4096; ps += 8) {
            Workload w;
            w.head_size = hs;
            w.block_size = bs;
            w.num_kv_heads = 8;
            w.num_heads = 8 * ratio;
            w.partition_size = ps;
            w.max_seq_len = 100000;
            const LaunchResources r = v2_grouped_resources(ws, w);
            ASSERT_LE(r.dynamic_smem_bytes, kGroupedSmemBudget) << hs << " " << ws << " " << ps;
            ASSERT_LE(r.groups.heads_per_block, group_max_heads(ws, hs, bs)) << hs << " " << bs;
            ASSERT_GE(r.groups.heads_per_block * r.groups.blocks_per_kv_head, ratio);
            ASSERT_LT((r.groups.heads_per_block - 1) * r.groups.blocks_per_kv_head, ratio);
            ASSERT_EQ(r.grid.x, 8u * r.groups.blocks_per_kv_head);
            w.max_seq_len = ps;  // V1 at this length
            const LaunchResources v1 = v1_grouped_resources(ws, w);
            const std::int64_t extra =
                4 * (grouped_heads_offset(ws, hs, bs) - attn_q_offset(ws));  // the collective
            if (v1_resources(ws, w).dynamic_smem_bytes + extra <= kGroupedSmemBudget)
              ASSERT_LE(v1.dynamic_smem_bytes, kGroupedSmemBudget) << hs << " " << ws << " " << ps;
          }
}

// A grouped block of one head reads what the per-head kernel reads, with a larger
// collective: Options::grouped runs the per-head kernel there (grouped_launch_fallback_
// reason), so grouped V1 runs up to V1's own limit, with the same bits. Caught: grouped V1
// refused just below that limit (shown: 12,130 tokens on bi-v100 needed 49,216 bytes
// before this rule), or the per-head kernel run where two heads fit a block.
TEST(Grouped, OneHeadPerBlockRunsThePerHeadKernelUpToV1sLimit) {
  const std::int64_t longest = v1_max_seq_len(64, 128, 16, 48 * 1024);  // bi-v100
  UniformSpec s;
  s.scalar = DType::f16;
  s.head_size = 128;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.seq_lens = {static_cast<int>(longest), 3};
  const Case c = uniform_case(s);
  Workload w;
  w.num_heads = 4;
  w.num_kv_heads = 2;
  w.max_seq_len = longest;
  ASSERT_NE(grouped_launch_fallback_reason(Kernel::v1, 64, w), nullptr);
  EXPECT_EQ(grouped_launch_fallback_reason(Kernel::v2, 64, w), nullptr);
  w.max_seq_len = 1001;
  EXPECT_EQ(grouped_launch_fallback_reason(Kernel::v1, 64, w), nullptr);
  Options o;
  Outputs plain, grouped;
  attention_kernels(c, Kernel::v1, "bi-v100", o, &plain);
  o.grouped = true;
  const std::string names = attention_kernels(c, Kernel::v1, "bi-v100", o, &grouped);
  EXPECT_EQ(names.find("grouped_attention_kernel"), std::string::npos) << names;
  EXPECT_EQ(grouped.out_bytes, plain.out_bytes);
}

// The grouped kernels are built for every supported shape (supported.h): grouped_fallback_
// reason names only one query head per KV head, and there Options::grouped runs the
// per-head kernels. Caught: a shape that claims grouped but has no grouped instantiation
// (dispatch refuses the launch: every (dtype, cache, head, block) is launched here), or a
// ratio-1 launch that runs grouped anyway.
TEST(Grouped, EveryShapeHasGroupedKernelsAndRatioOneFallsBack) {
  int launched = 0;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (int hs : kHeadSizes)
      for (int bs : kBlockSizes)
        for (CacheFormat cf : {CacheFormat::same, CacheFormat::fp8_e4m3}) {
          if (cf != CacheFormat::same && hs % 16 != 0) continue;  // no fp8 at head size 120
          Workload w;
          w.num_heads = 8;
          w.num_kv_heads = 2;
          w.head_size = hs;
          w.block_size = bs;
          w.io_elem_bytes = static_cast<int>(dtype_size(dt));
          ASSERT_EQ(grouped_fallback_reason(w), nullptr) << hs << " " << bs;
          w.num_kv_heads = 8;
          const char* why = grouped_fallback_reason(w);
          ASSERT_NE(why, nullptr);
          EXPECT_NE(std::string(why).find("one query head"), std::string::npos) << why;
          UniformSpec s;
          s.scalar = dt;
          s.cache = cf;
          s.head_size = hs;
          s.block_size = bs;
          s.num_kv_heads = 1;
          s.num_heads = 2;
          s.seq_lens = {9};
          s.seed = 7 + hs + bs;
          const Case c = uniform_case(s);
          Options o;
          o.grouped = true;
          Outputs out;
          const std::string what = std::string(dtype_name(dt)) + " head " + std::to_string(hs) +
                                   " block " + std::to_string(bs) + " " + cache_format_name(cf);
          const std::string names = attention_kernels(c, Kernel::v2, "h200", o, &out);
          EXPECT_NE(names.find("grouped_attention_kernel"), std::string::npos) << what << names;
          ++launched;
        }
  EXPECT_EQ(launched, 3 * 3 * (2 * HeadSizeList::size - 1));
  UniformSpec s;  // ratio 1: the per-head kernel
  s.num_kv_heads = 2;
  s.num_heads = 2;
  s.seq_lens = {70, 5};
  Options o;
  o.grouped = true;
  Outputs out;
  const std::string names = attention_kernels(uniform_case(s), Kernel::v2, "bi-v100", o, &out);
  EXPECT_EQ(names.find("grouped_attention_kernel"), std::string::npos) << names;
  EXPECT_NE(names.find("attention_kernel"), std::string::npos) << names;
}

}  // namespace
