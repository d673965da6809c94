// Sanitizer-like checks, as compute-sanitizer's tools: chosen with EMU_CHECKS
// ("memcheck,racecheck,synccheck,initcheck" or "all") or with set_checks().
// A finding prints one line to stderr that begins with the check's name, and the
// launch returns an error (also reported by the next cudaDeviceSynchronize).
#pragma once
#include <string>
#include <vector>

namespace emu {

enum Check : unsigned {
  check_none = 0,
  check_memcheck = 1u << 0,
  check_racecheck = 1u << 1,
  check_synccheck = 1u << 2,
  check_initcheck = 1u << 3,
  check_all = 0xfu,
  // racecheck's fast mode: only the reordering passes, no shadow memory (also implied by
  // racecheck, which adds the hazard check for instrumented kernels).
  check_racecheck_reorder = 1u << 4,
};

// Parses "memcheck,racecheck,..." / "all" / "" / "none"; throws std::invalid_argument
// naming the unknown word and the allowed ones.
unsigned parse_checks(const std::string& spec);
void set_checks(unsigned checks);
// The checks in force: the last set_checks, else $EMU_CHECKS, else none.
unsigned enabled_checks();

struct Finding {
  std::string check;    // "memcheck", "racecheck", "synccheck", "initcheck"
  std::string message;  // the whole line, beginning with the check's name
};
// Findings of the last launch on this host thread.
const std::vector<Finding>& last_findings();

// memcheck's shared-memory coverage in this process so far: launches under memcheck, and
// how many of them ran instrumented kernel code, whose every shared-memory access is
// checked against byte-exact bounds (the others have guard pages and canaries only; see
// emulator/README.md, "Sanitizer-like checks").
struct MemcheckCoverage {
  unsigned long long launches = 0, instrumented = 0;
};
MemcheckCoverage memcheck_coverage();

// Host threads that run blocks: the last set_host_threads, else $EMU_THREADS, else
// all cores. Results never depend on it.
void set_host_threads(int n);
int host_threads();

}  // namespace emu
