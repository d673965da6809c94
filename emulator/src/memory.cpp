// Device memory with guard pages. Each allocation sits between two PROT_NONE pages, its
// end flush against the upper one, so an access past the end faults at once; the SIGSEGV
// handler names the allocation, offset and GPU thread, opens the page so the access
// completes (as on a GPU, execution goes on) and the launch then reports it. Under
// memcheck (enabled when cudaMalloc runs) the end is flush to the byte, so a 1-byte read
// past the end is caught; the pointer is then aligned to the largest power of two that
// divides the size (16 for any multiple of 16, as vector loads need). Otherwise the end is
// flush to 16 bytes and the slack holds a canary that catches small overflowing writes.
// A fault in a kernel outside every allocation (a wild pointer) is reported with the
// nearest allocation, and the process ends with exit code 139 after flushing its output.
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <mutex>
#include <sstream>

#include "internal.h"
#include "tls.h"

namespace emu::detail {
namespace {

constexpr unsigned char kCanary = 0xA5;
constexpr unsigned char kPoison = 0xFF;  // reads of never-written floats give NaN

struct Block {
  std::uintptr_t map_base;
  std::size_t map_len;
  std::uintptr_t lo_guard, hi_guard;  // page addresses
  std::uintptr_t data;
  std::size_t size;
  std::uint64_t id;
};

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

std::mutex g_mutex;
std::vector<Block> g_blocks;
std::uint64_t g_next_id = 1;
// The fault handler reads an immutable snapshot (replaced, never mutated, under g_mutex).
std::atomic<const std::vector<Block>*> g_snapshot{nullptr};
std::vector<const std::vector<Block>*> g_retired;  // kept alive: a handler may still read one

void publish() {
  auto* snap = new std::vector<Block>(g_blocks);
  const auto* old = g_snapshot.exchange(snap);
  if (old) g_retired.push_back(old);
}

// Fault records written by the signal handler: fixed storage, no allocation.
struct FaultRecord {
  std::uint64_t alloc_id;
  std::size_t alloc_size;
  long long offset;
  bool write;
  uint3 thread, block;
  const char* kernel;
  bool in_kernel;
};
constexpr int kMaxFaults = 64;
FaultRecord g_faults[kMaxFaults];
std::atomic<int> g_fault_count{0};
std::atomic<std::uintptr_t> g_opened[kMaxFaults];
std::atomic<int> g_opened_count{0};

struct sigaction g_previous;

ssize_t write_all(const char* p, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(2, p + done, n - done);
    if (w <= 0) return -1;
    done += static_cast<std::size_t>(w);
  }
  return static_cast<ssize_t>(done);
}

// A kernel touched memory outside every allocation and guard: nothing can open it, so
// the process ends. The line names the address, the nearest allocation and the offset
// from it, the GPU thread, block and kernel; buffered output is flushed first (stdio from
// a signal handler is not async-signal-safe, but the process is about to end anyway).
[[noreturn]] void wild_access(std::uintptr_t addr, bool write, bool no_address,
                              const std::vector<Block>* blocks) {
  const Block* nearest = nullptr;
  long long best = 0;
  if (blocks)
    for (const Block& b : *blocks) {
      const long long off = static_cast<long long>(addr) - static_cast<long long>(b.data);
      const long long dist = off < 0 ? -off : off - static_cast<long long>(b.size) + 1;
      if (!nearest || dist < best) {
        nearest = &b;
        best = dist;
      }
    }
  const bool checking = enabled_checks() & check_memcheck;
  // A dynamic shared-memory pool whose window (guards included) holds the address, or
  // lies within a page of it, is what to name.
  SharedPlace pool{};
  const bool have_pool = !no_address && shared_pool_near(addr, &pool) &&
                         pool.distance <= static_cast<long long>(page_size());
  char line[768];
  int n;
  if (have_pool && pool.inside) {
    n = std::snprintf(line, sizeof line,
                      "%s: invalid %s of dynamic shared memory '%s' at byte offset %lld, %s (the "
                      "launch gave %zu bytes), address 0x%" PRIxPTR,
                      checking ? "memcheck" : "emu", write ? "write" : "read", pool.name,
                      pool.offset, pool.offset < 0 ? "before its start" : "past its end", pool.size,
                      addr);
    if (!checking)
      n += std::snprintf(line + n, sizeof line - n,
                         " (under memcheck it is a finding and the kernel goes on)");
  } else {
    n = std::snprintf(line, sizeof line, "%s: invalid %s at address 0x%" PRIxPTR "%s",
                      checking ? "memcheck" : "emu", write ? "write" : "read", addr,
                      no_address ? " (general-protection fault: the address is not known; a "
                                   "misaligned vector access or a non-canonical pointer)"
                                 : ", outside every device allocation");
    if (have_pool)
      n += std::snprintf(line + n, sizeof line - n,
                         "; nearest: dynamic shared memory '%s' (%zu bytes) at 0x%" PRIxPTR
                         ", offset %lld",
                         pool.name, pool.size, pool.base, pool.offset);
    else if (nearest && !no_address) {
      const long long off = static_cast<long long>(addr) - static_cast<long long>(nearest->data);
      n += std::snprintf(line + n, sizeof line - n,
                         "; nearest: device allocation #%" PRIu64 " (%zu bytes) at 0x%" PRIxPTR
                         ", offset %lld",
                         nearest->id, nearest->size, nearest->data, off);
    }
  }
  const uint3 t = tls_thread->thread_idx, b = tls_block->block_idx;
  n += std::snprintf(line + n, sizeof line - n,
                     " by thread (%u,%u,%u) of block (%u,%u,%u) in kernel %s; ending the process "
                     "(exit code 139)\n",
                     t.x, t.y, t.z, b.x, b.y, b.z, tls_block->kernel);
  std::fflush(nullptr);
  if (n > 0) {
    const ssize_t w =
        write_all(line, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - 1));
    (void)w;
  }
  _exit(139);
}

void on_fault(int sig, siginfo_t* info, void* uctx) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const auto* blocks = g_snapshot.load();
  const std::size_t page = page_size();
  if (blocks) {
    for (const Block& b : *blocks) {
      const bool lo = addr >= b.lo_guard && addr < b.lo_guard + page;
      const bool hi = addr >= b.hi_guard && addr < b.hi_guard + page;
      if (!lo && !hi) continue;
      const std::uintptr_t guard = lo ? b.lo_guard : b.hi_guard;
      int n = g_fault_count.fetch_add(1);
      if (n < kMaxFaults) {
        FaultRecord& r = g_faults[n];
        r.alloc_id = b.id;
        r.alloc_size = b.size;
        r.offset = static_cast<long long>(addr) - static_cast<long long>(b.data);
        auto* uc = static_cast<ucontext_t*>(uctx);
        r.write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // x86 page-fault code: W bit
        r.in_kernel = tls_thread != nullptr;
        if (r.in_kernel) {
          r.thread = tls_thread->thread_idx;
          r.block = tls_block->block_idx;
          r.kernel = tls_block->kernel;
        }
      }
      int k = g_opened_count.fetch_add(1);
      if (k < kMaxFaults) g_opened[k].store(guard);
      mprotect(reinterpret_cast<void*>(guard), page, PROT_READ | PROT_WRITE);
      return;
    }
  }
  auto* uc = static_cast<ucontext_t*>(uctx);
  const bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
  if (shared_guard_fault(addr, write)) return;
  if (tls_thread && tls_block) wild_access(addr, write, info->si_code == SI_KERNEL, blocks);
  // Not ours: fall back to the previous disposition and let the access fault again.
  sigaction(sig, &g_previous, nullptr);
}

// Reports (and re-lays) a broken canary on either side of the data.
void check_canaries(const Block& b, std::vector<std::string>& out) {
  auto* first = reinterpret_cast<unsigned char*>(b.lo_guard + page_size());
  auto* data = reinterpret_cast<unsigned char*>(b.data);
  auto* end = data + b.size;
  auto* last = reinterpret_cast<unsigned char*>(b.hi_guard);
  for (unsigned char* p = first; p < data; ++p)
    if (*p != kCanary) {
      std::ostringstream s;
      s << "memcheck: out-of-bounds write before the start of device allocation #" << b.id << " ("
        << b.size << " bytes) at offset " << (p - data);
      out.push_back(s.str());
      std::memset(first, kCanary, static_cast<std::size_t>(data - first));
      break;
    }
  for (unsigned char* p = end; p < last; ++p)
    if (*p != kCanary) {
      std::ostringstream s;
      s << "memcheck: out-of-bounds write past the end of device allocation #" << b.id << " ("
        << b.size << " bytes) at offset " << (p - data);
      out.push_back(s.str());
      std::memset(end, kCanary, static_cast<std::size_t>(last - end));
      break;
    }
}

}  // namespace

void ensure_signal_stack() {
  // A fault on a GPU thread's fiber stack (an overflow into its guard page) needs another
  // stack for the handler to run on. One already installed that is large enough (a
  // sanitizer's) is kept. Ours is mmap'ed, never malloc'ed: a sanitizer runtime unmaps
  // whatever alternate stack a thread has when the thread exits, and munmap of heap memory
  // aborts it.
  ColdTls& c = cold_tls();
  if (c.signal_stack) return;
  constexpr std::size_t kSize = 64 * 1024;
  stack_t old{};
  if (sigaltstack(nullptr, &old) == 0 && !(old.ss_flags & SS_DISABLE) && old.ss_size >= kSize) {
    c.signal_stack = old.ss_sp;
    return;
  }
  void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_sp = p;
  ss.ss_size = kSize;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(p, kSize);
    return;
  }
  c.signal_stack = p;  // kept for the thread's life (64 KB a host thread)
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous);
  });
}

namespace {

// Freed mappings kept for reuse, wholly PROT_NONE: a stale pointer into one faults as an
// access outside every allocation did when it was unmapped, but its pages stay resident,
// so the next allocation that fits takes no page faults and no munmap (each
// emulated launch of a test allocates and frees the same tensors again and again; the
// faults and TLB shootdowns were a fifth of a property's CPU). Bounded by count and bytes.
// A mapping serves an allocation of half its length up to all of it: the pages past the
// new upper guard stay PROT_NONE, and the whole mapping goes back to the cache on free.
struct Cached {
  std::uintptr_t base;
  std::size_t len;
};
constexpr std::size_t kCacheMaxEntries = 64;
constexpr std::size_t kCacheMaxBytes = std::size_t{256} << 20;
std::vector<Cached> g_cache;  // oldest first; under g_mutex
std::size_t g_cache_bytes = 0;

// The smallest cached mapping of len to 2 len bytes with its first len - page bytes past
// its lower guard opened (the rest stays PROT_NONE: the upper guard and beyond), or
// {0, 0}. Sizes vary from case to case; the smallest fit keeps most pages resident.
Cached take_cached(std::size_t len) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::size_t best = g_cache.size();
  for (std::size_t i = g_cache.size(); i-- > 0;)  // newest first among equals
    if (g_cache[i].len >= len && g_cache[i].len <= 2 * len &&
        (best == g_cache.size() || g_cache[i].len < g_cache[best].len))
      best = i;
  if (best == g_cache.size()) return {0, 0};
  const Cached c = g_cache[best];
  g_cache.erase(g_cache.begin() + static_cast<std::ptrdiff_t>(best));
  g_cache_bytes -= c.len;
  mprotect(reinterpret_cast<void*>(c.base + page_size()), len - 2 * page_size(),
           PROT_READ | PROT_WRITE);
  return c;
}

// Call with g_mutex held.
void cache_or_unmap(std::uintptr_t base, std::size_t len) {
  if (len > kCacheMaxBytes) {
    munmap(reinterpret_cast<void*>(base), len);
    return;
  }
  mprotect(reinterpret_cast<void*>(base), len, PROT_NONE);
  g_cache.push_back({base, len});
  g_cache_bytes += len;
  while (g_cache.size() > kCacheMaxEntries || g_cache_bytes > kCacheMaxBytes) {
    munmap(reinterpret_cast<void*>(g_cache.front().base), g_cache.front().len);
    g_cache_bytes -= g_cache.front().len;
    g_cache.erase(g_cache.begin());
  }
}

}  // namespace

void* guarded_alloc(std::size_t bytes) {
  install_fault_handler();
  const std::size_t page = page_size();
  // Under memcheck the data ends at the guard page to the byte; else to 16 bytes.
  const std::size_t granule = (enabled_checks() & check_memcheck) ? 1 : 16;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + granule - 1) / granule * granule;
  const std::size_t data_pages = (rounded + page - 1) / page * page;
  const std::size_t len = data_pages + 2 * page;
  Cached map = take_cached(len);
  if (!map.base) {
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    map = {reinterpret_cast<std::uintptr_t>(m), len};
    mprotect(reinterpret_cast<void*>(map.base), page, PROT_NONE);
    mprotect(reinterpret_cast<void*>(map.base + page + data_pages), page, PROT_NONE);
  }
  Block b{};
  b.map_base = map.base;
  b.map_len = map.len;
  b.lo_guard = b.map_base;
  b.hi_guard = b.map_base + page + data_pages;
  b.data = b.hi_guard - rounded;
  b.size = bytes;
  std::memset(reinterpret_cast<void*>(b.lo_guard + page), kCanary, b.data - (b.lo_guard + page));
  std::memset(reinterpret_cast<void*>(b.data), kPoison, bytes);
  std::memset(reinterpret_cast<void*>(b.data + bytes), kCanary, rounded - bytes);
  std::lock_guard<std::mutex> lock(g_mutex);
  b.id = g_next_id++;
  g_blocks.push_back(b);
  publish();
  return reinterpret_cast<void*>(b.data);
}

bool guarded_free(void* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = std::find_if(g_blocks.begin(), g_blocks.end(), [p](const Block& b) {
    return b.data == reinterpret_cast<std::uintptr_t>(p);
  });
  if (it == g_blocks.end()) return false;
  Block b = *it;
  g_blocks.erase(it);
  publish();
  cache_or_unmap(b.map_base, b.map_len);
  return true;
}

std::vector<AllocationInfo> allocations() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<AllocationInfo> out;
  for (const Block& b : g_blocks) out.push_back({b.data, b.size, b.id});
  return out;
}

bool is_device_range(const void* p, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Block& b : g_blocks)
    if (a >= b.data && a + bytes <= b.data + b.size) return true;
  return false;
}

void rearm_guards() {
  const int n = std::min(g_opened_count.exchange(0), kMaxFaults);
  for (int i = 0; i < n; ++i)
    mprotect(reinterpret_cast<void*>(g_opened[i].load()), page_size(), PROT_NONE);
}

std::vector<std::string> take_fault_reports() {
  std::vector<std::string> out;
  const int n = std::min(g_fault_count.exchange(0), kMaxFaults);
  for (int i = 0; i < n; ++i) {
    const FaultRecord& r = g_faults[i];
    std::ostringstream s;
    s << "memcheck: invalid " << (r.write ? "write" : "read") << " of device allocation #"
      << r.alloc_id << " (" << r.alloc_size << " bytes) at offset " << r.offset
      << (r.offset < 0 ? " (before its start)" : " (past its end)");
    if (r.in_kernel)
      s << " by thread " << fmt_dim(r.thread) << " of block " << fmt_dim(r.block) << " in kernel "
        << r.kernel;
    out.push_back(s.str());
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Block& b : g_blocks) check_canaries(b, out);
  return out;
}

}  // namespace emu::detail
