#!/usr/bin/env bash
# Builds Kestrel and runs every test. Without a GPU the GPU tests report
# "skipped: no CUDA device"; the CPU tests (references, golden vectors, NVRTC
# compilation of every kernel) always run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "${JOBS:-2}"
# Say it plainly when the GPU tests cannot run here (CTest lists them as Skipped).
if "$BUILD"/kestrel_gpu_tests --gtest_filter='GemvGpuGolden.*' 2>&1 | grep -q "skipped: no CUDA device"; then
  echo "GPU tests: skipped: no CUDA device (they run on a GPU machine: scripts/gpu_check.sh)"
fi
ctest --test-dir "$BUILD" --output-on-failure -j "${JOBS:-2}" "$@"
