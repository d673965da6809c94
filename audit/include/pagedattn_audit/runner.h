// The audit runner: for each input case, the exact reference once, then every kernel,
// profile, partition size, numerics and exp model asked for, each compared with it.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pagedattn_audit/config.h"
#include "pagedattn_audit/inputs.h"
#include "pagedattn_audit/metrics.h"
#include "pagedattn_audit/traffic.h"
#include "pagedattn/params.h"
#include "pagedattn_bound/bound.h"

namespace pagedattn::audit {

struct CaseResult {
  // What ran.
  std::string kernel;                 // "v1" or "v2"
  std::string variant = "ungrouped";  // "grouped": run with Options::grouped
  // A grouped case that ran the per-head kernels: why (grouped_fallback_reason,
  // pagedattn/resources.h); "" when the grouped kernels launched or for ungrouped cases.
  std::string grouped_fallback;
  std::string profile, backend;
  std::string dtype, kv_cache_dtype, distribution;
  std::string numerics;  // a NumericsVariant name: "ours", "vllm", "vllm_*_only"
  int num_seqs = 0, num_heads = 0, num_kv_heads = 0, head_size = 0, block_size = 0;
  std::int64_t seq_len = 0;  // the longest sequence (max_seq_len)
  int partition_size = 0;    // V2 only (0 for V1: reported as null)
  bool alibi = false;
  std::uint64_t seed = 0;
  std::string exp_mode;  // "exact_host", "random", "up", "down", "adversarial"
  int exp_max_ulp = 0;
  std::uint64_t exp_seed = 0;
  // The profile's stated __expf accuracy a + b|x| ulps (a < 0: unknown).
  double exp_stated_a = -1, exp_stated_b = 0;

  // What happened.
  std::string status;  // "ok", "refused" (LaunchError), "error" (any other failure)
  bool launched = false;
  std::string reason;              // why it did not launch; "" when launched
  std::optional<Metrics> metrics;  // when launched
  // The proven bound's parts at the element of err_over_bound (launched rows with an error).
  std::optional<bound::Bound> worst_bound;
  // Theorem kernel_error_bound (proofs/error_bound.md), read from `metrics`: the largest
  // per-element bound, and max over elements of |out - exact| / that element's bound.
  std::optional<double> bound() const { return metrics ? metrics->bound : std::nullopt; }
  std::optional<double> err_over_bound() const {
    return metrics ? metrics->err_over_bound : std::nullopt;
  }
  // Non-finite findings (findings.h): the first NaN/inf live input, the first NaN/inf
  // output; empty when there is none.
  std::vector<std::string> findings;
  double time_s = 0;      // emulator: the kernel call, wall clock; cuda: cudaEvent time
  double ref_time_s = 0;  // the reference of this case's inputs (shared)
  // --backend both, cuda cases: max |gpu out - emulator out| against the first emulator
  // case of the same kernel, variant, partition size and numerics.
  std::optional<double> gpu_vs_emulator_max_abs_diff;
  // --traffic: the bytes this case's launches moved, counted on the emulator for its shape
  // and sequence lengths (traffic.h; `runs` holds this case's one run), when measured;
  // else why not.
  std::optional<Traffic> traffic;
  std::string traffic_absent = "not asked (--traffic)";
};

// One numerics setting a case runs with, and its report name.
struct NumericsVariant {
  std::string name;  // "ours", "vllm", "vllm_partials_only", "vllm_epsilon_only",
                     // "vllm_round_p_only"
  Numerics numerics = Numerics::exact_fp32;
  NumericsChoices choices{};  // Options::vllm_choices (under exact_fp32)
};

// The variants `--numerics` selects: ours, vllm, both (ours, vllm) or ablation (ours,
// each single vLLM choice alone, then vllm). Throws UsageError for another name.
std::vector<NumericsVariant> numerics_variants(const std::string& selection);

// Runs the grid of `c` (c.replay_dir must be empty). `progress` (may be empty) gets one
// line per finished case. Throws UsageError for a grid value the generators reject.
std::vector<CaseResult> run_grid(const Config& c,
                                 const std::function<void(const CaseResult&)>& progress = {});

// Where a case's inputs came from, for its report rows.
struct Origin {
  std::string distribution = "replay";  // an input distribution, or "replay"
  std::uint64_t seed = 0;
};

// Runs the kernels `c` asks for on given inputs (a replay folder, or generated ones).
std::vector<CaseResult> run_inputs(const Config& c, const testing::Case& in,
                                   const Origin& origin = {},
                                   const std::function<void(const CaseResult&)>& progress = {});

}  // namespace pagedattn::audit
