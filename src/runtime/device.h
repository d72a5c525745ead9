// Facts about the current CUDA device, read once per device.
#pragma once
#include <string>

#include "kestrel/status.h"

namespace kestrel::rt {

struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int l2_bytes = 0;
  int max_smem_per_block_optin = 0;
  double mem_clock_khz = 0, mem_bus_bits = 0;
  std::string arch() const;  // NVRTC target: "sm_90a" on Hopper, else "sm_XY"
  bool is_hopper() const { return cc_major == 9 && cc_minor == 0; }
};

// Info of the device current on the calling thread.
Status current_device(const DeviceInfo** out);
bool cuda_device_available();

// `p` (non-null) is memory a kernel on `dev` can read: its device memory,
// managed memory, or page-locked host memory. A pageable host pointer would
// fault inside the kernel and end the context; this names it first.
Status check_device_readable(const void* p, const DeviceInfo& dev, const char* name);

}  // namespace kestrel::rt
