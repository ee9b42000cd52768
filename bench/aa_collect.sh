#!/usr/bin/env bash
# Collects the real A/A data behind bench/aa_calibration.py: B batches, minutes apart, each one
# invocation of `schedlab run` with T trials (one bundle each) of the yield and wakeup workloads on the
# running kernel. Nothing differs between trials but time, so every diff among them is an A/A diff.
#   bench/aa_collect.sh OUT_DIR [BATCHES=6] [TRIALS=8] [GAP_S=120] [REPETITIONS=30]
set -euo pipefail
out=${1:?usage: aa_collect.sh OUT_DIR [BATCHES] [TRIALS] [GAP_S] [REPETITIONS]}
batches=${2:-6} trials=${3:-8} gap=${4:-120} reps=${5:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
mkdir -p "$out"
for ((b = 0; b < batches; b++)); do
  [ "$b" -gt 0 ] && sleep "$gap"
  echo "aa_collect: batch $b of $batches at $(date -u +%T)" >&2
  "$schedlab" run --workload yield,wakeup --repetitions "$reps" --trials "$trials" --seed "$((b + 1))" \
    --param yield.yields=200000 --param wakeup.duration_s=0.5 --param wakeup.period_us=2000 \
    --settle-timeout 2 --label "aa-batch$b" --out "$out/batch$b" >/dev/null
done
echo "aa_collect: done at $(date -u +%T)" >&2
