// A launch: the driver's configuration checks against the profile, then the grid.
// Without racecheck/initcheck, blocks are spread over host threads (any block on any
// thread; blocks are independent, so results never depend on the thread count). With
// them, the grid runs several times on the calling thread under different thread
// orders and shared-memory poisons, from the same device-memory snapshot, and any
// difference in the results is a finding.
#include <cxxabi.h>
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "emu/check_coverage.h"
#include "emu/dynamic_shared.h"
#include "emu/launch.h"
#include "emu/profile.h"
#include "elf_symbols.h"
#include "hazard.h"
#include "internal.h"
#include "tls.h"
#include "traffic.h"
#include "watchdog.h"
#include "worker_pool.h"

namespace emu::detail {

namespace {
std::mutex g_attr_mutex;
// set_max_dynamic_shared_memory, per (profile name, kernel): a function attribute is per device.
std::map<std::pair<std::string, const void*>, int> g_max_dynamic_smem;
}  // namespace

namespace {
std::string find_kernel_name(const void* address);
}  // namespace

// Demangled once per kernel address (each launch names its kernel).
std::string kernel_name(const void* address) {
  static std::mutex mutex;
  static auto* names = new std::map<const void*, std::string>;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = names->find(address);
    if (it != names->end()) return it->second;
  }
  std::string name = find_kernel_name(address);
  std::lock_guard<std::mutex> lock(mutex);
  return names->emplace(address, std::move(name)).first->second;
}

namespace {
std::string find_kernel_name(const void* address) {
  Dl_info info{};
  // Needs the symbol in the dynamic table: the emulator target links with -rdynamic.
  if (dladdr(address, &info) && info.dli_sname && info.dli_saddr == address) {
    int status = 0;
    char* d = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string name = status == 0 && d ? d : info.dli_sname;
    std::free(d);
    return name;
  }
  // Kernels with internal linkage are not in the dynamic table: use the symbol table.
  const std::string mangled = kernel_symbols(address).mangled;
  if (!mangled.empty()) {
    int status = 0;
    char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    std::string name = status == 0 && d ? d : mangled;
    std::free(d);
    return name;
  }
  std::ostringstream o;
  o << "kernel@" << address;
  return o.str();
}
}  // namespace

namespace {

constexpr unsigned char kPoisonA = 0xFF;  // NaN for floats
constexpr unsigned char kPoisonB = 0x00;

std::string grid_message(const char* what, const Profile& p, dim3 v, const std::string& limit) {
  std::ostringstream o;
  o << what << " (" << v.x << "," << v.y << "," << v.z << ") exceeds the profile '" << p.name
    << "' limit " << limit;
  return o.str();
}

cudaError_t check_config(const void* kernel, dim3 grid, dim3 block, std::size_t smem,
                         const Profile& p) {
  std::ostringstream o;
  if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
    return set_error(cudaErrorInvalidConfiguration,
                     "invalid configuration: grid and block dimensions must be at least 1");
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads > static_cast<unsigned long long>(p.max_threads_per_block)) {
    o << "invalid configuration: a block of " << threads
      << " threads exceeds max_threads_per_block " << p.max_threads_per_block << " of profile '"
      << p.name << "'";
    return set_error(cudaErrorInvalidConfiguration, o.str());
  }
  if (block.x > static_cast<unsigned>(p.max_block_dim[0]) ||
      block.y > static_cast<unsigned>(p.max_block_dim[1]) ||
      block.z > static_cast<unsigned>(p.max_block_dim[2]))
    return set_error(cudaErrorInvalidConfiguration,
                     grid_message("invalid configuration: block", p, block,
                                  "max_block_dim (" + std::to_string(p.max_block_dim[0]) + "," +
                                      std::to_string(p.max_block_dim[1]) + "," +
                                      std::to_string(p.max_block_dim[2]) + ")"));
  if (grid.x > p.max_grid_dim[0] || grid.y > p.max_grid_dim[1] || grid.z > p.max_grid_dim[2])
    return set_error(cudaErrorInvalidConfiguration,
                     grid_message("invalid configuration: grid", p, grid,
                                  "max_grid_dim (" + std::to_string(p.max_grid_dim[0]) + "," +
                                      std::to_string(p.max_grid_dim[1]) + "," +
                                      std::to_string(p.max_grid_dim[2]) + ")"));
  long long allowed = p.shared_memory_per_block;
  bool opted = false;
  {
    std::lock_guard<std::mutex> lock(g_attr_mutex);
    auto it = g_max_dynamic_smem.find({p.name, kernel});
    if (it != g_max_dynamic_smem.end()) {
      // A profile file reloaded with a lower ceiling ($EMU_PROFILE_SET) caps an earlier opt-in.
      allowed = std::max<long long>(
          allowed, std::min<long long>(it->second, p.shared_memory_per_block_optin));
      opted = true;
    }
  }
  // Static __shared__ arrays count too, as on the device: with no opt-in, static plus
  // dynamic must fit the default; with one, dynamic must fit the opt-in value and static
  // plus dynamic the profile's ceiling.
  const long long stat = static_cast<long long>(kernel_symbols(kernel).static_shared_bytes);
  const long long dyn = static_cast<long long>(smem);
  const bool over = opted ? (dyn > allowed || stat + dyn > p.shared_memory_per_block_optin)
                          : stat + dyn > p.shared_memory_per_block;
  if (over) {
    o << "too much shared memory: the launch of " << kernel_name(kernel) << " asks for " << smem
      << " bytes of dynamic shared memory";
    if (stat) o << " plus " << stat << " bytes of static __shared__ arrays";
    o << "; profile '" << p.name << "' allows "
      << (opted ? std::min<long long>(allowed, p.shared_memory_per_block_optin - stat)
                : p.shared_memory_per_block - stat)
      << " bytes of dynamic shared memory here";
    if (!opted && stat + dyn <= p.shared_memory_per_block_optin)
      o << " without cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) ("
        << p.shared_memory_per_block_optin - stat << " with it)";
    else
      o << " (shared_memory_per_block_optin " << p.shared_memory_per_block_optin << ")";
    return set_error(cudaErrorInvalidValue, o.str());
  }
  if (smem > EMU_DYNAMIC_SMEM_CAPACITY) {
    o << "too much shared memory: " << smem << " bytes exceed the emulator's pool of "
      << EMU_DYNAMIC_SMEM_CAPACITY << " (rebuild with a larger EMU_DYNAMIC_SMEM_CAPACITY)";
    return set_error(cudaErrorInvalidValue, o.str());
  }
  return cudaSuccess;
}

BlockCtx block_ctx(unsigned long long linear, dim3 grid, dim3 block, const Profile& p,
                   const char* name) {
  BlockCtx b;
  b.block_idx =
      uint3{static_cast<unsigned>(linear % grid.x), static_cast<unsigned>(linear / grid.x % grid.y),
            static_cast<unsigned>(linear / (1ull * grid.x * grid.y))};
  b.block_dim = block;
  b.grid_dim = grid;
  b.warp_size = p.warp_size;
  b.partial_syncwarp = p.partial_mask_syncwarp;
  b.kernel = name;
  return b;
}

struct Pass {
  Order order;
  unsigned char shared_poison;
  const char* check;  // the check a difference from the first pass reports
  const char* what;
  bool hazard = false;  // racecheck's shadow memory watches this pass
};

// Runs every block on the calling thread, poisoning shared memory first.
bool run_serial(const KernelEntry& k, dim3 grid, dim3 block, std::size_t smem, const Profile& p,
                const char* name, const Pass& pass, LaunchRun& run) {
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  for (unsigned long long b = 0; b < blocks && !run.aborted; ++b) {
    prepare_dynamic_shared(smem, pass.shared_poison);
    poison_named_dynamic_shared(smem, pass.shared_poison);
    TlsSnapshot tls = poison_module_tls(k.address, pass.shared_poison);
    if (run.checks & check_memcheck) arm_shared_guards(smem, run);
    if (pass.hazard) hazard_block(b);
    BlockCtx ctx = block_ctx(b, grid, block, p, name);
    if (!run_block(ctx, k.body, pass.order, 0x5eed, run)) run.aborted = true;
    // Disarmed wholly: the next block's module TLS poisoning writes over the pool's pages.
    if (run.checks & check_memcheck) disarm_shared_guards(run, ctx.block_idx, false);
    restore_module_tls(tls);
  }
  return !run.aborted;
}

void run_parallel(const KernelEntry& k, dim3 grid, dim3 block, std::size_t smem, const Profile& p,
                  const char* name, bool poison, LaunchRun& run, TrafficRun* traffic) {
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  std::atomic<unsigned long long> next{0};
  // The blocks a host thread runs here keep the extern pool's guards armed between them;
  // they are opened when it leaves the launch (shared_memcheck.cpp).
  struct OpenGuardsAtEnd {
    bool memcheck;
    ~OpenGuardsAtEnd() {
      if (memcheck) open_shared_guards();
    }
  };
  const std::function<void()> worker = [&] {
    const TrafficScope counting(traffic);
    const OpenGuardsAtEnd open_at_end{(run.checks & check_memcheck) != 0};
    for (;;) {
      unsigned long long b = next.fetch_add(1);
      if (b >= blocks) break;
      {
        std::lock_guard<std::mutex> lock(run.mutex);
        if (run.aborted) break;
      }
      prepare_dynamic_shared(smem, kPoisonA);
      if (poison) poison_named_dynamic_shared(smem, kPoisonA);
      if (run.checks & check_memcheck) arm_shared_guards(smem, run);
      BlockCtx ctx = block_ctx(b, grid, block, p, name);
      const bool ok = run_block(ctx, k.body, Order::in_order, 0, run);
      if (run.checks & check_memcheck) disarm_shared_guards(run, ctx.block_idx, true);
      if (!ok) {
        std::lock_guard<std::mutex> lock(run.mutex);
        run.aborted = true;
      }
    }
  };
  const int n = static_cast<int>(std::min<unsigned long long>(host_threads(), blocks));
  if (n <= 1) {
    worker();
    return;
  }
  WorkerPool::instance().run(n - 1, worker);
}

using Image = std::vector<std::vector<unsigned char>>;
Image capture(const std::vector<AllocationInfo>& allocs) {
  Image img;
  for (const auto& a : allocs) {
    auto* p = reinterpret_cast<const unsigned char*>(a.data);
    img.emplace_back(p, p + a.size);
  }
  return img;
}
void restore(const std::vector<AllocationInfo>& allocs, const Image& img) {
  for (std::size_t i = 0; i < allocs.size(); ++i)
    std::memcpy(reinterpret_cast<void*>(allocs[i].data), img[i].data(), img[i].size());
}

void compare(const std::vector<AllocationInfo>& allocs, const Image& a, const Image& b,
             const Pass& pass, LaunchRun& run) {
  for (std::size_t i = 0; i < allocs.size(); ++i) {
    for (std::size_t off = 0; off < a[i].size(); ++off) {
      if (a[i][off] == b[i][off]) continue;
      std::ostringstream o;
      o << "kernel " << run.kernel << ": device allocation #" << allocs[i].id << " byte offset "
        << off << " differs (" << int(a[i][off]) << " vs " << int(b[i][off]) << ") when "
        << pass.what;
      run.report(pass.check, o.str());
      break;
    }
  }
}

}  // namespace

cudaError_t launch_grid(const KernelEntry& k, dim3 grid, dim3 block, std::size_t smem) {
  return launch_grid(k, grid, block, smem, current_profile());
}

cudaError_t launch_grid(const KernelEntry& k, dim3 grid, dim3 block, std::size_t smem,
                        const Profile& p) {
  cudaError_t e = check_config(k.address, grid, block, smem, p);
  if (e != cudaSuccess) return e;
  install_fault_handler();
  const std::string name = kernel_name(k.address);
  LaunchRun run;
  run.kernel = name.c_str();
  run.kernel_address = k.address;
  run.checks = enabled_checks();
  count_launch(run.checks);  // emu/check_coverage.h: which checks ran, for reports
  const WatchdogScope watchdog(run.kernel);
  TrafficRun* const traffic = traffic_begin(name);
  const bool differential =
      run.checks & (check_racecheck | check_racecheck_reorder | check_initcheck);
  if (!differential) {
    run_parallel(k, grid, block, smem, p, run.kernel, run.checks != 0, run, traffic);
  } else {
    static std::mutex serial;  // snapshots assume no other launch writes device memory meanwhile
    std::lock_guard<std::mutex> lock(serial);
    const auto allocs = allocations();
    const Image before = capture(allocs);
    std::vector<Pass> passes{{Order::in_order, kPoisonA, "", "", true}};
    passes[0].hazard = run.checks & check_racecheck;
    if (run.checks & (check_racecheck | check_racecheck_reorder)) {
      passes.push_back({Order::reversed, kPoisonA, "racecheck",
                        "threads run in reverse order instead of in order (a shared-memory or "
                        "global-memory race between barriers)"});
      passes.push_back({Order::random, kPoisonA, "racecheck",
                        "threads run in a seeded random order instead of in order (a race "
                        "between barriers)"});
    }
    if (run.checks & check_initcheck)
      passes.push_back({Order::in_order, kPoisonB, "initcheck",
                        "shared memory starts filled with 0x00 instead of 0xff (a read of "
                        "never-written shared memory)"});
    Image first;
    for (std::size_t i = 0; i < passes.size() && !run.aborted; ++i) {
      if (i > 0) restore(allocs, before);
      if (passes[i].hazard) hazard_begin(k.address, run);
      {
        const TrafficScope counting(i == 0 ? traffic : nullptr);  // the others replay it
        run_serial(k, grid, block, smem, p, run.kernel, passes[i], run);
      }
      if (passes[i].hazard) hazard_end();
      Image now = capture(allocs);
      if (i == 0)
        first = std::move(now);
      else if (!run.aborted)
        compare(allocs, first, now, passes[i], run);
    }
    if (!run.aborted) restore(allocs, first);
  }
  traffic_end(traffic);
  rearm_guards();
  for (const std::string& line : take_fault_reports())
    if (run.checks & check_memcheck) run.report("memcheck", line.substr(std::strlen("memcheck: ")));
  memcheck_launch_end(run);

  auto& c = cold_tls();
  if (!c.last_findings) c.last_findings = new std::vector<Finding>();
  *c.last_findings = run.findings;
  if (run.findings.empty()) return cudaSuccess;
  std::string all;
  bool memory = false;
  for (const auto& f : run.findings) {
    all += (all.empty() ? "" : "\n") + f.message;
    memory = memory || f.check == "memcheck";
  }
  const cudaError_t code = memory ? cudaErrorIllegalAddress : cudaErrorLaunchFailure;
  set_pending_sync_error(code);
  return set_error(code, all);
}

}  // namespace emu::detail

namespace emu {

cudaError_t set_max_dynamic_shared_memory(const Profile& p, const void* func, int value) {
  if (!func)
    return detail::set_error(cudaErrorInvalidDeviceFunction, "cudaFuncSetAttribute: func is null");
  const long long stat = static_cast<long long>(detail::kernel_symbols(func).static_shared_bytes);
  if (value < 0 || value + stat > p.shared_memory_per_block_optin) {
    std::ostringstream o;
    o << "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, " << value
      << "): profile '" << p.name << "' allows 0.." << p.shared_memory_per_block_optin - stat
      << " bytes (shared_memory_per_block_optin " << p.shared_memory_per_block_optin;
    if (stat) o << " less " << stat << " bytes of static __shared__ arrays";
    o << ")";
    return detail::set_error(cudaErrorInvalidValue, o.str());
  }
  std::lock_guard<std::mutex> lock(detail::g_attr_mutex);
  detail::g_max_dynamic_smem[{p.name, func}] = value;
  return cudaSuccess;
}

}  // namespace emu
