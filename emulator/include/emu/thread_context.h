// The per-GPU-thread state a fiber carries, and the host-thread-local pointer to the
// fiber running now. Built-ins (threadIdx, warpSize ...) read through it.
#pragma once
#include <cstdint>
#include "emu/vector_types.h"

namespace emu::detail {

struct BlockRun;

// Where a thread is blocked; the scheduler resolves barriers and collectives.
enum class Wait : std::uint8_t { running, barrier, warp_op, done };

enum class WarpOp : std::uint8_t {
  shfl_idx,
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,
  any,
  all,
  syncwarp,
  activemask
};

struct Site {
  const char* file = "";
  int line = 0;
};

struct ThreadCtx {
  uint3 thread_idx{};
  unsigned linear = 0;  // x + y*bx + z*bx*by, CUDA's linearization for warps
  unsigned lane = 0;
  unsigned warp = 0;
  BlockRun* block = nullptr;
  Wait wait = Wait::running;
  Site site;
  // The pending warp collective (valid while wait == warp_op).
  WarpOp op = WarpOp::syncwarp;
  std::uint64_t mask = 0;
  int arg = 0;    // source lane, delta or xor mask
  int width = 0;  // shuffle segment width
  alignas(16) unsigned char in[16] = {};
  alignas(16) unsigned char out[16] = {};
  std::uint64_t result = 0;  // ballot / activemask / any / all
  // For racecheck's hazard mode: barriers this thread has passed, and the sequence number
  // (per warp) of the last warp collective it completed.
  std::uint32_t epoch = 0;
  std::uint32_t warp_sync = 0;
};

struct BlockCtx {
  uint3 block_idx{};
  dim3 block_dim;
  dim3 grid_dim;
  int warp_size = 32;
  bool partial_syncwarp = true;  // the profile's: BI-V100 has no partial-mask __syncwarp
  const char* kernel = "";
};

// The fiber running on this host thread; set by the scheduler before each resume.
// __thread, not thread_local: constant-initialized, so no access from another translation
// unit goes through a TLS wrapper call and its check for a dynamic initializer (every
// threadIdx in a kernel's inner loop and every instrumented load and store reads these).
extern __thread ThreadCtx* tls_thread;
extern __thread const BlockCtx* tls_block;

// Suspends the calling fiber until the scheduler resolves its wait.
void yield_to_scheduler();
[[noreturn]] void outside_kernel(const char* what);

inline ThreadCtx& this_thread() {
  if (!tls_thread) outside_kernel("a device built-in");
  return *tls_thread;
}
inline const BlockCtx& this_block() {
  if (!tls_block) outside_kernel("a device built-in");
  return *tls_block;
}

}  // namespace emu::detail
