// Validation at every entry. Each rule that fails throws pagedattn::Error whose message
// names the argument, what it got and the allowed values; it runs before any launch, so
// nothing is written on error.
#pragma once
#include <stdexcept>
#include <string>
#include "pagedattn/attention_call.h"
#include "pagedattn/params.h"
#include "pagedattn/supported.h"  // kHeadSizes, kBlockSizes, partition sizes
#include "pagedattn/tensor_view.h"

namespace pagedattn {

struct Error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A launch the device refused (e.g. V1 asking more shared memory than the device allows);
// the message names the resource, what was asked and what is allowed.
struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr std::int64_t kMaxGridYZ = 65535;  // CUDA's (and BI-V100's) grid y/z limit

// Shape, dtype and scalar rules of V1 (call.exp_sums, max_logits, tmp_out undefined) or V2.
// Reads no tensor data.
AttentionParams validate_attention(Kernel kernel, const AttentionCall& call,
                                   const Options& options);

// Shape rules of the V2 reduce on its own.
AttentionParams validate_reduce(const TensorView& out, const TensorView& exp_sums,
                                const TensorView& max_logits, const TensorView& tmp_out,
                                const TensorView& seq_lens, std::int64_t max_seq_len,
                                const Options& options);

// Data rules, given host copies of seq_lens [num_seqs] and (may be null for the reduce)
// block_tables [num_seqs][block_table_stride]: 0 <= seq_len <= max_seq_len, seq_len fits
// the block table (and, for the reduce, the partitions), every used block id is in
// [0, num_blocks). Entries past a sequence's last block are never read, so never checked.
void validate_indices(const AttentionParams& p, const std::int32_t* host_block_tables,
                      const std::int32_t* host_seq_lens);

}  // namespace pagedattn
