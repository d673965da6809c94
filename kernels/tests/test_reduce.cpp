// The V2 reduce: no length cap (4M tokens of partition states through the reduce alone)
// within a derived bound that every known-wrong reduction violates, empty states inside a
// row, the partition count clamped to the row, and a long end-to-end V2 on BI-V100 past V1's reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include "pagedattn/resources.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"
#include "reduce_bound.h"
#include "wrong_reductions.h"

namespace pagedattn::test {
namespace {

// with NaN garbage in tmp_out, reduced and checked against the exact fold of those states
// within reduce_bounds. Two rows built so that every known-wrong reduction of
// wrong_reductions.h fails the same check, which the test shows by running each once:
//  - head 0, many partitions matter (maxima in [50, 60], exp-sums in [1, 512]): picking
//    the largest-max partition, weighting by the exp-sum twice and dropping the rescale
//    all move the output by ~1e-2, against a bound of ~1e-5;
//  - head 1, one partition dominates (s = 1 at M, the others 40 to 60 below): the output
//    is ~o_p of one partition and the bound a few u, so vLLM's epsilon (1e-6 relative)
//    and partials rounded to fp16 (2^-12 relative) fail;
//  - both: partition 0 lies 120 below M, so a stale max (partition 0's) overflows
//    exp(m_p - M) in fp32; the empty states' NaN garbage poisons a merge that multiplies
//    it by 0.
TEST(Reduce, FourMillionTokensWithinTheDerivedBound) {
  const int S = 1, H = 2, D = 128, Psize = 512;
  const std::int64_t len = 4LL << 20;
  const std::int64_t P = len / Psize;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u01(0, 1), us(1, 512), uo(-1, 1);
  std::vector<float> es(S * H * P), ml(S * H * P), tmp(S * H * P * D);
  for (int h = 0; h < H; ++h) {
    for (std::int64_t p = 0; p < P; ++p) {
      const std::int64_t i = h * P + p;
      const bool empty = p % 997 == 5;  // a defined empty state; its tmp_out is garbage
      const double m = h == 0 ? 50 + 10 * u01(rng) : 0 + 20 * u01(rng);
      ml[i] = empty ? -INFINITY : static_cast<float>(m);
      es[i] = empty ? 0.f : static_cast<float>(us(rng));
      for (int d = 0; d < D; ++d) tmp[i * D + d] = empty ? NAN : static_cast<float>(uo(rng));
    }
    ml[h * P] = -60.f;  // partition 0: 120 below M
    es[h * P] = 1.f;
    // M. Head 1's dominant state comes last, so the running sums are tiny until then and
    // their rounding bound stays ~3u.
    const std::int64_t top = h == 0 ? P - 3 : P - 1;
    ml[h * P + top] = 60.f;
    if (h == 1) es[h * P + top] = 1.f;
  }
  std::vector<wrong::States> rows;
  for (int h = 0; h < H; ++h) {
    rows.push_back(
        wrong::row_states(&ml[h * P], &es[h * P], &tmp[h * P * D], static_cast<int>(P), D));
  }
  std::vector<std::vector<double>> exact, bound;
  for (const auto& st : rows) {
    exact.push_back(wrong::reduce(wrong::Reduction::right, st));
    bound.push_back(reduce_bounds(st));
  }
  // The wrong reductions fail the check (in at least one row each).
  for (wrong::Reduction r : wrong::all_wrong()) {
    double worst = 0;
    for (int h = 0; h < H; ++h) {
      worst = std::max(worst, worst_ratio(wrong::reduce(r, rows[h]), exact[h], bound[h]));
    }
    EXPECT_GT(worst, 1.0) << wrong::name(r) << " would pass this test";
    std::printf("  %s: error / bound %.3g\n", wrong::name(r).c_str(), worst);
  }
  std::vector<float> out(S * H * D, NAN);
  std::vector<std::int32_t> sl = {static_cast<std::int32_t>(len)};
  Options opt;
  opt.partition_size = Psize;
  for (const char* profile : {"bi-v100", "h200"}) {
    paged_attention_reduce(TensorView::contiguous(out.data(), DType::f32, {S, H, D}),
                           TensorView::contiguous(es.data(), DType::f32, {S, H, P}),
                           TensorView::contiguous(ml.data(), DType::f32, {S, H, P}),
                           TensorView::contiguous(tmp.data(), DType::f32, {S, H, P, D}),
                           TensorView::contiguous(sl.data(), DType::i32, {S}), len,
                           Backend::emulator(profile), opt);
    for (int h = 0; h < H; ++h) {
      const std::vector<double> got(out.begin() + h * D, out.begin() + (h + 1) * D);
      const double ratio = worst_ratio(got, exact[h], bound[h]);
      EXPECT_LE(ratio, 1.0) << profile << " head " << h;
      std::printf("  reduce on %s, head %d: error / bound %.3g\n", profile, h, ratio);
    }
  }
}

// With check_indices off, a seq_len past max_seq_len must not send the reduce past its
// row: it folds the row's max_num_partitions states only (the attention grid wrote no
// more). Row 0's sequence claims 10,000 tokens against 3 partitions of 64; row 1's states
// follow it in memory with different values, then the buffer ends. Wrong variant caught:
// the partition count from seq_len alone (reads row 1, then past the buffer).
TEST(Reduce, SeqLenPastMaxSeqLenIsClampedToTheRow) {
  const int S = 2, H = 1, D = 64, P = 3;
  std::vector<float> es = {3, 2, 1, 5, 0.5f, 7}, ml = {1, 2, 3, 9, 8, 7};
  std::vector<float> tmp(S * H * P * D);
  for (std::size_t i = 0; i < tmp.size(); ++i) tmp[i] = static_cast<float>((i * 37) % 101) / 50 - 1;
  std::vector<float> out(S * H * D, NAN);
  std::vector<std::int32_t> sl = {10000, 150};
  Options opt;
  opt.partition_size = 64;
  opt.check_indices = false;
  paged_attention_reduce(TensorView::contiguous(out.data(), DType::f32, {S, H, D}),
                         TensorView::contiguous(es.data(), DType::f32, {S, H, P}),
                         TensorView::contiguous(ml.data(), DType::f32, {S, H, P}),
                         TensorView::contiguous(tmp.data(), DType::f32, {S, H, P, D}),
                         TensorView::contiguous(sl.data(), DType::i32, {S}), 150,
                         Backend::emulator("h200"), opt);
  const wrong::States row0 = wrong::row_states(ml.data(), es.data(), tmp.data(), P, D);
  const std::vector<double> want = wrong::reduce(wrong::Reduction::right, row0);
  const std::vector<double> b = reduce_bounds(row0);
  const std::vector<double> got(out.begin(), out.begin() + D);
  EXPECT_LE(worst_ratio(got, want, b), 1.0);
  // Reading row 1's states too (6 partitions) lands far outside the bound.
  const wrong::States six = wrong::row_states(ml.data(), es.data(), tmp.data(), 2 * P, D);
  EXPECT_GT(worst_ratio(wrong::reduce(wrong::Reduction::right, six), want, b), 1.0);
}

// States past a row's partition count hold NaN garbage (vLLM leaves them unwritten): the
// output is the same bit for bit as with zeros there.
TEST(Reduce, GarbagePastTheRowsPartitionsChangesNothing) {
  const int S = 2, H = 1, D = 64, P = 4;
  std::vector<float> out_a(S * H * D), out_b(S * H * D);
  for (bool nan : {false, true}) {
    std::vector<float> es = {3, 2, 1, 5, 4, 4, 1, 1}, ml = {1, 2, 3, 9, 8, 7, 6, 5};
    std::vector<float> tmp(S * H * P * D);
    for (std::size_t i = 0; i < tmp.size(); ++i)
      tmp[i] = static_cast<float>((i * 37) % 101) / 50 - 1;
    if (nan) {  // seq 0 has 130 tokens: 3 partitions of 64; its 4th state is garbage
      es[3] = ml[3] = NAN;
      for (int d = 0; d < D; ++d) tmp[3 * D + d] = NAN;
    }
    std::vector<std::int32_t> sl = {130, 256};
    Options opt;
    opt.partition_size = 64;
    std::vector<float>& out = nan ? out_b : out_a;
    paged_attention_reduce(TensorView::contiguous(out.data(), DType::f32, {S, H, D}),
                           TensorView::contiguous(es.data(), DType::f32, {S, H, P}),
                           TensorView::contiguous(ml.data(), DType::f32, {S, H, P}),
                           TensorView::contiguous(tmp.data(), DType::f32, {S, H, P, D}),
                           TensorView::contiguous(sl.data(), DType::i32, {S}), 256,
                           Backend::emulator("bi-v100"), opt);
  }
  EXPECT_EQ(0, std::memcmp(out_a.data(), out_b.data(), out_a.size() * 4));
}

// Rows whose every state is empty (a zero-length sequence) reduce to 0, not NaN.
TEST(Reduce, ZeroLengthRowGivesZero) {
  const int S = 2, H = 1, D = 64;
  const std::int64_t P = 3;
  std::vector<float> es(S * H * P, 0.f), ml(S * H * P, -INFINITY), tmp(S * H * P * D, 0.f);
  std::vector<float> out(S * H * D, NAN);
  std::vector<std::int32_t> sl = {0, 0};
  Options opt;
  opt.partition_size = 64;
  paged_attention_reduce(TensorView::contiguous(out.data(), DType::f32, {S, H, D}),
                         TensorView::contiguous(es.data(), DType::f32, {S, H, P}),
                         TensorView::contiguous(ml.data(), DType::f32, {S, H, P}),
                         TensorView::contiguous(tmp.data(), DType::f32, {S, H, P, D}),
                         TensorView::contiguous(sl.data(), DType::i32, {S}), 150,
                         Backend::emulator("bi-v100"), opt);
  for (float o : out) EXPECT_EQ(o, 0.f);
}

// A context BI-V100's V1 cannot hold, through V2 end to end, against the exact reference
// within the proven bound.
TEST(Reduce, LongSequenceV2OnBiV100) {
  testing::UniformSpec c;
  c.scalar = DType::f16;
  c.head_size = 64;
  c.block_size = 16;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.seq_lens = {20000};
  c.seed = 5;
  const testing::Judge judge(testing::uniform_case(c));
  Options opt;
  opt.partition_size = 512;
  const testing::Outputs o = testing::run_kernel(judge.input(), Kernel::v2, "bi-v100", opt);
  const testing::Verdict v = judge.verdict(o.out, Kernel::v2, opt, "bi-v100");
  EXPECT_LE(v.worst, 1.0) << v.where;
}

}  // namespace
}  // namespace pagedattn::test
