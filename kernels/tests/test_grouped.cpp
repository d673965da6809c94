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
TEST(Grouped, BitIdenticalToPerHeadKernelsOverRatios) {
  int runs = 0;
  for (int ratio = 2; ratio <= 16; ++ratio) {
    for (int hs : {64, 128, 256}) {
      if (hs != 128 && ratio % 3 != 1) continue;  // 2..16 at 128; 4, 7, 10, 13, 16 else
      UniformSpec s;
      s.scalar = ratio % 2 ? DType::bf16 : DType::f16;
      s.cache = ratio % 4 == 3 ? CacheFormat::fp8_e4m3 : CacheFormat::same;
      s.head_size = hs;
      s.num_kv_heads = 2;
      s.num_heads = 2 * ratio;
      s.seq_lens = {70, 1, 0, 150};
      s.alibi = ratio % 5 == 0;
      s.seed = 100 + ratio * 7 + hs;
      const Judge judge(uniform_case(s));
      for (const char* profile : {"h200", "bi-v100"}) {
        for (Kernel k : {Kernel::v1, Kernel::v2}) {
          Options o;
          o.partition_size = 64;
          Outputs plain, grouped;
          attention_kernels(judge.input(), k, profile, o, &plain);
          o.grouped = true;
          const std::string names = attention_kernels(judge.input(), k, profile, o, &grouped);
          const std::string what = "ratio " + std::to_string(ratio) + " head " +
                                   std::to_string(hs) + " " + profile + " " + kernel_name(k);
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
  EXPECT_EQ(runs, 4 * (15 + 2 * 5));
}

// Every supported head size, both warp widths, every partition size (multiples of 16 and
// of 8, 32 from 64 to 4096) and ratios 2..16: V2's grouped block within 32 KB, and 48 KB;
// V1's wherever the one-head V1 block fits 32 KB less the larger collective. Caught: a
// split that takes group_max_heads heads without the budget (head size 256, partitions
// of 4096: 4 heads need 70 KB).
TEST(Grouped, SharedMemoryWithinBudgetAtEverySupportedShape) {
  for (int hs : kHeadSizes)
    for (int ws : {32, 64})
      for (int ratio = 2; ratio <= 16; ++ratio)
        for (int ps = 64; ps <= 4096; ps += 8) {
          Workload w;
          w.head_size = hs;
          w.num_kv_heads = 8;
          w.num_heads = 8 * ratio;
          w.partition_size = ps;
          w.max_seq_len = 100000;
          const LaunchResources r = v2_grouped_resources(ws, w);
          ASSERT_LE(r.dynamic_smem_bytes, kGroupedSmemBudget) << hs << " " << ws << " " << ps;
          ASSERT_GE(r.groups.heads_per_block * r.groups.blocks_per_kv_head, ratio);
          ASSERT_LT((r.groups.heads_per_block - 1) * r.groups.blocks_per_kv_head, ratio);
          ASSERT_EQ(r.grid.x, 8u * r.groups.blocks_per_kv_head);
          w.max_seq_len = ps;  // V1 at this length
          const LaunchResources v1 = v1_grouped_resources(ws, w);
          const std::int64_t extra =
              4 * (grouped_heads_offset(ws, hs) - attn_q_offset(ws));  // the collective
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

// Outside the grouped shapes (supported.h) Options::grouped runs the per-head kernels, and
// grouped_fallback_reason says why. Caught: a shape that claims grouped but has no grouped
// instantiation (the launch would be refused), or a fallback that launches grouped anyway.
TEST(Grouped, FallsBackToPerHeadKernelsOutsideTheGroupedShapes) {
  struct Shape {
    DType scalar;
    int head_size, block_size;
    const char* reason;  // a word of grouped_fallback_reason's answer
  };
  for (const Shape& sh :
       {Shape{DType::f32, 128, 16, "f16 and bf16"}, Shape{DType::f16, 96, 16, "head sizes"},
        Shape{DType::bf16, 128, 32, "block size"}}) {
    UniformSpec s;
    s.scalar = sh.scalar;
    s.head_size = sh.head_size;
    s.block_size = sh.block_size;
    s.num_kv_heads = 2;
    s.num_heads = 8;
    s.seq_lens = {70, 5};
    const Case c = uniform_case(s);
    Workload w;
    w.num_heads = 8;
    w.num_kv_heads = 2;
    w.head_size = sh.head_size;
    w.block_size = sh.block_size;
    w.io_elem_bytes = static_cast<int>(dtype_size(sh.scalar));
    const char* why = grouped_fallback_reason(w);
    ASSERT_NE(why, nullptr);
    EXPECT_NE(std::string(why).find(sh.reason), std::string::npos) << why;
    Options o;
    o.grouped = true;
    Outputs out;
    const std::string names = attention_kernels(c, Kernel::v2, "bi-v100", o, &out);
    EXPECT_EQ(names.find("grouped_attention_kernel"), std::string::npos) << names;
    EXPECT_NE(names.find("attention_kernel"), std::string::npos) << names;
  }
  Workload w;  // the headline: 32 over 8 heads, 128, f16, block 16
  EXPECT_EQ(grouped_fallback_reason(w), nullptr);
  w.num_kv_heads = w.num_heads;
  EXPECT_NE(grouped_fallback_reason(w), nullptr);
}

}  // namespace
