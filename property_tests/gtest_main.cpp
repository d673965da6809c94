// Registers every property of registry() as the Google Test Properties.<name>. CI runs each
// with seed PAGEDATTN_PROP_SEED (CMakeLists.txt fixes it) and its ci_cases; RC_PARAMS
// "max_success=N" overrides the count, RC_PARAMS "reproduce=..." replays a failure.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include "registry.h"

namespace {

class PropertyTest : public testing::Test {
 public:
  explicit PropertyTest(const pagedattn::prop::PropertyDef* def) : def_(def) {}
  void TestBody() override {
    using namespace pagedattn::prop;
    const char* seed_env = std::getenv("PAGEDATTN_PROP_SEED");
    const char* rc_env = std::getenv("RC_PARAMS");
    const std::uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10)
                                        : rc::detail::configuration().testParams.seed;
    const int cases = rc_env && std::strstr(rc_env, "max_success")
                          ? rc::detail::configuration().testParams.maxSuccess
                          : def_->ci_cases;
    const RunResult r = run_property(*def_, seed, cases);
    std::cout << def_->name << ": " << r.cases << " cases, " << r.discards << " discarded, "
              << r.seconds << " s" << std::endl;
    if (!r.passed) {
      FAIL() << r.message << "\nReproduce with: " << r.reproduce
             << " <this binary> --gtest_filter=Properties." << def_->name;
    }
  }

 private:
  const pagedattn::prop::PropertyDef* def_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (const auto& def : pagedattn::prop::registry()) {
    testing::RegisterTest("Properties", def.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [&def]() -> testing::Test* { return new PropertyTest(&def); });
  }
  return RUN_ALL_TESTS();
}
