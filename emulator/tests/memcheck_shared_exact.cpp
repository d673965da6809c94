// The memcheck_shared_kernels.inc kernels compiled with the race instrumentation, which
// gives memcheck every shared-memory access (emulator/tests/CMakeLists.txt).
#define MEMCHECK_KERNELS_NS exact
#include "memcheck_shared_kernels.inc"
