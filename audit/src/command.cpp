// `pagedattn audit`: parse, check, run, then report. Reports are written only after every
// case ran, so a usage or input error leaves no file behind.
#include "pagedattn_audit/command.h"

#include <exception>

#include "pagedattn_audit/config.h"
#include "pagedattn_audit/report.h"
#include "pagedattn_audit/runner.h"

namespace pagedattn::audit {

int run_command(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
                const ReplayLoader& load_replay) {
  Config c;
  try {
    bool help = false;
    c = parse_command_line(argv, &help);
    if (help) {
      out << help_text();
      return 0;
    }
    check_config(c);
    if (!c.replay_dir.empty() && !load_replay) {
      throw UsageError("--replay: this program has no replay reader (use `pagedattn audit`)");
    }
  } catch (const UsageError& e) {
    err << "pagedattn audit: " << e.what() << "\n(see pagedattn audit --help)\n";
    return 2;
  }
  try {
    std::vector<CaseResult> cases;
    if (c.replay_dir.empty()) {
      cases = run_grid(c);
    } else {
      Inputs in = load_replay(c.replay_dir, c.bf16, c.kv_cache_dtypes.front());
      if (c.has_scale) in.scale = static_cast<float>(c.scale);
      cases = run_inputs(c, in);
    }
    if (!c.quiet) print_table(out, cases);
    std::string command = "pagedattn audit";
    for (const std::string& a : argv) command += " " + a;
    if (!c.json_path.empty()) write_file_atomic(c.json_path, to_json(cases, command));
    if (!c.csv_path.empty()) write_file_atomic(c.csv_path, to_csv(cases));
    return 0;
  } catch (const UsageError& e) {
    err << "pagedattn audit: " << e.what() << "\n(see pagedattn audit --help)\n";
    return 2;
  } catch (const std::exception& e) {
    err << "pagedattn audit: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace pagedattn::audit
