// Test harness: seeded inputs in vLLM's layouts, a double-precision reference written
// independently of the kernels (plain loops over the block table, its own fp8 decoding),
// runners for V1 / V2 on the emulator, and the error bound each comparison uses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "pagedattn/api.h"

namespace pagedattn::test {

struct Config {
  DType scalar = DType::f32;
  CacheFormat cache = CacheFormat::same;
  int head_size = 64;
  int block_size = 16;
  int num_heads = 4;
  int num_kv_heads = 2;
  std::vector<int> seq_lens = {37, 70};
  int max_seq_len = -1;  // -1: the largest seq_len
  bool alibi = false;
  double scale = -1;     // -1: 2 / sqrt(head_size), so logits spread over a few units
  double k_scale = 1.0;  // used for fp8 caches only
  double v_scale = 1.0;
  double q_range = 1.0;  // q, k, v uniform in [-range, range] (rounded to the storage type)
  double k_range = 1.0;
  double v_range = 1.0;
  int partition_size = 64;
  Numerics numerics = Numerics::exact_fp32;
  NumericsChoices vllm_choices{};  // single vLLM choices under exact_fp32 (params.h)
  std::uint64_t seed = 1;
  int spare_blocks = 3;  // physical blocks no sequence uses
};

struct Problem {
  Config c;
  int x = 0;  // elements per 16 bytes of cache
  int num_blocks = 0;
  int max_blocks_per_seq = 0;
  int max_seq_len = 0;
  std::vector<std::uint8_t> query, key_cache, value_cache;  // storage bytes
  std::vector<std::int32_t> block_tables, seq_lens;
  std::vector<float> alibi;
  // Decoded exactly (dequantized with k_scale / v_scale for fp8), logical layouts:
  // q [seq][head][d]; k, v [block][kv_head][slot][d].
  std::vector<double> q, k, v;
  // Which (block, slot) pairs hold a token of some sequence.
  std::vector<char> used_slot;
};

// Indices into the cache arrays (vLLM's layouts: key [blocks, kv_heads, D/x, B, x], value
// [blocks, kv_heads, D, B]) and into the decoded logical copies [blocks, kv_heads, B, D].
inline std::size_t k_index(const Problem& p, int blk, int kvh, int slot, int d) {
  const int D = p.c.head_size, B = p.c.block_size, X = p.x;
  return (((static_cast<std::size_t>(blk) * p.c.num_kv_heads + kvh) * ((D + X - 1) / X) + d / X) *
              B +
          slot) *
             X +
         d % X;
}
inline std::size_t v_index(const Problem& p, int blk, int kvh, int slot, int d) {
  const int D = p.c.head_size, B = p.c.block_size;
  return ((static_cast<std::size_t>(blk) * p.c.num_kv_heads + kvh) * D + d) * B + slot;
}
inline std::size_t logical(const Problem& p, int blk, int kvh, int slot, int d) {
  return ((static_cast<std::size_t>(blk) * p.c.num_kv_heads + kvh) * p.c.block_size + slot) *
             p.c.head_size +
         d;
}

Problem make_problem(const Config& c);
// Overwrites every cache slot no sequence uses (slots past seq_len in a last block, spare
// blocks) with NaN (or zero) bit patterns.
void fill_unused_slots(Problem& p, bool nan);

// Stores a non-finite `value` (NaN or +-inf) into one live element: the query element
// (seq, head = which_index, d), or the key / value element d of token which_index of
// sequence seq in KV head kv_head. fp8 caches store the format's NaN byte, or E5M2's inf
// (E4M3 has none: inf becomes NaN). The decoded copies in p.q / p.k / p.v follow.
enum class Element { query, key, value };
void set_element(Problem& p, Element e, int seq, int which_index, int kv_head, int d, double value);

// out [seq][head][d] in double.
std::vector<double> reference_attention(const Problem& p);

// Per (seq, head) row: the absolute error bound of the kernel output, derived in
// reference.cpp from the unit roundoffs and the algorithm.
std::vector<double> error_bounds(const Problem& p, Kernel kernel);

// Per (seq, head) row, the facts the partition-state bounds use: the bound on any fp32
// logit's error, dx = (D + 1) u A + 3 u |x|max (derived in reference.cpp), and the spread
// max - min of the exact logits.
struct LogitFacts {
  double dx = 0, spread = 0;
};
LogitFacts logit_facts(const Problem& p, int seq, int head);

struct Outputs {
  std::vector<double> out;              // decoded output [seq][head][d]
  std::vector<std::uint8_t> out_bytes;  // raw output storage, for bitwise comparisons
  std::vector<float> exp_sums, max_logits;
  std::vector<std::uint8_t> tmp_out;  // raw
};

// Runs V1 or V2 on the emulator under `profile`. `poison` prefills the outputs with NaN
// patterns so anything the kernels fail to write shows.
Outputs run_kernel(const Problem& p, Kernel kernel, const std::string& profile, bool poison = true);

// Decodes one element of a scalar-typed buffer.
double decode_scalar(DType t, const std::uint8_t* base, std::size_t index);
double unit_roundoff(DType t);

// Max over rows of |got - want| / bound (<= 1 passes), with the worst element described.
struct Comparison {
  double worst_ratio = 0;
  std::string worst;
  bool any_nan = false;
};
Comparison compare(const Problem& p, const std::vector<double>& got,
                   const std::vector<double>& want, const std::vector<double>& bounds);

}  // namespace pagedattn::test
