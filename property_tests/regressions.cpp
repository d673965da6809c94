// Shrunk cases the properties found, kept as plain tests (README.md, "found by
// properties"). Each names the property that found it and what was wrong.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include "checks.h"
#include "pagedattn/lse_state.h"

namespace pagedattn::prop {
namespace {

// prop_merge_assoc, first run: the merge formed w1 o1 + w2 o2 before dividing by s, which
// overflows for outputs near FLT_MAX although the result is their weighted mean.
TEST(FoundByProperties, MergeOfLargeOutputsDoesNotOverflow) {
  PartitionState<float, 1> a, b, c;
  a.ms = {-250.f, 1.f};
  a.o[0] = -1.f;
  b.ms = {-250.f, 1.33333397f};
  b.o[0] = 2.55211755e38f;
  c.ms = {-250.f, 1.f};
  c.o[0] = -1.f;
  a.merge(b);
  a.merge(c);
  EXPECT_TRUE(std::isfinite(a.o[0])) << a.o[0];
  // Exact: 1.33333397 * 2.55211755e38 / 3.33333397 - 2 / 3.33333397, about 1.0208e38.
  EXPECT_NEAR(a.o[0], 1.33333397 * 2.55211755e38 / 3.33333397, 1e-6 * 1.0208e38);
}

// prop_merge_assoc, 10,000-case campaign: with normalized weights a1 + a2 can round to
// 1 + u, so merging two states whose output is FLT_MAX gave inf; the merge now clamps to
// the operands' interval.
TEST(FoundByProperties, MergeAtFltMaxStaysFltMax) {
  for (int s2 = 1; s2 <= 64; ++s2) {
    PartitionState<float, 1> a, b;
    a.ms = {0.f, 1.f};
    b.ms = {0.f, static_cast<float>(s2) / 3};
    a.o[0] = b.o[0] = FLT_MAX;
    a.merge(b);
    EXPECT_EQ(a.o[0], FLT_MAX) << "s2 " << s2;
  }
}

// prop_v2_eq_v1: subnormal values. The first-order bound the suite started with
// (relative to max|v|) left out gradual underflow; kernel_error_bound has an absolute
// term for it, and the kernels stay within it.
TEST(FoundByProperties, SubnormalValuesWithinTheBound) {
  Spec s;
  s.scalar = DType::f32;
  s.head_size = 112;
  s.block_size = 8;
  s.gqa = 4;
  s.partition_size = 160;
  s.seq_lens = {0, 2};
  s.extra_len = 160;
  s.v_class = ValueClass::subnormal;
  s.profile = "h200";
  const Case p = build(s);
  const ref::Output ex = exact(p);
  for (const KernelUnderTest& k : kernels_under_test(p)) {
    const Options o = k.options(s.options());
    const Verdict e = err_over_bound(p, run(p, k.kernel, o, s.profile).out, ex,
                                     element_bounds(p, k.kernel, o, ex, s.profile));
    EXPECT_LE(e.worst, 1.0) << k.name << ": " << e.where;
  }
}

// prop_finite_in_finite_out and prop_v2_eq_v1: values near FLT_MAX. The fp32 sum of
// e_i v_i (e_i <= 1) overflowed to inf for 2+ tokens although the exact output, a mean of
// the values, is finite. Fixed on branch nan-algebra (a rescaled path on overflow).
TEST(FoundByProperties, NearMaxValuesGiveFiniteOutput) {
  Spec s;
  s.scalar = DType::f32;
  s.head_size = 256;
  s.block_size = 32;
  s.gqa = 2;
  s.alibi = true;
  s.partition_size = 256;
  s.seq_lens = {5};
  s.logits = LogitShape::spread;
  s.span = 200;
  s.offset = 100;
  s.q_lanes = ValueClass::nearmax;
  s.v_class = ValueClass::nearmax;
  s.seed = 34550;
  s.profile = "h200";
  const Case p = build(s);
  for (const KernelUnderTest& k : kernels_under_test(p)) {
    const Outputs o = run(p, k.kernel, k.options(s.options()), s.profile);
    for (double x : o.out) ASSERT_TRUE(std::isfinite(x)) << k.name;
  }
}

// prop_nan_propagation_live: a NaN query element on V2 with two partitions gave a finite
// row (the NaN exp-sum counted as an empty partition and was dropped). Fixed on branch
// nan-algebra (an empty state is s == 0 exactly).
TEST(FoundByProperties, NanQueryPoisonsV2Row) {
  Spec s;
  s.scalar = DType::f16;
  s.head_size = 80;
  s.block_size = 32;
  s.alibi = true;
  s.partition_size = 64;
  s.seq_lens = {127};
  s.profile = "bi-v100";
  Case p = build(s);
  p.set_q(0, 0, 0, NAN);
  for (const KernelUnderTest& k : kernels_under_test(p)) {
    const Outputs o = run(p, k.kernel, k.options(s.options()), s.profile);
    for (double x : o.out) ASSERT_TRUE(std::isnan(x)) << k.name;
  }
}

}  // namespace
}  // namespace pagedattn::prop
