#include "golden_nvfp4.h"

#include <stdexcept>

namespace kestrel::testing {

ref::HostNvfp4 golden_nvfp4(const GoldenCase& c, const std::string& values,
                            const std::string& scales, ScaleLayout layout, float global_scale) {
  const std::vector<int64_t> vs = c.shape(values);
  if (vs.size() != 2 && vs.size() != 3)
    throw std::runtime_error("golden: " + c.name() + "." + values + " must be rank 2 or 3");
  ref::HostNvfp4 t;
  t.batches = vs.size() == 3 ? vs[0] : 1;
  t.rows = vs[vs.size() - 2];
  t.k = vs[vs.size() - 1] * 2;
  t.values = c.bytes(values);
  t.scales = c.bytes(scales);
  t.layout = layout;
  t.global_scale = global_scale;
  const int64_t want = layout == ScaleLayout::kLinear
                           ? t.batches * t.rows * (t.k / 16)
                           : blocked_scale_bytes(t.rows, t.k, t.batches);
  if (int64_t(t.scales.size()) != want)
    throw std::runtime_error("golden: " + c.name() + "." + scales + " has " +
                             std::to_string(t.scales.size()) + " bytes, expected " +
                             std::to_string(want));
  return t;
}

}  // namespace kestrel::testing
