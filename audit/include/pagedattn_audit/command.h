// `pagedattn audit` as a function, so the CLI's file stays a thin registration and the
// tests drive the whole command. A replay folder is loaded by the caller's loader (the
// CLI passes tools' own replay reader, so both commands accept exactly the same folders).
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "pagedattn_audit/inputs.h"

namespace pagedattn::audit {

// Loads DIR with --bf16 and --kv-cache-dtype; throws std::exception naming the file.
using ReplayLoader =
    std::function<Inputs(const std::string& dir, bool bf16, const std::string& kv_cache_dtype)>;

// Returns the exit code: 0 done, 1 runtime failure, 2 usage error (message on err).
// Reports (--json, --csv) are written only after every case ran.
int run_command(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
                const ReplayLoader& load_replay = {});

}  // namespace pagedattn::audit
