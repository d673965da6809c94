// Fibers switch only at barriers and collectives, so a GPU thread that spins waiting for
// another thread of its block (legal on sm_70+ hardware) would never give the other a
// turn. The watchdog turns that hang into a report: if a launch makes no progress (no
// fiber reaches a barrier, a collective or its end) for $EMU_WATCHDOG_SECONDS (default
// 300; 0 disables), it prints where every thread of the stuck blocks is, grouped by site,
// and ends the process with 124.
//
// Progress is counted per host thread (HostProgress, one cache line each, written only
// by its owner with plain relaxed stores): a shared atomic counter bumped at every fiber
// switch made two host threads slower than one (bench/bench_emulator.cpp).
#pragma once
#include <atomic>
#include <cstdint>

namespace emu::detail {

struct BlockRun;
struct ThreadCtx;

struct alignas(64) HostProgress {
  std::atomic<std::uint64_t> steps{0};           // fiber switches on this host thread
  std::atomic<const BlockRun*> block{nullptr};   // the block it runs now, if any
  std::atomic<const ThreadCtx*> fiber{nullptr};  // the GPU thread it runs now, if any
  HostProgress* next = nullptr;                  // registry (never unlinked)
};

// This host thread's record, registered with the watchdog on first use.
HostProgress& host_progress();

inline void count_step(HostProgress& p) {
  // Only the owner writes: load + store, no locked read-modify-write.
  p.steps.store(p.steps.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Called by the watchdog when a launch is stuck: "kernel K block B: ..." lines grouped
// by site for a block, from a racy read of its state (the process ends right after).
void describe_stuck_block(const BlockRun& block, const ThreadCtx* running, double idle_s);

class WatchdogScope {
 public:
  explicit WatchdogScope(const char* kernel);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;
};

}  // namespace emu::detail
