// `pagedattn limits`: what each kernel asks of a device profile, from the same layout
// functions the launchers use (pagedattn/resources.h), so the printed numbers are the
// launched numbers.
#include <iostream>
#include <memory>
#include <string>

#include "cli.h"
#include "emu/profile.h"
#include "pagedattn/resources.h"
#include "pagedattn/supported.h"  // the head and block sizes
#include "pagedattn/validate.h"

namespace cli {
namespace {

std::vector<std::string> to_strings(const int* begin, const int* end) {
  std::vector<std::string> v;
  for (const int* p = begin; p != end; ++p) v.push_back(std::to_string(*p));
  return v;
}

struct Settings {
  std::string profile = "bi-v100", head_size = "128", block_size = "16", partition_size = "512";
};

int run_limits(const Settings& s);

Run setup(CLI::App& app) {
  auto s = std::make_shared<Settings>();
  app.description(
      "Prints, for the device profile, each kernel's threads per block, grid and dynamic\n"
      "shared memory, and the longest sequence (max_seq_len) V1 can take.");
  app.add_option("--profile", s->profile, "device profile or profile .json file (default bi-v100)")
      ->option_text("NAME")
      ->check(profile_name());
  app.add_option("--head-size", s->head_size, "head size (default 128)")
      ->option_text("H")
      ->check(
          one_of(to_strings(std::begin(pagedattn::kHeadSizes), std::end(pagedattn::kHeadSizes))));
  app.add_option("--block-size", s->block_size, "tokens per KV-cache block (default 16)")
      ->option_text("B")
      ->check(
          one_of(to_strings(std::begin(pagedattn::kBlockSizes), std::end(pagedattn::kBlockSizes))));
  app.add_option("--partition-size", s->partition_size,
                 "V2 tokens per partition: a multiple of block size in [64, 4096] (default 512)")
      ->option_text("P")
      ->check(int_in(pagedattn::kMinPartitionSize, pagedattn::kMaxPartitionSize,
                     "a multiple of block size in [64, 4096]"));
  return [s] { return run_limits(*s); };
}

const bool registered =
    add_command({"limits",
                 "each kernel's shared memory, threads and grid on a device profile, and the "
                 "longest sequence V1 fits",
                 &setup});

int run_limits(const Settings& s) {
  const int head_size = std::stoi(s.head_size);
  const int block_size = std::stoi(s.block_size);
  const int partition = std::stoi(s.partition_size);
  if (partition % block_size != 0) {
    throw UsageError("--partition-size must be a multiple of block size " +
                     std::to_string(block_size) + " in [64, 4096], got " + s.partition_size);
  }
  const emu::Profile prof = emu::load_profile(s.profile);
  const int ws = prof.warp_size;
  // The launchers opt in above 48 KB, so the per-block ceiling is the opt-in limit.
  const long long smem_limit = prof.shared_memory_per_block_optin;

  const std::int64_t longest = pagedattn::v1_max_seq_len(ws, head_size, block_size, smem_limit);
  pagedattn::Workload w;  // one sequence, one head: the per-block figures
  w.num_seqs = w.num_heads = w.num_kv_heads = 1;
  w.head_size = head_size;
  w.block_size = block_size;
  w.partition_size = partition;
  w.max_seq_len = longest;
  const auto v1 = pagedattn::v1_resources(ws, w);
  w.max_seq_len = partition;
  const auto v2 = pagedattn::v2_resources(ws, w);
  const auto red = pagedattn::reduce_resources(ws, w);
  const std::int64_t fixed_floats = pagedattn::attn_logits_offset(ws, head_size);
  const std::int64_t scratch_floats = std::int64_t(pagedattn::num_warps(ws) - 1) * head_size;

  std::cout << "profile " << prof.name << ": warp size " << ws << ", " << prof.multiprocessor_count
            << " multiprocessors, dynamic shared memory per block " << prof.shared_memory_per_block
            << " bytes (" << smem_limit << " with opt-in)\n"
            << "head_size " << head_size << ", block_size " << block_size << ", V2 partition_size "
            << partition << "\n\n";
  std::cout << pagedattn::kernel_entry_name(v1.kernel) << ": " << v1.threads_per_block
            << " threads per block, grid (num_heads, num_seqs)\n"
            << "  dynamic shared memory 4 * (" << fixed_floats << " + max(round_up(max_seq_len, "
            << block_size << "), " << scratch_floats << ")) bytes; " << v1.dynamic_smem_bytes
            << " at max_seq_len " << longest << "\n";
  std::cout << pagedattn::kernel_entry_name(v2.kernel) << ": " << v2.threads_per_block
            << " threads per block, grid (num_heads, num_seqs, ceil(max_seq_len / " << partition
            << "))\n  dynamic shared memory " << v2.dynamic_smem_bytes << " bytes\n";
  std::cout << pagedattn::kernel_entry_name(red.kernel) << ": " << red.threads_per_block
            << " threads per block, grid (num_heads, num_seqs)\n  dynamic shared memory "
            << red.dynamic_smem_bytes << " bytes (streams over partitions: no length cap)\n";
  // The grouped kernels (Options::grouped): resources.h's head_groups and grouped_smem_bytes.
  const std::int64_t slice = pagedattn::grouped_head_floats(ws, head_size, partition);
  std::cout << "grouped V1/V2 (Options::grouped, r = num_heads / num_kv_heads > 1): grid "
               "(num_kv_heads * ceil(r / h), num_seqs[, partitions]), h heads per block, at "
               "most "
            << pagedattn::group_max_heads(head_size) << ", as many as fit "
            << pagedattn::kGroupedSmemBudget << " bytes\n  dynamic shared memory 4 * ("
            << pagedattn::grouped_heads_offset(ws, head_size) << " + h * ("
            << pagedattn::round_up(head_size, 4) << " + round_up(max(tokens, " << scratch_floats
            << "), 4))) bytes; V2:";
  for (int r : {2, 4, 8, 16}) {
    w.num_kv_heads = 1;
    w.num_heads = r;
    const auto g = pagedattn::v2_grouped_resources(ws, w);
    std::cout << (r == 2 ? " " : ", ") << "r " << r << ": h " << g.groups.heads_per_block << ", "
              << g.dynamic_smem_bytes << " bytes";
  }
  std::cout << " (" << 4 * slice
            << " bytes per head)\n  built for f16/bf16 (and their fp8 "
               "caches), head sizes "
            << pagedattn::list_text(pagedattn::GroupedHeadSizeList{}) << ", block size "
            << pagedattn::list_text(pagedattn::GroupedBlockSizeList{})
            << "; elsewhere Options::grouped runs the per-head kernels";
  w.num_kv_heads = 8;
  w.num_heads = 32;
  if (const char* why = pagedattn::grouped_fallback_reason(w))
    std::cout << " (here: " << why << ")";
  // A block of one head shares no KV read: there the per-head kernel runs
  // (grouped_launch_fallback_reason); for V1 that is past this length.
  std::int64_t shared_to = 0;
  for (std::int64_t len = block_size;; len += block_size) {
    const auto g =
        pagedattn::head_groups(ws, head_size, 2, pagedattn::v1_partition_tokens(block_size, len));
    if (g.heads_per_block < 2) break;
    shared_to = len;
  }
  std::cout << "\n  where h would be 1, the per-head kernel (the same KV reads): grouped V1 "
               "shares them up to max_seq_len "
            << shared_to << "\n\n";

  // vLLM's own V1 request at the same limit, for comparison: one step per block. The
  // device also counts vLLM's static __shared__ arrays: q_vecs (head_size scalars; fp32,
  // the largest) and red_smem (2 * warps floats).
  const std::int64_t vllm_static = 4LL * head_size + 2LL * pagedattn::num_warps(ws) * 4;
  std::int64_t vllm_longest = 0;
  for (w.max_seq_len = block_size; pagedattn::vllm_v1_smem_bytes(ws, w) + vllm_static <= smem_limit;
       w.max_seq_len += block_size) {
    vllm_longest = w.max_seq_len;
  }
  std::cout << "longest V1 sequence: " << longest << " tokens (" << smem_limit
            << " bytes of shared memory; vLLM's V1 layout: " << vllm_longest << " tokens with its "
            << vllm_static << " static bytes, fp32)\n";
  return 0;
}

}  // namespace
}  // namespace cli
