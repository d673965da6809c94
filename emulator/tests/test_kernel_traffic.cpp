// Global-memory bytes the attention kernels move, counted by the emulator (emu/traffic.h)
// on the instrumented kernels: the headline shape of issue 18 (1 sequence, 32 query heads
// over 8 KV heads, head size 128, fp16, partitions of 512) at 10,001 tokens instead of
// 100,000 so the instrumented run stays short.
// The length does not change the ratios asserted: every KV block and partition is read by
// the same blocks at any length (each block reads exactly its partition's live tokens,
// never a slot past seq_len), so the cache bytes are exactly linear in tokens and the
// queries, block tables, seq_lens and V2's states only shrink relative to them as the
// sequence grows. 10,001 ends in a partial partition and a partial KV block.
#include <gtest/gtest.h>

#include <emu/traffic.h>
#include <cstdint>

#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace {

using namespace pagedattn;
using namespace pagedattn::testing;

struct Moved {
  std::uint64_t cache_read = 0;  // key_cache + value_cache
  std::uint64_t all_read = 0;    // every allocation, every launch (V2: partitions + reduce)
  std::uint64_t attention_launches = 0;
};

// The two cache allocations are the only ones of their size in this case.
Moved run_counted(const Case& c, Kernel k, bool grouped, const char* profile) {
  emu::take_launch_traffic();
  emu::set_count_traffic(true);
  Options opt;
  opt.grouped = grouped;
  run_kernel(c, k, profile, opt);
  emu::set_count_traffic(false);
  Moved m;
  for (const emu::LaunchTraffic& t : emu::take_launch_traffic()) {
    EXPECT_TRUE(t.instrumented) << t.kernel;
    if (t.kernel.find("attention_kernel") != std::string::npos) {
      ++m.attention_launches;
      EXPECT_EQ(t.kernel.find("grouped_attention_kernel") != std::string::npos, grouped)
          << t.kernel;
    }
    for (const emu::AllocationTraffic& a : t.allocations)
      if (a.size == c.key_cache.size()) m.cache_read += a.bytes_read;
    m.all_read += t.bytes_read;
  }
  return m;
}

// Wrong variants caught: a grouped kernel that reads the cache once per query head (4x),
// or reads slots past seq_len or a whole last block (more than `exists`); the ungrouped
// kernel launched for Options::grouped (the kernel-name check); every lane of a warp
// loading the block-table entry of the warp's KV block (attention_phases.cuh,
// block_number: the entry once per warp instead), which read 1.077x (V2) and 1.064x (V1)
// on bi-v100, where a warp has 64 lanes (shown when block_number was added).
TEST(KernelTraffic, HeadlineGroupedReadsTheCacheOnceTodaysFourTimes) {
  for (const char* profile : {"h200", "bi-v100"})
    // V1 at 1,001 tokens: its logits stay in shared memory, and 4 heads' fit the 32 KB a
    // grouped block may take (resources.h, head_groups) only up to about 1,800 tokens; past
    // that grouped V1 serves fewer heads per block and reads more (V2 does not: its slices
    // are per partition).
    for (const auto& [k, tokens] : {std::pair{Kernel::v2, 10001}, std::pair{Kernel::v1, 1001}}) {
      UniformSpec s = headline_spec(tokens);
      s.spare_blocks = 1;
      const Case c = uniform_case(s);
      const std::uint64_t exists = std::uint64_t(tokens) * 2 * 8 * 128 * 2;  // K and V, fp16
      const std::uint64_t inputs = exists + c.query.size() + c.block_tables.size() * 4;
      const Moved g = run_counted(c, k, true, profile), u = run_counted(c, k, false, profile);
      EXPECT_EQ(g.attention_launches, 1u);
      EXPECT_EQ(g.cache_read, exists) << profile << " " << kernel_name(k);
      EXPECT_EQ(u.cache_read, 4 * exists) << profile << " " << kernel_name(k);
      // Everything the launches read (queries, block tables, seq_lens, V2's states and
      // partials read back by the reduce) within 5% over what exists.
      EXPECT_LE(static_cast<double>(g.all_read), 1.05 * static_cast<double>(inputs))
          << profile << " " << kernel_name(k) << ": " << g.all_read << " bytes read, " << inputs
          << " exist";
      EXPECT_GE(static_cast<double>(u.all_read), 4.0 * static_cast<double>(exists));
      std::printf(
          "%s, %s, %d tokens: grouped reads %.4fx the KV bytes (all reads %.4fx of KV + "
          "queries + block tables), per query head %.4fx (all %.4fx)\n",
          profile, kernel_name(k), tokens, double(g.cache_read) / double(exists),
          double(g.all_read) / double(inputs), double(u.cache_read) / double(exists),
          double(u.all_read) / double(inputs));
    }
}

}  // namespace
