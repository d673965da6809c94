// racecheck's hazard mode. Every load and store of instrumented kernel code lands here
// (hazard_hooks.cpp); each byte of shared memory (the module's thread-local storage that
// holds static __shared__ arrays and the extern __shared__ pool, and EMU_DYNAMIC_SHARED's
// pool) and of device allocations has a shadow cell: the last writer (block, thread,
// barrier epoch, warp-collective sequence) and the readers since. An access is a hazard
// when another thread wrote the byte (or, for a write, read it) with nothing ordering the
// two: in the same block, no __syncthreads between them, and (for lanes of one warp) no
// warp collective both completed after the first access; in different blocks, global
// memory is never ordered within a launch. Found even when the output happens to agree.
//
// Why shadow memory fed by the compiler's instrumentation rather than ThreadSanitizer's
// fiber API: the emulator knows the exact happens-before of a block (barriers and
// collectives are its own scheduler's decisions), the check runs in an ordinary build
// with no sanitizer runtime (whose interceptors and signal handling fight the guard pages
// and thread-local poisoning of memcheck and initcheck), and findings name the emulator's
// terms: block, thread, warp, shared array or allocation and offset.
#include "hazard.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "elf_symbols.h"
#include "emu/check_coverage.h"
#include "internal.h"
#include "tls.h"

namespace emu::detail {

bool g_hazard_instrumented = false;
std::uint32_t current_warp_sync(const ThreadCtx& any, unsigned linear);

namespace {

constexpr std::uint32_t kNone = 0xffffffffu;
constexpr std::uint16_t kManyWarps = 0xffff;

struct Cell {
  std::uint32_t w_block = kNone, w_epoch = 0, w_sync = 0;
  std::uint16_t w_thread = 0, w_warp = 0;
  std::uint32_t r_block = kNone, r_epoch = 0, r_sync = 0;
  std::uint16_t r_thread = 0, r_warp = 0;
  bool r_many = false;
};

struct Range {
  std::uintptr_t begin, end;
  bool shared;
  std::uint64_t alloc_id;         // global: the allocation; shared: 0
  const unsigned char* tls_base;  // shared ranges in the module's TLS block: its start
};

constexpr std::size_t kPage = 4096;

struct HazardRun {
  const void* kernel = nullptr;
  LaunchRun* run = nullptr;
  std::vector<Range> global;  // sorted by begin
  std::vector<Range> shared;  // this block's
  std::unordered_map<std::uintptr_t, std::unique_ptr<Cell[]>> pages;
  unsigned long long block = 0;
  std::uint64_t accesses = 0;
  std::set<std::string> reported;  // one finding per region and kind
};

HazardRun*& state() {
  return reinterpret_cast<HazardRun*&>(cold_tls().hazard);
}

Cell& cell(HazardRun& h, std::uintptr_t a) {
  auto& page = h.pages[a / kPage];
  if (!page) page.reset(new Cell[kPage]);
  return page[a % kPage];
}

const Range* find(const HazardRun& h, std::uintptr_t a) {
  for (const Range& r : h.shared)
    if (a >= r.begin && a < r.end) return &r;
  auto it = std::upper_bound(h.global.begin(), h.global.end(), a,
                             [](std::uintptr_t x, const Range& r) { return x < r.begin; });
  if (it == h.global.begin()) return nullptr;
  --it;
  return a < it->end ? &*it : nullptr;
}

std::string region(const HazardRun& h, const Range& r, std::uintptr_t a, std::string* key) {
  std::ostringstream o;
  if (!r.shared) {
    o << "device allocation #" << r.alloc_id << " byte offset " << (a - r.begin);
    *key = "global#" + std::to_string(r.alloc_id);
  } else if (r.tls_base) {
    std::size_t within = 0;
    const std::string sym =
        tls_symbol_at(h.kernel, a - reinterpret_cast<std::uintptr_t>(r.tls_base), &within);
    const std::string name =
        sym == "__emu_extern_shared_pool" ? "extern __shared__" : demangle(sym);
    o << "shared memory '" << (sym.empty() ? "?" : name) << "' byte offset " << within;
    *key = "shared:" + sym;
  } else {
    o << "shared memory 'EMU_DYNAMIC_SHARED' byte offset " << (a - r.begin);
    *key = "shared:EMU_DYNAMIC_SHARED";
  }
  return o.str();
}

// A previous access by (block b, thread u, warp wu, epoch e, collective sequence s) and the
// current one by `t`: is there a happens-before between them?
bool ordered(const Range& r, const HazardRun& h, std::uint32_t b, std::uint16_t u, std::uint16_t wu,
             std::uint32_t e, std::uint32_t s, bool many, const ThreadCtx& t) {
  if (b != h.block) return r.shared;  // shared memory: an earlier block's; global: a race
  if (!many && u == t.linear) return true;
  if (e != t.epoch) return true;   // a __syncthreads between
  if (wu != t.warp) return false;  // another warp: a collective orders only its own lanes
  // Same warp: both lanes have completed a collective since the first access (exact for
  // full-warp collectives; for many readers, the current lane has).
  if (t.warp_sync <= s) return false;
  return many || current_warp_sync(t, u) > s;
}

void report(HazardRun& h, const Range& r, std::uintptr_t a, const ThreadCtx& t, bool write,
            bool against_write, std::uint16_t other, bool many_readers, std::uint32_t other_block,
            const void* pc) {
  std::string key;
  const std::string where = region(h, r, a, &key);
  const char* kind =
      write ? (against_write ? "write-after-write" : "write-after-read") : "read-after-write";
  if (!h.reported.insert(key + kind).second) return;
  const BlockCtx& b = *tls_block;
  std::ostringstream o;
  o << "hazard: kernel " << h.run->kernel << " block " << fmt_dim(b.block_idx) << ": " << kind
    << " on " << where << ": thread " << t.linear << " " << fmt_dim(t.thread_idx) << " (warp "
    << t.warp << ") " << (write ? "writes" : "reads") << " it (code " << pc << ") after ";
  if (many_readers)
    o << "several threads read it";
  else
    o << "thread " << other << " (warp " << other / static_cast<unsigned>(b.warp_size) << ")"
      << (other_block != h.block ? " of block #" + std::to_string(other_block) : std::string())
      << (against_write ? " wrote it" : " read it");
  if (other_block != h.block)
    o << " in another block: nothing orders blocks within a launch";
  else
    o << " with no __syncthreads between"
      << (!many_readers && other / static_cast<unsigned>(b.warp_size) != t.warp
              ? " (a warp collective orders only its own lanes)"
              : "");
  if (t.epoch)
    o << " (both after barrier #" << t.epoch << ", last wait at " << t.site.file << ":"
      << t.site.line << ")";
  h.run->report("racecheck", o.str());
}

}  // namespace

void hazard_begin(const void* kernel, LaunchRun& run) {
  auto* h = new HazardRun();
  h->kernel = kernel;
  h->run = &run;
  for (const AllocationInfo& a : allocations())
    h->global.push_back({a.data, a.data + a.size, false, a.id, nullptr});
  std::sort(h->global.begin(), h->global.end(),
            [](const Range& x, const Range& y) { return x.begin < y.begin; });
  delete state();
  state() = h;
}

void hazard_block(unsigned long long block_linear) {
  HazardRun* h = state();
  if (!h) return;
  h->block = block_linear;
  h->shared.clear();
  // The module's TLS block less the emulator's own state, range by range.
  const ModuleTlsBlock m = module_tls(h->kernel);
  if (m.data) {
    std::vector<TlsRange> keep = emulator_tls_ranges();
    std::sort(keep.begin(), keep.end(),
              [](const TlsRange& x, const TlsRange& y) { return x.begin < y.begin; });
    auto lo = reinterpret_cast<std::uintptr_t>(m.data);
    const auto hi = lo + m.size;
    for (const TlsRange& k : keep) {
      const auto kb = reinterpret_cast<std::uintptr_t>(k.begin), ke = kb + k.size;
      if (ke <= lo || kb >= hi) continue;
      if (kb > lo) h->shared.push_back({lo, kb, true, 0, m.data});
      lo = std::max(lo, ke);
    }
    if (lo < hi) h->shared.push_back({lo, hi, true, 0, m.data});
  }
  ColdTls& c = cold_tls();
  if (c.dyn_base && c.dyn_bytes)
    h->shared.push_back({reinterpret_cast<std::uintptr_t>(c.dyn_base),
                         reinterpret_cast<std::uintptr_t>(c.dyn_base) + c.dyn_bytes, true, 0,
                         nullptr});
}

void hazard_end() {
  HazardRun* h = state();
  if (!h) return;
  state() = nullptr;
  if (h->accesses > 0) count_hazard_launch();  // emu/check_coverage.h
  static bool noted = false;
  if (h->accesses == 0 && !noted) {
    noted = true;
    std::fprintf(stderr,
                 "racecheck: note: kernel %s made no instrumented memory access, so only the "
                 "reordering check ran; build its sources with "
                 "pagedattn_emulator_race_instrumentation(<target>) (or -fsanitize=thread at "
                 "compile time only) for hazard detection\n",
                 h->run->kernel);
  }
  delete h;
}

void hazard_access(const void* address, std::size_t bytes, bool write, const void* pc) {
  HazardRun* h = state();
  if (!h) return;
  const ThreadCtx& t = *tls_thread;
  ++h->accesses;
  const auto a0 = reinterpret_cast<std::uintptr_t>(address);
  const Range* r = find(*h, a0);
  if (!r) return;
  const auto block = static_cast<std::uint32_t>(h->block);
  for (std::uintptr_t a = a0; a < a0 + bytes; ++a) {
    if (a >= r->end && !(r = find(*h, a))) return;
    Cell& c = cell(*h, a);
    if (c.w_block != kNone &&
        !ordered(*r, *h, c.w_block, c.w_thread, c.w_warp, c.w_epoch, c.w_sync, false, t))
      report(*h, *r, a, t, write, true, c.w_thread, false, c.w_block, pc);
    if (write) {
      if (c.r_block != kNone &&
          !ordered(*r, *h, c.r_block, c.r_thread, c.r_warp == kManyWarps ? 0xffff : c.r_warp,
                   c.r_epoch, c.r_sync, c.r_many, t))
        report(*h, *r, a, t, true, false, c.r_thread, c.r_many, c.r_block, pc);
      c.w_block = block;
      c.w_epoch = t.epoch;
      c.w_sync = t.warp_sync;
      c.w_thread = static_cast<std::uint16_t>(t.linear);
      c.w_warp = static_cast<std::uint16_t>(t.warp);
      c.r_block = kNone;
      c.r_many = false;
    } else if (c.r_block != block || c.r_epoch != t.epoch) {
      c.r_block = block;
      c.r_epoch = t.epoch;
      c.r_sync = t.warp_sync;
      c.r_thread = static_cast<std::uint16_t>(t.linear);
      c.r_warp = static_cast<std::uint16_t>(t.warp);
      c.r_many = false;
    } else if (c.r_many || c.r_thread != t.linear) {
      c.r_many = true;
      if (c.r_warp != t.warp) c.r_warp = kManyWarps;
      c.r_sync = std::max(c.r_sync, t.warp_sync);
    }
  }
}

}  // namespace emu::detail
