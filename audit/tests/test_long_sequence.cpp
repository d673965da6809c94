// No length cap: V2 (and its streaming reduce) takes a 4,000,000-token sequence on
// bi-v100, where V1 is refused. Runs in a few seconds on the emulator.
#include <gtest/gtest.h>

#include <cmath>

#include "pagedattn_audit/config.h"
#include "pagedattn_audit/runner.h"

namespace pagedattn::audit {
namespace {

TEST(LongSequence, FourMillionTokensOnBiV100) {
  Config c;
  c.profiles = {"bi-v100"};
  c.num_heads = {1};
  c.num_kv_heads = {1};
  c.head_sizes = {32};
  c.block_sizes = {16};
  c.seq_lens = {4000000};
  c.dtypes = {"f16"};
  c.distributions = {"vllm_uniform"};
  c.numerics = "ours";
  const std::vector<CaseResult> cases = run_grid(c);
  ASSERT_EQ(cases.size(), 2u);  // V1 and V2
  for (const CaseResult& r : cases) {
    if (r.kernel == "v1") {
      EXPECT_FALSE(r.launched);
      EXPECT_NE(r.reason.find("shared memory"), std::string::npos) << r.reason;
      continue;
    }
    ASSERT_TRUE(r.launched) << r.reason;
    ASSERT_TRUE(r.metrics.has_value());
    EXPECT_EQ(r.metrics->nonfinite, 0);
    // Values are uniform in +-h^-0.5, so |v| <= max_v and every output too. fp32 errors:
    // at most (P + n_p + 8) u max_v for the partition sums (P = 512 tokens), the n_p =
    // 7813 weighted partials of the reduce and the few roundings between (exp, division,
    // merge), u = 2^-24; then one rounding to f16, at most 2^-11 max_v for |y| <= max_v.
    const double max_v = 1.0 / std::sqrt(32.0);
    const double n = 512 + 7813 + 8;
    const double bound = (std::ldexp(1.0, -11) + n * std::ldexp(1.0, -24)) * max_v;
    EXPECT_LE(r.metrics->max_abs_err, bound);
  }
}

}  // namespace
}  // namespace pagedattn::audit
