// `pagedattn report`: the precision and performance report. The command line is parsed by
// the CLI (tools/cli_report.cpp) into ReportOptions; run_report does the work: the audit
// grids, the kernels' limits, the performance model, then reports/render_report.py turns
// report-data.json and the other parts' JSON into plots, one HTML page and a summary.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedattn::report {

enum class Size { quick, standard, full };

struct ReportOptions {
  std::string out_dir = "out/report";
  Size size = Size::standard;
  std::vector<std::string> profiles{"bi-v100", "h200", "a100"};
  std::string properties_dir = "out/properties";  // campaign.json, mutation.json
  // A campaign this run made (scripts/report.sh runs a short one), shown beside the one in
  // properties_dir; "" for none.
  std::string fresh_campaign;
  std::string gpu_dir = "out/gpu";         // scripts/gpu_check.sh's JSON
  std::string checks_dir = "out/check";    // python -m pagedattn_torch.check --json files
  std::string targets_dir = "out/targets";  // scripts/targets/compile_targets.sh
  std::string python = "/usr/bin/python3";
  bool render = true;  // false: stop after report-data.json (no matplotlib needed)
  int threads = 2;     // emulator host threads
};

// A usage mistake: names the argument and the allowed values (exit code 2).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Checks what can be checked before anything runs (profile names, the renderer's presence
// when rendering). Throws UsageError.
void check_options(const ReportOptions& o);

// Runs everything and writes into o.out_dir; returns 0, or 1 after printing why on stderr.
int run_report(const ReportOptions& o);

// Where the renderer scripts are: $PAGEDATTN_REPORTS_DIR, the source tree, the install tree.
std::string renderer_dir();

}  // namespace pagedattn::report
