// All of the emulator's host-thread-local state but the two hot pointers in
// thread_context.h, kept in one struct so initcheck can poison the kernel module's
// thread-local storage (static __shared__ arrays) without touching the emulator's own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "emu/checks.h"
#include "emu/runtime_api.h"

namespace emu::detail {

// Trivially destructible on purpose: a C++ destructor would add a thread-local guard
// variable that initcheck's poisoning would clobber. Resources are returned at thread
// exit through a pthread key instead (release_thread_resources_at_exit).
// A shared-memory region memcheck guards on this host thread: [base, base + size) is the
// block's, [prot, prot + prot_len) is PROT_NONE until a fault opens it (the extern
// __shared__ pool's window also holds the open pages [base, base + open_len)).
struct SharedGuard {
  const char* name;
  unsigned char* base;
  std::size_t size;
  unsigned char* prot;
  std::size_t prot_len;
};
// An invalid shared-memory access of the running block, recorded by the SIGSEGV handler,
// by the instrumented-access check or by the canary after the block; later ones of the
// same region and direction only count (`more`).
struct SharedFault {
  const char* name;   // the pool's names, or the static array's (demangled)
  const char* what;   // "dynamic shared memory", "static __shared__ array", ...
  long long offset;   // of the access from the region's first byte
  std::size_t size;   // the launch's dynamic size, or the array's
  std::size_t bytes;  // the access's width; 0: not known (a fault)
  unsigned long long more;
  bool write;
  bool by_canary;  // found after the block: no thread
  uint3 thread, block;
};
struct KernelArrays;
// memcheck's byte-exact check of instrumented accesses while a block runs
// (src/shared_memcheck.cpp): the windows it watches and what is valid in them.
struct SharedBounds {
  bool armed = false;
  std::uintptr_t ext_base = 0, ext_lo = 0, ext_hi = 0;  // extern pool; window with guards
  std::uintptr_t dyn_base = 0, dyn_lo = 0, dyn_hi = 0;  // EMU_DYNAMIC_SHARED's
  std::size_t bytes = 0;                                // the launch's dynamic size
  std::uintptr_t tls_lo = 0, tls_hi = 0;  // the kernel module's TLS block (0: not checked)
  const KernelArrays* arrays = nullptr;   // the kernel's static __shared__ arrays
  const void* kernel = nullptr;           // whose module block and arrays these are
  std::uint64_t accesses = 0;             // instrumented accesses in this block
  std::uintptr_t reported_lo = 0, reported_hi = 0;  // the access just reported: its fault
                                                    // is the same finding
};

struct HostProgress;

struct ColdTls {
  static constexpr int kMaxGuards = 40, kMaxFaults = 16;
  SharedGuard guards[kMaxGuards] = {};
  int num_guards = 0;
  SharedFault faults[kMaxFaults] = {};
  int num_faults = 0;
  SharedBounds bounds;
  void* stacks = nullptr;  // StackPool*, owned for the thread's life
  void (*free_stacks)(void*) = nullptr;
  unsigned char* dyn_base = nullptr;    // this block's dynamic shared memory
  unsigned char* dyn_region = nullptr;  // the mmap'd pool behind it
  std::size_t dyn_region_len = 0;
  // Where the pool's open pages begin while nothing else has changed its protection since
  // prepare_dynamic_shared opened them (memcheck's fault handler resets it when it opens a
  // guard page), so a block of the same size skips the two mprotect calls; null when unknown.
  unsigned char* dyn_open = nullptr;
  // The extern __shared__ pool's protection as arm_shared_guards left it: the open bytes (a
  // page multiple) while its guards stay armed between the blocks of a launch, kPoolAllOpen
  // when every page is read-write (as the link step leaves it, and every launch ends), or
  // kPoolUnknown once the fault handler opened a guard page. A block of the same launch on
  // the same host thread then arms nothing: the three mprotect calls a block made, two of
  // them TLB shootdowns, were a fifth of a memcheck property's CPU.
  static constexpr std::size_t kPoolAllOpen = ~std::size_t{0}, kPoolUnknown = kPoolAllOpen - 1;
  std::size_t ext_armed_open = kPoolAllOpen;
  std::size_t dyn_bytes = 0;
  // module_tls's last answer on this host thread (a serial pass asks once per block; dladdr
  // and the walk of the loaded modules were 6% of a racecheck-reordered property's CPU).
  // Kept per kernel address as elf_symbols.cpp keeps a kernel's symbols: a module is not
  // unloaded while its kernels launch.
  const void* module_tls_kernel = nullptr;
  unsigned char* module_tls_data = nullptr;
  std::size_t module_tls_size = 0;
  cudaError_t last_error = cudaSuccess;
  std::string* last_message = nullptr;  // heap-owned: a string's bytes must not live in TLS
  std::vector<Finding>* last_findings = nullptr;
  HostProgress* progress = nullptr;  // the watchdog's view of this host thread
  void* signal_stack = nullptr;      // sigaltstack for faults on a fiber's stack
  void* hazard = nullptr;            // racecheck's shadow memory while a launch runs
  void* traffic = nullptr;           // traffic counts of the blocks this thread runs (traffic.cpp)
  void* traffic_log = nullptr;       // std::vector<LaunchTraffic>*: this thread's launches
};

// Constant initialization matters as much as trivial destruction: a dynamically
// initialized thread-local gets a guard byte that initcheck's poisoning would reset,
// re-running the initializer mid-launch. This fails to compile if that ever changes.
inline constexpr ColdTls kColdTlsInit{};

ColdTls& cold_tls();
// Arranges for this host thread's stacks and shared-memory pool to be freed when it ends.
void release_thread_resources_at_exit();

// Address ranges of the emulator's own thread-local state on this host thread.
struct TlsRange {
  const unsigned char* begin;
  std::size_t size;
};
std::vector<TlsRange> emulator_tls_ranges();

}  // namespace emu::detail
