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

// The ratio is never below the true |got - exact| / bound: the reference's own error
// counts, and the difference is rounded up. Each of these passed (ratio <= 1) when the
// ratio was |got - value| / bound in round-to-nearest.
TEST(Judge, RatioCountsTheReferenceErrorAndRoundsUp) {
  // 0.4 off the reference's value, which is within 0.2 of the exact result: up to 0.6 off.
  EXPECT_GT(ratio_over_bound(1.4, 1.0, 0.2, 0.5), 1.0);  // was 0.8
  EXPECT_LE(ratio_over_bound(1.4, 1.0, 0.2, 0.5), 1.2 * (1 + 0x1p-50));
  // Equal to the reference's value: 0 while its error is within the bound, else that error.
  EXPECT_EQ(ratio_over_bound(1.0, 1.0, 0.2, 0.5), 0.0);
  EXPECT_GT(ratio_over_bound(1.0, 1.0, 0.75, 0.5), 1.0);  // was 0
  // 1 - (-2^-60) = 1 + 2^-60 rounds to 1 in round-to-nearest: exactly at the bound 1, a pass.
  EXPECT_GT(ratio_over_bound(1.0, -0x1p-60, 0.0, 1.0), 1.0);
  EXPECT_EQ(ratio_over_bound(1.0, 1.0, 0.0, 0.0), 0.0);           // 0 / 0
  EXPECT_EQ(ratio_over_bound(1.0, 1.0, 0x1p-60, 0.0), INFINITY);  // an unknown error, no bound
  EXPECT_EQ(ratio_over_bound(1.0, 1.0, NAN, 0.5), INFINITY);      // the reference knows no error
  // Through errors_over_bound: Output::value_err is read per element.
  ref::Output ex;
  ex.value = {1.0, 1.0};
  ex.value_err = {0.2, 0.0};
  const std::vector<double> r = errors_over_bound({1.4, 1.4}, ex, {0.5, 0.5});
  EXPECT_GT(r[0], 1.0);
  EXPECT_EQ(r[1], (1.4 - 1.0) / 0.5);  // both exact here
}

}  // namespace
}  // namespace pagedattn::testing
