#include "elf_symbols.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "internal.h"

namespace emu::detail {
namespace {

struct Module {
  struct Func {
    std::uintptr_t begin, end;  // run-time addresses
    std::string name;
  };
  std::vector<Func> funcs;                        // sorted by begin
  std::map<std::string, std::size_t> tls_locals;  // "_ZZ..." thread-local statics -> size
  struct Tls {
    std::size_t offset, size;  // within the module's TLS block
    std::string name;
  };
  std::vector<Tls> tls;                             // every defined thread-local, sorted by offset
  std::map<std::uintptr_t, KernelSymbols> kernels;  // results, by kernel address
  std::map<std::uintptr_t, KernelArrays> arrays;    // the arrays they count, likewise
};

// Reads .symtab/.strtab of an ELF64 file; `bias` is added to symbol values (load base of
// a position-independent module, 0 for a fixed-address executable).
std::unique_ptr<Module> parse(const std::string& path, std::uintptr_t base) {
  auto m = std::make_unique<Module>();
  std::ifstream f(path, std::ios::binary);
  // Reads only the headers and the symbol tables: a binary with debug info is large.
  auto read = [&f](std::uint64_t offset, void* out, std::size_t n) {
    f.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(f.read(static_cast<char*>(out), static_cast<std::streamsize>(n)));
  };
  Elf64_Ehdr eh;
  if (!f || !read(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shoff == 0)
    return m;
  const std::uintptr_t bias = eh.e_type == ET_DYN ? base : 0;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!read(eh.e_shoff, sh.data(), sh.size() * sizeof(Elf64_Shdr))) return m;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sh.size()) continue;
    const Elf64_Shdr& strtab = sh[s.sh_link];
    std::vector<Elf64_Sym> syms(s.sh_size / sizeof(Elf64_Sym));
    std::vector<char> strings(strtab.sh_size + 1, '\0');
    if (!read(s.sh_offset, syms.data(), syms.size() * sizeof(Elf64_Sym)) ||
        !read(strtab.sh_offset, strings.data(), strtab.sh_size))
      continue;
    for (const Elf64_Sym& sym : syms) {
      if (sym.st_name >= strtab.sh_size || sym.st_shndx == SHN_UNDEF) continue;
      const std::string name = strings.data() + sym.st_name;
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size > 0)
        m->funcs.push_back({bias + sym.st_value, bias + sym.st_value + sym.st_size, name});
      else if (ELF64_ST_TYPE(sym.st_info) == STT_TLS) {
        if (name.compare(0, 3, "_ZZ") == 0) m->tls_locals[name] = sym.st_size;
        m->tls.push_back({static_cast<std::size_t>(sym.st_value), sym.st_size, name});
      }
    }
  }
  std::sort(m->funcs.begin(), m->funcs.end(),
            [](const Module::Func& a, const Module::Func& b) { return a.begin < b.begin; });
  std::sort(m->tls.begin(), m->tls.end(), [](const Module::Tls& a, const Module::Tls& b) {
    return a.offset < b.offset || (a.offset == b.offset && a.name < b.name);
  });
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

// The parsed module holding `address` (cached); nullptr if dladdr cannot place it.
// Call with g_mutex held.
Module* module_of(const void* address) {
  Dl_info info{};
  if (!dladdr(address, &info) || !info.dli_fbase) return nullptr;
  auto& m = g_modules[info.dli_fbase];
  if (!m) {
    // The main program's dli_fname may be a bare name: read it through /proc instead.
    std::string path = info.dli_fname ? info.dli_fname : "";
    if (info.dli_fbase == main_program_base() || path.find('/') == std::string::npos)
      path = "/proc/self/exe";
    m = parse(path, reinterpret_cast<std::uintptr_t>(info.dli_fbase));
  }
  return m.get();
}

}  // namespace

std::string tls_symbol_at(const void* kernel, std::size_t offset, std::size_t* within) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Module* m = module_of(kernel);
  if (!m) return "";
  std::string best;
  for (const auto& t : m->tls) {
    if (t.offset > offset) break;
    // Among aliases (every extern __shared__ name is one of the pool) name the pool.
    if (offset < t.offset + std::max<std::size_t>(t.size, 1) &&
        (best.empty() || t.name == "__emu_extern_shared_pool")) {
      best = t.name;
      *within = offset - t.offset;
    }
  }
  return best;
}

namespace {

const Module::Func* function_at(const Module& m, std::uintptr_t addr, bool exact) {
  auto it = std::upper_bound(m.funcs.begin(), m.funcs.end(), addr,
                             [](std::uintptr_t a, const Module::Func& f) { return a < f.begin; });
  if (it == m.funcs.begin()) return nullptr;
  --it;
  if (exact ? addr != it->begin : addr >= it->end) return nullptr;
  return &*it;
}

bool is_library_code(const std::string& name) {
  // The emulator's own functions and the standard library hold no __shared__ arrays.
  for (const char* p : {"_ZN3emu", "_ZNSt", "_ZNKSt", "_ZSt", "_ZN5boost", "_ZNK3emu"})
    if (name.compare(0, std::strlen(p), p) == 0) return true;
  return name.compare(0, 2, "_Z") != 0;
}

// The kernel and every function it reaches through direct calls and jumps (x86-64 E8/E9
// with a 32-bit displacement landing exactly on a function's first byte), library code
// excluded. Read from the loaded code itself.
std::vector<const Module::Func*> reachable(const Module& m, const Module::Func& kernel) {
  std::vector<const Module::Func*> out{&kernel};
#if defined(__x86_64__)
  std::set<std::uintptr_t> seen{kernel.begin};
  for (std::size_t k = 0; k < out.size() && out.size() < 512; ++k) {
    const auto* code = reinterpret_cast<const unsigned char*>(out[k]->begin);
    const std::size_t n = out[k]->end - out[k]->begin;
    for (std::size_t i = 0; i + 5 <= n; ++i) {
      if (code[i] != 0xE8 && code[i] != 0xE9) continue;
      std::int32_t rel;
      std::memcpy(&rel, code + i + 1, 4);
      const std::uintptr_t target = out[k]->begin + i + 5 + static_cast<std::intptr_t>(rel);
      const Module::Func* f = function_at(m, target, true);
      if (f && !is_library_code(f->name) && seen.insert(f->begin).second) out.push_back(f);
    }
  }
#endif
  return out;
}

// This thread's TLS block of the main program and its offset from the thread pointer:
// in an executable, code reaches a thread-local at the constant (block + st_value - tp).
bool main_tls_bias(const void* kernel, std::intptr_t* bias) {
#if defined(__x86_64__)
  Dl_info info{};
  if (!dladdr(kernel, &info) || info.dli_fbase != main_program_base()) return false;
  const ModuleTlsBlock b = module_tls(kernel);
  if (!b.data) return false;
  std::uintptr_t tp;
  asm("mov %%fs:0, %0" : "=r"(tp));
  *bias = static_cast<std::intptr_t>(reinterpret_cast<std::uintptr_t>(b.data) - tp);
  return true;
#else
  (void)kernel;
  (void)bias;
  return false;
#endif
}

// Call with g_mutex held. `arrays` (may be null) receives the arrays counted.
KernelSymbols count_static_shared(const void* kernel, KernelArrays* arrays) {
  KernelSymbols out;
  Module* m = module_of(kernel);
  if (!m) return out;
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
  auto cached = m->kernels.find(it->begin);
  if (cached != m->kernels.end()) {
    if (arrays) *arrays = m->arrays[it->begin];
    return cached->second;
  }
  // Static __shared__ arrays count toward the kernel's limit when declared in the kernel,
  // in a function it calls (named _ZZ<function>E<array>), or in a helper inlined into any
  // of those (found by the array's thread-pointer offset appearing in their code).
  std::set<std::string> counted;
  const auto funcs = reachable(*m, *it);
  for (const Module::Func* f : funcs) {
    const std::string prefix = "_ZZ" + f->name.substr(2) + "E";
    for (auto t = m->tls_locals.lower_bound(prefix);
         t != m->tls_locals.end() && t->first.compare(0, prefix.size(), prefix) == 0; ++t)
      if (counted.insert(t->first).second) out.static_shared_bytes += t->second;
  }
  std::intptr_t bias = 0;
  const bool main_program = main_tls_bias(kernel, &bias);
  if (main_program) {
    std::map<std::int32_t, const Module::Tls*> by_offset;
    for (const auto& t : m->tls) {
      const std::intptr_t off = bias + static_cast<std::intptr_t>(t.offset);
      if (t.name.compare(0, 3, "_ZZ") == 0 && !is_library_code("_Z" + t.name.substr(3)) &&
          !counted.count(t.name) && off < 0 && off >= INT32_MIN)
        by_offset[static_cast<std::int32_t>(off)] = &t;
    }
    for (const Module::Func* f : funcs) {
      if (by_offset.empty()) break;
      const auto* code = reinterpret_cast<const unsigned char*>(f->begin);
      for (std::size_t i = 0; i + 4 <= f->end - f->begin; ++i) {
        std::int32_t v;
        std::memcpy(&v, code + i, 4);
        auto hit = by_offset.find(v);
        if (hit == by_offset.end()) continue;
        if (counted.insert(hit->second->name).second) out.static_shared_bytes += hit->second->size;
        by_offset.erase(hit);
      }
    }
  }
  KernelArrays& a = m->arrays[it->begin];
  a.complete = main_program;
  for (const auto& t : m->tls)
    if (counted.count(t.name)) a.arrays.push_back({t.offset, t.size, demangle(t.name)});
  m->kernels[it->begin] = out;
  if (arrays) *arrays = a;
  return out;
}

}  // namespace

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && d ? d : mangled;
  std::free(d);
  return name;
}

KernelSymbols kernel_symbols(const void* kernel) {
  // Per kernel address, once: every launch asks (the launch checks), and dladdr's walk of
  // the loaded modules was a few percent of an emulated launch.
  static auto* by_kernel = new std::map<const void*, KernelSymbols>;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = by_kernel->find(kernel);
  if (it != by_kernel->end()) return it->second;
  return (*by_kernel)[kernel] = count_static_shared(kernel, nullptr);
}

const KernelArrays& kernel_static_arrays(const void* kernel) {
  static std::map<const void*, KernelArrays>* by_kernel = new std::map<const void*, KernelArrays>;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = by_kernel->find(kernel);
  if (it != by_kernel->end()) return it->second;
  KernelArrays& a = (*by_kernel)[kernel];
  count_static_shared(kernel, &a);
  return a;
}

}  // namespace emu::detail
