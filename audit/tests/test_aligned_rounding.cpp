// The aligned_rounding distribution (pagedattn_audit/aligned_rounding.h): its simulated
// summation is the kernel's to the bit, and on the audit's default fp32 shape it errs two
// orders of magnitude more than vLLM's uniform inputs while staying within the proven
// bound, close enough to it that a bound without its logit term fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "pagedattn_audit/aligned_rounding.h"
#include "pagedattn_audit/inputs.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"

namespace pagedattn::audit {
namespace {

using testing::Dim;
using testing::KvHead;

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// One-token sequences: V2's max_logits is each row's logit as the kernel computed it. It
// must equal kernel_dot's (times qk_scale) bit for bit, on both warp widths, for each scalar
// type and an fp8 cache (their lane orders differ: VEC 1 or 2, 2 or 4 lanes, 8-bit keys).
// Every term is positive, and the logit's error goes one way by most of (D/G + log2 G + 1)
// half ulps (the roundings of its lane chain, butterfly and scale multiply at the lanes'
// size 2^e, 2^(e+1).., the logit's), the first-order charge the bound makes for it.
// A model of another order (VEC fixed at 1, or the lanes added in sequence) differs from the
// kernel in the last bits of most rows: shown by hand, see the commit.
TEST(AlignedRounding, SimulatedSumIsTheKernelsToTheBit) {
  for (const char* profile : {"bi-v100", "h200"}) {
    const int warp = testing::profile_warp_size(profile);
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      for (CacheFormat cache : {CacheFormat::same, CacheFormat::fp8_e4m3}) {
        // 16 one-token sequences, 2 heads (2 KV heads), head 128, block 16.
        CaseShape sh{16, 2, 2, 128, 16, t, cache, 1};
        sh.warp_size = warp;
        const testing::Case in = generate_inputs(sh, "aligned_rounding", 3, 2);
        Options opt;
        opt.partition_size = 512;
        const testing::Outputs o = testing::run_kernel(in, Kernel::v2, profile, opt);
        const DotOrder order = dot_order(in, warp);
        const float qk_scale = static_cast<float>(in.scale * in.key_scale());
        const int D = in.head_size;
        double least = INFINITY;  // the smallest share of the first-order charge reached
        for (int s = 0; s < in.num_seqs; ++s) {
          for (int h = 0; h < in.num_heads; ++h) {
            const testing::Physical at = in.where(s, 0);
            std::vector<float> q(D), k(D);
            double exact = 0, magnitude = 0;
            for (int d = 0; d < D; ++d) {
              q[d] = static_cast<float>(in.q(s, h, d));
              k[d] = static_cast<float>(
                  in.key(at.block, KvHead{in.kv_head_of(h)}, at.slot, Dim{d}) / in.key_scale());
              ASSERT_GT(q[d], 0.0f);
              ASSERT_GT(k[d], 0.0f);
              exact += static_cast<double>(q[d]) * k[d];  // exact: the terms span < 53 bits
            }
            magnitude = exact * qk_scale;  // every term positive: |logit| = Q / |scale| * scale
            const float mine = kernel_dot(order, q.data(), k.data()) * qk_scale;
            const float kernel =
                o.max_logits[(static_cast<std::size_t>(s) * in.num_heads + h) * o.num_partitions];
            ASSERT_EQ(bits(kernel), bits(mine))
                << profile << " " << testing::traits(t).short_name << " cache "
                << testing::kv_cache_dtype(cache) << " seq " << s << " head " << h << ": kernel "
                << kernel << ", simulated " << mine;
            const int lanes = order.lanes;
            const double roundings =
                static_cast<double>(order.dims[0].size()) + std::log2(lanes) + 1;
            least = std::min(least, std::fabs(kernel - magnitude) /
                                        (roundings * std::ldexp(1.0, -24) * magnitude));
          }
        }
        std::printf("  %s %s cache %s: logit error >= %.2f of the first-order charge\n", profile,
                    testing::traits(t).short_name, testing::kv_cache_dtype(cache), least);
        // Each rounding is half an ulp of a partial sum in [2^e, 2^e (1 + delta)], delta the
        // logit's spread over its size (4 / 22.6) plus the lanes' jitter (1/64): at least
        // 1 / 1.19 = 0.84 of the charge, times 31/32 (a lane's first term is exact) and
        // less for the scale multiply (half an ulp of a logit in [16, 32) is u 16 / |x|):
        // about 0.78 at the worst token (measured 0.74 to 0.86 here). A greedy that lets a
        // third of the roundings go the other way falls below 0.7.
        EXPECT_GE(least, 0.7);
      }
    }
  }
}

// The audit's default shape (bi-v100, 32 heads over 8 KV heads, head 128, 1000 tokens, V2
// partitions of 512), f32, exact exp: every element within the proven bound, the worst at
// least 0.1 of it (issue 19's target, the bound within 10x of the worst error; measured
// 0.59 V1, 0.66 V2) and 20x vLLM's uniform inputs' (measured 0.0037: 160x). A bound that
// forgot the logits' rounding (Q_i taken as 0 in the magnitudes: no g_dot Q_i term, no
// max Q in Xi_max) must fail on aligned_rounding: it does by about 4x here, while vLLM's
// uniform inputs pass it, so the distribution is what sees that term.
TEST(AlignedRounding, ErrsFarMoreThanUniformWithinTheBound) {
  CaseShape sh{1, 32, 8, 128, 16, DType::f32, CacheFormat::same, 1000};
  sh.warp_size = 64;
  double worst[2] = {0, 0}, without_logit_term[2] = {0, 0};
  const char* names[2] = {"aligned_rounding", "vllm_uniform"};
  for (int i = 0; i < 2; ++i) {
    const testing::Judge judge(generate_inputs(sh, names[i], 0, 2));
    const testing::Case& in = judge.input();
    testing::Magnitudes no_qk = judge.magnitudes();
    for (bound::RowMagnitudes& r : no_qk.rows) r.max_qk = r.p_qk = 0;
    for (bound::ElementMagnitudes& e : no_qk.elements) e.dev_qk = 0;
    for (Kernel kernel : {Kernel::v1, Kernel::v2}) {
      Options opt;
      if (kernel == Kernel::v2) opt.partition_size = 512;
      const testing::Outputs o = testing::run_kernel(in, kernel, "bi-v100", opt);
      testing::BoundSetup setup = testing::bound_setup(kernel, opt, "bi-v100");
      setup.exp = bound::ExpAccuracy::emulator(0);  // run_kernel's exp: correctly rounded
      const testing::Verdict v = judge.verdict(o.out, setup);
      EXPECT_LE(v.worst, 1.0) << names[i] << ": " << v.where;
      worst[i] = std::max(worst[i], v.worst);
      const ref::Output& ex = judge.exact_output();
      const std::vector<double> wrong =
          testing::element_bounds(in, no_qk, setup, ex.value, ex.value_err);
      without_logit_term[i] =
          std::max(without_logit_term[i], testing::err_over_bound(in, o.out, ex, wrong).worst);
    }
    std::printf("  %s: worst error / bound %.3g; against a bound without the logit term %.3g\n",
                names[i], worst[i], without_logit_term[i]);
  }
  EXPECT_GE(worst[0], 0.1);
  EXPECT_GE(worst[0], 20 * worst[1]);
  EXPECT_GT(without_logit_term[0], 1.0) << "a bound without its logit term would pass";
  EXPECT_LE(without_logit_term[1], 1.0);
}

}  // namespace
}  // namespace pagedattn::audit
