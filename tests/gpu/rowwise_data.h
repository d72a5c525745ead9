// Host-side row tensors for the row-wise GPU tests: [M][N] data stored in a
// dtype with a row stride, its exact values for the float64 references, device
// copies (outputs poisoned), and the pass rule of each output dtype.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "compare.h"
#include "device_buffer.h"
#include "host_float.h"
#include "kestrel/tensor.h"

namespace kestrel::testing {

inline double stored_value(DType t, double x) {
  if (t == DType::kF32) return double(float(x));
  return t == DType::kBF16 ? bf16_bits_to_float(float_to_bf16_bits(x))
                           : fp16_bits_to_float(float_to_fp16_bits(x));
}

// [m][n] rows of dtype t, row stride n + pad elements, the first row `lead`
// elements into its buffer (misaligned row starts).
struct Rows {
  DType t = DType::kF32;
  int64_t m = 0, n = 0, stride = 0, lead = 0;
  std::vector<double> values;  // dense [m][n], exactly what is stored

  Rows(DType dtype, int64_t rows, int64_t cols, int64_t pad, const std::vector<double>& data,
       int64_t lead_elements = 0)
      : t(dtype), m(rows), n(cols), stride(cols + pad), lead(lead_elements), values(data.size()) {
    for (size_t i = 0; i < data.size(); ++i) values[i] = stored_value(t, data[i]);
  }
  size_t bytes() const { return size_t(lead + m * stride) * size_t(dtype_size(t)); }

  std::vector<uint8_t> encode() const {
    std::vector<uint8_t> out(bytes(), 0);
    const int es = dtype_size(t);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) {
        uint8_t* dst = &out[size_t((lead + r * stride + j) * es)];
        const double v = values[size_t(r * n + j)];
        if (t == DType::kF32) {
          const float f = float(v);
          std::memcpy(dst, &f, 4);
        } else {
          const uint16_t h = t == DType::kBF16 ? float_to_bf16_bits(v) : float_to_fp16_bits(v);
          std::memcpy(dst, &h, 2);
        }
      }
    return out;
  }
};

// A device tensor laid out like a Rows.
struct DeviceRows {
  DeviceBuffer buf;
  TensorView view;
  int64_t lead = 0;

  static DeviceRows input(const Rows& r) {
    DeviceRows d;
    d.buf = DeviceBuffer::from(r.encode());
    d.place(r);
    return d;
  }
  static DeviceRows poisoned_like(const Rows& r) {
    DeviceRows d;
    d.buf = DeviceBuffer(r.bytes());
    d.buf.poison();
    d.place(r);
    return d;
  }
  // Dense [m][n] values (padding skipped).
  std::vector<double> read() const {
    const auto raw = buf.download<uint8_t>();
    const int64_t m = view.shape[0], n = view.shape[1], stride = view.stride[0];
    const int es = dtype_size(view.dtype);
    std::vector<double> out(size_t(m * n));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) {
        const uint8_t* src = &raw[size_t((lead + r * stride + j) * es)];
        double v;
        if (view.dtype == DType::kF32) {
          float f;
          std::memcpy(&f, src, 4);
          v = f;
        } else {
          uint16_t h;
          std::memcpy(&h, src, 2);
          v = view.dtype == DType::kBF16 ? bf16_bits_to_float(h) : fp16_bits_to_float(h);
        }
        out[size_t(r * n + j)] = v;
      }
    return out;
  }

 private:
  void place(const Rows& r) {
    lead = r.lead;
    view = TensorView::strided(static_cast<uint8_t*>(buf.get()) + lead * dtype_size(r.t), r.t,
                               {r.m, r.n}, {r.stride, 1});
  }
};

// fp32 vectors ([M] statistics, losses, weights).
inline DeviceBuffer upload_f32(const std::vector<double>& v) {
  return DeviceBuffer::from(std::vector<float>(v.begin(), v.end()));
}
inline DeviceBuffer poisoned_f32(size_t count) {
  DeviceBuffer b(count * 4);
  b.poison();
  return b;
}
inline std::vector<double> read_f32(const DeviceBuffer& b) {
  const auto f = b.download<float>();
  return std::vector<double>(f.begin(), f.end());
}
inline std::vector<double> round_f32(std::vector<double> v) {
  for (double& x : v) x = double(float(x));
  return v;
}

// The pass rule of an output of dtype t (fp32: relative 1e-5 against the
// larger of |ref| and the RMS of its row of row_len elements).
inline CompareReport compare_as(DType t, const std::vector<double>& out,
                                const std::vector<double>& ref, int64_t row_len) {
  if (t == DType::kBF16) return compare_bf16(out, ref);
  if (t == DType::kF16) return compare_fp16(out, ref);
  return compare_fp32(out, ref, 1e-5, row_len);
}

}  // namespace kestrel::testing
