#include "elf_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace emu::detail {
namespace {

struct Module {
  struct Func {
    std::uintptr_t begin, end;  // run-time addresses
    std::string name;
  };
  std::vector<Func> funcs;                        // sorted by begin
  std::map<std::string, std::size_t> tls_locals;  // "_ZZ..." thread-local statics -> size
};

// Reads .symtab/.strtab of an ELF64 file; `bias` is added to symbol values (load base of
// a position-independent module, 0 for a fixed-address executable).
std::unique_ptr<Module> parse(const std::string& path, std::uintptr_t base) {
  auto m = std::make_unique<Module>();
  std::ifstream f(path, std::ios::binary);
  if (!f) return m;
  std::vector<char> file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (file.size() < sizeof(Elf64_Ehdr) || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0) return m;
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shoff == 0 ||
      eh.e_shoff + std::size_t(eh.e_shnum) * sizeof(Elf64_Shdr) > file.size())
    return m;
  const std::uintptr_t bias = eh.e_type == ET_DYN ? base : 0;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), file.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sh.size()) continue;
    const Elf64_Shdr& strtab = sh[s.sh_link];
    if (s.sh_offset + s.sh_size > file.size() || strtab.sh_offset + strtab.sh_size > file.size())
      continue;
    const char* strings = file.data() + strtab.sh_offset;
    for (std::size_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, file.data() + s.sh_offset + off, sizeof sym);
      if (sym.st_name >= strtab.sh_size || sym.st_shndx == SHN_UNDEF) continue;
      const std::string name = strings + sym.st_name;
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size > 0)
        m->funcs.push_back({bias + sym.st_value, bias + sym.st_value + sym.st_size, name});
      else if (ELF64_ST_TYPE(sym.st_info) == STT_TLS && name.compare(0, 3, "_ZZ") == 0)
        m->tls_locals[name] = sym.st_size;
    }
  }
  std::sort(m->funcs.begin(), m->funcs.end(),
            [](const Module::Func& a, const Module::Func& b) { return a.begin < b.begin; });
  return m;
}

// The load address of the main program (the first object dl_iterate_phdr reports).
const void* main_program_base() {
  const void* base = nullptr;
  dl_iterate_phdr(
      [](dl_phdr_info* i, std::size_t, void* out) -> int {
        for (int k = 0; k < i->dlpi_phnum; ++k)
          if (i->dlpi_phdr[k].p_type == PT_LOAD && i->dlpi_phdr[k].p_offset == 0) {
            *static_cast<const void**>(out) =
                reinterpret_cast<const void*>(i->dlpi_addr + i->dlpi_phdr[k].p_vaddr);
            break;
          }
        return 1;  // the first entry is the main program
      },
      &base);
  return base;
}

std::mutex g_mutex;
std::map<const void*, std::unique_ptr<Module>> g_modules;  // by load base

}  // namespace

KernelSymbols kernel_symbols(const void* kernel) {
  KernelSymbols out;
  Dl_info info{};
  if (!dladdr(kernel, &info) || !info.dli_fbase) return out;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& m = g_modules[info.dli_fbase];
  if (!m) {
    // The main program's dli_fname may be a bare name: read it through /proc instead.
    std::string path = info.dli_fname ? info.dli_fname : "";
    if (info.dli_fbase == main_program_base() || path.find('/') == std::string::npos)
      path = "/proc/self/exe";
    m = parse(path, reinterpret_cast<std::uintptr_t>(info.dli_fbase));
  }
  const auto addr = reinterpret_cast<std::uintptr_t>(kernel);
  auto it = std::upper_bound(m->funcs.begin(), m->funcs.end(), addr,
                             [](std::uintptr_t a, const Module::Func& f) { return a < f.begin; });
  if (it == m->funcs.begin()) return out;
  --it;
  if (addr >= it->end || it->name.compare(0, 2, "_Z") != 0) {
    if (addr < it->end) out.mangled = it->name;  // extern "C": no local statics to find
    return out;
  }
  out.mangled = it->name;
  const std::string prefix = "_ZZ" + it->name.substr(2) + "E";
  for (auto t = m->tls_locals.lower_bound(prefix);
       t != m->tls_locals.end() && t->first.compare(0, prefix.size(), prefix) == 0; ++t)
    out.static_shared_bytes += t->second;
  return out;
}

}  // namespace emu::detail
