// Profiles are data: shipped ones carry a source and confidence per value, a user's
// file loads the same way, and malformed ones get errors naming file, field and
// allowed values.
#include <gtest/gtest.h>

#include <emu/profile.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

std::string error_of(const std::string& json) {
  try {
    emu::parse_profile(json, "test.json");
  } catch (const emu::ProfileError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Profiles, ShippedProfilesHaveTheirFactsAndProvenance) {
  const emu::Profile bi = emu::load_profile("bi-v100");
  EXPECT_EQ(bi.warp_size, 64);
  EXPECT_EQ(bi.multiprocessor_count, 16);
  EXPECT_EQ(bi.max_grid_dim[1], 65535);
  EXPECT_LT(bi.expf_fast_ulp_a, 0) << "BI-V100's exp accuracy is unknown";
  const emu::Profile h = emu::load_profile("h200");
  EXPECT_EQ(h.warp_size, 32);
  EXPECT_EQ(h.multiprocessor_count, 132);
  EXPECT_EQ(h.shared_memory_per_block_optin, 227 * 1024);
  EXPECT_EQ(h.memory_bandwidth_gbps, 4800);
  const emu::Profile a = emu::load_profile("a100");
  EXPECT_EQ(a.multiprocessor_count, 108);
  for (const auto& p : {bi, h, a}) {
    for (const char* field :
         {"warp_size", "multiprocessor_count", "shared_memory_per_block",
          "shared_memory_per_block_optin", "memory_bandwidth_gbps", "fp32_tflops"}) {
      ASSERT_TRUE(p.provenance.count(field)) << p.name << " " << field;
      EXPECT_FALSE(p.provenance.at(field).source.empty()) << p.name << " " << field;
      EXPECT_FALSE(p.provenance.at(field).confidence.empty()) << p.name << " " << field;
    }
  }
  EXPECT_EQ(bi.provenance.at("shared_memory_per_block").confidence, "low");
}

TEST(Profiles, UserFileLoadsByPathAndOverridesChangeTheUnsureValue) {
  const std::string path = testing::TempDir() + "my-card.json";
  {
    std::ofstream f(path);
    f << R"({"name": "my-card", "warp_size": 64, "shared_memory_per_block": 32768,
             "shared_memory_per_block_optin": {"value": 32768, "source": "measured", "confidence": "high"}})";
  }
  emu::use_profile(path);
  EXPECT_EQ(emu::current_profile().name, "my-card");
  EXPECT_EQ(emu::current_profile().shared_memory_per_block_optin, 32768);

  setenv("EMU_PROFILE_SET", "shared_memory_per_block=32768,shared_memory_per_block_optin=32768", 1);
  emu::use_profile("bi-v100");
  unsetenv("EMU_PROFILE_SET");
  EXPECT_EQ(emu::current_profile().shared_memory_per_block_optin, 32768);
  EXPECT_EQ(emu::current_profile().provenance.at("shared_memory_per_block_optin").source,
            "$EMU_PROFILE_SET");
  std::remove(path.c_str());
}

TEST(Profiles, MalformedFilesGetClearErrors) {
  std::string e = error_of("{not json");
  EXPECT_NE(e.find("test.json"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  // fuzz/regressions/profile/number_overflow: a number beyond double threw nlohmann's
  // out_of_range past the parse_error handler.
  e = error_of(R"({"name": "x", "warp_size": 6e99999})");
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;

  // fuzz/regressions/profile/member_not_a_string: a number as a provenance member threw
  // nlohmann's type_error out of the parser.
  e = error_of(R"({"name": "x", "warp_size": {"value": 32, "confidence": 19.5}})");
  EXPECT_NE(e.find("member 'confidence' must be a string"), std::string::npos) << e;

  e = error_of(R"({"name": "x", "warp_size": 48})");
  EXPECT_NE(e.find("warp_size"), std::string::npos) << e;
  EXPECT_NE(e.find("32 or 64"), std::string::npos) << e;

  e = error_of(R"({"name": "x", "warp_size": 32, "shared_mem": 5})");
  EXPECT_NE(e.find("unknown field 'shared_mem'"), std::string::npos) << e;
  EXPECT_NE(e.find("shared_memory_per_block"), std::string::npos) << "lists the allowed fields";

  e = error_of(R"({"name": "x", "warp_size": 32, "max_threads_per_block": "many"})");
  EXPECT_NE(e.find("must be a number"), std::string::npos) << e;

  e = error_of(R"({"name": "x", "warp_size": 32, "shared_memory_per_block": 65536,
                   "shared_memory_per_block_optin": 49152})");
  EXPECT_NE(e.find("must be >="), std::string::npos) << e;

  e = error_of(R"({"warp_size": 32})");
  EXPECT_NE(e.find("'name'"), std::string::npos) << e;

  try {
    emu::load_profile("no-such-gpu");
    FAIL();
  } catch (const emu::ProfileError& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("no-such-gpu"), std::string::npos);
    EXPECT_NE(m.find("bi-v100"), std::string::npos) << "lists the known profiles: " << m;
  }
}
