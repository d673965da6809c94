// This project's kernels (fp32 V1, V2 and the reduce, instrumented for racecheck's hazard
// mode) on small grids on both warp widths: no hazard, no finding of any check. A kernel
// that misses a barrier, or the instrumentation not reaching the kernels (the "no
// instrumented memory access" note), fails this.
#include <gtest/gtest.h>

#include <emu/checks.h>
#include <string>

#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::test {
namespace {

using namespace pagedattn::testing;

TEST(KernelsHazard, Fp32KernelsHaveNoHazard) {
  emu::set_checks(emu::check_all);
  Options opt;
  opt.partition_size = 64;
  for (int head_size : {64, 128}) {
    UniformSpec c;
    c.head_size = head_size;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.seq_lens = {70, 5};  // 2 partitions of 64, a partial last block, GQA
    c.seed = 3 + head_size;
    const Judge judge(uniform_case(c));
    for (const char* profile : {"h200", "bi-v100"})
      for (Kernel k : {Kernel::v1, Kernel::v2}) {
        ::testing::internal::CaptureStderr();
        const Outputs o = run_kernel(judge.input(), k, profile, opt);
        const std::string err = ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(err, "") << profile << " head " << head_size << (k == Kernel::v1 ? " V1" : " V2");
        const Verdict v = judge.verdict(o.out, k, opt, profile);
        EXPECT_LE(v.worst, 1.0) << v.where;
      }
  }
  emu::set_checks(emu::check_none);
}

}  // namespace
}  // namespace pagedattn::test
