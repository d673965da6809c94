// The model's KV loads against the bytes the emulator counts (emu/traffic.h) when the
// kernels run: per head, each query head's block reads its KV head's span; grouped, each
// block serving a KV head's heads reads it once. 16 query heads over 1 KV head, head 128,
// fp16, 1,100 tokens (three partitions, the last partial, and a partial last KV block), on
// both warp widths: grouped V2 takes two blocks of 8 heads per KV head (group_max_heads),
// grouped V1 three of 6 (8 heads' 1,104 logits pass the 32 KB budget), so the
// blocks_per_kv_head term is exercised where it is not 1.
#include <gtest/gtest.h>

#include <emu/traffic.h>
#include <cstdint>

#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace {

using namespace pagedattn;
using namespace pagedattn::testing;

// K and V bytes the attention launch read (the two cache allocations are the only ones of
// their size in this case).
std::uint64_t cache_read(const Case& c, Kernel k, bool grouped, const std::string& profile) {
  emu::take_launch_traffic();
  emu::set_count_traffic(true);
  Options opt;
  opt.grouped = grouped;
  run_kernel(c, k, profile, opt);
  emu::set_count_traffic(false);
  std::uint64_t bytes = 0;
  for (const emu::LaunchTraffic& t : emu::take_launch_traffic())
    for (const emu::AllocationTraffic& a : t.allocations)
      if (a.size == c.key_cache.size()) bytes += a.bytes_read;
  return bytes;
}

// Exact: the kernels read every live K and V element once per block that serves it, never
// a slot past seq_len, so the counted bytes are a whole multiple of what exists. Catches a
// model that counts grouped KV loads per query head, or ignores blocks_per_kv_head.
TEST(PerfModelTraffic, KvLoadsAreTheEmulatorsCount) {
  UniformSpec s;
  s.scalar = DType::f16;
  s.head_size = 128;
  s.num_heads = 16;
  s.num_kv_heads = 1;
  s.seq_lens = {1100};
  s.spare_blocks = 1;
  const Case c = uniform_case(s);
  Workload w;  // 1 sequence, head 128, block 16, partitions of 512, fp16
  w.num_heads = 16;
  w.num_kv_heads = 1;
  w.max_seq_len = 1100;
  for (const char* profile : {"h200", "bi-v100"}) {
    const perf::Estimate e = perf::estimate(perf::load_device(profile), w);
    ASSERT_EQ(e.v2_grouped.kv_load_bytes, 2 * e.v1_grouped.kv_load_bytes / 3) << profile;
    for (Kernel k : {Kernel::v1, Kernel::v2}) {
      const perf::KernelEstimate& per_head = k == Kernel::v1 ? e.v1 : e.v2;
      const perf::KernelEstimate& grouped = k == Kernel::v1 ? e.v1_grouped : e.v2_grouped;
      EXPECT_EQ(double(cache_read(c, k, false, profile)), per_head.kv_load_bytes)
          << profile << " " << kernel_name(k);
      EXPECT_EQ(double(cache_read(c, k, true, profile)), grouped.kv_load_bytes)
          << profile << " grouped " << kernel_name(k);
    }
  }
}

}  // namespace
