#!/usr/bin/env bash
# The groups workload next to rt-tests' hackbench with the same groups, fds, loops, message size and
# mode: hackbench [-T] [-p] -g G -f F -l L -s S against
# schedlab run --workload groups --param groups.groups=G ... (tasks=process|thread, transport=socket|pipe).
# Both times are each program's own: hackbench's printed Time (start signal to every task reaped or
# joined, millisecond resolution) and the workload's elapsed_s (the same window). In each round, for
# each mode, the two run back to back in an order that alternates round by round; prints every
# round, the medians and the ratio schedlab/hackbench of the median times (acceptance: 0.9-1.1).
#
#   bench/groups_vs_hackbench.sh [ROUNDS [GROUPS [FDS [LOOPS [BYTES]]]]]   (defaults 5 10 20 100 100)
#   MODES="process/socket process/pipe thread/socket thread/pipe" (default: all four)
#   SCHEDLAB=path/to/schedlab (default build/schedlab)
# Run it under the exclusive lock: flock /work/heavy.lock bench/groups_vs_hackbench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
rounds=${1:-5} groups=${2:-10} fds=${3:-20} loops=${4:-100} bytes=${5:-100}
modes=${MODES:-process/socket process/pipe thread/socket thread/pipe}
command -v hackbench >/dev/null || { echo "hackbench is missing (Debian package rt-tests)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ours() {  # TASKS TRANSPORT -> seconds
  local dir="$work/ours-$1-$2-$RANDOM"
  "$schedlab" run --workload groups --repetitions 1 --settle-timeout 0 --no-counters \
    --param "groups.groups=$groups" --param "groups.fds=$fds" --param "groups.loops=$loops" \
    --param "groups.message_bytes=$bytes" --param "groups.tasks=$1" --param "groups.transport=$2" \
    --out "$dir" >/dev/null 2>"$dir.log" || { cat "$dir.log" >&2; exit 1; }
  python3 - "$dir"/*.json <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))["instances"][0]["repetitions"][0]
if rep["status"] != "ok":
    raise SystemExit("groups failed: " + rep.get("reason", ""))
print(rep["metrics"]["elapsed_s"]["value"])
PY
}

theirs() {  # TASKS TRANSPORT -> seconds
  local flags=()
  [[ $1 == thread ]] && flags+=(-T) || flags+=(-P)
  [[ $2 == pipe ]] && flags+=(-p)
  hackbench "${flags[@]}" -g "$groups" -f "$fds" -l "$loops" -s "$bytes" | awk '/^Time:/ {print $2}'
}

echo "# $((groups * fds * fds * loops)) messages, $((2 * groups * fds)) tasks per run; $rounds rounds"
echo "# schedlab:  $schedlab run --workload groups --repetitions 1 --settle-timeout 0 --no-counters --param groups.groups=$groups --param groups.fds=$fds --param groups.loops=$loops --param groups.message_bytes=$bytes --param groups.tasks=T --param groups.transport=X"
echo "# hackbench: hackbench [-T|-P] [-p] -g $groups -f $fds -l $loops -s $bytes   ($(hackbench --help 2>&1 | head -1))"
for ((r = 1; r <= rounds; r++)); do
  for mode in $modes; do
    tasks=${mode%/*} transport=${mode#*/}
    if ((r % 2)); then
      a=$(ours "$tasks" "$transport"); b=$(theirs "$tasks" "$transport")
    else
      b=$(theirs "$tasks" "$transport"); a=$(ours "$tasks" "$transport")
    fi
    echo "$mode $a $b" >>"$work/all.txt"
    printf 'round %d %-15s schedlab %.3f s  hackbench %.3f s\n' "$r" "$mode" "$a" "$b"
  done
done
python3 - "$work/all.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, a, b = line.split()
    rows.setdefault(mode, ([], []))
    rows[mode][0].append(float(a))
    rows[mode][1].append(float(b))
for mode, (a, b) in rows.items():
    ma, mb = statistics.median(a), statistics.median(b)
    verdict = "ok" if 0.9 <= ma / mb <= 1.1 else "OUTSIDE 0.9-1.1"
    print(f"median {mode:15s} schedlab {ma:.3f} s  hackbench {mb:.3f} s  ratio {ma / mb:.3f}  {verdict}")
PY
