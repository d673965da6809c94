// What the module's ELF symbol table says about a kernel: its mangled name (also for
// kernels with internal linkage, which dladdr cannot name) and the bytes of the static
// __shared__ arrays declared in its body. Those arrays are block-scope thread-locals,
// which g++ names _ZZ<kernel's encoding>E<name>, so their sizes add up per kernel.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace emu::detail {

struct KernelSymbols {
  std::string mangled;                  // "" if the module has no symbol table
  std::size_t static_shared_bytes = 0;  // __shared__ arrays in the kernel's own body
};

// Parsed once per module and cached; thread-safe.
KernelSymbols kernel_symbols(const void* kernel);

// A mangled C++ name demangled (itself if it is not one).
std::string demangle(const std::string& mangled);

// The static __shared__ arrays static_shared_bytes counts, sorted by their offset in the
// module's thread-local storage block, for memcheck's bounds. `complete` is true only in
// the main program, where helpers inlined into the kernel are found too.
struct SharedArray {
  std::size_t offset, size;
  std::string name;  // demangled: "kernel(args)::array"
};
struct KernelArrays {
  std::vector<SharedArray> arrays;
  bool complete = false;
};
// Cached for the program's life (the reference stays valid); thread-safe.
const KernelArrays& kernel_static_arrays(const void* kernel);

// The thread-local symbol of `kernel`'s module covering byte `offset` of the module's TLS
// block (mangled), with the offset within it; "" if none.
std::string tls_symbol_at(const void* kernel, std::size_t offset, std::size_t* within);

}  // namespace emu::detail
