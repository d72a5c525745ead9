// Owning device allocation for tests and the CLI: upload, download, poison.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace kestrel::testing {

// Poison byte: 0xFF makes fp32/fp16/bf16 outputs NaN and e4m3 scales NaN, so
// an element the kernel failed to write can never pass a comparison.
constexpr uint8_t kPoison = 0xFF;

inline void cuda_or_throw(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) cuda_or_throw(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  template <typename T>
  static DeviceBuffer from(const std::vector<T>& host) {
    DeviceBuffer b(host.size() * sizeof(T));
    b.upload(host.data(), b.bytes_);
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t n) {
    if (n) cuda_or_throw(cudaMemcpy(ptr_, src, n, cudaMemcpyHostToDevice), "upload");
  }
  void poison() {
    if (bytes_) cuda_or_throw(cudaMemset(ptr_, kPoison, bytes_), "poison");
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> out(bytes_ / sizeof(T));
    cuda_or_throw(cudaDeviceSynchronize(), "kernel");
    if (bytes_) cuda_or_throw(cudaMemcpy(out.data(), ptr_, out.size() * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace kestrel::testing
