// The audit's native path (`--backend cuda|both`): inputs uploaded with the real CUDA
// runtime, paged_attention_v1/_v2 on Backend::cuda(), outputs copied back. Compiled only
// where pagedattn_kernels_cuda exists (PAGEDATTN_AUDIT_CUDA); its own translation unit,
// because it includes the real <cuda_runtime.h>, which the emulator's headers shadow.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pagedattn/params.h"
#include "pagedattn_audit/inputs.h"

namespace pagedattn::audit::native {

// The first CUDA device's name. Throws std::runtime_error("no CUDA device: ...") when
// cudaGetDeviceCount fails or finds none (a CUDA build on a machine without a GPU).
std::string require_device();

struct DeviceInputs;  // query, caches, block tables, seq_lens, ALiBi slopes on the device
std::shared_ptr<DeviceInputs> upload(const testing::Case& in);

// Runs `kernel` ("v1" or "v2", `num_partitions` V2's third state dimension) on the device
// and copies the output into `out` (resized). Returns the kernel time in seconds
// (cudaEvent around the call, synchronized). Throws what the library throws
// (pagedattn::LaunchError for a refused launch) or std::runtime_error for CUDA errors.
double run(const DeviceInputs& d, const std::string& kernel, const Options& opt,
           std::int64_t num_partitions, std::vector<std::uint8_t>& out);

}  // namespace pagedattn::audit::native
