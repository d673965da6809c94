// Global-memory traffic counting (emu/traffic.h): launch_grid opens a TrafficRun, every
// host thread running its blocks counts into its own TrafficCounts (no shared write per
// access), and the run sums them when the launch ends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>
#include "internal.h"

namespace emu::detail {

struct TrafficRun {
  std::string kernel;
  std::vector<AllocationInfo> allocs;  // sorted by data
  std::mutex mutex;
  std::vector<std::uint64_t> read, written;  // per allocation, the merged counts
  bool instrumented = false;
};

// A host thread's counts for one launch; installed for the blocks it runs.
class TrafficScope {
 public:
  explicit TrafficScope(TrafficRun* run);  // null: no counting
  ~TrafficScope();                         // merges into the run
  TrafficScope(const TrafficScope&) = delete;
  TrafficScope& operator=(const TrafficScope&) = delete;

 private:
  TrafficRun* run_;
  void* counts_ = nullptr;
};

// Null when counting is off.
TrafficRun* traffic_begin(const std::string& kernel);
// Logs the launch on the calling thread and frees the run.
void traffic_end(TrafficRun* run);

// Called by the instrumentation for every load and store of instrumented code.
void traffic_access(const void* address, std::size_t bytes, bool write);

}  // namespace emu::detail
