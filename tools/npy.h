// A small reader and writer of NumPy .npy files, format versions 1.0 and 2.0, C order
// and little-endian only: what `pagedattn run` needs to replay tensors captured from
// vLLM (np.save of .cpu().numpy()) and to hand its outputs back to NumPy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace npy {

// Every error names the file (or "<memory>") and the rule broken.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Array {
  std::string descr;                // NumPy's type string as written, e.g. "<f4", "|u1"
  std::vector<std::int64_t> shape;  // () is a scalar: one element
  std::vector<unsigned char> data;  // numel() * itemsize() bytes, C order, little-endian

  std::int64_t numel() const;
  std::size_t itemsize() const;      // from descr
  std::string shape_string() const;  // "(2, 3)", "(5,)", "()"
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(data.data());
  }
};

// Parses a type string of the form [<|]{f,i,u,b}N; returns the item size. Throws for
// big-endian ('>'), native ('='), structured or otherwise unsupported descriptors;
// `origin` names the file in the message.
std::size_t descr_itemsize(const std::string& descr, const std::string& origin);

// Decodes a whole .npy image; `origin` names it in errors.
Array parse(const std::vector<unsigned char>& bytes, const std::string& origin);
// Encodes an array (version 1.0 when the header fits, else 2.0).
std::vector<unsigned char> serialize(const Array& array);

Array load(const std::string& path);
// Writes `array` to `path` atomically: a temporary file in the same folder, then rename,
// so a reader never sees half a file and a failure leaves any old file in place.
void save_atomic(const std::string& path, const Array& array);

}  // namespace npy
