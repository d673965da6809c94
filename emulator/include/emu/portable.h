// Spellings that compile under both nvcc and the emulator.
#pragma once
#if defined(__CUDACC__)
#define EMU_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#else
#include "emu/dynamic_shared.h"
#endif
