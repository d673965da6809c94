// emu::launch: the emulator's spelling of kernel<<<grid, block, smem>>>(args...).
// It checks the configuration against a profile like the driver would, runs every block
// (fibers per GPU thread, blocks spread over host threads) and returns the cudaError_t
// CUDA would report for the launch and its execution. The profile is the one passed
// (emu::launch(profile, kernel, ...): per call, no global state read or written) or else
// the current one (emu/profile.h).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include "emu/runtime_api.h"

namespace emu {
struct Profile;  // emu/profile.h

namespace detail {
struct KernelEntry {
  const void* address;         // identifies the kernel (attributes, names)
  std::function<void()> body;  // runs one GPU thread's kernel body
};
cudaError_t launch_grid(const KernelEntry& kernel, dim3 grid, dim3 block, std::size_t dynamic_smem,
                        const Profile& profile);
cudaError_t launch_grid(const KernelEntry& kernel, dim3 grid, dim3 block,
                        std::size_t dynamic_smem);  // the current profile

template <class... P, class... A>
KernelEntry kernel_entry(void (*kernel)(P...), A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A),
                "emu::launch: argument count differs from the kernel's");
  // Arguments are converted once, as the driver copies them into the parameter buffer;
  // every GPU thread then gets its own copy, as kernel parameters are per thread.
  auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
  return KernelEntry{reinterpret_cast<const void*>(kernel), [kernel, params]() {
                       std::tuple<std::decay_t<P>...> mine = *params;
                       std::apply(kernel, mine);
                     }};
}
}  // namespace detail

template <class... P, class... A>
cudaError_t launch(const Profile& profile, void (*kernel)(P...), dim3 grid, dim3 block,
                   std::size_t dynamic_smem_bytes, A&&... args) {
  return detail::launch_grid(detail::kernel_entry(kernel, std::forward<A>(args)...), grid, block,
                             dynamic_smem_bytes, profile);
}

template <class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t dynamic_smem_bytes,
                   A&&... args) {
  return detail::launch_grid(detail::kernel_entry(kernel, std::forward<A>(args)...), grid, block,
                             dynamic_smem_bytes);
}

// cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) on the
// device `profile` describes: checked against its opt-in ceiling and kept per profile name
// (a function attribute is per device), so an opt-in under one profile never counts under
// another. cudaFuncSetAttribute is this with the current profile.
cudaError_t set_max_dynamic_shared_memory(const Profile& profile, const void* func, int bytes);

}  // namespace emu
