// The registry of subcommands and the CLI11 validators they share: strict, so a typo is
// an error rather than a silently ignored setting.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli.h"
#include "emu/profile.h"

namespace cli {
namespace {

std::string& typed() {
  static std::string s;
  return s;
}

std::vector<Command>& registry() {
  static std::vector<Command> r;  // filled during static initialization
  return r;
}

}  // namespace

bool add_command(const Command& command) {
  auto& r = registry();
  r.insert(std::upper_bound(
               r.begin(), r.end(), command,
               [](const Command& a, const Command& b) { return std::string(a.name) < b.name; }),
           command);
  return true;
}

const std::vector<Command>& commands() {
  return registry();
}

void set_command_line(int argc, char** argv) {
  typed() = "pagedattn";
  for (int i = 1; i < argc; ++i) typed() += std::string(" ") + argv[i];
}

const std::string& command_line() {
  return typed();
}

std::string join_set(const std::vector<std::string>& items) {
  std::string s = "{";
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + "}";
}

CLI::Validator one_of(const std::vector<std::string>& choices) {
  return CLI::Validator(
      [choices](std::string& v) -> std::string {
        if (std::find(choices.begin(), choices.end(), v) != choices.end()) return "";
        return "must be one of " + join_set(choices) + ", got '" + v + "'";
      },
      "", "one_of");
}

CLI::Validator finite_number(bool positive) {
  return CLI::Validator(
      [positive](std::string& v) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        const bool ok = !v.empty() && *end == '\0' && errno == 0 && std::isfinite(d);
        if (ok && (!positive || d > 0)) return "";
        return std::string("must be a finite number") + (positive ? " > 0" : "") + ", got '" + v +
               "'";
      },
      "", "finite_number");
}

CLI::Validator int_in(long long lo, long long hi, const std::string& allowed) {
  return CLI::Validator(
      [lo, hi, allowed](std::string& v) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long n = std::strtoll(v.c_str(), &end, 10);
        if (!v.empty() && *end == '\0' && errno == 0 && n >= lo && n <= hi) return "";
        return "must be " + allowed + ", got '" + v + "'";
      },
      "", "int_in");
}

CLI::Validator profile_name() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        try {
          emu::load_profile(v);
          return "";
        } catch (const emu::ProfileError& e) {
          return "must name a device profile " + join_set(emu::known_profiles()) +
                 " or a profile .json file, got '" + v + "' (" + e.what() + ")";
        }
      },
      "", "profile");
}

}  // namespace cli
