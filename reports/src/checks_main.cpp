// pagedattn_report_checks: the report's emulator-checks grid in a program whose kernels are
// built with the race instrumentation (reports/CMakeLists.txt), so racecheck's hazard mode
// runs, which the `pagedattn` program's ordinary kernels cannot give it. `pagedattn
// report` runs it and reads the JSON it writes (emulator_checks.h).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "emulator_checks.h"

int main(int argc, char** argv) {
  CLI::App app{"the report's emulator-checks grid, kernels instrumented for racecheck"};
  pagedattn::report::ReportOptions o;
  std::string out;
  app.add_option("--profile", o.profiles, "device profiles")->delimiter(',')->required();
  app.add_option("--out", out, "JSON to write")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto j = pagedattn::report::emulator_checks_section(o, /*instrumented=*/true);
    std::ofstream(out) << j.dump(1) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "pagedattn_report_checks: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
