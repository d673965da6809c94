// The validation rules. Messages name the argument, what it got and what is allowed.
#include "pagedattn/validate.h"

#include <climits>
#include <cmath>
#include <sstream>
#include <vector>
#include "pagedattn/resources.h"

namespace pagedattn {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Error("pagedattn: " + message);
}

template <class It>
std::string set_string(It begin, It end) {
  std::string s = "{";
  for (It i = begin; i != end; ++i) s += (i == begin ? "" : ", ") + std::to_string(*i);
  return s + "}";
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void require_defined(const TensorView& t, const char* name) {
  if (!t.defined()) fail(std::string(name) + " is required (got no tensor)");
}

void require_dtype(const TensorView& t, const char* name, DType want, const char* why) {
  if (t.dtype != want) {
    fail(std::string(name) + " must have dtype " + dtype_name(want) + " (" + why + "), got " +
         dtype_name(t.dtype));
  }
}

// `dims` names each dimension, e.g. "num_seqs, num_heads, head_size".
void require_shape(const TensorView& t, const char* name, const std::vector<std::int64_t>& want,
                   const char* dims) {
  bool ok = t.ndim == static_cast<int>(want.size());
  for (int d = 0; ok && d < t.ndim; ++d) ok = t.shape[d] == want[d];
  if (!ok) {
    fail(std::string(name) + " must have shape " + shape_string(want) + " (" + dims + "), got " +
         t.shape_string());
  }
}

void require_contiguous(const TensorView& t, const char* name) {
  if (!t.is_contiguous()) fail(std::string(name) + " must be contiguous (row-major)");
}

void require_stride(const TensorView& t, const char* name, int dim, std::int64_t want,
                    const char* why) {
  if (t.shape[dim] != 1 && t.strides[dim] != want) {
    fail(std::string(name) + ".stride(" + std::to_string(dim) + ") must be " +
         std::to_string(want) + " (" + why + "), got " + std::to_string(t.strides[dim]));
  }
}

void require_finite(double v, const char* name) {
  if (!std::isfinite(v)) fail(std::string(name) + " must be finite, got " + std::to_string(v));
}

void check_partition_size(int partition_size, std::int64_t block_size) {
  if (partition_size < kMinPartitionSize || partition_size > kMaxPartitionSize ||
      (block_size > 0 && partition_size % block_size != 0)) {
    fail("options.partition_size must be a multiple of block_size (" + std::to_string(block_size) +
         ") in [" + std::to_string(kMinPartitionSize) + ", " + std::to_string(kMaxPartitionSize) +
         "], got " + std::to_string(partition_size));
  }
}

// V2 state tensors: exp_sums, max_logits [S, H, P] f32; tmp_out [S, H, P, D].
void check_states(const TensorView& exp_sums, const TensorView& max_logits,
                  const TensorView& tmp_out, std::int64_t S, std::int64_t H, std::int64_t P,
                  std::int64_t D, DType scalar, const NumericsChoices& choices) {
  const char* dims = "num_seqs, num_heads, max_num_partitions = ceil(max_seq_len / partition_size)";
  for (auto [t, name] : {std::pair{&exp_sums, "exp_sums"}, std::pair{&max_logits, "max_logits"}}) {
    require_defined(*t, name);
    require_dtype(*t, name, DType::f32, "partition statistics are fp32");
    require_shape(*t, name, {S, H, P}, dims);
    require_contiguous(*t, name);
  }
  require_defined(tmp_out, "tmp_out");
  if (!choices.partials_in_output_dtype) {
    require_dtype(tmp_out, "tmp_out", DType::f32,
                  "Numerics::exact_fp32 keeps partial outputs in fp32; vllm_compatible (or "
                  "partials_in_output_dtype) uses the output dtype");
  } else {
    require_dtype(tmp_out, "tmp_out", scalar,
                  "Numerics::vllm_compatible (partials_in_output_dtype): the output dtype");
  }
  require_shape(tmp_out, "tmp_out", {S, H, P, D},
                "num_seqs, num_heads, max_num_partitions, head_size");
  require_contiguous(tmp_out, "tmp_out");
}

}  // namespace

AttentionParams validate_attention(Kernel kernel, const AttentionCall& call,
                                   const Options& options) {
  // The call's fields under the names vLLM gives its arguments (the messages use them).
  const TensorView &out = call.out, &exp_sums = call.exp_sums, &max_logits = call.max_logits,
                   &tmp_out = call.tmp_out, &query = call.query, &key_cache = call.key_cache,
                   &value_cache = call.value_cache, &block_tables = call.block_tables,
                   &seq_lens = call.seq_lens, &alibi_slopes = call.alibi_slopes;
  const std::int64_t num_kv_heads = call.num_kv_heads, block_size = call.block_size,
                     max_seq_len = call.max_seq_len;
  const double scale = call.scale, k_scale = call.k_scale, v_scale = call.v_scale;
  const std::string& kv_cache_dtype = call.kv_cache_dtype;
  const std::int64_t tp_rank = call.blocksparse.tp_rank,
                     blocksparse_local_blocks = call.blocksparse.local_blocks,
                     blocksparse_vert_stride = call.blocksparse.vert_stride,
                     blocksparse_block_size = call.blocksparse.block_size,
                     blocksparse_head_sliding_step = call.blocksparse.head_sliding_step;
  AttentionParams p;
  p.kernel = kernel;
  p.numerics = options.numerics;
  p.grouped = options.grouped;
  p.choices = effective_choices(options);

  // Block-sparse attention is not implemented: only vLLM's defaults are accepted.
  const auto no_blocksparse = [](std::int64_t got, std::int64_t want, const char* name) {
    if (got != want) {
      fail(std::string(name) + " must be " + std::to_string(want) +
           " (block-sparse attention is not supported), got " + std::to_string(got));
    }
  };
  no_blocksparse(blocksparse_local_blocks, 0, "blocksparse_local_blocks");
  no_blocksparse(blocksparse_vert_stride, 0, "blocksparse_vert_stride");
  no_blocksparse(blocksparse_block_size, 64, "blocksparse_block_size");
  no_blocksparse(blocksparse_head_sliding_step, 0, "blocksparse_head_sliding_step");
  if (tp_rank < 0) fail("tp_rank must be >= 0, got " + std::to_string(tp_rank));

  if (!parse_kv_cache_dtype(kv_cache_dtype, &p.cache)) {
    fail("kv_cache_dtype must be one of {\"auto\", \"fp8\", \"fp8_e4m3\", \"fp8_e5m2\"}, got \"" +
         kv_cache_dtype + "\"");
  }

  // query [num_seqs, num_heads, head_size]: rows may be strided, heads packed.
  require_defined(query, "query");
  if (query.ndim != 3) {
    fail("query must have 3 dimensions [num_seqs, num_heads, head_size], got " +
         query.shape_string());
  }
  if (!is_scalar_dtype(query.dtype)) {
    fail(std::string("query must have dtype float32, float16 or bfloat16, got ") +
         dtype_name(query.dtype));
  }
  p.scalar = query.dtype;
  const std::int64_t S = query.shape[0], H = query.shape[1], D = query.shape[2];
  if (!HeadSizeList::contains(D)) {
    fail("head_size (query.size(2)) must be one of " +
         set_string(std::begin(kHeadSizes), std::end(kHeadSizes)) + ", got " + std::to_string(D));
  }
  if (S > kMaxGridYZ) {
    fail("num_seqs (query.size(0)) must be <= 65535 (the grid's y limit), got " +
         std::to_string(S));
  }
  if (H < 1 || H > INT_MAX)
    fail("num_heads (query.size(1)) must be >= 1, got " + std::to_string(H));
  require_stride(query, "query", 2, 1, "head elements are contiguous");
  require_stride(query, "query", 1, D, "heads of a sequence are packed");
  p.num_seqs = static_cast<int>(S);
  p.num_heads = static_cast<int>(H);
  p.head_size = static_cast<int>(D);
  p.q_seq_stride = query.strides[0];
  p.query = query.data;

  require_defined(out, "out");
  require_dtype(out, "out", p.scalar, "the query's dtype");
  require_shape(out, "out", {S, H, D}, "num_seqs, num_heads, head_size");
  require_contiguous(out, "out");
  p.out = out.data;

  if (!BlockSizeList::contains(block_size)) {
    fail("block_size must be one of " + set_string(std::begin(kBlockSizes), std::end(kBlockSizes)) +
         ", got " + std::to_string(block_size));
  }
  p.block_size = static_cast<int>(block_size);

  if (num_kv_heads < 1 || H % num_kv_heads != 0) {
    fail("num_kv_heads must be >= 1 and divide num_heads (" + std::to_string(H) + "), got " +
         std::to_string(num_kv_heads));
  }
  p.num_kv_heads = static_cast<int>(num_kv_heads);

  // Caches: key [num_blocks, num_kv_heads, head_size / x, block_size, x], value
  // [num_blocks, num_kv_heads, head_size, block_size]; inner dimensions packed.
  require_defined(key_cache, "key_cache");
  require_defined(value_cache, "value_cache");
  DType cache_dtype = p.scalar;
  if (p.cache == CacheFormat::same) {
    require_dtype(key_cache, "key_cache", p.scalar, "kv_cache_dtype \"auto\": the query's dtype");
  } else {
    const DType fp8 = p.cache == CacheFormat::fp8_e4m3 ? DType::fp8_e4m3 : DType::fp8_e5m2;
    if (key_cache.dtype != DType::u8 && key_cache.dtype != fp8) {
      fail(std::string("key_cache must have dtype uint8 or ") + dtype_name(fp8) +
           " (kv_cache_dtype \"" + kv_cache_dtype + "\"), got " + dtype_name(key_cache.dtype));
    }
    cache_dtype = key_cache.dtype;
  }
  if (value_cache.dtype != key_cache.dtype) {
    fail(std::string("value_cache must have key_cache's dtype ") + dtype_name(key_cache.dtype) +
         ", got " + dtype_name(value_cache.dtype));
  }
  const std::int64_t x = 16 / static_cast<std::int64_t>(dtype_size(cache_dtype));
  if (D % x != 0) {  // fp8 (x = 16) with head_size 120: vLLM's layout cannot hold it
    fail("head_size " + std::to_string(D) + " is not a multiple of x = " + std::to_string(x) +
         " (16 bytes of " + dtype_name(cache_dtype) +
         " cache elements), so key_cache [num_blocks, num_kv_heads, head_size/x, block_size, x] "
         "cannot hold it: use another kv_cache_dtype or head size");
  }
  if (key_cache.ndim != 5) {
    fail(
        "key_cache must have 5 dimensions [num_blocks, num_kv_heads, head_size/x, block_size, x]"
        " with x = " +
        std::to_string(x) + ", got " + key_cache.shape_string());
  }
  const std::int64_t NB = key_cache.shape[0];
  require_shape(key_cache, "key_cache", {NB, num_kv_heads, D / x, block_size, x},
                "num_blocks, num_kv_heads, head_size/x, block_size, x = 16/sizeof(element)");
  require_stride(key_cache, "key_cache", 4, 1, "packed");
  require_stride(key_cache, "key_cache", 3, x, "packed");
  require_stride(key_cache, "key_cache", 2, block_size * x, "packed");
  require_shape(value_cache, "value_cache", {NB, num_kv_heads, D, block_size},
                "num_blocks, num_kv_heads, head_size, block_size");
  require_stride(value_cache, "value_cache", 3, 1, "packed");
  require_stride(value_cache, "value_cache", 2, block_size, "packed");
  if (value_cache.strides[0] != key_cache.strides[0] ||
      value_cache.strides[1] != key_cache.strides[1]) {
    fail("value_cache.stride(0), stride(1) must equal key_cache's (" +
         std::to_string(key_cache.strides[0]) + ", " + std::to_string(key_cache.strides[1]) +
         "): the kernel uses one block and one head stride, got (" +
         std::to_string(value_cache.strides[0]) + ", " + std::to_string(value_cache.strides[1]) +
         ")");
  }
  p.num_blocks = NB;
  p.kv_block_stride = key_cache.strides[0];
  p.kv_head_stride = key_cache.strides[1];
  p.key_cache = key_cache.data;
  p.value_cache = value_cache.data;

  require_defined(block_tables, "block_tables");
  require_dtype(block_tables, "block_tables", DType::i32, "physical block ids");
  if (block_tables.ndim != 2 || block_tables.shape[0] != S) {
    fail("block_tables must have shape [" + std::to_string(S) +
         ", max_blocks_per_seq] (num_seqs, max_blocks_per_seq), got " +
         block_tables.shape_string());
  }
  require_stride(block_tables, "block_tables", 1, 1, "a row is contiguous");
  if (block_tables.shape[1] > INT_MAX / block_size) {
    fail("block_tables.size(1) is too large: " + std::to_string(block_tables.shape[1]));
  }
  p.max_blocks_per_seq = static_cast<int>(block_tables.shape[1]);
  p.block_table_stride = block_tables.strides[0];
  p.block_tables = block_tables.as<const std::int32_t>();

  require_defined(seq_lens, "seq_lens");
  require_dtype(seq_lens, "seq_lens", DType::i32, "token counts");
  require_shape(seq_lens, "seq_lens", {S}, "num_seqs");
  require_contiguous(seq_lens, "seq_lens");
  p.seq_lens = seq_lens.as<const std::int32_t>();

  if (max_seq_len < 0 || max_seq_len > INT_MAX - 4096) {
    fail("max_seq_len must be in [0, " + std::to_string(INT_MAX - 4096) + "], got " +
         std::to_string(max_seq_len));
  }
  p.max_seq_len = max_seq_len;

  if (alibi_slopes.defined()) {
    require_dtype(alibi_slopes, "alibi_slopes", DType::f32, "one slope per head");
    require_shape(alibi_slopes, "alibi_slopes", {H}, "num_heads");
    require_contiguous(alibi_slopes, "alibi_slopes");
    p.alibi_slopes = alibi_slopes.as<const float>();
  }

  require_finite(scale, "scale");
  p.scale = scale;
  if (p.cache != CacheFormat::same) {
    require_finite(k_scale, "k_scale");
    require_finite(v_scale, "v_scale");
    if (!(k_scale > 0) || !(v_scale > 0)) {
      fail("k_scale and v_scale must be > 0 for an fp8 cache, got " + std::to_string(k_scale) +
           ", " + std::to_string(v_scale));
    }
    p.k_scale = k_scale;
    p.v_scale = v_scale;
  }

  if (kernel == Kernel::v2) {
    check_partition_size(options.partition_size, block_size);
    p.partition_size = options.partition_size;
    const std::int64_t P = max_num_partitions(max_seq_len, options.partition_size);
    if (P > kMaxGridYZ) {
      fail("max_num_partitions = ceil(max_seq_len / partition_size) = " + std::to_string(P) +
           " must be <= 65535 (the grid's z limit): raise options.partition_size");
    }
    p.max_num_partitions = static_cast<int>(P);
    check_states(exp_sums, max_logits, tmp_out, S, H, P, D, p.scalar, p.choices);
    p.exp_sums = exp_sums.as<float>();
    p.max_logits = max_logits.as<float>();
    p.tmp_out = tmp_out.data;
  } else {
    p.partition_size = static_cast<int>(v1_partition_tokens(p.block_size, max_seq_len));
    p.max_num_partitions = 1;
  }
  return p;
}

AttentionParams validate_reduce(const TensorView& out, const TensorView& exp_sums,
                                const TensorView& max_logits, const TensorView& tmp_out,
                                const TensorView& seq_lens, std::int64_t max_seq_len,
                                const Options& options) {
  AttentionParams p;
  p.kernel = Kernel::reduce;
  p.numerics = options.numerics;
  p.choices = effective_choices(options);
  require_defined(out, "out");
  if (out.ndim != 3 || !is_scalar_dtype(out.dtype)) {
    fail(
        "out must be a [num_seqs, num_heads, head_size] tensor of float32, float16 or "
        "bfloat16, got " +
        out.shape_string() + " " + dtype_name(out.dtype));
  }
  require_contiguous(out, "out");
  const std::int64_t S = out.shape[0], H = out.shape[1], D = out.shape[2];
  if (!HeadSizeList::contains(D)) {
    fail("head_size (out.size(2)) must be one of " +
         set_string(std::begin(kHeadSizes), std::end(kHeadSizes)) + ", got " + std::to_string(D));
  }
  if (S > kMaxGridYZ)
    fail("num_seqs must be <= 65535 (the grid's y limit), got " + std::to_string(S));
  if (H < 1 || H > INT_MAX) fail("num_heads (out.size(1)) must be >= 1, got " + std::to_string(H));
  check_partition_size(options.partition_size, 0);
  if (max_seq_len < 0 || max_seq_len > INT_MAX - 4096) {
    fail("max_seq_len must be in [0, " + std::to_string(INT_MAX - 4096) + "], got " +
         std::to_string(max_seq_len));
  }
  const std::int64_t P = max_num_partitions(max_seq_len, options.partition_size);
  check_states(exp_sums, max_logits, tmp_out, S, H, P, D, out.dtype, p.choices);
  require_defined(seq_lens, "seq_lens");
  require_dtype(seq_lens, "seq_lens", DType::i32, "token counts");
  require_shape(seq_lens, "seq_lens", {S}, "num_seqs");
  require_contiguous(seq_lens, "seq_lens");
  p.scalar = out.dtype;
  p.num_seqs = static_cast<int>(S);
  p.num_heads = static_cast<int>(H);
  p.head_size = static_cast<int>(D);
  p.max_seq_len = max_seq_len;
  p.partition_size = options.partition_size;
  p.max_num_partitions = static_cast<int>(P);
  p.out = out.data;
  p.exp_sums = exp_sums.as<float>();
  p.max_logits = max_logits.as<float>();
  p.tmp_out = tmp_out.data;
  p.seq_lens = seq_lens.as<const std::int32_t>();
  return p;
}

void validate_indices(const AttentionParams& p, const std::int32_t* host_block_tables,
                      const std::int32_t* host_seq_lens) {
  for (int s = 0; s < p.num_seqs; ++s) {
    const std::int64_t len = host_seq_lens[s];
    const std::string at = "seq_lens[" + std::to_string(s) + "] = " + std::to_string(len);
    if (len < 0) fail(at + " must be >= 0");
    if (len > p.max_seq_len) {
      fail(at + " must be <= max_seq_len = " + std::to_string(p.max_seq_len));
    }
    if (p.kernel == Kernel::reduce || !host_block_tables) continue;
    if (len > static_cast<std::int64_t>(p.max_blocks_per_seq) * p.block_size) {
      fail(at + " must be <= max_blocks_per_seq * block_size = " +
           std::to_string(p.max_blocks_per_seq) + " * " + std::to_string(p.block_size));
    }
    const std::int64_t used = ceil_div(len, p.block_size);
    const std::int32_t* row = host_block_tables + s * p.block_table_stride;
    for (std::int64_t b = 0; b < used; ++b) {
      if (row[b] < 0 || row[b] >= p.num_blocks) {
        fail("block_tables[" + std::to_string(s) + "][" + std::to_string(b) +
             "] = " + std::to_string(row[b]) +
             " must be in [0, num_blocks = " + std::to_string(p.num_blocks) + ")");
      }
    }
  }
}

}  // namespace pagedattn
