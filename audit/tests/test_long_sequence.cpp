// No length cap, at a precision that can fail: V2 (and its streaming reduce) takes a
// 4,000,000-token sequence on bi-v100, where V1 is refused, and every output element is
// within the proven bound of the exact answer (the high-precision reference). The inputs
// ("normal": logits with standard deviation 4, so a few dozen tokens spread over several
// partitions carry the softmax and the outputs are O(0.1 to 1)) make the wrong reductions
// named below miss the proven bound (kernel_error_bound, per element) by far, which the test shows
// by running each once on the kernel's own partition states: an all-zero output (what the old
// version of this test let through ~98% of the time), the partition with the largest max alone,
// exp-sums weighted twice, and the exp(m_p - M) rescale forgotten. (Epsilon, fp16 partials, a stale
// max and NaN-producing empty merges are below f16 resolution or absent here:
// kernels/tests/test_reduce.cpp catches those.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pagedattn/api.h"
#include "pagedattn_audit/inputs.h"
#include "pagedattn_testing/judge.h"
#include "wrong_reductions.h"

namespace pagedattn::audit {
namespace {

TEST(LongSequence, FourMillionTokensOnBiV100WithinTheBound) {
  CaseShape sh;
  sh.num_heads = sh.num_kv_heads = 1;
  sh.head_size = 32;
  sh.block_size = 16;
  sh.seq_len = 4000000;
  sh.dtype = DType::f16;
  const testing::Judge judge(generate_inputs(sh, "normal", 7, 2));
  const testing::Case& in = judge.input();
  const std::int64_t L = in.seq_lens[0], D = in.head_size;
  const int Psize = 512;
  const std::int64_t NP = (L + Psize - 1) / Psize;
  std::vector<std::uint16_t> out(D);
  Options opt;
  opt.partition_size = Psize;
  AttentionCall call = in.call();
  call.out = TensorView::contiguous(out.data(), DType::f16, {1, 1, D});

  // V1 would need the whole sequence's logits in shared memory: refused on bi-v100.
  try {
    paged_attention(Kernel::v1, call, Backend::emulator("bi-v100"), opt);
    ADD_FAILURE() << "V1 ran 4M tokens in 48 KiB of shared memory";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }

  std::vector<float> es(NP), ml(NP), tmp(NP * D);
  call.exp_sums = TensorView::contiguous(es.data(), DType::f32, {1, 1, NP});
  call.max_logits = TensorView::contiguous(ml.data(), DType::f32, {1, 1, NP});
  call.tmp_out = TensorView::contiguous(tmp.data(), DType::f32, {1, 1, NP, D});
  paged_attention(Kernel::v2, call, Backend::emulator("bi-v100"), opt);
  const std::vector<double> bound = judge.bounds(testing::bound_setup(Kernel::v2, opt, "bi-v100"));
  const auto worst_ratio = [&](const std::vector<double>& got) {
    return testing::err_over_bound(in, got, judge.exact_output(), bound).worst;
  };

  std::vector<double> got(D);
  for (int d = 0; d < D; ++d) got[d] = f16_bits_to_float(out[d]);
  const double ratio = worst_ratio(got);
  std::printf("  V2 4M tokens: largest bound %.3g, worst error / bound %.3g\n",
              *std::max_element(bound.begin(), bound.end()), ratio);
  EXPECT_LE(ratio, 1.0);

  // The wrong reductions on the kernel's own states, rounded to f16 like the output.
  const pagedattn::test::wrong::States st =
      pagedattn::test::wrong::row_states(ml.data(), es.data(), tmp.data(), static_cast<int>(NP), D);
  using pagedattn::test::wrong::Reduction;
  for (Reduction r :
       {Reduction::largest_max_partition, Reduction::exp_sum_twice, Reduction::no_rescale}) {
    std::vector<double> w = pagedattn::test::wrong::reduce(r, st);
    for (double& x : w) x = pagedattn::test::wrong::round_to_f16(x);
    const double wr = worst_ratio(w);
    std::printf("  %s: error / bound %.3g\n", pagedattn::test::wrong::name(r).c_str(), wr);
    EXPECT_GT(wr, 1.0) << pagedattn::test::wrong::name(r) << " would pass";
  }
  EXPECT_GT(worst_ratio(std::vector<double>(D, 0.0)), 1.0) << "all zeros would pass";
}

}  // namespace
}  // namespace pagedattn::audit
