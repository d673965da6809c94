// V2's intermediate states (max_logits, exp_sums, tmp_out) against the exact reference's
// partition states (pagedattn_ref's reference_partitions), judged with the proven bound:
//  - tmp_out: V2's attention kernel runs V1's body on a partition's tokens
//    (attention_kernel.cuh: the same code from `start` over `n` tokens, v_scale applied
//    before the store), so theorem kernel_error_bound for V1 over exactly those tokens
//    bounds the fp32 value it stores (Bound::fp32; tmp_out is that fp32 value under our
//    numerics), against the partition's exact normalized output;
//  - the (max, exp-sum) pairs: the theorem holds for every rounding error |delta| <= u of
//    the reduce, so for the reduce's own algorithm run in double on the kernel's states
//    (wrong_reductions.h's `right`: the same weights s_p exp(m_p - M), sums in the same
//    order, one division; every double rounding is below u): that fold lies within V2's
//    proven bound of the exact output. A wrong (m, s) pair moves the fold.
//  - empty partitions are exactly (-inf, 0, 0).
// Wrong variants caught (each run below on the kernel's own states): a partition that
// reads a token of its neighbour or skips one (its o moves), an unnormalized tmp_out (off
// by s >= 1), an exp-sum weighted twice (the fold moves).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include "pagedattn_ref/reference.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"
#include "wrong_reductions.h"

namespace pagedattn::test {
namespace {

using namespace pagedattn::testing;

// Bound::fp32 of partition j of row (seq, head) per element d: V1's bound over the
// partition's tokens, |y_p| from the reference's nearest double (within 2^-53 of it).
std::vector<double> partition_bounds(const Case& c, int seq, int head, int j, int partition,
                                     const std::string& profile, const ref::PartitionStates& want) {
  const std::int64_t first = std::int64_t{j} * partition;
  const std::int64_t end = std::min<std::int64_t>(c.seq_lens[seq], first + partition);
  bound::RowMagnitudes row;
  std::vector<bound::ElementMagnitudes> el(c.head_size);
  EXPECT_TRUE(row_magnitudes(c, seq, head, first, end, &row, el.data()));
  BoundSetup s;
  s.warp_size = profile_warp_size(profile);  // partition_size 0: V1's bound, n = end - first
  const bound::KernelConfig k = kernel_config(c, s);
  std::vector<double> b(c.head_size);
  const std::size_t r = want.index(seq, head, j);
  for (int d = 0; d < c.head_size; ++d) {
    bound::ElementMagnitudes m = el[d];
    m.abs_exact = std::fabs(want.o[r * c.head_size + d]) * (1 + 0x1p-52);
    b[d] = bound::kernel_error_bound(k, row, m).fp32;
  }
  return b;
}

// One row's kernel states as wrong_reductions.h reads them.
wrong::States states_of(const Outputs& o, std::size_t row, int D) {
  std::vector<float> tmp(static_cast<std::size_t>(o.num_partitions) * D);
  for (std::size_t i = 0; i < tmp.size(); ++i) {
    tmp[i] = static_cast<float>(o.tmp(row * o.num_partitions * D + i));
  }
  return wrong::row_states(&o.max_logits[row * o.num_partitions],
                           &o.exp_sums[row * o.num_partitions], tmp.data(), o.num_partitions, D);
}

void check_states(const UniformSpec& spec, int partition) {
  const Judge judge(uniform_case(spec));
  const Case& c = judge.input();
  const ref::PartitionStates want = ref::reference_partitions(c.exact_problem(), partition);
  const int S = c.num_seqs, H = c.num_heads, D = c.head_size;
  Options opt;
  opt.partition_size = partition;
  for (const char* profile : {"bi-v100", "h200"}) {
    const Outputs o = run_kernel(c, Kernel::v2, profile, opt);
    // The kernel's partitions cover max_seq_len; the reference's the longest sequence.
    const int P = o.num_partitions;
    const std::vector<double> v2_bound = judge.bounds(bound_setup(Kernel::v2, opt, profile));
    std::vector<double> fold;
    for (int s = 0; s < S; ++s) {
      for (int h = 0; h < H; ++h) {
        const std::size_t row = static_cast<std::size_t>(s) * H + h;
        for (int j = 0; j < P; ++j) {
          const std::size_t i = row * P + j;
          const std::string at = std::string(profile) + " seq " + std::to_string(s) + " head " +
                                 std::to_string(h) + " partition " + std::to_string(j);
          if (std::int64_t{j} * partition >= c.seq_lens[s]) {  // empty: exactly (-inf, 0, 0)
            EXPECT_EQ(o.max_logits[i], -INFINITY) << at;
            EXPECT_EQ(o.exp_sums[i], 0.0f) << at;
            for (int d = 0; d < D; ++d) EXPECT_EQ(o.tmp(i * D + d), 0.0) << at;
            continue;
          }
          const std::vector<double> b = partition_bounds(c, s, h, j, partition, profile, want);
          const std::size_t r = want.index(s, h, j);
          for (int d = 0; d < D; ++d) {  // want.o is the nearest double: half an ulp off
            const double w = want.o[r * D + d];
            ASSERT_LE(ratio_over_bound(o.tmp(i * D + d), w, 0x1p-53 * std::fabs(w), b[d]), 1.0)
                << at << " d " << d;
          }
        }
        const std::vector<double> f = wrong::reduce(wrong::Reduction::right, states_of(o, row, D));
        fold.insert(fold.end(), f.begin(), f.end());
      }
    }
    const Verdict v = err_over_bound(c, fold, judge.exact_output(), v2_bound);
    EXPECT_LE(v.worst, 1.0) << profile << " fold of the kernel's states: " << v.where;
  }
}

TEST(PartitionStates, MatchReferencePartitions) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    UniformSpec c;
    c.scalar = t;
    c.seq_lens = {150, 64, 1, 0};
    c.max_seq_len = 200;  // a fourth partition, empty for every sequence
    c.alibi = t == DType::f16;
    c.seed = 90 + static_cast<int>(t);
    check_states(c, 64);
  }
  UniformSpec fp8;
  fp8.scalar = DType::f16;
  fp8.cache = CacheFormat::fp8_e5m2;
  fp8.k_scale = 0.5;
  fp8.v_scale = 2;
  fp8.seq_lens = {130, 70};
  check_states(fp8, 64);
}

// The checks fail for the wrong variants they name, on the kernel's own states: a tmp_out
// left unnormalized (o * s), and the exp-sum weighted twice in the fold.
TEST(PartitionStates, WrongStatesFailTheChecks) {
  UniformSpec spec;
  spec.seq_lens = {150};
  const Judge judge(uniform_case(spec));
  const Case& c = judge.input();
  const int D = c.head_size;
  const ref::PartitionStates want = ref::reference_partitions(c.exact_problem(), 64);
  double worst = 0;
  for (int j = 0; j < want.num_partitions; ++j) {
    const std::vector<double> b = partition_bounds(c, 0, 0, j, 64, "h200", want);
    const std::size_t i = want.index(0, 0, j);
    for (int d = 0; d < D; ++d) {
      const double o = want.o[i * D + d];
      worst = std::max(worst, std::fabs(o * want.s[i] - o) / b[d]);
    }
  }
  EXPECT_GT(worst, 1.0) << "an unnormalized tmp_out would pass";
  Options opt;
  opt.partition_size = 64;
  const Outputs o = run_kernel(c, Kernel::v2, "h200", opt);
  std::vector<double> fold;
  for (int h = 0; h < c.num_heads; ++h) {
    const std::vector<double> f = wrong::reduce(wrong::Reduction::exp_sum_twice,
                                                states_of(o, static_cast<std::size_t>(h), D));
    fold.insert(fold.end(), f.begin(), f.end());
  }
  const Verdict v = err_over_bound(c, fold, judge.exact_output(),
                                   judge.bounds(bound_setup(Kernel::v2, opt, "h200")));
  EXPECT_GT(v.worst, 1.0) << "an exp-sum weighted twice would pass";
}

}  // namespace
}  // namespace pagedattn::test
