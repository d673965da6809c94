// Grouped against per-head V1 and V2 on the emulator: issue 18's headline shape (1
// sequence, 32 query heads over 8 KV heads, head size 128, fp16, partitions of 512) at
// 4,097 tokens for V2 (eight partitions and one token) and 1,001 for V1 (its logits stay in
// shared memory, and four heads' fit a grouped block's 32 KB), on h200 (warp 32) and
// bi-v100 (warp 64). Every row says its variant ("grouped" or "ungrouped": the label and
// the `grouped` counter) and reports the emulator's time of one call.
// Built twice from this file: bench_kernels with the library's kernels (the times), and
// bench_kernels_traffic with the f16 kernels compiled with the emulator's load/store
// instrumentation (emu/traffic.h), whose rows add the bytes every launch of the call read
// and wrote: in all, of the K and V caches, per output element, and as a multiple of the
// K and V bytes that exist for the sequence. The instrumentation slows the emulator, so
// compare times within one program.
#include <benchmark/benchmark.h>

#include <emu/traffic.h>

#include <cstdint>
#include <string>

#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace {

using namespace pagedattn;
using namespace pagedattn::testing;

const Case& headline(int tokens) {
  static Case cases[2];
  Case& c = cases[tokens == 1001 ? 0 : 1];
  if (c.num_heads == 0) c = uniform_case(headline_spec(tokens));
  return c;
}

// Args: kernel (1 or 2), grouped (0/1), warp (32: h200, 64: bi-v100).
void BM_Attention(benchmark::State& state) {
  const Kernel k = state.range(0) == 1 ? Kernel::v1 : Kernel::v2;
  const bool grouped = state.range(1) != 0;
  const std::string profile = state.range(2) == 64 ? "bi-v100" : "h200";
  const int tokens = k == Kernel::v1 ? 1001 : 4097;
  const Case& c = headline(tokens);
  Options o;
  o.grouped = grouped;
  std::uint64_t read = 0, written = 0, cache = 0;
  bool instrumented = true;
  for (auto _ : state) {
    emu::take_launch_traffic();
    emu::set_count_traffic(true);
    run_kernel(c, k, profile, o, false);
    emu::set_count_traffic(false);
    read = written = cache = 0;
    for (const emu::LaunchTraffic& t : emu::take_launch_traffic()) {
      instrumented = instrumented && t.instrumented;
      read += t.bytes_read;
      written += t.bytes_written;
      for (const emu::AllocationTraffic& a : t.allocations)
        if (a.size == c.key_cache.size()) cache += a.bytes_read;  // key_cache, value_cache
    }
  }
  state.SetLabel(grouped ? "grouped" : "ungrouped");
  state.counters["grouped"] = grouped;
  state.counters["tokens"] = tokens;
  if (!instrumented) return;  // bench_kernels: the library's kernels count no bytes
  const double outputs = double(c.num_seqs) * c.num_heads * c.head_size;
  const double exists = double(tokens) * 2 * c.num_kv_heads * c.head_size * 2;  // K, V fp16
  state.counters["bytes_read"] = double(read);
  state.counters["bytes_written"] = double(written);
  state.counters["kv_bytes_read"] = double(cache);
  state.counters["kv_reads_per_kv_byte"] = double(cache) / exists;
  state.counters["bytes_per_output"] = double(read + written) / outputs;
}

void args(benchmark::internal::Benchmark* b) {
  for (int warp : {32, 64})
    for (int kernel : {1, 2})
      for (int grouped : {0, 1}) b->Args({kernel, grouped, warp});
  b->ArgNames({"v", "grouped", "warp"})->Unit(benchmark::kMillisecond)->UseRealTime();
  b->Iterations(1);
}

}  // namespace

BENCHMARK(BM_Attention)->Apply(args);
BENCHMARK_MAIN();
