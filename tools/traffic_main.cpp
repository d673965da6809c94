// `pagedattn-traffic`: the global-memory bytes each kernel launch reads and writes for one
// shape, counted by the emulator (emu/traffic.h) on the race-instrumented kernels
// (emulator/tests: kernels_race_instrumented). The `pagedattn` program links the plain
// kernels, which count nothing, so `limits --traffic` and `audit --traffic` run this
// program, found next to theirs (pagedattn_audit/traffic.h), and read its JSON on stdout.
// Inputs are seeded uniform values: the kernels' addresses depend on the shape, the
// sequence lengths, ALiBi and the numerics choices, not on the values.
#include <emu/profile.h>
#include <emu/traffic.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "pagedattn/resources.h"
#include "pagedattn/supported.h"
#include "pagedattn_testing/formats.h"
#include "pagedattn_testing/kernel_under_test.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace {

using namespace pagedattn;
using json = nlohmann::json;

struct Settings {
  std::string profile = "bi-v100", dtype = "f16", kv_cache_dtype = "auto";
  std::string head_size = "128", block_size = "16", partition_size = "512";
  std::string num_heads = "32", num_kv_heads = "8", seq_lens = "1000";
  std::string kernel = "both", variant = "both";
  std::vector<std::string> vllm_choices;
  bool alibi = false;
};

std::vector<std::string> to_strings(const int* begin, const int* end) {
  std::vector<std::string> v;
  for (const int* p = begin; p != end; ++p) v.push_back(std::to_string(*p));
  return v;
}

std::vector<int> parse_seq_lens(const std::string& text) {
  std::vector<int> lens;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long long n = -1;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    if (used != item.size() || n < 0 || n > 100000000) {
      throw cli::UsageError("--seq-lens: each length must be an integer in [0, 100000000], got '" +
                            item + "' in '" + text + "'");
    }
    lens.push_back(static_cast<int>(n));
  }
  if (lens.empty()) throw cli::UsageError("--seq-lens: give at least one length, got ''");
  return lens;
}

// The spec of the shape, with spare blocks chosen so that no other tensor of the call has
// the size of a cache tensor: the two cache allocations are then found by their size.
testing::Case make_case(const Settings& s, const std::vector<int>& lens) {
  testing::UniformSpec spec;
  if (!testing::parse_short_name(s.dtype, &spec.scalar)) throw cli::UsageError("--dtype");
  if (!parse_kv_cache_dtype(s.kv_cache_dtype, &spec.cache))
    throw cli::UsageError("--kv-cache-dtype");
  spec.head_size = std::stoi(s.head_size);
  spec.block_size = std::stoi(s.block_size);
  spec.num_heads = std::stoi(s.num_heads);
  spec.num_kv_heads = std::stoi(s.num_kv_heads);
  if (spec.num_heads % spec.num_kv_heads != 0) {
    throw cli::UsageError("--num-heads " + s.num_heads + " must be a multiple of --num-kv-heads " +
                          s.num_kv_heads);
  }
  if (std::stoi(s.partition_size) % spec.block_size != 0) {
    throw cli::UsageError("--partition-size must be a multiple of block size " + s.block_size +
                          " in [64, 4096], got " + s.partition_size);
  }
  spec.seq_lens = lens;
  spec.alibi = s.alibi;
  const std::int64_t P = std::stoi(s.partition_size), S = lens.size(), H = spec.num_heads;
  std::int64_t longest = 0;
  for (int n : lens) longest = std::max<std::int64_t>(longest, n);
  const std::int64_t NP = std::max<std::int64_t>(1, max_num_partitions(longest, P));
  const std::int64_t io = testing::traits(spec.scalar).size;
  const std::set<std::uint64_t> others = {std::uint64_t(S * H * spec.head_size * io),
                                          std::uint64_t(S * H * NP * 4),
                                          std::uint64_t(S * H * NP * spec.head_size * 4),
                                          std::uint64_t(S * H * NP * spec.head_size * io),
                                          std::uint64_t(H * 4),
                                          std::uint64_t(S * 4)};
  for (spec.spare_blocks = 1;; ++spec.spare_blocks) {
    testing::Case c = testing::uniform_case(spec);
    if (!others.count(c.key_cache.size()) && c.query.size() != c.key_cache.size() &&
        c.block_tables.size() * 4 != c.key_cache.size())
      return c;
  }
}

// One kernel call (V1, or V2 and its reduce), every launch it made.
json measure(const testing::Case& c, Kernel k, bool grouped, const Settings& s, int warp_size) {
  Options opt;
  opt.grouped = grouped;
  opt.partition_size = std::stoi(s.partition_size);
  for (const std::string& choice : s.vllm_choices) {
    opt.vllm_choices.partials_in_output_dtype |= choice == "partials";
    opt.vllm_choices.epsilon_denominator |= choice == "epsilon";
    opt.vllm_choices.round_probabilities |= choice == "round_p";
  }
  json run = {{"kernel", kernel_name(k)},
              {"variant", grouped ? "grouped" : "ungrouped"},
              {"status", "ok"},
              {"reason", ""},
              {"grouped_fallback", nullptr},
              {"launches", json::array()}};
  if (grouped) {
    if (const char* why = testing::grouped_fallback(c, k, warp_size, opt.partition_size))
      run["grouped_fallback"] = why;
  }
  emu::take_launch_traffic();
  emu::set_count_traffic(true);
  try {
    testing::run_kernel(c, k, s.profile, opt, false);
  } catch (const LaunchError& e) {
    run["status"] = "refused";
    run["reason"] = e.what();
  } catch (const std::exception& e) {
    run["status"] = "error";
    run["reason"] = e.what();
  }
  emu::set_count_traffic(false);
  for (const emu::LaunchTraffic& t : emu::take_launch_traffic()) {
    std::uint64_t kv = 0;
    int kv_allocations = 0;
    for (const emu::AllocationTraffic& a : t.allocations) {
      if (a.size != c.key_cache.size()) continue;
      kv += a.bytes_read;
      ++kv_allocations;
    }
    if (kv_allocations != 2)
      throw std::runtime_error("found " + std::to_string(kv_allocations) +
                               " allocations of the cache's size in launch " + t.kernel +
                               ", expected 2");
    run["launches"].push_back(
        {{"kernel", t.kernel},
         {"role", t.kernel.find("reduce") != std::string::npos ? "reduce" : "attention"},
         {"instrumented", t.instrumented},
         {"bytes_read", t.bytes_read},
         {"bytes_written", t.bytes_written},
         {"kv_bytes_read", kv}});
  }
  return run;
}

int run_traffic(const Settings& s) {
  const std::vector<int> lens = parse_seq_lens(s.seq_lens);
  const testing::Case c = make_case(s, lens);
  const int ws = emu::load_profile(s.profile).warp_size;
  std::uint64_t exist = 0;
  for (int n : lens)
    exist += std::uint64_t(n) * 2 * c.num_kv_heads * c.head_size *
             testing::traits(testing::cache_element(c.scalar, c.cache)).size;
  json out = {{"tool", "pagedattn-traffic"},
              {"kv_bytes_exist", exist},
              {"query_bytes", c.query.size()},
              {"block_table_bytes", c.block_tables.size() * 4},
              {"runs", json::array()}};
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    if (s.kernel != "both" && s.kernel != kernel_name(k)) continue;
    for (bool grouped : {false, true}) {
      if (s.variant != "both" && (s.variant == "grouped") != grouped) continue;
      out["runs"].push_back(measure(c, k, grouped, s, ws));
    }
  }
  std::cout << out.dump(1) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto s = std::make_shared<Settings>();
  CLI::App app(
      "Prints, as JSON, the global-memory bytes each launch of the attention kernels reads and "
      "writes for one shape, counted on the emulator with the instrumented kernels "
      "(`pagedattn limits --traffic` and `pagedattn audit --traffic` run it).",
      "pagedattn-traffic");
  app.get_formatter()->label("Usage", "usage");
  using pagedattn::kBlockSizes;
  using pagedattn::kHeadSizes;
  app.add_option("--profile", s->profile, "device profile or profile .json file (default bi-v100)")
      ->check(cli::profile_name());
  app.add_option("--dtype", s->dtype, "query and output dtype (default f16)")
      ->check(cli::one_of({"f32", "f16", "bf16"}));
  app.add_option("--kv-cache-dtype", s->kv_cache_dtype, "vLLM's kv_cache_dtype (default auto)")
      ->check(cli::one_of({"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}));
  app.add_option("--head-size", s->head_size, "head size (default 128)")
      ->check(cli::one_of(to_strings(std::begin(kHeadSizes), std::end(kHeadSizes))));
  app.add_option("--block-size", s->block_size, "tokens per KV-cache block (default 16)")
      ->check(cli::one_of(to_strings(std::begin(kBlockSizes), std::end(kBlockSizes))));
  app.add_option("--partition-size", s->partition_size, "V2 tokens per partition (default 512)")
      ->check(cli::int_in(kMinPartitionSize, kMaxPartitionSize, "an integer in [64, 4096]"));
  app.add_option("--num-heads", s->num_heads, "query heads (default 32)")
      ->check(cli::int_in(1, 256, "an integer in [1, 256]"));
  app.add_option("--num-kv-heads", s->num_kv_heads, "KV heads (default 8)")
      ->check(cli::int_in(1, 256, "an integer in [1, 256]"));
  app.add_option("--seq-lens", s->seq_lens,
                 "each sequence's length, comma-separated (default 1000)");
  app.add_option("--kernel", s->kernel, "v1, v2 or both (default)")
      ->check(cli::one_of({"v1", "v2", "both"}));
  app.add_option("--variant", s->variant, "ungrouped, grouped or both (default)")
      ->check(cli::one_of({"ungrouped", "grouped", "both"}));
  app.add_option("--vllm-choices", s->vllm_choices, "vLLM numerics choices, comma-separated")
      ->delimiter(',')
      ->check(cli::one_of({"partials", "epsilon", "round_p"}));
  app.add_flag("--alibi", s->alibi, "ALiBi slopes");
  try {
    app.parse(argc, argv);
    return run_traffic(*s);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "pagedattn-traffic: " << e.what() << "\n";
    return cli::kExitUsage;
  } catch (const cli::UsageError& e) {
    std::cerr << "pagedattn-traffic: " << e.what() << "\n";
    return cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "pagedattn-traffic: " << e.what() << "\n";
    return cli::kExitFailure;
  }
}
