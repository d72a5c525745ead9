#!/usr/bin/env bash
# Installs what a fresh machine needs to build Kestrel (Debian/Ubuntu).
# The CUDA toolkit itself (/usr/local/cuda, 12.8+) must already be there.
set -euo pipefail
need=()
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
# GoogleTest as libraries, or as the sources CMakeLists.txt builds.
{ [ -f /usr/include/gtest/gtest.h ] &&
  { ls /usr/lib/*/libgtest* >/dev/null 2>&1 || [ -f /usr/src/googletest/CMakeLists.txt ]; }; } ||
  need+=(libgtest-dev)
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
[ -x /usr/local/cuda/bin/nvcc ] || [ -f /usr/local/cuda/include/nvrtc.h ] || {
  echo "setup: the CUDA toolkit is missing from /usr/local/cuda" >&2; exit 1; }
