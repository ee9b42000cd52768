#!/usr/bin/env bash
# Collects the real A/A data behind bench/aa_calibration.py: B batches, minutes apart, each one
# invocation of `schedlab run` with T trials (one bundle each) of the workloads on the running kernel.
# Nothing differs between trials but time, so every diff among them is an A/A diff.
#   bench/aa_collect.sh OUT_DIR [BATCHES=5] [TRIALS=120] [GAP_S=120] [REPETITIONS=1] [WORKLOADS=yield,wakeup]
set -euo pipefail
out=${1:?usage: aa_collect.sh OUT_DIR [BATCHES] [TRIALS] [GAP_S] [REPETITIONS] [WORKLOADS]}
batches=${2:-5} trials=${3:-120} gap=${4:-120} reps=${5:-1} workloads=${6:-yield,wakeup}
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
# Short instances, so that many trials fit in minutes: 0.14 s of yields, 500 wakeups, a 20-unit build.
declare -A params=([yield]="yield.yields=200000" [wakeup]="wakeup.duration_s=0.5 wakeup.period_us=1000"
  [kernbench]="kernbench.files=20")
args=()
for w in ${workloads//,/ }; do
  for p in ${params[$w]:-}; do args+=(--param "$p"); done
done
mkdir -p "$out"
for ((b = 0; b < batches; b++)); do
  [ "$b" -gt 0 ] && sleep "$gap"
  echo "aa_collect: batch $b of $batches at $(date -u +%T)" >&2
  "$schedlab" run --workload "$workloads" --repetitions "$reps" --trials "$trials" --seed "$((b + 1))" \
    "${args[@]}" --settle-timeout 2 --label "aa-batch$b" --out "$out/batch$b" >/dev/null 2>"$out/batch$b.log"
done
echo "aa_collect: done at $(date -u +%T)" >&2
