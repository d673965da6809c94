// Shared steps of the attention properties: running a kernel and asserting an
// error-over-bound with the case printed on failure.
#pragma once
#include <emu/checks.h>
#include <rapidcheck.h>

#include <string>
#include <vector>
#include "harness.h"

namespace pagedattn::prop {

// `kernel` on the emulator under `profile` with `options` (pagedattn::testing::run_kernel).
Outputs run(const Case& c, Kernel kernel, const Options& options, const std::string& profile);

// RC_FAIL unless v.worst <= 1; records it for campaigns.
void assert_within(const Verdict& v, const std::string& what);

// Every kernel under test on `c` with `options`, each judged against `ex` (the exact
// output) within its own proven bound; `what` names the check in a failure.
void assert_kernels_within(const Case& c, const ref::Output& ex, const Options& options,
                           const std::string& profile, const std::string& what);

// `checks` added for one case, the checks before it restored after (also on a failed
// assert).
struct WithChecks {
  unsigned before = emu::enabled_checks();
  explicit WithChecks(unsigned checks) { emu::set_checks(before | checks); }
  ~WithChecks() { emu::set_checks(before); }
};

// memcheck on for one case: device allocations then end flush against a guard page, so a
// read one element past a tensor is a finding and the launch fails.
struct WithMemcheck : WithChecks {
  WithMemcheck() : WithChecks(emu::check_memcheck) {}
};

}  // namespace pagedattn::prop
