// Argument checks shared by the CPU references. A reference that read out of
// bounds on a malformed input would make a wrong oracle, so they throw
// std::invalid_argument with the rule that was broken instead.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "reference/reference.h"

namespace kestrel::ref::detail {

inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("kestrel::ref: " + what);
}

inline int64_t scale_bytes(int64_t batches, int64_t rows, int64_t k, ScaleLayout layout) {
  return layout == ScaleLayout::kLinear ? batches * rows * (k / 16)
                                        : blocked_scale_bytes(rows, k, batches);
}

inline void check_nvfp4(const HostNvfp4& t, const char* name) {
  const std::string n(name);
  require(t.batches >= 1 && t.rows >= 0 && t.k >= 0, n + ": negative or zero-batch shape");
  require(t.k % 16 == 0, n + ": K must be a multiple of 16, got " + std::to_string(t.k));
  require(int64_t(t.values.size()) == t.batches * t.rows * (t.k / 2),
          n + ": values must hold L*rows*K/2 bytes");
  require(int64_t(t.scales.size()) == scale_bytes(t.batches, t.rows, t.k, t.layout),
          n + ": scales have the wrong byte count for their layout");
}

}  // namespace kestrel::ref::detail
