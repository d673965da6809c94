// Runs one block: every GPU thread is a fiber (Boost.Context, pooled stacks) that runs
// until it reaches a barrier or a warp collective. When no fiber can run, the
// scheduler completes what has all its participants and, if nothing can complete,
// reports why (synccheck) instead of hanging.
#include <sys/mman.h>

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "asan_fiber.h"
#include "internal.h"
#include "tls.h"
#include "watchdog.h"

namespace ctx = boost::context;

namespace emu::detail {

__thread ThreadCtx* tls_thread = nullptr;
__thread const BlockCtx* tls_block = nullptr;

namespace {

// Stacks are reused across blocks on a host thread: mmap once, guard page at the bottom.
class StackPool {
 public:
  explicit StackPool(std::size_t size) : size_(size) {}
  ~StackPool() {
    for (auto& s : free_) munmap(static_cast<char*>(s.sp) - s.size - guard(), s.size + guard());
  }
  ctx::stack_context allocate() {
    if (!free_.empty()) {
      ctx::stack_context s = free_.back();
      free_.pop_back();
      last_ = {static_cast<char*>(s.sp) - s.size, s.size};
      return s;
    }
    void* m = mmap(nullptr, size_ + guard(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    mprotect(m, guard(), PROT_NONE);
    ctx::stack_context s;
    s.size = size_;
    s.sp = static_cast<char*>(m) + guard() + size_;
    last_ = {static_cast<char*>(s.sp) - s.size, s.size};
    return s;
  }
  // The stack handed out last, for ASan's fiber annotations (asan_fiber.h).
  AsanStack last_allocated() const { return last_; }
  void deallocate(ctx::stack_context& s) { free_.push_back(s); }

 private:
  static std::size_t guard() { return 4096; }
  std::size_t size_;
  std::vector<ctx::stack_context> free_;
  AsanStack last_;
};

struct PoolRef {
  StackPool* pool;
  ctx::stack_context allocate() { return pool->allocate(); }
  void deallocate(ctx::stack_context& s) { pool->deallocate(s); }
};

std::size_t stack_bytes() {
  static const std::size_t bytes = [] {
    const char* e = std::getenv("EMU_STACK_KB");
    long kb = e ? std::strtol(e, nullptr, 10) : 256;
    return static_cast<std::size_t>(std::max(kb, 64L)) * 1024;
  }();
  return bytes;
}

StackPool& stack_pool() {
  ColdTls& c = cold_tls();
  if (!c.stacks) {  // lives as long as the host thread
    c.stacks = new StackPool(stack_bytes());
    c.free_stacks = [](void* pool) { delete static_cast<StackPool*>(pool); };
    release_thread_resources_at_exit();
  }
  return *static_cast<StackPool*>(c.stacks);
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::shfl_idx:
      return "__shfl_sync";
    case WarpOp::shfl_up:
      return "__shfl_up_sync";
    case WarpOp::shfl_down:
      return "__shfl_down_sync";
    case WarpOp::shfl_xor:
      return "__shfl_xor_sync";
    case WarpOp::ballot:
      return "__ballot_sync";
    case WarpOp::any:
      return "__any_sync";
    case WarpOp::all:
      return "__all_sync";
    case WarpOp::syncwarp:
      return "__syncwarp";
    case WarpOp::activemask:
      return "__activemask";
  }
  return "?";
}

std::string where(const Site& s) {
  std::ostringstream o;
  o << s.file << ":" << s.line;
  return o.str();
}

}  // namespace

struct BlockRun {
  struct Slot {
    ThreadCtx ctx;
    ctx::fiber fiber;
    ctx::fiber caller;
    AsanStack stack, caller_stack;  // for ASan's fiber annotations (asan_fiber.h)
  };
  BlockCtx info;
  std::vector<Slot> slots;
  const std::function<void()>* body = nullptr;
  LaunchRun* launch = nullptr;
  unsigned warps = 0;
  // In-order passes (no ASan): a thread that blocks switches straight to the next runnable
  // thread after it, the one the scheduler would resume next, instead of through the
  // scheduler (one switch instead of two). `returning` is the slot whose switch lands back
  // in the scheduler; `progress` the host thread's watchdog counters.
  bool handoff = false;
  Slot* returning = nullptr;
  HostProgress* progress = nullptr;
  std::vector<std::uint32_t> warp_seq;  // collectives completed per warp
  std::string header() const {
    return std::string("kernel ") + info.kernel + " block " + fmt_dim(info.block_idx);
  }
  bool checking(unsigned c) const { return (launch->checks & c) != 0; }
};

std::string fmt_dim(uint3 v) {
  std::ostringstream o;
  o << "(" << v.x << "," << v.y << "," << v.z << ")";
  return o.str();
}

// The only two places a fiber switch happens: into a GPU thread (resume_fiber) and back
// out of it (yield_to_scheduler).
void yield_to_scheduler() {
  ThreadCtx& t = this_thread();
  BlockRun& run = *t.block;
  auto& slot = run.slots[t.linear];
  BlockRun::Slot* next = nullptr;
  if (run.handoff)
    for (std::size_t j = t.linear + 1; j < run.slots.size() && !next; ++j)
      if (run.slots[j].ctx.wait == Wait::running) next = &run.slots[j];
  asan_leave(slot.stack, slot.caller_stack);
  try {
    if (next) {
      // The next thread takes over this one's way back to the scheduler; this one's
      // continuation is kept in its slot, where the scheduler (or another handoff) resumes it.
      tls_thread = &next->ctx;
      run.progress->fiber.store(&next->ctx, std::memory_order_relaxed);
      count_step(*run.progress);
      ctx::fiber back = std::move(slot.caller);
      slot.caller = std::move(next->fiber).resume_with([&slot, &back](ctx::fiber&& self) {
        slot.fiber = std::move(self);
        return std::move(back);
      });
    } else {
      run.returning = &slot;
      slot.caller = std::move(slot.caller).resume();
    }
  } catch (...) {  // forced unwind: this fiber is back on its stack to die
    asan_arrive(slot.stack, &slot.caller_stack);
    throw;
  }
  asan_arrive(slot.stack, &slot.caller_stack);
}

namespace {
void resume_fiber(BlockRun& run, BlockRun::Slot& s, AsanStack& host) {
  tls_thread = &s.ctx;
  run.returning = &s;
  asan_leave(host, s.stack);
  ctx::fiber back = std::move(s.fiber).resume();
  asan_arrive(host, nullptr);
  // The thread that switched back here (s itself, or the last of a handoff chain).
  run.returning->fiber = std::move(back);
  tls_thread = nullptr;
  count_step(*run.progress);
}
}  // namespace

[[noreturn]] void outside_kernel(const char* what) {
  throw std::logic_error(std::string("emu: ") + what +
                         " used outside a kernel launched with emu::launch");
}

void barrier_arrive(Site site) {
  ThreadCtx& t = this_thread();
  t.site = site;
  t.wait = Wait::barrier;
  yield_to_scheduler();
}

namespace {

std::uint64_t effective_mask(std::uint64_t mask, int warp_size) {
  // BI-V100: a 32-bit full mask was measured to name all 64 lanes.
  if (warp_size == 64 && mask == 0xffffffffull) return ~0ull;
  return warp_size >= 64 ? mask : (mask & ((1ull << warp_size) - 1));
}

std::string lanes(std::uint64_t m) {
  std::ostringstream o;
  bool first = true;
  for (int i = 0; i < 64; ++i) {
    if (!(m >> i & 1)) continue;
    int j = i;
    while (j + 1 < 64 && (m >> (j + 1) & 1)) ++j;
    o << (first ? "" : ",") << i;
    if (j > i) o << ".." << j;
    first = false;
    i = j;
  }
  return o.str();
}

// Every distinct place threads of the block wait (operation, file:line), with how many
// threads wait there and their linear indices as ranges; then the exited threads, and the
// thread that is running (for the watchdog: it never reached a switch point).
std::string describe_waits(const BlockRun& r, const ThreadCtx* running) {
  struct Group {
    std::string what;
    std::vector<unsigned> threads;
  };
  std::vector<Group> groups;
  std::vector<unsigned> exited;
  for (const auto& s : r.slots) {
    const ThreadCtx& t = s.ctx;
    if (&t == running) continue;
    if (t.wait == Wait::done) {
      exited.push_back(t.linear);
      continue;
    }
    std::string what;
    if (t.wait == Wait::running)
      what = "runnable (not yet resumed)";
    else
      what = std::string(t.wait == Wait::barrier ? "__syncthreads" : op_name(t.op)) + " at " +
             where(t.site);
    auto g =
        std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.what == what; });
    if (g == groups.end()) {
      groups.push_back({what, {}});
      g = groups.end() - 1;
    }
    g->threads.push_back(t.linear);
  }
  auto ranges = [](const std::vector<unsigned>& v) {
    std::ostringstream o;
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::size_t j = i;
      while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
      o << (i ? "," : "") << v[i];
      if (j > i) o << ".." << v[j];
      i = j;
    }
    return o.str();
  };
  std::ostringstream o;
  if (running)
    o << "thread " << running->linear << " " << fmt_dim(running->thread_idx)
      << " is running and has not reached a barrier or collective; ";
  o << groups.size() << " wait site(s): ";
  for (std::size_t i = 0; i < groups.size(); ++i)
    o << (i ? "; " : "") << groups[i].what << ": " << groups[i].threads.size() << " thread(s) "
      << ranges(groups[i].threads);
  o << "; " << exited.size() << " thread(s) exited";
  if (!exited.empty()) o << " (" << ranges(exited) << ")";
  o << " [threads by linear index x + y*blockDim.x + z*blockDim.x*blockDim.y]";
  return o.str();
}

class Scheduler {
 public:
  explicit Scheduler(BlockRun& run) : r_(run) {}

  // Completes every collective whose participants have all arrived. At quiescence also
  // completes __activemask and collectives whose missing lanes have exited.
  bool resolve_warps(bool quiescent) {
    bool progressed = false;
    const int ws = r_.info.warp_size;
    const unsigned n = static_cast<unsigned>(r_.slots.size());
    for (unsigned w = 0; w < r_.warps; ++w) {
      const unsigned first = w * ws;
      const unsigned count = std::min<unsigned>(ws, n - first);
      const std::uint64_t exists = count >= 64 ? ~0ull : ((1ull << count) - 1);
      std::uint64_t done = 0, waiting = 0, activemask = 0;
      for (unsigned l = 0; l < count; ++l) {
        const ThreadCtx& t = r_.slots[first + l].ctx;
        if (t.wait == Wait::done) done |= 1ull << l;
        if (t.wait == Wait::warp_op) {
          if (t.op == WarpOp::activemask)
            activemask |= 1ull << l;
          else
            waiting |= 1ull << l;
        }
      }
      for (unsigned l = 0; l < count; ++l) {
        if (!(waiting >> l & 1)) continue;
        ThreadCtx& lead = r_.slots[first + l].ctx;
        std::uint64_t req = (effective_mask(lead.mask, ws) & exists) | (1ull << l);
        std::uint64_t live = req & ~done;
        std::uint64_t group = 0;
        bool same = true;
        for (unsigned k = 0; k < count; ++k) {
          if (!(live >> k & 1)) continue;
          const ThreadCtx& t = r_.slots[first + k].ctx;
          if (t.wait == Wait::warp_op && t.op == lead.op &&
              effective_mask(t.mask, ws) == effective_mask(lead.mask, ws))
            group |= 1ull << k;
          else
            same = false;
        }
        if (!same) continue;  // someone named in the mask is elsewhere: wait (or deadlock)
        if ((req & done) && !quiescent) continue;
        if (req & done) {
          if (r_.checking(check_synccheck))
            report("synccheck", r_.header() + " warp " + std::to_string(w) + ": " +
                                    op_name(lead.op) + " at " + where(lead.site) + " names lanes " +
                                    lanes(req & done) + " which have exited");
        }
        complete(first, count, group, lead);
        waiting &= ~group;
        progressed = true;
      }
      if (quiescent && activemask) {
        for (unsigned l = 0; l < count; ++l)
          if (activemask >> l & 1) {
            ThreadCtx& t = r_.slots[first + l].ctx;
            t.result = activemask;
            t.wait = Wait::running;
          }
        progressed = true;
      }
    }
    return progressed;
  }

  bool resolve_barrier() {
    std::size_t live = 0, at = 0;
    const ThreadCtx* first_at = nullptr;
    bool sites_differ = false;
    for (auto& s : r_.slots) {
      if (s.ctx.wait == Wait::done) continue;
      ++live;
      if (s.ctx.wait != Wait::barrier) continue;
      ++at;
      if (!first_at)
        first_at = &s.ctx;
      else if (s.ctx.site.line != first_at->site.line ||
               std::strcmp(s.ctx.site.file, first_at->site.file) != 0)
        sites_differ = true;
    }
    if (at == 0 || at != live) return false;
    if (r_.checking(check_synccheck)) {
      if (live != r_.slots.size())
        report("synccheck", r_.header() + ": __syncthreads at " + where(first_at->site) +
                                " is never reached by " + std::to_string(r_.slots.size() - live) +
                                " thread(s) of the block, which exited (divergent barrier)");
      if (sites_differ)
        report("synccheck", r_.header() + ": divergent __syncthreads: threads wait at " +
                                where(first_at->site) + " and at other barriers");
    }
    for (auto& s : r_.slots)
      if (s.ctx.wait == Wait::barrier) {
        s.ctx.wait = Wait::running;
        ++s.ctx.epoch;
      }
    return true;
  }

  // Nothing can progress: say where every blocked thread waits, grouped by site.
  std::string describe_deadlock() const {
    return r_.header() + ": deadlock: " + describe_waits(r_, nullptr);
  }

  void report(const char* check, const std::string& line) { r_.launch->report(check, line); }

 private:
  void complete(unsigned first, unsigned count, std::uint64_t group, const ThreadCtx& lead) {
    const int ws = r_.info.warp_size;
    int width = lead.width <= 0 ? ws : lead.width;
    if (width > ws || (width & (width - 1)) != 0) {
      if (r_.checking(check_synccheck))
        report("synccheck", r_.header() + ": " + op_name(lead.op) + " at " + where(lead.site) +
                                " with width " + std::to_string(width) +
                                ": allowed widths are powers of two up to warpSize " +
                                std::to_string(ws));
      width = ws;
    }
    if (lead.op == WarpOp::syncwarp && !r_.info.partial_syncwarp && r_.checking(check_synccheck)) {
      const std::uint64_t all = count >= 64 ? ~0ull : ((1ull << count) - 1);
      if ((effective_mask(lead.mask, ws) & all) != all)
        report("synccheck", r_.header() + ": __syncwarp at " + where(lead.site) +
                                " with a partial mask (lanes " +
                                lanes(effective_mask(lead.mask, ws) & all) +
                                "): profile does not support partial-mask __syncwarp");
    }
    std::uint64_t votes = 0;
    for (unsigned k = 0; k < count; ++k)
      if ((group >> k & 1) && r_.slots[first + k].ctx.arg) votes |= 1ull << k;
    for (unsigned l = 0; l < count; ++l) {
      if (!(group >> l & 1)) continue;
      ThreadCtx& t = r_.slots[first + l].ctx;
      if (r_.checking(check_synccheck) &&
          (t.site.line != lead.site.line || std::strcmp(t.site.file, lead.site.file) != 0))
        report("synccheck", r_.header() + ": lanes of warp " + std::to_string(first / ws) +
                                " meet in " + op_name(lead.op) + " from different places (" +
                                where(lead.site) + " and " + where(t.site) + ")");
      int src = -1;
      const int lane = static_cast<int>(l);
      const int seg = lane / width * width;
      switch (lead.op) {
        case WarpOp::shfl_idx:
          src = seg + ((t.arg % width) + width) % width;
          break;
        case WarpOp::shfl_up:
          src = lane - seg >= t.arg ? lane - t.arg : lane;
          break;
        case WarpOp::shfl_down:
          src = lane - seg + t.arg < width ? lane + t.arg : lane;
          break;
        case WarpOp::shfl_xor: {
          int x = lane ^ t.arg;
          src = (x >= seg + width || x >= ws) ? lane : x;
          break;
        }
        case WarpOp::ballot:
          t.result = votes;
          break;
        case WarpOp::any:
          t.result = votes != 0;
          break;
        case WarpOp::all:
          t.result = votes == group;
          break;
        default:
          break;
      }
      if (src >= 0) {
        if (src >= static_cast<int>(count) || !(group >> src & 1)) {
          if (r_.checking(check_synccheck))
            report("synccheck", r_.header() + ": lane " + std::to_string(lane) + " " +
                                    op_name(lead.op) + " at " + where(lead.site) + " reads lane " +
                                    std::to_string(src) +
                                    " which does not take part (undefined value)");
          src = lane;
        }
        std::memcpy(t.out, r_.slots[first + src].ctx.in, sizeof t.out);
      }
    }
    const std::uint32_t seq = ++r_.warp_seq[first / ws];
    for (unsigned l = 0; l < count; ++l)
      if (group >> l & 1) {
        r_.slots[first + l].ctx.wait = Wait::running;
        r_.slots[first + l].ctx.warp_sync = seq;
      }
  }

  BlockRun& r_;
};

}  // namespace

bool run_block(const BlockCtx& info, const std::function<void()>& body, Order order,
               std::uint64_t seed, LaunchRun& launch) {
  BlockRun run;
  run.info = info;
  run.body = &body;
  run.launch = &launch;
  const unsigned bx = info.block_dim.x, by = info.block_dim.y;
  const unsigned n = bx * by * info.block_dim.z;
  run.warps = (n + info.warp_size - 1) / info.warp_size;
  run.slots.resize(n);
  run.warp_seq.assign(run.warps, 0);
  StackPool& pool = stack_pool();
  ensure_signal_stack();
  for (unsigned i = 0; i < n; ++i) {
    auto& s = run.slots[i];
    s.ctx.thread_idx = uint3{i % bx, (i / bx) % by, i / (bx * by)};
    s.ctx.linear = i;
    s.ctx.lane = i % info.warp_size;
    s.ctx.warp = i / info.warp_size;
    s.ctx.block = &run;
    s.fiber = ctx::fiber(std::allocator_arg, PoolRef{&pool}, [&s, &run](ctx::fiber&& caller) {
      asan_arrive(s.stack, &s.caller_stack);
      s.caller = std::move(caller);
      try {
        (*run.body)();
      } catch (const ctx::detail::forced_unwind&) {
        asan_leave(s.stack, s.caller_stack, true);
        throw;
      } catch (const std::exception& e) {
        run.launch->report("kernel", run.header() + " thread " + fmt_dim(s.ctx.thread_idx) +
                                         ": exception: " + e.what());
      }
      s.ctx.wait = Wait::done;
      run.returning = &s;
      asan_leave(s.stack, s.caller_stack, true);
      return std::move(s.caller);
    });
    s.stack = pool.last_allocated();
  }
  std::vector<unsigned> sequence(n);
  for (unsigned i = 0; i < n; ++i) sequence[i] = order == Order::reversed ? n - 1 - i : i;
  std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ull * (info.block_idx.x + 1)) ^
                      (std::uint64_t(info.block_idx.y) << 32) ^ info.block_idx.z);
  Scheduler sched(run);
  AsanStack host;  // this host thread's own stack, as ASan sees it
  tls_block = &run.info;
  HostProgress& progress = host_progress();
  progress.block.store(&run);
  run.progress = &progress;
#ifndef EMU_ASAN_FIBERS
  run.handoff = order == Order::in_order;
#endif
  bool ok = true;
  // Outside the in-order pass (racecheck's reordering passes), each warp in turn runs as
  // far as it can, through its own collectives, before the next starts: a warp does not
  // wait for the others at a shuffle, as on a GPU, so a race between warps separated only
  // by a collective shows as a different result.
  std::vector<std::vector<unsigned>> by_warp(order == Order::in_order ? 0 : run.warps);
  auto run_lanes = [&](const std::vector<unsigned>& lanes) {
    bool ran = false;
    for (unsigned i : lanes) {
      auto& s = run.slots[i];
      if (s.ctx.wait != Wait::running) continue;
      progress.fiber.store(&s.ctx, std::memory_order_relaxed);
      resume_fiber(run, s, host);
      ran = true;
    }
    return ran;
  };
  for (;;) {
    if (order == Order::random) std::shuffle(sequence.begin(), sequence.end(), rng);
    if (order == Order::in_order) {
      run_lanes(sequence);
    } else {
      std::vector<unsigned> warp_order;
      for (auto& w : by_warp) w.clear();
      for (unsigned i : sequence) {
        const unsigned w = run.slots[i].ctx.warp;
        if (by_warp[w].empty()) warp_order.push_back(w);
        by_warp[w].push_back(i);
      }
      for (unsigned w : warp_order)
        while (run_lanes(by_warp[w]) && sched.resolve_warps(false)) {
        }
    }
    bool all_done = true;
    for (const auto& s : run.slots) all_done = all_done && s.ctx.wait == Wait::done;
    if (all_done) break;
    bool progressed = sched.resolve_warps(false);
    progressed = sched.resolve_barrier() || progressed;
    if (!progressed) progressed = sched.resolve_warps(true);
    if (!progressed) {
      sched.report("synccheck", sched.describe_deadlock());
      ok = false;
      break;
    }
  }
  // Abandoned fibers unwind their stacks when destroyed (Boost.Context forced unwind).
  for (auto& s : run.slots) {
    tls_thread = &s.ctx;
    const bool live = static_cast<bool>(s.fiber);  // unfinished: destroying it unwinds it
    if (live) asan_leave(host, s.stack);
    s.fiber = ctx::fiber();
    if (live) asan_arrive(host, nullptr);
  }
  tls_thread = nullptr;
  tls_block = nullptr;
  progress.fiber.store(nullptr);
  progress.block.store(nullptr);
  return ok;
}

void describe_stuck_block(const BlockRun& block, const ThreadCtx* running, double idle_s) {
  std::fprintf(stderr, "synccheck: watchdog: %s: after %.0f s: %s\n", block.header().c_str(),
               idle_s, describe_waits(block, running).c_str());
}

std::uint32_t current_warp_sync(const ThreadCtx& any, unsigned linear) {
  return any.block->slots[linear].ctx.warp_sync;
}

}  // namespace emu::detail
