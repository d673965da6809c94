#include "emulator_checks.h"

#include <string>

#include "emu/check_coverage.h"
#include "emu/checks.h"
#include "emu/profile.h"
#include "grids.h"
#include "pagedattn_audit/provenance.h"
#include "pagedattn_audit/runner.h"

namespace pagedattn::report {
namespace {

using json = nlohmann::json;

// "every launch (N)", "M of N launches", "no launch": how much of the grid a check saw.
std::string share(long ran, long launches) {
  if (launches == 0 || ran == 0) return "no launch";
  if (ran == launches) return "every launch (" + std::to_string(launches) + ")";
  return std::to_string(ran) + " of " + std::to_string(launches) + " launches";
}

// What memcheck checked in shared memory over `launches` launches, `exact` of them running
// instrumented kernel code (emulator/README.md, "What memcheck sees in shared memory").
std::string memcheck_coverage_words(unsigned long long launches, unsigned long long exact) {
  std::string s = "device memory to the byte; ";
  if (launches > 0 && exact == launches)
    return s + "shared memory to the byte (kernels instrumented)";
  if (exact)
    s += "shared memory to the byte in " + std::to_string(exact) + " of " +
         std::to_string(launches) + " launches, in the others ";
  else
    s += "shared memory ";
  return s +
         "by guard pages and canaries only (kernels not instrumented): reads past the launch's "
         "dynamic size within the next 4 KB unseen, writes there found after the block, static "
         "arrays unchecked";
}

}  // namespace

json emulator_checks_section(const ReportOptions& o, bool instrumented) {
  const unsigned before = emu::enabled_checks();
  emu::set_checks(emu::parse_checks("all"));
  const emu::MemcheckCoverage shared_before = emu::memcheck_coverage();
  json per_profile = json::object();
  for (const auto& p : o.profiles) {
    ReportOptions one = o;
    one.profiles = {p};
    emu::reset_check_coverage();
    const auto rows = audit::run_grid(checks_grid(one));
    const emu::CheckCoverage c = emu::check_coverage();
    json s = {{"cases", 0}, {"findings", json::array()}, {"launches", c.launches}};
    for (const auto& row : rows) {
      s["cases"] = s["cases"].get<int>() + 1;
      // A refused V1 is the device's answer, not a finding; any other failure is.
      if (row.status == "error") s["findings"].push_back(row.kernel + ": " + row.reason);
    }
    s["clean"] = s["findings"].empty();
    s["ran"] = {{"memcheck", share(c.memcheck, c.launches)},
                {"synccheck", share(c.synccheck, c.launches)},
                {"initcheck", share(c.initcheck, c.launches)},
                {"racecheck reordering", share(c.racecheck, c.launches)},
                {"racecheck hazard", share(c.racecheck_hazard, c.launches)}};
    // Every launch under every check, the hazard mode included: nothing ran partly.
    bool complete = c.launches > 0;
    for (long n : {c.memcheck, c.synccheck, c.initcheck, c.racecheck, c.racecheck_hazard})
      complete = complete && n == c.launches;
    s["all_checks_ran"] = complete;
    per_profile[emu::load_profile(p).name] = s;
  }
  emu::set_checks(before);
  const emu::MemcheckCoverage shared_after = emu::memcheck_coverage();
  return {{"checks", "memcheck,racecheck,synccheck,initcheck"},
          {"memcheck", memcheck_coverage_words(shared_after.launches - shared_before.launches,
                                               shared_after.instrumented -
                                                   shared_before.instrumented)},
          {"grid", "4 heads over 2 KV heads, head size 64, f16, seq_len 100 and 700, V1 and V2"},
          {"instrumented", instrumented},
          {"provenance", audit::provenance()},
          {"profiles", per_profile}};
}

}  // namespace pagedattn::report
