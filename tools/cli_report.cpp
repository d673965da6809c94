// `pagedattn report`: parses its flags into ReportOptions (reports/include/pagedattn_report/
// report.h) and calls run_report. Parsing only: the work lives in pagedattn::report.
#include <memory>
#include <string>

#include "cli.h"
#include "pagedattn_report/report.h"

namespace cli {
namespace {

struct Settings {
  pagedattn::report::ReportOptions options;
  bool quick = false, full = false, no_render = false;
};

int run_report(Settings& s);

Run setup(CLI::App& app) {
  auto s = std::make_shared<Settings>();
  pagedattn::report::ReportOptions& o = s->options;
  app.description(
      "Runs the precision audit grid, a small grid under every emulator check, the kernels'\n"
      "limits and the performance model, reads the property campaign, mutation, GPU and check\n"
      "JSON when present, and writes plots (PNG, SVG), index.html and summary.md into DIR.");
  app.add_option("--out", o.out_dir, "output folder (default out/report)")->option_text("DIR");
  auto* quick = app.add_flag("--quick", s->quick, "a small audit grid (about a minute)");
  auto* full =
      app.add_flag("--full", s->full, "the large grid (adds 64K and 100K tokens, vLLM's inputs)");
  quick->excludes(full);
  app.add_option("--profile", o.profiles, "device profiles (default bi-v100,h200,a100)")
      ->option_text("NAME[,NAME...]")
      ->delimiter(',')
      ->check(profile_name());
  app.add_option("--properties", o.properties_dir,
                 "where campaign.json and mutation.json are (default out/properties)")
      ->option_text("DIR");
  app.add_option("--campaign", o.fresh_campaign,
                 "a campaign.json made for this report (scripts/report.sh runs a short one),\n"
                 "shown beside the one in --properties")
      ->option_text("FILE");
  app.add_option("--gpu", o.gpu_dir, "where scripts/gpu_check.sh wrote its JSON (default out/gpu)")
      ->option_text("DIR");
  app.add_option("--checks", o.checks_dir,
                 "where python -m pagedattn_torch.check wrote its --json files (default "
                 "out/check)")
      ->option_text("DIR");
  app.add_option("--threads", o.threads, "emulator host threads, 1..256 (default 2)")
      ->option_text("N")
      ->check(int_in(1, 256, "an integer in 1..256"));
  app.add_flag("--no-render", s->no_render,
               "stop after report-data.json and audit.json (no matplotlib)");
  return [s] { return run_report(*s); };
}

const bool registered = add_command(
    {"report", "the precision and performance report: plots, one HTML page, a summary", &setup});

int run_report(Settings& s) {
  pagedattn::report::ReportOptions& o = s.options;
  if (s.quick) o.size = pagedattn::report::Size::quick;
  if (s.full) o.size = pagedattn::report::Size::full;
  o.render = !s.no_render;
  try {
    pagedattn::report::check_options(o);
  } catch (const pagedattn::report::UsageError& e) {
    throw UsageError(e.what());
  }
  return pagedattn::report::run_report(o);
}

}  // namespace
}  // namespace cli
