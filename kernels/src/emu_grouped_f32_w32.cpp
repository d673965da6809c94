// Emulated grouped instantiations for f32, warp 32.
#define PAGEDATTN_SCALAR float
#define PAGEDATTN_WARP 32
#include "instantiate_grouped.inc"
