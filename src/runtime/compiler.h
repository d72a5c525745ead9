// NVRTC compilation of embedded kernel headers into cubins, cached on disk.
#pragma once
#include <string>

#include "kestrel/status.h"
#include "runtime/kernel_spec.h"

namespace kestrel::rt {

struct CompiledKernel {
  std::string cubin;
  std::string lowered_name;  // mangled entry point inside the cubin
  bool from_cache = false;
  std::string log;  // NVRTC/ptxas messages of a fresh compile (warnings, resource use)
};

// arch: "sm_90a", "sm_89", ... Needs no GPU. Compile errors carry NVRTC's log.
Status compile_kernel(const KernelSpec& spec, const std::string& arch, CompiledKernel* out);

// $KESTREL_CACHE_DIR, else $XDG_CACHE_HOME/kestrel, else $HOME/.cache/kestrel.
// Empty (caching off) when KESTREL_CACHE_DIR is set to "off".
std::string kernel_cache_dir();

}  // namespace kestrel::rt
