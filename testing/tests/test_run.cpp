// run_kernel inside a ReuseInputAllocations scope: the same outputs, bit for bit, as
// fresh allocations; the allocations are really kept (else the scope saves nothing); and
// one made without memcheck (16-byte granule) is never reused under memcheck, where every
// tensor must end flush against its guard page.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <emu/checks.h>

#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::testing {
namespace {

using R = ReuseInputAllocations;

// Bit for bit (NaN states compare equal to themselves); V1's are empty.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same(const Outputs& a, const Outputs& b) {
  return a.out_bytes == b.out_bytes && a.tmp_out == b.tmp_out &&
         same_bits(a.exp_sums, b.exp_sums) && same_bits(a.max_logits, b.max_logits);
}

std::uintptr_t end_of(R& r, R::Role role) {
  return reinterpret_cast<std::uintptr_t>(r.slot(role)->ptr) + r.slot(role)->bytes;
}

TEST(ReuseInputAllocations, SameOutputsAsFreshAllocations) {
  UniformSpec s;
  s.scalar = DType::bf16;
  s.alibi = true;
  s.seq_lens = {70, 3, 129};
  const Case c = uniform_case(s);
  Options opt;
  opt.partition_size = 64;
  const Outputs v1 = run_kernel(c, Kernel::v1, "bi-v100", opt);
  const Outputs v2 = run_kernel(c, Kernel::v2, "bi-v100", opt);
  const R scope;
  for (int round = 0; round < 2; ++round) {  // the second round runs in kept allocations
    EXPECT_TRUE(same(run_kernel(c, Kernel::v1, "bi-v100", opt), v1));
    EXPECT_TRUE(same(run_kernel(c, Kernel::v2, "bi-v100", opt), v2));
  }
}

TEST(ReuseInputAllocations, KeepsAllocationsOfTheSameSizeAndMode) {
  UniformSpec s;
  s.seq_lens = {5};  // seq_lens: 4 bytes, short of cudaMalloc's 16-byte granule
  const Case c = uniform_case(s);
  const unsigned checks = emu::enabled_checks();
  emu::set_checks(0);
  R scope;
  run_kernel(c, Kernel::v1, "h200");
  void* const kept = scope.slot(R::key_cache)->ptr;
  ASSERT_NE(kept, nullptr);
  run_kernel(c, Kernel::v1, "h200");
  EXPECT_EQ(scope.slot(R::key_cache)->ptr, kept);  // reused, not freed and made again
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  EXPECT_NE(end_of(scope, R::seq_lens) % page, 0u);  // without memcheck: 12 bytes short

  emu::set_checks(emu::check_memcheck);
  run_kernel(c, Kernel::v1, "h200");
  emu::set_checks(checks);
  // Under memcheck every kept tensor ends at its guard page, to the byte: one kept from
  // the run without memcheck would have let a read one element past seq_lens through.
  for (R::Role role :
       {R::query, R::key_cache, R::value_cache, R::block_tables, R::seq_lens, R::out}) {
    EXPECT_EQ(end_of(scope, role) % page, 0u) << "role " << role;
  }
}

}  // namespace
}  // namespace pagedattn::testing
