// A replay folder read as the kernels library reads its arguments: this file only turns
// .npy files into tensor views (which file, which dtype) and derives what vLLM's caller
// derives (num_kv_heads, block_size, max_seq_len); every contract rule is the library's
// own (kernels/src/validate.cpp), and its message is given the name of the file at fault.
// What passes becomes a testing::Case holding the files' bytes.
#include "cli_replay.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "cli.h"
#include "pagedattn/validate.h"

namespace cli {
namespace {

npy::Array load_file(const std::filesystem::path& dir, const std::string& name, bool required,
                     bool* found) {
  const std::filesystem::path p = dir / (name + ".npy");
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) {
    if (required) {
      throw InputError(p.string() +
                       ": missing (a replay folder needs query, key_cache, "
                       "value_cache, block_tables and seq_lens .npy files)");
    }
    *found = false;
    return {};
  }
  *found = true;
  try {
    return npy::load(p.string());
  } catch (const npy::Error& e) {
    throw InputError(e.what());
  }
}

// The file a library message is about: the argument it starts with (after "pagedattn: "),
// or a quantity derived from that file's shape.
std::string file_of(const std::string& message) {
  std::string m = message;
  if (m.rfind("pagedattn: ", 0) == 0) m = m.substr(11);
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"head_size (query", "query"},    {"num_seqs (query", "query"},
      {"num_heads (query", "query"},    {"query", "query"},
      {"key_cache", "key_cache"},       {"value_cache", "value_cache"},
      {"block_tables", "block_tables"}, {"seq_lens", "seq_lens"},
      {"alibi_slopes", "alibi_slopes"}, {"block_size", "key_cache"},
      {"num_kv_heads", "key_cache"},    {"head_size ", "key_cache"},  // "not a multiple of x"
      {"max_seq_len", "seq_lens"},
  };
  for (const auto& [prefix, file] : kPrefixes) {
    if (m.rfind(prefix, 0) == 0) return file;
  }
  return "";
}

// The element type an array's .npy type string stores, for the library to judge.
pagedattn::DType dtype_of(const std::string& path, const npy::Array& a, bool bf16) {
  if (a.descr == "<f4") return pagedattn::DType::f32;
  if (a.descr == "<f2") return pagedattn::DType::f16;
  if (a.descr == "<u2" && bf16) return pagedattn::DType::bf16;
  if (a.descr == "|u1") return pagedattn::DType::u8;
  if (a.descr == "<i4") return pagedattn::DType::i32;
  throw InputError(path +
                   ": dtype must be one of {'<f4', '<f2', '|u1', '<i4'} or '<u2' with "
                   "--bf16, got '" +
                   a.descr + "'");
}

// A contiguous view of an array's bytes as `dtype` (an empty array stays "defined").
pagedattn::TensorView view_of(npy::Array& a, pagedattn::DType dtype) {
  pagedattn::TensorView t;
  t.data = a.data.empty() ? static_cast<void*>(&a) : a.data.data();  // empty: still "defined"
  t.dtype = dtype;
  t.ndim = static_cast<int>(a.shape.size());
  std::int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = a.shape[d];
    t.strides[d] = stride;
    stride *= a.shape[d];
  }
  return t;
}

struct Files {
  npy::Array query, key_cache, value_cache, block_tables, seq_lens, alibi_slopes;
  bool has_alibi = false;
};

}  // namespace

std::string npy_descr(pagedattn::DType scalar) {
  return scalar == pagedattn::DType::f32 ? "<f4" : scalar == pagedattn::DType::f16 ? "<f2" : "<u2";
}

pagedattn::testing::Case load_replay(const std::string& dir_text, bool bf16,
                                     const std::string& kv_cache_dtype) {
  const std::filesystem::path dir(dir_text);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InputError(dir_text + ": not a folder (the replay folder holding the .npy inputs)");
  }
  Files r;
  bool found = false;
  r.query = load_file(dir, "query", true, &found);
  r.key_cache = load_file(dir, "key_cache", true, &found);
  r.value_cache = load_file(dir, "value_cache", true, &found);
  r.block_tables = load_file(dir, "block_tables", true, &found);
  r.seq_lens = load_file(dir, "seq_lens", true, &found);
  r.alibi_slopes = load_file(dir, "alibi_slopes", false, &r.has_alibi);
  const auto path = [&](const std::string& name) { return (dir / (name + ".npy")).string(); };

  // The query's type string decides the scalar type, so it is the one checked here.
  const std::string qd = r.query.descr;
  if (bf16 && qd != "<u2") {
    throw InputError(path("query") +
                     ": dtype must be '<u2' (--bf16 is given: bfloat16 bits "
                     "stored as uint16), got '" +
                     qd + "'");
  }
  if (!bf16 && qd != "<f4" && qd != "<f2") {
    throw InputError(path("query") +
                     ": dtype must be '<f4' or '<f2' (float32 or float16; "
                     "bfloat16 bits as '<u2' need --bf16), got '" +
                     qd + "'");
  }
  const pagedattn::DType scalar = dtype_of(path("query"), r.query, bf16);

  // What the caller derives: from query's and key_cache's shapes, so those need their
  // dimensions before anything else can be said.
  if (r.query.shape.size() != 3) {
    throw InputError(path("query") +
                     ": must have 3 dimensions (num_seqs, num_heads, "
                     "head_size), got shape " +
                     r.query.shape_string());
  }
  if (r.key_cache.shape.size() != 5) {
    throw InputError(path("key_cache") +
                     ": must have 5 dimensions (num_blocks, num_kv_heads, head_size/x, "
                     "block_size, x), got shape " +
                     r.key_cache.shape_string());
  }
  const std::int64_t num_kv_heads = r.key_cache.shape[1];
  const std::int64_t block_size = r.key_cache.shape[3];
  const pagedattn::DType lens_type = dtype_of(path("seq_lens"), r.seq_lens, bf16);
  std::int64_t max_seq_len = 0;
  if (lens_type == pagedattn::DType::i32) {
    const std::int32_t* lens = r.seq_lens.as<std::int32_t>();
    for (std::int64_t s = 0; s < r.seq_lens.numel(); ++s) {
      max_seq_len = std::max<std::int64_t>(max_seq_len, lens[s]);
    }
  }

  // The library's rules, V1's (V2's extra ones are about its outputs and partitions).
  const pagedattn::TensorView query_view = view_of(r.query, scalar);
  const pagedattn::TensorView key_view =
      view_of(r.key_cache, dtype_of(path("key_cache"), r.key_cache, bf16));
  const pagedattn::TensorView value_view =
      view_of(r.value_cache, dtype_of(path("value_cache"), r.value_cache, bf16));
  const pagedattn::TensorView tables_view =
      view_of(r.block_tables, dtype_of(path("block_tables"), r.block_tables, bf16));
  const pagedattn::TensorView lens_view = view_of(r.seq_lens, lens_type);
  pagedattn::TensorView alibi_view;
  if (r.has_alibi) {
    alibi_view = view_of(r.alibi_slopes, dtype_of(path("alibi_slopes"), r.alibi_slopes, bf16));
  }
  try {
    pagedattn::AttentionCall call;
    call.query = query_view;
    call.key_cache = key_view;
    call.value_cache = value_view;
    call.num_kv_heads = num_kv_heads;
    call.block_tables = tables_view;
    call.seq_lens = lens_view;
    call.block_size = block_size;
    call.max_seq_len = max_seq_len;
    call.alibi_slopes = alibi_view;
    call.kv_cache_dtype = kv_cache_dtype;
    // The library's rules (shapes, dtypes, then index values), then the files' bytes
    // copied into the case.
    pagedattn::testing::Case c = pagedattn::testing::case_of(call);
    c.scale = pagedattn::testing::float_value(1.0 / std::sqrt(static_cast<double>(c.head_size)));
    return c;
  } catch (const pagedattn::Error& e) {
    const std::string file = file_of(e.what());
    throw InputError((file.empty() ? dir_text : path(file)) + ": " + e.what());
  }
}

}  // namespace cli
