#include "gpu_data.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "pagedattn/perfmodel.h"

namespace pagedattn::report {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json nullable(double t) {
  return std::isfinite(t) ? json(t) : json(nullptr);
}

// The file as JSON; null if absent, {"error": ...} if not JSON.
json read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return nullptr;
  json j = json::parse(f, nullptr, false);
  if (j.is_discarded()) return {{"error", p.string() + " is not valid JSON"}};
  return j;
}

double number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && v.get<std::string>() == "inf") return INFINITY;
  return NAN;
}

void add_model(json& j, const std::string& gpu_dir) {
  std::string lower = j.value("device", "");
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string profile;
  for (const char* p : {"h200", "a100"})
    if (lower.find(p) != std::string::npos) profile = p;
  const fs::path probe = fs::path(gpu_dir) / "device_profile.json";
  if (profile.empty() && fs::exists(probe)) profile = probe.string();
  j["model_profile"] = profile.empty() ? json(nullptr) : json(profile);
  if (profile.empty()) return;
  const perf::Device d = perf::load_device(profile);
  for (auto& c : j["cases"]) {
    perf::Workload w;
    w.num_seqs = c.value("num_seqs", 1);
    w.num_heads = c.value("num_heads", 32);
    w.num_kv_heads = c.value("num_kv_heads", 8);
    w.head_size = c.value("head_size", 128);
    w.max_seq_len = c.value("seq_len", 1000);
    const perf::Estimate e = perf::estimate(d, w);
    const std::string k = c.value("kernel", "");
    const double t = k == "v1"       ? e.v1_us
                     : k == "v2"     ? e.v2.time_us
                     : k == "reduce" ? e.reduce.time_us
                                     : e.v2_us;
    c["model_us"] = nullable(t);
  }
}

// Steps without their command lines; output tails cut to what a table cell can hold.
json run_summary(json run) {
  if (!run.is_object() || !run.contains("steps")) return run;
  for (auto& s : run["steps"]) {
    s.erase("command");
    if (s.contains("output_tail") && s["output_tail"].is_string()) {
      const std::string t = s["output_tail"];
      s["output_tail"] = t.size() > 400 ? t.substr(t.size() - 400) : t;
    }
  }
  return run;
}

json check_summary(const json& c) {
  if (!c.is_object() || !c.contains("summary")) return c;
  json failures = json::array();
  for (const auto& r : c.value("cases", json::array()))
    if (!r.value("pass", true) && failures.size() < 20) failures.push_back(r);
  return {{"device", c.value("device", "")},
          {"dry", c.value("dry", false)},
          {"grid", c.value("grid", "")},
          {"pass", c.value("pass", false)},
          {"seconds", c.value("seconds", 0.0)},
          {"summary", c["summary"]},
          {"failures", failures}};
}

// The audit's native rows (--backend both): how many, the worst error over the proven
// bound, the largest difference from the emulator on the same inputs.
json audit_summary(const json& a) {
  if (!a.is_object() || !a.contains("cases")) return a;
  int rows = 0, native = 0, over = 0;
  double worst = 0, diff = 0, worst_emu = 0;
  for (const auto& r : a["cases"]) {
    ++rows;
    const double e = number(r.value("err_over_bound", json(nullptr)));
    if (r.value("backend", "") != "cuda") {
      if (std::isfinite(e) || std::isinf(e)) worst_emu = std::max(worst_emu, e);
      continue;
    }
    ++native;
    if (std::isfinite(e) || std::isinf(e)) worst = std::max(worst, e);
    over += e > 1;
    const double g = number(r.value("gpu_vs_emulator_max_abs_diff", json(nullptr)));
    if (std::isfinite(g) || std::isinf(g)) diff = std::max(diff, g);
  }
  return {{"rows", rows},
          {"native_rows", native},
          {"native_over_bound", over},
          {"worst_native_err_over_bound", nullable(worst)},
          {"worst_emulator_err_over_bound", nullable(worst_emu)},
          {"max_gpu_vs_emulator_abs_diff", nullable(diff)}};
}

}  // namespace

json gpu_section(const std::string& gpu_dir) {
  const fs::path dir(gpu_dir);
  json bench = read_json(dir / "gpu_bench.json");
  const json run = read_json(dir / "gpu_run.json");
  if (bench.is_null() && run.is_null()) return nullptr;
  json j = bench.is_object() ? bench : json::object();
  if (bench.is_object() && !bench.contains("error") && !bench.contains("cases"))
    j["error"] = (dir / "gpu_bench.json").string() + " has no cases";
  if (j.contains("cases")) add_model(j, gpu_dir);
  if (!run.is_null()) {
    j["run"] = run_summary(run);
    if (!j.contains("dry") && run.is_object()) j["dry"] = run.value("dry", false);
  }
  const json check = read_json(dir / "gpu_check.json");
  if (!check.is_null()) j["check"] = check_summary(check);
  const json audit = read_json(dir / "audit_both.json");
  if (!audit.is_null()) j["audit"] = audit_summary(audit);
  const json torch = read_json(dir / "torch_check.json");
  if (!torch.is_null()) j["torch_check"] = torch;
  return j;
}

json targets_section(const std::string& targets_dir) {
  json t = read_json(fs::path(targets_dir) / "targets.json");
  if (!t.is_object() || !t.contains("targets")) return t;
  // The profile each target stands for in the model: sm_90 an H200, sm_80 an A100, the
  // warp-64 builds BI-V100 (gfx90a and __ILUVATAR__ are its closest compilable ISA); a
  // wave-32 AMD target has no profile.
  for (auto& g : t["targets"]) {
    const std::string arch = g.value("arch", "");
    const int warp = g.value("warp", 32);
    const std::string profile = warp == 64        ? "bi-v100"
                                : arch == "sm_90" ? "h200"
                                : arch == "sm_80" ? "a100"
                                                  : "";
    g["model_profile"] = profile.empty() ? json(nullptr) : json(profile);
    g["model_registers_per_thread"] =
        profile.empty() ? json(nullptr)
                        : json(perf::load_device(profile).param("registers_per_thread"));
  }
  return t;
}

}  // namespace pagedattn::report
