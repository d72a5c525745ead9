#include "gpu_test.h"

#include "runtime/device.h"

namespace kestrel::testing {

bool cuda_device_present() {
  static const bool present = rt::cuda_device_available();
  return present;
}

}  // namespace kestrel::testing
