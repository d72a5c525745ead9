// Status: every public call returns one. A failed Status names the argument
// and the rule it broke ("K: must be a multiple of 16, got 100").
#pragma once
#include <string>
#include <utility>

namespace kestrel {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller broke a documented rule
  kUnsupported,      // valid, but not implemented for this GPU / combination
  kCudaError,        // the CUDA runtime or driver reported an error
  kCompileError,     // NVRTC rejected a kernel; the message holds its log
  kNotFound,         // a named operation, suite or file does not exist
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status CudaError(std::string m) { return {StatusCode::kCudaError, std::move(m)}; }
  static Status CompileError(std::string m) { return {StatusCode::kCompileError, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: K: must be a multiple of 16, got 100"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace kestrel

#define KESTREL_RETURN_IF_ERROR(expr)              \
  do {                                             \
    ::kestrel::Status kestrel_status_ = (expr);    \
    if (!kestrel_status_.ok()) return kestrel_status_; \
  } while (0)
