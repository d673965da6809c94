// CUDA's header name, served by the emulator: the runtime API.
#pragma once
#include <emu/cuda_runtime.h>
