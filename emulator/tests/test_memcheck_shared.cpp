// memcheck's shared-memory bounds, for each way a kernel declares its shared memory
// (memcheck_shared_kernels.inc) on both warp widths. Instrumented (the `exact` build,
// compiled with the race instrumentation): every access at or past the launch's dynamic
// size, or before the pool, or past a static array, is one finding naming the region, the
// byte offset, the size, thread, block and kernel, and none when the size covers it.
// Uninstrumented (the `plain` build, this file): what guard pages and canaries see and what
// they do not, as the note and emulator/README.md say.
//
// Wrong variants these catch (each run once): the exact check removed from the hooks
// (every `exact` overrun test fails: no finding inside the slack); the bound taken as the
// launch size rounded up to 16 (the 1-byte overruns pass unnoticed); the hook's report not
// suppressing the fault that follows (two findings where one is asserted); the canary not
// laid or not checked (the `plain` write tests fail).
#define MEMCHECK_KERNELS_NS plain
#include "memcheck_shared_kernels.inc"

#include <gtest/gtest.h>

#include <emu/checks.h>
#include <emu/profile.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t kLaunch = 4100;  // not a multiple of 16, nor of a page
constexpr int kThreads = 128, kBlocks = 2;
constexpr unsigned kLastThread = kThreads - 1, kLastBlock = kBlocks - 1;
const int kOverruns[] = {1, 16, 32, 4000};
const char* const kProfiles[] = {"h200", "bi-v100"};  // warp 32 and warp 64
// Every extern __shared__ name of this program, as the link step lists them (sorted by
// mangled name): all are one pool.
constexpr const char* kExternNames = "exact::shared_mem,plain::shared_mem";

using Kernel = void (*)(Access, int*);
enum class Decl { extern_shared, portable, static_array };
struct Form {
  Decl decl;
  Kernel exact, plain;
  const char* name;  // of the kernel in messages, after the namespace
};
const Form kForms[] = {
    {Decl::extern_shared, exact::extern_touch, plain::extern_touch, "extern_touch(Access, int*)"},
    {Decl::portable, exact::portable_touch, plain::portable_touch, "portable_touch(Access, int*)"},
    {Decl::static_array, exact::static_touch, plain::static_touch, "static_touch(Access, int*)"},
};

struct ChecksOn {
  explicit ChecksOn(unsigned c) { emu::set_checks(c); }
  ~ChecksOn() { emu::set_checks(emu::check_none); }
};

struct Result {
  cudaError_t e;
  std::string err;
  std::vector<emu::Finding> findings;
};

int* device_out() {
  static int* out = [] {
    int* p = nullptr;
    cudaMalloc(&p, 64);
    return p;
  }();
  return out;
}

// The static form has no dynamic shared memory: its bound is the array's.
std::size_t launch_size(const Form& f, std::size_t dynamic) {
  return f.decl == Decl::static_array ? 0 : dynamic;
}

Result run(Kernel k, std::size_t smem, const Access& a) {
  Result r;
  int* out = device_out();
  testing::internal::CaptureStderr();
  r.e = emu::launch(k, dim3(kBlocks), dim3(kThreads), smem, a, out);
  r.err = testing::internal::GetCapturedStderr();
  r.findings = emu::last_findings();
  return r;
}

Access access(long long offset, int width, bool write) {
  Access a;
  a.offset = offset;
  a.width = width;
  a.write = write;
  a.thread = kLastThread;
  a.block = kLastBlock;
  return a;
}

// The finding memcheck gives for `a` in form `f` of the `ns` build, from "invalid".
std::string finding(const std::string& ns, const Form& f, const Access& a, bool with_width = true) {
  const long long size = f.decl == Decl::static_array ? kStaticBytes : kLaunch;
  std::string s = std::string("invalid ") + (a.write ? "write" : "read") + " of ";
  if (f.decl == Decl::static_array)
    s += "static __shared__ array '" + ns + "::static_touch(Access, int*)::tile'";
  else
    s += std::string("dynamic shared memory '") +
         (f.decl == Decl::portable ? "EMU_DYNAMIC_SHARED" : kExternNames) + "'";
  s += " at byte offset " + std::to_string(a.offset) + ", " +
       (a.offset < 0       ? "before its start"
        : a.offset >= size ? "past its end"
                           : "running past its end") +
       (f.decl == Decl::static_array ? " (the array has " : " (the launch gave ") +
       std::to_string(size) + " bytes)";
  if (with_width)
    s += ", " + std::to_string(a.width) + (a.width == 1 ? " byte wide" : " bytes wide");
  return s;
}

std::string who(const std::string& ns, const Form& f) {
  return "memcheck: kernel " + ns + "::" + f.name + " block (1,0,0) thread (127,0,0): ";
}

// The static array's neighbours are where memcheck_shared_kernels.inc says (an overrun of
// up to 4,003 bytes either way stays inside them), in both builds.
void expect_static_layout() {
  const Kernel builds[2][3] = {{exact::pad_above, exact::static_touch, exact::pad_below},
                               {plain::pad_above, plain::static_touch, plain::pad_below}};
  for (const auto& kernels : builds) {
    const char* at[3];
    int i = 0;
    for (Kernel k : kernels) {
      Access a;
      a.thread = kAddressOnly;
      ASSERT_EQ(emu::launch(k, dim3(1), dim3(64), 0, a, device_out()), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(&at[i++], device_out(), sizeof(char*), cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    const char *above = at[0], *tile = at[1], *below = at[2];
    ASSERT_GE(above, tile + kStaticBytes) << "g++ laid the arrays out in another order";
    ASSERT_GE(above + kPadBytes, tile + kStaticBytes + 4000);
    ASSERT_LE(below + kPadBytes, tile);
    ASSERT_LE(below, tile - 4003);
  }
}

// Runs `check(profile, form, k, width, before, write)` under memcheck for both warp widths,
// every declaration form and overrun k, the given widths and sides, reads and writes.
template <class F>
void each_case(std::initializer_list<int> widths, std::initializer_list<bool> sides, F check) {
  expect_static_layout();
  ChecksOn on(emu::check_memcheck);
  for (const char* profile : kProfiles) {
    emu::use_profile(profile);
    for (const Form& f : kForms)
      for (int k : kOverruns)
        for (int width : widths)
          for (bool before : sides)
            for (bool write : {false, true}) check(profile, f, k, width, before, write);
  }
}

// Every form, overrun, width and direction on both warp widths, instrumented: the access
// whose last byte is the k-th past the end (`before`: before the first byte) is exactly one
// finding; past the end, the same access with a launch size that covers it (the static
// array: its last bytes) is clean. `side`: past the end (false) or before the start.
void expect_each_found(bool side) {
  each_case({1, 4}, {side},
            [](const char* profile, const Form& f, int k, int width, bool before, bool write) {
              const long long size = f.decl == Decl::static_array ? kStaticBytes : kLaunch;
              const Access a = access(before ? -k - (width - 1) : size + k - width, width, write);
              const Result r = run(f.exact, launch_size(f, kLaunch), a);
              const std::string ctx = std::string(profile) + " " + f.name + " " +
                                      std::to_string(k) + (before ? " before" : " past") +
                                      ", width " + std::to_string(width);
              EXPECT_EQ(r.e, cudaErrorIllegalAddress) << ctx << "\n" << r.err;
              ASSERT_EQ(r.findings.size(), 1u) << ctx << "\n" << r.err;
              EXPECT_EQ(r.findings[0].message, who("exact", f) + finding("exact", f, a)) << ctx;
              if (before) return;
              const Access in =
                  access(f.decl == Decl::static_array ? size - width : a.offset, width, write);
              const Result c = run(f.exact, launch_size(f, a.offset + width), in);
              EXPECT_EQ(c.e, cudaSuccess) << ctx << " covered\n" << c.err;
              EXPECT_EQ(c.err, "") << ctx << " covered";
            });
}

}  // namespace

TEST(MemcheckShared, OverrunsAreFoundToTheByteAndCoveredAccessesAreClean) {
  expect_each_found(false);
}

TEST(MemcheckShared, AccessesBeforeThePoolAreFound) {
  expect_each_found(true);
}

// An atomicAdd just past the end is a 4-byte write like any other; the last int in bounds
// is clean.
TEST(MemcheckShared, AtomicsAreCheckedToo) {
  ChecksOn on(emu::check_memcheck);
  for (const char* profile : kProfiles) {
    emu::use_profile(profile);
    for (const Form& f : kForms) {
      const long long size = f.decl == Decl::static_array ? kStaticBytes : kLaunch;
      for (long long offset : {size, size - 4}) {
        Access a = access(offset, 4, true);
        a.atomic = true;
        const Result r = run(f.exact, launch_size(f, kLaunch), a);
        if (offset == size - 4) {
          EXPECT_EQ(r.err, "") << profile << " " << f.name;
          continue;
        }
        ASSERT_EQ(r.findings.size(), 1u) << profile << " " << f.name << r.err;
        EXPECT_EQ(r.findings[0].message, who("exact", f) + finding("exact", f, a));
      }
    }
  }
}

// An instrumented launch prints no note; the first uninstrumented one under memcheck says
// what was not checked and how to check it, once per process.
TEST(MemcheckShared, UninstrumentedLaunchSaysOnceWhatWasNotChecked) {
  emu::use_profile("h200");
  ChecksOn on(emu::check_memcheck);
  const emu::MemcheckCoverage before = emu::memcheck_coverage();
  const Access in_bounds = access(0, 1, true);
  Result r = run(exact::extern_touch, kLaunch, in_bounds);
  EXPECT_EQ(r.e, cudaSuccess) << r.err;
  EXPECT_EQ(r.err, "");
  r = run(plain::extern_touch, kLaunch, in_bounds);
  EXPECT_EQ(r.e, cudaSuccess) << r.err;
  EXPECT_EQ(r.err,
            "memcheck: note: kernel plain::extern_touch(Access, int*) made no instrumented "
            "memory access, so its shared memory was checked by guard pages and canaries only: "
            "reads past the launch's dynamic size up to the next 4 KB (16 bytes for "
            "EMU_DYNAMIC_SHARED) and any access past a static __shared__ array are not seen, "
            "and writes into that slack are found after the block without the thread; build "
            "its sources with pagedattn_emulator_race_instrumentation(<target>) (or "
            "-fsanitize=thread -Wno-tsan at compile time only) for byte-exact shared-memory "
            "bounds\n");
  r = run(plain::portable_touch, kLaunch, in_bounds);
  EXPECT_EQ(r.err, "") << "the note is printed once";
  const emu::MemcheckCoverage after = emu::memcheck_coverage();
  EXPECT_EQ(after.launches - before.launches, 3u);
  EXPECT_EQ(after.instrumented - before.instrumented, 1u);
}

// Uninstrumented, exactly what the note says: writes are found (by the canary inside the
// slack, without the thread; by a guard page past it, with it), reads only on a guard page,
// static arrays not at all. If one of these starts to be found, update the note and the
// README's table.
TEST(MemcheckShared, UninstrumentedGuardsAndCanariesSeeWhatTheNoteSays) {
  each_case({1}, {false, true},
            [](const char* profile, const Form& f, int k, int, bool before, bool write) {
              const long long size = f.decl == Decl::static_array ? kStaticBytes : kLaunch;
              const Access a = access(before ? -k : size + k - 1, 1, write);
              const Result r = run(f.plain, launch_size(f, kLaunch), a);
              // Where the guard pages start, in bytes from the pool's first byte: the pool's
              // open pages end at the next page (extern __shared__) or 16 bytes past the size
              // (EMU_DYNAMIC_SHARED: the block's end rounded up to 16 sits against the guard,
              // its base 4,080 bytes above a page boundary here).
              bool on_guard = false;
              if (f.decl == Decl::extern_shared) on_guard = before || a.offset >= 8192;
              if (f.decl == Decl::portable)
                on_guard = before ? a.offset < -4080 : a.offset >= static_cast<long long>(4112);
              const std::string ctx = std::string(profile) + " " + f.name + " " +
                                      (write ? "write " : "read ") + std::to_string(a.offset);
              if (f.decl == Decl::static_array || (!write && !on_guard)) {
                EXPECT_EQ(r.e, cudaSuccess) << ctx << ": not seen without the instrumentation\n"
                                            << r.err;
                EXPECT_TRUE(r.findings.empty()) << ctx;
                return;
              }
              EXPECT_EQ(r.e, cudaErrorIllegalAddress) << ctx << "\n" << r.err;
              ASSERT_EQ(r.findings.size(), 1u) << ctx << "\n" << r.err;
              std::string want = who("plain", f);
              if (on_guard) {
                want += finding("plain", f, a, false);
              } else {  // the canary, after the block
                want = "memcheck: kernel plain::" + std::string(f.name) +
                       " block (1,0,0): " + finding("plain", f, a, false) +
                       "; found by the canary after the block, so the thread is not known (the "
                       "race instrumentation names it)";
              }
              EXPECT_EQ(r.findings[0].message, want) << ctx;
            });
  // Reads on the first guard byte each way, the launch as above.
  ChecksOn on(emu::check_memcheck);
  for (const char* profile : kProfiles) {
    emu::use_profile(profile);
    for (auto [f, offset] : {std::pair{kForms[0], 8192LL}, std::pair{kForms[1], 4112LL},
                             std::pair{kForms[1], -4081LL}}) {
      const Access a = access(offset, 1, false);
      const Result r = run(f.plain, kLaunch, a);
      ASSERT_EQ(r.findings.size(), 1u) << profile << " " << f.name << " " << offset << r.err;
      EXPECT_EQ(r.findings[0].message, who("plain", f) + finding("plain", f, a, false));
    }
  }
}

// The blocks a host thread runs in one launch keep the extern pool's guard pages armed
// between them (shared_memcheck.cpp), so each block must still meet them: after a block's
// fault opened a guard page, after a launch of another size, and not at all in a launch
// without memcheck, where the whole pool is open. Wrong variants this catches (each run
// once): the fault handler not marking the pool's protection unknown (blocks 1 to 5 read
// the opened page unseen: one finding instead of six), arm_shared_guards skipping when the
// size differs (the second launch's read inside the first one's open pages is not found),
// the guards left armed at the launch's end (the launch without memcheck dies on them).
TEST(MemcheckShared, EveryBlockOfALaunchMeetsTheGuardPages) {
  constexpr unsigned kManyBlocks = 6;
  for (int threads : {1, 2}) {
    emu::set_host_threads(threads);
    for (const char* profile : kProfiles) {
      emu::use_profile(profile);
      const std::string ctx =
          std::string(profile) + ", " + std::to_string(threads) + " host thread(s)";
      auto launch = [](std::size_t smem, long long offset, std::vector<emu::Finding>* findings) {
        Access a = access(offset, 1, false);
        a.block = kEveryBlock;
        const cudaError_t e = emu::launch(plain::extern_touch, dim3(kManyBlocks), dim3(kThreads),
                                          smem, a, device_out());
        *findings = emu::last_findings();
        return e;
      };
      std::vector<emu::Finding> found;
      {
        ChecksOn on(emu::check_memcheck);
        // The first byte of the guard page above a 4,100-byte launch's open pages.
        EXPECT_EQ(launch(kLaunch, 8192, &found), cudaErrorIllegalAddress) << ctx;
        ASSERT_EQ(found.size(), kManyBlocks) << ctx;
        for (unsigned b = 0; b < kManyBlocks; ++b)  // each block once, in any order
          EXPECT_EQ(std::count_if(found.begin(), found.end(),
                                  [&](const emu::Finding& f) {
                                    return f.message.find("block (" + std::to_string(b) +
                                                          ",0,0)") != std::string::npos;
                                  }),
                    1)
              << ctx << ", block " << b;
        // A launch of 100 bytes: its guard page starts at 4,096, inside the pages the
        // launch before opened.
        EXPECT_EQ(launch(100, 4096, &found), cudaErrorIllegalAddress) << ctx;
        EXPECT_EQ(found.size(), kManyBlocks) << ctx;
      }
      // No memcheck: every page of the pool is open, the read past the size is allowed.
      EXPECT_EQ(launch(kLaunch, 8192, &found), cudaSuccess) << ctx;
      EXPECT_TRUE(found.empty()) << ctx;
    }
  }
  emu::set_host_threads(0);
}

// Without memcheck a stray access into a pool's guard area still ends the process with a
// line that names the pool, not "outside every device allocation".
TEST(MemcheckShared, StrayAccessWithoutMemcheckNamesThePool) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        emu::use_profile("h200");
        emu::set_checks(emu::check_none);
        emu::launch(plain::portable_touch, dim3(kBlocks), dim3(kThreads), kLaunch,
                    access(kLaunch + 16, 1, false), device_out());
      },
      ::testing::ExitedWithCode(139),
      "emu: invalid read of dynamic shared memory 'EMU_DYNAMIC_SHARED' at byte offset 4116, past "
      "its end \\(the launch gave 4100 bytes\\), address 0x[0-9a-f]+ \\(under memcheck it is a "
      "finding and the kernel goes on\\) by thread \\(127,0,0\\) of block \\(1,0,0\\) in kernel "
      "plain::portable_touch");
}
