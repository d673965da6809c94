// Dynamic shared memory, and the poisoning of static shared memory for initcheck.
// memcheck's guards and bounds of both are in shared_memcheck.cpp.
#include <dlfcn.h>
#include <pthread.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "emu/dynamic_shared.h"
#include "internal.h"
#include "tls.h"

// Defined at link time by the emulator's link step (emulator/link/ld), which makes every
// `extern __shared__` array of the program an alias of this pool, as CUDA makes them all
// the start of the block's dynamic shared memory; the names, demangled and comma-separated,
// are for messages.
extern thread_local unsigned char __emu_extern_shared_pool[];
extern const char __emu_extern_shared_names[];

namespace emu::detail {

namespace {
thread_local ColdTls g_cold;

std::size_t page_size() {
  return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

ColdTls& cold_tls() {
  return g_cold;
}

namespace {
void release(void* p) {
  auto* c = static_cast<ColdTls*>(p);
  if (c->free_stacks) c->free_stacks(c->stacks);
  if (c->dyn_region) munmap(c->dyn_region, c->dyn_region_len);
  delete c->last_message;
  delete c->last_findings;
  *c = ColdTls{};
}
}  // namespace

void release_thread_resources_at_exit() {
  static pthread_key_t key;
  static std::once_flag once;
  std::call_once(once, [] { pthread_key_create(&key, release); });
  if (!pthread_getspecific(key)) pthread_setspecific(key, &g_cold);
}

std::vector<TlsRange> emulator_tls_ranges() {
  return {{reinterpret_cast<const unsigned char*>(&g_cold), sizeof g_cold},
          {reinterpret_cast<const unsigned char*>(&tls_thread), sizeof tls_thread},
          {reinterpret_cast<const unsigned char*>(&tls_block), sizeof tls_block}};
}

// The pool: capacity bytes followed by a PROT_NONE page. The block's bytes end flush
// (to 16) against that page; pages below the block's first byte are protected too.
void prepare_dynamic_shared(std::size_t bytes, unsigned char poison) {
  ColdTls& c = g_cold;
  const std::size_t page = page_size();
  const std::size_t cap = (EMU_DYNAMIC_SMEM_CAPACITY + page - 1) / page * page;
  if (!c.dyn_region) {
    c.dyn_region_len = cap + 2 * page;
    void* m = mmap(nullptr, c.dyn_region_len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    c.dyn_region = static_cast<unsigned char*>(m);
    release_thread_resources_at_exit();
  }
  const std::size_t rounded = (bytes + 15) / 16 * 16;
  unsigned char* end = c.dyn_region + page + cap;  // the upper guard page starts here
  unsigned char* base = end - rounded;
  unsigned char* open_from = c.dyn_region + page + (base - (c.dyn_region + page)) / page * page;
  if (c.dyn_open != open_from) {
    mprotect(c.dyn_region, c.dyn_region_len, PROT_NONE);
    if (end > open_from)
      mprotect(open_from, static_cast<std::size_t>(end - open_from), PROT_READ | PROT_WRITE);
    c.dyn_open = open_from;
  }
  if (rounded) std::memset(base, poison, rounded);
  c.dyn_base = base;
  c.dyn_bytes = bytes;
}

unsigned char* dynamic_shared_base() {
  if (!tls_thread) outside_kernel("dynamic shared memory");
  return g_cold.dyn_base;
}

unsigned char* extern_shared_pool() {
  return __emu_extern_shared_pool;
}

const char* extern_shared_names() {
  return __emu_extern_shared_names;
}

void poison_named_dynamic_shared(std::size_t bytes, unsigned char byte) {
  std::memset(extern_shared_pool(), byte, std::min<std::size_t>(bytes, EMU_DYNAMIC_SMEM_CAPACITY));
}

namespace {
struct ModuleTls {
  const void* target;
  unsigned char* data = nullptr;
  std::size_t size = 0;
};

ModuleTlsBlock find_module_tls(const void* kernel) {
  Dl_info info{};
  if (!dladdr(kernel, &info) || !info.dli_fbase) return {};
  ModuleTls m{info.dli_fbase};
  dl_iterate_phdr(
      [](dl_phdr_info* i, std::size_t, void* arg) -> int {
        auto* m = static_cast<ModuleTls*>(arg);
        // The module whose first loadable segment (file offset 0) is where dladdr put it.
        bool ours = false;
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          const auto& ph = i->dlpi_phdr[k];
          if (ph.p_type == PT_LOAD && ph.p_offset == 0)
            ours = reinterpret_cast<const void*>(i->dlpi_addr + ph.p_vaddr) == m->target;
        }
        if (!ours) return 0;
        for (int k = 0; k < i->dlpi_phnum; ++k)
          if (i->dlpi_phdr[k].p_type == PT_TLS && i->dlpi_tls_data) {
            m->data = static_cast<unsigned char*>(i->dlpi_tls_data);
            m->size = i->dlpi_phdr[k].p_memsz;
            return 1;
          }
        return 0;
      },
      &m);
  return {m.data, m.size};
}
}  // namespace

ModuleTlsBlock module_tls(const void* kernel) {
  ColdTls& c = g_cold;
  if (kernel && c.module_tls_kernel == kernel) return {c.module_tls_data, c.module_tls_size};
  const ModuleTlsBlock m = find_module_tls(kernel);
  if (m.data) {  // a module's block not yet made for this thread is asked again
    c.module_tls_kernel = kernel;
    c.module_tls_data = m.data;
    c.module_tls_size = m.size;
  }
  return m;
}

namespace {
// Calls f(from, to) for each byte range of [base, base + size) outside the emulator's own
// thread-local state, in address order: whole ranges, so poisoning and restoring a module
// block of a few hundred KB (the extern pool is in it) are a memset and a memcpy, not a
// test of every byte against every kept range (which was 70% of a racecheck-reordered
// property's CPU).
template <class F>
void each_unkept_range(unsigned char* base, std::size_t size, F f) {
  std::vector<TlsRange> keep = emulator_tls_ranges();
  std::sort(keep.begin(), keep.end(),
            [](const TlsRange& a, const TlsRange& b) { return a.begin < b.begin; });
  unsigned char* at = base;
  unsigned char* const end = base + size;
  for (const TlsRange& r : keep) {
    auto* lo = const_cast<unsigned char*>(r.begin);
    unsigned char* hi = lo + r.size;
    if (hi <= at || lo >= end) continue;  // outside what is left of the block
    if (lo > at) f(at, lo);
    at = std::max(at, hi);
  }
  if (at < end) f(at, end);
}
}  // namespace

TlsSnapshot poison_module_tls(const void* kernel, unsigned char byte) {
  TlsSnapshot snap;
  const ModuleTlsBlock m = module_tls(kernel);
  if (!m.data) return snap;
  snap.base = m.data;
  snap.saved.assign(m.data, m.data + m.size);
  // Poison all but the emulator's own state, range by range.
  each_unkept_range(m.data, m.size, [byte](unsigned char* from, unsigned char* to) {
    std::memset(from, byte, static_cast<std::size_t>(to - from));
  });
  return snap;
}

void restore_module_tls(TlsSnapshot& snap) {
  if (!snap.base) return;
  unsigned char* const base = snap.base;
  const unsigned char* const saved = snap.saved.data();
  each_unkept_range(base, snap.saved.size(), [base, saved](unsigned char* from, unsigned char* to) {
    std::memcpy(from, saved + (from - base), static_cast<std::size_t>(to - from));
  });
  snap.base = nullptr;
}

}  // namespace emu::detail
