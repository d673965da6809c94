// Partition states: merged in MPFR with the merge algebra they reproduce the whole-sequence
// output; partitions past seq_len are the empty state (-inf, 0, 0).
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>

#include "builder.h"

namespace pagedattn::ref::testing {
namespace {

// Merge (M = max m_p, w_p = s_p exp(m_p - M), out = sum w_p o_p / sum w_p) in 200-bit MPFR.
// The inputs are nearest doubles: m_p, s_p, o_p each within 2^-53 relative of the exact state,
// so w_p is within eps_w = 2^-53 (1 + |m_p| + |M|) (1 + 2^-40) relative and o_p within
// 2^-53 |o_p|; the merged value is then within (2 eps_w + 2^-53) max_p |o_p| of the exact output,
// and the exact output within half an ulp of the reference's nearest double.
void check_merge(const PartitionStates& ps, const Output& whole, int s, int h) {
  const int np = ps.num_partitions, hs = ps.head_size;
  double M = -INFINITY, maxo = 0, epsw = 0;
  for (int j = 0; j < np; ++j) M = std::max(M, ps.m[ps.index(s, h, j)]);
  for (int j = 0; j < np; ++j) {
    size_t k = ps.index(s, h, j);
    if (ps.s[k] == 0) continue;
    epsw = std::max(epsw, 0x1p-53 * (1 + std::fabs(ps.m[k]) + std::fabs(M)) * (1 + 0x1p-40));
    for (int d = 0; d < hs; ++d) maxo = std::max(maxo, std::fabs(ps.o[k * hs + d]));
  }
  mpfr_t w, sum, acc, t;
  mpfr_inits2(200, w, sum, acc, t, (mpfr_ptr)0);
  for (int d = 0; d < hs; ++d) {
    mpfr_set_zero(sum, 1);
    mpfr_set_zero(acc, 1);
    for (int j = 0; j < np; ++j) {
      size_t k = ps.index(s, h, j);
      if (ps.s[k] == 0) continue;  // empty: the identity
      mpfr_set_d(w, ps.m[k], MPFR_RNDN);
      mpfr_sub_d(w, w, M, MPFR_RNDN);
      mpfr_exp(w, w, MPFR_RNDN);
      mpfr_mul_d(w, w, ps.s[k], MPFR_RNDN);
      mpfr_add(sum, sum, w, MPFR_RNDN);
      mpfr_mul_d(t, w, ps.o[k * hs + d], MPFR_RNDN);
      mpfr_add(acc, acc, t, MPFR_RNDN);
    }
    double merged =
        mpfr_zero_p(sum) ? 0.0 : (mpfr_div(t, acc, sum, MPFR_RNDN), mpfr_get_d(t, MPFR_RNDN));
    double exact = whole.value[whole.index(s, h, d)];
    double tol = (2 * epsw + 0x1p-53) * maxo + std::fabs(exact) * 0x1p-53 + 0x1p-1000;
    EXPECT_LE(std::fabs(merged - exact), tol) << "s " << s << " h " << h << " d " << d;
  }
  mpfr_clears(w, sum, acc, t, (mpfr_ptr)0);
}

TEST(Partitions, MergeReproducesWholeAndEmptyIsIdentity) {
  Spec sp;
  sp.heads = 2;
  sp.kv_heads = 1;
  sp.lens = {70, 32, 0, 5};  // partition size 32: 3 partitions; seqs 1..3 have empty ones
  sp.alibi = true;
  sp.kgen = [](std::mt19937_64& r, int, int, int) {
    return std::normal_distribution<double>(0, 4)(r);
  };
  Case c = build(sp);
  Options o;
  o.out_dtype = DType::f32;
  o.nearest_double = true;
  Output whole = reference_attention(c.p, o);
  PartitionStates ps = reference_partitions(c.p, 32);
  ASSERT_EQ(ps.num_partitions, 3);
  for (int s = 0; s < 4; ++s)
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 3; ++j) {
        size_t k = ps.index(s, h, j);
        bool empty = j * 32 >= c.lens[s];
        EXPECT_EQ(empty, ps.m[k] == -INFINITY);
        if (empty) {
          EXPECT_EQ(ps.s[k], 0.0);
          for (int d = 0; d < 32; ++d) EXPECT_EQ(ps.o[k * 32 + d], 0.0);
        } else {
          EXPECT_GE(ps.s[k], 1.0);  // the max token contributes exp(0)
        }
      }
      check_merge(ps, whole, s, h);
    }
  EXPECT_THROW(reference_partitions(c.p, 24), std::invalid_argument);
}

TEST(Partitions, SingleTokenPartitionIsExact) {
  Spec sp;
  sp.heads = 1;
  sp.kv_heads = 1;
  sp.lens = {17};  // partition size 16: the second partition has one token
  Case c = build(sp);
  PartitionStates ps = reference_partitions(c.p, 16);
  EXPECT_EQ(ps.s[ps.index(0, 0, 1)], 1.0);
}

}  // namespace
}  // namespace pagedattn::ref::testing
