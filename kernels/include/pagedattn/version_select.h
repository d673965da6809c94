// Choosing V1 or V2 per call from the device's facts rather than from constants tuned
// for one GPU.
//
// vLLM's rule (vllm/attention/ops/paged_attn.py): V1 when max_seq_len <= 8192 and
// (max_num_partitions == 1 or num_seqs * num_heads > 512). Its constants encode an
// H100-class device (512 ~ 4 blocks per SM on ~132 SMs) and assume V1 always fits in
// shared memory, which on BI-V100 it does not (V1's logits need 4 bytes per token).
//
// Ours, in order:
//   1. V2 if V1's shared memory at this max_seq_len exceeds the device's opt-in limit
//      (V1 would fail to launch);
//   2. V1 if there is one partition (V2 would only add the reduce);
//   3. V2 if max_seq_len > 8192 (vLLM's bound on one block's serial walk, kept);
//   4. V1 if num_seqs * num_heads >= 4 * multiprocessor_count (enough blocks to fill the
//      device; this is vLLM's 512 on a 128-SM device, 64 on BI-V100's 16 units);
//   5. V2 otherwise: partitions add the parallelism the grid lacks.
// The overload taking a perf::Device keeps rules 1 and 2 and then takes whichever version
// the performance model (perfmodel/README.md) predicts faster for this call.
#pragma once
#include <cstdint>
#include <string>
#include "pagedattn/params.h"  // Kernel
#include "pagedattn/workload.h"

namespace pagedattn {
namespace perf {
struct Device;
}

struct DeviceFacts {
  std::string name;
  int warp_size = 32;
  int multiprocessor_count = 1;
  std::int64_t shared_memory_per_block_optin = 48 * 1024;
};

// A version is the attention kernel to launch: Kernel::v1 or Kernel::v2.
using Version = Kernel;

// Which rule decided (the numbered rules above; modelled_faster: the perf::Device overload
// after rules 1 and 2). Code branches on this; `reason` is for people.
enum class VersionRule : std::uint8_t {
  v1_does_not_fit,        // 1
  one_partition,          // 2
  long_sequence,          // 3
  grid_fills_device,      // 4
  grid_needs_partitions,  // 5
  modelled_faster,
};

struct VersionChoice {
  Version version = Version::v1;
  VersionRule rule = VersionRule::one_partition;
  std::string reason;  // the rule in words, with its numbers
};

// Rules 1 to 5 from the device's facts (w.num_kv_heads and the element sizes do not enter).
VersionChoice choose_version(const DeviceFacts& device, const Workload& w);

// Rules 1 and 2, then the modelled faster version; the reason quotes both times.
VersionChoice choose_version(const perf::Device& device, const Workload& w);

// vLLM's rule, for comparison (its V1 assumes shared memory never runs out).
Version vllm_choose_version(const Workload& w);

}  // namespace pagedattn
