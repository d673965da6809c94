// The report's "implementations checked" section: the JSON files `python -m
// pagedattn_torch.check ... --json FILE` writes (torch/CHECK_SCHEMA.md), one row per
// implementation and device.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace pagedattn::report {

// Every *.json in `dir` whose "schema" is pagedattn-check/1; for one implementation and
// device the newest file (by its name's order among equal keys: the last) wins. Returns
// {"dir", "rows": [...], "ignored": [file: why]}; rows empty when the folder is missing.
nlohmann::json checks_section(const std::string& dir);

}  // namespace pagedattn::report
