// An NVFP4 tensor of the reference (HostNvfp4) copied to the device, with an
// optional gap after each row so that strided views get tested.
#pragma once
#include "device_buffer.h"
#include "kestrel/nvfp4.h"
#include "reference/reference.h"

namespace kestrel::testing {

struct DeviceNvfp4 {
  DeviceBuffer values, scales;
  Nvfp4View view;

  // row_gap_bytes: extra bytes between rows of values (the view's row stride
  // becomes K/2 + row_gap_bytes).
  explicit DeviceNvfp4(const ref::HostNvfp4& h, int64_t row_gap_bytes = 0);
};

// The same tensor in the other scale layout (reference conversion).
ref::HostNvfp4 with_layout(const ref::HostNvfp4& h, ScaleLayout layout);

}  // namespace kestrel::testing
