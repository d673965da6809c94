// V2's intermediate states (max_logits, exp_sums, tmp_out) against the high-precision
// reference's exact partition states (pagedattn_ref's reference_partitions, MPFR), element
// by element, within bounds derived from the kernel's arithmetic. Wrong variants caught:
// a partition that reads a token of its neighbour or skips one (m, s off by a whole
// term), an exp-sum weighted twice or not at all, an unnormalized tmp_out (off by s >= 1),
// and an empty partition that is not exactly (-inf, 0, 0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include "pagedattn_ref/reference.h"
#include "reference.h"
#include "to_exact_problem.h"

namespace pagedattn::test {
namespace {

// Bounds, first order in u = 2^-24 (the logit error dx as in reference.cpp):
//  - m: the computed max of logits each within dx of the exact one: |m_hat - m| <= dx.
//  - s = sum_i exp(x_i - m): each exponent y_i errs by 2 dx + u |y_i| (the subtraction),
//    exp by (2 + 1.173 |y_i|) ulps (CUDA's __expf; an ulp <= 2u relative), the sum of n
//    terms by gamma_{n-1}: relative 2 dx + (4 + 3.35 R) u + (n - 1) u, R the spread.
//  - o: the partition's output, bounded as V2's whole output (error_bounds, which adds the
//    reduce's terms to the partition's: an upper bound for the partition alone).
// Factor 1.25 for second-order terms, as in reference.cpp.
void check_states(const Config& c) {
  const Problem p = make_problem(c);
  const ref::PartitionStates want = ref::reference_partitions(to_ref(p), c.partition_size);
  const std::vector<double> ob = error_bounds(p, Kernel::v2);
  const double u = std::ldexp(1.0, -24);
  const int S = static_cast<int>(p.seq_lens.size()), H = c.num_heads, D = c.head_size;
  // The kernel's partitions cover max_seq_len; the reference's the longest sequence.
  const int P = static_cast<int>((p.max_seq_len + c.partition_size - 1) / c.partition_size);
  for (const char* profile : {"bi-v100", "h200"}) {
    const Outputs o = run_kernel(p, Kernel::v2, profile);
    ASSERT_EQ(o.exp_sums.size(), static_cast<std::size_t>(S) * H * P);
    for (int s = 0; s < S; ++s) {
      for (int h = 0; h < H; ++h) {
        const LogitFacts f = logit_facts(p, s, h);
        for (int j = 0; j < P; ++j) {
          const std::size_t i = (static_cast<std::size_t>(s) * H + h) * P + j;
          const bool in_ref = j < want.num_partitions;
          const std::size_t r = in_ref ? want.index(s, h, j) : 0;
          const std::string at = std::string(profile) + " seq " + std::to_string(s) + " head " +
                                 std::to_string(h) + " partition " + std::to_string(j);
          if (!in_ref || want.s[r] == 0) {  // empty: exactly (-inf, 0, 0)
            EXPECT_EQ(o.max_logits[i], -INFINITY) << at;
            EXPECT_EQ(o.exp_sums[i], 0.0f) << at;
            for (int d = 0; d < D; ++d) {
              float t;
              std::memcpy(&t, &o.tmp_out[(i * D + d) * 4], 4);
              EXPECT_EQ(t, 0.0f) << at;
            }
            continue;
          }
          const int n = std::min(p.seq_lens[s] - j * c.partition_size, c.partition_size);
          EXPECT_LE(std::fabs(o.max_logits[i] - want.m[r]), 1.25 * f.dx + 1e-300) << at;
          const double rel_s = 2 * f.dx + (4 + 3.35 * f.spread) * u + (n - 1) * u;
          EXPECT_LE(std::fabs(o.exp_sums[i] - want.s[r]), 1.25 * rel_s * want.s[r]) << at;
          for (int d = 0; d < D; ++d) {
            float t;
            std::memcpy(&t, &o.tmp_out[(i * D + d) * 4], 4);
            ASSERT_LE(std::fabs(t - want.o[r * D + d]), ob[s * H + h]) << at << " d " << d;
          }
        }
      }
    }
  }
}

TEST(PartitionStates, MatchReferencePartitions) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    Config c;
    c.scalar = t;
    c.seq_lens = {150, 64, 1, 0};
    c.max_seq_len = 200;  // a fourth partition, empty for every sequence
    c.partition_size = 64;
    c.alibi = t == DType::f16;
    c.seed = 90 + static_cast<int>(t);
    check_states(c);
  }
  Config fp8;
  fp8.scalar = DType::f16;
  fp8.cache = CacheFormat::fp8_e5m2;
  fp8.k_scale = 0.5;
  fp8.v_scale = 2;
  fp8.seq_lens = {130, 70};
  check_states(fp8);
}

// The check fails for the wrong variant it names: a tmp_out left unnormalized (o * s).
TEST(PartitionStates, UnnormalizedPartialFailsTheCheck) {
  Config c;
  c.seq_lens = {150};
  const Problem p = make_problem(c);
  const ref::PartitionStates want = ref::reference_partitions(to_ref(p), c.partition_size);
  const std::vector<double> ob = error_bounds(p, Kernel::v2);
  double worst = 0;
  for (int j = 0; j < want.num_partitions; ++j) {
    const std::size_t i = want.index(0, 0, j);
    for (int d = 0; d < c.head_size; ++d) {
      worst = std::max(
          worst, std::fabs(want.o[i * c.head_size + d] * want.s[i] - want.o[i * c.head_size + d]));
    }
  }
  EXPECT_GT(worst, ob[0]);
}

}  // namespace
}  // namespace pagedattn::test
