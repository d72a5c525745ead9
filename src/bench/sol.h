// Speed-of-light model: the shortest time a call could take on this GPU,
//   sol = max(flops / mma_rate, bytes / copy_bandwidth),
// where bytes count every input read once and every output written once, and
// mma_rate is the tensor-core path the op can use here: bf16 for NVFP4 on
// Hopper (no FP4 MMA; e2m1 x e4m3 products are exact in bf16), fp8 for e4m3
// GEMMs, none for memory-bound ops.
#pragma once
#include "bench/ceilings.h"

namespace kestrel::bench {

enum class MmaPath { kNone, kBf16, kFp8 };

struct Work {
  double bytes = 0;
  double flops = 0;
  MmaPath path = MmaPath::kNone;
};

// Microseconds; a term whose ceiling is unknown (0) is left out.
double sol_us(const Work& w, const Ceilings& c);

// sol / measured, in (0, 1] for a plausible measurement; 0 when either is 0.
double sol_fraction(double sol, double measured_us);

}  // namespace kestrel::bench
