// This project's kernels, instrumented (every load and store reaches memcheck's exact
// shared-memory bounds), under memcheck at every supported shape: each head size, block
// size, scalar type, cache format and warp width, V1 and V2 with its reduce, on a small
// batch whose partitions of 64 tokens span several cache blocks and end mid-block. No
// finding, no note (the note would mean the instrumentation did not reach the kernels),
// and the output within its proven bound. A launch that asks less shared memory than the
// kernel uses fails this: V1's size cut by 16 bytes in kernels/src/resources.cpp (run
// once) gave "invalid write of dynamic shared memory 'smem' at byte offset 528, past its
// end (the launch gave 528 bytes)" at the first call, inside the page that guard pages
// alone leave open.
#include <gtest/gtest.h>

#include <emu/checks.h>
#include <string>

#include "pagedattn/validate.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::test {
namespace {

using namespace pagedattn::testing;

// V1 and V2 (with its reduce) on the case under memcheck: nothing on stderr (no finding,
// no note), the output within its proven bound.
void expect_clean(const UniformSpec& spec, const Options& opt, const char* profile,
                  const std::string& what) {
  const Judge judge(uniform_case(spec));
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    const std::string where = what + (k == Kernel::v1 ? " V1" : " V2");
    ::testing::internal::CaptureStderr();
    const Outputs o = run_kernel(judge.input(), k, profile, opt);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << where;
    const Verdict v = judge.verdict(o.out, k, opt, profile);
    EXPECT_LE(v.worst, 1.0) << where << ": " << v.where;
  }
}

TEST(KernelsMemcheck, EverySupportedShapeIsClean) {
  emu::set_checks(emu::check_memcheck);
  const emu::MemcheckCoverage before = emu::memcheck_coverage();
  int calls = 0, variant = 0;
  for (const char* profile : {"h200", "bi-v100"})
    for (DType scalar : {DType::f32, DType::f16, DType::bf16})
      for (CacheFormat cache : {CacheFormat::same, CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2})
        for (int head_size : kHeadSizes)
          for (int block_size : kBlockSizes) {
            if (head_size == 120 && cache != CacheFormat::same) continue;  // not supported
            UniformSpec c;
            Options opt;
            opt.partition_size = 64;
            c.scalar = scalar;
            c.cache = cache;
            c.head_size = head_size;
            c.block_size = block_size;
            c.num_heads = 2;
            c.num_kv_heads = 1;
            c.seq_lens = {70, 5};  // 2 partitions of 64, a last block part full; one short row
            // ALiBi and vLLM's numerics (probabilities rounded to the scalar type in shared
            // memory) on every other shape: their code paths, at no extra calls.
            c.alibi = ++variant % 2 == 0;
            opt.numerics = variant % 4 == 1 ? Numerics::vllm_compatible : Numerics::exact_fp32;
            c.seed = static_cast<std::uint64_t>(variant);
            expect_clean(c, opt, profile,
                         std::string(profile) + " " + dtype_name(scalar) + " " +
                             cache_format_name(cache) + " head " + std::to_string(head_size) +
                             " block " + std::to_string(block_size));
            calls += 2;
          }
  const emu::MemcheckCoverage after = emu::memcheck_coverage();
  // V1 is one launch, V2 two (attention, reduce): every one ran instrumented code.
  EXPECT_EQ(after.launches - before.launches, after.instrumented - before.instrumented);
  EXPECT_EQ(after.launches - before.launches, 3u * calls / 2);
  emu::set_checks(emu::check_none);
}

// Longer rows at the smallest, the default and the largest partition size: V1's logits
// past its P.V scratch, V2's partitions full, partial and single, a one-token row.
TEST(KernelsMemcheck, LongRowsAtEveryPartitionSizeAreClean) {
  emu::set_checks(emu::check_memcheck);
  for (const char* profile : {"h200", "bi-v100"})
    for (int partition_size : {kMinPartitionSize, 512, kMaxPartitionSize}) {
      UniformSpec c;
      Options opt;
      c.scalar = DType::f16;
      c.head_size = 128;
      c.block_size = 16;
      c.num_heads = 2;
      c.num_kv_heads = 1;
      c.seq_lens = {4100, 1, 513};
      opt.partition_size = partition_size;
      c.alibi = true;
      expect_clean(c, opt, profile,
                   std::string(profile) + " partition " + std::to_string(partition_size));
    }
  emu::set_checks(emu::check_none);
}

}  // namespace
}  // namespace pagedattn::test
