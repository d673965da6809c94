// RapidCheck generators for every dimension the kernels support and for the values
// RapidCheck's own float generator never yields (docs/NUMERICS.md): subnormals, signed zeros,
// values near each format's maximum, NaN and inf. Every generator shrinks toward the
// smallest, plainest case (f32, head 32, one sequence of 1 token, uniform values), and
// Spec prints as one readable line (harness.cpp), so a failure reads as a small case.
#pragma once
#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <vector>
#include "harness.h"

namespace pagedattn::prop {

// What a property needs of its cases.
struct Limits {
  int max_seqs = 3;
  int max_gqa = 4;
  int max_kv_heads = 2;
  int max_partition_size = 256;  // larger partitions cost emulator time, not coverage
  int max_partitions = 4;        // longest sequence in partitions
  bool fp8 = true;
  bool shaped_logits = true;
  bool nearmax_v = true;
  bool v1_fits = true;      // keep max_seq_len within V1's shared memory on the profile
  bool allow_empty = true;  // seq_len 0 and trailing empty partitions
};

rc::Gen<DType> gen_scalar();
// "h200" (warp 32) or "bi-v100" (warp 64).
rc::Gen<std::string> gen_profile();
rc::Gen<int> gen_head_size();
rc::Gen<int> gen_block_size();
// A multiple of block_size in [64, max].
rc::Gen<int> gen_partition_size(int block_size, int max);
// Weighted toward 1, block and partition boundaries +-1, and lengths leaving empty
// partitions; at most max_tokens.
rc::Gen<int> gen_seq_len(int block_size, int partition_size, int max_tokens, bool allow_zero);
// A special float of a format: subnormals, +-0, near max, NaN, +-inf (tag says which).
rc::Gen<double> gen_special(DType scalar, CacheFormat cache, bool non_finite);
rc::Gen<Spec> gen_spec(const Limits& lim = {});

}  // namespace pagedattn::prop

namespace rc {
template <>
struct Arbitrary<pagedattn::prop::Spec> {
  static Gen<pagedattn::prop::Spec> arbitrary() { return pagedattn::prop::gen_spec(); }
};
}  // namespace rc
