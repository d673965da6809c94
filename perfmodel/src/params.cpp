// The performance_model fields, their defaults, and reading them from a profile file.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "emu/profile.h"
#include "pagedattn/perfmodel.h"

namespace pagedattn::perf {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const char* const kA100 =
    "calibrated on vLLM issue #1880 (V1 100.4 us, 4K tokens, 64 heads, MQA, batch 1; "
    "perfmodel/README.md)";

}  // namespace

const std::map<std::string, Param>& default_params() {
  static const std::map<std::string, Param> params = {
      {"cycles_per_token", {32, kA100, "calibrated"}},
      {"block_fixed_cycles", {3000, "assumed: setup, two block reductions, write-back", "low"}},
      {"block_overlap", {1.6, "calibrated on vLLM issue #1880 (V2 52.9 us)", "calibrated"}},
      {"reduce_fixed_cycles", {2000, "assumed", "low"}},
      {"reduce_cycles_per_partition", {40, "assumed: one load and two fma per thread", "low"}},
      {"launch_overhead_us", {4, "typical CUDA launch plus tail, assumed", "medium"}},
      {"bandwidth_efficiency",
       {0.9, "a device-to-device copy reaches about 90% of the claim", "medium"}},
      {"registers_per_thread",
       {128,
        "assumed for the attention kernel (nvcc --resource-usage "
        "not yet read)",
        "low"}},
      {"registers_per_multiprocessor", {65536, "CUDA programming guide, cc >= 7.0", "high"}},
      {"max_blocks_per_multiprocessor", {32, "CUDA programming guide, cc 8.0/9.0", "high"}},
  };
  return params;
}

double Device::param(const std::string& key) const {
  auto it = model.find(key);
  if (it != model.end()) return it->second.value;
  auto d = default_params().find(key);
  if (d == default_params().end()) throw std::logic_error("perfmodel: no parameter " + key);
  return d->second.value;
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The file a profile came from, or the shipped file of the same name.
std::string profile_text(const emu::Profile& profile) {
  std::error_code ec;
  if (!profile.file.empty() && fs::is_regular_file(profile.file, ec))
    return read_text(profile.file);
  for (const char* dir : {PAGEDATTN_PERF_SOURCE_PROFILES, PAGEDATTN_PERF_INSTALLED_PROFILES}) {
    fs::path f = fs::path(dir) / (profile.name + ".json");
    if (fs::is_regular_file(f, ec)) return read_text(f);
  }
  return "";
}

void apply_model(Device& d, const json& model, const std::string& origin) {
  if (!model.is_object())
    throw std::runtime_error(origin + ": field 'performance_model' must be an object");
  for (auto it = model.begin(); it != model.end(); ++it) {
    if (!default_params().count(it.key())) {
      std::string allowed;
      for (const auto& [k, v] : default_params()) allowed += (allowed.empty() ? "" : ", ") + k;
      throw std::runtime_error(origin + ": performance_model has unknown field '" + it.key() +
                               "'; allowed: " + allowed);
    }
    Param p;
    const json& v = it->is_object() && it->contains("value") ? (*it)["value"] : *it;
    if (!v.is_number() || !(v.get<double>() >= 0))
      throw std::runtime_error(origin + ": performance_model field '" + it.key() +
                               "' must be a number >= 0");
    p.value = v.get<double>();
    if (it->is_object()) {
      p.source = it->value("source", "");
      p.confidence = it->value("confidence", "");
    }
    d.model[it.key()] = p;
  }
}

}  // namespace

Device device_from_profile(const emu::Profile& profile) {
  Device d;
  d.name = profile.name;
  d.warp_size = profile.warp_size;
  d.multiprocessor_count = profile.multiprocessor_count;
  d.shared_memory_per_block_optin = profile.shared_memory_per_block_optin;
  d.shared_memory_per_multiprocessor = profile.shared_memory_per_multiprocessor;
  d.max_threads_per_multiprocessor = profile.max_threads_per_multiprocessor;
  d.clock_mhz = profile.clock_mhz;
  d.memory_bandwidth_gbps = profile.memory_bandwidth_gbps;
  d.fp32_tflops = profile.fp32_tflops;
  d.model = default_params();
  const std::string text = profile_text(profile);
  if (!text.empty()) {
    json j = json::parse(text, nullptr, false);
    if (!j.is_discarded() && j.contains("performance_model"))
      apply_model(d, j["performance_model"], profile.file.empty() ? profile.name : profile.file);
  }
  return d;
}

Device load_device(const std::string& name_or_path) {
  return device_from_profile(emu::load_profile(name_or_path));
}

}  // namespace pagedattn::perf
