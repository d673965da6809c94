// The audit's outputs: a table for people, JSON and CSV for programs (schema in
// audit/SCHEMA.md). Files are written whole to a temporary name, then renamed.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "pagedattn_audit/runner.h"

namespace pagedattn::audit {

inline constexpr int kSchemaVersion = 1;

void print_table(std::ostream& os, const std::vector<CaseResult>& cases);
std::string to_json(const std::vector<CaseResult>& cases, const std::string& command);
std::string to_csv(const std::vector<CaseResult>& cases);
// Throws std::runtime_error naming the path.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace pagedattn::audit
