// What the memcheck_shared_kernels.inc kernels touch, and their two builds: `exact`
// (compiled with the race instrumentation) and `plain` (without).
#pragma once

// One access by one GPU thread: `width` (1 or 4) bytes at `offset` from the first byte of
// the kernel's shared memory; `atomic`: an atomicAdd of an int there.
struct Access {
  long long offset = 0;
  int width = 1;
  bool write = false;
  bool atomic = false;
  unsigned thread = 0, block = 0;  // block kEveryBlock: that thread of every block
};

constexpr unsigned kEveryBlock = ~0u;

constexpr int kStaticBytes = 4100;      // static_touch's array: not a multiple of 16
constexpr int kPadBytes = 8192;         // the arrays around it, past any overrun tested
constexpr unsigned kAddressOnly = ~0u;  // static_touch only writes its array's address

#define MEMCHECK_KERNELS_DECLARE(NS)       \
  namespace NS {                           \
  void extern_touch(Access a, int* out);   \
  void portable_touch(Access a, int* out); \
  void pad_above(Access a, int* out);      \
  void static_touch(Access a, int* out);   \
  void pad_below(Access a, int* out);      \
  }
MEMCHECK_KERNELS_DECLARE(exact)
MEMCHECK_KERNELS_DECLARE(plain)
#undef MEMCHECK_KERNELS_DECLARE
