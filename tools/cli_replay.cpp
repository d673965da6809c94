// The contract's rules (shared/design/VLLM_CONTRACT.md) checked file by file, so a user
// replaying a capture learns which file is wrong and why, not just which argument.
#include "cli_replay.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "cli.h"
#include "pagedattn/validate.h"

namespace cli {
namespace {

struct File {
  std::string path;  // shown in every message
  const npy::Array* a;

  [[noreturn]] void fail(const std::string& rule) const { throw InputError(path + ": " + rule); }
  void require_descr(const std::vector<std::string>& allowed, const std::string& why) const {
    for (const std::string& d : allowed) {
      if (a->descr == d) return;
    }
    std::vector<std::string> quoted;
    for (const std::string& d : allowed) quoted.push_back("'" + d + "'");
    fail("dtype must be " + join_set(quoted) + " (" + why + "), got '" + a->descr + "'");
  }
  void require_ndim(std::size_t n, const std::string& dims) const {
    if (a->shape.size() != n) {
      fail("must have " + std::to_string(n) + " dimensions (" + dims + "), got shape " +
           a->shape_string());
    }
  }
  void require_dim(std::size_t d, std::int64_t want, const std::string& rule) const {
    if (a->shape[d] != want) {
      fail("shape " + a->shape_string() + ": dimension " + std::to_string(d) + " must be " +
           std::to_string(want) + " (" + rule + "), got " + std::to_string(a->shape[d]));
    }
  }
};

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

std::string scalar_descr_name(const std::string& d) {
  return d == "<f4" ? "float32" : d == "<f2" ? "float16" : "bfloat16 bits";
}

}  // namespace

Replay load_replay(const std::string& dir_text, bool bf16, const std::string& kv_cache_dtype) {
  const std::filesystem::path dir(dir_text);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InputError(dir_text + ": not a folder (the replay folder holding the .npy inputs)");
  }
  Replay r;
  bool found = false;
  r.query = load_file(dir, "query", true, &found);
  r.key_cache = load_file(dir, "key_cache", true, &found);
  r.value_cache = load_file(dir, "value_cache", true, &found);
  r.block_tables = load_file(dir, "block_tables", true, &found);
  r.seq_lens = load_file(dir, "seq_lens", true, &found);
  r.alibi_slopes = load_file(dir, "alibi_slopes", false, &r.has_alibi);
  const auto path = [&](const char* name) { return (dir / (std::string(name) + ".npy")).string(); };

  // query [num_seqs, num_heads, head_size], the scalar type of everything but the indices.
  const File q{path("query"), &r.query};
  if (bf16) {
    q.require_descr({"<u2"}, "--bf16 is given: bfloat16 bits stored as uint16");
  } else {
    q.require_descr({"<f4", "<f2"}, "float32 or float16; bfloat16 bits as '<u2' need --bf16");
  }
  r.scalar = r.query.descr == "<f4"   ? pagedattn::DType::f32
             : r.query.descr == "<f2" ? pagedattn::DType::f16
                                      : pagedattn::DType::bf16;
  r.out_descr = r.query.descr;
  q.require_ndim(3, "num_seqs, num_heads, head_size");
  const std::int64_t S = r.query.shape[0], H = r.query.shape[1], D = r.query.shape[2];
  bool head_ok = false;
  std::vector<std::string> heads;
  for (int h : pagedattn::kHeadSizes) {
    head_ok |= h == D;
    heads.push_back(std::to_string(h));
  }
  if (!head_ok) {
    q.fail("head_size (dimension 2) must be one of " + join_set(heads) + ", got " +
           std::to_string(D));
  }
  if (S > pagedattn::kMaxGridYZ) {
    q.fail("num_seqs (dimension 0) must be <= 65535 (the grid's y limit), got " +
           std::to_string(S));
  }
  if (H < 1 || H > 65535) {
    q.fail("num_heads (dimension 1) must be in [1, 65535], got " + std::to_string(H));
  }

  // key_cache [num_blocks, num_kv_heads, head_size/x, block_size, x], x = 16 / element size.
  const File k{path("key_cache"), &r.key_cache};
  if (kv_cache_dtype == "auto") {
    k.require_descr({r.query.descr}, "--kv-cache-dtype auto: the query's dtype, " +
                                         scalar_descr_name(r.query.descr));
    r.cache = r.scalar;
  } else {
    k.require_descr({"|u1"}, "--kv-cache-dtype " + kv_cache_dtype + ": fp8 bytes as uint8");
    r.cache =
        kv_cache_dtype == "fp8_e5m2" ? pagedattn::DType::fp8_e5m2 : pagedattn::DType::fp8_e4m3;
  }
  const std::int64_t x = 16 / static_cast<std::int64_t>(r.key_cache.itemsize());
  k.require_ndim(5, "num_blocks, num_kv_heads, head_size/x, block_size, x");
  k.require_dim(4, x, "x = 16 / element size = " + std::to_string(x));
  k.require_dim(2, D / x, "head_size/x with head_size " + std::to_string(D) + " from query.npy");
  const std::int64_t NB = r.key_cache.shape[0], KVH = r.key_cache.shape[1],
                     B = r.key_cache.shape[3];
  if (KVH < 1 || H % KVH != 0) {
    k.fail("num_kv_heads (dimension 1) must be >= 1 and divide num_heads " + std::to_string(H) +
           " from query.npy, got " + std::to_string(KVH));
  }
  bool block_ok = false;
  std::vector<std::string> blocks;
  for (int b : pagedattn::kBlockSizes) {
    block_ok |= b == B;
    blocks.push_back(std::to_string(b));
  }
  if (!block_ok) {
    k.fail("block_size (dimension 3) must be one of " + join_set(blocks) + ", got " +
           std::to_string(B));
  }

  // value_cache [num_blocks, num_kv_heads, head_size, block_size], key_cache's dtype.
  const File v{path("value_cache"), &r.value_cache};
  v.require_descr({r.key_cache.descr}, "key_cache.npy's dtype");
  v.require_ndim(4, "num_blocks, num_kv_heads, head_size, block_size");
  v.require_dim(0, NB, "num_blocks from key_cache.npy");
  v.require_dim(1, KVH, "num_kv_heads from key_cache.npy");
  v.require_dim(2, D, "head_size from query.npy");
  v.require_dim(3, B, "block_size from key_cache.npy");

  const File bt{path("block_tables"), &r.block_tables};
  bt.require_descr({"<i4"}, "int32 physical block ids");
  bt.require_ndim(2, "num_seqs, max_blocks_per_seq");
  bt.require_dim(0, S, "num_seqs from query.npy");
  const std::int64_t M = r.block_tables.shape[1];
  if (M > 0x7fffffff / B)
    bt.fail("max_blocks_per_seq (dimension 1) is too large: " + std::to_string(M));

  const File sl{path("seq_lens"), &r.seq_lens};
  sl.require_descr({"<i4"}, "int32 token counts");
  sl.require_ndim(1, "num_seqs");
  sl.require_dim(0, S, "num_seqs from query.npy");

  // Values: every used block id must exist; entries past a sequence's last block are
  // never read (vLLM pads them with anything), so they are not checked.
  const std::int32_t* lens = r.seq_lens.as<std::int32_t>();
  const std::int32_t* table = r.block_tables.as<std::int32_t>();
  for (std::int64_t s = 0; s < S; ++s) {
    const std::string at = "seq_lens[" + std::to_string(s) + "] = " + std::to_string(lens[s]);
    if (lens[s] < 0) sl.fail(at + " must be >= 0");
    if (lens[s] > M * B) {
      sl.fail(at + " must be <= max_blocks_per_seq * block_size = " + std::to_string(M) + " * " +
              std::to_string(B) + " (block_tables.npy's width times key_cache.npy's block_size)");
    }
    const std::int64_t used = (lens[s] + B - 1) / B;
    for (std::int64_t b = 0; b < used; ++b) {
      const std::int32_t id = table[s * M + b];
      if (id < 0 || id >= NB) {
        bt.fail("block_tables[" + std::to_string(s) + "][" + std::to_string(b) +
                "] = " + std::to_string(id) + " must be in [0, num_blocks = " + std::to_string(NB) +
                ") (used by seq_lens[" + std::to_string(s) + "] = " + std::to_string(lens[s]) +
                ")");
      }
    }
    if (lens[s] > r.max_seq_len) r.max_seq_len = lens[s];
  }

  if (r.has_alibi) {
    const File al{path("alibi_slopes"), &r.alibi_slopes};
    al.require_descr({"<f4"}, "float32, one slope per head");
    al.require_ndim(1, "num_heads");
    al.require_dim(0, H, "num_heads from query.npy");
    const float* slopes = r.alibi_slopes.as<float>();
    for (std::int64_t h = 0; h < H; ++h) {
      if (!std::isfinite(slopes[h])) {
        al.fail("alibi_slopes[" + std::to_string(h) + "] = " + std::to_string(slopes[h]) +
                " must be finite");
      }
    }
  }

  r.num_seqs = static_cast<int>(S);
  r.num_heads = static_cast<int>(H);
  r.head_size = static_cast<int>(D);
  r.num_kv_heads = static_cast<int>(KVH);
  r.block_size = static_cast<int>(B);
  r.num_blocks = NB;
  r.max_blocks_per_seq = static_cast<int>(M);
  return r;
}

}  // namespace cli
