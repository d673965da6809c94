// Runs a kernel on a Case on the emulator, with every input and output in its own
// emulator allocation (cudaMalloc): under EMU_CHECKS=memcheck each ends flush against a
// guard, so a kernel that reads or writes one element past any tensor is a finding.
#pragma once
#include <cstddef>
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

// Within its scope, run_kernel on this host thread keeps the device allocations of the
// inputs and of `out` for the next call that needs the same byte size, instead of
// cudaFree and cudaMalloc again: a freed emulator allocation is made PROT_NONE, a TLB
// shootdown on every free, which was a tenth to a third of a property's CPU. What a
// kernel sees does not change: each call copies its inputs (and the poisoned `out`) in
// afresh, each allocation has exactly the tensor's size and memcheck's guard at its end
// when memcheck is on (one made without it is not reused under it),
// and while a kernel runs the live allocations are that call's own, as without the
// scope. V2's exp_sums, max_logits and tmp_out are still allocated per call. The property
// suite opens one per case (property_tests/registry.cpp); scopes nest (the outermost
// owns the allocations, freed when it ends). Not copyable; one host thread.
class ReuseInputAllocations {
 public:
  ReuseInputAllocations();
  ~ReuseInputAllocations();
  ReuseInputAllocations(const ReuseInputAllocations&) = delete;
  ReuseInputAllocations& operator=(const ReuseInputAllocations&) = delete;

  // One allocation kept per tensor role, with its byte size and whether it was made
  // under memcheck (flush against its guard: reused only in the same mode).
  enum Role { query, key_cache, value_cache, block_tables, seq_lens, alibi, out, kRoles };
  struct Slot {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    bool memcheck = false;
  };
  // The scope open on this host thread (the outermost), or null.
  static ReuseInputAllocations* current();
  Slot* slot(Role r) { return &slots_[r]; }

 private:
  ReuseInputAllocations* outer_;
  Slot slots_[kRoles];
};

}  // namespace pagedattn::testing
