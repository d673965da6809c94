// The judge: the kernels' own output passes against the exact reference within the proven
// bound for our numerics and (looser) for vLLM's; an output moved past its bound fails;
// the verdict's rules for NaN and zero bounds.
#include <gtest/gtest.h>

#include <cmath>

#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::testing {
namespace {

TEST(Judge, KernelOutputPassesAndAMovedElementFails) {
  UniformSpec s;
  s.scalar = DType::f16;
  s.seq_lens = {70, 3};
  const Case c = uniform_case(s);
  Options opt;
  opt.partition_size = 64;
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    const Outputs o = run_kernel(c, k, "h200", opt);
    const Judgement j = judge(c, k, 64, 32, o.out);
    EXPECT_LE(j.worst_ours, 1.0);
    EXPECT_LE(j.worst_vllm, j.worst_ours);  // vLLM's numerics have the larger bound
    // One element moved by twice its bound: judged outside it.
    const ref::Output ex = exact(c);
    BoundSetup setup;
    setup.partition_size = k == Kernel::v2 ? 64 : 0;
    const std::vector<double> b = element_bounds(c, setup, ex);
    std::vector<double> moved = o.out;
    moved[5] = ex.value[5] + 2 * b[5];
    EXPECT_GT(judge(c, k, 64, 32, moved).ours[5], 1.0);
    EXPECT_GT(err_over_bound(c, moved, ex, b).worst, 1.0);
  }
}

TEST(Judge, VerdictRules) {
  ref::Output ex;
  ex.value = {NAN, NAN, 1.0, 1.0, 0.0, 2.0};
  const std::vector<double> bounds = {NAN, NAN, 0.5, 0.5, 0.0, NAN};
  const std::vector<double> got = {NAN, 3.0, INFINITY, 1.25, 0.0, 2.0};
  const std::vector<double> r = errors_over_bound(got, ex, bounds);
  EXPECT_EQ(r[0], 0.0);       // NaN where the exact value is NaN: right
  EXPECT_EQ(r[1], INFINITY);  // a number where NaN is required
  EXPECT_EQ(r[2], INFINITY);  // non-finite where the exact value is finite
  EXPECT_EQ(r[3], 0.5);
  EXPECT_EQ(r[4], 0.0);       // 0 / 0
  EXPECT_EQ(r[5], INFINITY);  // a NaN bound on a finite exact value fails loudly
}

}  // namespace
}  // namespace pagedattn::testing
