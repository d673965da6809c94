// libFuzzer target: the .npy reader (tools/npy.h) on arbitrary bytes. It must either
// return an array whose data holds exactly numel * itemsize bytes or throw npy::Error;
// anything else (a crash, another exception, a size mismatch) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<unsigned char> bytes(data, data + size);
  try {
    const npy::Array a = npy::parse(bytes, "<fuzz>");
    if (a.data.size() != static_cast<std::size_t>(a.numel()) * a.itemsize()) std::abort();
    // What parses must survive a round trip unchanged.
    const npy::Array b = npy::parse(npy::serialize(a), "<fuzz round trip>");
    if (b.descr != a.descr || b.shape != a.shape || b.data != a.data) std::abort();
  } catch (const npy::Error&) {
  }
  return 0;
}
