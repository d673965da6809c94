#include "pagedattn_audit/provenance.h"

#include <ctime>

#include "pagedattn/provenance.h"  // generated at build time (cmake/provenance.cmake)

namespace pagedattn::audit {

nlohmann::ordered_json provenance() {
  namespace p = pagedattn::provenance;
  const bool git = *p::kCommit != '\0';
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return {{"commit", git ? nlohmann::ordered_json(p::kCommit) : nlohmann::ordered_json()},
          {"dirty", git ? nlohmann::ordered_json(p::kDirty) : nlohmann::ordered_json()},
          {"digest", {{"kernels", p::kKernelsDigest}, {"emulator", p::kEmulatorDigest}}},
          {"covers", p::kCovers},
          {"date", date}};
}

}  // namespace pagedattn::audit
