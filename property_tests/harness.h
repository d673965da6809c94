// The property suite's view of one attention problem: a small, printable Spec that RapidCheck
// generates and shrinks, the Problem it builds (kernels/tests/reference.h's layout and
// emulator runners), the exact reference (pagedattn::ref) on the same bytes, and the
// per-row error-over-bound every accuracy property asserts <= 1.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>
#include "../kernels/tests/reference.h"
#include "../kernels/tests/to_exact_problem.h"
#include "pagedattn_ref/reference.h"

namespace pagedattn::prop {

using test::Problem;

// How the logits of every row are shaped. `uniform`: q, k uniform in [-1, 1]. The others
// set q = (1, ...) and key element 0 to the wanted logit x_t (rounded to the cache
// format), so the logit pattern is chosen exactly: x_t in [off - span, off] (`spread`,
// up to exp's underflow edge and past it), all equal (`ties`), one token `span` above
// the rest (`dominant`), or partition j's tokens near off + 10 * k_j (`steps`).
enum class LogitShape : std::uint8_t { uniform, spread, ties, dominant, steps };
// Values RapidCheck's float generator never yields, per tensor: `subnormal` mixes the
// format's subnormals with +0 and -0; `nearmax` is within a factor 2 of the format's max.
enum class ValueClass : std::uint8_t { uniform, subnormal, nearmax };
// Physical blocks: all distinct in random order, or drawn with repetition (shared blocks).
enum class BlockLayout : std::uint8_t { distinct, repeated };

struct Spec {
  DType scalar = DType::f32;
  CacheFormat cache = CacheFormat::same;
  double k_scale = 1, v_scale = 1;  // fp8 caches only
  int head_size = 32;
  int block_size = 16;
  int num_kv_heads = 1;
  int gqa = 1;  // query heads per KV head
  bool alibi = false;
  int partition_size = 64;
  std::vector<int> seq_lens = {1};
  int extra_len = 0;  // max_seq_len = max(seq_lens) + extra_len: trailing empty partitions
  BlockLayout layout = BlockLayout::distinct;
  LogitShape logits = LogitShape::uniform;
  double span = 1;                           // logit spread for the shaped logits
  double offset = 0;                         // logit level for the shaped logits
  ValueClass q_lanes = ValueClass::uniform;  // shaped logits: q elements 1.. (k's are 0)
  ValueClass v_class = ValueClass::uniform;
  std::uint64_t seed = 1;
  std::string profile = "h200";

  int num_heads() const { return num_kv_heads * gqa; }
  int max_seq_len() const;
};
std::ostream& operator<<(std::ostream& os, const Spec& s);

Problem build(const Spec& s);
// Element access in the logical layout, writing the storage bytes and the decoded doubles
// together. `want` is rounded to the storage format (fp8: want / scale, then decoded * scale).
void set_q(Problem& p, int seq, int head, int d, double want);
void set_k(Problem& p, int blk, int kvh, int slot, int d, double want);
void set_v(Problem& p, int blk, int kvh, int slot, int d, double want);
double get_k(const Problem& p, int blk, int kvh, int slot, int d);
double get_v(const Problem& p, int blk, int kvh, int slot, int d);
// Physical (block, slot) of token t of sequence s.
std::pair<int, int> where(const Problem& p, int seq, int t);
// Recomputes used_slot after block tables change.
void recompute_used_slots(Problem& p);

// pagedattn::ref's view of the same bytes.
using test::to_ref;  // kernels/tests/to_exact_problem.h
ref::Output exact(const Problem& p);

// The bound each accuracy property asserts, per output element: theorem
// kernel_error_bound (pagedattn::bound, proofs/bound) with the exact magnitudes of this
// problem, for the profile's warp width, V1 or V2 at p.c.partition_size, and any exp
// within CUDA's documented __expf accuracy (so it holds for every emulator exp model).
// `ex` gives |y|. Rows with a non-finite input get NaN (nothing to bound).
std::vector<double> element_bounds(const Problem& p, Kernel k, const ref::Output& ex,
                                   const std::string& profile);

// max over elements of |got - exact| / bound (bound 0: exact equality demanded; any
// mismatch gives +inf). NaN got where exact is finite gives +inf. Bounds per element.
struct Err {
  double worst = 0;
  std::string where;
};
Err err_over_bound(const Problem& p, const std::vector<double>& got, const ref::Output& want,
                   const std::vector<double>& bounds);

// Outputs that can be compared bit for bit.
bool same_bits(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b);

// The largest finite value of the storage format (fp8: before scaling).
double format_max(DType scalar, CacheFormat cache);
double format_min_subnormal(DType scalar, CacheFormat cache);

// Records the worst err_over_bound a property saw, for campaigns (campaign.cpp reads it).
void observe(double err_over_bound, const std::string& what);
struct Observation {
  double worst = -1;
  std::string what;
};
Observation& observation();

}  // namespace pagedattn::prop
