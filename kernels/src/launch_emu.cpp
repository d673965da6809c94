// The emulated executor: the kernels compiled by g++ against the emulator's CUDA runtime,
// run on the CPU under a device profile (its warp width and limits). The profile is this
// call's own: every launch gets it (platform.cuh's Device); the emulator's current profile
// is read only for Backend::emulator("") and never changed.
#include <string>
#include "backends.h"
#include "runner.cuh"

namespace pagedattn::detail {
namespace {
std::string emu_detail(cudaError_t) {
  return "Emulator: " + emu::last_error_message();
}
}  // namespace

void emu_run(const AttentionParams& p, const Backend& backend) {
  emu::Profile prof;
  if (backend.device_profile) {
    prof = *backend.device_profile;
  } else if (backend.profile.empty()) {
    prof = emu::current_profile();
  } else {
    try {
      prof = emu::resolve_profile(backend.profile);
    } catch (const emu::ProfileError& e) {
      throw Error(std::string("pagedattn: backend profile \"") + backend.profile +
                  "\": " + e.what());
    }
  }
  emu_exec::Target t;
  t.device.profile = &prof;
  t.warp_size = prof.warp_size;
  t.smem_optin = prof.shared_memory_per_block_optin;
  t.detail = &emu_detail;
  emu_exec::run(p, t);
}

}  // namespace pagedattn::detail
