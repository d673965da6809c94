// Shared steps of the attention properties: running a kernel and asserting an
// error-over-bound with the case printed on failure.
#pragma once
#include <rapidcheck.h>

#include <string>
#include <vector>
#include "harness.h"

namespace pagedattn::prop {

// `kernel` on the emulator under `profile` with `options` (pagedattn::testing::run_kernel).
Outputs run(const Case& c, Kernel kernel, const Options& options, const std::string& profile);

// RC_FAIL unless v.worst <= 1; records it for campaigns.
void assert_within(const Verdict& v, const std::string& what);

}  // namespace pagedattn::prop
