// The kernel dimension of the tests and the property suite: which entry point a check runs
// and how its launch options differ, as one small value: V1 and V2, each per query head
// and grouped (Options::grouped). A new kernel is one more entry here,
// and every check that loops over kernels_under_test() runs it, with its bound
// (bound_setup, judge.h) following from the same value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pagedattn/params.h"
#include "pagedattn/resources.h"
#include "pagedattn_testing/case.h"

namespace pagedattn::testing {

struct KernelUnderTest {
  Kernel kernel = Kernel::v1;  // the entry point: v1, or v2 (partitions, then the reduce)
  const char* name = "V1";
  bool grouped = false;  // Options::grouped: the grouped kernels (one block per KV head's group)

  bool partitioned() const { return kernel == Kernel::v2; }
  // The options this kernel runs with, from the check's own (partition size, numerics).
  Options options(Options base) const {
    base.grouped = grouped;
    return base;
  }
};

// The grouped kernels have the ungrouped ones' arithmetic per head, so the same bound
// (kernels/tests/test_grouped.cpp shows them bit-identical).
inline const std::vector<KernelUnderTest>& kernels_under_test() {
  static const std::vector<KernelUnderTest> k = {{Kernel::v1, "V1", false},
                                                 {Kernel::v2, "V2", false},
                                                 {Kernel::v1, "V1 grouped", true},
                                                 {Kernel::v2, "V2 grouped", true}};
  return k;
}

// c's shape as the resource functions take it (V2 partitions of partition_size).
inline Workload workload_of(const Case& c, int partition_size = 512) {
  Workload w;
  w.num_seqs = c.num_seqs;
  w.num_heads = c.num_heads;
  w.num_kv_heads = c.num_kv_heads;
  w.head_size = c.head_size;
  w.block_size = c.block_size;
  w.max_seq_len = c.max_seq_len;
  w.partition_size = partition_size;
  w.cache_elem_bytes = static_cast<int>(dtype_size(c.cache_storage()));
  w.io_elem_bytes = static_cast<int>(dtype_size(c.scalar));
  return w;
}

// Why Options::grouped runs the per-head kernels on c's shape (grouped_fallback_reason,
// resources.h: one query head per KV head), or nullptr where it runs the grouped kernels.
inline const char* grouped_fallback(const Case& c) {
  return grouped_fallback_reason(workload_of(c));
}
// The same for one launch of kernel k at warp_size (grouped_launch_fallback_reason: also
// a grouped block that would serve one head).
inline const char* grouped_fallback(const Case& c, Kernel k, int warp_size, int partition_size) {
  return grouped_launch_fallback_reason(k, warp_size, workload_of(c, partition_size));
}

// The entries that launch something of their own on c: the grouped ones only where
// Options::grouped launches the grouped kernels (grouped_fallback_reason, resources.h);
// elsewhere they would rerun the per-head kernels, the same bits at the same cost. The
// checks loop over this, so the grouped entries add runs only on GQA cases, not a second
// copy of every run.
inline std::vector<KernelUnderTest> kernels_under_test(const Case& c) {
  const bool grouped = grouped_fallback(c) == nullptr;
  std::vector<KernelUnderTest> r;
  for (const KernelUnderTest& k : kernels_under_test())
    if (!k.grouped || grouped) r.push_back(k);
  return r;
}

// Which of the two a GQA case runs in kernels_one_each: a hash of its shape, sequence
// lengths and query bytes (FNV-1a), so about half the cases of every property take each.
inline bool grouped_turn(const Case& c) {
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (std::int64_t v : {std::int64_t(c.scalar), std::int64_t(c.cache), std::int64_t(c.num_seqs),
                         std::int64_t(c.num_heads), std::int64_t(c.num_kv_heads),
                         std::int64_t(c.head_size), std::int64_t(c.block_size), c.max_seq_len})
    mix(static_cast<std::uint64_t>(v));
  for (std::int32_t L : c.seq_lens) mix(static_cast<std::uint32_t>(L));
  for (std::uint8_t b : c.query) mix(b);
  return (h >> 32 & 1) != 0;
}

// V1 and V2 once each, the property suite's kernel dimension: on a case where
// Options::grouped launches the grouped kernels (a GQA case), the grouped entries or the
// per-head ones by the case's turn (grouped_turn); elsewhere the per-head ones. Per head
// the two are the same arithmetic and bit-identical outputs, which prop_grouped_split_
// groups_bitwise asserts on every case it draws and kernels.output_digests_grouped on
// every shape, so running both on every GQA case would check the same bits twice: with
// every shape grouped that doubled the cost of a GQA case (prop_v2_eq_v1 at 200 cases:
// 60 cases per CPU-second against 103 before; property_tests/README.md).
inline std::vector<KernelUnderTest> kernels_one_each(const Case& c) {
  const bool grouped = grouped_fallback(c) == nullptr && grouped_turn(c);
  std::vector<KernelUnderTest> r;
  for (const KernelUnderTest& k : kernels_under_test())
    if (k.grouped == grouped) r.push_back(k);
  return r;
}

}  // namespace pagedattn::testing
