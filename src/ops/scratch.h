// Device scratch for one call of an op (see Workspace in kestrel/rowwise.h):
// the caller's workspace when given, else stream-ordered memory
// (rt::StreamScratch: freed on the call's stream when the Scratch goes out of
// scope, i.e. after the call has enqueued its kernels).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kestrel/rowwise.h"
#include "runtime/scratch.h"

namespace kestrel::ops {

class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // `name` labels errors ("opt.workspace: ...").
  Status acquire(const Workspace& ws, size_t bytes, cudaStream_t stream, const char* name);
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  rt::StreamScratch owned_;
};

}  // namespace kestrel::ops
