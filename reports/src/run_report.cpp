// run_report: the audit grids, the emulator-checks grid, limits and model, report-data.json,
// then the renderer (reports/render_report.py).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "emu/checks.h"
#include "emu/profile.h"
#include "checks_section.h"
#include "grids.h"
#include "gpu_data.h"
#include "model_data.h"
#include "pagedattn_audit/report.h"
#include "pagedattn_audit/runner.h"
#include "pagedattn_report/report.h"
#include "progress.h"

namespace pagedattn::report {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const char* size_name(Size s) {
  return s == Size::quick ? "quick" : s == Size::full ? "full" : "standard";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<audit::CaseResult> run_counted(const audit::Config& c, Progress& pr,
                                           const std::string& stage) {
  long done = 0;
  pr.stage(stage, case_count(c));
  return audit::run_grid(c, [&](const audit::CaseResult&) { pr.step(++done); });
}

// What memcheck checked in shared memory over `launches` launches, `exact` of them running
// instrumented kernel code (emulator/README.md, "What memcheck sees in shared memory").
std::string memcheck_coverage_words(unsigned long long launches, unsigned long long exact) {
  std::string s = "device memory to the byte; ";
  if (launches > 0 && exact == launches)
    return s + "shared memory to the byte (kernels instrumented)";
  if (exact)
    s += "shared memory to the byte in " + std::to_string(exact) + " of " +
         std::to_string(launches) + " launches, in the others ";
  else
    s += "shared memory ";
  return s +
         "by guard pages and canaries only (kernels not instrumented): reads past the launch's "
         "dynamic size within the next 4 KB unseen, writes there found after the block, static "
         "arrays unchecked";
}

}  // namespace

std::string renderer_dir() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("PAGEDATTN_REPORTS_DIR")) dirs.emplace_back(env);
  dirs.emplace_back(PAGEDATTN_REPORTS_SOURCE_DIR);
  dirs.emplace_back(PAGEDATTN_REPORTS_INSTALLED_DIR);
  std::error_code ec;
  for (const auto& d : dirs)
    if (fs::is_regular_file(fs::path(d) / "render_report.py", ec)) return d;
  return "";
}

void check_options(const ReportOptions& o) {
  if (o.profiles.empty()) throw UsageError("--profile: give at least one profile");
  for (const auto& p : o.profiles) {
    try {
      emu::load_profile(p);
    } catch (const emu::ProfileError& e) {
      throw UsageError(std::string("--profile: ") + e.what());
    }
  }
  if (o.out_dir.empty()) throw UsageError("--out: give a folder");
  std::error_code ec;
  if (fs::exists(o.out_dir, ec) && !fs::is_directory(o.out_dir, ec))
    throw UsageError("--out '" + o.out_dir + "' exists and is not a folder");
  if (o.render && renderer_dir().empty())
    throw UsageError(
        "the renderer reports/render_report.py was not found (set "
        "PAGEDATTN_REPORTS_DIR, or pass --no-render)");
}

int run_report(const ReportOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  Progress pr(isatty(STDERR_FILENO) != 0);
  fs::create_directories(o.out_dir);
  json data;
  data["schema_version"] = 1;
  data["size"] = size_name(o.size);
  // Sections are keyed by the profile's own name (a path given to --profile names a file).
  std::vector<std::string> names;
  for (const auto& p : o.profiles) names.push_back(emu::load_profile(p).name);
  data["profiles"] = names;
  {
    std::time_t now = std::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    data["generated"] = buf;
  }

  // Precision: the grids, every row into audit.json (audit/SCHEMA.md).
  std::vector<audit::CaseResult> rows;
  json grids = json::array();
  for (const Grid& g : precision_grids(o)) {
    auto r = run_counted(g.config, pr, std::string("audit (") + g.purpose + ")");
    grids.push_back({{"purpose", g.purpose}, {"cases", r.size()}});
    rows.insert(rows.end(), r.begin(), r.end());
  }
  audit::write_file_atomic(
      (fs::path(o.out_dir) / "audit.json").string(),
      audit::to_json(rows, "pagedattn report (" + std::string(size_name(o.size)) + ")"));
  data["audit"] = {{"file", "audit.json"}, {"grids", grids}};

  // Emulator checks: a small grid with memcheck, racecheck, synccheck and initcheck.
  {
    const unsigned before = emu::enabled_checks();
    const emu::MemcheckCoverage covered = emu::memcheck_coverage();
    emu::set_checks(emu::parse_checks("all"));
    const audit::Config c = checks_grid(o);
    auto r = run_counted(c, pr, "emulator checks");
    emu::set_checks(before);
    const emu::MemcheckCoverage now = emu::memcheck_coverage();
    json per_profile = json::object();
    for (const auto& p : names) per_profile[p] = {{"cases", 0}, {"findings", json::array()}};
    for (const auto& row : r) {
      json& s = per_profile[row.profile];
      if (s.is_null()) s = {{"cases", 0}, {"findings", json::array()}};
      s["cases"] = s["cases"].get<int>() + 1;
      // A refused V1 is the device's answer, not a finding; any other failure is.
      if (row.status == "error") s["findings"].push_back(row.kernel + ": " + row.reason);
    }
    for (auto& [name, s] : per_profile.items()) s["clean"] = s["findings"].empty();
    data["emulator_checks"] = {{"checks", "memcheck,racecheck,synccheck,initcheck"},
                               {"grid",
                                "4 heads over 2 KV heads, head size 64, f16, seq_len "
                                "100 and 700, V1 and V2"},
                               {"profiles", per_profile}};
    data["emulator_checks"]["memcheck"] = memcheck_coverage_words(
        now.launches - covered.launches, now.instrumented - covered.instrumented);
  }

  pr.stage("limits and performance model", 0);
  data["limits"] = limits_section(o.profiles);
  data["model"] = model_section(o.profiles);
  data["published"] = published_section();
  data["gpu"] = gpu_section(o.gpu_dir);
  {
    json checks = checks_section(o.checks_dir);
    // The GPU bundle's run writes its check (torch_check.json) beside its other results.
    for (const auto& row : checks_section(o.gpu_dir)["rows"]) checks["rows"].push_back(row);
    data["implementations_checked"] = checks;
  }
  data["targets"] = targets_section(o.targets_dir);
  data["inputs"] = {
      {"campaign", (fs::path(o.properties_dir) / "campaign.json").string()},
      {"mutation", (fs::path(o.properties_dir) / "mutation.json").string()},
      {"gpu_dir", o.gpu_dir},
      {"targets_dir", o.targets_dir},
  };
  data["elapsed_s"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string data_path = (fs::path(o.out_dir) / "report-data.json").string();
  audit::write_file_atomic(data_path, data.dump(1));
  if (!o.render) {
    pr.done();
    std::cout << "report: wrote " << data_path << " and audit.json (no rendering)\n";
    return 0;
  }

  pr.stage("rendering plots and HTML", 0);
  pr.done();
  const std::string cmd = shell_quote(o.python) + " " +
                          shell_quote((fs::path(renderer_dir()) / "render_report.py").string()) +
                          " " + shell_quote(o.out_dir);
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::cerr << "pagedattn report: the renderer failed (" << cmd << ", status " << rc << ")\n";
    return 1;
  }
  std::cout << "report: " << (fs::path(o.out_dir) / "index.html").string() << " and "
            << (fs::path(o.out_dir) / "summary.md").string() << " in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  return 0;
}

}  // namespace pagedattn::report
