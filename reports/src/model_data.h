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

}  // namespace pagedattn::report
