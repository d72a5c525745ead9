// The kernel headers under kernels/, embedded at build time
// (cmake/embed_kernels.cmake) so NVRTC can compile them without a source tree.
#pragma once
#include <string>
#include <vector>

namespace kestrel::rt {

struct EmbeddedSource {
  const char* path;  // relative to kernels/, e.g. "common/ptx.cuh"
  std::string text;
};

const std::vector<EmbeddedSource>& embedded_sources();

}  // namespace kestrel::rt
