// Global-memory traffic per launch and per allocation (emu/traffic.h). Each host thread
// that runs blocks counts into its own arrays, found through its cold thread-local state;
// the instrumentation hook looks the address up among the launch's allocations (the last
// one hit first, then a binary search) and adds the access's size.
#include "traffic.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "emu/traffic.h"
#include "tls.h"

namespace emu::detail {

namespace {

struct Counts {
  TrafficRun* run;
  std::vector<std::uint64_t> read, written;
  std::size_t last = 0;
  bool instrumented = false;
};

int g_count = -1;  // -1: not set, read $EMU_COUNT_TRAFFIC

std::vector<LaunchTraffic>*& traffic_log() {
  return reinterpret_cast<std::vector<LaunchTraffic>*&>(cold_tls().traffic_log);
}

}  // namespace

TrafficScope::TrafficScope(TrafficRun* run) : run_(run) {
  if (!run) return;
  auto* c = new Counts{run, std::vector<std::uint64_t>(run->allocs.size()),
                       std::vector<std::uint64_t>(run->allocs.size())};
  counts_ = c;
  cold_tls().traffic = c;
}

TrafficScope::~TrafficScope() {
  if (!run_) return;
  auto* c = static_cast<Counts*>(counts_);
  cold_tls().traffic = nullptr;
  {
    std::lock_guard<std::mutex> lock(run_->mutex);
    for (std::size_t i = 0; i < c->read.size(); ++i) {
      run_->read[i] += c->read[i];
      run_->written[i] += c->written[i];
    }
    run_->instrumented = run_->instrumented || c->instrumented;
  }
  delete c;
}

TrafficRun* traffic_begin(const std::string& kernel) {
  if (!count_traffic()) return nullptr;
  auto* r = new TrafficRun();
  r->kernel = kernel;
  r->allocs = allocations();
  std::sort(r->allocs.begin(), r->allocs.end(),
            [](const AllocationInfo& x, const AllocationInfo& y) { return x.data < y.data; });
  r->read.assign(r->allocs.size(), 0);
  r->written.assign(r->allocs.size(), 0);
  return r;
}

void traffic_end(TrafficRun* run) {
  if (!run) return;
  LaunchTraffic t;
  t.kernel = run->kernel;
  t.instrumented = run->instrumented;
  for (std::size_t i = 0; i < run->allocs.size(); ++i) {
    const AllocationInfo& a = run->allocs[i];
    t.allocations.push_back(
        {a.id, reinterpret_cast<const void*>(a.data), a.size, run->read[i], run->written[i]});
    t.bytes_read += run->read[i];
    t.bytes_written += run->written[i];
  }
  delete run;
  auto*& log = traffic_log();
  if (!log) log = new std::vector<LaunchTraffic>();
  log->push_back(std::move(t));
}

void traffic_access(const void* address, std::size_t bytes, bool write) {
  auto* c = static_cast<Counts*>(cold_tls().traffic);
  if (!c) return;
  c->instrumented = true;
  const auto x = reinterpret_cast<std::uintptr_t>(address);
  const std::vector<AllocationInfo>& v = c->run->allocs;
  std::size_t i = c->last;
  if (!(i < v.size() && x >= v[i].data && x - v[i].data < v[i].size)) {
    auto it =
        std::upper_bound(v.begin(), v.end(), x,
                         [](std::uintptr_t p, const AllocationInfo& a) { return p < a.data; });
    if (it == v.begin()) return;
    --it;
    if (x - it->data >= it->size) return;  // shared memory, the stack, host memory
    i = static_cast<std::size_t>(it - v.begin());
    c->last = i;
  }
  (write ? c->written : c->read)[i] += bytes;
}

}  // namespace emu::detail

namespace emu {

const AllocationTraffic* LaunchTraffic::find(const void* p) const {
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  for (const AllocationTraffic& a : allocations) {
    const auto b = reinterpret_cast<std::uintptr_t>(a.data);
    if (x >= b && x - b < a.size) return &a;
  }
  return nullptr;
}

void set_count_traffic(bool on) {
  detail::g_count = on ? 1 : 0;
}

bool count_traffic() {
  if (detail::g_count < 0) {
    const char* e = std::getenv("EMU_COUNT_TRAFFIC");
    detail::g_count = e && std::strcmp(e, "1") == 0 ? 1 : 0;
  }
  return detail::g_count == 1;
}

std::vector<LaunchTraffic> take_launch_traffic() {
  auto*& log = detail::traffic_log();
  if (!log) return {};
  std::vector<LaunchTraffic> out = std::move(*log);
  log->clear();
  return out;
}

}  // namespace emu
