// GPU tests skip visibly on a machine without a CUDA device.
#pragma once
#include <gtest/gtest.h>

namespace kestrel::testing {
bool cuda_device_present();
}  // namespace kestrel::testing

#define KESTREL_REQUIRE_GPU()                                                  \
  do {                                                                         \
    if (!::kestrel::testing::cuda_device_present()) GTEST_SKIP() << "skipped: no CUDA device"; \
  } while (0)
