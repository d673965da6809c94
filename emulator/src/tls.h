// All of the emulator's host-thread-local state but the two hot pointers in
// thread_context.h, kept in one struct so initcheck can poison the kernel module's
// thread-local storage (static __shared__ arrays) without touching the emulator's own.
#pragma once
#include <cstddef>
#include <string>
#include <vector>
#include "emu/checks.h"
#include "emu/runtime_api.h"

namespace emu::detail {

// Trivially destructible on purpose: a C++ destructor would add a thread-local guard
// variable that initcheck's poisoning would clobber. Resources are returned at thread
// exit through a pthread key instead (release_thread_resources_at_exit).
// A shared-memory region memcheck guards on this host thread: [base, base + size) is the
// block's, [prot, prot + prot_len) is PROT_NONE until a fault opens it.
struct SharedGuard {
  const char* name;
  unsigned char* base;
  std::size_t size;
  unsigned char* prot;
  std::size_t prot_len;
};
// A fault in a guarded shared region, recorded by the signal handler.
struct SharedFault {
  const char* name;
  long long offset;
  std::size_t size;
  bool write;
  uint3 thread, block;
};

struct HostProgress;

struct ColdTls {
  static constexpr int kMaxGuards = 40, kMaxFaults = 16;
  SharedGuard guards[kMaxGuards] = {};
  int num_guards = 0;
  SharedFault faults[kMaxFaults] = {};
  int num_faults = 0;
  void* stacks = nullptr;  // StackPool*, owned for the thread's life
  void (*free_stacks)(void*) = nullptr;
  unsigned char* dyn_base = nullptr;    // this block's dynamic shared memory
  unsigned char* dyn_region = nullptr;  // the mmap'd pool behind it
  std::size_t dyn_region_len = 0;
  std::size_t dyn_bytes = 0;
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
