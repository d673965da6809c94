// The V2 reduce: no length cap (4M tokens of partition states through the reduce alone),
// empty states inside a row, and a long end-to-end V2 on BI-V100 past V1's reach.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include "pagedattn/resources.h"
#include "reference.h"

namespace pagedattn::test {
namespace {

// Synthetic states for a 4M-token sequence (8192 partitions of 512), some of them empty
// with NaN garbage in tmp_out, reduced and compared with the merge in double.
TEST(Reduce, FourMillionTokensWithoutALengthCap) {
  const int S = 1, H = 2, D = 128, Psize = 512;
  const std::int64_t len = 4LL << 20;
  const std::int64_t P = len / Psize;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> um(-30, 30), us(1, 512), uo(-1, 1);
  std::vector<float> es(S * H * P), ml(S * H * P), tmp(S * H * P * D);
  for (std::int64_t i = 0; i < S * H * P; ++i) {
    const bool empty = i % 997 == 5;  // a defined empty state; its tmp_out is garbage
    ml[i] = empty ? -INFINITY : static_cast<float>(um(rng));
    es[i] = empty ? 0.f : static_cast<float>(us(rng));
    for (int d = 0; d < D; ++d) tmp[i * D + d] = empty ? NAN : static_cast<float>(uo(rng));
  }
  // The first partition far below a late one: with a stale or partial max (partition 0's)
  // exp(m_p - M) = exp(120) overflows fp32; only the exact global max keeps it finite.
  for (int h = 0; h < H; ++h) {
    ml[h * P] = -60.f;
    es[h * P] = 1.f;
    ml[h * P + P - 3] = 60.f;
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
      double M = -INFINITY, R = 0;
      for (std::int64_t p = 0; p < P; ++p) M = std::max(M, double(ml[h * P + p]));
      for (std::int64_t p = 0; p < P; ++p) {
        if (es[h * P + p] > 0) R = std::max(R, M - ml[h * P + p]);
      }
      // Bound: each weight s_p exp(m_p - M) errs by (2 + 2.2 R) u (exp and its argument)
      // plus u (the product): the mean moves by twice that times max|o| = 1; the two sums
      // of P terms and the division add (2 P + 1) u. Factor 1.25: second-order terms.
      const double u = std::ldexp(1.0, -24);
      const double bound = 1.25 * (2 * ((3 + 2.2 * R) * u) + (2.0 * P + 1) * u);
      for (int d = 0; d < D; ++d) {
        double num = 0, den = 0;
        for (std::int64_t p = 0; p < P; ++p) {
          const std::int64_t i = h * P + p;
          if (es[i] == 0) continue;
          const double w = es[i] * std::exp(double(ml[i]) - M);
          num += w * tmp[i * D + d];
          den += w;
        }
        ASSERT_FALSE(std::isnan(out[h * D + d])) << profile;
        EXPECT_NEAR(out[h * D + d], num / den, bound) << profile << " head " << h << " d " << d;
      }
    }
  }
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

// A context BI-V100's V1 cannot hold, through V2 end to end.
TEST(Reduce, LongSequenceV2OnBiV100) {
  Config c;
  c.scalar = DType::f16;
  c.head_size = 64;
  c.block_size = 16;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.partition_size = 512;
  c.seq_lens = {20000};
  c.seed = 5;
  const Problem p = make_problem(c);
  const Outputs o = run_kernel(p, Kernel::v2, "bi-v100");
  const Comparison r = compare(p, o.out, reference_attention(p), error_bounds(p, Kernel::v2));
  EXPECT_FALSE(r.any_nan) << r.worst;
  EXPECT_LE(r.worst_ratio, 1.0) << r.worst;
}

}  // namespace
}  // namespace pagedattn::test
