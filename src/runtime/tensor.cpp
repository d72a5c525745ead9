#include "kestrel/tensor.h"

#include <sstream>

namespace kestrel {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "f64";
    case DType::kE4M3: return "e4m3";
    case DType::kE2M1x2: return "e2m1x2";
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
  }
  return "?";
}

int dtype_size(DType t) {
  switch (t) {
    case DType::kF64: case DType::kI64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kE4M3: case DType::kE2M1x2: case DType::kU8: return 1;
  }
  return 0;
}

TensorView TensorView::dense(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.rank = int(shape.size());
  int i = 0;
  for (int64_t s : shape) v.shape[i++] = s;
  int64_t stride = 1;
  for (int d = v.rank - 1; d >= 0; --d) {
    v.stride[d] = stride;
    stride *= v.shape[d];
  }
  return v;
}

TensorView TensorView::strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               std::initializer_list<int64_t> stride) {
  TensorView v = dense(data, dtype, shape);
  int i = 0;
  for (int64_t s : stride) v.stride[i++] = s;
  return v;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t stride_expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] != 1 && stride[d] != stride_expected) return false;
    stride_expected *= shape[d];
  }
  return true;
}

std::string TensorView::describe() const {
  std::ostringstream os;
  os << dtype_name(dtype) << "[";
  for (int d = 0; d < rank; ++d) os << (d ? "," : "") << shape[d];
  os << "] strides [";
  for (int d = 0; d < rank; ++d) os << (d ? "," : "") << stride[d];
  os << "]";
  return os.str();
}

}  // namespace kestrel
