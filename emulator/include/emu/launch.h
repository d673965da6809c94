// emu::launch: the emulator's spelling of kernel<<<grid, block, smem>>>(args...).
// It checks the configuration against the current profile like the driver would,
// runs every block (fibers per GPU thread, blocks spread over host threads) and
// returns the cudaError_t CUDA would report for the launch and its execution.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include "emu/runtime_api.h"

namespace emu {
namespace detail {
struct KernelEntry {
  const void* address;         // identifies the kernel (attributes, names)
  std::function<void()> body;  // runs one GPU thread's kernel body
};
cudaError_t launch_grid(const KernelEntry& kernel, dim3 grid, dim3 block, std::size_t dynamic_smem);
}  // namespace detail

template <class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t dynamic_smem_bytes,
                   A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A),
                "emu::launch: argument count differs from the kernel's");
  // Arguments are converted once, as the driver copies them into the parameter buffer;
  // every GPU thread then gets its own copy, as kernel parameters are per thread.
  auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
  detail::KernelEntry entry{reinterpret_cast<const void*>(kernel), [kernel, params]() {
                              std::tuple<std::decay_t<P>...> mine = *params;
                              std::apply(kernel, mine);
                            }};
  return detail::launch_grid(entry, grid, block, dynamic_smem_bytes);
}

}  // namespace emu
