// Device memory with guard pages. Each allocation sits between two PROT_NONE pages,
// its end flush (to 16 bytes) against the upper one, so an access past the end
// faults at once; the SIGSEGV handler names the allocation, offset and GPU thread,
// opens the page so the access completes (as on a GPU, execution goes on) and the
// launch then reports it. The bytes between the data and the guards hold a canary
// that catches small underflowing or sub-16-byte overflowing writes.
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <sstream>

#include "internal.h"

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
  {
    auto* uc = static_cast<ucontext_t*>(uctx);
    if (shared_guard_fault(addr, (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0)) return;
  }
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

void* guarded_alloc(std::size_t bytes) {
  install_fault_handler();
  const std::size_t page = page_size();
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 15) / 16 * 16;
  const std::size_t data_pages = (rounded + page - 1) / page * page;
  const std::size_t len = data_pages + 2 * page;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Block b{};
  b.map_base = reinterpret_cast<std::uintptr_t>(m);
  b.map_len = len;
  b.lo_guard = b.map_base;
  b.hi_guard = b.map_base + page + data_pages;
  b.data = b.hi_guard - rounded;
  b.size = bytes;
  mprotect(reinterpret_cast<void*>(b.lo_guard), page, PROT_NONE);
  mprotect(reinterpret_cast<void*>(b.hi_guard), page, PROT_NONE);
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
  munmap(reinterpret_cast<void*>(b.map_base), b.map_len);
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
