// The emulated executor: the kernels compiled by g++ against the emulator's CUDA runtime,
// run on the CPU under a device profile (its warp width and limits).
#include <string>
#include "backends.h"
#include "runner.cuh"

namespace pagedattn::detail {
namespace {
std::string emu_detail(cudaError_t) {
  return "Emulator: " + emu::last_error_message();
}
}  // namespace

void emu_run(const AttentionParams& p, const std::string& profile) {
  if (!profile.empty()) {
    try {
      emu::use_profile(profile);
    } catch (const emu::ProfileError& e) {
      throw Error(std::string("pagedattn: backend profile \"") + profile + "\": " + e.what());
    }
  }
  const emu::Profile& prof = emu::current_profile();
  emu_exec::Target t;
  t.warp_size = prof.warp_size;
  t.smem_optin = prof.shared_memory_per_block_optin;
  t.detail = &emu_detail;
  emu_exec::run(p, t);
}

}  // namespace pagedattn::detail
