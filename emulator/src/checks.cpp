// The choice of checks and the findings of the last launch.
#include "emu/checks.h"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "internal.h"
#include "tls.h"

namespace emu {
namespace {
bool g_checks_set = false;
unsigned g_checks = 0;
int g_threads = 0;
}  // namespace

unsigned parse_checks(const std::string& spec) {
  unsigned out = 0;
  std::stringstream ss(spec);
  std::string word;
  while (std::getline(ss, word, ',')) {
    if (word.empty() || word == "none") continue;
    if (word == "all")
      out |= check_all;
    else if (word == "memcheck")
      out |= check_memcheck;
    else if (word == "racecheck")
      out |= check_racecheck;
    else if (word == "racecheck-reorder")
      out |= check_racecheck_reorder;
    else if (word == "synccheck")
      out |= check_synccheck;
    else if (word == "initcheck")
      out |= check_initcheck;
    else
      throw std::invalid_argument(
          "EMU_CHECKS: unknown check '" + word +
          "'; allowed: memcheck, racecheck, racecheck-reorder, synccheck, initcheck, all, "
          "none");
  }
  return out;
}

void set_checks(unsigned checks) {
  g_checks = checks & (check_all | check_racecheck_reorder);
  g_checks_set = true;
}

unsigned enabled_checks() {
  if (g_checks_set) return g_checks;
  static const unsigned from_env = [] {
    const char* e = std::getenv("EMU_CHECKS");
    return e ? parse_checks(e) : 0u;
  }();
  return from_env;
}

const std::vector<Finding>& last_findings() {
  auto& c = detail::cold_tls();
  if (!c.last_findings) c.last_findings = new std::vector<Finding>();
  return *c.last_findings;
}

void set_host_threads(int n) {
  g_threads = n;
}

int host_threads() {
  if (g_threads > 0) return g_threads;
  if (const char* e = std::getenv("EMU_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace detail {
LaunchRun* current_launch = nullptr;

void LaunchRun::report(const char* check, const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex);
  std::string text = std::string(check) + ": " + line;
  for (const auto& f : findings)
    if (f.message == text) return;  // one line per distinct finding
  if (findings.size() < 100) std::cerr << text << "\n";
  findings.push_back({check, text});
}
}  // namespace detail
}  // namespace emu
