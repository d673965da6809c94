// `pagedattn audit`: the precision audit (audit/), registered here. Replay folders are
// read by this tool's own loader, so `run` and `audit` accept exactly the same folders.
#include <iostream>
#include <memory>

#include "cli.h"
#include "cli_replay.h"
#include "pagedattn_audit/command.h"

namespace cli {
namespace {

Run setup(CLI::App& app) {
  auto line = std::make_shared<pagedattn::audit::CommandLine>(app);
  return [line] {
    return pagedattn::audit::execute(
        line->config(), command_line(), std::cout, std::cerr,
        [](const std::string& dir, bool bf16, const std::string& kv_cache_dtype) {
          return load_replay(dir, bf16, kv_cache_dtype);
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
