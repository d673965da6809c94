// `pagedattn`: the command-line front of the kernels. One CLI11 parser serves every
// subcommand (each registers itself, see cli.h); errors become exit codes (2 usage,
// 1 runtime failure).
#include <algorithm>
#include <exception>
#include <iostream>
#include <map>
#include <string>

#include "cli.h"
#include "pagedattn_audit/command.h"
#include "pagedattn_audit/config.h"

int main(int argc, char** argv) {
  cli::set_command_line(argc, argv);
  CLI::App app("The command-line front of pagedattn's PagedAttention kernels.", "pagedattn");
  app.get_formatter()->label("Usage", "usage");
  app.get_formatter()->column_width(32);
  app.require_subcommand(1);
  app.footer(
      "`pagedattn COMMAND --help` describes a command's flags.\n"
      "Exit codes: 0 success, 1 runtime failure, 2 usage error (audit --fail-on adds 3-5).");
  std::map<const CLI::App*, cli::Run> runs;
  std::vector<std::string> names;
  for (const cli::Command& c : cli::commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    sub->get_formatter()->label("Usage", "usage");
    runs[sub] = c.setup(*sub);
    // The list above shows the one-line summary; the command's own prose moves below its
    // options in `pagedattn COMMAND --help`.
    const std::string prose = sub->get_description(), footer = sub->get_footer();
    sub->description(c.summary);
    sub->footer(prose + (prose.empty() || footer.empty() ? "" : "\n\n") + footer);
    names.push_back(c.name);
  }

  const std::string first = argc > 1 ? argv[1] : "";
  const auto usage = [&](const std::string& where, const std::string& what) {
    std::cerr << "pagedattn" << where << ": " << what << "\n(see pagedattn" << where
              << " --help)\n";
    return cli::kExitUsage;
  };
  if (argc < 2) {
    std::cerr << app.help();
    return cli::kExitUsage;
  }
  if (first == "help") {
    std::cout << app.help();
    return 0;
  }
  if (first[0] != '-' && runs.end() == std::find_if(runs.begin(), runs.end(), [&](auto& r) {
                           return r.first->get_name() == first;
                         })) {
    return usage("", "unknown command '" + first + "' (allowed: " + cli::join_set(names) + ")");
  }

  const CLI::App* sub = nullptr;
  try {
    app.parse(argc, argv);
    sub = app.get_subcommands().at(0);
    return runs.at(sub)();
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    const CLI::App* at = app.get_subcommands().empty() ? &app : app.get_subcommands().at(0);
    return usage(at == &app ? "" : " " + at->get_name(), pagedattn::audit::usage_message(e, *at));
  } catch (const cli::UsageError& e) {
    return usage(" " + sub->get_name(), e.what());
  } catch (const pagedattn::audit::UsageError& e) {
    return usage(" " + sub->get_name(), e.what());
  } catch (const std::exception& e) {
    std::cerr << "pagedattn " << (sub ? sub->get_name() : "") << ": " << e.what() << "\n";
    return cli::kExitFailure;
  }
}
