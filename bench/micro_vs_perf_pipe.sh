#!/usr/bin/env bash
# The micro workload's pipe ping-pong against `perf bench sched pipe -T` (two threads, one int
# per direction, the same operation), placed alike, alternating ours and perf's in each round.
# Prints per-round medians in microseconds per round trip, the ratio ours/perf's per round, and
# the medians over rounds. Absolute numbers drift between batches here: read the ratios.
#
#   bench/micro_vs_perf_pipe.sh [ROUNDS [LOOPS [PLACEMENT]]]
#     ROUNDS     rounds (default 5); each runs ours 3 times (one schedlab run, 3 repetitions
#                after its warm-up) and perf 3 times
#     LOOPS      round trips per run, both tools (default 100000; perf's -l, our micro.iterations)
#     PLACEMENT  same-cpu (default: both threads on the first allowed CPU; perf under taskset -c
#                of that CPU) or unpinned (neither pinned)
#   SCHEDLAB=path/to/schedlab (default build/schedlab); COUNTERS=1 keeps the runner's counters on
#   (default off: perf bench counts nothing either).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
rounds=${1:-5} loops=${2:-100000} placement=${3:-same-cpu}
command -v perf >/dev/null || { echo "perf is missing (Debian package linux-perf)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$placement" in
  same-cpu)
    cpu=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
    perf_cmd=(taskset -c "$cpu" perf bench sched pipe -T -l "$loops")
    benchmark="pipe:same-cpu" ;;
  unpinned)
    perf_cmd=(perf bench sched pipe -T -l "$loops")
    benchmark="pipe" ;;
  *) echo "placement must be same-cpu or unpinned" >&2; exit 2 ;;
esac
counters=(--no-counters)
[ "${COUNTERS:-0}" = 1 ] && counters=()

echo "# ours: $schedlab run --workload micro --param micro.benchmarks=$benchmark --param micro.iterations=$loops --repetitions 3 ${counters[*]}"
echo "# perf: ${perf_cmd[*]}   ($(perf version))"
for ((r = 1; r <= rounds; r++)); do
  out="$work/ours-$r"
  "$schedlab" run --workload micro --param "micro.benchmarks=$benchmark" --param "micro.iterations=$loops" \
    --repetitions 3 --settle-timeout 5 "${counters[@]}" --out "$out" >/dev/null 2>"$work/schedlab-$r.log" ||
    { cat "$work/schedlab-$r.log" >&2; exit 1; }
  grep -h "not quiet" "$work/schedlab-$r.log" >&2 || true
  python3 - "$out"/*.json >>"$work/ours.txt" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
for rep in b["instances"][0]["repetitions"]:
    if rep["status"] == "ok":
        print(rep["metrics"]["ns_per_op"]["value"] / 1000.0)
PY
  for _ in 1 2 3; do
    "${perf_cmd[@]}" | awk '/usecs\/op/ {print $1}' >>"$work/perf.txt"
  done
  python3 - "$work" "$r" <<'PY'
import statistics, sys
work, r = sys.argv[1], int(sys.argv[2])
ours = [float(x) for x in open(f"{work}/ours.txt")][-3:]
perf = [float(x) for x in open(f"{work}/perf.txt")][-3:]
o, p = statistics.median(ours), statistics.median(perf)
print(f"round {r}: ours {o:8.3f} us/op  perf {p:8.3f} us/op  ratio {o / p:.3f}")
with open(f"{work}/ratios.txt", "a") as f:
    f.write(f"{o} {p} {o / p}\n")
PY
done
python3 - "$work/ratios.txt" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
o = statistics.median(r[0] for r in rows)
p = statistics.median(r[1] for r in rows)
ratios = sorted(r[2] for r in rows)
print(f"median over {len(rows)} rounds: ours {o:.3f} us/op, perf {p:.3f} us/op; "
      f"ratio ours/perf median {statistics.median(ratios):.3f} (min {ratios[0]:.3f}, max {ratios[-1]:.3f}); "
      f"target within 10%")
PY
