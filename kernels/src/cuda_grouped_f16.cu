// CUDA grouped instantiations for f16 (warp width of the target).
#define PAGEDATTN_SCALAR __half
#define PAGEDATTN_WARP PAGEDATTN_TARGET_WARP
#include "instantiate_grouped.inc"
