// Every property is registered once here and run two ways: as a Google Test
// (gtest_main.cpp, CI: fixed seed, a fixed case count each) and by the campaign program
// (campaign.cpp: any seed, case count and shard). Both go through run_property, so a
// failure prints the same RapidCheck reproduce string either way.
#pragma once
#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pagedattn::prop {

struct PropertyDef {
  std::string name;            // prop_<theorem id> (preamble's shared names)
  std::function<void()> body;  // draws its inputs with *gen, asserts with RC_ASSERT
  int ci_cases;                // cases in CI (ctest -L properties)
};
std::vector<PropertyDef>& registry();
struct Registrar {
  Registrar(const char* name, void (*body)(), int ci_cases);
};

// Defines and registers a property body.
#define PAGEDATTN_PROPERTY(name, ci_cases)                                                   \
  static void name##_body();                                                                 \
  static const ::pagedattn::prop::Registrar name##_registrar{#name, &name##_body, ci_cases}; \
  static void name##_body()

struct RunResult {
  bool passed = false;
  int cases = 0;          // successful cases
  int discards = 0;       // cases rejected by RC_PRE
  std::string message;    // RapidCheck's result text (counterexample on failure)
  std::string reproduce;  // RC_PARAMS="..." for the gtest binary; empty if passed
  double seconds = 0;
};
// The RapidCheck id under which a property is checked and reproduced.
std::string property_id(const std::string& name);
RunResult run_property(const PropertyDef& def, std::uint64_t seed, int cases, bool shrink = true);

}  // namespace pagedattn::prop
