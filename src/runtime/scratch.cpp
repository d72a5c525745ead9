#include "runtime/scratch.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "runtime/cuda_check.h"

namespace kestrel::rt {
namespace {

// Once per device: let the default pool keep what it has (the default
// threshold of 0 would hand memory back to the driver at every sync).
Status retain_pool_memory() {
  static std::mutex mu;
  static std::set<int> done;
  int dev = 0;
  KESTREL_CUDA_RETURN(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (done.count(dev)) return Status::Ok();
  cudaMemPool_t pool;
  KESTREL_CUDA_RETURN(cudaDeviceGetDefaultMemPool(&pool, dev));
  uint64_t threshold = UINT64_MAX;
  KESTREL_CUDA_RETURN(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  done.insert(dev);
  return Status::Ok();
}

}  // namespace

StreamScratch::~StreamScratch() {
  if (ptr_) cudaFreeAsync(ptr_, stream_);
}

Status StreamScratch::allocate(size_t bytes, cudaStream_t stream) {
  KESTREL_RETURN_IF_ERROR(retain_pool_memory());
  if (ptr_) cudaFreeAsync(ptr_, stream_);
  ptr_ = nullptr;
  stream_ = stream;
  KESTREL_CUDA_RETURN(cudaMallocAsync(&ptr_, bytes, stream));
  return Status::Ok();
}

Status stream_workspace(cudaStream_t stream, size_t bytes, void** out, WorkspaceUse use) {
  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  static std::mutex mu;
  static std::map<std::tuple<int, cudaStream_t, WorkspaceUse>, Buffer> buffers;
  int dev = 0;
  KESTREL_CUDA_RETURN(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  Buffer& b = buffers[{dev, stream, use}];
  if (b.bytes < bytes) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KESTREL_CUDA_RETURN(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
      return Status::Unsupported("stream workspace: needs " + std::to_string(bytes) +
                                 " bytes during graph capture; make one call on this stream "
                                 "before capturing");
    KESTREL_RETURN_IF_ERROR(retain_pool_memory());
    if (b.ptr) KESTREL_CUDA_RETURN(cudaFreeAsync(b.ptr, stream));
    b = Buffer{};
    KESTREL_CUDA_RETURN(cudaMallocAsync(&b.ptr, bytes, stream));
    if (use == WorkspaceUse::kCounters) KESTREL_CUDA_RETURN(cudaMemsetAsync(b.ptr, 0, bytes, stream));
    b.bytes = bytes;
  }
  *out = b.ptr;
  return Status::Ok();
}

}  // namespace kestrel::rt
