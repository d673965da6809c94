// memcheck for shared memory: the pools' guard pages and canaries while a block runs, and
// the byte-exact check of instrumented accesses.
//
// Guard pages alone see an access only on a protected page: the `extern __shared__` pool is
// open up to the launch's size rounded up to a page, EMU_DYNAMIC_SHARED's pool ends flush
// to 16 bytes (the alignment CUDA gives dynamic shared memory), and static __shared__
// arrays, thread-locals among others, have no guard at all. So the slack past each pool's
// end holds a canary, checked after the block (writes found, without the thread), and code
// compiled with the race instrumentation (pagedattn_emulator_race_instrumentation: every
// load and store calls the emulator first, src/hazard_hooks.cpp) is checked access by
// access against exact bounds: the launch's dynamic size for both pools, and each static
// array the kernel uses (the ones its launch limit counts, src/elf_symbols.cpp). A launch
// under memcheck that made no instrumented access prints one note saying what was not
// checked.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "elf_symbols.h"
#include "emu/dynamic_shared.h"
#include "internal.h"
#include "tls.h"

namespace emu::detail {
namespace {

constexpr unsigned char kCanary = 0xA5;
// emulator/link/ld puts one such page below the extern __shared__ pool and one above it.
constexpr std::size_t kExternGuard = 4096;
constexpr const char* kDynamicShared = "dynamic shared memory";
constexpr const char* kStaticShared = "static __shared__ array";
constexpr const char* kOtherTls = "thread-local storage outside every shared array of the kernel";
constexpr const char* kPortableName = "EMU_DYNAMIC_SHARED";

std::atomic<unsigned long long> g_memcheck_launches{0}, g_instrumented_launches{0};

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}
std::uintptr_t addr(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// An invalid access located: which region, at which offset from its first byte.
struct Place {
  const char* what = nullptr;
  const char* name = "";
  long long offset = 0;
  std::size_t size = 0;
};

// Is [a, a + n) a valid shared-memory access of the running block? Otherwise `out` names
// the region it missed: a pool whose window (guards included) holds it, else the nearest of
// the kernel's static arrays (or the extern pool, when its window holds the access).
bool invalid(const SharedBounds& s, std::uintptr_t a, std::size_t n, bool write, Place* out) {
  const std::uintptr_t e = a + n;
  if (a < s.dyn_hi && e > s.dyn_lo) {
    if (a >= s.dyn_base && e <= s.dyn_base + s.bytes) return false;
    *out = {kDynamicShared, kPortableName, static_cast<long long>(a - s.dyn_base), s.bytes};
    return true;
  }
  const bool in_ext = a < s.ext_hi && e > s.ext_lo;
  if (in_ext && a >= s.ext_base && e <= s.ext_base + s.bytes) return false;
  const Place pool{kDynamicShared, extern_shared_names(),
                   static_cast<long long>(a) - static_cast<long long>(s.ext_base), s.bytes};
  if (in_ext && s.bytes > 0) {
    *out = pool;
    return true;
  }
  if (s.arrays && a < s.tls_hi && e > s.tls_lo) {
    // The emulator's two pointers, which inlined built-ins (threadIdx ...) read.
    const std::uintptr_t t = addr(&tls_thread), b = addr(&tls_block);
    if (!write && ((a >= t && e <= t + sizeof tls_thread) || (a >= b && e <= b + sizeof tls_block)))
      return false;
    const std::size_t off = a - s.tls_lo;
    Place nearest{kOtherTls, "", static_cast<long long>(off), 0};
    long long best = -1;
    for (const SharedArray& arr : s.arrays->arrays) {
      if (off >= arr.offset && off + n <= arr.offset + arr.size) return false;
      const long long rel = static_cast<long long>(off) - static_cast<long long>(arr.offset);
      const long long dist =
          rel < 0 ? -rel : std::max<long long>(0, rel - static_cast<long long>(arr.size) + 1);
      if (best < 0 || dist < best) {
        best = dist;
        nearest = {kStaticShared, arr.name.c_str(), rel, arr.size};
      }
    }
    // The extern pool (no dynamic size here) when it is nearer than every array.
    if (in_ext && (best < 0 || (pool.offset < 0 ? -pool.offset : pool.offset) < best))
      nearest = pool;
    *out = nearest;
    return true;
  }
  if (in_ext) {
    *out = pool;
    return true;
  }
  return false;  // not shared memory (device memory has its own guards)
}

// Records an invalid access; one of a region and direction already recorded only counts.
// Async-signal-safe (the SIGSEGV handler calls it): fixed storage, no allocation.
void record(ColdTls& c, const Place& p, std::size_t bytes, bool write, bool by_canary) {
  for (int i = 0; i < c.num_faults; ++i) {
    SharedFault& f = c.faults[i];
    if (f.what == p.what && f.name == p.name && f.write == write) {
      if (!by_canary) ++f.more;
      return;
    }
  }
  if (c.num_faults == ColdTls::kMaxFaults) return;
  SharedFault& f = c.faults[c.num_faults++];
  f = {p.name, p.what, p.offset, p.size, bytes, 0, write, by_canary, uint3{}, uint3{}};
  if (tls_thread && !by_canary) f.thread = tls_thread->thread_idx;
}

void lay_canary(std::uintptr_t from, std::uintptr_t to) {
  if (to > from) std::memset(reinterpret_cast<void*>(from), kCanary, to - from);
}

// The first byte of [from, to) that is not the canary, or 0.
std::uintptr_t broken_canary(std::uintptr_t from, std::uintptr_t to) {
  for (std::uintptr_t p = from; p < to; ++p)
    if (*reinterpret_cast<const unsigned char*>(p) != kCanary) return p;
  return 0;
}

// EMU_DYNAMIC_SHARED's slack: from the first open page to the block's base, and from its
// last byte to the guard page (prepare_dynamic_shared in dynamic_shared.cpp opens these).
void dynamic_slack(const ColdTls& c, std::uintptr_t* below, std::uintptr_t* end) {
  const std::uintptr_t first = addr(c.dyn_region) + page_size();
  *below = first + (addr(c.dyn_base) - first) / page_size() * page_size();
  *end = addr(c.dyn_region) + c.dyn_region_len - page_size();
}

std::string describe(const SharedFault& f, const char* kernel) {
  std::string line = std::string("kernel ") + kernel + " block " + fmt_dim(f.block);
  if (!f.by_canary) line += " thread " + fmt_dim(f.thread);
  line += std::string(": invalid ") + (f.write ? "write" : "read") + " of " + f.what;
  if (f.what == kOtherTls) {
    line += " at offset " + std::to_string(f.offset) + " of the kernel module's block";
  } else {
    line += std::string(" '") + f.name + "' at byte offset " + std::to_string(f.offset);
    const long long size = static_cast<long long>(f.size);
    const char* where = f.offset < 0       ? "before its start"
                        : f.offset >= size ? "past its end"
                                           : "running past its end";
    line += std::string(", ") + where +
            (f.what == kDynamicShared ? " (the launch gave " : " (the array has ") +
            std::to_string(f.size) + " bytes)";
  }
  if (f.bytes)
    line += ", " + std::to_string(f.bytes) + (f.bytes == 1 ? " byte wide" : " bytes wide");
  if (f.by_canary)
    line +=
        "; found by the canary after the block, so the thread is not known (the race "
        "instrumentation names it)";
  if (f.more)
    line += "; " + std::to_string(f.more) + " more such " + (f.write ? "writes" : "reads") +
            " in this block";
  return line;
}

}  // namespace

void arm_shared_guards(std::size_t bytes, LaunchRun& run) {
  ColdTls& c = cold_tls();
  SharedBounds& s = c.bounds;
  const std::size_t page = page_size();
  c.num_guards = 0;
  s.bytes = bytes;
  s.dyn_lo = s.dyn_hi = s.dyn_base = s.ext_lo = s.ext_hi = s.ext_base = 0;
  // EMU_DYNAMIC_SHARED's pool: its end is flush (to 16) against a guard page already.
  if (c.dyn_region) {
    c.guards[c.num_guards++] = {kPortableName, c.dyn_base, bytes, c.dyn_region, c.dyn_region_len};
    std::uintptr_t below, end;
    dynamic_slack(c, &below, &end);
    lay_canary(below, addr(c.dyn_base));
    lay_canary(addr(c.dyn_base) + bytes, end);
    s.dyn_lo = addr(c.dyn_region);
    s.dyn_hi = s.dyn_lo + c.dyn_region_len;
    s.dyn_base = addr(c.dyn_base);
  }
  // The extern __shared__ pool: its guard page below, and the pages past the launch's size
  // (rounded up to a page) up to and with the guard page above.
  unsigned char* base = extern_shared_pool();
  const std::size_t open = round_up(bytes, page);
  const std::size_t cap = round_up(EMU_DYNAMIC_SMEM_CAPACITY, page);
  if (page == kExternGuard && addr(base) % page == 0) {
    if (c.ext_armed_open != open) {  // else armed so by an earlier block of this launch
      if (c.ext_armed_open != ColdTls::kPoolAllOpen)
        mprotect(base - page, cap + 2 * page, PROT_READ | PROT_WRITE);
      mprotect(base - page, page, PROT_NONE);
      mprotect(base + open, cap - open + page, PROT_NONE);
      c.ext_armed_open = open;
    }
    c.guards[c.num_guards++] = {extern_shared_names(), base, bytes, base - page, cap + 2 * page};
  }
  // The window is the link step's layout whether or not its pages could be protected.
  lay_canary(addr(base) + bytes, addr(base) + open);
  s.ext_base = addr(base);
  s.ext_lo = s.ext_base - kExternGuard;
  s.ext_hi = s.ext_base + cap + kExternGuard;
  // Static arrays: the kernel's own, where that list is complete (the main program).
  if (s.kernel != run.kernel_address) {
    s.kernel = run.kernel_address;
    const KernelArrays& a = kernel_static_arrays(s.kernel);
    const ModuleTlsBlock m = module_tls(s.kernel);
    s.arrays = a.complete && m.data ? &a : nullptr;
    s.tls_lo = addr(m.data);
    s.tls_hi = s.tls_lo + m.size;
  }
  s.accesses = 0;
  s.reported_lo = s.reported_hi = 0;
  s.armed = true;
}

void disarm_shared_guards(LaunchRun& run, uint3 block, bool keep_pool_guards) {
  ColdTls& c = cold_tls();
  SharedBounds& s = c.bounds;
  s.armed = false;
  run.instrumented_accesses += s.accesses;
  if (!keep_pool_guards) open_shared_guards();
  c.num_guards = 0;
  // Writes into the slack that no check saw as they happened.
  if (s.dyn_hi) {
    std::uintptr_t below, end;
    dynamic_slack(c, &below, &end);
    for (auto [from, to] : {std::pair{below, s.dyn_base}, std::pair{s.dyn_base + s.bytes, end}})
      if (const std::uintptr_t p = broken_canary(from, to))
        record(c,
               {kDynamicShared, kPortableName,
                static_cast<long long>(p) - static_cast<long long>(s.dyn_base), s.bytes},
               0, true, true);
  }
  if (s.ext_hi) {
    if (const std::uintptr_t p =
            broken_canary(s.ext_base + s.bytes, s.ext_base + round_up(s.bytes, page_size())))
      record(
          c,
          {kDynamicShared, extern_shared_names(), static_cast<long long>(p - s.ext_base), s.bytes},
          0, true, true);
  }
  for (int i = 0; i < c.num_faults; ++i) {
    c.faults[i].block = block;
    run.report("memcheck", describe(c.faults[i], run.kernel));
  }
  c.num_faults = 0;
}

void open_shared_guards() {
  ColdTls& c = cold_tls();
  if (c.ext_armed_open == ColdTls::kPoolAllOpen) return;
  const std::size_t page = page_size();
  mprotect(extern_shared_pool() - page, round_up(EMU_DYNAMIC_SMEM_CAPACITY, page) + 2 * page,
           PROT_READ | PROT_WRITE);
  c.ext_armed_open = ColdTls::kPoolAllOpen;
}

bool shared_guard_fault(std::uintptr_t a, bool write) {
  ColdTls& c = cold_tls();
  const std::size_t page = page_size();
  for (int i = 0; i < c.num_guards; ++i) {
    const SharedGuard& g = c.guards[i];
    const auto lo = addr(g.prot);
    if (a < lo || a >= lo + g.prot_len) continue;
    const SharedBounds& s = c.bounds;
    // The instrumented check reported this access just before it faulted.
    if (!(a >= s.reported_lo && a < s.reported_hi)) {
      Place p{kDynamicShared, g.name,
              static_cast<long long>(a) - static_cast<long long>(addr(g.base)), g.size};
      invalid(s, a, 1, write, &p);
      record(c, p, 0, write, false);
    }
    mprotect(reinterpret_cast<void*>(a / page * page), page, PROT_READ | PROT_WRITE);
    // That pool's protection is no longer what its bookkeeping says: the next block re-arms.
    if (g.prot == c.dyn_region)
      c.dyn_open = nullptr;
    else
      c.ext_armed_open = ColdTls::kPoolUnknown;
    return true;
  }
  return false;
}

void shared_bounds_access(const void* p, std::size_t n, bool write) {
  ColdTls& c = cold_tls();
  SharedBounds& s = c.bounds;
  if (!s.armed) return;
  ++s.accesses;
  Place place;
  const std::uintptr_t a = addr(p);
  if (!invalid(s, a, n, write, &place)) return;
  record(c, place, n, write, false);
  s.reported_lo = a;
  s.reported_hi = a + n;
}

bool shared_pool_near(std::uintptr_t a, SharedPlace* out) {
  const ColdTls& c = cold_tls();
  const std::size_t page = page_size();
  bool found = false;
  auto consider = [&](const char* name, std::uintptr_t base, std::uintptr_t lo, std::uintptr_t hi) {
    const long long off = static_cast<long long>(a) - static_cast<long long>(base);
    const bool inside = a >= lo && a < hi;
    const long long dist = inside   ? 0
                           : a < lo ? static_cast<long long>(lo - a)
                                    : static_cast<long long>(a - hi + 1);
    if (found && dist >= out->distance) return;
    *out = {name, base, off, c.dyn_bytes, inside, dist};
    found = true;
  };
  if (c.dyn_region)
    consider(kPortableName, addr(c.dyn_base), addr(c.dyn_region),
             addr(c.dyn_region) + c.dyn_region_len);
  const std::uintptr_t base = addr(extern_shared_pool());
  consider(extern_shared_names(), base, base - kExternGuard,
           base + round_up(EMU_DYNAMIC_SMEM_CAPACITY, page) + kExternGuard);
  return found;
}

void memcheck_launch_end(LaunchRun& run) {
  if (!(run.checks & check_memcheck)) return;
  ++g_memcheck_launches;
  if (run.instrumented_accesses > 0) {
    ++g_instrumented_launches;
    return;
  }
  static std::atomic<bool> noted{false};
  if (noted.exchange(true)) return;
  std::fprintf(stderr,
               "memcheck: note: kernel %s made no instrumented memory access, so its shared "
               "memory was checked by guard pages and canaries only: reads past the launch's "
               "dynamic size up to the next 4 KB (16 bytes for EMU_DYNAMIC_SHARED) and any "
               "access past a static __shared__ array are not seen, and writes into that "
               "slack are found after the block without the thread; build its sources with "
               "pagedattn_emulator_race_instrumentation(<target>) (or -fsanitize=thread "
               "-Wno-tsan at compile time only) for byte-exact shared-memory bounds\n",
               run.kernel);
}

}  // namespace emu::detail

namespace emu {
MemcheckCoverage memcheck_coverage() {
  return {detail::g_memcheck_launches.load(), detail::g_instrumented_launches.load()};
}
}  // namespace emu
