// The report's GPU and targets sections as JSON: what the GPU bundle's run wrote
// (gpu_bench/bundle/run.sh: out/gpu/) and what the compilers reported for every kernel
// instantiation per target (scripts/targets/compile_targets.sh: out/targets/).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace pagedattn::report {

// gpu_bench.json with the model's prediction beside each measured case (the profile named
// like the device, else the probed profile), plus summaries of gpu_run.json (the machine
// and each step), gpu_check.json and audit_both.json's native rows; null if the folder
// has neither gpu_bench.json nor gpu_run.json.
nlohmann::json gpu_section(const std::string& gpu_dir);

// targets.json with, per target, the performance model's assumed registers per thread
// (perfmodel/) of the profile the target stands for; null if absent.
nlohmann::json targets_section(const std::string& targets_dir);

}  // namespace pagedattn::report
