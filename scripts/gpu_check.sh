#!/usr/bin/env bash
# One call on a fresh H100/H200 machine: build, run every GPU test (also under
# compute-sanitizer memcheck and racecheck on small shapes), calibrate, run the
# seed benchmark suite, and print a compact table last. --torch also times the
# suites' row-wise cases in torch eager and torch.compile (scripts/torch_peers.py,
# with Kestrel through its C ABI interleaved with torch.compile) and joins them
# with Kestrel's (scripts/peer_table.py).
#   scripts/gpu_check.sh [--no-tests] [--no-sanitizer] [--no-bench] [--torch] [--suite "NAME ..."]
# Logs and results go to $OUT (default build/gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-out}
mkdir -p "$OUT"
SUITE="seeds nvfp4 codec8k fp8" SANITIZE=1 BENCH=1 TESTS=1 TORCH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-sanitizer) SANITIZE=0 ;;
    --no-bench) BENCH=0 ;;
    --no-tests) TESTS=0 ;;
    --torch) TORCH=1 ;;
    --suite) SUITE=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export KESTREL_CACHE_DIR=${KESTREL_CACHE_DIR:-$PWD/build/kernel-cache}
summary=()
failed_steps=()  # the exit status: non-zero if any step failed
note() { summary+=("$1"); echo "== $1"; }
check() { [ "$1" = 0 ] || failed_steps+=("$2"); }  # rc step

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
bash scripts/setup.sh >"$OUT/setup.log" 2>&1 || {
  note "setup: FAILED (see setup.log)"; tail -5 "$OUT/setup.log"; check 1 setup
}
t0=$SECONDS
if cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
   cmake --build build -j "$(nproc)" >>"$OUT/build.log" 2>&1; then
  note "build: ok ($((SECONDS - t0)) s)"
else
  note "build: FAILED (see build.log)"; tail -30 "$OUT/build.log"; check 1 build
fi

if [ "$TESTS" = 1 ] && [ -x build/kestrel_gpu_tests ]; then
  # A test process compiles its kernels one at a time at first launch:
  # the catalog first, into the shared disk cache, on every core.
  t0=$SECONDS
  build/kestrel compile --all >"$OUT/compile.log" 2>&1
  rc=$?
  note "kernels compiled ahead: rc=$rc $(grep -oE '[0-9]+ compiled' "$OUT/compile.log") ($((SECONDS - t0)) s)"
  check $rc "kernel compile"
  t0=$SECONDS
  # The float64 references and the kernels the catalog leaves out are
  # CPU-bound: shards in parallel (one per two cores, at most 8) share the
  # GPU. Line-buffered: a run killed by a time limit still leaves its log.
  shards=$(($(nproc) / 2)); [ $shards -gt 8 ] && shards=8; [ $shards -lt 1 ] && shards=1
  rc=0
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i stdbuf -oL build/kestrel_gpu_tests --gtest_brief=1 \
      >"$OUT/gpu_tests.$i.log" 2>&1 &
  done
  for job in $(jobs -p); do wait "$job" || rc=$?; done
  cat "$OUT"/gpu_tests.?.log >"$OUT/gpu_tests.log"
  passed=$(grep -hE '^\[  PASSED  \]' "$OUT/gpu_tests.log" | awk '{s += $4} END {print s + 0}')
  failed=$(grep -hE '^\[  FAILED  \] [0-9]+ tests?,' "$OUT/gpu_tests.log" | awk '{s += $4} END {print s + 0}')
  note "gpu tests ($shards shards): $passed passed, $failed failed, rc=$rc ($((SECONDS - t0)) s)"
  [ $rc = 0 ] || grep -E "Failure|FAILED|error" "$OUT/gpu_tests.log" | head -40
  check $rc "gpu tests"
  build/kestrel_cpu_tests --gtest_brief=1 >"$OUT/cpu_tests.log" 2>&1
  rc=$?
  note "cpu tests on the GPU machine: rc=$rc $(grep -E '^\[  PASSED' "$OUT/cpu_tests.log")"
  check $rc "cpu tests"
fi

if [ "$SANITIZE" = 1 ] && [ -x build/kestrel_gpu_tests ]; then
  # Small shapes only: the sanitizers slow kernels down 10-100x.
  # Edge shapes only (gtest filters know * and ?: case1? is case10..case19).
  small='*Args*:*Golden*:Shapes/Nvfp4CodecGpu.*/?:Shapes/GemvGpu.*/case1?:Shapes/GemmGpu.*/case1?:Shapes/DualGemmGpu.*/case1?:Shapes/GroupedGemmGpu.*:Shapes/Fp8GemmGpu.*/case?:Fp8GemmGpuEdges.InPlaceResidual:RowwiseSmall*:*StreamPeer*'
  for tool in memcheck racecheck; do
    t0=$SECONDS
    compute-sanitizer --tool "$tool" --error-exitcode 9 build/kestrel_gpu_tests \
      --gtest_filter="$small" --gtest_brief=1 >"$OUT/sanitizer_$tool.log" 2>&1
    rc=$?
    note "compute-sanitizer $tool: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1) ($((SECONDS - t0)) s)"
    check $rc "compute-sanitizer $tool"
  done
fi

if [ "$BENCH" = 1 ] && [ -x build/kestrel ]; then
  build/kestrel info | tee "$OUT/info.txt"
  build/kestrel calibrate | tee "$OUT/calibrate.txt"
  t0=$SECONDS
  for suite in $SUITE; do
    build/kestrel bench --suite "$suite" --json "$OUT/bench_$suite.json" \
      --markdown "$OUT/bench_$suite.md" >"$OUT/bench_$suite.log" 2>&1
    rc=$?
    note "bench $suite: rc=$rc ($((SECONDS - t0)) s)"
    check $rc "bench $suite"
  done
fi

if [ "$BENCH" = 1 ] && [ "$TORCH" = 1 ]; then
  for suite in $SUITE; do
    path=$suite; [ -f "$path" ] || path=bench/suites/$suite.json
    grep -qE '"(rmsnorm|softmax|cross_entropy)_(fwd|bwd)"' "$path" || continue
    t0=$SECONDS
    python3 scripts/torch_peers.py --suite "$path" --kestrel build/libkestrel_c.so \
      --json "$OUT/torch_$suite.json" --markdown "$OUT/torch_$suite.md" >"$OUT/torch_$suite.log" 2>&1
    rc=$?
    note "torch peers $suite: rc=$rc ($((SECONDS - t0)) s)"
    check $rc "torch peers $suite"
    [ $rc = 0 ] && [ -f "$OUT/bench_$suite.json" ] &&
      python3 scripts/peer_table.py --suite "$path" --kestrel "$OUT/bench_$suite.json" \
        --torch "$OUT/torch_$suite.json" >"$OUT/vs_torch_$suite.md"
  done
fi

echo
echo "================ summary ================"
printf '%s\n' "${summary[@]}"
[ -f "$OUT/calibrate.txt" ] && cat "$OUT/calibrate.txt"
for suite in $SUITE; do [ -f "$OUT/bench_$suite.md" ] && grep -E '^\|' "$OUT/bench_$suite.md"; done
for suite in $SUITE; do [ -f "$OUT/vs_torch_$suite.md" ] && cat "$OUT/vs_torch_$suite.md"; done
if [ ${#failed_steps[@]} -gt 0 ]; then
  echo "FAILED: ${failed_steps[*]}"
  exit 1
fi
exit 0
