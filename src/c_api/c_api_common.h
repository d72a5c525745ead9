// What every C ABI file (include/kestrel/c_api.h) shares: a Status becomes
// its code with its message kept per thread, C codes become the C++ enums,
// and C pointers become views.
#pragma once
#include <cuda_runtime_api.h>

#include <initializer_list>

#include "kestrel/status.h"
#include "kestrel/tensor.h"

namespace kestrel::c_api {

// 0 for success, else the status code; kestrel_last_error() then gives its message.
int report(const Status& s);

// `code` (KESTREL_F32, _F16, _BF16) as a DType; `name` is the argument's.
Status dtype_of(int code, const char* name, DType* out);

// A dense view, or the empty view that the C++ API reads as "omitted".
TensorView view(const void* p, DType t, std::initializer_list<int64_t> shape);

inline cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace kestrel::c_api
