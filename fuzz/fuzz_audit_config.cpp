// libFuzzer target: an audit config file (pagedattn_audit/config.h) on arbitrary text,
// then the cross-key checks. Both must accept or throw UsageError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "pagedattn_audit/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    pagedattn::audit::Config c;
    pagedattn::audit::apply_config_json(c, text, "<fuzz>");
    pagedattn::audit::check_config(c);
  } catch (const pagedattn::audit::UsageError&) {
  }
  return 0;
}
