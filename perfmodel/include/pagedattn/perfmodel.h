// A first-order performance model of the PagedAttention kernels (V1, V2 and V2's reduce)
// on a device profile: bytes moved, FLOPs, occupancy, waves over the compute units, a
// roofline-style time and the launch overhead. Assumptions and the published numbers it
// is checked against: perfmodel/README.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "pagedattn/params.h"  // Kernel
#include "pagedattn/workload.h"

namespace emu {
struct Profile;
}

namespace pagedattn::perf {

// One model constant with where it came from (the profile files' convention).
struct Param {
  double value = 0;
  std::string source;
  std::string confidence;
};

// What the model knows of a device: the emulator profile's facts plus the
// "performance_model" object of the same profile file.
struct Device {
  std::string name;
  int warp_size = 32;
  int multiprocessor_count = 1;
  std::int64_t shared_memory_per_block_optin = 48 * 1024;
  std::int64_t shared_memory_per_multiprocessor = 64 * 1024;
  int max_threads_per_multiprocessor = 2048;
  double clock_mhz = 1000;
  // The profile's, the one bandwidth figure: the peak (a datasheet's or vendor's); the model
  // reaches bandwidth_efficiency of it and reports bandwidth fractions against it.
  double memory_bandwidth_gbps = 900;
  double fp32_tflops = 10;
  // performance_model fields (defaults: the A100 calibration, README.md).
  std::map<std::string, Param> model;
  double param(const std::string& key) const;
};

// Names and defaults of the performance_model fields.
const std::map<std::string, Param>& default_params();

// From an emulator profile; reads "performance_model" from profile.file when it names a
// file, else from the source/installed profile folder. Throws std::runtime_error naming
// the file and field for a malformed model.
Device device_from_profile(const emu::Profile& profile);
// Loads by name or path (emu::load_profile) then device_from_profile.
Device load_device(const std::string& name_or_path);

// The shape of the modelled call (pagedattn/workload.h); every sequence is max_seq_len long.
using Workload = pagedattn::Workload;

struct KernelEstimate {
  Kernel kernel = Kernel::v1;  // kernel_name(): "v1", "v2", "reduce"
  bool grouped = false;        // the grouped kernel (Options::grouped; resources.h HeadGroups)
  bool launchable = true;
  std::string reason;  // why not, when not launchable (grouped: grouped_fallback_reason too)
  std::int64_t blocks = 0;
  int heads_per_block = 1;  // query heads a block serves (grouped: HeadGroups::heads_per_block)
  int threads_per_block = 128;
  std::int64_t smem_bytes = 0;
  int resident_blocks_per_sm = 0;
  std::string occupancy_limiter;  // "threads", "registers", "shared memory", "blocks"
  double occupancy = 0;           // resident threads / max threads per SM
  double waves = 0;               // blocks / (SMs * resident blocks per SM)
  double dram_bytes = 0;          // unique bytes to and from device memory
  // K and V bytes the blocks load, before any cache (what the emulator counts, emu/traffic.h):
  // a KV head's span once per block that serves its heads, so ratio times per head, once
  // (per head group) grouped.
  double kv_load_bytes = 0;
  double flops = 0;
  double t_issue_us = 0;   // the busiest SM's block work
  double t_memory_us = 0;  // dram_bytes at the achievable bandwidth
  double t_flops_us = 0;   // flops at the fp32 peak
  double t_launch_us = 0;
  double time_us = 0;             // max(issue, memory, flops) + launch
  std::string bound;              // "issue", "memory" or "flops"
  double bandwidth_fraction = 0;  // dram_bytes / time / memory_bandwidth_gbps
};

struct Estimate {
  KernelEstimate v1, v2, reduce;
  KernelEstimate v1_grouped, v2_grouped;  // grouped V2 is followed by the same reduce
  double v1_us = 0;                       // infinity when V1 cannot launch
  double v2_us = 0;                       // V2 + reduce
  double v1_grouped_us = 0;               // infinity where grouped V1 cannot launch or falls back
  double v2_grouped_us = 0;               // grouped V2 + reduce; infinity likewise
};

Estimate estimate(const Device& device, const Workload& w);

// The four ways to run a call, for comparing modelled times.
enum class Variant : std::uint8_t { v1, v2, v1_grouped, v2_grouped };
const char* variant_name(Variant v);           // "V1", "V2", "grouped V1", "grouped V2"
double time_us(const Estimate& e, Variant v);  // V2's include the reduce

// The shortest max_seq_len (searched on a grid of `step` tokens up to `max_len`) from which
// `later`'s modelled time is below `first`'s (by default: V2 below V1, or V1 stops
// fitting); 0 if it never is up to max_len.
std::int64_t crossover_seq_len(const Device& device, Workload w, std::int64_t max_len,
                               std::int64_t step, Variant first = Variant::v1,
                               Variant later = Variant::v2);

}  // namespace pagedattn::perf
