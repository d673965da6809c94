// The performance model: exact formulae on small cases, monotonicity, the profiles'
// model fields, the BI-V100 crossover, and the modelled choose_version.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>

#include "emu/profile.h"
#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"
#include "pagedattn/supported.h"
#include "pagedattn/version_select.h"

using namespace pagedattn;
using namespace pagedattn::perf;

namespace {

// A made-up device with round numbers, so each expected value is hand-computable.
Device toy() {
  Device d;
  d.name = "toy";
  d.warp_size = 32;
  d.multiprocessor_count = 4;
  d.shared_memory_per_block_optin = 48 * 1024;
  d.shared_memory_per_multiprocessor = 64 * 1024;
  d.max_threads_per_multiprocessor = 2048;
  d.clock_mhz = 1000;  // 1000 cycles per microsecond
  d.memory_bandwidth_gbps = 1000;
  d.fp32_tflops = 10;
  d.model = default_params();
  d.model["bandwidth_efficiency"].value = 1.0;
  return d;
}

Workload small() {
  Workload w;
  w.num_seqs = 1;
  w.num_heads = 2;
  w.num_kv_heads = 1;
  w.head_size = 128;
  w.block_size = 16;
  w.max_seq_len = 1024;
  w.partition_size = 512;
  w.cache_elem_bytes = 2;
  w.io_elem_bytes = 2;
  return w;
}

}  // namespace

// Catches counting K/V once per query head instead of once per KV head (GQA), or forgetting
// the block table, the query or the output.
TEST(PerfModel, BytesAndFlopsByFormula) {
  const Estimate e = estimate(toy(), small());
  const double kv = 2.0 * 1 * 1 * 1024 * 128 * 2;  // K and V, one KV head
  const double table = 4.0 * (1024 / 16);
  const double q = 2.0 * 128 * 2;
  EXPECT_DOUBLE_EQ(e.v1.dram_bytes, kv + table + q + q);
  const double partials = 2.0 * 2 * (4 * 128 + 8);  // 2 heads x 2 partitions
  EXPECT_DOUBLE_EQ(e.v2.dram_bytes, kv + table + q + partials);
  EXPECT_DOUBLE_EQ(e.reduce.dram_bytes, partials + q);
  EXPECT_DOUBLE_EQ(e.v1.flops, 4.0 * 2 * 1024 * 128);
  EXPECT_EQ(e.v1.blocks, 2);
  EXPECT_EQ(e.v2.blocks, 4);
  EXPECT_EQ(e.reduce.blocks, 2);
}

// Catches a wrong overlap rule (a lone block on an SM cannot overlap with anything) and a
// missing launch overhead.
TEST(PerfModel, IssueTimeByFormula) {
  const Device d = toy();
  const Estimate e = estimate(d, small());
  // V1: 2 blocks on 4 SMs, one per SM: no overlap; 3000 + 1024 * 32 cycles at 1000 MHz.
  EXPECT_DOUBLE_EQ(e.v1.t_issue_us, (3000 + 1024 * 32) / 1000.0);
  EXPECT_DOUBLE_EQ(e.v1.time_us, e.v1.t_issue_us + 4);
  EXPECT_EQ(e.v1.bound, "issue");
  // V2: 4 blocks of 512 tokens, one per SM.
  EXPECT_DOUBLE_EQ(e.v2.t_issue_us, (3000 + 512 * 32) / 1000.0);
  // Reduce: 2000 + 2 partitions * 40 cycles.
  EXPECT_DOUBLE_EQ(e.reduce.t_issue_us, (2000 + 2 * 40) / 1000.0);
  EXPECT_DOUBLE_EQ(e.v2_us, e.v2.time_us + e.reduce.time_us);
  // 16 sequences: 32 V1 blocks on 4 SMs, 8 per SM overlapped 1.6 times.
  Workload w = small();
  w.num_seqs = 16;
  EXPECT_DOUBLE_EQ(estimate(d, w).v1.t_issue_us, 8 * (3000 + 1024 * 32) / 1.6 / 1000.0);
}

// Catches a wrong occupancy limiter: 128 threads x 128 registers = 16384 per block, so
// 65536 registers hold 4 blocks; V1 at 12,000 tokens asks ~48 KB, one block per 64 KB SM.
TEST(PerfModel, OccupancyLimiters) {
  const Device d = toy();
  Workload w = small();
  Estimate e = estimate(d, w);
  EXPECT_EQ(e.v2.resident_blocks_per_sm, 4);
  EXPECT_EQ(e.v2.occupancy_limiter, "registers");
  EXPECT_DOUBLE_EQ(e.v2.occupancy, 4 * 128 / 2048.0);
  EXPECT_DOUBLE_EQ(e.v2.waves, 4 / (4.0 * 4));
  w.max_seq_len = 12000;
  e = estimate(d, w);
  EXPECT_EQ(e.v1.resident_blocks_per_sm, 1);
  EXPECT_EQ(e.v1.occupancy_limiter, "shared memory");
}

// A memory-bound case: many sequences of MHA at a tiny cycles_per_token.
TEST(PerfModel, MemoryBoundIsBandwidth) {
  Device d = toy();
  d.model["cycles_per_token"].value = 0.01;
  d.model["block_fixed_cycles"].value = 0;
  Workload w = small();
  w.num_kv_heads = 2;
  w.num_seqs = 64;
  const Estimate e = estimate(d, w);
  EXPECT_EQ(e.v2.bound, "memory");
  EXPECT_DOUBLE_EQ(e.v2.t_memory_us, e.v2.dram_bytes / (1000 * 1e3));
  EXPECT_LT(e.v2.bandwidth_fraction, 1.0);
  // Time and fraction use the one bandwidth figure: with no launch overhead a memory-bound
  // kernel reaches exactly bandwidth_efficiency of it (a model timing with one bandwidth
  // and reporting against another, as bi-v100's two fields once did, misses this).
  d.model["launch_overhead_us"].value = 0;
  d.model["bandwidth_efficiency"].value = 0.5;
  const Estimate half = estimate(d, w);
  ASSERT_EQ(half.v2.bound, "memory");
  EXPECT_DOUBLE_EQ(half.v2.bandwidth_fraction, 0.5);
}

// A second bandwidth in a profile's performance_model is refused, naming the allowed fields.
TEST(PerfModel, OneBandwidthField) {
  const std::string path = ::testing::TempDir() + "two_bandwidths.json";
  {
    std::ofstream f(path);
    f << R"({"name": "two-bandwidths", "warp_size": 64,
             "performance_model": {"memory_bandwidth_gbps": 584}})";
  }
  try {
    load_device(path);
    FAIL() << "a performance_model memory_bandwidth_gbps was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown field 'memory_bandwidth_gbps'"),
              std::string::npos)
        << e.what();
  }
}

// V1 stops exactly where the kernels' own limit says (resources.h), on every profile.
TEST(PerfModel, V1LaunchableExactlyToTheKernelLimit) {
  for (const char* name : {"bi-v100", "h200", "a100"}) {
    const Device d = load_device(name);
    const std::int64_t limit =
        v1_max_seq_len(d.warp_size, 128, 16, d.shared_memory_per_block_optin);
    Workload w = small();
    w.max_seq_len = limit;
    EXPECT_TRUE(estimate(d, w).v1.launchable) << name;
    EXPECT_TRUE(std::isfinite(estimate(d, w).v1_us)) << name;
    w.max_seq_len = limit + 1;
    EXPECT_FALSE(estimate(d, w).v1.launchable) << name;
    EXPECT_TRUE(std::isinf(estimate(d, w).v1_us)) << name;
    EXPECT_NE(estimate(d, w).v1.reason.find("shared memory"), std::string::npos);
  }
}

// More tokens or more sequences never take less modelled time (catches a sign or ceil
// error), per head and for grouped V2, whose heads per block do not depend on the length
// (its slices are one partition). Grouped V1 may take less: past a length its blocks serve
// fewer heads each.
void expect_monotone(double Estimate::*time, KernelEstimate Estimate::*kernel, const char* what) {
  for (const char* name : {"bi-v100", "h200", "a100"}) {
    const Device d = load_device(name);
    Workload w;
    double prev = 0;
    for (std::int64_t L = 1; L <= 1000000; L = L * 3 / 2 + 1) {
      w.max_seq_len = L;
      const Estimate e = estimate(d, w);
      if (!(e.*kernel).launchable) continue;
      EXPECT_GE(e.*time, prev) << what << " " << name << " L=" << L;
      prev = e.*time;
    }
    w.max_seq_len = 4096;
    prev = 0;
    for (int b = 1; b <= 256; b *= 2) {
      w.num_seqs = b;
      const double t = estimate(d, w).*time;
      EXPECT_GE(t, prev) << what << " " << name << " batch " << b;
      prev = t;
    }
  }
}

TEST(PerfModel, MonotoneInSeqLenAndBatch) {
  expect_monotone(&Estimate::v1_us, &Estimate::v1, "V1");
  expect_monotone(&Estimate::v2_us, &Estimate::v2, "V2");
  expect_monotone(&Estimate::v2_grouped_us, &Estimate::v2_grouped, "grouped V2");
}

// The profiles carry the model's fields with their sources; BI-V100's one bandwidth figure
// is the vendor's 1200 GB/s and the model reaches the measured 584 of it.
TEST(PerfModel, ProfilesCarryModelFields) {
  const Device bi = load_device("bi-v100");
  EXPECT_EQ(bi.memory_bandwidth_gbps, 1200);
  EXPECT_NEAR(bi.memory_bandwidth_gbps * bi.param("bandwidth_efficiency"), 584, 1e-9);
  EXPECT_FALSE(bi.model.at("cycles_per_token").source.empty());
  EXPECT_EQ(bi.model.at("cycles_per_token").confidence, "low");
  EXPECT_EQ(load_device("a100").model.at("cycles_per_token").confidence, "calibrated");
}

// On BI-V100 (16 units) one sequence of 8 heads leaves half the device idle under V1:
// V2 must win from some length on, and V1 must win at one partition.
TEST(PerfModel, CrossoverExistsOnBiV100) {
  const Device d = load_device("bi-v100");
  Workload w;
  w.num_heads = 8;
  w.num_kv_heads = 8;
  w.max_seq_len = 512;
  EXPECT_LT(estimate(d, w).v1_us, estimate(d, w).v2_us);
  const std::int64_t x = crossover_seq_len(d, w, 1 << 20, 16);
  EXPECT_GT(x, 512);
  EXPECT_LT(x, v1_max_seq_len(64, 128, 16, d.shared_memory_per_block_optin));
  w.max_seq_len = x;
  EXPECT_LT(estimate(d, w).v2_us, estimate(d, w).v1_us);
}

// The published ordering of vLLM issue #1880 (A100 class, 64 heads, MQA, 4K tokens, batch
// 1): V2 (52.9 us) beats V1 (100.4 us). The model was calibrated there, so this guards the
// calibration rather than validating it; perfmodel/README.md lists held-out cases.
TEST(PerfModel, ReproducesIssue1880Ordering) {
  Workload w;
  w.num_heads = 64;
  w.num_kv_heads = 1;
  w.max_seq_len = 4096;
  const Estimate e = estimate(load_device("a100"), w);
  EXPECT_NEAR(e.v1_us, 100.4, 100.4 * 0.15);
  EXPECT_NEAR(e.v2_us, 52.9, 52.9 * 0.15);
}

// choose_version with the model: rule 1 (V1 does not fit) and rule 2 (one partition) stay;
// otherwise the modelled faster version, with both times in the reason.
TEST(PerfModel, ChooseVersionModelled) {
  const Device bi = load_device("bi-v100");
  Workload w;  // 1 sequence, head 128, block 16, partitions of 512
  w.num_heads = 8;
  w.num_kv_heads = 8;
  w.max_seq_len = 100000;
  EXPECT_EQ(choose_version(bi, w).rule, VersionRule::v1_does_not_fit);
  EXPECT_EQ(choose_version(bi, w).version, Version::v2);
  w.max_seq_len = 500;
  EXPECT_EQ(choose_version(bi, w).rule, VersionRule::one_partition);
  EXPECT_EQ(choose_version(bi, w).version, Version::v1);
  const std::int64_t x = crossover_seq_len(bi, w, 12144, 16);
  ASSERT_GT(x, 512);
  w.max_seq_len = x - 16;
  const VersionChoice before = choose_version(bi, w);
  w.max_seq_len = x;
  const VersionChoice at = choose_version(bi, w);
  EXPECT_EQ(before.version, Version::v1) << before.reason;
  EXPECT_EQ(at.version, Version::v2) << at.reason;
  EXPECT_EQ(at.rule, VersionRule::modelled_faster);
  EXPECT_NE(at.reason.find("modelled on bi-v100"), std::string::npos);
}

// The grouped kernels' grid, shared memory and heads per block are resources.h's (not a
// copy of its formulas), on every profile, at every head size and ratios 2 to 16
// (ratio 16 at head 128 takes two blocks per KV head: group_max_heads is 8), V1 at lengths
// where its heads per block shrink. Catches a model that grids grouped kernels over query
// heads, or ignores blocks_per_kv_head.
TEST(PerfModelGrouped, GridAndSharedMemoryAreTheKernels) {
  for (const char* name : {"bi-v100", "h200", "a100"}) {
    const Device d = load_device(name);
    for (int hs : kHeadSizes)
      for (int ratio : {2, 4, 8, 16})
        for (std::int64_t L : {100, 1000, 3000, 20000}) {
          Workload w = small();
          w.num_seqs = 3;
          w.num_kv_heads = 2;
          w.num_heads = 2 * ratio;
          w.head_size = hs;
          w.max_seq_len = L;
          const Estimate e = estimate(d, w);
          const LaunchResources r1 = v1_grouped_resources(d.warp_size, w);
          const LaunchResources r2 = v2_grouped_resources(d.warp_size, w);
          EXPECT_EQ(e.v1_grouped.smem_bytes, r1.dynamic_smem_bytes);
          EXPECT_EQ(e.v2_grouped.smem_bytes, r2.dynamic_smem_bytes);
          EXPECT_EQ(e.v1_grouped.blocks, std::int64_t(r1.grid.x) * r1.grid.y);
          EXPECT_EQ(e.v2_grouped.blocks, std::int64_t(r2.grid.x) * r2.grid.y * r2.grid.z);
          EXPECT_EQ(e.v1_grouped.heads_per_block, r1.groups.heads_per_block);
          EXPECT_EQ(e.v2_grouped.heads_per_block, r2.groups.heads_per_block);
          EXPECT_EQ(e.v2_grouped.launchable,
                    r2.dynamic_smem_bytes <= d.shared_memory_per_block_optin);
        }
  }
}

// KV loads: once per block serving a KV head's heads (grouped), once per query head (per
// head); DRAM bytes the same (L2 serves a KV head's side-by-side blocks either way).
// Catches a model that counts grouped KV bytes per query head, or forgets the second block
// per KV head at ratio 16.
TEST(PerfModelGrouped, KvLoadsByFormula) {
  const Device d = toy();
  Workload w = small();  // 2 heads over 1 KV head, 1024 tokens
  const double kv = 2.0 * 1024 * 128 * 2;
  Estimate e = estimate(d, w);
  EXPECT_DOUBLE_EQ(e.v2.kv_load_bytes, 2 * kv);
  EXPECT_DOUBLE_EQ(e.v1.kv_load_bytes, 2 * kv);
  EXPECT_DOUBLE_EQ(e.v2_grouped.kv_load_bytes, kv);
  EXPECT_DOUBLE_EQ(e.v1_grouped.kv_load_bytes, kv);
  EXPECT_DOUBLE_EQ(e.v2_grouped.dram_bytes, e.v2.dram_bytes);
  EXPECT_DOUBLE_EQ(e.v1_grouped.dram_bytes, e.v1.dram_bytes);
  EXPECT_EQ(e.v2_grouped.blocks, 2);  // 1 KV head x 2 partitions
  EXPECT_EQ(e.v1_grouped.blocks, 1);
  w.num_heads = 16;  // ratio 16: two blocks of 8 heads per KV head
  e = estimate(d, w);
  EXPECT_EQ(e.v2_grouped.heads_per_block, 8);
  EXPECT_DOUBLE_EQ(e.v2_grouped.kv_load_bytes, 2 * kv);
  EXPECT_DOUBLE_EQ(e.v2.kv_load_bytes, 16 * kv);
}

// A grouped block's further heads add their multiply-adds (2 x head_size per token) at
// min(128 threads, the unit's fp32 lanes) per cycle on top of the fitted per-token
// latency. Catches a model where extra heads cost nothing, or cost a whole
// cycles_per_token each (no shared latency), or ignore a unit with fewer lanes.
TEST(PerfModelGrouped, IssueTimeByFormula) {
  Device d = toy();  // 10 TFLOPS over 4 units at 1 GHz: 1250 lanes, the block's 128 bind
  Workload w = small();
  w.num_heads = 4;  // 4 heads over 1 KV head: one block per partition
  Estimate e = estimate(d, w);
  // 2 grouped V2 blocks on 4 units, alone: 3000 + 512 x (32 + 3 x 2 x 128 / 128) cycles.
  EXPECT_DOUBLE_EQ(e.v2_grouped.t_issue_us, (3000 + 512 * (32 + 3 * 2.0)) / 1000.0);
  EXPECT_DOUBLE_EQ(e.v1_grouped.t_issue_us, (3000 + 1024 * (32 + 3 * 2.0)) / 1000.0);
  EXPECT_DOUBLE_EQ(e.v2_grouped_us, e.v2_grouped.time_us + e.reduce.time_us);
  // 64 lanes per unit (2.56 TFLOPS): 4 cycles per further head and token.
  d.fp32_tflops = 64 * 2 * 1000 * 4 / 1e6;
  e = estimate(d, w);
  EXPECT_DOUBLE_EQ(e.v2_grouped.t_issue_us, (3000 + 512 * (32 + 3 * 4.0)) / 1000.0);
  // Ratio 6 at head 128, V1 at 2,000 tokens: 6 heads' logits pass 32 KB, so 2 blocks of 3
  // (resources.h); the mean block serves 3 heads.
  w.num_heads = 6;
  w.max_seq_len = 2000;
  d = toy();
  e = estimate(d, w);
  ASSERT_EQ(e.v1_grouped.heads_per_block, 3);
  EXPECT_EQ(e.v1_grouped.blocks, 2);
  EXPECT_DOUBLE_EQ(e.v1_grouped.t_issue_us, (3000 + 2000 * (32 + 2 * 2.0)) / 1000.0);
}

// Where grouped_fallback_reason says the kernels fall back (one query head per KV head),
// the model has no grouped time, and says why in the kernels' words; at the shapes that
// fell back before every shape had grouped kernels (f32, head size 96, block size 32) it
// times them. Catches a model that times grouped kernels that do not run (and so a
// modelled chooser that picks them), or one that still refuses a built shape.
TEST(PerfModelGrouped, NoGroupedWhereTheKernelsFallBack) {
  Workload f32 = small(), h96 = small(), b32 = small(), mha = small();
  f32.io_elem_bytes = 4;
  h96.head_size = 96;
  b32.block_size = 32;
  mha.num_kv_heads = 2;
  const Estimate e = estimate(toy(), mha);
  for (const KernelEstimate* k : {&e.v1_grouped, &e.v2_grouped}) {
    EXPECT_FALSE(k->launchable);
    EXPECT_EQ(k->reason, grouped_fallback_reason(mha));
  }
  EXPECT_TRUE(std::isinf(e.v1_grouped_us));
  EXPECT_TRUE(std::isinf(e.v2_grouped_us));
  EXPECT_TRUE(std::isfinite(e.v2_us));
  for (const Workload& w : {f32, h96, b32}) {
    const Estimate g = estimate(toy(), w);
    EXPECT_TRUE(g.v2_grouped.launchable) << g.v2_grouped.reason;
    EXPECT_TRUE(std::isfinite(g.v2_grouped_us));
  }
}

// The headline (1 sequence, 32 heads over 8 KV heads, head 128, 100,000 tokens, fp16), as
// perfmodel/README.md and the top-level README quote it (to their rounding). Issue 18's
// targets: grouped V2 (with its reduce) at most 1.0 ms on BI-V100, met (942 us); at least
// 0.85 of H200's peak, met by the partition kernel alone (0.864) but not by V2 + reduce
// (0.799, the measure of the issue's 0.29 and the report's bandwidth table): the reduce's
// 9 us and two launches of 4 us sit beside 95.6 us of memory time, and 0.85 of a 0.9
// efficiency leaves 5.6 us. Catches a changed model (a constant, a byte or cycle term)
// that moves a quoted figure.
TEST(PerfModelGrouped, HeadlineFiguresAsQuoted) {
  Workload w;
  w.max_seq_len = 100000;
  const Estimate bi = estimate(load_device("bi-v100"), w);
  EXPECT_NEAR(bi.v2_us, 3185, 0.5);
  EXPECT_NEAR(bi.v2_grouped_us, 942, 0.5);
  EXPECT_LE(bi.v2_grouped_us, 1000);
  EXPECT_EQ(bi.v2_grouped.bound, "issue");
  const Device h200 = load_device("h200");
  const Estimate h = estimate(h200, w);
  const auto with_reduce = [&](const KernelEstimate& k, double us) {
    return (k.dram_bytes + h.reduce.dram_bytes) / (us * 1e3) / h200.memory_bandwidth_gbps;
  };
  EXPECT_NEAR(h.v2.bandwidth_fraction, 0.293, 0.0005);
  EXPECT_NEAR(h.v2_grouped.bandwidth_fraction, 0.864, 0.0005);
  EXPECT_NEAR(with_reduce(h.v2, h.v2_us), 0.286, 0.0005);
  EXPECT_NEAR(with_reduce(h.v2_grouped, h.v2_grouped_us), 0.799, 0.0005);
  EXPECT_EQ(h.v2_grouped.bound, "memory");
}

// The modelled chooser: grouped where the model says it is faster (the headline on every
// profile), per head where it is slower (h200, 1 sequence, 300 tokens: 8 grouped blocks
// leave more of 132 units idle than 32 per-head ones), never where the kernels fall back
// (one query head per KV head), and at f32 as at f16.
// Catches a modelled chooser that always or never groups, or ignores the fallback.
TEST(PerfModelGrouped, ChooseVersionModelled) {
  Workload w;
  w.max_seq_len = 100000;
  for (const char* name : {"bi-v100", "h200", "a100"}) {
    const VersionChoice c = choose_version(load_device(name), w);
    EXPECT_TRUE(c.grouped) << c.grouped_reason;
    EXPECT_EQ(c.grouped_rule, GroupedRule::modelled_faster);
    EXPECT_EQ(c.version, Version::v2);
    EXPECT_NE(c.grouped_reason.find("grouped V2"), std::string::npos) << c.grouped_reason;
  }
  const Device h200 = load_device("h200");
  w.max_seq_len = 300;
  const Estimate e = estimate(h200, w);
  ASSERT_GT(e.v1_grouped_us, e.v1_us);
  const VersionChoice slower = choose_version(h200, w);
  EXPECT_FALSE(slower.grouped) << slower.grouped_reason;
  EXPECT_EQ(slower.grouped_rule, GroupedRule::modelled_faster);
  EXPECT_EQ(slower.version, Version::v1);
  w.max_seq_len = 100000;
  w.io_elem_bytes = 4;  // f32 has grouped kernels too (supported.h)
  const VersionChoice f32 = choose_version(h200, w);
  EXPECT_TRUE(f32.grouped) << f32.grouped_reason;
  EXPECT_EQ(f32.grouped_rule, GroupedRule::modelled_faster);
  w.num_kv_heads = w.num_heads;  // one query head per KV head: the kernels fall back
  const VersionChoice mha = choose_version(h200, w);
  EXPECT_FALSE(mha.grouped);
  EXPECT_EQ(mha.grouped_rule, GroupedRule::falls_back);
}
