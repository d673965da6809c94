// Dynamic shared memory. CUDA names it with `extern __shared__ T name[];`, which in
// C++ is a reference to a variable defined elsewhere. The emulator defines such
// variables (one host-thread-local pool each, EMU_DYNAMIC_SMEM_CAPACITY bytes) for the
// common names in the global namespace (smem, shared_mem, sdata, ... see
// emulator/README.md). A kernel inside a namespace, or one that wants exact bounds
// checks, writes EMU_DYNAMIC_SHARED(T, name) instead, which compiles to the
// `extern __shared__` form under nvcc and to a pointer into a guarded pool here.
#pragma once
#include <cstddef>

#ifndef EMU_DYNAMIC_SMEM_CAPACITY
#define EMU_DYNAMIC_SMEM_CAPACITY (256 * 1024)
#endif

namespace emu::detail {
// The running block's dynamic shared memory: exactly the launch's size, followed by a
// guard page, so under memcheck an access past the end is caught and named.
unsigned char* dynamic_shared_base();
}  // namespace emu::detail

#define EMU_DYNAMIC_SHARED(T, name) \
  T* name = reinterpret_cast<T*>(::emu::detail::dynamic_shared_base())
