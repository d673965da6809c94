// bound_table: coefficients.def as JSON (format in proofs/bound/README.md), with every
// entry evaluated in outward intervals on two examples, for a checker of the Coq
// theorem's constants (tests/check_table.py).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "pagedattn_bound/bound.h"

namespace pb = pagedattn::bound;

int main() {
  nlohmann::ordered_json j;
  j["format"] = "pagedattn-bound-table/2";
  j["functions"] = {{"grow", "(1 + u)^k - 1, k a nonnegative integer"},
                    {"comb", "a + b + a b, i.e. (1 + a)(1 + b) - 1"},
                    {"exp", "e^x"},
                    {"abs", "|x|"},
                    {"le", "1 if a <= b else 0"},
                    {"min", "min(a, b)"},
                    {"max", "max(a, b)"},
                    {"sel", "a if f != 0 else b (f a 0/1 flag)"},
                    {"step", "1 if x > 0 else 0"},
                    {"ceil_div", "ceil(a / b)"},
                    {"ceil_log2", "the least integer k >= 0 with 2^k >= x"}};
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const pb::TableEntry& e : pb::coefficient_table()) {
    nlohmann::ordered_json o = {{"kind", e.kind}, {"level", e.level}, {"name", e.name}};
    if (*e.eq) o["eq"] = e.eq;
    if (*e.expr) o["expr"] = e.expr;
    if (*e.doc) o["doc"] = e.doc;
    entries.push_back(o);
  }
  j["entries"] = entries;

  // The hand-checked case of tests/test_bound.cpp, and a V2 case with an fp8 cache and
  // every one of vLLM's choices (each comb with two nonzero operands).
  nlohmann::ordered_json examples = nlohmann::ordered_json::array();
  auto example = [&](const char* what, const pb::KernelConfig& c, const pb::RowMagnitudes& row,
                     const pb::ElementMagnitudes& el) {
    const char* scalar = c.scalar == pb::Format::f32   ? "f32"
                         : c.scalar == pb::Format::f16 ? "f16"
                                                       : "bf16";
    const pb::RowBound rb = pb::row_bound(c, row);
    pb::ElementTerms<pb::Interval> e = pb::convert_inputs<pb::Interval>(pb::element_inputs(el));
    pb::evaluate_element(rb.terms, e);
    nlohmann::ordered_json values;
    pb::for_each_value(rb.terms, e, [&](const char* name, const pb::Interval& x) {
      values[name] = {x.lo, x.hi};
    });
    examples.push_back({{"config", what}, {"scalar", scalar}, {"values", values}});
  };
  pb::KernelConfig c;
  c.scalar = c.cache = pb::Format::f32;
  c.head_size = 128;
  c.block_size = 16;
  c.warp_size = 32;
  c.exp = pb::ExpAccuracy{0.5, 0};
  pb::RowMagnitudes row;
  row.n = 1000;
  row.max_abs_v = 1;
  pb::ElementMagnitudes el;
  el.a = el.abs_exact = el.dev = 0.5;
  example(
      "f32 V1, head 128, block 16, warp 32, 128 threads, exp a = 0.5, b = 0; n = 1000, "
      "max_abs_v = 1, every other row magnitude 0; A = Y = dev = 0.5",
      c, row, el);
  c.scalar = pb::Format::f16;
  c.cache = pb::Format::fp8_e4m3;
  c.warp_size = 64;
  c.partition_size = 512;
  c.choices = pb::Choices::vllm_compatible();
  c.exp = pb::ExpAccuracy::cuda_fast();
  c.scale = 0.088;
  row.n = 100000;
  row.spread = 3;
  row.max_abs_logit = 2;
  row.max_qk = 5;
  row.max_abs_v = 448;
  row.sum_abs_q = 11;
  row.p_gap = 1.5;
  row.p_qk = 2;
  row.p_x = 1;
  el = {3, 100, 120, 150, 200, 90};  // abs_exact, a, dev, dev_gap, dev_qk, dev_x
  example(
      "f16 V2 partition 512, fp8_e4m3 cache, vLLM's numerics (all three choices), head 128, "
      "block 16, warp 64, CUDA's __expf, scale 0.088; n = 100000 and made-up magnitudes",
      c, row, el);
  // bf16 V2 with our numerics and values near FLT_MAX: the rare P.V path is charged.
  c.scalar = c.cache = pb::Format::bf16;
  c.choices = pb::Choices::exact_fp32();
  c.partition_size = 256;
  row.max_abs_v = 1e37;
  el = {1e35, 1e36, 1e36, 1e36, 1e36, 1e36};
  example(
      "bf16 V2 partition 256, bf16 cache, our numerics, warp 64, values up to 1e37 (the rare "
      "P.V path charged); n = 100000",
      c, row, el);
  j["examples"] = examples;
  std::printf("%s\n", j.dump(1).c_str());
  return 0;
}
