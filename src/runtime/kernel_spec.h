// What to compile: one kernel instantiation of one embedded header.
#pragma once
#include <string>
#include <vector>

namespace kestrel::rt {

struct KernelSpec {
  std::string header;  // path under kernels/, e.g. "nvfp4_quantize.cuh"
  std::string entry;   // name expression, e.g. "kestrel::quantize_kernel<__nv_bfloat16, 64>"
  std::vector<std::string> options;  // extra NVRTC options (-D...)

  std::string describe() const { return header + ":" + entry; }
};

}  // namespace kestrel::rt
