// Fibers switch only at barriers and collectives, so a GPU thread that spins waiting for
// another thread of its block (legal on sm_70+ hardware) would never give the other a
// turn. The watchdog turns that hang into a report: if a launch makes no progress (no
// fiber reaches a barrier, a collective or its end) for $EMU_WATCHDOG_SECONDS (default
// 300; 0 disables), it prints a line naming the kernel and ends the process with 124.
#pragma once
#include <atomic>
#include <cstdint>

namespace emu::detail {

extern std::atomic<std::uint64_t> g_progress;  // bumped at every fiber switch

class WatchdogScope {
 public:
  explicit WatchdogScope(const char* kernel);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;
};

}  // namespace emu::detail
