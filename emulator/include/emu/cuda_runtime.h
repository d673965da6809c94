// The emulator's CUDA runtime: include this instead of <cuda_runtime.h> and a CUDA C++
// file compiles with g++ unchanged, except that kernel<<<g, b, s>>>(args) is spelled
// emu::launch(kernel, g, b, s, args).
#pragma once
#include <cmath>
#include "emu/qualifiers.h"
#include "emu/vector_types.h"
#include "emu/builtins.h"
#include "emu/sync.h"
#include "emu/atomics.h"
#include "emu/dynamic_shared.h"
#include "emu/runtime_api.h"
#include "emu/launch.h"
#include "emu/profile.h"
#include "emu/checks.h"
#if __has_include("emu/device_math.h")
#include "emu/device_math.h"
#endif
