// Compiling kernels ahead of their first launch, in parallel: `kestrel tune`
// would otherwise compile each configuration's kernel when it first runs it,
// one at a time (~2 s each with NVRTC, a minute or more for a row-wise
// configuration space), while the machine's other cores sit idle.
#pragma once
#include <string>
#include <vector>

#include "runtime/kernel_spec.h"

namespace kestrel::bench {

struct PrecompileResult {
  int compiled = 0;  // fresh NVRTC compiles (the rest came from the disk cache)
  int cached = 0;
  int failed = 0;   // left for the launch to report with its context
  int workers = 0;  // the processes (or, without a disk cache, threads) it ran on
  double seconds = 0.0;
};

// Compiles each distinct spec for `arch` into the disk cache on `threads`
// workers (0: every core, at most 32), so that the launches load them from
// there. The workers are forked processes where the disk cache is on (NVRTC
// serializes much of a compile within a process), threads where it is off.
PrecompileResult precompile(const std::vector<rt::KernelSpec>& specs, const std::string& arch,
                            int threads);

}  // namespace kestrel::bench
