#include "pagedattn/version_select.h"

#include <cstdio>

#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"

namespace pagedattn {

const char* version_name(Version v) {
  return v == Version::v1 ? "v1" : "v2";
}

VersionChoice choose_version(const DeviceFacts& device, int num_seqs, int num_heads, int head_size,
                             int block_size, std::int64_t max_seq_len, int partition_size) {
  const std::int64_t v1_limit =
      v1_max_seq_len(device.warp_size, head_size, block_size, device.shared_memory_per_block_optin);
  const std::int64_t parts = max_num_partitions(max_seq_len, partition_size);
  const std::int64_t blocks = static_cast<std::int64_t>(num_seqs) * num_heads;
  const std::int64_t fill = 4LL * device.multiprocessor_count;
  if (max_seq_len > v1_limit) {
    return {Version::v2,
            "V1 needs " +
                std::to_string(attention_smem_bytes(device.warp_size, head_size,
                                                    v1_partition_tokens(block_size, max_seq_len))) +
                " bytes of shared memory at max_seq_len " + std::to_string(max_seq_len) +
                "; the device allows " + std::to_string(device.shared_memory_per_block_optin) +
                " (V1 fits up to " + std::to_string(v1_limit) + " tokens)"};
  }
  if (parts <= 1) return {Version::v1, "one partition: V2 would only add the reduce"};
  if (max_seq_len > 8192) {
    return {Version::v2, "max_seq_len " + std::to_string(max_seq_len) +
                             " > 8192: one block per (sequence, head) would walk it serially"};
  }
  if (blocks >= fill) {
    return {Version::v1, "num_seqs * num_heads = " + std::to_string(blocks) + " >= 4 * " +
                             std::to_string(device.multiprocessor_count) +
                             " compute units: V1's grid fills the device"};
  }
  return {Version::v2, "num_seqs * num_heads = " + std::to_string(blocks) + " < 4 * " +
                           std::to_string(device.multiprocessor_count) +
                           " compute units: partitions add parallelism"};
}

VersionChoice choose_version(const perf::Device& device, int num_seqs, int num_heads,
                             int num_kv_heads, int head_size, int block_size,
                             std::int64_t max_seq_len, int partition_size, int cache_elem_bytes) {
  DeviceFacts facts{device.name, device.warp_size, device.multiprocessor_count,
                    device.shared_memory_per_block_optin};
  VersionChoice fit = choose_version(facts, num_seqs, num_heads, head_size, block_size, max_seq_len,
                                     partition_size);
  const bool v1_refused = fit.version == Version::v2 && fit.reason.rfind("V1 needs", 0) == 0;
  if (v1_refused || max_num_partitions(max_seq_len, partition_size) <= 1) return fit;
  perf::Workload w;
  w.num_seqs = num_seqs;
  w.num_heads = num_heads;
  w.num_kv_heads = num_kv_heads;
  w.head_size = head_size;
  w.block_size = block_size;
  w.seq_len = max_seq_len;
  w.partition_size = partition_size;
  w.cache_elem_bytes = cache_elem_bytes;
  const perf::Estimate e = perf::estimate(device, w);
  char buf[160];
  std::snprintf(buf, sizeof buf, "modelled on %s: V1 %.1f us, V2 + reduce %.1f us",
                device.name.c_str(), e.v1_us, e.v2_us);
  return {e.v1_us <= e.v2_us ? Version::v1 : Version::v2, buf};
}

Version vllm_choose_version(int num_seqs, int num_heads, std::int64_t max_seq_len,
                            int partition_size) {
  const std::int64_t parts = max_num_partitions(max_seq_len, partition_size);
  const bool v1 =
      max_seq_len <= 8192 && (parts == 1 || static_cast<std::int64_t>(num_seqs) * num_heads > 512);
  return v1 ? Version::v1 : Version::v2;
}

}  // namespace pagedattn
