// Loads compiled kernels (cudaLibrary, no libcuda link) and launches them with
// cluster dimensions and dynamic shared memory.
#pragma once
#include <cuda_runtime_api.h>

#include "kestrel/status.h"
#include "runtime/kernel_spec.h"

namespace kestrel::rt {

struct LaunchShape {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  dim3 cluster{1, 1, 1};
  size_t smem_bytes = 0;
  // Programmatic dependent launch: the kernel may start while the stream's
  // previous kernel still runs (once that one's CTAs have all executed
  // griddepcontrol.launch_dependents or exited), and must execute
  // griddepcontrol.wait before it reads anything that kernel writes.
  bool overlap_previous = false;
  // All CTAs resident at once (or the launch fails): for grids whose CTAs
  // wait on each other.
  bool cooperative = false;
};

// A loaded kernel for the current device's architecture (compiled on first use,
// then cached in memory and on disk).
class Kernel {
 public:
  static Status get(const KernelSpec& spec, Kernel* out);
  Status launch(const LaunchShape& shape, cudaStream_t stream, void** args) const;
  template <typename... Args>
  Status operator()(const LaunchShape& shape, cudaStream_t stream, Args... args) const {
    void* ptrs[] = {static_cast<void*>(&args)..., nullptr};
    return launch(shape, stream, ptrs);
  }
  // Clusters of `shape` that fit on the GPU at once (0: the shape cannot run),
  // for sizing persistent grids.
  Status max_active_clusters(const LaunchShape& shape, int* out) const;
  cudaKernel_t handle() const { return handle_; }

 private:
  Status query_max_active_clusters(const LaunchShape& shape, int* out) const;
  // Raises the kernel's dynamic shared memory limit and allows clusters over
  // 8 CTAs where `shape` needs it (once per kernel and device).
  Status prepare(const LaunchShape& shape) const;

  cudaKernel_t handle_ = nullptr;
};

}  // namespace kestrel::rt
