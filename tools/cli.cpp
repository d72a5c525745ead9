#include "cli.h"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "runtime/device.h"

namespace kestrel::cli {

int& device_ordinal() {
  static int ordinal = 0;
  return ordinal;
}

std::string& command_line() {
  static std::string line;
  return line;
}

bool require_gpu() {
  if (!rt::cuda_device_available()) {
    std::fprintf(stderr, "kestrel: no CUDA device\n");
    return false;
  }
  const cudaError_t err = cudaSetDevice(device_ordinal());
  if (err != cudaSuccess) {
    std::fprintf(stderr, "kestrel: cannot use CUDA device %d: %s\n", device_ordinal(),
                 cudaGetErrorString(err));
    return false;
  }
  return true;
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "kestrel: %s\n", message.c_str());
  return code;
}

int exit_code_of(const Status& s) {
  if (s.ok()) return kExitOk;
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
             ? kExitUsage
             : kExitFailure;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

void add_op_options(CLI::App* sub, const bench::OpInfo& op,
                    std::map<std::string, std::string>* values) {
  using bench::ParamKind;
  for (const auto& p : op.params) {
    std::string& slot = (*values)[p.name];
    slot = p.default_value;
    std::string type = "INT";
    if (p.kind == ParamKind::kFloat) type = "FLOAT";
    if (p.kind == ParamKind::kChoice) type = "{" + join(p.choices, ",") + "}";
    if (p.kind == ParamKind::kIntList) type = "INT,...";
    // Values are validated by resolve_params, the same path suites take.
    sub->add_option("--" + p.name, slot, p.help)->type_name(type)->capture_default_str();
  }
}

}  // namespace kestrel::cli
