// `pagedattn audit`: parse, check, run, report, then the --fail-on gates. Reports are
// written only after every case ran, so a usage or input error leaves no file behind.
#include "pagedattn_audit/command.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "pagedattn_audit/report.h"
#include "pagedattn_audit/traffic.h"
#include "pagedattn_audit/runner.h"

namespace pagedattn::audit {
namespace {

const char* const kDescription =
    "Runs paged_attention_v1 and _v2 and the exact reference over a grid of cases (or a\n"
    "replay folder) and reports, per case: max and mean absolute error, max error in ulps\n"
    "of the output dtype, max relative error, non-finite outputs where the exact value is\n"
    "finite, the proven per-element error bound and error/bound (proofs/error_bound.md),\n"
    "whether the kernel launched (V1 is refused when its shared memory exceeds the\n"
    "profile's) and why not, and the time. Lists are comma-separated; the grid is their\n"
    "cartesian product. Every case runs with our numerics and/or vLLM's (--numerics), and\n"
    "optionally with the emulator's __expf wrong by up to K ulps (--exp-ulp), to measure\n"
    "how the errors grow with a less accurate exp (CUDA's __expf states 2 +\n"
    "floor(1.173|x|) ulps; BI-V100's accuracy is unknown). The audit measures; it does\n"
    "not judge unless --fail-on says so.\n"
    "Config-file keys are the flag names without '--'; '_' may replace '-'.";

const char* const kFooter =
    "Example (the headline case):\n"
    "  pagedattn audit --profile bi-v100 --num-seqs 1 --num-heads 32 --num-kv-heads 8 \\\n"
    "      --head-size 128 --seq-lens 100000 --dtype f16 --json audit.json\n"
    "\n"
    "Exit codes: 0 done (errors are data, not failures), 1 runtime failure (e.g. an\n"
    "unreadable replay), 2 usage error; with --fail-on: 3 a case has status \"error\",\n"
    "4 a non-finite output or live input, 5 an error over its bound (first that applies,\n"
    "in that order). Reports are written before a --fail-on exit; nothing is written on a\n"
    "usage error or runtime failure.";

int gate(const Config& c, const std::vector<CaseResult>& cases, std::ostream& err) {
  const auto wants = [&](const char* g) {
    return std::find(c.fail_on.begin(), c.fail_on.end(), g) != c.fail_on.end();
  };
  std::size_t errors = 0, nonfinite = 0, over = 0;
  for (const CaseResult& r : cases) {
    errors += r.status == "error";
    nonfinite += (r.metrics && (r.metrics->nonfinite > 0 || r.metrics->exact_nan > 0)) ||
                 !r.findings.empty();
    // Each element against its own bound (theorem kernel_error_bound); a case without a
    // bound (not launched) is never "over".
    over += r.err_over_bound() && *r.err_over_bound() > 1;
  }
  if (wants("error") && errors) {
    err << "pagedattn audit: --fail-on error: " << errors << " case(s) with status \"error\"\n";
    return kExitCaseError;
  }
  if (wants("nonfinite") && nonfinite) {
    err << "pagedattn audit: --fail-on nonfinite: " << nonfinite
        << " case(s) with a non-finite output or live input\n";
    return kExitNonfinite;
  }
  if (wants("over-bound") && over) {
    err << "pagedattn audit: --fail-on over-bound: " << over
        << " case(s) with an element over its error bound\n";
    return kExitOverBound;
  }
  return 0;
}

}  // namespace

CommandLine::CommandLine(CLI::App& app) {
  app.description(kDescription);
  app.footer(kFooter);
  app.get_formatter()->label("Usage", "usage");
  app.get_formatter()->column_width(32);
  for (const KeyInfo& k : keys()) {
    Key key{k.name, nullptr, std::make_unique<std::string>()};
    const std::string flag = std::string("--") + k.name;
    if (k.value) {
      key.option = app.add_option(flag, *key.value, k.help)
                       ->option_text(k.value)
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    } else {
      key.option = app.add_flag(flag, k.help);
    }
    keys_.push_back(std::move(key));
  }
}

Config CommandLine::config() const {
  Config c;
  for (const Key& k : keys_) {
    if (k.name == "config" && k.option->count()) apply_config_file(c, *k.value);
  }
  for (const Key& k : keys_) {
    if (k.name == "config" || !k.option->count()) continue;
    apply_key(c, k.name, *k.value, "--" + k.name);
  }
  return c;
}

std::string usage_message(const CLI::ParseError& e, const CLI::App& app) {
  if (!dynamic_cast<const CLI::ExtrasError*>(&e)) return e.what();
  std::vector<std::string> extras = app.remaining();
  if (const CLI::App* parent = app.get_parent()) {
    for (const std::string& s : parent->remaining()) extras.push_back(s);
  }
  std::string got;
  for (const std::string& s : extras) got += (got.empty() ? "" : " ") + s;
  std::string allowed;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames())
      allowed += (allowed.empty() ? "" : ", ") + ("--" + n);
  }
  const bool flag = !extras.empty() && extras.front().rfind("-", 0) == 0;
  return std::string(flag ? "unknown flag" : "unexpected argument") + " '" +
         (got.empty() ? e.what() : got) + "' (allowed: {" + allowed + "})";
}

int execute(const Config& c, const std::string& command, std::ostream& out, std::ostream& err,
            const ReplayLoader& load_replay) {
  try {
    check_config(c);
    if (!c.replay_dir.empty() && !load_replay) {
      throw UsageError("--replay: this program has no replay reader (use `pagedattn audit`)");
    }
  } catch (const UsageError& e) {
    err << "pagedattn audit: " << e.what() << "\n(see pagedattn audit --help)\n";
    return 2;
  }
  try {
    if (c.traffic) require_traffic_helper();  // before the cases run, not after
    std::vector<CaseResult> cases;
    if (c.replay_dir.empty()) {
      cases = run_grid(c);
    } else {
      testing::Case in = load_replay(c.replay_dir, c.bf16, c.kv_cache_dtypes.front());
      if (c.has_scale) in.scale = testing::float_value(c.scale);
      in.k_scale = testing::float_value(c.k_scale);
      in.v_scale = testing::float_value(c.v_scale);
      cases = run_inputs(c, in);
    }
    if (!c.quiet) print_table(out, cases);
    if (!c.json_path.empty()) write_file_atomic(c.json_path, to_json(cases, command));
    if (!c.csv_path.empty()) write_file_atomic(c.csv_path, to_csv(cases));
    return gate(c, cases, err);
  } catch (const UsageError& e) {
    err << "pagedattn audit: " << e.what() << "\n(see pagedattn audit --help)\n";
    return 2;
  } catch (const std::exception& e) {
    err << "pagedattn audit: " << e.what() << "\n";
    return 1;
  }
}

int run_command(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
                const ReplayLoader& load_replay) {
  CLI::App app("", "pagedattn audit");
  const CommandLine line(app);
  Config c;
  try {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11's order
    app.parse(reversed);
    c = line.config();
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "pagedattn audit: " << usage_message(e, app) << "\n(see pagedattn audit --help)\n";
    return 2;
  } catch (const UsageError& e) {
    err << "pagedattn audit: " << e.what() << "\n(see pagedattn audit --help)\n";
    return 2;
  }
  std::string command = "pagedattn audit";
  for (const std::string& a : argv) command += " " + a;
  return execute(c, command, out, err, load_replay);
}

}  // namespace pagedattn::audit
