// CUDA grouped instantiations for bf16 (warp width of the target).
#define PAGEDATTN_SCALAR __nv_bfloat16
#define PAGEDATTN_WARP PAGEDATTN_TARGET_WARP
#include "instantiate_grouped.inc"
