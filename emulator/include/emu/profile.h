// Device profiles: the hardware model the emulator enforces (warp width, shared
// memory, thread and grid limits) and the figures the performance model uses.
// Profiles are JSON data files; every value carries its source and confidence.
#pragma once
#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace emu {

// One profile value's provenance, kept so reports can say how far to trust it.
struct Provenance {
  std::string source;
  std::string confidence;  // "high", "medium", "low", "vendor claim", "measured", ...
};

struct Profile {
  std::string name;
  std::string description;
  int warp_size = 32;
  int multiprocessor_count = 1;
  int max_threads_per_block = 1024;
  std::array<int, 3> max_block_dim{1024, 1024, 64};
  std::array<long long, 3> max_grid_dim{2147483647LL, 65535, 65535};
  long long shared_memory_per_block = 48 * 1024;        // usable without opt-in
  long long shared_memory_per_block_optin = 48 * 1024;  // cudaFuncSetAttribute ceiling
  long long shared_memory_per_multiprocessor = 64 * 1024;
  int max_threads_per_multiprocessor = 2048;
  int registers_per_block = 65536;
  int compute_capability_major = 7;
  int compute_capability_minor = 0;
  long long total_global_memory = 16LL << 30;
  long long l2_cache_bytes = 0;
  double clock_mhz = 1000;
  double memory_bandwidth_gbps = 900;  // GB/s, the figure the performance model uses
  double fp32_tflops = 10;
  double fp16_tflops = 20;
  // Stated accuracy of the device's fast exp (__expf) as a + b*|x| ulps; negative
  // a means "unknown" (BI-V100): the audit then sweeps an exp model instead.
  double expf_fast_ulp_a = 2;
  double expf_fast_ulp_b = 1.173;
  // Whether __syncwarp honours a mask naming only some lanes (BI-V100: unsupported).
  bool partial_mask_syncwarp = true;
  std::map<std::string, Provenance> provenance;  // field name -> where it came from
  std::string file;                              // where it was loaded from ("" if built in)
};

// Raised for a malformed or unknown profile; the message names the file, the field
// and the allowed values.
struct ProfileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses a profile from JSON text; `origin` names the file in error messages.
Profile parse_profile(const std::string& json_text, const std::string& origin);
// Loads a profile by name (searched in $EMU_PROFILE_PATH, then the installed and
// source profile folders, then the built-in copies) or by path (contains '/' or ends .json).
Profile load_profile(const std::string& name_or_path);
// Names of the profiles this build knows without a path.
std::vector<std::string> known_profiles();

// load_profile with $EMU_PROFILE_SET ("field=value,field=value") applied: the profile a
// launch under this name runs with, so the unsure BI-V100 shared-memory size can be
// changed without a new file. Touches no global state; throws ProfileError.
Profile resolve_profile(const std::string& name_or_path);

// The process-wide default for launches that name no profile (emu::launch without one,
// CUDA source's own calls, cudaGetDeviceProperties). Launches that pass a profile
// (emu::launch(profile, ...), what pagedattn's Backend::emulator does) neither read nor
// change it, so threads may run under different profiles at once.
// Makes `name_or_path` (resolve_profile) the current profile; throws ProfileError.
void use_profile(const std::string& name_or_path);
void use_profile(const Profile& profile);
// A copy of the current profile: the last use_profile, else resolve_profile($EMU_PROFILE),
// else resolve_profile("h200"). A copy, so a later use_profile cannot free it.
Profile current_profile();

}  // namespace emu
