#include "device_nvfp4.h"

#include <cstring>

namespace kestrel::testing {

DeviceNvfp4::DeviceNvfp4(const ref::HostNvfp4& h, int64_t row_gap_bytes) {
  const int64_t row_bytes = h.k / 2, stride = row_bytes + row_gap_bytes;
  std::vector<uint8_t> padded(size_t(h.batches * h.rows * stride), 0xAB);
  for (int64_t r = 0; r < h.batches * h.rows; ++r)
    std::memcpy(&padded[size_t(r * stride)], &h.values[size_t(r * row_bytes)], size_t(row_bytes));
  values = DeviceBuffer::from(padded);
  scales = DeviceBuffer::from(h.scales);
  view.values = TensorView::strided(values.get(), DType::kE2M1x2, {h.batches, h.rows, row_bytes},
                                    {h.rows * stride, stride, 1});
  view.scales = h.layout == ScaleLayout::kBlocked
                    ? TensorView::dense(scales.get(), DType::kE4M3, {int64_t(h.scales.size())})
                    : TensorView::dense(scales.get(), DType::kE4M3, {h.batches, h.rows, h.k / 16});
  view.layout = h.layout;
  view.global_scale = h.global_scale;
}

ref::HostNvfp4 with_layout(const ref::HostNvfp4& h, ScaleLayout layout) {
  if (h.layout == layout) return h;
  ref::HostNvfp4 out = h;
  out.scales = ref::convert_scales(h.scales, h.layout, layout, h.rows, h.k, h.batches);
  out.layout = layout;
  return out;
}

}  // namespace kestrel::testing
