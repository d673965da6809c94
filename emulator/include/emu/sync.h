// Barriers and warp collectives. Each one suspends the calling fiber; the scheduler
// completes it once every thread it names has arrived (or reports why it never can).
// Lane masks are 64-bit: a warp has 64 lanes on BI-V100. A 32-bit full mask
// (0xffffffff) names the whole warp there, as measured on that card (docs/BI-V100.md).
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include "emu/thread_context.h"

namespace emu::detail {

void barrier_arrive(Site site);

template <class T>
inline T warp_exchange(WarpOp op, std::uint64_t mask, T value, int arg, int width, Site site) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16,
                "warp shuffles move trivially copyable values of at most 16 bytes");
  ThreadCtx& t = this_thread();
  t.op = op;
  t.mask = mask;
  t.arg = arg;
  t.width = width;
  t.site = site;
  std::memcpy(t.in, &value, sizeof(T));
  t.wait = Wait::warp_op;
  yield_to_scheduler();
  T result;
  std::memcpy(&result, t.out, sizeof(T));
  return result;
}

inline std::uint64_t warp_vote(WarpOp op, std::uint64_t mask, int predicate, Site site) {
  ThreadCtx& t = this_thread();
  t.op = op;
  t.mask = mask;
  t.arg = predicate != 0;
  t.width = 0;
  t.site = site;
  t.wait = Wait::warp_op;
  yield_to_scheduler();
  return t.result;
}

}  // namespace emu::detail

#define EMU_SITE_PARAMS const char *emu_file = __builtin_FILE(), int emu_line = __builtin_LINE()
#define EMU_SITE        \
  ::emu::detail::Site { \
    emu_file, emu_line  \
  }

inline void __syncthreads(EMU_SITE_PARAMS) {
  ::emu::detail::barrier_arrive(EMU_SITE);
}

inline void __syncwarp(unsigned long long mask = 0xffffffffull, EMU_SITE_PARAMS) {
  ::emu::detail::warp_vote(::emu::detail::WarpOp::syncwarp, mask, 0, EMU_SITE);
}

template <class T>
inline T __shfl_sync(unsigned long long mask, T var, int src_lane, int width = -1,
                     EMU_SITE_PARAMS) {
  return ::emu::detail::warp_exchange(::emu::detail::WarpOp::shfl_idx, mask, var, src_lane, width,
                                      EMU_SITE);
}
template <class T>
inline T __shfl_up_sync(unsigned long long mask, T var, unsigned delta, int width = -1,
                        EMU_SITE_PARAMS) {
  return ::emu::detail::warp_exchange(::emu::detail::WarpOp::shfl_up, mask, var,
                                      static_cast<int>(delta), width, EMU_SITE);
}
template <class T>
inline T __shfl_down_sync(unsigned long long mask, T var, unsigned delta, int width = -1,
                          EMU_SITE_PARAMS) {
  return ::emu::detail::warp_exchange(::emu::detail::WarpOp::shfl_down, mask, var,
                                      static_cast<int>(delta), width, EMU_SITE);
}
template <class T>
inline T __shfl_xor_sync(unsigned long long mask, T var, int lane_mask, int width = -1,
                         EMU_SITE_PARAMS) {
  return ::emu::detail::warp_exchange(::emu::detail::WarpOp::shfl_xor, mask, var, lane_mask, width,
                                      EMU_SITE);
}
// Ballots return 64 bits: on a 64-lane warp the upper half is real.
inline unsigned long long __ballot_sync(unsigned long long mask, int predicate, EMU_SITE_PARAMS) {
  return ::emu::detail::warp_vote(::emu::detail::WarpOp::ballot, mask, predicate, EMU_SITE);
}
inline int __any_sync(unsigned long long mask, int predicate, EMU_SITE_PARAMS) {
  return static_cast<int>(
      ::emu::detail::warp_vote(::emu::detail::WarpOp::any, mask, predicate, EMU_SITE));
}
inline int __all_sync(unsigned long long mask, int predicate, EMU_SITE_PARAMS) {
  return static_cast<int>(
      ::emu::detail::warp_vote(::emu::detail::WarpOp::all, mask, predicate, EMU_SITE));
}
// The lanes that reach this call together: resolved when the warp can make no other
// progress, so lanes blocked elsewhere or exited are not in it.
inline unsigned long long __activemask(EMU_SITE_PARAMS) {
  return ::emu::detail::warp_vote(::emu::detail::WarpOp::activemask, 0, 0, EMU_SITE);
}

inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
