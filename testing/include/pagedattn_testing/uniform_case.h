// The seeded generator of the kernel tests (and the base the property suite shapes):
// q, k, v uniform in +-range rounded to their formats (an fp8 cache: random finite codes
// of magnitude <= range), physical blocks in random order, spare blocks no sequence uses,
// and block-table entries past a sequence's blocks set far out of range, so a kernel that
// reads one faults instead of passing by luck. Its parameters are plain values; what it
// builds is a testing::Case.
#pragma once
#include <cstdint>
#include <vector>

#include "pagedattn_testing/case.h"

namespace pagedattn::testing {

struct UniformSpec {
  DType scalar = DType::f32;
  CacheFormat cache = CacheFormat::same;
  int head_size = 64;
  int block_size = 16;
  int num_heads = 4;
  int num_kv_heads = 2;
  std::vector<int> seq_lens = {37, 70};
  int max_seq_len = -1;  // -1: the largest seq_len
  bool alibi = false;    // slopes 2^(-8 (h + 1) / H), vLLM's
  double scale = -1;     // -1: 2 / sqrt(head_size) (as float), logits over a few units
  double k_scale = 1.0;  // fp8 caches only (as float)
  double v_scale = 1.0;
  double q_range = 1.0;
  double k_range = 1.0;
  double v_range = 1.0;
  std::uint64_t seed = 1;
  int spare_blocks = 3;  // physical blocks no sequence uses
  // vLLM's layout: block_tables has as many columns as the longest sequence has blocks,
  // so that row has no entry past its last block. false: one padding entry per row.
  bool tight_table = false;
};

Case uniform_case(const UniformSpec& spec);

// Issue 18's headline shape at `tokens`: one sequence, 32 query heads over 8 KV heads,
// head size 128, fp16 (the bytes test and bench_kernels).
inline UniformSpec headline_spec(int tokens) {
  UniformSpec s;
  s.scalar = DType::f16;
  s.head_size = 128;
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.seq_lens = {tokens};
  return s;
}

// Overwrites every cache slot no sequence reads (slots past seq_len in a last block, spare
// blocks) with NaN, or with zero.
void fill_unused_slots(Case& c, bool nan);

// Stores `value` (any double: NaN and infinities as store() stores them) into one live
// element: the query element (seq, head = index, d), or element d of the key or value of
// token `index` of sequence `seq` in KV head `kv_head`. Returns the value stored.
enum class Element { query, key, value };
double set_live(Case& c, Element e, int seq, int index, int kv_head, int d, double value);

}  // namespace pagedattn::testing
