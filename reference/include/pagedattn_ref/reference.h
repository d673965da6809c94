// The high-precision reference for paged attention: the exact answer of the vLLM contract
// (docs/VLLM_CONTRACT.md), computed from the contract alone. Plain C++17; no dependency
// on kernels/ or the emulator, so it can serve as an independent oracle for both.
//
// Semantics (real arithmetic, exact), for sequence s, query head h, L = seq_lens[s]:
//   k_i, v_i  = the dequantized key/value of token i < L, gathered through block_tables
//               (fp8 caches: decode(byte) * k_scale or * v_scale; other caches: the element value,
//               k_scale/v_scale ignored as in vLLM's "auto" cache dtype)
//   x_i       = scale * dot(q, k_i) + alibi_slopes[h] * (i - L + 1)     (slope 0 without ALiBi)
//   out       = sum_i exp(x_i) v_i / sum_i exp(x_i)                     (L == 0: out = +0)
// with query head h reading KV head h / (num_heads / num_kv_heads). Slots at or past L are never
// read. A non-finite q, k_i or v_i element that is read, or a non-finite alibi_slopes[h] with
// L > 0, makes the whole (s, h) row NaN (canonical quiet NaN bits); there is no exact real
// answer to round then. (scale, k_scale and v_scale must be finite: validate() refuses them.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pagedattn::ref {

enum class DType { f32, f16, bf16, fp8_e4m3, fp8_e5m2 };
const char* to_string(DType t);

// A problem in vLLM's layout. Pointers are host pointers; the reference never writes through them.
struct Problem {
  int num_seqs = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_size = 0;                // 32, 64, 80, 96, 112, 120, 128, 192 or 256
  int block_size = 0;               // 8, 16 or 32
  int num_blocks = 0;               // physical blocks in the caches
  int max_blocks_per_seq = 0;       // columns of block_tables
  DType scalar_dtype = DType::f16;  // query (f32, f16, bf16)
  DType cache_dtype = DType::f16;   // == scalar_dtype, or fp8_e4m3 / fp8_e5m2 (uint8 elements)

  const void* query = nullptr;            // [num_seqs, num_heads, head_size]
  const void* key_cache = nullptr;        // [num_blocks, num_kv_heads, head_size/x, block_size, x]
  const void* value_cache = nullptr;      // [num_blocks, num_kv_heads, head_size, block_size]
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  const int32_t* seq_lens = nullptr;      // [num_seqs]
  const float* alibi_slopes = nullptr;    // optional [num_heads]
  float scale = 1.0f;
  float k_scale = 1.0f;  // fp8 caches only
  float v_scale = 1.0f;

  // Element strides of the outer dimensions; 0 means contiguous. Inner dimensions are always
  // contiguous (as in vLLM, whose kernels take exactly these strides).
  int64_t q_stride_seq = 0, q_stride_head = 0;
  int64_t k_stride_block = 0, k_stride_head = 0;
  int64_t v_stride_block = 0, v_stride_head = 0;
  int64_t bt_stride = 0;
};

// Throws std::invalid_argument naming the argument and the allowed values.
void validate(const Problem& p);

struct Options {
  DType out_dtype = DType::f16;  // f32, f16 or bf16 (vLLM: the scalar dtype)
  unsigned mp_precision = 256;   // first MPFR precision of the fallback (bits, >= 64)
  bool nearest_double = false;   // force the MPFR path for `value` to be the nearest double
};

// How one output element was obtained.
struct Cert {
  double fast_bound = 0;  // rigorous bound of |fast value - exact| (inf: fast path gave up)
  bool fallback = false;  // the MPFR path decided the rounding
  unsigned mp_bits = 0;   // MPFR precision that certified it (0: fast path, or exact rational)
  bool exact_rational = false;  // the exact result is rational (all logit groups have equal
                                // value means) and was rounded exactly, ties to even
};

struct Output {
  DType out_dtype = DType::f16;
  int num_seqs = 0, num_heads = 0, head_size = 0;
  // Raw bits, [num_seqs, num_heads, head_size]: f32 bit patterns, or f16/bf16 in the low 16 bits.
  std::vector<uint32_t> bits;
  // value[i] approximates the exact result with |value - exact| <= value_err[i] (rigorous).
  // Where value_nearest[i] is set, value[i] is the exact result rounded to the nearest double.
  std::vector<double> value;
  std::vector<double> value_err;
  std::vector<uint8_t> value_nearest;
  std::vector<Cert> cert;
  std::vector<uint16_t> bits16() const;  // bits narrowed, for f16/bf16 outputs
  size_t index(int s, int h, int d) const { return (size_t(s) * num_heads + h) * head_size + d; }
};

// Certified fast path (double / double-double with running error bounds) with a per-(seq, head)
// MPFR fallback wherever the bound cannot certify the rounding.
Output reference_attention(const Problem& p, const Options& opt = {});

// Every operation in MPFR at `precision_bits` (increased automatically until each element's
// rounding is certified). value[] is always the nearest double here. The oracle of the tests.
Output reference_attention_mpfr(const Problem& p, DType out_dtype, unsigned precision_bits = 256);

// Exact per-partition states for partition size P (a multiple of block_size). Partition j of a
// sequence covers tokens [j*P, min((j+1)*P, L)); partitions with j*P >= L are empty: (-inf, 0, 0).
//   m = max_i x_i over the partition: a dyadic rational, not always a double; `m` is its nearest
//       double (ties to even).
//   s = sum_i exp(x_i - m) with the exact m; `s` is its nearest double.
//   o = sum_i exp(x_i - m) v_i / s (normalized); `o[d]` is its nearest double.
// num_partitions = ceil(max_s seq_lens[s] / P) (at least 1) for every sequence.
struct PartitionStates {
  int num_seqs = 0, num_heads = 0, num_partitions = 0, head_size = 0, partition_size = 0;
  std::vector<double> m, s;  // [num_seqs, num_heads, num_partitions]
  std::vector<double> o;     // [num_seqs, num_heads, num_partitions, head_size]
  size_t index(int seq, int h, int part) const {
    return (size_t(seq) * num_heads + h) * num_partitions + part;
  }
};
PartitionStates reference_partitions(const Problem& p, int partition_size,
                                     unsigned precision_bits = 256);

}  // namespace pagedattn::ref
