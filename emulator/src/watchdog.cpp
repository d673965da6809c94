#include "watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "tls.h"

namespace emu::detail {

namespace {
std::atomic<HostProgress*> g_registry{nullptr};
std::atomic<int> g_in_flight{0};
std::atomic<std::uint64_t> g_launches{0};  // bumped per launch start/end: progress too
std::atomic<const char*> g_kernel{""};

double timeout_seconds() {
  static const double t = [] {
    const char* e = std::getenv("EMU_WATCHDOG_SECONDS");
    return e ? std::strtod(e, nullptr) : 300.0;
  }();
  return t;
}

std::uint64_t total_progress() {
  std::uint64_t sum = g_launches.load();
  for (HostProgress* p = g_registry.load(); p; p = p->next)
    sum += p->steps.load(std::memory_order_relaxed);
  return sum;
}

void watch() {
  using clock = std::chrono::steady_clock;
  std::uint64_t last = total_progress();
  auto since = clock::now();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::uint64_t now = total_progress();
    if (now != last || g_in_flight.load() == 0) {
      last = now;
      since = clock::now();
      continue;
    }
    const double idle = std::chrono::duration<double>(clock::now() - since).count();
    if (idle >= timeout_seconds()) {
      std::fflush(stdout);
      std::fprintf(stderr,
                   "synccheck: watchdog: kernel %s made no progress for %.0f s: a GPU thread "
                   "runs without reaching a barrier or warp collective (a spin-wait on another "
                   "thread? the emulator switches threads only there). Ending the process "
                   "(EMU_WATCHDOG_SECONDS sets the limit, 0 disables).\n",
                   g_kernel.load(), idle);
      for (HostProgress* p = g_registry.load(); p; p = p->next)
        if (const BlockRun* b = p->block.load()) describe_stuck_block(*b, p->fiber.load(), idle);
      std::fflush(stderr);
      std::_Exit(124);
    }
  }
}
}  // namespace

HostProgress& host_progress() {
  // The pointer lives in ColdTls, which initcheck's poisoning of thread-local storage
  // spares. The record is leaked on purpose: the watchdog may read it after the thread
  // ends (64 bytes a host thread).
  ColdTls& c = cold_tls();
  if (!c.progress) {
    auto* p = new HostProgress();
    HostProgress* head = g_registry.load();
    do p->next = head;
    while (!g_registry.compare_exchange_weak(head, p));
    c.progress = p;
  }
  return *c.progress;
}

WatchdogScope::WatchdogScope(const char* kernel) {
  if (timeout_seconds() <= 0) return;
  static std::once_flag once;
  std::call_once(once, [] { std::thread(watch).detach(); });
  g_kernel.store(kernel);
  g_in_flight.fetch_add(1);
  g_launches.fetch_add(1);
}

WatchdogScope::~WatchdogScope() {
  if (timeout_seconds() <= 0) return;
  g_in_flight.fetch_sub(1);
  g_launches.fetch_add(1);
}

}  // namespace emu::detail
