// Device atomics on global and shared memory. Blocks run on several host threads, so
// these are real host atomics (GCC builtins on plain memory, as CUDA's are on plain
// memory); within a block fibers never preempt each other.
#pragma once
#include <cstring>

namespace emu::detail {
template <class T, class F>
inline T atomic_update(T* address, F f) {
  // Compare-and-swap on the bit pattern: works for float, whose builtin add is missing.
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte atomics");
  using Bits = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;
  Bits* raw = reinterpret_cast<Bits*>(address);
  Bits expected = __atomic_load_n(raw, __ATOMIC_RELAXED);
  for (;;) {
    T old;
    std::memcpy(&old, &expected, sizeof(T));
    T next = f(old);
    Bits desired;
    std::memcpy(&desired, &next, sizeof(T));
    if (__atomic_compare_exchange_n(raw, &expected, desired, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      return old;
  }
}
}  // namespace emu::detail

#define EMU_ATOMIC_INT(T)                                                                   \
  inline T atomicAdd(T* a, T v) {                                                           \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  inline T atomicSub(T* a, T v) {                                                           \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  inline T atomicExch(T* a, T v) {                                                          \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  inline T atomicAnd(T* a, T v) {                                                           \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  inline T atomicOr(T* a, T v) {                                                            \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                       \
  }                                                                                         \
  inline T atomicXor(T* a, T v) {                                                           \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  inline T atomicMax(T* a, T v) {                                                           \
    return ::emu::detail::atomic_update(a, [v](T o) { return o > v ? o : v; });             \
  }                                                                                         \
  inline T atomicMin(T* a, T v) {                                                           \
    return ::emu::detail::atomic_update(a, [v](T o) { return o < v ? o : v; });             \
  }                                                                                         \
  inline T atomicCAS(T* a, T compare, T v) {                                                \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return compare;                                                                         \
  }

EMU_ATOMIC_INT(int)
EMU_ATOMIC_INT(unsigned int)
EMU_ATOMIC_INT(unsigned long long)
#undef EMU_ATOMIC_INT

inline float atomicAdd(float* a, float v) {
  return ::emu::detail::atomic_update(a, [v](float o) { return o + v; });
}
inline double atomicAdd(double* a, double v) {
  return ::emu::detail::atomic_update(a, [v](double o) { return o + v; });
}
inline float atomicExch(float* a, float v) {
  return ::emu::detail::atomic_update(a, [v](float) { return v; });
}
// CUDA has no float atomicMax; provided because attention code often wants one.
// NaN handling follows fmaxf: a NaN operand loses.
inline float atomicMax(float* a, float v) {
  return ::emu::detail::atomic_update(a, [v](float o) { return o != o ? v : (v > o ? v : o); });
}
