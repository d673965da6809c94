// `pagedattn` end to end, run as a user runs it: generated replay folders on bi-v100,
// outputs against the exact reference within the proven bound, V1's shared-memory
// refusal, one named error per validation rule with nothing written, usage errors and
// `limits`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

#include "cli_process.h"
#include "cli_replay.h"
#include "pagedattn/resources.h"
#include "pagedattn_testing/judge.h"
#include "replay_writer.h"

namespace {

namespace fs = std::filesystem;
using pagedattn::testing::Case;
using tools_test::Files;
using tools_test::ReplaySpec;

using tools_test::Result;
using tools_test::slurp;

fs::path temp_dir() {
  return tools_test::temp_dir("pagedattn_cli_");
}

Result run_cli(const std::string& args, const fs::path& scratch) {
  return tools_test::run_program(PAGEDATTN_CLI, args, scratch);
}

bool empty_or_missing(const fs::path& dir) {
  return !fs::exists(dir) || fs::is_empty(dir);
}

// The output in `file` against the exact reference of `c` with `scale`, within the proven
// bound (kernel_error_bound) of `kernel` at `partition_size` on bi-v100 (warp 64): what
// `pagedattn run` wrote must be what the kernels compute, to the element's own bound.
pagedattn::testing::Verdict judged(Case c, const fs::path& file, double scale,
                                   pagedattn::Kernel kernel, int partition_size) {
  c.scale = pagedattn::testing::float_value(scale);  // the float the kernels use
  const npy::Array a = npy::load(file.string());
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{c.num_seqs, c.num_heads, c.head_size}));
  EXPECT_EQ(a.descr, cli::npy_descr(c.scalar));
  const pagedattn::testing::Judge judge(c);
  pagedattn::Options opt;
  opt.partition_size = partition_size;
  return judge.verdict(tools_test::decode(a), kernel, opt, "bi-v100");
}
void expect_matches_reference(const Case& c, const fs::path& file, double scale,
                              pagedattn::Kernel kernel, int partition_size = 512) {
  const pagedattn::testing::Verdict v = judged(c, file, scale, kernel, partition_size);
  EXPECT_LE(v.worst, 1.0) << file << ": " << v.where;
}

class RunEndToEnd : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(RunEndToEnd, MatchesTheExactReferenceOnBiV100) {
  const auto [scalar, cache] = GetParam();
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.scalar = scalar;
  spec.cache = cache;
  spec.kv_scale = cache == "auto" ? 1.0 : 0.5;
  const Case r = tools_test::make_case(spec);
  tools_test::write_replay(tools_test::replay_files(r), (dir / "in").string());
  std::string flags = " --kernel both --partition-size 64";
  if (scalar == "bf16") flags += " --bf16";
  if (cache != "auto") flags += " --kv-cache-dtype " + cache + " --k-scale 0.5 --v-scale 0.5";
  const Result res =
      run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string() + flags, dir);
  ASSERT_EQ(res.code, 0) << res.err;
  const double scale = 1.0 / std::sqrt(64.0);
  expect_matches_reference(r, dir / "out" / "out_v2.npy", scale, pagedattn::Kernel::v2, 64);
  expect_matches_reference(r, dir / "out" / "out_v1.npy", scale, pagedattn::Kernel::v1);
  // V2's partition states: [num_seqs, num_heads, ceil(150 / 64) = 3] in fp32.
  for (const char* name : {"exp_sums", "max_logits"}) {
    const npy::Array a = npy::load((dir / "out" / (std::string(name) + ".npy")).string());
    EXPECT_EQ(a.descr, "<f4");
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{3, 4, 3}));
  }
  const npy::Array tmp = npy::load((dir / "out" / "tmp_out.npy").string());
  EXPECT_EQ(tmp.shape, (std::vector<std::int64_t>{3, 4, 3, 64}));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RunEndToEnd,
                         ::testing::Values(std::tuple{"f32", "auto"}, std::tuple{"f16", "auto"},
                                           std::tuple{"bf16", "auto"},
                                           std::tuple{"f16", "fp8_e4m3"},
                                           std::tuple{"f32", "fp8_e5m2"}),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// --grouped: the grouped kernels (head 64, block 16, 2 query heads per KV head; f16 and
// f32, which had no grouped kernels before every shape had them); the files are the
// per-head run's, byte for byte (the outputs are the same bits: kernels/tests/test_grouped.cpp).
// Caught: --grouped not reaching Options::grouped (the launch line says "per-head": shown
// by removing `opts.grouped = s.grouped;` in cli_run.cpp), a grouped output that differs.
TEST(Run, GroupedFlagRunsTheGroupedKernelsWithTheSameOutputs) {
  for (const char* scalar : {"f16", "f32"}) {
    const fs::path dir = temp_dir();
    ReplaySpec spec;
    spec.scalar = scalar;
    const Case r = tools_test::make_case(spec);
    tools_test::write_replay(tools_test::replay_files(r), (dir / "in").string());
    const std::string in = "run " + (dir / "in").string() + " --partition-size 64 --out ";
    const Result plain = run_cli(in + (dir / "plain").string(), dir);
    ASSERT_EQ(plain.code, 0) << plain.err;
    const Result grouped = run_cli(in + (dir / "grouped").string() + " --grouped", dir);
    ASSERT_EQ(grouped.code, 0) << grouped.err;
    for (const char* k : {"v1", "v2"}) {  // every dtype has grouped kernels (supported.h)
      const std::string want = std::string(k) + ": grouped kernels launched";
      EXPECT_NE(grouped.out.find(want), std::string::npos) << scalar << "\n" << grouped.out;
    }
    EXPECT_EQ(plain.out.find("kernels launched"), std::string::npos) << plain.out;
    for (const char* f : {"out_v1", "out_v2", "exp_sums", "max_logits", "tmp_out"}) {
      const std::string name = std::string(f) + ".npy";
      EXPECT_EQ(slurp(dir / "grouped" / name), slurp(dir / "plain" / name)) << scalar << " " << f;
    }
    fs::remove_all(dir);
  }
}

TEST(Run, ScaleFlagIsUsed) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.seq_lens = {40};
  spec.alibi = false;
  const Case r = tools_test::make_case(spec);
  tools_test::write_replay(tools_test::replay_files(r), (dir / "in").string());
  const Result res = run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string() +
                                 " --kernel v2 --scale 0.3",
                             dir);
  ASSERT_EQ(res.code, 0) << res.err;
  expect_matches_reference(r, dir / "out" / "out_v2.npy", 0.3, pagedattn::Kernel::v2);
  // Judged with the default scale (head_size^-0.5) the same output is far outside: the
  // flag reached the kernels.
  EXPECT_GT(judged(r, dir / "out" / "out_v2.npy", 0.125, pagedattn::Kernel::v2, 512).worst, 1.0);
  EXPECT_FALSE(fs::exists(dir / "out" / "out_v1.npy"));
  fs::remove_all(dir);
}

// A padded batch: a sequence of length 0 yields a zero row from both kernels.
TEST(Run, EmptySequenceInTheBatch) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.seq_lens = {0, 40, 0};
  const Case r = tools_test::make_case(spec);
  tools_test::write_replay(tools_test::replay_files(r), (dir / "in").string());
  const Result res =
      run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string(), dir);
  ASSERT_EQ(res.code, 0) << res.err;
  expect_matches_reference(r, dir / "out" / "out_v1.npy", 1.0 / 8, pagedattn::Kernel::v1);
  expect_matches_reference(r, dir / "out" / "out_v2.npy", 1.0 / 8, pagedattn::Kernel::v2);

  // Only empty sequences: max_seq_len 0, so V2 has no partitions at all.
  spec.seq_lens = {0, 0};
  const Case empty = tools_test::make_case(spec);
  fs::remove_all(dir / "in");
  tools_test::write_replay(tools_test::replay_files(empty), (dir / "in").string());
  const Result res0 =
      run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string(), dir);
  ASSERT_EQ(res0.code, 0) << res0.err;
  expect_matches_reference(empty, dir / "out" / "out_v1.npy", 1.0 / 8, pagedattn::Kernel::v1);
  expect_matches_reference(empty, dir / "out" / "out_v2.npy", 1.0 / 8, pagedattn::Kernel::v2);
  EXPECT_EQ(npy::load((dir / "out" / "exp_sums.npy").string()).shape,
            (std::vector<std::int64_t>{2, 4, 0}));
  fs::remove_all(dir);
}

TEST(Run, V1RefusesTooLongSequenceOnBiV100AndV2StillWrites) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.num_heads = 1;
  spec.num_kv_heads = 1;
  spec.head_size = 32;
  spec.alibi = false;
  // One block past the longest sequence V1 fits in bi-v100's 48 KB (warp 64).
  const int longest = static_cast<int>(pagedattn::v1_max_seq_len(64, 32, 16, 48 * 1024));
  ASSERT_GT(longest, 0);
  spec.seq_lens = {longest + 16};
  const Case r = tools_test::make_case(spec);
  tools_test::write_replay(tools_test::replay_files(r), (dir / "in").string());
  const std::string base = "run " + (dir / "in").string() + " --out " + (dir / "out").string();

  Result res = run_cli(base + " --kernel v1", dir);
  EXPECT_EQ(res.code, 1);
  EXPECT_NE(res.err.find("shared memory"), std::string::npos) << res.err;
  EXPECT_TRUE(empty_or_missing(dir / "out"));

  res = run_cli(base + " --kernel both --partition-size 4096", dir);
  EXPECT_EQ(res.code, 1);
  EXPECT_NE(res.err.find("shared memory"), std::string::npos) << res.err;
  EXPECT_FALSE(fs::exists(dir / "out" / "out_v1.npy"));
  ASSERT_TRUE(fs::exists(dir / "out" / "out_v2.npy"));
  expect_matches_reference(r, dir / "out" / "out_v2.npy", 1.0 / std::sqrt(32.0),
                           pagedattn::Kernel::v2, 4096);
  fs::remove_all(dir);
}

// One rule of the contract broken per case: the error names the file and the rule, the
// exit code is 1 and the output folder is not even created.
struct Rule {
  std::string name;
  std::function<void(Files&)> mutate;
  std::string file;  // expected in the message
  std::string rule;  // expected in the message
  std::string flags = "";
};

npy::Array with_shape(npy::Array a, std::vector<std::int64_t> shape) {
  a.shape = std::move(shape);
  std::int64_t n = 1;
  for (auto d : a.shape) n *= d;
  a.data.resize(static_cast<std::size_t>(n) * a.itemsize());
  return a;
}

TEST(Run, EachValidationRuleNamesTheFileAndWritesNothing) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.seq_lens = {20, 33};
  const Files good = tools_test::replay_files(tools_test::make_case(spec));
  const std::vector<Rule> rules = {
      {"missing query", [](Files& r) { r.erase("query"); }, "query.npy", "missing"},
      {"query float64",
       [](Files& r) {
         r["query"].descr = "<f8";
         r["query"] = with_shape(r["query"], {2, 4, 64});
       },
       "query.npy", "dtype"},
      {"bf16 bits without flag",
       [](Files& r) {
         r["query"] = with_shape(
             [&] {
               auto a = r["query"];
               a.descr = "<u2";
               return a;
             }(),
             {2, 4, 64});
       },
       "query.npy", "--bf16"},
      {"query 2-D",
       [](Files& r) {
         r["query"] = with_shape(r["query"], {8, 64});
       },
       "query.npy", "3 dimensions"},
      {"head size",
       [](Files& r) {
         r["query"] = with_shape(r["query"], {2, 4, 48});
       },
       "query.npy", "head_size"},
      {"cache dtype",
       [](Files& r) {
         auto& a = r["key_cache"];
         a.descr = "<f2";
         a = with_shape(a, a.shape);
       },
       "key_cache.npy", "the query's dtype"},
      {"cache x",
       [](Files& r) {
         auto& a = r["key_cache"];
         a = with_shape(a, {a.shape[0], 2, 8, 16, 8});
       },
       "key_cache.npy", "x = 16"},
      {"block size",
       [](Files& r) {
         auto& a = r["key_cache"];
         a = with_shape(a, {a.shape[0], 2, 16, 12, 4});
       },
       "key_cache.npy", "block_size"},
      {"kv heads",
       [](Files& r) {
         auto& a = r["key_cache"];
         a = with_shape(a, {a.shape[0], 3, 16, 16, 4});
       },
       "key_cache.npy", "num_kv_heads"},
      {"value blocks",
       [](Files& r) {
         auto& a = r["value_cache"];
         a = with_shape(a, {a.shape[0] + 1, 2, 64, 16});
       },
       "value_cache.npy", "num_blocks"},
      {"value dtype",
       [](Files& r) {
         auto& a = r["value_cache"];
         a.descr = "<f2";
         a = with_shape(a, a.shape);
       },
       "value_cache.npy", "dtype"},
      {"table dtype",
       [](Files& r) {
         auto& a = r["block_tables"];
         a.descr = "<i8";
         a = with_shape(a, a.shape);
       },
       "block_tables.npy", "dtype"},
      {"table rows",
       [](Files& r) {
         auto& a = r["block_tables"];
         a = with_shape(a, {3, a.shape[1]});
       },
       "block_tables.npy", "num_seqs"},
      {"block id", [](Files& r) { r["block_tables"].as<std::int32_t>()[0] = 1000; },
       "block_tables.npy", "num_blocks"},
      {"negative id", [](Files& r) { r["block_tables"].as<std::int32_t>()[0] = -1; },
       "block_tables.npy", "[0, num_blocks"},
      {"lens dtype",
       [](Files& r) {
         auto& a = r["seq_lens"];
         a.descr = "<u4";
       },
       "seq_lens.npy", "dtype"},
      {"lens count",
       [](Files& r) {
         auto& a = r["seq_lens"];
         a = with_shape(a, {3});
       },
       "seq_lens.npy", "num_seqs"},
      {"negative len", [](Files& r) { r["seq_lens"].as<std::int32_t>()[1] = -5; }, "seq_lens.npy",
       ">= 0"},
      {"len past table", [](Files& r) { r["seq_lens"].as<std::int32_t>()[1] = 1000; },
       "seq_lens.npy", "max_blocks_per_seq"},
      {"alibi shape",
       [](Files& r) {
         auto& a = r["alibi_slopes"];
         a = with_shape(a, {3});
       },
       "alibi_slopes.npy", "num_heads"},
      {"alibi dtype",
       [](Files& r) {
         auto& a = r["alibi_slopes"];
         a.descr = "<i4";
       },
       "alibi_slopes.npy", "dtype"},
      {"fp8 flag, float cache", [](Files&) {}, "key_cache.npy", "uint8",
       " --kv-cache-dtype fp8_e4m3"},
      {"bf16 flag, float query", [](Files&) {}, "query.npy", "'<u2'", " --bf16"},
  };
  for (const Rule& rule : rules) {
    Files r = good;
    rule.mutate(r);
    const fs::path in = dir / "in", out = dir / "out";
    fs::remove_all(in);
    tools_test::write_replay(r, in.string());
    const Result res = run_cli("run " + in.string() + " --out " + out.string() + rule.flags, dir);
    EXPECT_EQ(res.code, 1) << rule.name << ": " << res.err;
    EXPECT_NE(res.err.find((in / rule.file).string()), std::string::npos)
        << rule.name << ": " << res.err;
    EXPECT_NE(res.err.find(rule.rule), std::string::npos) << rule.name << ": " << res.err;
    EXPECT_TRUE(empty_or_missing(out)) << rule.name;
  }

  // Files that are not valid .npy: named too.
  auto write_raw = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / "in" / name, std::ios::binary) << bytes;
  };
  const std::vector<std::pair<std::string, std::string>> raw = {
      {"value_cache.npy", "not an npy file"}, {"query.npy", std::string("\x93NUMPY\x01\x00", 8)}};
  for (const auto& [name, bytes] : raw) {
    fs::remove_all(dir / "in");
    tools_test::write_replay(good, (dir / "in").string());
    write_raw(name, bytes);
    const Result res =
        run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string(), dir);
    EXPECT_EQ(res.code, 1) << res.err;
    EXPECT_NE(res.err.find((dir / "in" / name).string()), std::string::npos) << res.err;
    EXPECT_TRUE(empty_or_missing(dir / "out"));
  }
  // fortran_order True.
  {
    fs::remove_all(dir / "in");
    tools_test::write_replay(good, (dir / "in").string());
    std::vector<unsigned char> b = npy::serialize(good.at("seq_lens"));
    std::string s(b.begin(), b.end());
    s.replace(s.find("False"), 5, "True ");
    write_raw("seq_lens.npy", s);
    const Result res =
        run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string(), dir);
    EXPECT_EQ(res.code, 1);
    EXPECT_NE(res.err.find("seq_lens.npy: fortran_order"), std::string::npos) << res.err;
    EXPECT_TRUE(empty_or_missing(dir / "out"));
  }
  fs::remove_all(dir);
}

TEST(Usage, ErrorsNameTheFlagAndExitTwo) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.seq_lens = {20};
  tools_test::write_replay(tools_test::replay_files(tools_test::make_case(spec)),
                           (dir / "in").string());
  const std::string base = "run " + (dir / "in").string() + " --out " + (dir / "out").string();
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {base + " --frobnicate 1", {"--frobnicate", "--kernel"}},
      {base + " --kernel v3", {"--kernel", "{v1, v2, both}"}},
      {base + " --profile nosuch", {"--profile", "bi-v100", "h200"}},
      {base + " --kv-cache-dtype int8", {"--kv-cache-dtype", "fp8_e4m3"}},
      {base + " --scale abc", {"--scale", "finite"}},
      {base + " --k-scale -1", {"--k-scale", "> 0"}},
      {base + " --partition-size 100", {"--partition-size", "multiple of block_size"}},
      {base + " --partition-size 8192", {"--partition-size", "4096"}},
      {base + " --kernel", {"--kernel", "missing"}},
      {base + " --kv-cache-dtype fp9", {"--kv-cache-dtype", "{auto, fp8, fp8_e4m3, fp8_e5m2}"}},
      {base + " --v-scale 0", {"--v-scale", "> 0"}},
      {"run " + (dir / "in").string() + " extra --out " + (dir / "out").string(), {"extra"}},
      {"limits --partition-size 100", {"--partition-size", "multiple of block size 16"}},
      {"limits --partition-size 8192", {"--partition-size", "4096"}},
      {"limits --profile nosuch", {"--profile", "bi-v100"}},
      {"run " + (dir / "in").string(), {"--out"}},
      {"run --out " + (dir / "out").string(), {"DIR"}},
      {"limits --head-size 50", {"--head-size", "{32, 64"}},
      {"limits --block-size 64", {"--block-size", "{8, 16, 32}"}},
      {"frob", {"unknown command"}},
  };
  for (const auto& [args, want] : cases) {
    const Result res = run_cli(args, dir);
    EXPECT_EQ(res.code, 2) << args << ": " << res.err;
    for (const std::string& w : want)
      EXPECT_NE(res.err.find(w), std::string::npos) << args << ": " << res.err;
    EXPECT_TRUE(empty_or_missing(dir / "out")) << args;
  }
  for (const char* args : {"--help", "run --help", "limits --help", "audit --help"}) {
    const Result res = run_cli(args, dir);
    EXPECT_EQ(res.code, 0) << args;
    EXPECT_NE(res.out.find("usage: pagedattn"), std::string::npos) << args;
  }
  // No command at all: the overview on stderr, a usage error.
  const Result none = run_cli("", dir);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("limits"), std::string::npos) << none.err;
  fs::remove_all(dir);
}

long long longest_v1(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("longest V1 sequence: ([0-9]+) tokens"))) return -1;
  return std::stoll(m[1]);
}

TEST(Limits, LongestV1SequenceGrowsFromBiV100ToH200) {
  const fs::path dir = temp_dir();
  const Result bi = run_cli("limits --profile bi-v100", dir);
  ASSERT_EQ(bi.code, 0) << bi.err;
  EXPECT_EQ(longest_v1(bi.out), pagedattn::v1_max_seq_len(64, 128, 16, 48 * 1024)) << bi.out;
  for (const char* k : {"paged_attention_v1", "paged_attention_v2", "paged_attention_v2_reduce",
                        "128 threads per block", "grid (num_heads, num_seqs"}) {
    EXPECT_NE(bi.out.find(k), std::string::npos) << k << "\n" << bi.out;
  }
  const Result h200 = run_cli("limits --profile h200 --head-size 64 --block-size 32", dir);
  ASSERT_EQ(h200.code, 0) << h200.err;
  EXPECT_GT(longest_v1(h200.out), longest_v1(bi.out)) << h200.out;
  fs::remove_all(dir);
}

// vLLM's "fp8" means E4M3: the alias must give the very bytes of fp8_e4m3 (an alias to
// e5m2, or a rejected alias, fails here).
TEST(Run, Fp8IsE4M3) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.seq_lens = {40, 17};
  spec.scalar = "f16";
  spec.cache = "fp8_e4m3";
  tools_test::write_replay(tools_test::replay_files(tools_test::make_case(spec)),
                           (dir / "in").string());
  std::map<std::string, std::vector<unsigned char>> out;
  for (const char* t : {"fp8", "fp8_e4m3", "fp8_e5m2"}) {
    const fs::path o = dir / t;
    const Result res = run_cli("run " + (dir / "in").string() + " --out " + o.string() +
                                   " --kernel v1 --kv-cache-dtype " + t,
                               dir);
    ASSERT_EQ(res.code, 0) << t << ": " << res.err;
    out[t] = npy::load((o / "out_v1.npy").string()).data;
  }
  EXPECT_EQ(out["fp8"], out["fp8_e4m3"]);
  EXPECT_NE(out["fp8"], out["fp8_e5m2"]);
  fs::remove_all(dir);
}

// ceil(max_seq_len / partition_size) over the grid's z limit 65535 is a usage error before
// anything runs (it used to reach the launch). One sequence of 65535 * 64 + 1 tokens, all
// in block 0: cheap to store, and the library's index rules accept it.
TEST(Usage, PartitionCountOverGridLimitExitsTwo) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.num_heads = 1;
  spec.num_kv_heads = 1;
  spec.head_size = 32;
  spec.alibi = false;
  spec.seq_lens = {16};
  Files r = tools_test::replay_files(tools_test::make_case(spec));
  const std::int32_t len = 65535 * 64 + 1;
  std::vector<std::int32_t> table((len + 15) / 16, r["block_tables"].as<std::int32_t>()[0]);
  r["block_tables"] = tools_test::make_array("<i4", {1, static_cast<std::int64_t>(table.size())},
                                             table.data(), table.size() * 4);
  r["seq_lens"] = tools_test::make_array("<i4", {1}, &len, 4);
  tools_test::write_replay(r, (dir / "in").string());
  const Result res = run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string() +
                                 " --kernel v2 --partition-size 64",
                             dir);
  EXPECT_EQ(res.code, 2) << res.err;
  EXPECT_NE(res.err.find("--partition-size"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("65536 partitions"), std::string::npos) << res.err;
  // The smallest that fits: ceil(len / 65535) = 65 rounded up to a multiple of 16.
  EXPECT_NE(res.err.find("--partition-size >= 80 "), std::string::npos) << res.err;
  EXPECT_TRUE(empty_or_missing(dir / "out"));
  fs::remove_all(dir);
}

// A NaN in a live input is a finding that names it; the outputs are still written, and
// --strict turns the finding into exit code 1. A NaN past seq_len is never read: no
// finding (a scan over every slot of the used blocks would wrongly report it).
TEST(Run, NonFiniteLiveInputIsAFinding) {
  const fs::path dir = temp_dir();
  ReplaySpec spec;
  spec.seq_lens = {40, 20};  // num_heads 4, num_kv_heads 2, head_size 64, block_size 16
  spec.alibi = false;
  const Case good = tools_test::make_case(spec);
  const auto run_with = [&](const Case& c, const std::string& flags) {
    fs::remove_all(dir / "in");
    fs::remove_all(dir / "out");
    tools_test::write_replay(tools_test::replay_files(c), (dir / "in").string());
    return run_cli("run " + (dir / "in").string() + " --out " + (dir / "out").string() + flags,
                   dir);
  };
  using pagedattn::testing::Dim;
  using pagedattn::testing::KvHead;
  using pagedattn::testing::Physical;

  // Seq 1, token 3, KV head 1, dim 5.
  Case r = good;
  const Physical at = good.where(1, 3);
  r.set_key(at.block, KvHead{1}, at.slot, Dim{5}, NAN);
  Result res = run_with(r, " --kernel v1");
  EXPECT_EQ(res.code, 0) << res.err;
  const std::string where = "key_cache[block " + std::to_string(at.block.v) +
                            "][kv head 1][dim 5][slot 3] = nan (seq 1, token 3";
  EXPECT_NE(res.err.find("finding: non-finite live input " + where), std::string::npos) << res.err;
  // V1 propagates it (heads 2 and 3 read KV head 1): the first NaN output is [1][2][0].
  EXPECT_NE(res.err.find("finding: non-finite output out_v1[1][2][0] = nan"), std::string::npos)
      << res.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "out_v1.npy"));
  res = run_with(r, " --kernel v1 --strict");
  EXPECT_EQ(res.code, 1) << res.err;
  EXPECT_NE(res.err.find(where), std::string::npos) << res.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "out_v1.npy"));

  // Seq 1's second block, slot 9 = token 25 >= seq_len 20: never read.
  r = good;
  const Physical tail = good.where(1, 25);
  r.set_value(tail.block, KvHead{0}, tail.slot, Dim{7}, NAN);
  res = run_with(r, " --strict");
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_EQ(res.err.find("finding"), std::string::npos) << res.err;

  // A query element and an ALiBi slope.
  r = good;
  r.set_q(1, 3, 60, INFINITY);
  res = run_with(r, " --kernel v1");
  EXPECT_NE(res.err.find("non-finite live input query[1][3][60] = inf"), std::string::npos)
      << res.err;
  spec.alibi = true;
  r = tools_test::make_case(spec);
  r.alibi_slopes[2] = NAN;
  res = run_with(r, " --kernel v1 --strict");
  EXPECT_EQ(res.code, 1) << res.err;
  EXPECT_NE(res.err.find("non-finite live input alibi_slopes[2] = nan"), std::string::npos)
      << res.err;
  fs::remove_all(dir);
}

TEST(Limits, PartitionSizeIsAFlag) {
  const fs::path dir = temp_dir();
  const Result res = run_cli("limits --partition-size 1024", dir);
  ASSERT_EQ(res.code, 0) << res.err;
  EXPECT_NE(res.out.find("V2 partition_size 1024"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("ceil(max_seq_len / 1024)"), std::string::npos) << res.out;
  fs::remove_all(dir);
}

}  // namespace
