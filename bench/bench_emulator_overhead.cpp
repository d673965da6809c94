// The emulator's overhead against native code: vLLM's V2 headline case (1 sequence, 32
// heads, 8 KV heads, head size 128, 100,000 tokens, fp16, partitions of 512) run by the
// kernels on the emulator, and the same math as a plain scalar C++ loop over the same
// cache layouts on the same number of host threads. The ratio of the two times is the
// price of running CUDA source on fibers (README: "Emulator overhead").
#include <benchmark/benchmark.h>

#include <emu/checks.h>
#include <emu/cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "pagedattn/api.h"

namespace {

constexpr int kHeads = 32, kKvHeads = 8, kD = 128, kTokens = 100000, kBlock = 16, kPart = 512;
constexpr int kX = 8;  // fp16 elements per 16 bytes: vLLM's key-cache innermost dimension
constexpr int kBlocks = (kTokens + kBlock - 1) / kBlock;
constexpr int kParts = (kTokens + kPart - 1) / kPart;

struct Problem {
  std::vector<__half> q, k, v;
  std::vector<std::int32_t> block_table, seq_lens{kTokens};
  float scale = 1.0f / std::sqrt(static_cast<float>(kD));
};

const Problem& problem() {
  static const Problem p = [] {
    Problem p;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    p.q.resize(kHeads * kD);
    for (auto& x : p.q) x = __float2half(u(rng));
    p.k.resize(std::size_t(kBlocks) * kKvHeads * kD * kBlock);
    p.v.resize(p.k.size());
    for (auto& x : p.k) x = __float2half(u(rng));
    for (auto& x : p.v) x = __float2half(u(rng));
    p.block_table.resize(kBlocks);
    for (int b = 0; b < kBlocks; ++b) p.block_table[b] = (b * 7919) % kBlocks;  // scattered
    return p;
  }();
  return p;
}

// One (head, partition) of V2 in plain scalar C++: logits, max, exponentials, P.V, in fp32
// as the kernels compute them, over vLLM's cache layouts.
void native_partition(const Problem& p, int h, int part, float* m_out, float* s_out, float* o_out) {
  const int kv = h / (kHeads / kKvHeads);
  const int first = part * kPart, last = std::min(kTokens, first + kPart);
  float q[kD];
  for (int d = 0; d < kD; ++d) q[d] = __half2float(p.q[h * kD + d]);
  float logits[kPart];
  float m = -INFINITY;
  for (int t = first; t < last; ++t) {
    const std::size_t blk = static_cast<std::size_t>(p.block_table[t / kBlock]) * kKvHeads + kv;
    const int slot = t % kBlock;
    float dot = 0.0f;
    for (int d = 0; d < kD; ++d)
      dot = std::fma(
          q[d], __half2float(p.k[((blk * (kD / kX) + d / kX) * kBlock + slot) * kX + d % kX]), dot);
    logits[t - first] = p.scale * dot;
    m = std::max(m, logits[t - first]);
  }
  float s = 0.0f;
  for (int i = 0; i < last - first; ++i) {
    logits[i] = std::exp(logits[i] - m);
    s += logits[i];
  }
  float o[kD] = {};
  for (int t = first; t < last; ++t) {
    const std::size_t blk = static_cast<std::size_t>(p.block_table[t / kBlock]) * kKvHeads + kv;
    const int slot = t % kBlock;
    const float e = logits[t - first];
    for (int d = 0; d < kD; ++d)
      o[d] = std::fma(e, __half2float(p.v[(blk * kD + d) * kBlock + slot]), o[d]);
  }
  *m_out = m;
  *s_out = s;
  for (int d = 0; d < kD; ++d) o_out[d] = o[d] / s;
}

void native_v2(const Problem& p, std::vector<__half>& out) {
  std::vector<float> m(kHeads * kParts), s(kHeads * kParts), o(std::size_t(kHeads) * kParts * kD);
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i; (i = next.fetch_add(1)) < kHeads * kParts;)
      native_partition(p, i / kParts, i % kParts, &m[i], &s[i], &o[std::size_t(i) * kD]);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < emu::host_threads(); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (int h = 0; h < kHeads; ++h) {  // the reduce
    float M = -INFINITY, S = 0.0f, acc[kD] = {};
    for (int q = 0; q < kParts; ++q) M = std::max(M, m[h * kParts + q]);
    for (int q = 0; q < kParts; ++q) {
      const float w = s[h * kParts + q] * std::exp(m[h * kParts + q] - M);
      S += w;
      for (int d = 0; d < kD; ++d) acc[d] += w * o[(std::size_t(h) * kParts + q) * kD + d];
    }
    for (int d = 0; d < kD; ++d) out[h * kD + d] = __float2half(acc[d] / S);
  }
}

void emulator_v2(const Problem& p, std::vector<__half>& out) {
  using pagedattn::DType;
  using pagedattn::TensorView;
  static std::vector<float> exp_sums(kHeads * kParts), max_logits(kHeads * kParts),
      tmp(std::size_t(kHeads) * kParts * kD);
  auto* q = const_cast<__half*>(p.q.data());
  auto* k = const_cast<__half*>(p.k.data());
  auto* v = const_cast<__half*>(p.v.data());
  pagedattn::Options opt;
  opt.partition_size = kPart;
  pagedattn::paged_attention_v2(
      TensorView::contiguous(out.data(), DType::f16, {1, kHeads, kD}),
      TensorView::contiguous(exp_sums.data(), DType::f32, {1, kHeads, kParts}),
      TensorView::contiguous(max_logits.data(), DType::f32, {1, kHeads, kParts}),
      TensorView::contiguous(tmp.data(), DType::f32, {1, kHeads, kParts, kD}),
      TensorView::contiguous(q, DType::f16, {1, kHeads, kD}),
      TensorView::contiguous(k, DType::f16, {kBlocks, kKvHeads, kD / kX, kBlock, kX}),
      TensorView::contiguous(v, DType::f16, {kBlocks, kKvHeads, kD, kBlock}), kKvHeads, p.scale,
      TensorView::contiguous(const_cast<std::int32_t*>(p.block_table.data()), DType::i32,
                             {1, kBlocks}),
      TensorView::contiguous(const_cast<std::int32_t*>(p.seq_lens.data()), DType::i32, {1}), kBlock,
      kTokens, TensorView{}, "auto", 1.0, 1.0, pagedattn::Backend::emulator("h200"), opt);
}

// Largest |emulator - native| over the output, in units of fp16's unit roundoff relative
// to the element: a sanity check that both compute the same thing (a counter, not a test).
double disagreement() {
  const Problem& p = problem();
  std::vector<__half> a(kHeads * kD), b(kHeads * kD);
  emulator_v2(p, a);
  native_v2(p, b);
  double worst = 0;
  for (int i = 0; i < kHeads * kD; ++i) {
    const double x = __half2float(a[i]), y = __half2float(b[i]);
    worst = std::max(worst, std::fabs(x - y) / (std::ldexp(std::fabs(y), -11) + 1e-30));
  }
  return worst;
}

void BM_V2Headline_Emulator(benchmark::State& state) {
  emu::set_host_threads(static_cast<int>(state.range(0)));
  const Problem& p = problem();
  std::vector<__half> out(kHeads * kD);
  for (auto _ : state) emulator_v2(p, out);
  state.counters["tokens_per_s"] = benchmark::Counter(double(kTokens) * kHeads * state.iterations(),
                                                      benchmark::Counter::kIsRate);
  emu::set_host_threads(0);
}

void BM_V2Headline_NativeLoop(benchmark::State& state) {
  emu::set_host_threads(static_cast<int>(state.range(0)));
  const Problem& p = problem();
  std::vector<__half> out(kHeads * kD);
  for (auto _ : state) native_v2(p, out);
  state.counters["tokens_per_s"] = benchmark::Counter(double(kTokens) * kHeads * state.iterations(),
                                                      benchmark::Counter::kIsRate);
  if (state.range(0) == 1) state.counters["max_diff_half_ulps"] = disagreement();
  emu::set_host_threads(0);
}

void args(benchmark::internal::Benchmark* b) {
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int t = 1; t <= all; t *= 2) b->Arg(t);
  b->ArgName("host_threads")
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(2);
}

}  // namespace

BENCHMARK(BM_V2Headline_NativeLoop)->Apply(args);
BENCHMARK(BM_V2Headline_Emulator)->Apply(args);
BENCHMARK_MAIN();
