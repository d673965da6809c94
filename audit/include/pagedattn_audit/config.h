// What an audit covers: the grid (every list is one axis of a cartesian product) and how
// to run it. The same keys come from command-line flags ("--num-heads 32,40") and from a
// JSON config file ({"num-heads": [32, 40]}), through one parser, so both reject the same
// mistakes with the same message.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedattn::audit {

// A usage mistake (unknown flag or key, bad value, malformed config file): the message
// names the flag or file and key, what it got and the allowed values. Exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Config {
  // Grid axes.
  std::vector<std::string> profiles{"bi-v100"};
  std::vector<int> num_seqs{1};
  std::vector<int> num_heads{32};
  std::vector<int> num_kv_heads{8};
  std::vector<int> head_sizes{128};
  std::vector<int> block_sizes{16};
  std::vector<std::string> dtypes{"f16"};            // f32, f16, bf16 (query and output)
  std::vector<std::string> kv_cache_dtypes{"auto"};  // auto, fp8_e4m3, fp8_e5m2
  std::vector<int> seq_lens{1000};                   // the longest sequence of each case
  std::vector<int> partition_sizes{512};
  std::vector<std::string> distributions{"vllm_uniform"};
  std::vector<std::uint64_t> seeds{0};
  std::vector<std::string> alibi{"off"};  // off, on
  std::vector<int> exp_ulps{0};           // exp model: wrong by up to k ulps

  // How to run.
  std::string kernel = "both";      // v1, v2, both, v1_grouped, v2_grouped, grouped, all
  std::string numerics = "both";    // ours (Numerics::exact_fp32), vllm, both, ablation
  std::string exp_mode = "random";  // random, up, down, adversarial (testing::AdversarialExp)
  std::uint64_t exp_seed = 0;
  std::string backend = "emulator";  // emulator, cuda, both
  int threads = 2;                   // emulator host threads
  bool has_scale = false;
  double scale = 0;                  // default head_size^-0.5
  double k_scale = 1, v_scale = 1;   // fp8 dequantization scales (replay; the grid's fp8
                                     // generators choose their own)
  std::vector<std::string> fail_on;  // CI gates: error, nonfinite, over-bound
  std::string replay_dir;            // non-empty: audit this replay folder instead of a grid
  bool bf16 = false;                 // replay: '<u2' arrays are bfloat16 bits
  std::string json_path, csv_path;   // reports to write ("" = none)
  bool quiet = false;                // no table on stdout
  bool traffic = false;              // count each emulator case's bytes (pagedattn_audit/traffic.h)
};

// One kernel a case runs: V1 or V2, per query head or grouped (Options::grouped).
struct KernelVariant {
  std::string kernel;  // "v1" or "v2"
  bool grouped = false;
  const char* variant() const { return grouped ? "grouped" : "ungrouped"; }
};
// What `--kernel` selects, in run order: v1, v2, both (v1, v2), v1_grouped, v2_grouped,
// grouped (v1_grouped, v2_grouped), all (the four). Throws UsageError for another name.
std::vector<KernelVariant> kernel_variants(const std::string& selection);

// One key's name (flag spelling without "--"), whether it takes a value, and its help line.
struct KeyInfo {
  const char* name;
  const char* value;  // e.g. "N[,N...]"; nullptr for a switch
  const char* help;
};
const std::vector<KeyInfo>& keys();

// Sets `key` (flag spelling without "--"; '_' accepted for '-') from its text value
// (comma-separated for a list). `where` prefixes messages ("--num-heads", "cfg.json: key
// 'num-heads'"). Throws UsageError.
void apply_key(Config& c, const std::string& key, const std::string& value,
               const std::string& where);

// Applies a JSON config file: an object whose keys are keys() names (not "config"/"help"),
// values a string, number, boolean or an array of strings/numbers. Throws UsageError naming
// the file and the key.
void apply_config_file(Config& c, const std::string& path);
// The same for the file's text; `origin` names it in messages.
void apply_config_json(Config& c, const std::string& text, const std::string& origin);

// Parses a command line (after "audit") with CLI11 (pagedattn_audit/command.h's
// CommandLine): "--flag value" or "--flag=value"; --config is applied first, so flags
// override the file. Sets *help for --help/-h. Throws UsageError.
Config parse_command_line(const std::vector<std::string>& argv, bool* help);

// Cross-key rules (V2's partition size a multiple of each block size, heads divisible by
// KV heads somewhere in the grid, report paths writable, backend available). Throws UsageError.
void check_config(const Config& c);

// The full `pagedattn audit --help` text.
std::string help_text();

}  // namespace pagedattn::audit
