// CUDA's header name, served by the emulator (pagedattn::cuda_emulated puts this folder on
// the include path): third-party CUDA source compiles unchanged.
#pragma once
#include <emu/cuda_fp8.h>
