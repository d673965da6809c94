// The entry points g++ -fsanitize=thread calls from instrumented code, implemented by the
// emulator (compile kernels with it and link without -fsanitize=thread: see
// pagedattn_emulator_race_instrumentation in emulator/CMakeLists.txt). Plain loads and
// stores go to the traffic counts (traffic.cpp), memcheck's shared-memory bounds and
// racecheck's shadow memory; atomics are performed (sequentially consistent) and checked
// against memcheck's bounds only, neither counted nor recorded for racecheck. Not for
// programs linked with ThreadSanitizer.
#include <cstddef>
#include <cstdint>

#include "emu/thread_context.h"
#include "hazard.h"
#include "internal.h"
#include "traffic.h"

using emu::detail::tls_thread;

#define EMU_PC __builtin_return_address(0)

namespace {
// The traffic counts, memcheck's exact shared-memory bounds, then racecheck's shadow
// memory; each returns at once when its launch state is off.
inline void on_access(void* a, std::size_t n, bool write, const void* pc) {
  emu::detail::traffic_access(a, n, write);
  emu::detail::shared_bounds_access(a, n, write);
  emu::detail::hazard_access(a, n, write, pc);
}
}  // namespace

extern "C" {
void __tsan_init() {
  emu::detail::g_hazard_instrumented = true;
}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_ignore_thread_begin() {}
void __tsan_ignore_thread_end() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define EMU_TSAN_ACCESS(N)                          \
  void __tsan_read##N(void* a) {                    \
    if (tls_thread) on_access(a, N, false, EMU_PC); \
  }                                                 \
  void __tsan_write##N(void* a) {                   \
    if (tls_thread) on_access(a, N, true, EMU_PC);  \
  }                                                 \
  void __tsan_unaligned_read##N(void* a) {          \
    if (tls_thread) on_access(a, N, false, EMU_PC); \
  }                                                 \
  void __tsan_unaligned_write##N(void* a) {         \
    if (tls_thread) on_access(a, N, true, EMU_PC);  \
  }                                                 \
  void __tsan_volatile_read##N(void* a) {           \
    if (tls_thread) on_access(a, N, false, EMU_PC); \
  }                                                 \
  void __tsan_volatile_write##N(void* a) {          \
    if (tls_thread) on_access(a, N, true, EMU_PC);  \
  }                                                 \
  void __tsan_read##N##_pc(void* a, void* pc) {     \
    if (tls_thread) on_access(a, N, false, pc);     \
  }                                                 \
  void __tsan_write##N##_pc(void* a, void* pc) {    \
    if (tls_thread) on_access(a, N, true, pc);      \
  }
EMU_TSAN_ACCESS(1)
EMU_TSAN_ACCESS(2)
EMU_TSAN_ACCESS(4)
EMU_TSAN_ACCESS(8)
EMU_TSAN_ACCESS(16)
#undef EMU_TSAN_ACCESS

void __tsan_read_range(void* a, unsigned long n) {
  if (tls_thread) on_access(a, n, false, EMU_PC);
}
void __tsan_write_range(void* a, unsigned long n) {
  if (tls_thread) on_access(a, n, true, EMU_PC);
}

// Atomics: memory orders are ints as the compiler passes them (__ATOMIC_*). EMU_ATOMIC_AT
// checks the address against memcheck's shared-memory bounds first.
#define EMU_ATOMIC_AT(a, write)                                                                    \
  if (tls_thread)                                                                                  \
  emu::detail::shared_bounds_access(const_cast<const void*>(static_cast<const volatile void*>(a)), \
                                    sizeof(*(a)), write)
#define EMU_TSAN_ATOMIC(N, T)                                                               \
  T __tsan_atomic##N##_load(const volatile T* a, int) {                                     \
    EMU_ATOMIC_AT(a, false);                                                                \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                            \
  }                                                                                         \
  void __tsan_atomic##N##_store(volatile T* a, T v, int) {                                  \
    EMU_ATOMIC_AT(a, true);                                                                 \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                               \
  }                                                                                         \
  T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                                  \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                                 \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                                 \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                                 \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                                  \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                       \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                                 \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                                \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {      \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                         \
  int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {        \
    EMU_ATOMIC_AT(a, true);                                                                 \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                         \
  T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {            \
    EMU_ATOMIC_AT(a, true);                                                                 \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
    return c;                                                                               \
  }
EMU_TSAN_ATOMIC(8, unsigned char)
EMU_TSAN_ATOMIC(16, unsigned short)
EMU_TSAN_ATOMIC(32, unsigned int)
EMU_TSAN_ATOMIC(64, unsigned long long)
#undef EMU_TSAN_ATOMIC
#undef EMU_ATOMIC_AT

void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int) {}
}  // extern "C"
