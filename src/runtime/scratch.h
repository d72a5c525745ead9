// Stream-ordered scratch memory (cudaMallocAsync / cudaFreeAsync): safe for
// concurrent calls on different streams and capturable in CUDA graphs. The
// device's default pool keeps freed memory, so steady-state calls do not
// reach the driver.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kestrel/status.h"

namespace kestrel::rt {

class StreamScratch {
 public:
  StreamScratch() = default;
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch();  // frees on the stream it was allocated on

  Status allocate(size_t bytes, cudaStream_t stream);
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// A zero-initialised buffer of (device, stream) that persists across calls,
// for kernels that leave it as they found it (counters reset by their last
// user). Grows on demand, stream-ordered; it cannot grow while the stream is
// being captured into a graph (a first call outside the capture sizes it).
Status stream_workspace(cudaStream_t stream, size_t bytes, void** out);

}  // namespace kestrel::rt
