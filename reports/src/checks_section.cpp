// Reads the check's JSON files into the report's "implementations checked" rows.
#include "checks_section.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

namespace pagedattn::report {
namespace {

using json = nlohmann::json;

// A version's summary for the row: verdict, cases, worst case, shrunk failure.
json version_row(const json& v) {
  json r = {{"version", v.value("version", "?")},
            {"verdict", v.value("verdict", "?")},
            {"cases", v.value("cases", 0)},
            {"cases_per_s", v.value("cases_per_s", 0.0)}};
  const json& w = v.contains("worst") ? v["worst"] : json();
  if (w.is_object()) {
    for (const char* k : {"err_ulps", "over_ours", "over_vllm", "case", "where"}) {
      r[std::string("worst_") + k] = w.contains(k) ? w[k] : json();
    }
  }
  const json& f = v.contains("failure") ? v["failure"] : json();
  if (f.is_object()) {
    for (const char* k : {"reason", "case", "replay_dir", "reproduce"}) {
      r[std::string("failure_") + k] = f.contains(k) ? f[k] : json();
    }
  }
  return r;
}

}  // namespace

json checks_section(const std::string& dir) {
  namespace fs = std::filesystem;
  json out = {{"dir", dir}, {"rows", json::array()}, {"ignored", json::array()}};
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::map<std::pair<std::string, std::string>, json> rows;  // (implementation, device)
  for (const fs::path& p : files) {
    std::ifstream f(p);
    const json j = json::parse(f, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "pagedattn-check/1" ||
        !j.contains("versions") || !j["versions"].is_array()) {
      out["ignored"].push_back(p.filename().string() + ": not pagedattn-check/1 JSON");
      continue;
    }
    json row = {{"implementation", j.value("implementation", "?")},
                {"device", j.value("device", "?")},
                {"profile", j.value("profile", "?")},
                {"torch", j.value("torch", "?")},
                {"verdict", j.value("verdict", "?")},
                {"seed", j.value("seed", 0)},
                {"file", p.filename().string()},
                {"versions", json::array()}};
    int cases = 0;
    for (const json& v : j["versions"]) {
      if (!v.is_object()) continue;
      row["versions"].push_back(version_row(v));
      cases += v.value("cases", 0);
    }
    row["cases"] = cases;
    rows[{row["implementation"].get<std::string>(), row["device"].get<std::string>()}] = row;
  }
  for (auto& [key, row] : rows) out["rows"].push_back(row);
  return out;
}

}  // namespace pagedattn::report
