#include "checks.h"

namespace pagedattn::prop {

Outputs run(const Case& c, Kernel kernel, const Options& options, const std::string& profile) {
  return testing::run_kernel(c, kernel, profile, options);
}

void assert_within(const Verdict& v, const std::string& what) {
  observe(v.worst, what + ": " + v.where);
  if (!(v.worst <= 1.0))
    RC_FAIL(what + ": error/bound " + std::to_string(v.worst) + " at " + v.where);
}

}  // namespace pagedattn::prop
