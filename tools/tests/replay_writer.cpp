#include "replay_writer.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "cli_replay.h"
#include "pagedattn_testing/uniform_case.h"

namespace tools_test {

npy::Array make_array(const std::string& descr, std::vector<std::int64_t> shape, const void* data,
                      std::size_t bytes) {
  npy::Array a;
  a.descr = descr;
  a.shape = std::move(shape);
  a.data.resize(bytes);
  if (bytes) std::memcpy(a.data.data(), data, bytes);
  return a;
}

pagedattn::testing::Case make_case(const ReplaySpec& spec) {
  pagedattn::testing::UniformSpec u;
  if (!pagedattn::testing::parse_short_name(spec.scalar, &u.scalar) ||
      !pagedattn::parse_kv_cache_dtype(spec.cache, &u.cache)) {
    throw std::invalid_argument("make_case: scalar " + spec.scalar + ", cache " + spec.cache);
  }
  u.head_size = spec.head_size;
  u.block_size = spec.block_size;
  u.num_heads = spec.num_heads;
  u.num_kv_heads = spec.num_kv_heads;
  u.seq_lens = spec.seq_lens;
  u.alibi = spec.alibi;
  u.k_scale = u.v_scale = spec.kv_scale;
  u.q_range = u.k_range = u.v_range = spec.range;
  u.seed = spec.seed;
  u.spare_blocks = 2;
  pagedattn::testing::Case c = pagedattn::testing::uniform_case(u);
  c.scale = pagedattn::testing::float_value(1.0 / std::sqrt(static_cast<double>(spec.head_size)));
  pagedattn::testing::fill_unused_slots(c, true);
  return c;
}

Files replay_files(const pagedattn::testing::Case& c) {
  const pagedattn::AttentionCall a = c.call();
  const auto shape = [](const pagedattn::TensorView& t) {
    return std::vector<std::int64_t>(t.shape, t.shape + t.ndim);
  };
  const std::string qd = cli::npy_descr(c.scalar);
  const std::string cd = c.cache == pagedattn::CacheFormat::same ? qd : "|u1";
  Files f;
  f["query"] = make_array(qd, shape(a.query), c.query.data(), c.query.size());
  f["key_cache"] = make_array(cd, shape(a.key_cache), c.key_cache.data(), c.key_cache.size());
  f["value_cache"] =
      make_array(cd, shape(a.value_cache), c.value_cache.data(), c.value_cache.size());
  f["block_tables"] =
      make_array("<i4", shape(a.block_tables), c.block_tables.data(), 4 * c.block_tables.size());
  f["seq_lens"] = make_array("<i4", shape(a.seq_lens), c.seq_lens.data(), 4 * c.seq_lens.size());
  if (c.has_alibi()) {
    f["alibi_slopes"] =
        make_array("<f4", shape(a.alibi_slopes), c.alibi_slopes.data(), 4 * c.alibi_slopes.size());
  }
  return f;
}

std::string write_replay(const Files& files, const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& [name, a] : files) npy::save_atomic(dir + "/" + name + ".npy", a);
  return dir;
}

std::vector<double> decode(const npy::Array& a) {
  for (pagedattn::DType t :
       {pagedattn::DType::f32, pagedattn::DType::f16, pagedattn::DType::bf16}) {
    if (a.descr != cli::npy_descr(t)) continue;
    std::vector<double> v(static_cast<std::size_t>(a.numel()));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = pagedattn::testing::decode(t, a.data.data(), i);
    return v;
  }
  throw std::runtime_error("decode: unexpected dtype " + a.descr);
}

}  // namespace tools_test
