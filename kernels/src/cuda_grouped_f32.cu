// CUDA grouped instantiations for f32 (warp width of the target).
#define PAGEDATTN_SCALAR float
#define PAGEDATTN_WARP PAGEDATTN_TARGET_WARP
#include "instantiate_grouped.inc"
