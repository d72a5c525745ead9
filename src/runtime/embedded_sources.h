// Files embedded at build time (cmake/embed_files.cmake): the kernel headers
// under kernels/, so NVRTC can compile them without a source tree, and the
// shipped tuning tables under tuning/.
#pragma once
#include <string>
#include <vector>

namespace kestrel::rt {

struct EmbeddedSource {
  const char* path;  // relative to its folder, e.g. "common/ptx.cuh", "h100.json"
  std::string text;
};

const std::vector<EmbeddedSource>& embedded_sources();
const std::vector<EmbeddedSource>& embedded_tuning_tables();

}  // namespace kestrel::rt
