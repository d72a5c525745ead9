#include "runtime/device.h"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>

#include "runtime/cuda_check.h"

namespace kestrel::rt {

std::string DeviceInfo::arch() const {
  // Architecture-specific features (wgmma, setmaxnreg) need the "a" target.
  const std::string base = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  return cc_major >= 9 ? base + "a" : base;
}

bool cuda_device_available() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return false;
  }
  return n > 0;
}

Status current_device(const DeviceInfo** out) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceInfo>> cache;
  int dev = 0;
  KESTREL_CUDA_RETURN(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[dev];
  if (!slot) {
    cudaDeviceProp p{};
    KESTREL_CUDA_RETURN(cudaGetDeviceProperties(&p, dev));
    auto info = std::make_unique<DeviceInfo>();
    info->ordinal = dev;
    info->name = p.name;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    info->l2_bytes = p.l2CacheSize;
    info->max_smem_per_block_optin = int(p.sharedMemPerBlockOptin);
    int clk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, dev);
    info->mem_clock_khz = clk;
    info->mem_bus_bits = p.memoryBusWidth;
    slot = std::move(info);
  }
  *out = slot.get();
  return Status::Ok();
}

Status check_device_readable(const void* p, const DeviceInfo& dev, const char* name) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return Status::InvalidArgument(std::string(name) + ": not a pointer CUDA knows");
  }
  switch (attr.type) {
    case cudaMemoryTypeManaged:
      return Status::Ok();
    case cudaMemoryTypeHost:  // page-locked: mapped at the same address (UVA)
      if (attr.devicePointer == p) return Status::Ok();
      break;
    case cudaMemoryTypeDevice:
      if (attr.device == dev.ordinal) return Status::Ok();
      return Status::InvalidArgument(std::string(name) + ": device memory of GPU " +
                                     std::to_string(attr.device) + ", the call runs on GPU " +
                                     std::to_string(dev.ordinal));
    default:
      break;
  }
  return Status::InvalidArgument(std::string(name) +
                                 ": must point to memory the GPU can read (device, managed or "
                                 "page-locked host memory), got pageable host memory");
}

}  // namespace kestrel::rt
