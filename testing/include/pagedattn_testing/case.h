// The one case model: the inputs of one paged-attention call, owned, in vLLM's layout
// (the bytes of query, key_cache and value_cache, block_tables, seq_lens, ALiBi slopes),
// with its dtypes, cache format, scales and shape. It gives the kernels an AttentionCall
// over its bytes and the exact reference a ref::Problem over the same bytes, so both read
// exactly one set of inputs. The bytes are the only copy: element access decodes them
// (keys and values dequantized), and setters write them.
//
// Generators (the kernel tests', the property suite's, the audit's distributions, the
// replay reader) all produce a Case; none has a case type of its own.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pagedattn/attention_call.h"
#include "pagedattn/dtypes.h"
#include "pagedattn_ref/reference.h"
#include "pagedattn_testing/formats.h"
#include "pagedattn_testing/kv_layout.h"

namespace pagedattn::testing {

// Where token t of a sequence lives: its physical block and slot.
struct Physical {
  Block block;
  Slot slot;
};

struct Case {
  DType scalar = DType::f32;              // query and output: f32, f16, bf16
  CacheFormat cache = CacheFormat::same;  // kv_cache_dtype
  int num_seqs = 0, num_heads = 0, num_kv_heads = 0, head_size = 0, block_size = 0;
  std::int64_t num_blocks = 0;
  int max_blocks_per_seq = 0;  // columns of block_tables
  std::int64_t max_seq_len = 0;
  // The reference takes these as float: generators store float values (exact_problem()
  // refuses others, so the kernels and the reference never see two different scales).
  double scale = 1, k_scale = 1, v_scale = 1;  // k_scale, v_scale: fp8 caches only

  std::vector<std::uint8_t> query, key_cache, value_cache;  // element bytes
  std::vector<std::int32_t> block_tables;                   // [num_seqs][max_blocks_per_seq]
  std::vector<std::int32_t> seq_lens;                       // [num_seqs]
  std::vector<float> alibi_slopes;                          // [num_heads]; empty: no ALiBi

  // Sizes every buffer from the shape (zero bytes; block table entries 0). Call after
  // setting the shape fields.
  void allocate();

  KvLayout layout() const;
  DType cache_element() const { return testing::cache_element(scalar, cache); }
  DType cache_storage() const { return testing::cache_storage(scalar, cache); }
  // The dequantization scales as the contract applies them (1 unless the cache is fp8).
  double key_scale() const { return cache == CacheFormat::same ? 1.0 : k_scale; }
  double value_scale() const { return cache == CacheFormat::same ? 1.0 : v_scale; }
  int kv_head_of(int head) const { return head / (num_heads / num_kv_heads); }
  bool has_alibi() const { return !alibi_slopes.empty(); }

  std::size_t q_index(int seq, int head, int d) const {
    return (static_cast<std::size_t>(seq) * num_heads + head) * head_size + d;
  }
  std::int32_t& table(int seq, int j) {
    return block_tables[static_cast<std::size_t>(seq) * max_blocks_per_seq + j];
  }
  std::int32_t table(int seq, int j) const {
    return block_tables[static_cast<std::size_t>(seq) * max_blocks_per_seq + j];
  }
  Physical where(int seq, std::int64_t token) const {
    return {Block{table(seq, static_cast<int>(token / block_size))},
            Slot{static_cast<int>(token % block_size)}};
  }

  // Elements, decoded exactly; keys and values dequantized (times key_scale() or
  // value_scale(), exact in double).
  double q(int seq, int head, int d) const;
  double key(Block b, KvHead h, Slot s, Dim d) const;
  double value(Block b, KvHead h, Slot s, Dim d) const;
  // Stores `want` (keys and values: want / scale) rounded to the element format, as
  // testing::store() does; returns the element's new (dequantized) value.
  double set_q(int seq, int head, int d, double want);
  double set_key(Block b, KvHead h, Slot s, Dim d, double want);
  double set_value(Block b, KvHead h, Slot s, Dim d, double want);
  // The bulk forms, for draws over whole caches (millions of elements a property case):
  // the same bytes as set_key / set_value element by element, without a format lookup,
  // an encode call and a decode per element (testing/tests/test_case.cpp holds them to
  // the element setters, bit for bit). set_key_token: the head_size key elements of one
  // slot, want[d]; set_value_block: the block_size x head_size value elements of one
  // (block, KV head), want[slot * head_size + d] (slot-major, as generators draw).
  void set_key_token(Block b, KvHead h, Slot s, const double* want);
  void set_value_block(Block b, KvHead h, const double* want);

  // used[block * block_size + slot]: whether some token inside its sequence's seq_len
  // lives there (the slots the contract lets the kernels read).
  std::vector<char> used_slots() const;

  // The kernels' arguments over this case's bytes (inputs and scalars, by name); the
  // caller sets the outputs. The kernels never write the inputs.
  AttentionCall call() const;
  // The exact reference's view of the same bytes. Throws std::invalid_argument when a
  // scale is not a float value (the reference would read another number).
  ref::Problem exact_problem() const;
};

// A Case holding copies of the tensors of `call` (gathered through their strides, so any
// layout the kernels accept is read as they read it): how a caller holding tensors, such
// as the PyTorch bindings, hands its inputs to the judge; the replay reader builds its
// case this way. The tensors must be in host memory. Validates the call first, shapes and
// dtypes, then index values (pagedattn::Error as the kernels would throw); without `out`
// a placeholder of the query's shape stands in (it is not read).
Case case_of(const AttentionCall& call);

}  // namespace pagedattn::testing
