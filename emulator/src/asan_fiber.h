// AddressSanitizer must be told when a fiber switch moves the stack, or it takes the
// other stack for an overflow of this one and reports false errors (or misses real
// ones). Boost.Context's fcontext switches do not tell it, so the scheduler brackets
// each resume with these. They compile to nothing without ASan.
#pragma once
#include <cstddef>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN_FIBERS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN_FIBERS 1
#endif

#ifdef EMU_ASAN_FIBERS
#include <sanitizer/common_interface_defs.h>
#endif

namespace emu::detail {

// The stack one side of a switch runs on: [bottom, bottom + size).
struct AsanStack {
  const void* bottom = nullptr;
  std::size_t size = 0;
  void* fake = nullptr;  // ASan's fake-stack handle of the side that is leaving
};

// Call just before switching to `to`; `from_dies` when the leaving fiber never resumes.
inline void asan_leave(AsanStack& from, const AsanStack& to, bool from_dies = false) {
#ifdef EMU_ASAN_FIBERS
  __sanitizer_start_switch_fiber(from_dies ? nullptr : &from.fake, to.bottom, to.size);
#else
  (void)from, (void)to, (void)from_dies;
#endif
}

// Call first thing after a switch lands on `self`; `came_from` (may be null) learns the
// stack that was left, so a fiber can find its way back to its caller's stack.
inline void asan_arrive(AsanStack& self, AsanStack* came_from) {
#ifdef EMU_ASAN_FIBERS
  const void* bottom = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(self.fake, &bottom, &size);
  if (came_from) {
    came_from->bottom = bottom;
    came_from->size = size;
  }
#else
  (void)self, (void)came_from;
#endif
}

}  // namespace emu::detail
