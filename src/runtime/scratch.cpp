#include "runtime/scratch.h"

#include <cstdint>
#include <mutex>
#include <set>

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

}  // namespace kestrel::rt
