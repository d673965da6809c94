#include "registry.h"

#include <chrono>
#include <sstream>

#include "pagedattn_testing/run.h"

namespace pagedattn::prop {
namespace {

// Counts discarded cases (RapidCheck's results carry successes only).
struct Counter : rc::detail::TestListener {
  int discards = 0;
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    if (d.result.type == rc::detail::CaseResult::Type::Discard) ++discards;
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

}  // namespace

std::vector<PropertyDef>& registry() {
  static std::vector<PropertyDef> r;
  return r;
}
Registrar::Registrar(const char* name, void (*body)(), int ci_cases) {
  registry().push_back({name, body, ci_cases});
}

std::string property_id(const std::string& name) {
  return "Properties/" + name;
}

RunResult run_property(const PropertyDef& def, std::uint64_t seed, int cases, bool shrink) {
  using namespace rc::detail;
  TestMetadata meta;
  meta.id = property_id(def.name);
  meta.description = def.name;
  TestParams params = configuration().testParams;
  params.seed = seed;
  params.maxSuccess = cases;
  params.disableShrinking = !shrink;
  Counter counter;
  const auto t0 = std::chrono::steady_clock::now();
  // A case's kernel runs share their input allocations (testing/include/pagedattn_testing/
  // run.h: the same bytes in allocations of the same size, without a free's TLB shootdown).
  const std::function<void()> body = [&def] {
    const testing::ReuseInputAllocations per_case;
    def.body();
  };
  const TestResult result =
      checkProperty(toProperty(body), meta, params, counter, configuration().reproduce);
  RunResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.discards = counter.discards;
  std::ostringstream msg;
  printResultMessage(result, msg);
  r.message = msg.str();
  if (result.is<SuccessResult>()) {
    r.passed = true;
    r.cases = result.get<SuccessResult>().numSuccess;
  } else if (result.is<FailureResult>()) {
    const FailureResult& f = result.get<FailureResult>();
    r.cases = f.numSuccess;
    Configuration c;
    c.reproduce[meta.id] = f.reproduce;
    r.reproduce = "RC_PARAMS=\"" + configToMinimalString(c) + "\"";
  } else if (result.is<GaveUpResult>()) {
    r.cases = result.get<GaveUpResult>().numSuccess;
  }
  return r;
}

}  // namespace pagedattn::prop
