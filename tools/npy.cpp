// The .npy layout: 6 magic bytes "\x93NUMPY", major and minor version bytes, the header
// length (uint16 in 1.0, uint32 in 2.0, little-endian), then an ASCII Python dict
// literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and
// ending in '\n' so that the data starts at a multiple of 64 bytes; then the raw data.
#include "npy.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <unistd.h>

namespace npy {
namespace {

const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kAlign = 64;

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw Error(origin + ": " + what);
}

// A cursor over the header dict literal. Only the subset np.save writes is accepted:
// quoted strings, True/False and tuples of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& origin) : s_(text), origin_(origin) {}

  void parse(std::string* descr, bool* fortran, std::vector<std::int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[')
          bad("'descr' is a structured dtype (a list); only plain types are supported");
        *descr = quoted();
        have_descr = true;
      } else if (key == "fortran_order") {
        *fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        *shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected header key '" + key + "' (allowed: 'descr', 'fortran_order', 'shape')");
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}' in the header dict");
    }
    ++i_;
    if (!have_descr) bad("header lacks the 'descr' key");
    if (!have_fortran) bad("header lacks the 'fortran_order' key");
    if (!have_shape) bad("header lacks the 'shape' key");
    skip_space();
    if (i_ != s_.size()) bad("unexpected text after the header dict");
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail(origin_, "malformed .npy header: " + what);
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) bad("unterminated string");
    std::string v = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    bad("'fortran_order' must be True or False");
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> dims;
    expect('(');
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        bad("'shape' must be a tuple of non-negative integers");
      }
      std::int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10)
          bad("a dimension is too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      dims.push_back(v);
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in 'shape'");
    }
    ++i_;
    return dims;
  }

  const std::string& s_;
  const std::string& origin_;
  std::size_t i_ = 0;
};

std::uint32_t read_le(const unsigned char* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::size_t descr_itemsize(const std::string& descr, const std::string& origin) {
  if (descr.size() < 3) fail(origin, "unsupported dtype '" + descr + "'");
  const char order = descr[0], kind = descr[1];
  std::size_t size = 0;
  for (std::size_t i = 2; i < descr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(descr[i]))) {
      fail(origin, "unsupported dtype '" + descr + "'");
    }
    size = size * 10 + static_cast<std::size_t>(descr[i] - '0');
    if (size > 16) fail(origin, "unsupported dtype '" + descr + "'");
  }
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') {
    fail(origin, "unsupported dtype '" + descr + "' (only f, i, u and b kinds)");
  }
  if (size == 0) fail(origin, "unsupported dtype '" + descr + "'");
  if (order == '>' && size > 1) {
    fail(origin, "dtype '" + descr + "' is big-endian; only little-endian ('<') is supported");
  }
  if (order != '<' && order != '|' && order != '>') {
    fail(origin, "dtype '" + descr + "': byte order must be '<' or '|'");
  }
  if (order == '|' && size > 1) {
    fail(origin, "dtype '" + descr + "': '|' (no byte order) is only valid for 1-byte items");
  }
  return size;
}

std::int64_t Array::numel() const {
  // Any zero extent makes the array empty; checked first so that the product of the other
  // extents is never formed (parse() bounds only what it could have to allocate).
  for (std::int64_t d : shape)
    if (d == 0) return 0;
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::size_t Array::itemsize() const {
  return descr_itemsize(descr, "<array>");
}

std::string Array::shape_string() const {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Array parse(const std::vector<unsigned char>& bytes, const std::string& origin) {
  if (bytes.size() < 10 || !std::equal(kMagic, kMagic + 6, bytes.begin())) {
    fail(origin, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  const int major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2) || minor != 0) {
    fail(origin, ".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                     " is not supported (1.0 and 2.0 are)");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + static_cast<std::size_t>(len_bytes);
  if (bytes.size() < prefix) fail(origin, "truncated before the header length");
  const std::size_t header_len = read_le(&bytes[8], len_bytes);
  if (bytes.size() < prefix + header_len) {
    fail(origin, "truncated header: it declares " + std::to_string(header_len) +
                     " bytes, the file has " + std::to_string(bytes.size() - prefix));
  }
  const std::string header(bytes.begin() + prefix, bytes.begin() + prefix + header_len);
  for (char c : header) {
    if (static_cast<unsigned char>(c) >= 0x80) fail(origin, "malformed .npy header: not ASCII");
  }
  if (header.empty() || header.back() != '\n') {
    fail(origin, "malformed .npy header: it must end with a newline");
  }

  Array a;
  bool fortran = false;
  HeaderParser(header, origin).parse(&a.descr, &fortran, &a.shape);
  if (fortran) {
    fail(origin,
         "fortran_order is True; only C-order arrays are supported "
         "(save np.ascontiguousarray(x))");
  }
  const std::size_t item = descr_itemsize(a.descr, origin);
  // Guard the byte count against overflow before comparing it with the file size. As numpy
  // does, the product of the non-zero extents must fit too (numel() is an int64), even when a
  // zero extent makes the array empty: a (2^40, 2^40, 0) header is rejected, not wrapped.
  std::size_t want = item;
  std::int64_t extent_product = 1;
  bool empty = false;
  for (std::int64_t d : a.shape) {
    if (d == 0) {
      empty = true;
      continue;
    }
    if (extent_product > std::numeric_limits<std::int64_t>::max() / d ||
        want > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(d)) {
      fail(origin, "shape " + a.shape_string() + " is too large");
    }
    extent_product *= d;
    want *= static_cast<std::size_t>(d);
  }
  if (empty) want = 0;
  const std::size_t have = bytes.size() - prefix - header_len;
  if (have != want) {
    fail(origin, std::string(have < want ? "truncated data" : "trailing bytes after the data") +
                     ": shape " + a.shape_string() + " of '" + a.descr + "' needs " +
                     std::to_string(want) + " bytes, the file has " + std::to_string(have));
  }
  a.data.assign(bytes.begin() + prefix + header_len, bytes.end());
  return a;
}

std::vector<unsigned char> serialize(const Array& array) {
  descr_itemsize(array.descr, "<array>");
  std::string dict = "{'descr': '" + array.descr +
                     "', 'fortran_order': False, 'shape': " + array.shape_string() + ", }";
  // Version 1.0 stores the header length in 16 bits; fall back to 2.0 beyond that.
  int len_bytes = 2;
  std::size_t total = 8 + len_bytes + dict.size() + 1;
  std::size_t padded = (total + kAlign - 1) / kAlign * kAlign;
  if (padded - 8 - len_bytes > 0xffff) {
    len_bytes = 4;
    total = 8 + len_bytes + dict.size() + 1;
    padded = (total + kAlign - 1) / kAlign * kAlign;
  }
  const std::size_t header_len = padded - 8 - len_bytes;
  dict.append(padded - total, ' ');
  dict.push_back('\n');

  std::vector<unsigned char> out(kMagic, kMagic + 6);
  out.push_back(len_bytes == 2 ? 1 : 2);
  out.push_back(0);
  for (int i = 0; i < len_bytes; ++i)
    out.push_back(static_cast<unsigned char>(header_len >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

Array load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "read error");
  return parse(bytes, path);
}

void save_atomic(const std::string& path, const Array& array) {
  const std::vector<unsigned char> bytes = serialize(array);
  const std::filesystem::path target(path);
  // Same folder as the target, so the rename stays on one file system and is atomic.
  const std::filesystem::path tmp = target.parent_path() / ("." + target.filename().string() +
                                                            ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, "cannot create the temporary file " + tmp.string());
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      fail(path, "write error");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(path, "cannot rename the temporary file into place: " + ec.message());
  }
}

}  // namespace npy
