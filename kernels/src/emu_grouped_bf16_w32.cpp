// Emulated grouped instantiations for bf16, warp 32.
#define PAGEDATTN_SCALAR __nv_bfloat16
#define PAGEDATTN_WARP 32
#include "instantiate_grouped.inc"
