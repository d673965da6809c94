// Global-memory bytes the kernels' launches move, as the emulator counts them
// (emulator/include/emu/traffic.h). Counting needs the race-instrumented kernels, which
// the `pagedattn` program does not link: this runs `pagedattn-traffic` (tools/
// traffic_main.cpp), found in the folder of the running program, and reads its JSON.
// `pagedattn limits --traffic` and `pagedattn audit --traffic` use it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pagedattn/params.h"

namespace pagedattn::audit {

// The call to measure: one shape, its sequence lengths, and which kernels.
struct TrafficQuery {
  std::string profile = "bi-v100";
  std::string dtype = "f16";            // f32, f16, bf16
  std::string kv_cache_dtype = "auto";  // auto, fp8_e4m3, fp8_e5m2
  int num_heads = 32, num_kv_heads = 8, head_size = 128, block_size = 16;
  int partition_size = 512;
  std::vector<int> seq_lens{1000};
  bool alibi = false;
  NumericsChoices choices{};     // effective_choices(options): tmp_out's dtype among them
  std::string kernel = "both";   // v1, v2, both
  std::string variant = "both";  // ungrouped, grouped, both
};

// One launch: the attention kernel, or V2's reduce.
struct LaunchBytes {
  std::string kernel;         // the emulated kernel's name
  std::string role;           // "attention" or "reduce"
  bool instrumented = false;  // false: this build's helper has no counting copy of it
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::uint64_t kv_bytes_read = 0;  // of bytes_read, from key_cache and value_cache
};

// One kernel call (V1, or V2 then its reduce) per query head or grouped.
struct TrafficRun {
  std::string kernel, variant;   // "v1"/"v2", "ungrouped"/"grouped"
  std::string status, reason;    // "ok", "refused", "error"; why not ok
  std::string grouped_fallback;  // grouped_launch_fallback_reason, "" when grouped launched
  std::vector<LaunchBytes> launches;
  // Why these are not measured bytes ("" when they are: launched, every launch counted).
  std::string absent_reason() const;
  std::uint64_t bytes_read() const;
  std::uint64_t bytes_written() const;
  std::uint64_t kv_bytes_read() const;
};

struct Traffic {
  // What exists: live K and V elements of every sequence (seq_len * 2 * num_kv_heads *
  // head_size * cache element bytes), the query tensor and the block table.
  std::uint64_t kv_bytes_exist = 0, query_bytes = 0, block_table_bytes = 0;
  std::vector<TrafficRun> runs;  // v1 then v2; each ungrouped then grouped, as asked
};

// `pagedattn-traffic` beside the running program.
std::string traffic_helper_path();
// Throws std::runtime_error naming the path, and how to build it, when it is absent.
void require_traffic_helper();
// Runs the helper. Throws std::runtime_error naming the helper's path when it is absent
// (and how to build it) or fails (with its message).
Traffic measure_traffic(const TrafficQuery& q);

}  // namespace pagedattn::audit
