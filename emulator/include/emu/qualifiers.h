// CUDA's declaration qualifiers, as g++ sees them under the emulator.
#pragma once

#define __global__
#define __device__
#define __host__
// __noinline__ is left undefined: libstdc++ spells __attribute__((__noinline__)) itself.
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__ const
// Block-shared storage is per host thread: a block runs all its fibers on one host
// thread, and a host thread runs one block at a time, so a block-scope thread_local
// (implicitly static) is exactly one copy per running block. `extern __shared__`
// names resolve to the dynamic shared memory pool (see emu/dynamic_shared.h).
#define __shared__ thread_local
