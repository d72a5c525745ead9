#include "bench/sol.h"

#include <algorithm>

namespace kestrel::bench {

double sol_us(const Work& w, const Ceilings& c) {
  double mem_us = 0, mma_us = 0;
  if (c.copy_tbps.value > 0) mem_us = w.bytes / (c.copy_tbps.value * 1e12) * 1e6;
  const double rate = w.path == MmaPath::kBf16  ? c.bf16_tflops.value
                      : w.path == MmaPath::kFp8 ? c.fp8_tflops.value
                                                : 0.0;
  if (rate > 0) mma_us = w.flops / (rate * 1e12) * 1e6;
  return std::max(mem_us, mma_us);
}

double sol_fraction(double sol, double measured_us) {
  return sol > 0 && measured_us > 0 ? sol / measured_us : 0.0;
}

}  // namespace kestrel::bench
