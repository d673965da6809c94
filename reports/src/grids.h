// The audit grids the report runs, by size (quick, standard, full).
#pragma once
#include <vector>

#include "pagedattn_audit/config.h"
#include "pagedattn_report/report.h"

namespace pagedattn::report {

struct Grid {
  const char* purpose;  // "precision", "headline", "emulator checks"
  audit::Config config;
};

std::vector<Grid> precision_grids(const ReportOptions& o);
// A small grid run with every emulator check on (EMU_CHECKS=all).
audit::Config checks_grid(const ReportOptions& o);
// Cases a grid will produce (for the progress line).
long case_count(const audit::Config& c);

}  // namespace pagedattn::report
