// `pagedattn limits`: what each kernel asks of a device profile, from the same layout
// functions the launchers use (pagedattn/resources.h), so the printed numbers are the
// launched numbers.
#include <iostream>
#include <string>

#include "cli.h"
#include "emu/profile.h"
#include "pagedattn/resources.h"
#include "pagedattn/validate.h"

namespace cli {
namespace {

const char* const kHelp =
    "usage: pagedattn limits [--profile NAME] [--head-size H] [--block-size B]\n"
    "\n"
    "Prints, for the device profile, each kernel's threads per block, grid and dynamic\n"
    "shared memory, and the longest sequence (max_seq_len) V1 can take.\n"
    "\n"
    "  --profile NAME     device profile or profile .json file (default bi-v100)\n"
    "  --head-size H      one of {32, 64, 80, 96, 112, 120, 128, 192, 256} (default 128)\n"
    "  --block-size B     one of {8, 16, 32} (default 16)\n"
    "  --help             this text\n";

std::vector<std::string> to_strings(const int* begin, const int* end) {
  std::vector<std::string> v;
  for (const int* p = begin; p != end; ++p) v.push_back(std::to_string(*p));
  return v;
}

}  // namespace

int cmd_limits(const std::vector<std::string>& argv) {
  const Args args =
      parse_args(argv, {{"--profile", true}, {"--head-size", true}, {"--block-size", true}});
  if (args.has("--help")) {
    std::cout << kHelp;
    return 0;
  }
  if (!args.positional.empty()) {
    throw UsageError("limits takes no positional arguments, got '" + args.positional[0] + "'");
  }
  const auto head_sizes =
      to_strings(std::begin(pagedattn::kHeadSizes), std::end(pagedattn::kHeadSizes));
  const auto block_sizes =
      to_strings(std::begin(pagedattn::kBlockSizes), std::end(pagedattn::kBlockSizes));
  const int head_size =
      std::stoi(parse_choice("--head-size", args.get("--head-size", "128"), head_sizes));
  const int block_size =
      std::stoi(parse_choice("--block-size", args.get("--block-size", "16"), block_sizes));
  const std::string profile_name = args.get("--profile", "bi-v100");
  check_profile("--profile", profile_name);
  const emu::Profile prof = emu::load_profile(profile_name);
  const int ws = prof.warp_size;
  // The launchers opt in above 48 KB, so the per-block ceiling is the opt-in limit.
  const long long smem_limit = prof.shared_memory_per_block_optin;
  const int partition = 512;

  const std::int64_t longest = pagedattn::v1_max_seq_len(ws, head_size, block_size, smem_limit);
  const auto v1 = pagedattn::v1_resources(ws, 1, 1, head_size, block_size, longest);
  const auto v2 = pagedattn::v2_resources(ws, 1, 1, head_size, partition, partition);
  const auto red = pagedattn::reduce_resources(ws, 1, 1);
  const std::int64_t fixed_floats = pagedattn::attn_logits_offset(ws, head_size);
  const std::int64_t scratch_floats = std::int64_t(pagedattn::num_warps(ws) - 1) * head_size;

  std::cout << "profile " << prof.name << ": warp size " << ws << ", " << prof.multiprocessor_count
            << " multiprocessors, dynamic shared memory per block " << prof.shared_memory_per_block
            << " bytes (" << smem_limit << " with opt-in)\n"
            << "head_size " << head_size << ", block_size " << block_size << ", V2 partition_size "
            << partition << "\n\n";
  std::cout << v1.kernel << ": " << v1.threads_per_block
            << " threads per block, grid (num_heads, num_seqs)\n"
            << "  dynamic shared memory 4 * (" << fixed_floats << " + max(round_up(max_seq_len, "
            << block_size << "), " << scratch_floats << ")) bytes; " << v1.dynamic_smem_bytes
            << " at max_seq_len " << longest << "\n";
  std::cout << v2.kernel << ": " << v2.threads_per_block
            << " threads per block, grid (num_heads, num_seqs, ceil(max_seq_len / " << partition
            << "))\n  dynamic shared memory " << v2.dynamic_smem_bytes << " bytes\n";
  std::cout << red.kernel << ": " << red.threads_per_block
            << " threads per block, grid (num_heads, num_seqs)\n  dynamic shared memory "
            << red.dynamic_smem_bytes << " bytes (streams over partitions: no length cap)\n\n";

  // vLLM's own V1 request at the same limit, for comparison: one step per block. The
  // device also counts vLLM's static __shared__ arrays: q_vecs (head_size scalars; fp32,
  // the largest) and red_smem (2 * warps floats).
  const std::int64_t vllm_static = 4LL * head_size + 2LL * pagedattn::num_warps(ws) * 4;
  std::int64_t vllm_longest = 0;
  while (pagedattn::vllm_v1_smem_bytes(ws, head_size, block_size, vllm_longest + block_size) +
             vllm_static <=
         smem_limit) {
    vllm_longest += block_size;
  }
  std::cout << "longest V1 sequence: " << longest << " tokens (" << smem_limit
            << " bytes of shared memory; vLLM's V1 layout: " << vllm_longest << " tokens with its "
            << vllm_static << " static bytes, fp32)\n";
  return 0;
}

}  // namespace cli
