// `pagedattn`: the command-line front of the kernels. Dispatches to a command and
// turns its errors into exit codes (2 usage, 1 runtime failure).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"

namespace {

const char* const kHelp =
    "usage: pagedattn COMMAND [FLAGS]\n"
    "\n"
    "Commands:\n"
    "  limits   each kernel's shared memory, threads and grid on a device profile,\n"
    "           and the longest sequence V1 fits\n"
    "  run      replay a decode step from .npy files (vLLM's argument names) on the emulator\n"
    "  audit    precision audit: V1 and V2 against the exact reference over a grid of cases\n"
    "           or a replay folder; table, JSON and CSV reports\n"
    "  report   the precision and performance report: plots, one HTML page, a summary\n"
    "\n"
    "`pagedattn COMMAND --help` describes a command's flags.\n"
    "Exit codes: 0 success, 1 runtime failure, 2 usage error.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kHelp;
    return cli::kExitUsage;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kHelp;
    return 0;
  }
  try {
    if (command == "limits") return cli::cmd_limits(args);
    if (command == "run") return cli::cmd_run(args);
    if (command == "audit") return cli::cmd_audit(args);
    if (command == "report") return cli::cmd_report(args);
    throw cli::UsageError("unknown command '" + command +
                          "' (allowed: {limits, run, audit, report})");
  } catch (const cli::UsageError& e) {
    std::cerr << "pagedattn "
              << (command == "limits" || command == "run" || command == "report" ? command + ": "
                                                                                 : "")
              << e.what() << "\n(see pagedattn "
              << (command == "limits" || command == "run" || command == "report" ? command + " "
                                                                                 : "")
              << "--help)\n";
    return cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "pagedattn " << command << ": " << e.what() << "\n";
    return cli::kExitFailure;
  }
}
