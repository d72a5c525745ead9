// GoogleTest glue for golden-vector tests: skip visibly when the golden
// directory is missing, so a machine without it never reports a silent pass.
#pragma once
#include <gtest/gtest.h>

#include "golden.h"

#define KESTREL_REQUIRE_GOLDEN()                                                       \
  do {                                                                                 \
    if (!::kestrel::testing::golden_available())                                       \
      GTEST_SKIP() << "skipped: golden vectors not found (looked in "                  \
                   << ::kestrel::testing::golden_dir() << "; set KESTREL_GOLDEN_DIR)"; \
  } while (0)
