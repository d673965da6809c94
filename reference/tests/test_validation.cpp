// Bad arguments raise std::invalid_argument naming the argument.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "builder.h"

namespace pagedattn::ref::testing {
namespace {

void expect_bad(const std::function<void(Case&)>& edit, const std::string& name) {
  Spec s;
  s.lens = {20, 3};
  Case c = build(s);
  edit(c);
  try {
    reference_attention(c.p);
    ADD_FAILURE() << "no exception for " << name;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(Validation, NamesTheArgument) {
  expect_bad([](Case& c) { c.p.head_size = 48; }, "head_size");
  expect_bad([](Case& c) { c.p.block_size = 12; }, "block_size");
  expect_bad([](Case& c) { c.p.num_kv_heads = 3; }, "num_kv_heads");
  expect_bad([](Case& c) { c.p.scalar_dtype = DType::fp8_e4m3; }, "scalar_dtype");
  expect_bad([](Case& c) { c.p.cache_dtype = DType::bf16; }, "cache_dtype");
  expect_bad([](Case& c) { c.bt[0] = c.p.num_blocks; }, "block_tables[0][0]");
  expect_bad([](Case& c) { c.bt[1] = -1; }, "block_tables[0][1]");
  expect_bad([](Case& c) { c.lens[1] = c.p.max_blocks_per_seq * 16 + 1; }, "seq_lens[1]");
  expect_bad([](Case& c) { c.lens[0] = -1; }, "seq_lens[0]");
  expect_bad([](Case& c) { c.p.scale = INFINITY; }, "scale");
  expect_bad([](Case& c) { c.p.query = nullptr; }, "query");
  Spec s;
  Case c = build(s);
  Options o;
  o.out_dtype = DType::fp8_e5m2;
  EXPECT_THROW(reference_attention(c.p, o), std::invalid_argument);
}

}  // namespace
}  // namespace pagedattn::ref::testing
