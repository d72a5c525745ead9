#include "kestrel/status.h"

namespace kestrel {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kCudaError: return "CUDA error";
    case StatusCode::kCompileError: return "kernel compile error";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace kestrel
