// CUDA's driver-API header name. The emulator has no driver API (no cuModule*, cuLaunch*);
// this header serves the version macro and the runtime's types, which is what kernels
// that include <cuda.h> usually want from it.
#pragma once
#include <emu/cuda_runtime.h>
#ifndef CUDA_VERSION
#define CUDA_VERSION 12000  // the API level the emulator follows
#endif
