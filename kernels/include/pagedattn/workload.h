// The shape of an attention call, as one value: what choose_version, the launch-resource
// functions (resources.h) and the performance model (perfmodel.h) take, so none of them
// has a positional list of ints whose order a caller could swap.
#pragma once
#include <cstdint>

namespace pagedattn {

struct Workload {
  int num_seqs = 1;
  int num_heads = 32;
  int num_kv_heads = 8;
  int head_size = 128;
  int block_size = 16;
  // The longest sequence (V1's partition, V2's partition count); the performance model
  // takes every sequence this long.
  std::int64_t max_seq_len = 1000;
  int partition_size = 512;  // V2's tokens per partition
  int cache_elem_bytes = 2;  // K/V element: 4 f32, 2 f16/bf16, 1 fp8
  int io_elem_bytes = 2;     // query and output element
};

}  // namespace pagedattn
