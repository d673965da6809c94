// The pieces of the `pagedattn` command-line program shared between its files: the
// flag parser, the error kinds that choose the exit code, and the commands.
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace cli {

// Exit codes: 0 success, 1 runtime failure (bad input data, a refused launch, I/O),
// 2 usage error (unknown flag, bad flag value, missing argument).
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// A command-line mistake; the message names the flag and the allowed values.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Input data that breaks the contract; the message names the file and the rule.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct FlagSpec {
  std::string name;  // "--profile"
  bool takes_value = true;
};

// Parsed command line of one command: flags (as given last) and positional arguments.
struct Args {
  std::map<std::string, std::string> flags;
  std::vector<std::string> positional;
  bool has(const std::string& flag) const { return flags.count(flag) != 0; }
  std::string get(const std::string& flag, const std::string& fallback) const;
};

// Accepts "--flag value" and "--flag=value"; "--help"/"-h" sets flags["--help"].
// Throws UsageError naming an unknown flag (with the list of known ones) or a missing value.
Args parse_args(const std::vector<std::string>& argv, const std::vector<FlagSpec>& specs);

// Value parsers: the message names the flag, what it got and what is allowed.
long long parse_int(const std::string& flag, const std::string& text, long long lo, long long hi,
                    const std::string& allowed);
double parse_double(const std::string& flag, const std::string& text, const std::string& allowed);
std::string parse_choice(const std::string& flag, const std::string& text,
                         const std::vector<std::string>& choices);
// "{a, b, c}"
std::string join_set(const std::vector<std::string>& items);

// Validates a profile name (or path) for `flag`; UsageError lists the known profiles.
void check_profile(const std::string& flag, const std::string& name);

int cmd_limits(const std::vector<std::string>& argv);
int cmd_run(const std::vector<std::string>& argv);
// `audit` reports its own usage errors (exit code 2) and runtime failures (1).
int cmd_audit(const std::vector<std::string>& argv);
// `report`: the precision and performance report (tools/cli_report.cpp).
int cmd_report(const std::vector<std::string>& argv);

}  // namespace cli
