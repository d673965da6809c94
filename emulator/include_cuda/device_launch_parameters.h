// CUDA's header name, served by the emulator: threadIdx, blockIdx, blockDim, gridDim,
// warpSize come with the runtime.
#pragma once
#include <emu/cuda_runtime.h>
