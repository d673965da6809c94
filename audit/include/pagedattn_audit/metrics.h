// Error metrics of a kernel's output against the exact answer (definitions in
// audit/SCHEMA.md). A non-finite kernel output where the exact output is finite is an
// infinite error: it is counted and makes every max metric +inf, never skipped.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "pagedattn/dtypes.h"
#include "pagedattn_testing/formats.h"

namespace pagedattn::audit {

struct Metrics {
  double max_abs_err = 0;
  double mean_abs_err = 0;     // over the elements with a finite exact value
  double max_ulp_err = 0;      // |out - exact| / ulp of the output format at round(exact)
  double max_rel_err = 0;      // |out - exact| / |exact| where |exact| >= the smallest normal
  std::int64_t elements = 0;   // compared (finite exact value)
  std::int64_t nonfinite = 0;  // kernel NaN/inf where the exact value is finite
  std::int64_t exact_nan = 0;  // exact value NaN (a NaN input was read): not compared
  std::int64_t exact_nan_mismatch = 0;  // of those, kernel output not NaN
  // With per-element bounds (theorem kernel_error_bound, proofs/error_bound.md): the
  // largest bound over the compared elements, and max |out - exact| / bound over them
  // (<= 1: every element within its own bound). 0/0 counts 0, x/0 and non-finite +inf.
  std::optional<double> bound, err_over_bound;
  std::int64_t worst_element = -1;  // the element of err_over_bound (-1: every error 0)
};

// The output format's ulp at a value of that format (|r| in its binade; 0 and subnormals:
// the subnormal quantum): the format table's (pagedattn_testing/formats.h).
using testing::ulp_of;

// `out` holds the kernel's raw output elements (dtype_size(dtype) bytes each); `exact`
// and `rounded` the reference's value (error far below an output ulp) and its correctly
// rounded output bits; `bounds` (may be null) each element's proven error bound, and
// `exact_err` (may be null: 0) the reference's rigorous error of `exact`, which
// err_over_bound counts (testing::ratio_over_bound). Sizes must agree.
Metrics compute_metrics(DType dtype, const void* out, const std::vector<double>& exact,
                        const std::vector<std::uint32_t>& rounded,
                        const std::vector<double>* bounds = nullptr,
                        const std::vector<double>* exact_err = nullptr);

}  // namespace pagedattn::audit
