// The audit of the headline case: 1 sequence, 32 heads, 8 KV heads, head size 128,
// 100,000 fp16 tokens on bi-v100 (V1 refused for shared memory, V2 on the emulator with
// our numerics and vLLM's, the exact reference), on 2 host threads. Inputs are drawn once
// per run as in the CLI, so the figure is what `pagedattn audit` costs end to end.
#include <benchmark/benchmark.h>

#include "pagedattn_audit/config.h"
#include "pagedattn_audit/runner.h"

namespace {

pagedattn::audit::Config headline(int seq_len, const std::string& numerics) {
  pagedattn::audit::Config c;
  c.profiles = {"bi-v100"};
  c.num_seqs = {1};
  c.num_heads = {32};
  c.num_kv_heads = {8};
  c.head_sizes = {128};
  c.seq_lens = {seq_len};
  c.dtypes = {"f16"};
  c.numerics = numerics;
  c.threads = 2;
  return c;
}

void run(benchmark::State& state, const std::string& numerics) {
  const pagedattn::audit::Config c = headline(static_cast<int>(state.range(0)), numerics);
  double worst_ulp = 0;
  for (auto _ : state) {
    for (const auto& r : pagedattn::audit::run_grid(c)) {
      if (r.kernel == "v2" && r.numerics == "ours" && r.metrics) {
        worst_ulp = std::max(worst_ulp, r.metrics->max_ulp_err);
      }
    }
  }
  state.counters["v2_max_ulp"] = worst_ulp;
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(state.range(0)) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_AuditHeadline(benchmark::State& state) {
  run(state, "both");
}
void BM_AuditHeadlineOursOnly(benchmark::State& state) {
  run(state, "ours");
}

BENCHMARK(BM_AuditHeadline)->Arg(100000)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_AuditHeadlineOursOnly)
    ->Arg(100000)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
