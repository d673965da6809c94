// One parser for flags and config-file keys: each key's text value is split on commas
// and checked against its allowed values, so a flag and a file key fail the same way.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "emu/profile.h"
#include "pagedattn/api.h"
#include "pagedattn/supported.h"  // the head and block sizes
#include "pagedattn/validate.h"
#include "pagedattn_audit/command.h"
#include "pagedattn_audit/config.h"
#include "pagedattn_audit/inputs.h"

namespace pagedattn::audit {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "}";
}
template <class T>
std::vector<std::string> to_strings(const T& list) {
  std::vector<std::string> out;
  for (auto v : list) out.push_back(std::to_string(v));
  return out;
}

std::vector<std::string> split(const std::string& where, const std::string& text) {
  std::vector<std::string> items;
  std::string cur;
  std::istringstream is(text);
  while (std::getline(is, cur, ',')) {
    if (cur.empty()) throw UsageError(where + ": empty item in list '" + text + "'");
    items.push_back(cur);
  }
  if (items.empty()) throw UsageError(where + ": needs a value, got ''");
  return items;
}

long long to_int(const std::string& where, const std::string& t, long long lo, long long hi,
                 const std::string& allowed) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
    throw UsageError(where + " must be " + allowed + ", got '" + t + "'");
  }
  return v;
}

std::vector<int> int_list(const std::string& where, const std::string& text, long long lo,
                          long long hi, const std::string& allowed) {
  std::vector<int> out;
  for (const std::string& t : split(where, text)) {
    out.push_back(static_cast<int>(to_int(where, t, lo, hi, allowed)));
  }
  return out;
}

std::vector<int> member_list(const std::string& where, const std::string& text,
                             const std::vector<int>& allowed) {
  std::vector<int> out;
  for (const std::string& t : split(where, text)) {
    const long long v = to_int(where, t, 0, 1 << 30, "one of " + join(to_strings(allowed)));
    bool ok = false;
    for (int a : allowed) ok |= a == v;
    if (!ok)
      throw UsageError(where + " must be one of " + join(to_strings(allowed)) + ", got '" + t +
                       "'");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

std::string choice(const std::string& where, const std::string& t,
                   const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) {
    if (a == t) return t;
  }
  throw UsageError(where + " must be one of " + join(allowed) + ", got '" + t + "'");
}

std::vector<std::string> choice_list(const std::string& where, const std::string& text,
                                     const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const std::string& t : split(where, text)) out.push_back(choice(where, t, allowed));
  return out;
}

std::string normalize(std::string key) {
  for (char& ch : key) ch = ch == '_' ? '-' : ch;
  return key;
}

const std::vector<std::string> kDtypes{"f32", "f16", "bf16"};
const std::vector<std::string> kKvDtypes{"auto", "fp8", "fp8_e4m3", "fp8_e5m2"};

}  // namespace

const std::vector<KeyInfo>& keys() {
  // The supported sizes as listed once (pagedattn/supported.h).
  static const std::string head_help = list_text(HeadSizeList{}) + " (default 128)";
  static const std::string block_help = list_text(BlockSizeList{}) + " (default 16)";
  static const std::vector<KeyInfo> k = {
      {"config", "FILE", "JSON object with any of these keys (flags given too override it)"},
      {"profile", "NAME[,NAME...]", "emulator device profiles (default bi-v100)"},
      {"num-seqs", "N[,N...]", "sequences per case, 1..65535 (default 1)"},
      {"num-heads", "N[,N...]", "query heads (default 32)"},
      {"num-kv-heads", "N[,N...]",
       "KV heads; pairs where num-heads % num-kv-heads != 0 are "
       "skipped (default 8)"},
      {"head-size", "N[,N...]", head_help.c_str()},
      {"block-size", "N[,N...]", block_help.c_str()},
      {"dtype", "T[,T...]", "query/output dtype: f32, f16, bf16 (default f16)"},
      {"kv-cache-dtype", "T[,T...]", "auto, fp8 (= fp8_e4m3), fp8_e4m3, fp8_e5m2 (default auto)"},
      {"seq-lens", "N[,N...]",
       "longest sequence, 1..10000000; other sequences of a case get "
       "seeded lengths in [1, N] (default 1000)"},
      {"partition-size", "P[,P...]",
       "V2 tokens per partition, a multiple of block-size in "
       "[64, 4096] (default 512)"},
      {"distribution", "D[,D...]",
       "input distribution: vllm_uniform, normal, dominant, "
       "near_ties, large_logits, nan_tail, fp16_max, aligned_rounding, or all "
       "(default vllm_uniform)"},
      {"seed", "S[,S...]", "input seeds, >= 0 (default 0)"},
      {"alibi", "off|on[,...]", "ALiBi slopes 2^(-8(h+1)/H) (default off)"},
      {"scale", "X", "softmax scale, finite (default head_size^-0.5)"},
      {"k-scale", "X",
       "replay with an fp8 cache: key dequantization scale, finite, > 0 (default 1)"},
      {"v-scale", "X",
       "replay with an fp8 cache: value dequantization scale, finite, > 0 (default 1)"},
      {"kernel", "v1|v2|both|v1_grouped|v2_grouped|grouped|all",
       "kernels to audit: both = v1,v2 (default); the grouped variants run with "
       "Options::grouped (one block per KV head's query heads; where a shape has no grouped "
       "kernel the case says why and runs the per-head one); all = the four"},
      {"numerics", "ours|vllm|both|ablation",
       "ours = Numerics::exact_fp32, vllm = Numerics::vllm_compatible; ablation = ours, "
       "each single vLLM choice alone (vllm_partials_only, vllm_epsilon_only, "
       "vllm_round_p_only) and vllm (default both)"},
      {"exp-ulp", "K[,K...]", "exp model: __expf wrong by up to K ulps, 0..1000 (default 0)"},
      {"exp-mode", "random|up|down|adversarial",
       "direction of the exp error; adversarial: per token, the sign of v_i - y on each "
       "row's most exposed element (default random)"},
      {"exp-seed", "S", "seed of the random exp model (default 0)"},
      {"backend", "emulator|cuda|both",
       "emulator, the native GPU, or both on the same inputs (cuda needs a build with nvcc "
       "and a GPU; default emulator)"},
      {"threads", "N", "emulator host threads, 1..256 (default 2)"},
      {"replay", "DIR",
       "audit a replay folder as `pagedattn run` reads it, instead of a grid "
       "(shape keys are then ignored; kv-cache-dtype takes one value)"},
      {"bf16", nullptr, "replay: '<u2' arrays hold bfloat16 bits"},
      {"json", "FILE", "write the cases as JSON (schema: audit/SCHEMA.md)"},
      {"csv", "FILE", "write the cases as CSV, one row per case"},
      {"quiet", nullptr, "do not print the table"},
      {"traffic", nullptr,
       "count the global-memory bytes each emulator case's launches read and write (runs "
       "pagedattn-traffic, beside pagedattn, once per kernel, variant, partition size and "
       "numerics of an input set: seconds per case; JSON key traffic)"},
      {"fail-on", "G[,G...]",
       "CI gates, each with its own exit code: error (3), nonfinite (4), over-bound (5; a "
       "case without a bound is never over)"},
  };
  return k;
}

std::vector<KernelVariant> kernel_variants(const std::string& s) {
  const KernelVariant v1{"v1", false}, v2{"v2", false}, v1g{"v1", true}, v2g{"v2", true};
  if (s == "v1") return {v1};
  if (s == "v2") return {v2};
  if (s == "both") return {v1, v2};
  if (s == "v1_grouped") return {v1g};
  if (s == "v2_grouped") return {v2g};
  if (s == "grouped") return {v1g, v2g};
  if (s == "all") return {v1, v2, v1g, v2g};
  throw UsageError("--kernel: unknown '" + s +
                   "' (v1, v2, both, v1_grouped, v2_grouped, grouped, all)");
}

void apply_key(Config& c, const std::string& raw_key, const std::string& v, const std::string& w) {
  const std::string key = normalize(raw_key);
  if (key == "profile") {
    c.profiles = split(w, v);
    for (const std::string& p : c.profiles) {
      try {
        emu::load_profile(p);
      } catch (const emu::ProfileError& e) {
        throw UsageError(w + " must name a device profile " + join(emu::known_profiles()) +
                         " or a profile .json file, got '" + p + "'");
      }
    }
  } else if (key == "num-seqs") {
    c.num_seqs = int_list(w, v, 1, kMaxGridYZ, "an integer in [1, 65535]");
  } else if (key == "num-heads") {
    c.num_heads = int_list(w, v, 1, 65535, "an integer in [1, 65535]");
  } else if (key == "num-kv-heads") {
    c.num_kv_heads = int_list(w, v, 1, 65535, "an integer in [1, 65535]");
  } else if (key == "head-size") {
    c.head_sizes = member_list(w, v, {std::begin(kHeadSizes), std::end(kHeadSizes)});
  } else if (key == "block-size") {
    c.block_sizes = member_list(w, v, {std::begin(kBlockSizes), std::end(kBlockSizes)});
  } else if (key == "dtype") {
    c.dtypes = choice_list(w, v, kDtypes);
  } else if (key == "kv-cache-dtype") {
    c.kv_cache_dtypes = choice_list(w, v, kKvDtypes);
    for (std::string& d : c.kv_cache_dtypes) d = d == "fp8" ? "fp8_e4m3" : d;
  } else if (key == "seq-lens") {
    c.seq_lens = int_list(w, v, 1, 10000000, "an integer in [1, 10000000]");
  } else if (key == "partition-size") {
    c.partition_sizes = int_list(w, v, kMinPartitionSize, kMaxPartitionSize,
                                 "a multiple of block-size in [64, 4096]");
  } else if (key == "distribution") {
    std::vector<std::string> allowed = distribution_names();
    allowed.push_back("all");
    c.distributions = choice_list(w, v, allowed);
    for (const std::string& d : c.distributions) {
      if (d == "all") c.distributions = distribution_names();
    }
  } else if (key == "seed") {
    c.seeds.clear();
    for (const std::string& t : split(w, v)) {
      c.seeds.push_back(static_cast<std::uint64_t>(
          to_int(w, t, 0, std::numeric_limits<long long>::max(), "an integer >= 0")));
    }
  } else if (key == "alibi") {
    c.alibi = choice_list(w, v, {"off", "on"});
  } else if (key == "scale") {
    errno = 0;
    char* end = nullptr;
    const double s = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(s)) {
      throw UsageError(w + " must be a finite number, got '" + v + "'");
    }
    c.has_scale = true;
    c.scale = s;
  } else if (key == "k-scale" || key == "v-scale") {
    errno = 0;
    char* end = nullptr;
    const double s = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(s) || !(s > 0)) {
      throw UsageError(w + " must be a finite number > 0, got '" + v + "'");
    }
    (key == "k-scale" ? c.k_scale : c.v_scale) = s;
  } else if (key == "fail-on") {
    c.fail_on = choice_list(w, v, {"error", "nonfinite", "over-bound"});
  } else if (key == "kernel") {
    c.kernel = choice(w, v, {"v1", "v2", "both", "v1_grouped", "v2_grouped", "grouped", "all"});
  } else if (key == "numerics") {
    c.numerics = choice(w, v, {"ours", "vllm", "both", "ablation"});
  } else if (key == "exp-ulp") {
    c.exp_ulps = int_list(w, v, 0, 1000, "an integer in [0, 1000]");
  } else if (key == "exp-mode") {
    c.exp_mode = choice(w, v, {"random", "up", "down", "adversarial"});
  } else if (key == "exp-seed") {
    c.exp_seed = static_cast<std::uint64_t>(
        to_int(w, v, 0, std::numeric_limits<long long>::max(), "an integer >= 0"));
  } else if (key == "backend") {
    c.backend = choice(w, v, {"emulator", "cuda", "both"});
  } else if (key == "threads") {
    c.threads = static_cast<int>(to_int(w, v, 1, 256, "an integer in [1, 256]"));
  } else if (key == "replay") {
    if (v.empty()) throw UsageError(w + " must name a folder, got ''");
    c.replay_dir = v;
  } else if (key == "bf16") {
    c.bf16 = choice(w, v, {"", "true", "false"}) != "false";
  } else if (key == "json") {
    c.json_path = v;
  } else if (key == "csv") {
    c.csv_path = v;
  } else if (key == "quiet") {
    c.quiet = choice(w, v, {"", "true", "false"}) != "false";
  } else if (key == "traffic") {
    c.traffic = choice(w, v, {"", "true", "false"}) != "false";
  } else {
    std::vector<std::string> names;
    for (const KeyInfo& k : keys()) names.push_back(k.name);
    throw UsageError(w + ": unknown key '" + raw_key + "' (allowed: " + join(names) + ")");
  }
}

void apply_config_file(Config& c, const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UsageError("--config " + path + ": cannot be read");
  std::ostringstream text;
  text << f.rdbuf();
  apply_config_json(c, text.str(), path);
}

void apply_config_json(Config& c, const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a
                                                  // number beyond double (found by fuzzing)
    throw UsageError(path + ": malformed JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw UsageError(path + ": must be a JSON object of audit keys");
  std::vector<std::string> names;
  for (const KeyInfo& k : keys()) {
    if (std::string(k.name) != "config") names.push_back(k.name);
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string where = path + ": key '" + it.key() + "'";
    const std::string key = normalize(it.key());
    bool known = false;
    for (const std::string& n : names) known |= n == key;
    if (!known) {
      throw UsageError(path + ": unknown key '" + it.key() + "' (allowed: " + join(names) + ")");
    }
    // Every value becomes the flag's text form, so both paths share one set of checks.
    const auto scalar = [&](const nlohmann::json& v) -> std::string {
      if (v.is_string()) return v.get<std::string>();
      if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
      if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
      if (v.is_number_float()) {
        std::ostringstream os;
        os.precision(17);
        os << v.get<double>();
        return os.str();
      }
      throw UsageError(where + " must be a string, number, boolean or an array of them, got " +
                       v.dump());
    };
    std::string text;
    if (it->is_array()) {
      if (it->empty()) throw UsageError(where + " must not be an empty array");
      for (std::size_t i = 0; i < it->size(); ++i) text += (i ? "," : "") + scalar((*it)[i]);
    } else {
      text = scalar(*it);
    }
    apply_key(c, key, text, where);
  }
}

Config parse_command_line(const std::vector<std::string>& argv, bool* help) {
  CLI::App app("", "pagedattn audit");
  const CommandLine line(app);
  *help = false;
  try {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11's order
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    *help = true;
    return Config{};
  } catch (const CLI::ParseError& e) {
    throw UsageError(usage_message(e, app));
  }
  return line.config();
}

void check_config(const Config& c) {
  if (c.backend != "emulator" && !has_cuda_backend()) {
    throw UsageError("--backend " + c.backend +
                     ": this build has no CUDA backend (it was built without nvcc); rebuild "
                     "with nvcc on PATH and -DPAGEDATTN_CUDA=ON, or use --backend emulator");
  }
  if (c.replay_dir.empty()) {
    for (int p : c.partition_sizes) {
      for (int b : c.block_sizes) {
        if (p % b != 0) {
          throw UsageError(
              "--partition-size must be a multiple of every --block-size in "
              "[64, 4096], got " +
              std::to_string(p) + " with block size " + std::to_string(b));
        }
      }
    }
    // V2's grid has one z index per partition: over the limit no case could launch.
    bool v2 = false;
    for (const KernelVariant& k : kernel_variants(c.kernel)) v2 |= k.kernel == "v2";
    if (v2) {
      for (int p : c.partition_sizes) {
        for (int len : c.seq_lens) {
          const long long parts = (static_cast<long long>(len) + p - 1) / p;
          if (parts > kMaxGridYZ) {
            throw UsageError("--partition-size " + std::to_string(p) + " with --seq-lens " +
                             std::to_string(len) + " gives " + std::to_string(parts) +
                             " partitions, over the grid's z limit 65535: use a partition "
                             "size >= " +
                             std::to_string((len + kMaxGridYZ - 1) / kMaxGridYZ) +
                             " (or --kernel v1)");
          }
        }
      }
    }
    if (c.k_scale != 1 || c.v_scale != 1) {
      throw UsageError(
          "--k-scale and --v-scale apply to --replay with an fp8 cache; the grid's "
          "fp8 inputs choose their own scales");
    }
    bool any = false;
    for (int h : c.num_heads) {
      for (int kv : c.num_kv_heads) any |= h % kv == 0;
    }
    if (!any) {
      throw UsageError(
          "--num-heads and --num-kv-heads: no pair with num-heads divisible by "
          "num-kv-heads (GQA groups must be whole)");
    }
  } else if (c.kv_cache_dtypes.size() != 1) {
    throw UsageError("--kv-cache-dtype takes one value with --replay");
  }
  // Report files are written at the end; a path that cannot be written fails now, before
  // minutes of work, and nothing is written.
  for (const std::string* p : {&c.json_path, &c.csv_path}) {
    if (p->empty()) continue;
    const std::filesystem::path parent = std::filesystem::path(*p).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
      throw UsageError((p == &c.json_path ? "--json " : "--csv ") + *p + ": folder " +
                       parent.string() + " does not exist");
    }
    if (std::filesystem::is_directory(*p, ec)) {
      throw UsageError((p == &c.json_path ? "--json " : "--csv ") + *p + " is a folder");
    }
  }
}

std::string help_text() {
  CLI::App app("", "pagedattn audit");
  const CommandLine line(app);
  return app.help();
}

}  // namespace pagedattn::audit
