// racecheck's hazard mode: shadow memory per byte of shared and global memory, fed by the
// compiler's ThreadSanitizer instrumentation of the kernel's translation units (the
// emulator supplies the __tsan_* entry points itself: hazard_hooks.cpp). See hazard.cpp.
#pragma once
#include <cstddef>
#include <cstdint>

namespace emu::detail {

struct LaunchRun;

// Begins hazard tracking of a launch on the calling host thread (global memory: every
// device allocation); hazard_block before each block (its shared memory); hazard_end
// reports what was found and stops tracking.
void hazard_begin(const void* kernel, LaunchRun& run);
void hazard_block(unsigned long long block_linear);
void hazard_end();

// Called by the instrumentation for every load and store of instrumented code.
void hazard_access(const void* address, std::size_t bytes, bool write, const void* pc);
// True once any instrumented translation unit has started (its __tsan_init ran).
extern bool g_hazard_instrumented;

}  // namespace emu::detail
