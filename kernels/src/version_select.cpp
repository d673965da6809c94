#include "pagedattn/version_select.h"

#include <cstdio>
#include <utility>

#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"

namespace pagedattn {
namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

// A V1/V2 decision; the grouped fields are filled in by the caller.
VersionChoice decided(Version v, VersionRule rule, std::string reason) {
  VersionChoice c;
  c.version = v;
  c.rule = rule;
  c.reason = std::move(reason);
  return c;
}

// Rules 1 to 5 for the per-head kernels or (grouped) the grouped ones: their own shared
// memory and grid (resources.h).
VersionChoice version_rules(const DeviceFacts& device, const Workload& w, bool grouped) {
  const LaunchResources v1 =
      grouped ? v1_grouped_resources(device.warp_size, w) : v1_resources(device.warp_size, w);
  const std::int64_t parts = max_num_partitions(w.max_seq_len, w.partition_size);
  const std::int64_t blocks = std::int64_t(v1.grid.x) * v1.grid.y;
  const std::int64_t fill = 4LL * device.multiprocessor_count;
  const std::string kind = grouped ? "grouped V1" : "V1";
  const std::string grid =
      grouped ? "num_seqs * num_kv_heads * blocks per KV head = " + str(w.num_seqs) + " * " +
                    str(w.num_kv_heads) + " * " + str(v1.groups.blocks_per_kv_head) + " = "
              : "num_seqs * num_heads = ";
  if (v1.dynamic_smem_bytes > device.shared_memory_per_block_optin) {
    std::string fits;
    if (!grouped)
      fits = " (V1 fits up to " +
             str(v1_max_seq_len(device.warp_size, w.head_size, w.block_size,
                                device.shared_memory_per_block_optin)) +
             " tokens)";
    return decided(Version::v2, VersionRule::v1_does_not_fit,
                   kind + " needs " + str(v1.dynamic_smem_bytes) +
                       " bytes of shared memory at max_seq_len " + str(w.max_seq_len) +
                       "; the device allows " + str(device.shared_memory_per_block_optin) + fits);
  }
  if (parts <= 1) {
    return decided(Version::v1, VersionRule::one_partition,
                   "one partition: V2 would only add the reduce");
  }
  if (w.max_seq_len > 8192) {
    return decided(Version::v2, VersionRule::long_sequence,
                   "max_seq_len " + str(w.max_seq_len) +
                       " > 8192: one block per (sequence, head) would walk it serially");
  }
  if (blocks >= fill) {
    return decided(Version::v1, VersionRule::grid_fills_device,
                   grid + str(blocks) + " >= 4 * " + str(device.multiprocessor_count) +
                       " compute units: " + kind + "'s grid fills the device");
  }
  return decided(Version::v2, VersionRule::grid_needs_partitions,
                 grid + str(blocks) + " < 4 * " + str(device.multiprocessor_count) +
                     " compute units: partitions add parallelism");
}

LaunchResources grouped_resources(int warp_size, const Workload& w, Version v) {
  return v == Version::v1 ? v1_grouped_resources(warp_size, w) : v2_grouped_resources(warp_size, w);
}

// Whether the runner launches the grouped kernel of version v for w: the runner's own rule
// (grouped_launch_fallback_reason, resources.h), so a choice never says grouped where the
// launch would run per head.
bool grouped_launches(const DeviceFacts& device, const Workload& w, Version v) {
  return grouped_launch_fallback_reason(v, device.warp_size, w) == nullptr;
}

perf::Variant variant(Version v, bool grouped) {
  if (v == Version::v1) return grouped ? perf::Variant::v1_grouped : perf::Variant::v1;
  return grouped ? perf::Variant::v2_grouped : perf::Variant::v2;
}

// G4: why the grouped launch of version v exceeds the device's shared memory; empty when
// it fits.
std::string grouped_misfit(const DeviceFacts& device, const Workload& w, Version v) {
  const LaunchResources r = grouped_resources(device.warp_size, w, v);
  if (r.dynamic_smem_bytes <= device.shared_memory_per_block_optin) return "";
  return std::string(perf::variant_name(variant(v, true))) + " needs " + str(r.dynamic_smem_bytes) +
         " bytes of shared memory (" + str(r.groups.heads_per_block) +
         " heads per block); the device allows " + str(device.shared_memory_per_block_optin);
}

VersionChoice per_head(VersionChoice c, GroupedRule rule, std::string why) {
  c.grouped = false;
  c.grouped_rule = rule;
  c.grouped_reason = std::move(why);
  return c;
}

std::string shares(const DeviceFacts& device, const Workload& w, Version v) {
  const HeadGroups g = grouped_resources(device.warp_size, w, v).groups;
  return std::string(perf::variant_name(variant(v, true))) +
         ": each block reads its KV span once for " + str(g.heads_per_block) + " query heads (" +
         str(g.blocks_per_kv_head) + " block(s) per KV head); per head it is read " +
         str(w.num_heads / w.num_kv_heads) + " times";
}

DeviceFacts facts_of(const perf::Device& d) {
  return {d.name, d.warp_size, d.multiprocessor_count, d.shared_memory_per_block_optin};
}

// Rules 1 and 2 (per head or grouped), then the modelled faster version.
VersionChoice modelled_version(const perf::Device& device, const perf::Estimate& e,
                               const Workload& w, bool grouped) {
  VersionChoice fit = version_rules(facts_of(device), w, grouped);
  if (fit.rule == VersionRule::v1_does_not_fit || fit.rule == VersionRule::one_partition)
    return fit;
  const double t1 = grouped ? e.v1_grouped_us : e.v1_us;
  const double t2 = grouped ? e.v2_grouped_us : e.v2_us;
  const char* g = grouped ? "grouped " : "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "modelled on %s: %sV1 %.1f us, %sV2 + reduce %.1f us",
                device.name.c_str(), g, t1, g, t2);
  return decided(t1 <= t2 ? Version::v1 : Version::v2, VersionRule::modelled_faster, buf);
}

}  // namespace

VersionChoice choose_version(const DeviceFacts& device, const Workload& w) {
  if (const char* why = grouped_fallback_reason(w))
    return per_head(version_rules(device, w, false), GroupedRule::falls_back, why);
  VersionChoice g = version_rules(device, w, true);
  std::string unshared;
  if (!grouped_launches(device, w, g.version)) {
    unshared = std::string("grouped ") + perf::variant_name(variant(g.version, false)) +
               " at max_seq_len " + str(w.max_seq_len) +
               " serves one query head per block (two heads need " +
               str(grouped_smem_bytes(device.warp_size, w.head_size, w.block_size,
                                      g.version == Version::v1
                                          ? v1_partition_tokens(w.block_size, w.max_seq_len)
                                          : w.partition_size,
                                      2)) +
               " bytes, over the " + str(kGroupedSmemBudget) + "-byte grouped budget)";
    // Rule 6: V2's slices are one partition long, so its blocks may still share.
    if (g.version == Version::v1 && max_num_partitions(w.max_seq_len, w.partition_size) > 1 &&
        grouped_launches(device, w, Version::v2)) {
      g = decided(Version::v2, VersionRule::grouped_v1_shares_nothing,
                  unshared + "; grouped V2's partitions of " + str(w.partition_size) +
                      " tokens still share");
      unshared.clear();
    }
  }
  std::string misfit = grouped_misfit(device, w, g.version);
  if (!misfit.empty())
    return per_head(version_rules(device, w, false), GroupedRule::does_not_fit, misfit);
  if (!unshared.empty())
    return per_head(version_rules(device, w, false), GroupedRule::one_head_per_block,
                    unshared + ": nothing is shared");
  g.grouped = true;
  g.grouped_rule = GroupedRule::shares_kv;
  g.grouped_reason = shares(device, w, g.version);
  return g;
}

VersionChoice choose_version(const perf::Device& device, const Workload& w) {
  const perf::Estimate e = perf::estimate(device, w);
  VersionChoice ph = modelled_version(device, e, w, false);
  if (const char* why = grouped_fallback_reason(w))
    return per_head(ph, GroupedRule::falls_back, why);
  VersionChoice g = modelled_version(device, e, w, true);
  std::string misfit = grouped_misfit(facts_of(device), w, g.version);
  if (!misfit.empty()) return per_head(ph, GroupedRule::does_not_fit, misfit);
  const perf::Variant vg = variant(g.version, true), vp = variant(ph.version, false);
  const double tg = perf::time_us(e, vg), tp = perf::time_us(e, vp);
  char buf[200];
  std::snprintf(buf, sizeof buf, "modelled on %s: %s %.1f us, per-head %s %.1f us",
                device.name.c_str(), perf::variant_name(vg), tg, perf::variant_name(vp), tp);
  if (!(tg < tp)) return per_head(ph, GroupedRule::modelled_faster, buf);
  g.grouped = true;
  g.grouped_rule = GroupedRule::modelled_faster;
  g.grouped_reason = buf;
  return g;
}

Version vllm_choose_version(const Workload& w) {
  const std::int64_t parts = max_num_partitions(w.max_seq_len, w.partition_size);
  const bool v1 = w.max_seq_len <= 8192 &&
                  (parts == 1 || static_cast<std::int64_t>(w.num_seqs) * w.num_heads > 512);
  return v1 ? Version::v1 : Version::v2;
}

}  // namespace pagedattn
