// The GPU's ceilings that the speed-of-light model divides by: device copy
// bandwidth (read + write bytes per second), the cuBLAS bf16 GEMM rate and the
// cuBLASLt fp8 e4m3 GEMM rate, each the median of timed runs on this GPU.
// Measured once and cached as JSON in the kernel cache directory, keyed by GPU
// name; when a measurement is impossible the datasheet value stands in,
// flagged "datasheet", so a report never passes a guess off as a measurement.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "kestrel/status.h"

namespace kestrel::bench {

struct Ceiling {
  double value = 0;    // TB/s for copy, TFLOP/s for the GEMM rates; 0 = unknown
  std::string source;  // "measured", "datasheet", "device properties" or "unknown"
};

struct Ceilings {
  std::string gpu;
  Ceiling copy_tbps;
  Ceiling bf16_tflops;
  Ceiling fp8_tflops;
  std::string measured_at;  // UTC date and time of the measurement, if any
  std::string note;         // why a measurement was not taken
};

// Dense datasheet figures for the GPUs Kestrel targets (H100 SXM/PCIe/NVL,
// H200); every field "unknown" for other names.
Ceilings datasheet_ceilings(const std::string& gpu_name);

nlohmann::json ceilings_to_json(const Ceilings& c);
Status ceilings_from_json(const nlohmann::json& j, Ceilings* out);

// Measures the current GPU (copy 2 x 2 GiB, GEMMs 8192^3 on random data).
// A ceiling that cannot be measured keeps its datasheet value and says why in
// `note`; the Status fails only when no measurement at all is possible.
Status measure_ceilings(Ceilings* out);

// <kernel cache dir>/ceilings.json; empty when caching is off.
std::string ceilings_cache_path();

// The current GPU's ceilings: remeasured and cached when `remeasure`, else
// from the cache, else measured once and cached.
Status get_ceilings(bool remeasure, Ceilings* out);

}  // namespace kestrel::bench
