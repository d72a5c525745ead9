// NVFP4 operands for the GEMV/GEMM check and bench ops: views over device
// buffers, host data for checks (realistic or GPU MODE), timing data in every
// rotation slot, and a bf16 copy for the cuBLAS peers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench/device_memory.h"
#include "bench/op_registry.h"
#include "kestrel/nvfp4.h"
#include "random.h"
#include "reference/reference.h"

namespace kestrel::bench {

ScaleLayout layout_named(const std::string& name);  // "linear" | "blocked"
int64_t nvfp4_scale_bytes(int64_t rows, int64_t k, int64_t l, ScaleLayout layout);
Nvfp4View nvfp4_view(void* values, void* scales, int64_t rows, int64_t k, int64_t l,
                     ScaleLayout layout, float global_scale);

// Check data: "realistic" (quantized normal data, global scale != 1) or
// "gpumode" (the GPU MODE generator `kind`), in `layout`.
ref::HostNvfp4 check_operand(const std::string& data, testing::GpuModeData kind, int64_t l,
                             int64_t rows, int64_t k, uint64_t seed, ScaleLayout layout);

// A host NVFP4 tensor on the device (one copy).
struct DeviceOperand {
  DeviceBuffer values, scales;
  Status upload(const ref::HostNvfp4& h);
  Nvfp4View view(const ref::HostNvfp4& h) const;
};

// Timing data (all byte patterns, scales {0..3}) in `slots` copies.
struct SlottedOperand {
  SlottedBuffer values, scales;
  int64_t rows = 0, k = 0, l = 1;
  ScaleLayout layout = ScaleLayout::kLinear;
  Status fill(int64_t l, int64_t rows, int64_t k, ScaleLayout layout, int slots, uint64_t seed);
  Nvfp4View view(int slot) const;
  int64_t essential_bytes() const;  // values + linear-layout scales
};

// The operand dequantized to bf16 [l][rows][k] in `slots` copies (cuBLAS peers).
Status dequantized_bf16(const SlottedOperand& op, int slots, cudaStream_t stream,
                        SlottedBuffer* out);

// Parameters every NVFP4 product op takes after its shape: a_layout,
// b_layout, out, data (check generator, named in the help), seed.
std::vector<ParamSpec> nvfp4_product_params(const std::string& generator);
// A configuration override: integer, 0 = the heuristic's choice.
ParamSpec config_param(const char* name, const char* help);

}  // namespace kestrel::bench
