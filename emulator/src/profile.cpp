// Device profiles as JSON data. Each field is {"value": ..., "source": ..., "confidence": ...}
// (or a bare value in a user's quick file). Unknown fields and wrong types are errors
// that name the file, the field and what is allowed.
#include "emu/profile.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

namespace emu {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw ProfileError("device profile " + origin + ": " + what);
}

template <class T>
void read_number(const json& j, const std::string& key, const std::string& origin, T& out,
                 double min, double max) {
  if (!j.is_number()) fail(origin, "field '" + key + "' must be a number, got " + j.dump());
  const double v = j.get<double>();
  if (v < min || v > max) {
    std::ostringstream o;
    o << "field '" << key << "' = " << v << " is out of range; allowed " << min << " .. " << max;
    fail(origin, o.str());
  }
  if constexpr (std::is_integral_v<T>) {
    if (v != static_cast<double>(static_cast<long long>(v)))
      fail(origin, "field '" + key + "' must be an integer, got " + j.dump());
  }
  out = static_cast<T>(v);
}

template <class T, std::size_t N>
void read_triple(const json& j, const std::string& key, const std::string& origin,
                 std::array<T, N>& out, double max) {
  if (!j.is_array() || j.size() != N)
    fail(origin, "field '" + key + "' must be an array of " + std::to_string(N) + " numbers");
  for (std::size_t i = 0; i < N; ++i) read_number(j[i], key, origin, out[i], 1, max);
}

const char* kAllowed =
    "name, description, warp_size, multiprocessor_count, max_threads_per_block, max_block_dim, "
    "max_grid_dim, shared_memory_per_block, shared_memory_per_block_optin, "
    "shared_memory_per_multiprocessor, max_threads_per_multiprocessor, registers_per_block, "
    "compute_capability, total_global_memory, l2_cache_bytes, clock_mhz, memory_bandwidth_gbps, "
    "fp32_tflops, fp16_tflops, expf_fast_ulp, partial_mask_syncwarp, performance_model";

void apply_field(Profile& p, const std::string& key, const json& v, const std::string& origin) {
  if (key == "warp_size") {
    read_number(v, key, origin, p.warp_size, 1, 64);
    if (p.warp_size != 32 && p.warp_size != 64)
      fail(origin, "field 'warp_size' = " + std::to_string(p.warp_size) + "; allowed 32 or 64");
  } else if (key == "multiprocessor_count")
    read_number(v, key, origin, p.multiprocessor_count, 1, 1e6);
  else if (key == "max_threads_per_block")
    read_number(v, key, origin, p.max_threads_per_block, 1, 65536);
  else if (key == "max_block_dim")
    read_triple(v, key, origin, p.max_block_dim, 65536);
  else if (key == "max_grid_dim")
    read_triple(v, key, origin, p.max_grid_dim, 4294967295.0);
  else if (key == "shared_memory_per_block")
    read_number(v, key, origin, p.shared_memory_per_block, 0, 1 << 30);
  else if (key == "shared_memory_per_block_optin")
    read_number(v, key, origin, p.shared_memory_per_block_optin, 0, 1 << 30);
  else if (key == "shared_memory_per_multiprocessor")
    read_number(v, key, origin, p.shared_memory_per_multiprocessor, 0, 1 << 30);
  else if (key == "max_threads_per_multiprocessor")
    read_number(v, key, origin, p.max_threads_per_multiprocessor, 1, 1 << 20);
  else if (key == "registers_per_block")
    read_number(v, key, origin, p.registers_per_block, 1, 1 << 24);
  else if (key == "compute_capability") {
    std::array<int, 2> cc{};
    if (!v.is_array() || v.size() != 2)
      fail(origin, "field 'compute_capability' must be [major, minor]");
    read_number(v[0], key, origin, cc[0], 0, 100);
    read_number(v[1], key, origin, cc[1], 0, 100);
    p.compute_capability_major = cc[0];
    p.compute_capability_minor = cc[1];
  } else if (key == "total_global_memory")
    read_number(v, key, origin, p.total_global_memory, 1, 1e15);
  else if (key == "l2_cache_bytes")
    read_number(v, key, origin, p.l2_cache_bytes, 0, 1e12);
  else if (key == "clock_mhz")
    read_number(v, key, origin, p.clock_mhz, 1, 1e5);
  else if (key == "memory_bandwidth_gbps")
    read_number(v, key, origin, p.memory_bandwidth_gbps, 1e-3, 1e6);
  else if (key == "fp32_tflops")
    read_number(v, key, origin, p.fp32_tflops, 1e-6, 1e6);
  else if (key == "fp16_tflops")
    read_number(v, key, origin, p.fp16_tflops, 1e-6, 1e6);
  else if (key == "expf_fast_ulp") {
    if (v.is_null()) {
      p.expf_fast_ulp_a = -1;  // unknown
      p.expf_fast_ulp_b = 0;
    } else {
      if (!v.is_array() || v.size() != 2)
        fail(origin, "field 'expf_fast_ulp' must be [a, b] (a + b*|x| ulps) or null (unknown)");
      read_number(v[0], key, origin, p.expf_fast_ulp_a, 0, 1e6);
      read_number(v[1], key, origin, p.expf_fast_ulp_b, 0, 1e6);
    }
  } else if (key == "partial_mask_syncwarp") {
    if (!v.is_boolean()) fail(origin, "field 'partial_mask_syncwarp' must be true or false");
    p.partial_mask_syncwarp = v.get<bool>();
  } else
    fail(origin, "unknown field '" + key + "'; allowed: " + kAllowed);
}

void check_consistency(const Profile& p, const std::string& origin) {
  if (p.shared_memory_per_block_optin < p.shared_memory_per_block)
    fail(origin, "shared_memory_per_block_optin (" +
                     std::to_string(p.shared_memory_per_block_optin) +
                     ") must be >= shared_memory_per_block (" +
                     std::to_string(p.shared_memory_per_block) + ")");
  if (p.max_threads_per_block % p.warp_size != 0)
    fail(origin, "max_threads_per_block must be a multiple of warp_size");
}

// The built-in copies, so a program finds the shipped profiles even when neither the
// source tree nor an installation is at hand. Files on disk take precedence.
#include "builtin_profiles.inc"

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw ProfileError("device profile " + path.string() + ": cannot be read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> search_dirs() {
  std::vector<fs::path> dirs;
  if (const char* e = std::getenv("EMU_PROFILE_PATH")) {
    std::stringstream ss(e);
    std::string d;
    while (std::getline(ss, d, ':'))
      if (!d.empty()) dirs.emplace_back(d);
  }
  dirs.emplace_back(EMU_INSTALLED_PROFILE_DIR);
  dirs.emplace_back(EMU_SOURCE_PROFILE_DIR);
  return dirs;
}

std::mutex g_mutex;
std::unique_ptr<const Profile> g_current;

void apply_overrides(Profile& p) {
  const char* e = std::getenv("EMU_PROFILE_SET");
  if (!e || !*e) return;
  std::stringstream ss(e);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      fail("override $EMU_PROFILE_SET", "'" + item + "' is not field=value");
    const std::string key = item.substr(0, eq);
    json v;
    try {
      v = json::parse(item.substr(eq + 1));
    } catch (const json::exception&) {
      fail("override $EMU_PROFILE_SET", "value of '" + key + "' is not a number or JSON value");
    }
    apply_field(p, key, v, "override $EMU_PROFILE_SET");
    p.provenance[key] = {"$EMU_PROFILE_SET", "user override"};
  }
  check_consistency(p, "override $EMU_PROFILE_SET");
}

}  // namespace

Profile parse_profile(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // also out_of_range: a number beyond double (fuzzing)
    fail(origin, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail(origin, "must be a JSON object");
  Profile p;
  p.file = origin;
  if (!j.contains("name") || !j["name"].is_string())
    fail(origin, "field 'name' (a string) is required");
  if (!j.contains("warp_size")) fail(origin, "field 'warp_size' is required");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key == "name") {
      p.name = it->get<std::string>();
      continue;
    }
    if (key == "description") {
      if (!it->is_string()) fail(origin, "field 'description' must be a string");
      p.description = it->get<std::string>();
      continue;
    }
    // Read and checked by the performance model (perfmodel/src/params.cpp), not here.
    if (key == "performance_model") continue;
    const json* value = &*it;
    if (it->is_object()) {
      if (!it->contains("value"))
        fail(origin, "field '" + key +
                         "' is an object without 'value' (expected {value, source, confidence})");
      for (auto f = it->begin(); f != it->end(); ++f) {
        if (f.key() != "value" && f.key() != "source" && f.key() != "confidence" &&
            f.key() != "note")
          fail(origin, "field '" + key + "' has unknown member '" + f.key() +
                           "'; allowed: value, source, confidence, note");
        // Read as strings below: any other type is the file's error, not a type_error
        // escaping the parser (found by fuzz_profile; fuzz/regressions/profile/).
        if (f.key() != "value" && !f->is_string())
          fail(origin, "field '" + key + "' member '" + f.key() + "' must be a string");
      }
      Provenance prov;
      if (it->contains("source")) prov.source = (*it)["source"].get<std::string>();
      if (it->contains("confidence")) prov.confidence = (*it)["confidence"].get<std::string>();
      p.provenance[key] = prov;
      value = &(*it)["value"];
    }
    apply_field(p, key, *value, origin);
  }
  check_consistency(p, origin);
  return p;
}

std::vector<std::string> known_profiles() {
  std::vector<std::string> names;
  for (const auto& b : kBuiltinProfiles) names.emplace_back(b.name);
  return names;
}

Profile load_profile(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
  if (is_path) return parse_profile(read_file(name_or_path), name_or_path);
  for (const auto& dir : search_dirs()) {
    fs::path f = dir / (name_or_path + ".json");
    std::error_code ec;
    if (fs::is_regular_file(f, ec)) return parse_profile(read_file(f), f.string());
  }
  for (const auto& b : kBuiltinProfiles)
    if (name_or_path == b.name) return parse_profile(b.json, std::string("(built-in) ") + b.name);
  std::string known;
  for (const auto& n : known_profiles()) known += (known.empty() ? "" : ", ") + n;
  throw ProfileError("unknown device profile '" + name_or_path + "'; known: " + known +
                     " (or a path to a .json file)");
}

Profile resolve_profile(const std::string& name_or_path) {
  Profile p = load_profile(name_or_path);
  apply_overrides(p);
  return p;
}

void use_profile(const Profile& profile) {
  auto p = std::make_unique<const Profile>(profile);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_current = std::move(p);
}

void use_profile(const std::string& name_or_path) {
  use_profile(resolve_profile(name_or_path));
}

Profile current_profile() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_current) {
    const char* e = std::getenv("EMU_PROFILE");
    g_current = std::make_unique<const Profile>(resolve_profile(e && *e ? e : "h200"));
  }
  return *g_current;
}

}  // namespace emu
