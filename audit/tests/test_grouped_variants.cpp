// `--kernel` with the grouped variants (Options::grouped): every selection runs the kernels
// it names, a grouped case launches the grouped kernels where they are built (the
// emulator's launch log names each kernel) and says why not elsewhere, and its metrics are
// the ungrouped case's (the outputs are the same bits: kernels/tests/test_grouped.cpp).
#include <gtest/gtest.h>

#include <emu/traffic.h>
#include <string>

#include "pagedattn_audit/config.h"
#include "pagedattn_audit/runner.h"

namespace pagedattn::audit {
namespace {

TEST(GroupedVariants, KernelSelectionsNameTheirVariants) {
  const auto names = [](const std::string& s) {
    std::string r;
    for (const KernelVariant& k : kernel_variants(s)) r += k.kernel + "/" + k.variant() + " ";
    return r;
  };
  EXPECT_EQ(names("both"), "v1/ungrouped v2/ungrouped ");
  EXPECT_EQ(names("v2_grouped"), "v2/grouped ");
  EXPECT_EQ(names("grouped"), "v1/grouped v2/grouped ");
  EXPECT_EQ(names("all"), "v1/ungrouped v2/ungrouped v1/grouped v2/grouped ");
  Config c;
  apply_key(c, "kernel", "all", "--kernel");
  EXPECT_EQ(c.kernel, "all");
  try {
    apply_key(c, "kernel", "v3", "--kernel");
    ADD_FAILURE() << "v3 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("v1_grouped"), std::string::npos) << e.what();
  }
}

// Wrong variants caught: the audit not passing Options::grouped to the call (no grouped
// launch in the log: shown by deleting `opt.grouped = kernel.grouped;` in runner.cpp's
// emulator loop), a grouped row whose metrics are not its ungrouped twin's, and a fallback
// reason missing or given where the grouped kernels ran.
TEST(GroupedVariants, GroupedCasesLaunchGroupedKernelsOrSayWhyNot) {
  for (const char* dtype : {"f16", "f32"}) {
    Config c;
    c.profiles = {"bi-v100"};
    c.num_heads = {8};
    c.num_kv_heads = {2};
    c.head_sizes = {64};
    c.seq_lens = {300};
    c.partition_sizes = {64};
    c.dtypes = {dtype};
    c.numerics = "ours";
    c.kernel = "all";
    emu::take_launch_traffic();
    emu::set_count_traffic(true);  // the launch log; bytes only for instrumented kernels
    const std::vector<CaseResult> cases = run_grid(c);
    emu::set_count_traffic(false);
    int grouped_launches = 0;
    for (const emu::LaunchTraffic& t : emu::take_launch_traffic())
      grouped_launches += t.kernel.find("grouped_attention_kernel") != std::string::npos;
    EXPECT_EQ(grouped_launches, 2) << dtype;  // one V1, one V2 partition launch (supported.h:
                                              // every dtype has grouped kernels)
    ASSERT_EQ(cases.size(), 4u);
    for (int i = 0; i < 2; ++i) {
      const CaseResult &u = cases[i], &g = cases[i + 2];
      EXPECT_EQ(u.variant, "ungrouped");
      EXPECT_EQ(g.variant, "grouped");
      EXPECT_EQ(g.kernel, u.kernel);
      EXPECT_TRUE(u.grouped_fallback.empty());
      EXPECT_TRUE(g.grouped_fallback.empty()) << g.grouped_fallback;
      ASSERT_TRUE(u.launched && g.launched) << u.reason << g.reason;
      EXPECT_EQ(g.metrics->max_abs_err, u.metrics->max_abs_err) << dtype << " " << g.kernel;
      EXPECT_EQ(g.metrics->max_ulp_err, u.metrics->max_ulp_err) << dtype << " " << g.kernel;
      EXPECT_EQ(g.bound(), u.bound());
      EXPECT_LE(*g.err_over_bound(), 1.0);
    }
  }
}

}  // namespace
}  // namespace pagedattn::audit
