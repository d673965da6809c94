#include "emu/check_coverage.h"

#include <atomic>

#include "emu/checks.h"

namespace emu {
namespace {

struct Counters {
  std::atomic<long> launches{0}, memcheck{0}, synccheck{0}, initcheck{0}, racecheck{0},
      racecheck_hazard{0};
};

Counters& counters() {
  static Counters c;
  return c;
}

}  // namespace

CheckCoverage check_coverage() {
  const Counters& c = counters();
  return {c.launches, c.memcheck, c.synccheck, c.initcheck, c.racecheck, c.racecheck_hazard};
}

void reset_check_coverage() {
  Counters& c = counters();
  for (std::atomic<long>* a :
       {&c.launches, &c.memcheck, &c.synccheck, &c.initcheck, &c.racecheck, &c.racecheck_hazard})
    *a = 0;
}

namespace detail {

void count_launch(unsigned checks) {
  Counters& c = counters();
  ++c.launches;
  if (checks & check_memcheck) ++c.memcheck;
  if (checks & check_synccheck) ++c.synccheck;
  if (checks & check_initcheck) ++c.initcheck;
  if (checks & (check_racecheck | check_racecheck_reorder)) ++c.racecheck;
}

void count_hazard_launch() {
  ++counters().racecheck_hazard;
}

}  // namespace detail
}  // namespace emu
