// libFuzzer target: a replay folder as `pagedattn run` and `audit --replay` read it
// (tools/cli_replay.h). The input is the folder's files joined by kSeparator, in the
// order of kFiles (a sixth part is alibi_slopes); its first byte picks --bf16 and
// --kv-cache-dtype. Reading must succeed or throw cli::InputError; what it accepts is
// then scanned for non-finite live inputs, which reads every key and value slot the
// block tables name: an index the validation let through out of range is an ASan report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli.h"
#include "cli_replay.h"
#include "pagedattn_audit/findings.h"

namespace {

const std::string kSeparator = "\n@@file@@\n";
const char* const kFiles[] = {"query",        "key_cache", "value_cache",
                              "block_tables", "seq_lens",  "alibi_slopes"};

const std::filesystem::path& folder() {
  static const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("fuzz_replay_" + std::to_string(::getpid()));
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool bf16 = data[0] & 1;
  const char* const kv[] = {"auto", "fp8_e4m3", "fp8_e5m2", "auto"};
  const std::string kv_cache_dtype = kv[(data[0] >> 1) & 3];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);

  std::filesystem::remove_all(folder());
  std::filesystem::create_directories(folder());
  std::size_t begin = 0;
  for (int f = 0; f < 6 && begin <= text.size(); ++f) {
    const std::size_t end = std::min(text.find(kSeparator, begin), text.size());
    std::ofstream(folder() / (std::string(kFiles[f]) + ".npy"), std::ios::binary)
        << text.substr(begin, end - begin);
    begin = end + kSeparator.size();
  }
  try {
    const pagedattn::testing::Case c = cli::load_replay(folder().string(), bf16, kv_cache_dtype);
    pagedattn::audit::first_nonfinite_input(c);
  } catch (const cli::InputError&) {
  }
  return 0;
}
