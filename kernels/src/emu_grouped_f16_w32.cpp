// Emulated grouped instantiations for f16, warp 32.
#define PAGEDATTN_SCALAR __half
#define PAGEDATTN_WARP 32
#include "instantiate_grouped.inc"
