// The .npy reader/writer: round trips through files and bytes, the exact bytes NumPy
// writes, and a named error for each malformed header.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "npy.h"

namespace {

std::vector<unsigned char> bytes_of(const std::string& header_dict, int major = 1,
                                    std::size_t data_bytes = 0) {
  std::vector<unsigned char> b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major),
                                  0};
  const std::size_t len = header_dict.size();
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) b.push_back(static_cast<unsigned char>(len >> (8 * i)));
  b.insert(b.end(), header_dict.begin(), header_dict.end());
  b.resize(b.size() + data_bytes, 0);
  return b;
}

std::string error_of(const std::vector<unsigned char>& b) {
  try {
    npy::parse(b, "t.npy");
  } catch (const npy::Error& e) {
    return e.what();
  }
  return "";
}

std::filesystem::path temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("pagedattn_npy_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

TEST(Npy, RoundTripsEveryDtypeTheToolUses) {
  const auto dir = temp_dir("roundtrip");
  struct Case {
    std::string descr;
    std::vector<std::int64_t> shape;
  };
  for (const Case& c :
       {Case{"<f4", {2, 3, 4}}, Case{"<f2", {5}}, Case{"<u2", {1, 1}},
        Case{"|u1", {3, 2, 1, 4, 16}}, Case{"<i4", {7}}, Case{"<f4", {}}, Case{"<f4", {4, 0, 2}}}) {
    npy::Array a;
    a.descr = c.descr;
    a.shape = c.shape;
    a.data.resize(static_cast<std::size_t>(a.numel()) * a.itemsize());
    for (std::size_t i = 0; i < a.data.size(); ++i)
      a.data[i] = static_cast<unsigned char>(i * 37 + 1);
    const std::string path = (dir / "a.npy").string();
    npy::save_atomic(path, a);
    const npy::Array b = npy::load(path);
    EXPECT_EQ(b.descr, a.descr);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
    // Data starts 64-byte aligned, as NumPy lays files out.
    const auto bytes = npy::serialize(a);
    EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u);
  }
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST(Npy, WritesTheHeaderNumPyWrites) {
  // np.save of np.zeros(3, '<f4'): version 1.0, header length 118, dict padded to 128 bytes.
  npy::Array a;
  a.descr = "<f4";
  a.shape = {3};
  a.data.assign(12, 0);
  const auto b = npy::serialize(a);
  ASSERT_EQ(b.size(), 128u + 12u);
  EXPECT_EQ(b[6], 1);
  EXPECT_EQ(b[7], 0);
  EXPECT_EQ(b[8] | (b[9] << 8), 118);
  const std::string header(b.begin() + 10, b.begin() + 128);
  EXPECT_EQ(header.substr(0, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }  ");
  EXPECT_EQ(header.back(), '\n');
}

TEST(Npy, ReadsVersion2AndKeysInAnyOrder) {
  const auto b = bytes_of("{'shape': (2, 2), 'fortran_order': False, 'descr': '<i4'}\n", 2, 16);
  const npy::Array a = npy::parse(b, "t.npy");
  EXPECT_EQ(a.descr, "<i4");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(a.data.size(), 16u);
}

TEST(Npy, MalformedHeadersAreNamedErrors) {
  struct Case {
    std::vector<unsigned char> bytes;
    std::string expect;
  };
  std::vector<unsigned char> bad_magic =
      bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 1, 4);
  bad_magic[1] = 'X';
  std::vector<unsigned char> v3 =
      bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 3, 4);
  std::vector<unsigned char> short_header =
      bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 1, 0);
  short_header.resize(30);
  const Case cases[] = {
      {bad_magic, "magic"},
      {v3, "version 3.0"},
      {short_header, "truncated header"},
      {bytes_of("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }\n", 1, 4),
       "fortran_order"},
      {bytes_of("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", 1, 4), "big-endian"},
      {bytes_of("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", 1, 8),
       "unsupported dtype"},
      {bytes_of("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n", 1, 4),
       "structured"},
      {bytes_of("{'descr': '<f4', 'shape': (1,), }\n", 1, 4), "lacks the 'fortran_order'"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, }\n", 1, 4), "lacks the 'shape'"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n", 1, 4),
       "unexpected header key"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }\n", 1, 4),
       "non-negative"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 1, 4), "newline"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", 1, 8),
       "truncated data"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 1, 8),
       "trailing bytes"},
      {bytes_of("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }\n", 1, 4),
       "True or False"},
      // Found by fuzz_npy: the non-zero extents overflow int64 although a zero one makes the
      // array empty; numel() used to wrap (signed overflow) instead of the header being refused.
      {bytes_of("{'descr': '|u1', 'fortran_order': False, "
                "'shape': (22122212320, 22221232, 22, 0, 22), }\n",
                1, 0),
       "too large"},
      {bytes_of("{'descr': '<f4', 'fortran_order': False, "
                "'shape': (4294967296, 4294967296), }\n",
                1, 0),
       "too large"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.bytes);
    EXPECT_NE(e.find("t.npy: "), std::string::npos) << e;
    EXPECT_NE(e.find(c.expect), std::string::npos) << "want '" << c.expect << "' in: " << e;
  }
}

TEST(Npy, EmptyArraysHaveNoElements) {
  const npy::Array a =
      npy::parse(bytes_of("{'descr': '<f4', 'fortran_order': False, 'shape': (7, 0, 3), }\n"),
                 "t.npy");
  EXPECT_EQ(a.numel(), 0);
  EXPECT_TRUE(a.data.empty());
}

TEST(Npy, MissingFileNamesThePath) {
  try {
    npy::load("/nonexistent/dir/q.npy");
    FAIL();
  } catch (const npy::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/q.npy"), std::string::npos);
  }
}

}  // namespace
