// Non-owning views of device (or host) memory: pointer, dtype, shape, strides.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

namespace kestrel {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF64,
  kE4M3,     // float8_e4m3fn, one byte
  kE2M1x2,   // two e2m1 values per byte, element 2j in the low nibble
  kU8,
  kI32,
  kI64,
};

const char* dtype_name(DType t);
int dtype_size(DType t);  // bytes per stored element (kE2M1x2: 1 byte = 2 values)

constexpr int kMaxRank = 4;

// Shape and strides count stored elements (for kE2M1x2, bytes: a row of K
// values has K/2 elements, as torch.float4_e2m1fn_x2). Strides may be any
// value >= the dense one; the innermost stride must be 1.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  // Dense row-major view.
  static TensorView dense(void* data, DType dtype, std::initializer_list<int64_t> shape);
  // Row-major with an explicit stride (elements) between rows of the last dim.
  static TensorView strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                            std::initializer_list<int64_t> stride);

  int64_t numel() const;
  int64_t size(int dim) const { return shape[dim < 0 ? dim + rank : dim]; }
  bool is_contiguous() const;
  std::string describe() const;  // "bf16[8,4096] strides [4096,1]"
};

}  // namespace kestrel
