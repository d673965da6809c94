// Stand-in for the CUDA header that CUDA 13 removed (legacy texture-reference fetches).
// clang's CUDA wrapper (__clang_cuda_runtime_wrapper.h, clang 19) still includes it; the
// kernels use no textures, so an empty header is all clang needs from it. Used only by
// scripts/targets/compile_targets.sh, never by nvcc.
#pragma once
