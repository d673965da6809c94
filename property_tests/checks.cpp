#include "checks.h"

namespace pagedattn::prop {

Outputs run(const Case& c, Kernel kernel, const Options& options, const std::string& profile) {
  const NumericsChoices ch = effective_choices(options);
  const int n = ch.partials_in_output_dtype + ch.epsilon_denominator + ch.round_probabilities;
  output_tag() = std::string(testing::traits(c.scalar).short_name) + "/" + kernel_name(kernel) +
                 "/" +
                 (n == 0   ? "ours"
                  : n == 3 ? "vllm"
                           : "mixed");
  return testing::run_kernel(c, kernel, profile, options);
}

void assert_within(const Verdict& v, const std::string& what) {
  observe(v.worst, what + ": " + v.where, output_tag());
  if (!(v.worst <= 1.0))
    RC_FAIL(what + ": error/bound " + std::to_string(v.worst) + " at " + v.where);
}

void assert_kernels_within(const Case& c, const ref::Output& ex, const Options& options,
                           const std::string& profile, const std::string& what) {
  const testing::Magnitudes m = testing::magnitudes(c);  // the case's, once for every kernel
  for (const KernelUnderTest& k : kernels_one_each(c)) {
    const Options o = k.options(options);
    const std::vector<double> bounds = testing::element_bounds(
        c, m, testing::bound_setup(k.kernel, o, profile), ex.value, ex.value_err);
    assert_within(err_over_bound(c, run(c, k.kernel, o, profile).out, ex, bounds),
                  what + " " + k.name);
  }
}

}  // namespace pagedattn::prop
