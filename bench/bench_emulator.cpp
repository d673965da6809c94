// Emulator throughput: barrier-heavy and shuffle-heavy kernels, in thread-steps per
// second (one GPU thread passing one barrier or collective), and the scaling from one
// host thread to all of them.
#include <benchmark/benchmark.h>

#include <emu/cuda_runtime.h>

#include <thread>

__global__ void barrier_heavy(float* out, int phases) {
  extern __shared__ float smem[];
  float v = static_cast<float>(threadIdx.x);
  for (int p = 0; p < phases; ++p) {
    smem[threadIdx.x] = v;
    __syncthreads();
    v += smem[(threadIdx.x + 1) % blockDim.x];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void shuffle_heavy(float* out, int rounds) {
  float v = static_cast<float>(threadIdx.x);
  for (int r = 0; r < rounds; ++r)
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
      v += __shfl_xor_sync(0xffffffff, v, offset);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

namespace {

constexpr int kBlocks = 64, kThreads = 128;

void run(benchmark::State& state, bool shuffles) {
  emu::use_profile(state.range(1) == 64 ? "bi-v100" : "h200");
  emu::set_host_threads(static_cast<int>(state.range(0)));
  float* out;
  cudaMalloc(&out, kBlocks * kThreads * sizeof(float));
  const int work = 16;
  const int ws = emu::current_profile().warp_size;
  int levels = 0;
  for (int o = ws / 2; o > 0; o /= 2) ++levels;
  for (auto _ : state) {
    cudaError_t e = shuffles
                        ? emu::launch(shuffle_heavy, dim3(kBlocks), dim3(kThreads), 0, out, work)
                        : emu::launch(barrier_heavy, dim3(kBlocks), dim3(kThreads),
                                      kThreads * sizeof(float), out, work);
    if (e != cudaSuccess) state.SkipWithError(cudaGetErrorString(e));
  }
  // One thread-step: one GPU thread arriving at one barrier or collective.
  const double steps = double(kBlocks) * kThreads * (shuffles ? work * levels : 2 * work);
  state.counters["thread_steps_per_s"] =
      benchmark::Counter(steps * state.iterations(), benchmark::Counter::kIsRate);
  if (!shuffles)
    state.counters["barrier_phases_per_s"] = benchmark::Counter(
        double(kBlocks) * 2 * work * state.iterations(), benchmark::Counter::kIsRate);
  cudaFree(out);
  emu::set_host_threads(0);
}

void BM_BarrierHeavy(benchmark::State& s) {
  run(s, false);
}
void BM_ShuffleHeavy(benchmark::State& s) {
  run(s, true);
}

void args(benchmark::internal::Benchmark* b) {
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int warp : {32, 64})
    for (int t = 1; t <= all; t *= 2) b->Args({t, warp});
  b->ArgNames({"host_threads", "warp"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_BarrierHeavy)->Apply(args);
BENCHMARK(BM_ShuffleHeavy)->Apply(args);
BENCHMARK_MAIN();
