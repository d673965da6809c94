// PAGEDATTN_HD marks functions that run on host and device. Public headers must also
// compile in plain C++ programs (tests, tools, bindings) that include no CUDA header.
#pragma once

#if defined(__CUDACC__)
#define PAGEDATTN_HD __host__ __device__ __forceinline__
#else
#define PAGEDATTN_HD inline
#endif
