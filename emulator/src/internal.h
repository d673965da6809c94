// Emulator internals shared by the runtime's translation units.
#pragma once
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>
#include "emu/checks.h"
#include "emu/runtime_api.h"
#include "emu/thread_context.h"

namespace emu::detail {

// ---- errors -------------------------------------------------------------------------
// Records `code` with its detailed message as this host thread's last error.
cudaError_t set_error(cudaError_t code, std::string message);
// The sticky launch error the next cudaDeviceSynchronize reports (then clears).
void set_pending_sync_error(cudaError_t code);

// ---- device memory ------------------------------------------------------------------
struct AllocationInfo {
  std::uintptr_t data;
  std::size_t size;
  std::uint64_t id;
};
// Guarded allocations (guard pages on both sides; see memory.cpp).
void* guarded_alloc(std::size_t bytes);
bool guarded_free(void* p);
std::vector<AllocationInfo> allocations();
bool is_device_range(const void* p, std::size_t bytes);
// Re-arms every guard page an out-of-bounds access opened during a launch.
void rearm_guards();
// Guard-page faults caught since the last call, as memcheck lines.
std::vector<std::string> take_fault_reports();
// Installs the SIGSEGV handler that turns guard-page faults into findings.
void install_fault_handler();
// Gives the calling host thread an alternate signal stack (once).
void ensure_signal_stack();

// ---- the running launch -------------------------------------------------------------
struct LaunchRun {
  const char* kernel = "";
  const void* kernel_address = nullptr;
  unsigned checks = 0;
  std::mutex mutex;
  std::vector<Finding> findings;
  bool aborted = false;  // a block deadlocked or faulted: stop the grid
  std::atomic<std::uint64_t> instrumented_accesses{0};  // seen by memcheck, all blocks
  void report(const char* check, const std::string& line);
};
extern LaunchRun* current_launch;

enum class Order { in_order, reversed, random };

// Dynamic shared memory of the block about to run on this host thread.
void prepare_dynamic_shared(std::size_t bytes, unsigned char poison);

// Runs one block to completion on the calling host thread. Returns false if the block
// had to be abandoned (deadlock); findings go to `launch`.
bool run_block(const BlockCtx& ctx, const std::function<void()>& body, Order order,
               std::uint64_t seed, LaunchRun& launch);

// Poisons the static thread-local storage (static __shared__ arrays) of the module that
// holds `kernel` with `byte`, keeping the emulator's own state; restore_module_tls undoes it.
struct TlsSnapshot {
  unsigned char* base = nullptr;
  std::vector<unsigned char> saved;
};
TlsSnapshot poison_module_tls(const void* kernel, unsigned char byte);
// This host thread's copy of the thread-local storage of the module holding `kernel`
// (static __shared__ arrays and the extern __shared__ pool live there).
struct ModuleTlsBlock {
  unsigned char* data = nullptr;
  std::size_t size = 0;
};
ModuleTlsBlock module_tls(const void* kernel);
void restore_module_tls(TlsSnapshot& snapshot);
// The `extern __shared__` pool (every such array of the program is an alias of it: see
// emulator/link/ld) and its names, demangled and comma-separated.
unsigned char* extern_shared_pool();
const char* extern_shared_names();
// Fills the pool's first `bytes` (at most its capacity) with `byte`.
void poison_named_dynamic_shared(std::size_t bytes, unsigned char byte);
// memcheck (shared_memcheck.cpp): guards both dynamic pools past `bytes` for the next block
// and arms the exact check of instrumented accesses; disarm undoes it and turns what was
// found in `block` into findings of `run`. With keep_pool_guards the extern pool's guard
// pages stay (the next block of the same launch on this host thread re-arms nothing), and
// open_shared_guards must run before anything else touches the pool's pages: the end of
// the launch on this thread, or the module TLS poisoning of a serial pass.
void arm_shared_guards(std::size_t bytes, LaunchRun& run);
void disarm_shared_guards(LaunchRun& run, uint3 block, bool keep_pool_guards);
void open_shared_guards();
// Called by the SIGSEGV handler: true if `addr` lies in a guarded shared region of this
// host thread (the fault is then recorded and the page opened).
bool shared_guard_fault(std::uintptr_t addr, bool write);
// Called by the instrumentation for every load and store (hazard_hooks.cpp).
void shared_bounds_access(const void* address, std::size_t bytes, bool write);
// The dynamic shared-memory pool of this host thread whose window (guards included) holds
// `addr`, or the nearest one, for the line of an access outside every allocation.
struct SharedPlace {
  const char* name;
  std::uintptr_t base;
  long long offset;  // from base
  std::size_t size;  // the launch's dynamic size
  bool inside;
  long long distance;  // 0 when inside
};
bool shared_pool_near(std::uintptr_t addr, SharedPlace* out);
// After a launch: counts it for memcheck_coverage and, if memcheck saw no instrumented
// access, prints (once per process) what its shared memory check could not see.
void memcheck_launch_end(LaunchRun& run);

std::string kernel_name(const void* address);
std::string fmt_dim(uint3 v);

}  // namespace emu::detail
