// BlockCollective: all-reductions (max, sum, any) of N floats per thread over the whole
// thread block, on scratch in shared memory carved by resources.h.
//
// Contract (every kernel here relies on each line):
// - Who calls: every thread of the block (kThreadsPerBlock threads, warps of WARP lanes)
//   calls every method, in the same order, from block-uniform control flow. Inactive or
//   diverged threads deadlock the barrier and break the warp shuffles (full mask).
// - Barriers: each method contains exactly one __syncthreads(), between the warps'
//   writes to the scratch and the reads of it. Callers may count on it: anything every
//   thread wrote before the call is visible to all after it, and anything every thread
//   read before the call may be overwritten after it (the kernels free the logits buffer
//   for the P.V scratch this way).
// - Scratch: 2 * MAX_N * warps floats (block_collective_floats in resources.h), owned by
//   the collective from construction to the block's end: nothing else may read or write
//   it. Calls alternate between its two halves, so consecutive calls need no extra
//   barrier: a half is written again two calls later, and the call in between has a
//   barrier that every thread reaches only after reading the half.
// - Result: the same value in every thread, and the same on every run and executor. The
//   order is fixed: within a warp a butterfly (xor offsets WARP/2 down to 1, warp_reduce.cuh),
//   then the warps' values folded in ascending warp order from warp 0's. A sum therefore
//   depends on WARP (warp 32 and warp 64 blocks group the terms differently). max is
//   fmaxf's: a NaN is skipped wherever a number meets it. any is true if any thread
//   passed true.
// - N: the values per thread of one call (one per query head in a kernel serving several,
//   MAX_N at most); element j of the result reduces element j of every thread's input,
//   each exactly as a call with N = 1 would.
#pragma once
#include "pagedattn/resources.h"
#include "platform.cuh"
#include "warp_reduce.cuh"

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

template <int WARP, int MAX_N = 1>
class BlockCollective {
 public:
  static constexpr int kWarps = kThreadsPerBlock / WARP;
  static_assert(kWarps * WARP == kThreadsPerBlock, "whole warps");
  static_assert(block_collective_floats(WARP, MAX_N) >= 2 * MAX_N * kWarps, "scratch layout");

  // `scratch`: block_collective_floats(WARP, MAX_N) floats of shared memory.
  __device__ explicit BlockCollective(float* scratch) : scratch_(scratch) {}

  template <int N>
  __device__ void max(float (&v)[N]) {
    all_reduce<Max>(v);
  }
  template <int N>
  __device__ void sum(float (&v)[N]) {
    all_reduce<Sum>(v);
  }

  template <int N>
  __device__ void any(bool (&b)[N]) {
    float v[N];
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = b[j] ? 1.f : 0.f;
    max(v);
#pragma unroll
    for (int j = 0; j < N; ++j) b[j] = v[j] != 0.f;
  }

  // N = 1.
  __device__ float max(float v) {
    float a[1] = {v};
    max(a);
    return a[0];
  }
  __device__ float sum(float v) {
    float a[1] = {v};
    sum(a);
    return a[0];
  }
  __device__ bool any(bool b) {
    bool a[1] = {b};
    any(a);
    return a[0];
  }

 private:
  struct Max {
    __device__ static float warp(float v) { return group_max<WARP>(v); }
    __device__ static float op(float a, float b) { return fmaxf(a, b); }
  };
  struct Sum {
    __device__ static float warp(float v) { return group_sum<WARP>(v); }
    __device__ static float op(float a, float b) { return a + b; }
  };

  // The butterfly in each warp, the exchange, then the warps in ascending order.
  template <class Op, int N>
  __device__ void all_reduce(float (&v)[N]) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = Op::warp(v[j]);
    const float* s = exchange(v);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      float r = s[j * kWarps];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) r = Op::op(r, s[j * kWarps + w]);
      v[j] = r;
    }
  }

  // Lane 0 of each warp publishes its warp's values into the current half; after the one
  // barrier every thread may read the half, which the call after next overwrites.
  template <int N>
  __device__ float* exchange(const float (&v)[N]) {
    static_assert(N >= 1 && N <= MAX_N, "N values per call, at most MAX_N");
    float* s = scratch_ + half_ * (MAX_N * kWarps);
    half_ ^= 1;
    const int warp = threadIdx.x / WARP;
    if (threadIdx.x % WARP == 0) {
#pragma unroll
      for (int j = 0; j < N; ++j) s[j * kWarps + warp] = v[j];
    }
    __syncthreads();
    return s;
  }

  float* scratch_;
  int half_ = 0;  // block-uniform: every thread makes the same calls
};

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
