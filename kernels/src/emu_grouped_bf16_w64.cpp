// Emulated grouped instantiations for bf16, warp 64.
#define PAGEDATTN_SCALAR __nv_bfloat16
#define PAGEDATTN_WARP 64
#include "instantiate_grouped.inc"
