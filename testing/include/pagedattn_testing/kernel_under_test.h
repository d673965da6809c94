// The kernel dimension of the tests and the property suite: which entry point a check runs
// and how its launch options differ, as one small value. Today V1 and V2; a new kernel
// (e.g. the grouped V1/V2 of a head-grouping choice in Options) is one more entry here,
// and every check that loops over kernels_under_test() runs it, with its bound
// (bound_setup, judge.h) following from the same value.
#pragma once
#include <string>
#include <vector>

#include "pagedattn/params.h"

namespace pagedattn::testing {

struct KernelUnderTest {
  Kernel kernel = Kernel::v1;  // the entry point: v1, or v2 (partitions, then the reduce)
  const char* name = "V1";

  bool partitioned() const { return kernel == Kernel::v2; }
  // The options this kernel runs with, from the check's own (partition size, numerics).
  Options options(Options base) const { return base; }
};

inline const std::vector<KernelUnderTest>& kernels_under_test() {
  static const std::vector<KernelUnderTest> k = {{Kernel::v1, "V1"}, {Kernel::v2, "V2"}};
  return k;
}

}  // namespace pagedattn::testing
