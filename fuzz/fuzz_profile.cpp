// libFuzzer target: device profile JSON (emu::parse_profile) on arbitrary text. It must
// return a profile or throw emu::ProfileError naming the problem.
#include <cstddef>
#include <cstdint>
#include <string>

#include "emu/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    emu::parse_profile(text, "<fuzz>");
  } catch (const emu::ProfileError&) {
  }
  return 0;
}
