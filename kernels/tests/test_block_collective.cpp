// BlockCollective's contract (kernels/src/block_collective.cuh) on the emulator at warp 32
// and 64: every thread gets the same result, equal bit for bit to the contract's order
// (butterfly within a warp, then warps in ascending order) computed here on the host; a
// call with N values gives per element what N = 1 gives; consecutive calls with no barrier
// of their own between them do not disturb each other (the halves alternate). Under
// EMU_CHECKS=all (kernels.under_emu_checks_all) racecheck runs the same launches in three
// thread orders. Wrong variants shown once each: the warps folded from the last (the
// sums differ from the host's order: the inputs mix 1e8 and 1), and a single scratch half
// (racecheck finds the next call's write racing the previous call's reads).
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>
#include <emu/profile.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "block_collective.cuh"
#include "device_math.cuh"

namespace pagedattn::detail::emu_exec {
namespace {

constexpr int kThreads = kThreadsPerBlock;
constexpr int kCalls = 4;  // max, sum, any per call round; rounds back to back
constexpr int kN = 3;

struct ProbeArgs {
  const float* in;  // [kCalls][kN][kThreads]
  float* max_out;   // [kCalls][kN][kThreads]: what each thread got
  float* sum_out;
  int* any_out;
  float* single_out;  // [kCalls][kThreads]: max and sum of element 0 with N = 1, interleaved
};

template <int WARP>
__global__ void probe(const ProbeArgs a) {
  BlockCollective<WARP, kN> coll(reinterpret_cast<float*>(smem));
  const int t = threadIdx.x;
  for (int c = 0; c < kCalls; ++c) {
    float mx[kN], sm[kN];
    bool an[kN];
    for (int j = 0; j < kN; ++j) {
      mx[j] = sm[j] = a.in[(c * kN + j) * kThreads + t];
      an[j] = mx[j] > 0.99f;
    }
    coll.max(mx);
    coll.sum(sm);
    coll.any(an);
    const float m1 = coll.max(a.in[c * kN * kThreads + t]);
    const float s1 = coll.sum(a.in[c * kN * kThreads + t]);
    for (int j = 0; j < kN; ++j) {
      const int i = (c * kN + j) * kThreads + t;
      a.max_out[i] = mx[j];
      a.sum_out[i] = sm[j];
      a.any_out[i] = an[j];
    }
    a.single_out[(2 * c) * kThreads + t] = m1;
    a.single_out[(2 * c + 1) * kThreads + t] = s1;
  }
}

// The contract's order on the host: xor butterfly in each warp, then warps 0, 1, ...
template <class Op>
float contract_fold(const float* v, int warp, Op op) {
  std::vector<float> lanes(v, v + kThreads);
  for (int w0 = 0; w0 < kThreads; w0 += warp) {
    for (int off = warp / 2; off >= 1; off /= 2) {
      std::vector<float> next(lanes);
      for (int l = 0; l < warp; ++l) next[w0 + l] = op(lanes[w0 + l], lanes[w0 + (l ^ off)]);
      lanes = next;
    }
  }
  float r = lanes[0];
  for (int w0 = warp; w0 < kThreads; w0 += warp) r = op(r, lanes[w0]);
  return r;
}

template <class T>
T* device(std::size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  return static_cast<T*>(p);
}

template <int WARP>
void check(const char* profile) {
  // Inputs: magnitudes 1e8 and 1 mixed (an order change of the sum shows), a NaN in the
  // max input of round 1 (fmaxf skips it), all-negative values in round 2 (any false).
  std::vector<float> in(kCalls * kN * kThreads);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const int t = static_cast<int>(i % kThreads), c = static_cast<int>(i / (kN * kThreads));
    const float mag = (t * 7 + static_cast<int>(i / kThreads)) % 5 == 0 ? 1e8f : 1.f;
    in[i] = (t % 3 == 0 ? -mag : mag) * (1.f + static_cast<float>(t % 11) / 16);
    if (c == 2) in[i] = -std::fabs(in[i]);
  }
  in[1 * kN * kThreads + 17] = NAN;
  const std::size_t n = in.size();
  float* d_in = device<float>(n);
  std::memcpy(d_in, in.data(), n * sizeof(float));
  ProbeArgs a{d_in, device<float>(n), device<float>(n), device<int>(n),
              device<float>(2 * kCalls * kThreads)};
  const emu::Profile prof = emu::resolve_profile(profile);
  ASSERT_EQ(prof.warp_size, WARP);
  ASSERT_EQ(launch_kernel(&probe<WARP>, dim3(1), dim3(kThreads),
                          4 * block_collective_floats(WARP, kN), Device{nullptr, &prof}, a),
            cudaSuccess)
      << emu::last_error_message();
  const auto fmax_op = [](float x, float y) { return std::fmax(x, y); };
  const auto sum_op = [](float x, float y) { return x + y; };
  for (int c = 0; c < kCalls; ++c) {
    for (int j = 0; j < kN; ++j) {
      const float* v = &in[(c * kN + j) * kThreads];
      const float want_max = contract_fold(v, WARP, fmax_op);
      const float want_sum = contract_fold(v, WARP, sum_op);
      bool want_any = false;
      for (int t = 0; t < kThreads; ++t) want_any = want_any || v[t] > 0.99f;
      for (int t = 0; t < kThreads; ++t) {
        const int i = (c * kN + j) * kThreads + t;
        ASSERT_EQ(0, std::memcmp(&a.max_out[i], &want_max, 4)) << profile << " max " << c << j;
        ASSERT_EQ(0, std::memcmp(&a.sum_out[i], &want_sum, 4)) << profile << " sum " << c << j;
        ASSERT_EQ(a.any_out[i] != 0, want_any) << profile << " any " << c << j;
        if (j == 0) {  // N = 1 gives what element 0 of the N = 3 call gave
          ASSERT_EQ(0, std::memcmp(&a.single_out[2 * c * kThreads + t], &want_max, 4));
          ASSERT_EQ(0, std::memcmp(&a.single_out[(2 * c + 1) * kThreads + t], &want_sum, 4));
        }
      }
    }
  }
  // The sums are not those of a plain sequential order (the test can tell orders apart).
  float seq = 0.f;
  for (int t = 0; t < kThreads; ++t) seq += in[t];
  EXPECT_NE(seq, contract_fold(in.data(), WARP, sum_op));
  for (void* p :
       {static_cast<void*>(d_in), static_cast<void*>(a.max_out), static_cast<void*>(a.sum_out),
        static_cast<void*>(a.any_out), static_cast<void*>(a.single_out)})
    cudaFree(p);
}

TEST(BlockCollective, ContractOrderOnEveryThreadWarp64) {
  check<64>("bi-v100");
}
TEST(BlockCollective, ContractOrderOnEveryThreadWarp32) {
  check<32>("h200");
}

}  // namespace
}  // namespace pagedattn::detail::emu_exec
