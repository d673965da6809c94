// Dynamic shared memory. CUDA names it with `extern __shared__ T name[];`, which in C++ is
// a reference to a variable defined elsewhere: the emulator's link step (emulator/link/ld)
// defines every such name, in any namespace, as an alias of one host-thread-local pool of
// EMU_DYNAMIC_SMEM_CAPACITY bytes between two guard pages, so that spelling needs nothing
// more. EMU_DYNAMIC_SHARED(T, name) from <emu/portable.h> is still accepted: it compiles to
// the `extern __shared__` form under nvcc and to a pointer into a separate guarded pool here.
// memcheck checks both to the byte in code built with the race instrumentation (see
// emulator/README.md, "Sanitizer-like checks").
#pragma once
#include <cstddef>

#ifndef EMU_DYNAMIC_SMEM_CAPACITY
#define EMU_DYNAMIC_SMEM_CAPACITY (256 * 1024)
#endif

namespace emu::detail {
// EMU_DYNAMIC_SHARED's pool for the running block: the launch's size, its end flush (to 16
// bytes) against a guard page.
unsigned char* dynamic_shared_base();
}  // namespace emu::detail

#define EMU_DYNAMIC_SHARED(T, name) \
  T* name = reinterpret_cast<T*>(::emu::detail::dynamic_shared_base())
