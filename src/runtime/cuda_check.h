// Turns CUDA runtime errors into Status values.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "kestrel/status.h"

namespace kestrel::rt {

inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return Status::CudaError(std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                           cudaGetErrorString(err) + ")");
}

}  // namespace kestrel::rt

#define KESTREL_CUDA_RETURN(expr) KESTREL_RETURN_IF_ERROR(::kestrel::rt::cuda_status((expr), #expr))
