#include "runtime/launcher.h"

#include <map>
#include <mutex>
#include <utility>

#include "runtime/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/device.h"

namespace kestrel::rt {
namespace {

struct Loaded {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  std::map<int, size_t> smem_set;  // device -> dynamic smem limit already raised to
};

std::mutex g_mu;
// Keyed by (arch, spec): cudaLibrary handles are context independent.
std::map<std::string, Loaded>& loaded() {
  static auto* m = new std::map<std::string, Loaded>();  // outlives static destructors
  return *m;
}

std::string key_of(const KernelSpec& spec, const std::string& arch) {
  std::string k = arch + "|" + spec.header + "|" + spec.entry;
  for (const auto& o : spec.options) k += "|" + o;
  return k;
}

}  // namespace

Status Kernel::get(const KernelSpec& spec, Kernel* out) {
  const DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(current_device(&dev));
  const std::string key = key_of(spec, dev->arch());
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = loaded().find(key);
    if (it != loaded().end()) {
      out->handle_ = it->second.kernel;
      return Status::Ok();
    }
  }
  CompiledKernel compiled;
  KESTREL_RETURN_IF_ERROR(compile_kernel(spec, dev->arch(), &compiled));
  Loaded l;
  KESTREL_CUDA_RETURN(cudaLibraryLoadData(&l.library, compiled.cubin.data(), nullptr, nullptr, 0,
                                          nullptr, nullptr, 0));
  KESTREL_CUDA_RETURN(cudaLibraryGetKernel(&l.kernel, l.library, compiled.lowered_name.c_str()));
  std::lock_guard<std::mutex> lock(g_mu);
  auto [it, inserted] = loaded().emplace(key, std::move(l));
  if (!inserted) cudaLibraryUnload(l.library);  // another thread won the race
  out->handle_ = it->second.kernel;
  return Status::Ok();
}

Status Kernel::launch(const LaunchShape& shape, cudaStream_t stream, void** args) const {
  if (!handle_) return Status::Internal("launch of a kernel that was never loaded");
  const void* fn = reinterpret_cast<const void*>(handle_);
  if (shape.smem_bytes > 48 * 1024) {
    int dev = 0;
    KESTREL_CUDA_RETURN(cudaGetDevice(&dev));
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& [k, l] : loaded()) {
      if (l.kernel != handle_) continue;
      size_t& set = l.smem_set[dev];
      if (set < shape.smem_bytes) {
        KESTREL_CUDA_RETURN(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 int(shape.smem_bytes)));
        set = shape.smem_bytes;
      }
      break;
    }
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = shape.grid;
  cfg.blockDim = shape.block;
  cfg.dynamicSmemBytes = shape.smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[1];
  if (shape.cluster.x * shape.cluster.y * shape.cluster.z > 1) {
    attrs[0].id = cudaLaunchAttributeClusterDimension;
    attrs[0].val.clusterDim.x = shape.cluster.x;
    attrs[0].val.clusterDim.y = shape.cluster.y;
    attrs[0].val.clusterDim.z = shape.cluster.z;
    cfg.attrs = attrs;
    cfg.numAttrs = 1;
  }
  KESTREL_CUDA_RETURN(cudaLaunchKernelExC(&cfg, fn, args));
  return Status::Ok();
}

}  // namespace kestrel::rt
