#!/usr/bin/env bash
# The chat workload next to rt-tests' hackbench with the same tasks and the same deliveries:
# hackbench -g R -f U -l M -s S -T has R groups of U sender and U receiver threads, each sender
# writing M messages of S bytes to each receiver of its group (R*U*U*M deliveries, 2*R*U tasks);
# chat with R rooms of U users has U server threads and U client threads per room and delivers each
# of a user's M messages to the U members of its room (R*U*U*M deliveries, 2*R*U tasks). hackbench
# runs in both its socket modes: AF_UNIX socketpairs (default) and TCP on loopback (-i), as chat.
# In each round the four runs (chat mutex, chat yield-spin, hackbench unix, hackbench inet) take
# turns in a rotating order; prints each one's microseconds per delivery and the medians. No
# target ratio: a reader sees that the workload is in the league of the classic messaging bench.
#
#   bench/chat_vs_hackbench.sh [ROUNDS [ROOMS [USERS [MESSAGES [BYTES]]]]]   (defaults 3 10 20 100 100)
#   SCHEDLAB=path/to/schedlab (default build/schedlab)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
rounds=${1:-3} rooms=${2:-10} users=${3:-20} messages=${4:-100} bytes=${5:-100}
command -v hackbench >/dev/null || { echo "hackbench is missing (Debian package rt-tests)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
deliveries=$((rooms * users * users * messages))

chat() {  # LOCK -> microseconds per delivery
  local dir="$work/chat-$1-$RANDOM"
  "$schedlab" run --workload chat --repetitions 1 --settle-timeout 5 --no-counters \
    --param "chat.rooms=$rooms" --param "chat.users=$users" --param "chat.messages=$messages" \
    --param "chat.message_bytes=$bytes" --param "chat.lock=$1" --out "$dir" >/dev/null 2>"$dir.log" ||
    { cat "$dir.log" >&2; exit 1; }
  python3 - "$dir"/*.json <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))["instances"][0]["repetitions"][0]
if rep["status"] != "ok":
    raise SystemExit("chat failed: " + rep.get("reason", ""))
m = rep["metrics"]
print(m["elapsed_s"]["value"] / m["deliveries"]["value"] * 1e6)
PY
}

hack() {  # EXTRA-FLAGS -> microseconds per delivery
  local t
  t=$(hackbench -T "$@" -g "$rooms" -f "$users" -l "$messages" -s "$bytes" | awk '/^Time:/ {print $2}')
  python3 -c "print($t / $deliveries * 1e6)"
}

names=("chat mutex" "chat yield-spin" "hackbench -T (unix)" "hackbench -T -i (inet)")
run_one() {
  case $1 in
    0) chat mutex ;;
    1) chat yield-spin ;;
    2) hack ;;
    3) hack -i ;;
  esac
}
echo "# $deliveries deliveries, $((2 * rooms * users)) tasks per run"
echo "# chat:      $schedlab run --workload chat --param chat.rooms=$rooms --param chat.users=$users --param chat.messages=$messages --param chat.message_bytes=$bytes --param chat.lock=mutex|yield-spin"
echo "# hackbench: hackbench -T [-i] -g $rooms -f $users -l $messages -s $bytes   ($(hackbench --help 2>&1 | head -1))"
for ((r = 1; r <= rounds; r++)); do
  line="round $r:"
  for ((k = 0; k < 4; k++)); do
    i=$(((k + r - 1) % 4))
    v=$(run_one "$i")
    echo "$i $v" >>"$work/all.txt"
  done
  python3 - "$work/all.txt" "$r" "${names[@]}" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])][-4:]
names = sys.argv[3:]
vals = {int(i): float(v) for i, v in rows}
print(f"round {sys.argv[2]}: " + "  ".join(f"{names[i]} {vals[i]:.2f}" for i in range(4)) + "  us/delivery")
PY
done
python3 - "$work/all.txt" "${names[@]}" <<'PY'
import statistics, sys
names = sys.argv[2:]
vals = {}
for l in open(sys.argv[1]):
    i, v = l.split()
    vals.setdefault(int(i), []).append(float(v))
med = {i: statistics.median(v) for i, v in vals.items()}
print("median us/delivery: " + "  ".join(f"{names[i]} {med[i]:.2f}" for i in range(4)))
print(f"ratios: chat mutex / hackbench inet {med[0] / med[3]:.2f}, chat mutex / hackbench unix {med[0] / med[2]:.2f}, "
      f"chat yield-spin / chat mutex {med[1] / med[0]:.2f}")
PY
