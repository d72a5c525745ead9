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

enum class WorkspaceUse {
  kCounters,  // zero-initialised; every kernel leaves it zero (counters reset by their last user)
  kScratch,   // any contents; a kernel writes what it reads
};

// A buffer per (device, stream, use) that persists across calls. Grows on
// demand, stream-ordered; it cannot grow while the stream is being captured
// into a graph (a first call outside the capture sizes it). Counters and
// scratch data never share a buffer: data left behind by one call would be
// another call's counters.
Status stream_workspace(cudaStream_t stream, size_t bytes, void** out,
                        WorkspaceUse use = WorkspaceUse::kCounters);

}  // namespace kestrel::rt
