// first_nonfinite_input finds a non-finite live key or value element in every cache format
// and slot, and never one past seq_len: its raw-bits pre-scan decides whether the ordered
// scan runs at all, so a pre-scan that missed an element (a wrong exponent mask, the last
// partial block skipped, a run cut short) would silently drop the finding. Shown: with the
// f16 mask 0x7e00 (NaN only) the inf cases fail; with the partial last block skipped, the
// last-token cases fail.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "pagedattn_audit/findings.h"
#include "pagedattn_audit/inputs.h"

namespace pagedattn::audit {
namespace {

using testing::Case;
using testing::Dim;
using testing::KvHead;
using testing::Physical;

struct Format {
  DType dtype;
  CacheFormat cache;
};

TEST(Findings, NonFiniteLiveCacheElementIsFoundInEveryFormatAndSlot) {
  // 2 sequences, 4 heads, 2 KV heads, head size 64, blocks of 16; sequence 0 has 40 tokens:
  // two whole blocks and 8 live slots of a third.
  CaseShape sh{2, 4, 2, 64, 16, DType::f32, CacheFormat::same, 40};
  for (const Format f :
       {Format{DType::f32, CacheFormat::same}, Format{DType::f16, CacheFormat::same},
        Format{DType::bf16, CacheFormat::same}, Format{DType::f16, CacheFormat::fp8_e4m3},
        Format{DType::bf16, CacheFormat::fp8_e5m2}}) {
    sh.dtype = f.dtype;
    sh.cache = f.cache;
    const Case good = generate_inputs(sh, "vllm_uniform", 3, 1);
    const std::string label = std::string(dtype_name(f.dtype)) + "/" + cache_format_name(f.cache);
    ASSERT_EQ(first_nonfinite_input(good), "") << label;
    // E4M3 has no infinity: encode stores NaN for it, still a finding.
    for (const double bad : {double(NAN), double(INFINITY), -double(INFINITY)}) {
      for (const int token : {0, 17, 39}) {  // first block, a middle slot, the last live slot
        for (const int d : {0, 9, 63}) {
          for (const bool key : {true, false}) {
            Case c = good;
            const Physical at = c.where(0, token);
            if (key)
              c.set_key(at.block, KvHead{1}, at.slot, Dim{d}, bad);
            else
              c.set_value(at.block, KvHead{1}, at.slot, Dim{d}, bad);
            const std::string want = std::string(key ? "key_cache" : "value_cache") + "[block " +
                                     std::to_string(at.block.v) + "][kv head 1][dim " +
                                     std::to_string(d) + "][slot " + std::to_string(at.slot.v) +
                                     "]";
            EXPECT_EQ(first_nonfinite_input(c).rfind(want, 0), 0u)
                << label << " " << bad << " token " << token << " dim " << d << ": "
                << first_nonfinite_input(c);
          }
        }
      }
    }
    // Token 40 of sequence 0 is past seq_len: never read, no finding.
    Case c = good;
    const Physical tail = c.where(0, 40);
    c.set_key(tail.block, KvHead{0}, tail.slot, Dim{5}, NAN);
    c.set_value(tail.block, KvHead{1}, tail.slot, Dim{6}, NAN);
    EXPECT_EQ(first_nonfinite_input(c), "") << label;
  }
}

}  // namespace
}  // namespace pagedattn::audit
