// `pagedattn audit`: the precision audit (audit/), registered here. Replay folders are
// read by this tool's own loader, so `run` and `audit` accept exactly the same folders.
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <utility>

#include "cli.h"
#include "cli_replay.h"
#include "pagedattn_audit/command.h"

namespace cli {
namespace {

pagedattn::audit::Inputs to_inputs(Replay r, const std::string& kv_cache_dtype) {
  pagedattn::audit::Inputs in;
  in.num_seqs = r.num_seqs;
  in.num_heads = r.num_heads;
  in.num_kv_heads = r.num_kv_heads;
  in.head_size = r.head_size;
  in.block_size = r.block_size;
  in.dtype = r.scalar;
  pagedattn::parse_kv_cache_dtype(kv_cache_dtype, &in.cache);  // checked by the parser
  in.num_blocks = r.num_blocks;
  in.max_blocks_per_seq = r.max_blocks_per_seq;
  in.max_seq_len = r.max_seq_len;
  in.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(r.head_size)));
  in.query = std::move(r.query.data);
  in.key_cache = std::move(r.key_cache.data);
  in.value_cache = std::move(r.value_cache.data);
  in.block_tables.resize(r.block_tables.numel());
  std::memcpy(in.block_tables.data(), r.block_tables.data.data(), 4 * in.block_tables.size());
  in.seq_lens.resize(r.seq_lens.numel());
  std::memcpy(in.seq_lens.data(), r.seq_lens.data.data(), 4 * in.seq_lens.size());
  if (r.has_alibi) {
    in.alibi_slopes.resize(r.alibi_slopes.numel());
    std::memcpy(in.alibi_slopes.data(), r.alibi_slopes.data.data(), 4 * in.alibi_slopes.size());
  }
  in.distribution = "replay";
  return in;
}

Run setup(CLI::App& app) {
  auto line = std::make_shared<pagedattn::audit::CommandLine>(app);
  return [line] {
    return pagedattn::audit::execute(
        line->config(), command_line(), std::cout, std::cerr,
        [](const std::string& dir, bool bf16, const std::string& kv_cache_dtype) {
          return to_inputs(load_replay(dir, bf16, kv_cache_dtype), kv_cache_dtype);
        });
  };
}

const bool registered =
    add_command({"audit",
                 "precision audit: V1 and V2 against the exact reference over a grid of cases or "
                 "a replay folder; table, JSON and CSV reports",
                 &setup});

}  // namespace
}  // namespace cli
