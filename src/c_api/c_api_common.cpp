#include "c_api/c_api_common.h"

#include <string>

#include "kestrel/c_api.h"

namespace kestrel::c_api {
namespace {

thread_local std::string g_last_error;

// The C codes are the C++ enumerators' values: a range check is the whole
// conversion.
static_assert(int(DType::kF32) == KESTREL_F32 && int(DType::kF16) == KESTREL_F16 &&
              int(DType::kBF16) == KESTREL_BF16);

}  // namespace

int report(const Status& s) {
  g_last_error = s.ok() ? std::string() : s.to_string();
  return int(s.code());
}

Status dtype_of(int code, const char* name, DType* out) {
  if (code < KESTREL_F32 || code > KESTREL_BF16)
    return Status::InvalidArgument(std::string(name) + ": must be KESTREL_F32, KESTREL_F16 or " +
                                   "KESTREL_BF16, got " + std::to_string(code));
  *out = DType(code);
  return Status::Ok();
}

TensorView view(const void* p, DType t, std::initializer_list<int64_t> shape) {
  return p ? TensorView::dense(const_cast<void*>(p), t, shape) : TensorView{};
}

}  // namespace kestrel::c_api

extern "C" const char* kestrel_last_error(void) { return kestrel::c_api::g_last_error.c_str(); }
