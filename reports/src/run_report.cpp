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

#include "emu/profile.h"
#include "checks_section.h"
#include "emulator_checks.h"
#include "grids.h"
#include "gpu_data.h"
#include "model_data.h"
#include "pagedattn_audit/provenance.h"
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

// pagedattn_report_checks (the checks grid with instrumented kernels): $PAGEDATTN_REPORT_CHECKS,
// the build tree, the install tree; "" when none exists or $PAGEDATTN_REPORT_CHECKS is
// "none" (the grid then runs in this process, without the hazard mode).
std::string checks_program() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("PAGEDATTN_REPORT_CHECKS")) {
    if (std::string(env) == "none") return "";
    paths.emplace_back(env);
  }
#ifdef PAGEDATTN_REPORT_CHECKS_BUILT
  paths.emplace_back(PAGEDATTN_REPORT_CHECKS_BUILT);
#endif
  paths.emplace_back(PAGEDATTN_REPORT_CHECKS_INSTALLED);
  std::error_code ec;
  for (const auto& p : paths)
    if (!p.empty() && fs::is_regular_file(p, ec)) return p;
  return "";
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
  if (!o.fresh_campaign.empty() && !fs::is_regular_file(o.fresh_campaign, ec))
    throw UsageError("--campaign '" + o.fresh_campaign + "': no such file");
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
  // What this run's own sections (audit, emulator checks) judged.
  data["provenance"] = audit::provenance();
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

  // Emulator checks: a small grid under every check, run by pagedattn_report_checks (its
  // kernels instrumented, so racecheck's hazard mode runs) when that program exists, else
  // here, where racecheck can only reorder (the section's coverage counts say so).
  {
    pr.stage("emulator checks", 0);
    const std::string prog = checks_program();
    const std::string file = (fs::path(o.out_dir) / "emulator_checks.json").string();
    json ec;
    if (!prog.empty()) {
      std::string names;
      for (const auto& p : o.profiles) names += (names.empty() ? "" : ",") + p;
      const std::string cmd =
          shell_quote(prog) + " --profile " + shell_quote(names) + " --out " + shell_quote(file);
      if (std::system(cmd.c_str()) != 0) {
        std::cerr << "pagedattn report: the emulator-checks program failed (" << cmd << ")\n";
        return 1;
      }
      std::ifstream in(file);
      ec = json::parse(in);
    } else {
      ec = emulator_checks_section(o, /*instrumented=*/false);
      audit::write_file_atomic(file, ec.dump(1));
    }
    ec["file"] = "emulator_checks.json";
    ec["program"] = prog.empty() ? "pagedattn itself (kernels not instrumented)" : prog;
    data["emulator_checks"] = ec;
  }

  pr.stage("limits and performance model", 0);
  data["limits"] = limits_section(o.profiles);
  data["model"] = model_section(o.profiles);
  data["published"] = published_section();
  data["gpu"] = gpu_section(o.gpu_dir);
  {
    json checks = checks_section(o.checks_dir);
    // The GPU bundle's run writes its check (torch_check.json) beside its other results.
    // (A named value: a range-for over a temporary's ["rows"] reads freed memory.)
    const json bundle = checks_section(o.gpu_dir);
    for (const auto& row : bundle["rows"]) checks["rows"].push_back(row);
    data["implementations_checked"] = checks;
  }
  data["targets"] = targets_section(o.targets_dir);
  data["inputs"] = {
      {"campaign", (fs::path(o.properties_dir) / "campaign.json").string()},
      {"mutation", (fs::path(o.properties_dir) / "mutation.json").string()},
      {"tightness", (fs::path(o.properties_dir) / "tightness.json").string()},
      {"campaign_fresh", o.fresh_campaign},
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
