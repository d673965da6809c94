// The pieces of the `pagedattn` command-line program shared between its files: the exit
// codes, the error kinds that choose them, the subcommand registry and the CLI11
// validators every command uses, so each message names the flag and its allowed values.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cli {

// Exit codes: 0 success, 1 runtime failure (bad input data, a refused launch, I/O, or a
// finding under --strict), 2 usage error (unknown flag, bad flag value, missing
// argument). `audit --fail-on` adds its own (pagedattn_audit/command.h).
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// A command-line mistake found after parsing (e.g. a flag that does not fit the input);
// the message names the flag and the allowed values.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Input data that breaks the contract; the message names the file and the rule.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A subcommand: `setup` adds its options to `app` and returns what runs once the whole
// command line parsed. Register from the command's own file:
//   const bool registered = cli::add_command({"limits", "one-line summary", &setup});
using Run = std::function<int()>;
struct Command {
  const char* name;
  const char* summary;
  Run (*setup)(CLI::App& app);
};
bool add_command(const Command& command);
const std::vector<Command>& commands();  // sorted by name

// The command line as typed ("pagedattn audit --seq-lens 100"), for reports to record.
void set_command_line(int argc, char** argv);
const std::string& command_line();

// "{a, b, c}"
std::string join_set(const std::vector<std::string>& items);

// Validators whose failure text CLI11 prefixes with the flag: "--kernel: must be one of
// {v1, v2, both}, got 'v3'".
CLI::Validator one_of(const std::vector<std::string>& choices);
CLI::Validator finite_number(bool positive);  // "a finite number" (> 0 when positive)
CLI::Validator int_in(long long lo, long long hi, const std::string& allowed);
// A device profile name or profile .json file; the failure lists the known profiles.
CLI::Validator profile_name();

}  // namespace cli
