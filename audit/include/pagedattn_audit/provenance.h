// What a verdict judged: the commit and the source digests this program was compiled from
// (scripts/source_digest.py defines them and the files they cover), with the run's date.
// Every JSON the report reads carries it as "provenance"; the report marks a section stale
// when a digest differs from the checkout's.
#pragma once
#include <nlohmann/json.hpp>

namespace pagedattn::audit {

// {"commit", "dirty", "digest": {"kernels", "emulator"}, "covers", "date"}; commit and dirty
// are null outside a git checkout.
nlohmann::ordered_json provenance();

}  // namespace pagedattn::audit
