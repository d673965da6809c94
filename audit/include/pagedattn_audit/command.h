// `pagedattn audit` as a function, so the CLI's file stays a thin registration and the
// tests drive the whole command. Its flags are CLI11 options on whichever app hosts them
// (the `audit` subcommand of `pagedattn`, or run_command's own). A replay folder is
// loaded by the caller's loader (the CLI passes tools' own replay reader, so both
// commands accept exactly the same folders).
#pragma once
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pagedattn_audit/config.h"
#include "pagedattn_audit/inputs.h"

namespace pagedattn::audit {

// Exit codes of `--fail-on` (CI gates), each its own, checked in this order; 0, 1 and 2
// keep their meaning (done, runtime failure, usage error).
inline constexpr int kExitCaseError = 3;  // --fail-on error: a case has status "error"
inline constexpr int kExitNonfinite = 4;  // --fail-on nonfinite: a non-finite finding
inline constexpr int kExitOverBound = 5;  // --fail-on over-bound: err_over_bound > 1

// Loads DIR with --bf16 and --kv-cache-dtype; throws std::exception naming the file.
using ReplayLoader = std::function<testing::Case(const std::string& dir, bool bf16,
                                                 const std::string& kv_cache_dtype)>;

// Every key of keys() as an option of `app`, plus the command's description and footer.
// After app.parse, config() applies --config first and then the flags given.
class CommandLine {
 public:
  explicit CommandLine(CLI::App& app);
  Config config() const;  // throws UsageError

 private:
  struct Key {
    std::string name;
    CLI::Option* option;
    std::unique_ptr<std::string> value;
  };
  std::vector<Key> keys_;
};

// Runs a parsed configuration: check, run, report, gate. Returns the exit code (0 done,
// 1 runtime failure, 2 usage error, 3-5 --fail-on); messages go to err. `command` is the
// command line recorded in the JSON report.
int execute(const Config& c, const std::string& command, std::ostream& out, std::ostream& err,
            const ReplayLoader& load_replay);

// Parses argv (after "audit") with its own app, then execute().
int run_command(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
                const ReplayLoader& load_replay = {});

// A CLI11 parse error as a message that names the flag and the allowed values: an
// unexpected argument lists the flags `app` takes. Shared with every `pagedattn` command.
std::string usage_message(const CLI::ParseError& e, const CLI::App& app);

}  // namespace pagedattn::audit
