// static_for<N>(f): calls f(std::integral_constant<int, 0>{}), ..., f(...<N - 1>{}) in order,
// so every index is a compile-time constant. `#pragma unroll` is only a request: a compiler
// may decline it past its size threshold, and a loop left rolled indexes a per-head array
// (acc[g][r], sm[g]) at run time, which puts the array in memory. hipcc did so for the
// grouped kernel's store loop at wave 32 and block size 32 (up to 624 bytes of scratch per
// lane; kernels/README.md "Registers"). Use it for loops over a per-thread array whose
// bodies are large; small loops keep the pragma.
#pragma once
#include <type_traits>
#include <utility>
#include "platform.cuh"

// The lambda handed to static_for must be inlined as well: left out of line, it takes the
// per-thread arrays it captures by reference to the stack (clang, sm_80, f16 and bf16 at
// head size 256: 584-byte frames, caught by the targets stage). Write
// `static_for<N>([&](auto i) PAGEDATTN_INLINE_LAMBDA { ... })`.
#define PAGEDATTN_INLINE_LAMBDA __attribute__((always_inline))

namespace pagedattn::detail::PAGEDATTN_EXEC_NS {

template <class F, int... I>
__device__ __forceinline__ void static_for_each(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}

template <int N, class F>
__device__ __forceinline__ void static_for(F&& f) {
  static_for_each(f, std::make_integer_sequence<int, N>{});
}

}  // namespace pagedattn::detail::PAGEDATTN_EXEC_NS
