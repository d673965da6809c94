// Issue 7 item 3a: every known-wrong reduction of kernels/tests/wrong_reductions.h is
// killed by reduce_property (the reduce half of fold_partitions_softmax) within the CI
// budget: the CI seed, kKilledWithin cases, no shrinking. The right reduction, run the
// same way, passes (so the kills are the variants' mistakes, not the check's). With
// PAGEDATTN_PROP_OUT set, writes known_wrong.json there for mutation.json.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include "reduce_property.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

constexpr int kKilledWithin = 150;  // cases; the whole test takes seconds

std::uint64_t ci_seed() {
  const char* s = std::getenv("PAGEDATTN_PROP_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20261130;
}

RunResult check(test::wrong::Reduction r) {
  PropertyDef def{"known_wrong_" + test::wrong::name(r),
                  [r] {
                    reduce_property([r](const test::wrong::States& st, DType) {
                      return test::wrong::reduce(r, st);
                    });
                  },
                  kKilledWithin};
  return run_property(def, ci_seed(), kKilledWithin, /*shrink=*/false);
}

TEST(MutationScore, RightReductionPasses) {
  const RunResult r = check(test::wrong::Reduction::right);
  EXPECT_TRUE(r.passed) << r.message << r.reproduce;
}

TEST(MutationScore, KnownWrongReductionsAreKilled) {
  nlohmann::json rows = nlohmann::json::array();
  for (test::wrong::Reduction w : test::wrong::all_wrong()) {
    const RunResult r = check(w);
    const bool killed = !r.passed;
    std::cout << test::wrong::name(w) << ": " << (killed ? "killed after " : "SURVIVED ") << r.cases
              << " passing cases" << std::endl;
    EXPECT_TRUE(killed) << test::wrong::name(w) << " survived " << r.cases << " cases";
    rows.push_back(
        {{"name", test::wrong::name(w)}, {"killed", killed}, {"cases_to_kill", r.cases + 1}});
  }
  if (const char* dir = std::getenv("PAGEDATTN_PROP_OUT")) {
    std::ofstream(std::string(dir) + "/known_wrong.json") << rows.dump(2) << "\n";
  }
}

}  // namespace
}  // namespace pagedattn::prop
