// The report's limits and performance-model sections as JSON.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagedattn::report {

nlohmann::json limits_section(const std::vector<std::string>& profiles);
nlohmann::json model_section(const std::vector<std::string>& profiles);
// Published measurements beside the model's predictions (sources in perfmodel/README.md).
nlohmann::json published_section();
// scripts/gpu_check.sh's gpu_bench.json with the model's prediction beside each measured
// case (the profile named like the device, else device-probe's profile); null if absent.
nlohmann::json gpu_section(const std::string& gpu_dir);

}  // namespace pagedattn::report
