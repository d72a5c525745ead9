#!/usr/bin/env bash
# Grid-searches the row-wise shapes below on this machine's GPU and puts each
# shape's fastest checked configuration into a tuning table (DESIGN.md §7):
#   scripts/tune_table.sh [FILE]   (default on an H100 SXM: tuning/h100.json)
# tuning/h100.json holds this script's picks on an H100 SXM; a table for
# another GPU is a new file under tuning/ (entries carry the GPU's name).
# Each configuration is checked against the float64 reference on 256 rows of
# the shape, then timed on the full shape against the heuristic's pick.
set -uo pipefail
cd "$(dirname "$0")/.."
KESTREL=${KESTREL:-build/kestrel}
[ -x "$KESTREL" ] || { echo "build $KESTREL first (scripts/test.sh or cmake)" >&2; exit 2; }
# The GPU the ops run on, as the table keys it.
GPU=$("$KESTREL" info 2>/dev/null | sed -n 's/^GPU: *\(.*\) (device [0-9]*)$/\1/p')
if [ $# -ge 1 ]; then
  TABLE=$1
elif [ "$GPU" = "NVIDIA H100 80GB HBM3" ]; then
  TABLE=tuning/h100.json
else
  echo "name the table file for this GPU ('${GPU:-none found}'), e.g. tuning/h200.json" >&2
  exit 2
fi
# Vocabulary sizes whose rows the heuristic leaves >= 3% short of the best
# checked configuration (BENCHMARKS.md, sessions 32-34).
SHAPES=(
  "cross_entropy_fwd --m 16384 --n 50257"
  "cross_entropy_fwd --m 8192 --n 100277"
  "cross_entropy_fwd --m 16384 --n 50256 --smoothing 0.1"
  "cross_entropy_fwd --m 16384 --n 50257 --smoothing 0.1"
  "cross_entropy_fwd --m 16384 --n 32001 --smoothing 0.1"
  "cross_entropy_fwd --m 16384 --n 32001"
)
rc=0
for s in "${SHAPES[@]}"; do
  # shellcheck disable=SC2086
  if ! "$KESTREL" tune $s --check-m 256 --runs 10 --top 3 --save "$TABLE"; then
    echo "tune $s: FAILED" >&2
    rc=1
  fi
done
exit $rc
