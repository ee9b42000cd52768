#!/usr/bin/env bash
# The 2003 starvation experiment with the wakeup workload: waking threads at nice WAKER_NICE beside
# kernbench's generated tree rebuilt by make -j (2 x CPUs) at nice MAKE_NICE, for each pair given, and
# each repetition's latency p50 / p99 / max. Counters off: the tail is what is measured.
#   bench/wakeup_starvation.sh [SECONDS [REPETITIONS [WAKER_NICE:MAKE_NICE ...]]]
# Default: 30 s, 3 repetitions, 0:0 19:10 19:0. Run it alone on the machine (flock /work/heavy.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
repetitions=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
pairs=("$@")
[ ${#pairs[@]} -eq 0 ] && pairs=(0:0 19:10 19:0)
out=$(mktemp -d /tmp/wakeup-starvation.XXXXXX)
for pair in "${pairs[@]}"; do
  waker=${pair%%:*} make=${pair##*:}
  build/schedlab run --workload wakeup --param wakeup.nice="$waker" --param wakeup.load=kernbench \
    --param wakeup.load_nice="$make" --param wakeup.duration_s="$seconds" --repetitions "$repetitions" \
    --no-counters --timeout $((seconds + 60)) --out "$out/$waker-$make" >"$out/$waker-$make.log" 2>&1 ||
    { echo "run $pair failed: $out/$waker-$make.log" >&2; exit 1; }
done
python3 - "$out" "${pairs[@]}" <<'PY'
import glob, json, sys
out, pairs = sys.argv[1], sys.argv[2:]
print("waker nice  make nice  p50 us            p99 ms              max ms")
for pair in pairs:
    waker, make = pair.split(":")
    (path,) = glob.glob(f"{out}/{waker}-{make}/*.json")
    reps = json.load(open(path))["instances"][0]["repetitions"]
    value = lambda r, k: r["metrics"][k]["value"]
    cols = [", ".join(fmt(value(r, k)) for r in reps)
            for k, fmt in (("latency_p50_us", lambda v: f"{v:.0f}"),
                           ("latency_p99_us", lambda v: f"{v / 1000:.1f}"),
                           ("latency_max_us", lambda v: f"{v / 1000:.1f}"))]
    print(f"{waker:>10}  {make:>9}  {cols[0]:<16}  {cols[1]:<18}  {cols[2]}")
PY
echo "bundles: $out"
