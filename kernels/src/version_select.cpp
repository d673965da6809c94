#include "pagedattn/version_select.h"

#include <cstdio>

#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"

namespace pagedattn {

VersionChoice choose_version(const DeviceFacts& device, const Workload& w) {
  const std::int64_t v1_limit = v1_max_seq_len(device.warp_size, w.head_size, w.block_size,
                                               device.shared_memory_per_block_optin);
  const std::int64_t parts = max_num_partitions(w.max_seq_len, w.partition_size);
  const std::int64_t blocks = static_cast<std::int64_t>(w.num_seqs) * w.num_heads;
  const std::int64_t fill = 4LL * device.multiprocessor_count;
  if (w.max_seq_len > v1_limit) {
    return {Version::v2, VersionRule::v1_does_not_fit,
            "V1 needs " + std::to_string(v1_resources(device.warp_size, w).dynamic_smem_bytes) +
                " bytes of shared memory at max_seq_len " + std::to_string(w.max_seq_len) +
                "; the device allows " + std::to_string(device.shared_memory_per_block_optin) +
                " (V1 fits up to " + std::to_string(v1_limit) + " tokens)"};
  }
  if (parts <= 1) {
    return {Version::v1, VersionRule::one_partition, "one partition: V2 would only add the reduce"};
  }
  if (w.max_seq_len > 8192) {
    return {Version::v2, VersionRule::long_sequence,
            "max_seq_len " + std::to_string(w.max_seq_len) +
                " > 8192: one block per (sequence, head) would walk it serially"};
  }
  if (blocks >= fill) {
    return {Version::v1, VersionRule::grid_fills_device,
            "num_seqs * num_heads = " + std::to_string(blocks) + " >= 4 * " +
                std::to_string(device.multiprocessor_count) +
                " compute units: V1's grid fills the device"};
  }
  return {Version::v2, VersionRule::grid_needs_partitions,
          "num_seqs * num_heads = " + std::to_string(blocks) + " < 4 * " +
              std::to_string(device.multiprocessor_count) +
              " compute units: partitions add parallelism"};
}

VersionChoice choose_version(const perf::Device& device, const Workload& w) {
  const DeviceFacts facts{device.name, device.warp_size, device.multiprocessor_count,
                          device.shared_memory_per_block_optin};
  VersionChoice fit = choose_version(facts, w);
  if (fit.rule == VersionRule::v1_does_not_fit || fit.rule == VersionRule::one_partition)
    return fit;
  const perf::Estimate e = perf::estimate(device, w);
  char buf[160];
  std::snprintf(buf, sizeof buf, "modelled on %s: V1 %.1f us, V2 + reduce %.1f us",
                device.name.c_str(), e.v1_us, e.v2_us);
  return {e.v1_us <= e.v2_us ? Version::v1 : Version::v2, VersionRule::modelled_faster, buf};
}

Version vllm_choose_version(const Workload& w) {
  const std::int64_t parts = max_num_partitions(w.max_seq_len, w.partition_size);
  const bool v1 = w.max_seq_len <= 8192 &&
                  (parts == 1 || static_cast<std::int64_t>(w.num_seqs) * w.num_heads > 512);
  return v1 ? Version::v1 : Version::v2;
}

}  // namespace pagedattn
