// The command's gates and replay flags, driven through run_command with an in-memory
// replay loader: --fail-on exit codes, --k-scale/--v-scale reaching the kernels, the
// non-finite findings, and usage errors found before anything runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "pagedattn_audit/command.h"
#include "pagedattn_audit/inputs.h"

namespace pagedattn::audit {
namespace {

testing::Case small_inputs(CacheFormat cache = CacheFormat::same, int block_size = 16) {
  CaseShape s;
  s.num_seqs = 2;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.head_size = 64;
  s.block_size = block_size;
  s.dtype = DType::f16;
  s.cache = cache;
  s.seq_len = 100;
  return generate_inputs(s, "vllm_uniform", 7, 1);
}

struct Ran {
  int code;
  std::string out, err;
};

Ran audit(const std::vector<std::string>& argv, const testing::Case& in) {
  std::ostringstream out, err;
  const int code =
      run_command(argv, out, err, [&](const std::string&, bool, const std::string&) { return in; });
  return {code, out.str(), err.str()};
}

const std::vector<std::string> kBase = {"--replay", "mem", "--kernel", "v1", "--numerics", "ours"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> v = kBase;
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

// A NaN query element: the finding names it, the table shows it, and only --fail-on
// nonfinite turns it into exit code 4.
TEST(Command, FailOnNonfiniteNamesTheFirstInput) {
  testing::Case in = small_inputs();
  const std::uint16_t nan16 = 0x7e00;  // f16 quiet NaN
  std::memcpy(in.query.data() + 2 * in.q_index(1, 2, 9), &nan16, 2);
  Ran r = audit(with({}), in);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("finding: non-finite live input query[1][2][9] = nan"), std::string::npos)
      << r.out;
  r = audit(with({"--fail-on", "nonfinite"}), in);
  EXPECT_EQ(r.code, kExitNonfinite) << r.err;
  EXPECT_NE(r.err.find("--fail-on nonfinite"), std::string::npos) << r.err;
  // The same inputs without the NaN pass the same gate.
  EXPECT_EQ(audit(with({"--fail-on", "nonfinite,error,over-bound"}), small_inputs()).code, 0);
}

// A case the library rejects has status "error" (a replay's block size is only known
// once loaded: partition size 80 is no multiple of 32): exit 3 under --fail-on error only.
TEST(Command, FailOnErrorExitsThree) {
  const testing::Case in = small_inputs(CacheFormat::same, 32);
  const std::vector<std::string> v2 = {"--replay",   "mem",  "--kernel",         "v2",
                                       "--numerics", "ours", "--partition-size", "80"};
  Ran r = audit(v2, in);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("error"), std::string::npos) << r.out;
  std::vector<std::string> gated = v2;
  gated.insert(gated.end(), {"--fail-on", "error"});
  r = audit(gated, in);
  EXPECT_EQ(r.code, kExitCaseError) << r.err;
  EXPECT_NE(r.err.find("--fail-on error"), std::string::npos) << r.err;
}

// Every launched row carries its proven bound and stays within it, so the gate passes. Exit 5
// needs a row over its bound, which no flag can produce (each numerics choice is judged
// against its own bound); BoundAudit.VllmNumericsExceedOurBound shows a violation is seen.
TEST(Command, FailOnOverBoundPassesRowsWithinTheirBound) {
  EXPECT_EQ(audit(with({"--fail-on", "over-bound"}), small_inputs()).code, 0);
}

// --v-scale reaches the kernel: the values (|v| <= 0.125) times 1e9 give outputs far
// beyond f16's 65504, so they turn inf (a finding, exit 4); with the default 1 they do not. A flag
// that was parsed but not passed on would give 0 both times.
TEST(Command, ReplayScalesReachTheKernels) {
  const testing::Case in = small_inputs(CacheFormat::fp8_e4m3);
  EXPECT_EQ(audit(with({"--kv-cache-dtype", "fp8", "--fail-on", "nonfinite"}), in).code, 0);
  const Ran r = audit(with({"--kv-cache-dtype", "fp8", "--k-scale", "0.5", "--v-scale", "1e9",
                            "--fail-on", "nonfinite"}),
                      in);
  EXPECT_EQ(r.code, kExitNonfinite) << r.err << r.out;
  EXPECT_NE(r.out.find("finding: non-finite output out["), std::string::npos) << r.out;
}

TEST(Command, UsageErrorsBeforeAnythingRuns) {
  const testing::Case in = small_inputs();
  for (const auto& [argv, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--fail-on", "warnings"}, "{error, nonfinite, over-bound}"},
           {{"--k-scale", "2"}, "--replay"},
           {{"--v-scale", "-1"}, "> 0"},
           {{"--seq-lens", "5000000", "--partition-size", "64"}, "grid's z limit 65535"},
           {{"stray"}, "unexpected argument 'stray'"},
       }) {
    std::ostringstream out, err;
    EXPECT_EQ(run_command(argv, out, err), 2) << argv[0];
    EXPECT_NE(err.str().find(want), std::string::npos) << argv[0] << ": " << err.str();
  }
  // V1 has no partitions: the same grid is fine without V2.
  std::ostringstream out, err;
  bool help = false;
  EXPECT_NO_THROW(check_config(parse_command_line(
      {"--seq-lens", "5000000", "--partition-size", "64", "--kernel", "v1"}, &help)));
}

}  // namespace
}  // namespace pagedattn::audit
