// Global-memory traffic: the bytes a launch's GPU threads read and wrote in device
// allocations (cudaMalloc memory), in all and per allocation. Off unless asked for
// (set_count_traffic or EMU_COUNT_TRAFFIC=1). Counted from the compiler's
// instrumentation of the kernel's loads and stores (the hooks racecheck's hazard mode
// uses): build the kernel's sources with pagedattn_emulator_race_instrumentation(<target>);
// a launch of an uninstrumented kernel counts nothing and says so (`instrumented`).
// Every load and store counts its full size: a byte read twice counts twice, as two
// loads move it twice (no cache is modelled). Atomics and accesses outside device
// allocations (shared memory, the stack, host memory) are not counted.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace emu {

struct AllocationTraffic {
  std::uint64_t id = 0;  // cudaMalloc's allocation number, as findings name it
  const void* data = nullptr;
  std::size_t size = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0;
};

struct LaunchTraffic {
  std::string kernel;
  bool instrumented = false;  // an instrumented load or store ran during the launch
  std::uint64_t bytes_read = 0, bytes_written = 0;  // the sums over `allocations`
  std::vector<AllocationTraffic> allocations;       // every allocation live at the launch
  // The allocation holding `p`, or null.
  const AllocationTraffic* find(const void* p) const;
};

// The last set_count_traffic, else $EMU_COUNT_TRAFFIC ("1" counts), else off.
void set_count_traffic(bool on);
bool count_traffic();
// Launches on the calling host thread since the last take (in launch order), while
// counting was on; clears the list. Only the first pass of a racecheck/initcheck launch
// counts (the others replay it).
std::vector<LaunchTraffic> take_launch_traffic();

}  // namespace emu
