// Flag parsing for every command: strict, so a typo is an error rather than a silently
// ignored setting, and every message names the flag and what it accepts.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli.h"
#include "emu/profile.h"

namespace cli {

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  auto it = flags.find(flag);
  return it == flags.end() ? fallback : it->second;
}

std::string join_set(const std::vector<std::string>& items) {
  std::string s = "{";
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + "}";
}

Args parse_args(const std::vector<std::string>& argv, const std::vector<FlagSpec>& specs) {
  Args args;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      args.flags["--help"] = "";
      continue;
    }
    if (a.size() < 2 || a[0] != '-') {
      args.positional.push_back(a);
      continue;
    }
    const std::size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (!spec) {
      std::vector<std::string> known;
      for (const FlagSpec& s : specs) known.push_back(s.name);
      known.push_back("--help");
      throw UsageError("unknown flag '" + name + "' (allowed: " + join_set(known) + ")");
    }
    if (!spec->takes_value) {
      if (eq != std::string::npos) throw UsageError(name + " takes no value, got '" + a + "'");
      args.flags[name] = "";
    } else if (eq != std::string::npos) {
      args.flags[name] = a.substr(eq + 1);
    } else {
      if (i + 1 >= argv.size()) throw UsageError(name + " needs a value");
      args.flags[name] = argv[++i];
    }
  }
  return args;
}

long long parse_int(const std::string& flag, const std::string& text, long long lo, long long hi,
                    const std::string& allowed) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
    throw UsageError(flag + " must be " + allowed + ", got '" + text + "'");
  }
  return v;
}

double parse_double(const std::string& flag, const std::string& text, const std::string& allowed) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) {
    throw UsageError(flag + " must be " + allowed + ", got '" + text + "'");
  }
  return v;
}

std::string parse_choice(const std::string& flag, const std::string& text,
                         const std::vector<std::string>& choices) {
  for (const std::string& c : choices) {
    if (c == text) return c;
  }
  throw UsageError(flag + " must be one of " + join_set(choices) + ", got '" + text + "'");
}

void check_profile(const std::string& flag, const std::string& name) {
  try {
    emu::load_profile(name);
  } catch (const emu::ProfileError& e) {
    throw UsageError(flag + " must name a device profile " + join_set(emu::known_profiles()) +
                     " or a profile .json file, got '" + name + "' (" + e.what() + ")");
  }
}

}  // namespace cli
