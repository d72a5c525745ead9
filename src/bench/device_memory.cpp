#include "bench/device_memory.h"

#include "runtime/cuda_check.h"

namespace kestrel::bench {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

Status DeviceBuffer::allocate(size_t bytes) {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
  if (bytes == 0) return Status::Ok();
  KESTREL_CUDA_RETURN(cudaMalloc(&ptr_, bytes));
  bytes_ = bytes;
  return Status::Ok();
}

Status DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  if (offset + bytes > bytes_) return Status::Internal("DeviceBuffer::upload past the end");
  KESTREL_CUDA_RETURN(cudaMemcpy(bytes_at(offset), host, bytes, cudaMemcpyHostToDevice));
  return Status::Ok();
}

Status DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  if (offset + bytes > bytes_) return Status::Internal("DeviceBuffer::download past the end");
  KESTREL_CUDA_RETURN(cudaMemcpy(host, bytes_at(offset), bytes, cudaMemcpyDeviceToHost));
  return Status::Ok();
}

Status DeviceBuffer::fill(uint8_t value) {
  KESTREL_CUDA_RETURN(cudaMemset(ptr_, value, bytes_));
  return Status::Ok();
}

}  // namespace kestrel::bench
