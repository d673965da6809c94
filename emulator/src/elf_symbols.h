// What the module's ELF symbol table says about a kernel: its mangled name (also for
// kernels with internal linkage, which dladdr cannot name) and the bytes of the static
// __shared__ arrays declared in its body. Those arrays are block-scope thread-locals,
// which g++ names _ZZ<kernel's encoding>E<name>, so their sizes add up per kernel.
#pragma once
#include <cstddef>
#include <string>

namespace emu::detail {

struct KernelSymbols {
  std::string mangled;                  // "" if the module has no symbol table
  std::size_t static_shared_bytes = 0;  // __shared__ arrays in the kernel's own body
};

// Parsed once per module and cached; thread-safe.
KernelSymbols kernel_symbols(const void* kernel);

// The thread-local symbol of `kernel`'s module covering byte `offset` of the module's TLS
// block (mangled), with the offset within it; "" if none.
std::string tls_symbol_at(const void* kernel, std::size_t offset, std::size_t* within);

}  // namespace emu::detail
