// The executors behind the host API. Plain C++: no CUDA or emulator header, so api.cpp
// compiles once per library without either.
#pragma once
#include <cstddef>
#include <string>
#include "pagedattn/api.h"
#include "pagedattn/params.h"

namespace pagedattn::detail {

// Run validated params (V1, V2 = partitions + reduce, or the reduce alone).
void emu_run(const AttentionParams& p, const Backend& backend);  // its profile, per call
void cuda_run(const AttentionParams& p, void* stream);
// Blocking device-to-host copy on `stream`, for index validation.
void cuda_copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream);

}  // namespace pagedattn::detail
