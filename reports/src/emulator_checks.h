// The emulator-checks section: a small grid with every check on, per profile, and which
// checks ran on how many of its launches (emu/check_coverage.h), so the report states what
// ran rather than what was asked for.
#pragma once
#include <nlohmann/json.hpp>

#include "pagedattn_report/report.h"

namespace pagedattn::report {

// Runs checks_grid(o) once per profile under EMU_CHECKS=all. `instrumented`: whether this
// program's kernels carry the race instrumentation (recorded; the coverage counts are what
// the report believes).
nlohmann::json emulator_checks_section(const ReportOptions& o, bool instrumented);

}  // namespace pagedattn::report
