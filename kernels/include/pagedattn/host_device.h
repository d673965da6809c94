// PAGEDATTN_HD marks functions that run on host and device. Public headers must also
// compile in plain C++ programs (tests, tools, bindings) that include no CUDA header.
#pragma once

#if defined(__CUDACC__)
#define PAGEDATTN_HD __host__ __device__ __forceinline__
#elif defined(__HIPCC__)  // hipcc: __forceinline__ comes only with <hip/hip_runtime.h>
#define PAGEDATTN_HD __host__ __device__ inline __attribute__((always_inline))
#else
#define PAGEDATTN_HD inline
#endif
