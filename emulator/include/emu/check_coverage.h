// What the checks actually did, counted over launches since the process started (or the
// last reset_check_coverage): a report says which checks ran from these, not from the
// checks it asked for. racecheck always runs its reordering passes; its hazard mode runs
// only for kernels built with pagedattn_emulator_race_instrumentation, which is what
// hazard_launches counts (launches whose kernel made instrumented memory accesses).
#pragma once

namespace emu {

struct CheckCoverage {
  long launches = 0;  // every launch that ran
  long memcheck = 0;  // launches with each check enabled
  long synccheck = 0;
  long initcheck = 0;
  long racecheck = 0;         // racecheck or its reordering-only mode: the reordering passes
  long racecheck_hazard = 0;  // of the racecheck launches, those whose hazard mode saw the
                              // kernel's loads and stores (an instrumented kernel)
};

CheckCoverage check_coverage();
void reset_check_coverage();

namespace detail {
void count_launch(unsigned checks);  // launch.cpp, once per launch
void count_hazard_launch();          // hazard.cpp, when the hazard pass saw accesses
}  // namespace detail

}  // namespace emu
