#include "runtime/launcher.h"

#include <map>
#include <mutex>
#include <tuple>
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
  std::map<int, bool> non_portable_set;  // device -> clusters over 8 CTAs allowed
  // (device, threads, cluster size, dynamic smem) -> max_active_clusters
  std::map<std::tuple<int, unsigned, unsigned, size_t>, int> occupancy;
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

// attrs: room for three attributes (cluster shape, programmatic serialization,
// cooperative).
cudaLaunchConfig_t launch_config(const LaunchShape& shape, cudaStream_t stream,
                                 cudaLaunchAttribute* attrs) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = shape.grid;
  cfg.blockDim = shape.block;
  cfg.dynamicSmemBytes = shape.smem_bytes;
  cfg.stream = stream;
  cfg.attrs = attrs;
  if (shape.cluster.x * shape.cluster.y * shape.cluster.z > 1) {
    cudaLaunchAttribute& a = attrs[cfg.numAttrs++];
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = shape.cluster.x;
    a.val.clusterDim.y = shape.cluster.y;
    a.val.clusterDim.z = shape.cluster.z;
  }
  if (shape.overlap_previous) {
    cudaLaunchAttribute& a = attrs[cfg.numAttrs++];
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = 1;
  }
  if (shape.cooperative) {
    cudaLaunchAttribute& a = attrs[cfg.numAttrs++];
    a.id = cudaLaunchAttributeCooperative;
    a.val.cooperative = 1;
  }
  return cfg;
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

Status Kernel::prepare(const LaunchShape& shape) const {
  if (!handle_) return Status::Internal("launch of a kernel that was never loaded");
  // Static shared memory counts against the 48 KiB default limit too, so any
  // dynamic size raises the limit.
  const bool dyn_smem = shape.smem_bytes > 0;
  const bool big_cluster = shape.cluster.x * shape.cluster.y * shape.cluster.z > 8;
  if (!dyn_smem && !big_cluster) return Status::Ok();
  const void* fn = reinterpret_cast<const void*>(handle_);
  int dev = 0;
  KESTREL_CUDA_RETURN(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [k, l] : loaded()) {
    if (l.kernel != handle_) continue;
    size_t& set = l.smem_set[dev];
    if (dyn_smem && set < shape.smem_bytes) {
      KESTREL_CUDA_RETURN(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               int(shape.smem_bytes)));
      set = shape.smem_bytes;
    }
    bool& allowed = l.non_portable_set[dev];
    if (big_cluster && !allowed) {
      KESTREL_CUDA_RETURN(
          cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      allowed = true;
    }
    break;
  }
  return Status::Ok();
}

Status Kernel::max_active_clusters(const LaunchShape& shape, int* out) const {
  KESTREL_RETURN_IF_ERROR(prepare(shape));
  // Queried per call by persistent launches: remember the answer.
  int dev = 0;
  KESTREL_CUDA_RETURN(cudaGetDevice(&dev));
  const auto key = std::make_tuple(dev, shape.block.x * shape.block.y * shape.block.z,
                                   shape.cluster.x * shape.cluster.y * shape.cluster.z,
                                   shape.smem_bytes);
  Loaded* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& [k, l] : loaded())
      if (l.kernel == handle_) entry = &l;
    if (entry == nullptr) return Status::Internal("occupancy of a kernel that was never loaded");
    auto it = entry->occupancy.find(key);
    if (it != entry->occupancy.end()) {
      *out = it->second;
      return Status::Ok();
    }
  }
  KESTREL_RETURN_IF_ERROR(query_max_active_clusters(shape, out));
  std::lock_guard<std::mutex> lock(g_mu);
  entry->occupancy[key] = *out;
  return Status::Ok();
}

Status Kernel::query_max_active_clusters(const LaunchShape& shape, int* out) const {
  LaunchShape occupancy_shape = shape;
  occupancy_shape.overlap_previous = false;
  occupancy_shape.cooperative = false;
  cudaLaunchAttribute attrs[3];
  const cudaLaunchConfig_t cfg = launch_config(occupancy_shape, nullptr, attrs);
  if (cfg.numAttrs == 0) {  // no cluster: blocks per SM times SMs
    const DeviceInfo* dev = nullptr;
    KESTREL_RETURN_IF_ERROR(current_device(&dev));
    int blocks = 0;
    KESTREL_CUDA_RETURN(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, reinterpret_cast<const void*>(handle_),
        int(shape.block.x * shape.block.y * shape.block.z), shape.smem_bytes));
    *out = blocks * dev->sm_count;
    return Status::Ok();
  }
  KESTREL_CUDA_RETURN(
      cudaOccupancyMaxActiveClusters(out, reinterpret_cast<const void*>(handle_), &cfg));
  return Status::Ok();
}

Status Kernel::launch(const LaunchShape& shape, cudaStream_t stream, void** args) const {
  KESTREL_RETURN_IF_ERROR(prepare(shape));
  const void* fn = reinterpret_cast<const void*>(handle_);
  cudaLaunchAttribute attrs[3];
  const cudaLaunchConfig_t cfg = launch_config(shape, stream, attrs);
  KESTREL_CUDA_RETURN(cudaLaunchKernelExC(&cfg, fn, args));
  return Status::Ok();
}

}  // namespace kestrel::rt
