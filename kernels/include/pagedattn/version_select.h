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
//
// Grouped or per head (Options::grouped: one block serves the query heads of a KV head and
// reads its KV span once for all of them):
//   G1. per head where grouped_fallback_reason(w) says the grouped kernels would fall back
//       (one query head per KV head, or a shape they are not built for);
//   G2. else the rules above for the grouped kernels (their shared memory in rule 1, their
//       grid of num_seqs x num_kv_heads x blocks per KV head in rule 4), and then:
//   G3. where its blocks serve one query head each (grouped V1 at a length where two heads'
//       logits pass kGroupedSmemBudget): rule 6, grouped V2 if there are partitions and its
//       blocks (one partition long) serve two heads or more; else per head (nothing shared);
//   G4. per head if the grouped kernel so chosen needs more shared memory than the device
//       allows;
//   G5. grouped otherwise.
// The perf::Device overload keeps G1 and G4 and takes whichever of grouped and per head
// (each with its own V1/V2 choice) the model predicts faster, per head on a tie.
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
  grouped_v1_shares_nothing,  // 6

};

// Which rule decided grouped or per head (G1 to G5 above; modelled_faster: the perf::Device
// overload after G1 and G4).
enum class GroupedRule : std::uint8_t {
  falls_back,          // G1
  one_head_per_block,  // G3
  does_not_fit,        // G4
  shares_kv,           // G5
  modelled_faster,
};

struct VersionChoice {
  Version version = Version::v1;
  VersionRule rule = VersionRule::one_partition;
  std::string reason;    // the rule in words, with its numbers
  bool grouped = false;  // launch with Options::grouped
  GroupedRule grouped_rule = GroupedRule::falls_back;
  std::string grouped_reason;  // the grouped rule in words, with its numbers
};

// Rules 1 to 5 and G1 to G5 from the device's facts (the element sizes enter only through
// G1: the grouped kernels' dtypes).
VersionChoice choose_version(const DeviceFacts& device, const Workload& w);

// Rules 1 and 2, then the modelled faster version; G1, G3, then the modelled faster of
// grouped and per head. Each reason quotes the times compared.
VersionChoice choose_version(const perf::Device& device, const Workload& w);

// vLLM's rule, for comparison (its V1 assumes shared memory never runs out).
Version vllm_choose_version(const Workload& w);

}  // namespace pagedattn
