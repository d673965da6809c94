// Test-wide setup. The emulator runs blocks on one host thread here: its worker threads
// currently leak their fiber stacks and shared-memory region at exit (ColdTls owns them
// without a destructor), so a suite of ~2000 launches exhausts vm.max_map_count with
// more threads. Results never depend on the thread count (emulator/include/emu/checks.h).
#include <gtest/gtest.h>

#include <emu/cuda_runtime.h>

namespace {

class OneHostThread : public ::testing::Environment {
 public:
  void SetUp() override { emu::set_host_threads(1); }
};

[[maybe_unused]] ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new OneHostThread);

}  // namespace
