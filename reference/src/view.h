// The reference's own gather: reads q, k_i, v_i of the contract's layout as exact doubles.
#pragma once

#include <cstdint>
#include <vector>

#include "pagedattn_ref/reference.h"

namespace pagedattn::ref::detail {

class View {
 public:
  explicit View(const Problem& p);  // validates p

  const Problem& p;
  int group;  // query heads per KV head
  int x;      // elements per 16 bytes of the key cache

  int seq_len(int s) const { return p.seq_lens[s]; }
  int kv_head(int h) const { return h / group; }
  double slope(int h) const { return p.alibi_slopes ? double(p.alibi_slopes[h]) : 0.0; }
  // q[s, h, :] as doubles (exact).
  void query(int s, int h, double* out) const;
  // Dequantized key / value of token i of sequence s, KV head g: exact doubles. fp8: the decoded
  // byte (at most 4 significant bits) times a float scale (24 bits) is exact in double.
  void key(int s, int g, int i, double* out) const;
  void value(int s, int g, int i, double* out) const;

 private:
  int64_t block_of(int s, int i) const {
    return p.block_tables[int64_t(s) * bt_ + i / p.block_size];
  }
  double cache_elem(const void* base, int64_t idx) const;
  int64_t qs_, qh_, kb_, kh_, vb_, vh_, bt_;
};

}  // namespace pagedattn::ref::detail
