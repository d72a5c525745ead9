// A small reader for NumPy .npy files (format versions 1 and 2, C order,
// little-endian): enough for the golden vectors, with a clear error on
// anything it does not handle rather than a silent misread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::testing {

struct NpyArray {
  std::string descr;            // "<f8", "<f4", "<f2", "|u1", "<u2" or "<i8"
  std::vector<int64_t> shape;   // empty for a 0-d array
  std::vector<uint8_t> data;    // raw little-endian bytes, C order

  int64_t numel() const;
  int item_size() const;  // bytes per element
  // Elements converted to double (any supported dtype; fp16 decoded exactly).
  std::vector<double> to_doubles() const;
  // Elements of exactly this type; throws if the descr does not match T.
  template <typename T>
  std::vector<T> as() const;
};

// Throws std::runtime_error naming the file and the problem.
NpyArray load_npy(const std::string& path);
// Parses an in-memory .npy image (what load_npy reads); `name` is for messages.
NpyArray parse_npy(const std::vector<uint8_t>& bytes, const std::string& name);

extern template std::vector<double> NpyArray::as<double>() const;
extern template std::vector<float> NpyArray::as<float>() const;
extern template std::vector<uint8_t> NpyArray::as<uint8_t>() const;
extern template std::vector<uint16_t> NpyArray::as<uint16_t>() const;
extern template std::vector<int64_t> NpyArray::as<int64_t>() const;

}  // namespace kestrel::testing
