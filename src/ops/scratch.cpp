#include "ops/scratch.h"

#include <cstdint>
#include <string>


namespace kestrel::ops {

Status Scratch::acquire(const Workspace& ws, size_t bytes, cudaStream_t stream, const char* name) {
  if (bytes == 0) return Status::Ok();
  if (ws.data != nullptr) {
    if (ws.bytes < bytes)
      return Status::InvalidArgument(std::string(name) + ": needs " + std::to_string(bytes) +
                                     " bytes, got " + std::to_string(ws.bytes));
    if (reinterpret_cast<uintptr_t>(ws.data) % 16 != 0)
      return Status::InvalidArgument(std::string(name) + ": data must be 16-byte aligned");
    ptr_ = ws.data;
    return Status::Ok();
  }
  KESTREL_RETURN_IF_ERROR(owned_.allocate(bytes, stream));
  ptr_ = owned_.get();
  return Status::Ok();
}

}  // namespace kestrel::ops
