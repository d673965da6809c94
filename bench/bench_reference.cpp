// Throughput of the reference: the certified fast path (with its fallback counted) and the
// all-MPFR oracle, in tokens*heads per second so their ratio is visible.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "pagedattn_ref/formats.h"
#include "pagedattn_ref/reference.h"

namespace ref = pagedattn::ref;

namespace {

// A contiguous fp16 problem with N(0,1) queries, keys and values and a shuffled block table.
struct Problem {
  ref::Problem p;
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> bt, lens;
  Problem(int heads, int kv_heads, int hs, int tokens, uint64_t seed = 1) {
    const int bs = 16, nb = (tokens + bs - 1) / bs;
    std::mt19937_64 r(seed);
    std::normal_distribution<double> nd(0, 1);
    auto half = [&] {
      return uint16_t(ref::encode_bits(ref::round_to_format(nd(r), ref::format_of(ref::DType::f16)),
                                       ref::DType::f16));
    };
    q.resize(size_t(heads) * hs);
    k.resize(size_t(nb) * kv_heads * hs * bs);
    v.resize(k.size());
    for (auto& e : q) e = half();
    for (auto& e : k) e = half();
    for (auto& e : v) e = half();
    bt.resize(nb);
    for (int i = 0; i < nb; ++i) bt[i] = i;
    std::shuffle(bt.begin(), bt.end(), r);
    lens = {tokens};
    p.num_seqs = 1;
    p.num_heads = heads;
    p.num_kv_heads = kv_heads;
    p.head_size = hs;
    p.block_size = bs;
    p.num_blocks = nb;
    p.max_blocks_per_seq = nb;
    p.scalar_dtype = p.cache_dtype = ref::DType::f16;
    p.query = q.data();
    p.key_cache = k.data();
    p.value_cache = v.data();
    p.block_tables = bt.data();
    p.seq_lens = lens.data();
    p.scale = 1.0f / 11.3137f;
  }
};

void count(benchmark::State& st, const ref::Output& o, int heads, int tokens) {
  int fb = 0;
  for (const auto& c : o.cert) fb += c.fallback;
  st.counters["fallback_elems"] = fb;
  st.counters["tok_heads_per_s"] =
      benchmark::Counter(double(heads) * tokens, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Fast(benchmark::State& st) {
  const int heads = int(st.range(0)), kvh = int(st.range(1)), tokens = int(st.range(2));
  const auto out = ref::DType(st.range(3));
  Problem pr(heads, kvh, 128, tokens);
  ref::Options opt;
  opt.out_dtype = out;
  ref::Output o;
  for (auto _ : st) o = ref::reference_attention(pr.p, opt);
  count(st, o, heads, tokens);
}

void BM_Mpfr(benchmark::State& st) {
  const int heads = int(st.range(0)), kvh = int(st.range(1)), tokens = int(st.range(2));
  Problem pr(heads, kvh, 128, tokens);
  ref::Output o;
  for (auto _ : st) o = ref::reference_attention_mpfr(pr.p, ref::DType::f16, 256);
  count(st, o, heads, tokens);
}

// The exact per-partition states (all MPFR: every m, s and o certified to the nearest double),
// what the partition-state properties judge tmp_out, exp_sums and max_logits against.
void BM_Partitions(benchmark::State& st) {
  const int heads = int(st.range(0)), kvh = int(st.range(1)), tokens = int(st.range(2));
  Problem pr(heads, kvh, 128, tokens);
  ref::PartitionStates o;
  for (auto _ : st) o = ref::reference_partitions(pr.p, int(st.range(3)));
  st.counters["tok_heads_per_s"] =
      benchmark::Counter(double(heads) * tokens, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// Small sizes, both paths: the ratio of tok_heads_per_s is the fast path's speed-up.
BENCHMARK(BM_Fast)->Args({8, 8, 1000, int(ref::DType::f16)})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Mpfr)->Args({8, 8, 1000})->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Fast)->Args({32, 8, 4096, int(ref::DType::f16)})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Partitions)->Args({8, 8, 1000, 256})->Unit(benchmark::kMillisecond);
// The headline case: 1 sequence, 32 heads, 8 KV heads, head size 128, 100,000 tokens, fp16.
BENCHMARK(BM_Fast)
    ->Name("BM_Fast_HEADLINE")
    ->Args({32, 8, 100000, int(ref::DType::f16)})
    ->Args({32, 8, 100000, int(ref::DType::f32)})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

BENCHMARK_MAIN();
