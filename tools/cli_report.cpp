// `pagedattn report`: parses its flags into ReportOptions (reports/include/pagedattn_report/
// report.h) and calls run_report. Parsing only: the work lives in pagedattn::report.
#include <iostream>
#include <string>

#include "cli.h"
#include "pagedattn_report/report.h"

namespace cli {
namespace {

const char* const kHelp =
    "usage: pagedattn report [--out DIR] [--quick | --full] [--profile NAME[,NAME...]]\n"
    "                        [--properties DIR] [--gpu DIR] [--threads N] [--no-render]\n"
    "\n"
    "Runs the precision audit grid, a small grid under every emulator check, the kernels'\n"
    "limits and the performance model, reads the property campaign, mutation and GPU JSON\n"
    "when present, and writes plots (PNG, SVG), index.html and summary.md into DIR.\n"
    "\n"
    "  --out DIR          output folder (default out/report)\n"
    "  --quick            a small audit grid (about a minute)\n"
    "  --full             the large grid (adds 64K and 100K tokens, vLLM's inputs)\n"
    "  --profile LIST     device profiles (default bi-v100,h200,a100)\n"
    "  --properties DIR   where campaign.json and mutation.json are (default out/properties)\n"
    "  --gpu DIR          where scripts/gpu_check.sh wrote its JSON (default out/gpu)\n"
    "  --threads N        emulator host threads, 1..256 (default 2)\n"
    "  --no-render        stop after report-data.json and audit.json (no matplotlib)\n"
    "  --help             this text\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

int cmd_report(const std::vector<std::string>& argv) {
  const Args args = parse_args(argv, {{"--out", true},
                                      {"--quick", false},
                                      {"--full", false},
                                      {"--profile", true},
                                      {"--properties", true},
                                      {"--gpu", true},
                                      {"--threads", true},
                                      {"--no-render", false}});
  if (args.has("--help")) {
    std::cout << kHelp;
    return 0;
  }
  if (!args.positional.empty())
    throw UsageError("report takes no positional arguments, got '" + args.positional[0] + "'");
  if (args.has("--quick") && args.has("--full"))
    throw UsageError("--quick and --full exclude each other (allowed: one of them, or neither)");
  pagedattn::report::ReportOptions o;
  o.out_dir = args.get("--out", o.out_dir);
  if (args.has("--quick")) o.size = pagedattn::report::Size::quick;
  if (args.has("--full")) o.size = pagedattn::report::Size::full;
  if (args.has("--profile")) {
    o.profiles = split(args.get("--profile", ""));
    for (const auto& p : o.profiles) check_profile("--profile", p);
  }
  o.properties_dir = args.get("--properties", o.properties_dir);
  o.gpu_dir = args.get("--gpu", o.gpu_dir);
  if (args.has("--threads"))
    o.threads = static_cast<int>(
        parse_int("--threads", args.get("--threads", ""), 1, 256, "an integer in 1..256"));
  o.render = !args.has("--no-render");
  try {
    pagedattn::report::check_options(o);
  } catch (const pagedattn::report::UsageError& e) {
    throw UsageError(e.what());
  }
  return pagedattn::report::run_report(o);
}

}  // namespace cli
