#!/usr/bin/env bash
# The tbench workload against Debian's tbench/tbench_srv (dbench 4.0), the same loadfile
# (/usr/share/dbench/client.txt), client count and duration, alternating ours and theirs in each
# round (which one goes first alternates too). Prints per round and as medians over rounds the
# ratios ours/theirs of ops/s, bytes of file data per operation and context switches per operation.
# Target: each ratio within 0.9..1.1 — the same work at the same speed.
#
#   bench/tbench_vs_dbench.sh [ROUNDS [SECONDS [CLIENTS...]]]
#     ROUNDS   rounds per client count (default 3)
#     SECONDS  tbench -t (default 5); tbench warms up for SECONDS/5 (integer) first and so do we
#     CLIENTS  client counts (default: 1 4)
#   SCHEDLAB=path/to/schedlab (default build/schedlab)
#
# How each figure is taken:
#   theirs  `tbench -t S --per-client-results N 127.0.0.1` against `tbench_srv`, twice per round:
#           plain, for ops/s = the Throughput line x 10^6 / (bytes per op) and bytes per op = sum of
#           the per-client "bytes" / the operation table's counts (both counted after the warm-up);
#           then each under `perf stat -e context-switches` (counted over the process and the
#           children it forks) for switches per op = (client + server switches) / the per-client
#           "lines" (whole lives). Counting switches with perf costs the switches themselves: at 4
#           clients here tbench's throughput under perf stat was 13% lower (median of 3: 344 against
#           388 MB/s), so throughput never comes from the counted run.
#   ours    `schedlab run --workload tbench` with the same loadfile, clients, duration and warm-up:
#           ops_s, bytes_per_op and context_switches_per_op (wait4 rusage of the client and
#           server processes / operations over their whole lives), of the repetition after the
#           runner's warm-up one.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
rounds=${1:-3} seconds=${2:-5}
shift $(($# > 2 ? 2 : $#))
clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(1 4)
loadfile=/usr/share/dbench/client.txt
for tool in tbench tbench_srv perf; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (Debian packages dbench, linux-perf)" >&2; exit 2; }
done
[ -r "$loadfile" ] || { echo "$loadfile is missing (Debian package dbench)" >&2; exit 2; }
work=$(mktemp -d)
server_perf=""
cleanup() {
  # Only what this script started, by its pid.
  if [ -n "$server_perf" ]; then
    pkill -TERM -P "$server_perf" 2>/dev/null || true
    kill -TERM "$server_perf" 2>/dev/null || true
    wait "$server_perf" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

warmup=$((seconds / 5))

# One tbench run against a fresh tbench_srv: MODE plain, or perf (both under perf stat, writing
# DIR/cli.csv and DIR/srv.csv); tbench's output to DIR/out-MODE.txt.
tbench_once() {  # N DIR MODE
  local n=$1 dir=$2 mode=$3 srv_prefix=() cli_prefix=()
  if [ "$mode" = perf ]; then
    srv_prefix=(perf stat -e context-switches -x, -o "$dir/srv.csv")
    cli_prefix=(perf stat -e context-switches -x, -o "$dir/cli.csv")
  fi
  "${srv_prefix[@]}" tbench_srv >/dev/null 2>&1 &
  server_perf=$!
  # tbench_srv listens on 0.0.0.0:7003 and has no option to say so: wait until it does.
  for _ in $(seq 50); do
    # /proc/net/tcp: local address 00000000:1B5B (port 7003), state 0A (LISTEN).
    grep -q ':1B5B 00000000:0000 0A' /proc/net/tcp && break
    sleep 0.1
  done
  "${cli_prefix[@]}" tbench -t "$seconds" -c "$loadfile" --per-client-results "$n" 127.0.0.1 \
    >"$dir/out-$mode.txt" 2>&1
  if [ "$mode" = perf ]; then
    pkill -TERM -P "$server_perf"  # tbench_srv, perf's child; perf then writes its count and exits
  else
    kill -TERM "$server_perf"      # tbench_srv itself
  fi
  wait "$server_perf" || true
  server_perf=""
  # The next server binds port 7003 again: wait until nothing listens there.
  for _ in $(seq 50); do
    grep -q ':1B5B 00000000:0000 0A' /proc/net/tcp || break
    sleep 0.1
  done
}

theirs() {  # N OUTDIR -> prints "ops_s bytes_per_op switches_per_op"
  local n=$1 dir=$2
  mkdir -p "$dir"
  tbench_once "$n" "$dir" plain
  tbench_once "$n" "$dir" perf
  python3 - "$dir" <<'PY'
import re, sys
d = sys.argv[1]
counted = open(f"{d}/out-perf.txt").read()
lines = sum(int(x) for x in re.findall(r"Client \d+ did (\d+) lines", counted))
out = open(f"{d}/out-plain.txt").read()
throughput = float(re.search(r"Throughput ([0-9.e+]+) MB/sec", out).group(1))
client_bytes = sum(float(x) for x in re.findall(r"Client \d+ did \d+ lines and (\d+) bytes", out))
# The first operation table is the sum over clients.
table = out.split("Operation")[1].split("\n\n")[0]
ops = sum(int(m.group(1)) for m in re.finditer(r"^\s*\w+\s+(\d+)\s+[0-9.]+\s+[0-9.]+$", table, re.M))
def switches(f):
    for line in open(f):
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("context-switches"):
            return float(fields[0])
    raise SystemExit(f"no context-switches in {f}")
cs = switches(f"{d}/cli.csv") + switches(f"{d}/srv.csv")
bytes_per_op = client_bytes / ops
print(throughput * 1e6 / bytes_per_op, bytes_per_op, cs / lines, throughput)
PY
}

ours() {  # N OUTDIR -> prints "ops_s bytes_per_op switches_per_op"
  local n=$1 dir=$2
  "$schedlab" run --workload tbench --repetitions 1 --settle-timeout 5 --no-counters \
    --param "tbench.clients=$n" --param "tbench.duration_s=$seconds" --param "tbench.warmup_s=$warmup" \
    --param "tbench.loadfile=$loadfile" --out "$dir" >/dev/null 2>"$dir.log" || { cat "$dir.log" >&2; exit 1; }
  python3 - "$dir"/*.json <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))["instances"][0]["repetitions"][0]
if rep["status"] != "ok":
    raise SystemExit("ours failed: " + rep.get("reason", ""))
m = {k: v["value"] for k, v in rep["metrics"].items()}
print(m["ops_s"], m["bytes_per_op"], m["context_switches_per_op"], m["throughput_mb_s"])
PY
}

echo "# theirs: tbench -t $seconds -c $loadfile --per-client-results N 127.0.0.1 vs tbench_srv (dbench $(dpkg-query -W -f='${Version}' dbench 2>/dev/null || echo '?')); ops/s and B/op plain, cs/op from a second run under perf stat -e context-switches"
echo "# ours:   $schedlab run --workload tbench --param tbench.clients=N --param tbench.duration_s=$seconds --param tbench.warmup_s=$warmup --param tbench.loadfile=$loadfile"
for n in "${clients[@]}"; do
  : >"$work/ratios-$n.txt"
  for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then
      o=$(ours "$n" "$work/ours-$n-$r"); t=$(theirs "$n" "$work/theirs-$n-$r")
    else
      t=$(theirs "$n" "$work/theirs-$n-$r"); o=$(ours "$n" "$work/ours-$n-$r")
    fi
    python3 - "$n" "$r" "$o" "$t" <<'PY' | tee -a "$work/ratios-$n.txt"
import sys
n, r = sys.argv[1], sys.argv[2]
o = [float(x) for x in sys.argv[3].split()]
t = [float(x) for x in sys.argv[4].split()]
print(f"clients {n} round {r}: ours {o[0]:8.0f} ops/s {o[1]:6.0f} B/op {o[2]:5.2f} cs/op {o[3]:6.1f} MB/s | "
      f"theirs {t[0]:8.0f} ops/s {t[1]:6.0f} B/op {t[2]:5.2f} cs/op {t[3]:6.1f} MB/s | "
      f"ratios {o[0]/t[0]:.3f} {o[1]/t[1]:.3f} {o[2]/t[2]:.3f}")
PY
  done
  python3 - "$n" "$work/ratios-$n.txt" <<'PY'
import statistics, sys
n = sys.argv[1]
rows = [l.split("ratios")[1].split() for l in open(sys.argv[2]) if "ratios" in l]
med = [statistics.median(float(r[i]) for r in rows) for i in range(3)]
print(f"clients {n}: median ratios ours/theirs over {len(rows)} rounds: ops/s {med[0]:.3f}  "
      f"bytes/op {med[1]:.3f}  context switches/op {med[2]:.3f}")
PY
done
