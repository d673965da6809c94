// Emulated grouped instantiations for f32, warp 64.
#define PAGEDATTN_SCALAR float
#define PAGEDATTN_WARP 64
#include "instantiate_grouped.inc"
