// Error metrics against the exact value. ulps are measured in the output format at the
// correctly rounded exact value, so a correctly rounded kernel output scores <= 0.5.
#include "pagedattn_audit/metrics.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "pagedattn_testing/judge.h"

namespace pagedattn::audit {
namespace {

// The output formats; traits() names the dtype of anything else.
const testing::FormatTraits& output_format(DType t) {
  if (!is_scalar_dtype(t))
    throw std::invalid_argument("audit: output dtype must be f32, f16 or bf16");
  return testing::traits(t);
}

}  // namespace

Metrics compute_metrics(DType dtype, const void* out, const std::vector<double>& exact,
                        const std::vector<std::uint32_t>& rounded,
                        const std::vector<double>* bounds, const std::vector<double>* exact_err) {
  if (exact.size() != rounded.size() || (bounds && bounds->size() != exact.size()) ||
      (exact_err && exact_err->size() != exact.size()))
    throw std::invalid_argument("audit: size mismatch");
  const double inf = std::numeric_limits<double>::infinity();
  output_format(dtype);  // an output dtype, or the error naming what it must be
  Metrics m;
  if (bounds) m.bound = m.err_over_bound = 0.0;
  double sum = 0;
  const double min_normal = std::ldexp(1.0, output_format(dtype).min_exponent);
  for (std::size_t i = 0; i < exact.size(); ++i) {
    const double k = testing::decode(dtype, out, i);
    const double x = exact[i];
    if (std::isnan(x)) {  // a NaN input was read: no real answer to compare with
      ++m.exact_nan;
      if (!std::isnan(k)) ++m.exact_nan_mismatch;
      continue;
    }
    ++m.elements;
    // An element whose bound is NaN has a non-finite input the reference did not see as
    // NaN: impossible (nan_propagation), so it fails loudly as an infinite bound.
    const double b = bounds ? (*bounds)[i] : 0;
    if (bounds) m.bound = std::isnan(b) ? inf : std::max(*m.bound, b);
    // The exact value is finite (the reference's outputs are convex combinations), so a
    // non-finite kernel output is an infinite error.
    if (!std::isfinite(k)) {
      ++m.nonfinite;
      m.max_abs_err = m.max_ulp_err = m.max_rel_err = inf;
      if (bounds) m.err_over_bound = inf;
      sum = inf;
      continue;
    }
    const double err = std::fabs(k - x);
    if (bounds) {
      const double r = testing::ratio_over_bound(k, x, exact_err ? (*exact_err)[i] : 0, b);
      if (r > 0 && !(r <= *m.err_over_bound)) {
        m.err_over_bound = r;
        m.worst_element = static_cast<std::int64_t>(i);
      }
    }
    sum += err;
    m.max_abs_err = std::max(m.max_abs_err, err);
    const double ulp = ulp_of(dtype, testing::decode(dtype, &rounded[i], 0));
    m.max_ulp_err = std::max(m.max_ulp_err, err / ulp);
    // Relative error only where the output format is normal: below that even the correctly
    // rounded value may be off by 100% (a tiny exact value rounds to 0).
    if (std::fabs(x) >= min_normal) m.max_rel_err = std::max(m.max_rel_err, err / std::fabs(x));
  }
  m.mean_abs_err = m.elements ? sum / static_cast<double>(m.elements) : 0;
  return m;
}

}  // namespace pagedattn::audit
