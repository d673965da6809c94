// Runs a kernel on a Case on the emulator, with every input and output in its own
// emulator allocation (cudaMalloc): under EMU_CHECKS=memcheck each ends flush against a
// guard, so a kernel that reads or writes one element past any tensor is a finding.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pagedattn/api.h"  // the entries a runner calls, LaunchError
#include "pagedattn_testing/case.h"

namespace pagedattn::testing {

struct Outputs {
  DType out_dtype = DType::f32;
  std::vector<double> out;              // decoded [seq][head][d]
  std::vector<std::uint8_t> out_bytes;  // raw, for bitwise comparisons
  // V2 only: [seq][head][partition] states and tmp_out [.., partition][d] (raw bytes of
  // tmp_dtype: f32, or the output dtype under partials_in_output_dtype).
  int num_partitions = 0;
  std::vector<float> exp_sums, max_logits;
  std::vector<std::uint8_t> tmp_out;
  DType tmp_dtype = DType::f32;
  double tmp(std::size_t i) const { return decode(tmp_dtype, tmp_out.data(), i); }
};

// V1 or V2 (`kernel`) on the emulator under `profile`, with `options`. `poison` prefills
// every output with NaN bit patterns, so anything a kernel fails to write shows.
Outputs run_kernel(const Case& c, Kernel kernel, const std::string& profile,
                   const Options& options = {}, bool poison = true);
// The same on any emulator backend (e.g. Backend::emulator(profile object), per call).
Outputs run_kernel(const Case& c, Kernel kernel, const Backend& backend,
                   const Options& options = {}, bool poison = true);

}  // namespace pagedattn::testing
