#include "ops/nvfp4_operand.h"

#include "ops/validate.h"

namespace kestrel::ops {

Nvfp4Operand nvfp4_operand(const Nvfp4View& v) {
  const Shape3 values = shape3(v.values);
  Nvfp4Operand o{};
  o.values = static_cast<const uint8_t*>(v.values.data);
  o.values_batch = values.batch_stride;
  o.values_row = values.row_stride;
  o.scales = static_cast<const uint8_t*>(v.scales.data);
  if (v.layout == ScaleLayout::kLinear) {
    const Shape3 scales = shape3(v.scales);
    o.scales_batch = scales.batch_stride;
    o.scales_row = scales.row_stride;
  }
  return o;
}

}  // namespace kestrel::ops
