// Flags and config files: one parser, errors that name the flag or file and key, exit
// code 2, and nothing written on error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pagedattn_audit/command.h"
#include "pagedattn/api.h"
#include "pagedattn_audit/config.h"

namespace pagedattn::audit {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("audit_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string usage_message(const std::vector<std::string>& argv) {
  bool help = false;
  try {
    check_config(parse_command_line(argv, &help));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, FlagsFillTheGrid) {
  bool help = false;
  const Config c = parse_command_line(
      {"--num-heads", "32,40", "--head-size=64", "--dtype", "bf16", "--kv-cache-dtype", "fp8",
       "--exp-ulp", "0,3", "--distribution", "all", "--numerics", "vllm"},
      &help);
  EXPECT_FALSE(help);
  EXPECT_EQ(c.num_heads, (std::vector<int>{32, 40}));
  EXPECT_EQ(c.head_sizes, (std::vector<int>{64}));
  EXPECT_EQ(c.dtypes, (std::vector<std::string>{"bf16"}));
  EXPECT_EQ(c.kv_cache_dtypes, (std::vector<std::string>{"fp8_e4m3"}));
  EXPECT_EQ(c.exp_ulps, (std::vector<int>{0, 3}));
  EXPECT_EQ(c.distributions.size(), 8u);
  EXPECT_EQ(c.numerics, "vllm");
}

TEST(Config, NumericsAblationIsAChoice) {
  bool help = false;
  EXPECT_EQ(parse_command_line({"--numerics", "ablation"}, &help).numerics, "ablation");
  EXPECT_NE(usage_message({"--numerics", "fast"}).find("ablation"), std::string::npos);
}

// Catches: adversarial missing from the accepted modes or from the usage error's list.
TEST(Config, ExpModeAdversarialIsAChoice) {
  bool help = false;
  EXPECT_EQ(parse_command_line({"--exp-mode", "adversarial"}, &help).exp_mode, "adversarial");
  EXPECT_NE(usage_message({"--exp-mode", "sideways"})
                .find("--exp-mode must be one of {random, up, down, adversarial}, got 'sideways'"),
            std::string::npos);
}

TEST(Config, BadFlagsNameFlagAndAllowedValues) {
  EXPECT_NE(usage_message({"--num-head", "3"}).find("unknown flag '--num-head"), std::string::npos);
  const std::string m = usage_message({"--head-size", "100"});
  EXPECT_NE(m.find("--head-size"), std::string::npos);
  EXPECT_NE(m.find("{32, 64, 80, 96, 112, 120, 128, 192, 256}"), std::string::npos);
  EXPECT_NE(usage_message({"--dtype", "f64"}).find("{f32, f16, bf16}"), std::string::npos);
  EXPECT_NE(usage_message({"--partition-size", "100"}).find("multiple"), std::string::npos);
  EXPECT_NE(usage_message({"--profile", "nope"}).find("bi-v100"), std::string::npos);
  if (!has_cuda_backend()) {  // a CUDA build accepts it (no device: a runtime error, exit 1)
    EXPECT_NE(usage_message({"--backend", "cuda"}).find("CUDA backend"), std::string::npos);
    EXPECT_NE(usage_message({"--backend", "both"}).find("CUDA backend"), std::string::npos);
  }
  EXPECT_NE(usage_message({"--num-heads", "3", "--num-kv-heads", "2"}).find("divisible"),
            std::string::npos);
}

TEST(Config, FileKeysAndFlagsOverride) {
  const std::string path = temp_path("ok.json");
  std::ofstream(path) << R"({"num-heads": [4, 8], "num_kv_heads": 4, "seq-lens": 70,
                             "distribution": ["dominant"], "exp-mode": "up"})";
  bool help = false;
  const Config c = parse_command_line({"--config", path, "--seq-lens", "90"}, &help);
  EXPECT_EQ(c.num_heads, (std::vector<int>{4, 8}));
  EXPECT_EQ(c.num_kv_heads, (std::vector<int>{4}));
  EXPECT_EQ(c.seq_lens, (std::vector<int>{90}));
  EXPECT_EQ(c.distributions, (std::vector<std::string>{"dominant"}));
  EXPECT_EQ(c.exp_mode, "up");
  std::filesystem::remove(path);
}

TEST(Config, FileErrorsNameFileAndKey) {
  const std::string path = temp_path("bad.json");
  std::ofstream(path) << R"({"num-heads": 4, "colour": "red"})";
  std::string m = usage_message({"--config", path});
  EXPECT_NE(m.find(path), std::string::npos);
  EXPECT_NE(m.find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(m.find("num-kv-heads"), std::string::npos);  // the allowed keys are listed
  std::ofstream(path) << R"({"block-size": 12})";
  m = usage_message({"--config", path});
  EXPECT_NE(m.find(path + ": key 'block-size'"), std::string::npos);
  EXPECT_NE(m.find("{8, 16, 32}"), std::string::npos);
  std::ofstream(path) << R"({"num-heads": )";
  EXPECT_NE(usage_message({"--config", path}).find("malformed JSON"), std::string::npos);
  // fuzz/regressions/audit_config/number_overflow: a number beyond double threw
  // nlohmann's out_of_range past the parse_error handler (exit 1, not a usage error).
  std::ofstream(path) << R"({"scale": 8.3333e08171179126})";
  EXPECT_NE(usage_message({"--config", path}).find("malformed JSON"), std::string::npos);
  std::ofstream(path) << "8.3333000000000000000000000000000000000e08171179126";
  EXPECT_NE(usage_message({"--config", path}).find("malformed JSON"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Command, UsageErrorExitsTwoAndWritesNothing) {
  const std::string json = temp_path("never.json");
  std::ostringstream out, err;
  EXPECT_EQ(run_command({"--json", json, "--block-size", "7"}, out, err), 2);
  EXPECT_NE(err.str().find("--block-size"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(json));
  EXPECT_EQ(run_command({"--json", "/nonexistent-dir/x.json"}, out, err), 2);
}

TEST(Command, HelpListsEveryKey) {
  std::ostringstream out, err;
  EXPECT_EQ(run_command({"--help"}, out, err), 0);
  for (const KeyInfo& k : keys()) {
    EXPECT_NE(out.str().find(std::string("--") + k.name), std::string::npos) << k.name;
  }
}

}  // namespace
}  // namespace pagedattn::audit
