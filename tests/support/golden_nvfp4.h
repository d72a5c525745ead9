// Builds reference NVFP4 tensors from golden-case tensors.
#pragma once
#include <string>

#include "golden.h"
#include "reference/reference.h"

namespace kestrel::testing {

// values: [L][rows][K/2] or [rows][K/2] bytes; scales: linear [L][rows][K/16]
// (or [rows][K/16]) for kLinear, the flat blocked bytes for kBlocked.
ref::HostNvfp4 golden_nvfp4(const GoldenCase& c, const std::string& values,
                            const std::string& scales, ScaleLayout layout = ScaleLayout::kLinear,
                            float global_scale = 1.0f);

}  // namespace kestrel::testing
