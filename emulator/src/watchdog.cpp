#include "watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace emu::detail {

std::atomic<std::uint64_t> g_progress{0};

namespace {
std::atomic<int> g_in_flight{0};
std::atomic<const char*> g_kernel{""};

double timeout_seconds() {
  static const double t = [] {
    const char* e = std::getenv("EMU_WATCHDOG_SECONDS");
    return e ? std::strtod(e, nullptr) : 300.0;
  }();
  return t;
}

void watch() {
  using clock = std::chrono::steady_clock;
  std::uint64_t last = g_progress.load();
  auto since = clock::now();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::uint64_t now = g_progress.load();
    if (now != last || g_in_flight.load() == 0) {
      last = now;
      since = clock::now();
      continue;
    }
    const double idle = std::chrono::duration<double>(clock::now() - since).count();
    if (idle >= timeout_seconds()) {
      std::fprintf(stderr,
                   "synccheck: watchdog: kernel %s made no progress for %.0f s: a GPU thread "
                   "runs without reaching a barrier or warp collective (a spin-wait on another "
                   "thread? the emulator switches threads only there). Ending the process "
                   "(EMU_WATCHDOG_SECONDS sets the limit, 0 disables).\n",
                   g_kernel.load(), idle);
      std::fflush(stderr);
      std::_Exit(124);
    }
  }
}
}  // namespace

WatchdogScope::WatchdogScope(const char* kernel) {
  if (timeout_seconds() <= 0) return;
  static std::once_flag once;
  std::call_once(once, [] { std::thread(watch).detach(); });
  g_kernel.store(kernel);
  g_in_flight.fetch_add(1);
  g_progress.fetch_add(1);
}

WatchdogScope::~WatchdogScope() {
  if (timeout_seconds() <= 0) return;
  g_in_flight.fetch_sub(1);
  g_progress.fetch_add(1);
}

}  // namespace emu::detail
