#include "bench/host_tensors.h"

#include <algorithm>
#include <cstring>

#include "host_float.h"
#include "random.h"

namespace kestrel::bench {

const std::vector<std::string>& float_dtype_names() {
  static const std::vector<std::string> names = {"bf16", "fp16", "fp32"};
  return names;
}

DType float_dtype(const std::string& name) {
  if (name == "bf16") return DType::kBF16;
  if (name == "fp16") return DType::kF16;
  return DType::kF32;
}

std::vector<uint8_t> encode_floats(const std::vector<double>& x, DType t,
                                   std::vector<double>* exact) {
  std::vector<uint8_t> bytes(x.size() * size_t(dtype_size(t)));
  if (exact) exact->resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double rounded = 0;
    if (t == DType::kF32) {
      const float f = float(x[i]);
      std::memcpy(&bytes[4 * i], &f, 4);
      rounded = f;
    } else {
      const uint16_t h =
          t == DType::kBF16 ? testing::float_to_bf16_bits(x[i]) : testing::float_to_fp16_bits(x[i]);
      std::memcpy(&bytes[2 * i], &h, 2);
      rounded = t == DType::kBF16 ? testing::bf16_bits_to_float(h) : testing::fp16_bits_to_float(h);
    }
    if (exact) (*exact)[i] = rounded;
  }
  return bytes;
}

std::vector<double> decode_floats(const std::vector<uint8_t>& bytes, DType t) {
  const size_t n = bytes.size() / size_t(dtype_size(t));
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::kF32) {
      float f;
      std::memcpy(&f, &bytes[4 * i], 4);
      out[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[2 * i], 2);
      out[i] = t == DType::kBF16 ? testing::bf16_bits_to_float(h) : testing::fp16_bits_to_float(h);
    }
  }
  return out;
}

testing::CompareReport compare_floats(DType t, const std::vector<double>& out,
                                      const std::vector<double>& ref) {
  if (t == DType::kF16) return testing::compare_fp16(out, ref);
  if (t == DType::kBF16) return testing::compare_bf16(out, ref);
  return testing::compare_fp32(out, ref);
}

namespace {

// Timing inputs generate at most this many values and repeat them.
constexpr int64_t kTimingUnique = int64_t(1) << 22;

template <typename T>
std::vector<T> repeated(const std::vector<T>& base, int64_t n) {
  std::vector<T> x(static_cast<size_t>(n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = base[i % base.size()];
  return x;
}

}  // namespace

std::vector<double> timing_data(int64_t n, uint64_t seed) {
  if (n <= 0) return {};
  return repeated(testing::random_normal(std::min(n, kTimingUnique), seed), n);
}

std::vector<uint8_t> timing_e4m3(int64_t n, uint64_t seed) {
  if (n <= 0) return {};
  return repeated(testing::random_e4m3(std::min(n, kTimingUnique), seed), n);
}

}  // namespace kestrel::bench
