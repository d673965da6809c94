// The emulator backend's profile is per call (api.h's Backend, platform.cuh's Device): two
// threads running V1 and V2 at once, one on bi-v100 (warp 64) and one on h200 (warp 32,
// given as a profile object), while a third keeps setting the process's current profile
// to one under which nothing launches, each get exactly the bytes a single-threaded run
// gets. Wrong variant it catches: the launch path reading the global profile (as emu_run
// did with use_profile + current_profile before): shown by making emu_run call
// emu::use_profile(its profile) and launch with a null profile (the current one); the
// threads then failed in each of 5 runs (launches refused under the 1 KB profile, or
// warp-64 kernels deadlocking under a warp-32 profile).
#include <gtest/gtest.h>

#include <emu/checks.h>
#include <emu/profile.h>

#include <atomic>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "digest_grid.h"

namespace pagedattn::digest {
namespace {

// Every 9th case of the digest grid (dtypes, caches, numerics, head sizes, inputs), V1 and V2.
std::vector<std::pair<Setting, testing::Case>> cases() {
  std::vector<std::pair<Setting, testing::Case>> r;
  const auto g = grid();
  for (std::size_t i = 0; i < g.size(); i += 9)
    r.emplace_back(g[i].first, make(g[i].first, g[i].second));
  return r;
}

std::vector<std::uint64_t> digests(const std::vector<std::pair<Setting, testing::Case>>& cs,
                                   const Backend& backend) {
  std::vector<std::uint64_t> d;
  for (const auto& [s, c] : cs)
    for (Kernel k : {Kernel::v1, Kernel::v2}) d.push_back(run(s, c, k, backend));
  return d;
}

TEST(ProfilePerCall, TwoThreadsOnTwoProfilesMatchTheSingleThreadedRuns) {
  // racecheck's reordering and initcheck compare snapshots of all device memory, which the
  // other thread's copies change meanwhile (emulator/README.md): they need one thread.
  if (emu::enabled_checks() &
      (emu::check_racecheck | emu::check_racecheck_reorder | emu::check_initcheck))
    GTEST_SKIP() << "differential checks need a single launching thread";
  const auto cs = cases();
  const std::vector<std::uint64_t> bi = digests(cs, Backend::emulator("bi-v100"));
  const std::vector<std::uint64_t> h200 = digests(cs, Backend::emulator("h200"));
  ASSERT_NE(bi, h200);  // the warp widths differ somewhere, so a swap would show

  std::vector<std::uint64_t> got_bi, got_h200;
  std::atomic<bool> done{false};
  std::string error_bi, error_h200;  // an exception in a thread, as text
  const auto guarded = [&](std::string& error, auto body) {
    try {
      body();
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  std::thread a(
      [&] { guarded(error_bi, [&] { got_bi = digests(cs, Backend::emulator("bi-v100")); }); });
  // The profile as an object: no name lookup, no environment.
  const emu::Profile h200_profile = emu::resolve_profile("h200");
  std::thread b([&] {
    guarded(error_h200, [&] { got_h200 = digests(cs, Backend::emulator(h200_profile)); });
  });
  // Meanwhile the process's current profile is one no kernel here can launch under (1 KB
  // of shared memory), set over and over: a launch that read it would be refused.
  emu::Profile tiny = emu::resolve_profile("a100");
  tiny.name = "one-kilobyte";
  tiny.shared_memory_per_block = tiny.shared_memory_per_block_optin = 1024;
  const emu::Profile before = emu::current_profile();
  std::thread flip([&] {
    while (!done) emu::use_profile(tiny);
  });
  a.join();
  b.join();
  done = true;
  flip.join();
  emu::use_profile(before);
  EXPECT_EQ(error_bi, "");
  EXPECT_EQ(error_h200, "");
  EXPECT_EQ(got_bi, bi);
  EXPECT_EQ(got_h200, h200);
}

}  // namespace
}  // namespace pagedattn::digest
