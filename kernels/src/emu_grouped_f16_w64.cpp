// Emulated grouped instantiations for f16, warp 64.
#define PAGEDATTN_SCALAR __half
#define PAGEDATTN_WARP 64
#include "instantiate_grouped.inc"
