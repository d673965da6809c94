// `limits --traffic` and `audit --traffic`: the bytes each launch moved, counted on the
// emulator by pagedattn-traffic (the instrumented kernels), as the programs print them.
// 32 query heads over 8 KV heads, head size 128, fp16 (issue 18's headline shape) at 1,001
// and 2,001 tokens instead of 100,000 so each run takes seconds: the per-head kernels read the
// cache once per query head and the grouped ones once per block of heads at any length
// (emulator/tests/test_kernel_traffic.cpp, perfmodel/tests/test_model_traffic.cpp).
#include <gtest/gtest.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_process.h"
#include "pagedattn/perfmodel.h"

namespace {

namespace fs = std::filesystem;

using tools_test::Result;
using tools_test::slurp;

fs::path temp_dir() {
  return tools_test::temp_dir("pagedattn_traffic_");
}

// K and V bytes of `tokens` tokens over 8 KV heads of 128 fp16 elements.
std::uint64_t kv_exist(std::uint64_t tokens) {
  return tokens * 2 * 8 * 128 * 2;
}

pagedattn::perf::Estimate model(const std::string& profile, int tokens) {
  pagedattn::perf::Workload w;  // 1 sequence, 32 over 8 heads, head 128, block 16, P 512, fp16
  w.max_seq_len = tokens;
  return pagedattn::perf::estimate(pagedattn::perf::load_device(profile), w);
}

struct Printed {
  std::uint64_t read = 0, written = 0, kv = 0, model = 0;
};

// The attention launch's line of `run` ("v2 grouped") in limits' output.
Printed attention_line(const std::string& out, const std::string& run) {
  std::smatch m;
  const std::regex re("  " + run +
                      " paged_attention_v[12]: read ([0-9]+) bytes, written ([0-9]+) bytes; KV "
                      "read ([0-9]+) bytes = [0-9.]+x what exists \\(model ([0-9]+)\\)");
  if (!std::regex_search(out, m, re)) {
    ADD_FAILURE() << "no line for " << run << " in\n" << out;
    return {};
  }
  return {std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4])};
}

std::uint64_t all_reads(const std::string& out, const std::string& run) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("  " + run + " in all: read ([0-9]+) bytes"))) {
    ADD_FAILURE() << "no total for " << run << " in\n" << out;
    return 0;
  }
  return std::stoull(m[1]);
}

// Wrong variants caught: the helper running the per-head kernel for the grouped variant
// (grouped KV reads 4x, not the model's), counting one cache tensor only (half the
// model's), or measuring another length than --traffic-seq-len (what exists differs).
TEST(LimitsTraffic, KvReadsAreTheModelsAndTheHeadlineRatio) {
  const fs::path dir = temp_dir();
  // h200 at 2,001 tokens (grouped V1 then serves 2 heads per block: the model's
  // blocks_per_kv_head), bi-v100 at 1,001 (4 per block).
  for (const auto& [profile, tokens] : {std::pair{"h200", 2001}, std::pair{"bi-v100", 1001}}) {
    const Result r = tools_test::run_program(
        PAGEDATTN_CLI,
        "limits --traffic --traffic-seq-len " + std::to_string(tokens) + " --profile " + profile,
        dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::uint64_t exist = kv_exist(tokens);
    ASSERT_NE(r.out.find("KV cache bytes that exist: " + std::to_string(exist) + " "),
              std::string::npos)
        << r.out;
    const pagedattn::perf::Estimate e = model(profile, tokens);
    const std::map<std::string, const pagedattn::perf::KernelEstimate*> runs = {
        {"v1 ungrouped", &e.v1},
        {"v1 grouped", &e.v1_grouped},
        {"v2 ungrouped", &e.v2},
        {"v2 grouped", &e.v2_grouped}};
    for (const auto& [name, est] : runs) {
      const Printed p = attention_line(r.out, name);
      EXPECT_EQ(double(p.kv), est->kv_load_bytes) << profile << " " << name;
      EXPECT_EQ(p.model, p.kv) << profile << " " << name;
      EXPECT_GT(p.read, p.kv) << profile << " " << name;  // and queries, block tables
      EXPECT_GT(p.written, 0u) << profile << " " << name;
    }
    // The headline ratio: per head 4x the cache that exists, grouped V2 once.
    EXPECT_EQ(attention_line(r.out, "v2 ungrouped").kv, 4 * exist) << profile;
    EXPECT_EQ(attention_line(r.out, "v2 grouped").kv, exist) << profile;
    // Everything grouped V2 and its reduce read, within 5% over the cache, query and block
    // table that exist (issue 18's bound), on both warp widths. Before the block-table
    // entries were read once per warp (attention_phases.cuh, block_number) bi-v100 read
    // 1.076x at 100,000 tokens, all of the excess outside the K and V caches.
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(r.out, m, std::regex("\\(query ([0-9]+), block table ([0-9]+)\\)")));
    const std::uint64_t inputs = exist + std::stoull(m[1]) + std::stoull(m[2]);
    EXPECT_LE(double(all_reads(r.out, "v2 grouped")), 1.05 * double(inputs)) << r.out;
    EXPECT_GE(double(all_reads(r.out, "v2 ungrouped")), 4.0 * double(inputs)) << r.out;
  }
  fs::remove_all(dir);
}

// Wrong variants caught: a flag of the shape accepted without --traffic (it would do
// nothing), a bad value, heads that do not divide, each with the limits printed anyway.
TEST(LimitsTraffic, BadShapeIsAUsageErrorAndPrintsNothing) {
  const fs::path dir = temp_dir();
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"limits --num-heads 4", {"--num-heads", "--traffic"}},
      {"limits --traffic-seq-len 10", {"--traffic-seq-len", "--traffic"}},
      {"limits --traffic --dtype f64", {"--dtype", "{f32, f16, bf16}"}},
      {"limits --traffic --kv-cache-dtype int8", {"--kv-cache-dtype", "fp8_e4m3"}},
      {"limits --traffic --traffic-seq-len 0", {"--traffic-seq-len", "[1, 1000000]"}},
      {"limits --traffic --num-heads 6", {"--num-heads 6", "multiple of --num-kv-heads 8"}},
  };
  for (const auto& [args, want] : cases) {
    const Result r = tools_test::run_program(PAGEDATTN_CLI, args, dir);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    for (const std::string& w : want) EXPECT_NE(r.err.find(w), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

// A `pagedattn` with no helper beside it: a runtime error naming the path it looked at,
// before anything is printed or written. Catches a silent zero, or output then failure.
TEST(LimitsTraffic, MissingHelperSaysWhereAndWritesNothing) {
  const fs::path dir = temp_dir();
  const fs::path lone = dir / "pagedattn";
  fs::copy_file(PAGEDATTN_CLI, lone);
  const std::vector<std::string> commands = {
      "limits --traffic", "audit --traffic --seq-lens 20 --json " + (dir / "a.json").string()};
  for (const std::string& args : commands) {
    const Result r = tools_test::run_program(lone.string(), args, dir);
    EXPECT_EQ(r.code, 1) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_NE(r.err.find((dir / "pagedattn-traffic").string() + " not found"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(dir / "a.json")) << args;
  }
  fs::remove_all(dir);
}

nlohmann::json audit_json(const std::string& flags, const fs::path& dir) {
  const fs::path file = dir / "audit.json";
  const Result r = tools_test::run_program(
      PAGEDATTN_CLI,
      "audit --seq-lens 300 --numerics ours --quiet --json " + file.string() + " " + flags, dir);
  EXPECT_EQ(r.code, 0) << flags << ": " << r.err;
  return nlohmann::json::parse(slurp(file));
}

// Wrong variants caught: --traffic not reaching the cases (absent), the grouped case given
// the per-head run's bytes (4x), launches that do not sum to the case's figures, and a
// kernel with no instrumented copy reported as measured zero bytes.
TEST(AuditTraffic, CasesCarryMeasuredBytesOrSayWhyAbsent) {
  const fs::path dir = temp_dir();
  const std::uint64_t exist = kv_exist(300);
  const nlohmann::json on = audit_json("--kernel all --traffic", dir);
  ASSERT_EQ(on["cases"].size(), 4u);
  for (const nlohmann::json& c : on["cases"]) {
    const std::string name = c["kernel"].get<std::string>() + " " + c["variant"].get<std::string>();
    const nlohmann::json& t = c["traffic"];
    ASSERT_EQ(t["status"], "measured") << name << ": " << t.dump();
    EXPECT_EQ(t["kv_bytes_exist"], exist) << name;
    EXPECT_EQ(t["kv_bytes_read"], (c["variant"] == "grouped" ? 1 : 4) * exist) << name;
    std::uint64_t read = 0, written = 0, kv = 0;
    for (const nlohmann::json& l : t["launches"]) {
      read += l["bytes_read"].get<std::uint64_t>();
      written += l["bytes_written"].get<std::uint64_t>();
      kv += l["kv_bytes_read"].get<std::uint64_t>();
    }
    EXPECT_EQ(t["launches"].size(), c["kernel"] == "v2" ? 2u : 1u) << name;  // V2: + reduce
    EXPECT_EQ(t["bytes_read"], read) << name;
    EXPECT_EQ(t["bytes_written"], written) << name;
    EXPECT_EQ(t["kv_bytes_read"], kv) << name;
  }
  const nlohmann::json off = audit_json("--kernel v1", dir);
  EXPECT_EQ(off["cases"][0]["traffic"],
            nlohmann::json({{"status", "absent"}, {"reason", "not asked (--traffic)"}}));
  // bf16's grouped kernels are built plain only (emulator/tests/CMakeLists.txt).
  const nlohmann::json bf16 = audit_json("--kernel v2_grouped --dtype bf16 --traffic", dir);
  const nlohmann::json& t = bf16["cases"][0]["traffic"];
  EXPECT_EQ(t["status"], "absent") << t.dump();
  EXPECT_NE(t["reason"].get<std::string>().find("no instrumented copy"), std::string::npos)
      << t.dump();
  fs::remove_all(dir);
}

}  // namespace
