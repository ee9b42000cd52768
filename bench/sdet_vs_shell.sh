#!/usr/bin/env bash
# The sdet workload next to the same work done by plain shells: U `sh` loops, started as background
# jobs and waited for, each running user K's scripts in user K's order (exported by the workload
# itself through sdet.export_dir: the same script texts, data files and seeded orders) through
# /bin/sh in its own directory, with the same environment. Both sides count scripts per hour over
# the same U x SCRIPTS scripts. Rounds alternate which side goes first; per U it prints each side's
# figure per round, the medians and the ratio schedlab / shell (the harness should cost nothing:
# ~1). Each side runs its work twice back to back and times the second: schedlab's warm-up
# repetition and its timed one, the shells likewise (the file churn of a run just before is part of
# the conditions, so both sides get the same). The shells read the very data files schedlab's
# scripts read (its cache, named in the bundle). Run it under the exclusive lock:
#   flock /work/heavy.lock bench/sdet_vs_shell.sh
#
#   bench/sdet_vs_shell.sh [ROUNDS [USERS [SCRIPTS]]]   (defaults 9 "1 2 4 8" 24)
#   SCHEDLAB=path/to/schedlab (default build/schedlab)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
rounds=${1:-9} users_list=${2:-"1 2 4 8"} scripts=${3:-24}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
max_users=0
for u in $users_list; do ((u > max_users)) && max_users=$u; done

sdet() {  # U -> scripts per hour of schedlab's timed repetition
  local dir="$work/sdet-$1-$RANDOM" extra=()
  [[ ${2:-} ]] && extra=(--param "sdet.export_dir=$2")
  "$schedlab" run --workload sdet --repetitions 1 --settle-timeout 0 --param "sdet.users=$1" \
    --param "sdet.scripts=$scripts" --param sdet.seed=1 "${extra[@]}" --out "$dir" >/dev/null 2>"$dir.log" ||
    { cat "$dir.log" >&2; exit 1; }
  python3 - "$dir"/*.json "${3:-scripts_per_hour}" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))["instances"][0]["repetitions"][0]
if rep["status"] != "ok":
    raise SystemExit("sdet failed: " + rep.get("reason", ""))
print(rep["details"]["data"]["path"] if sys.argv[2] == "data" else rep["metrics"]["scripts_per_hour"]["value"])
PY
}

# The inputs, once: user K's order depends on the seed and K only, so the largest U's export serves all.
data=$(sdet "$max_users" "$work/inputs" data)
inputs=$work/inputs

shell_round() {  # U -> scripts per hour of U shell loops
  local run="$work/shell-$1" pids=() k start end
  rm -rf "$run"
  for ((k = 0; k < $1; k++)); do mkdir -p "$run/users/$k"; done
  start=$(date +%s%N)
  for ((k = 0; k < $1; k++)); do
    (cd "$run/users/$k" && exec env -i PATH=/usr/bin:/bin LC_ALL=C HOME="$PWD" TMPDIR="$PWD" \
      SDET_DATA="$data" SDET_USER="$k" /bin/sh -c \
      'while read -r s; do /bin/sh "$1/$s" </dev/null >/dev/null 2>"$2" || { cat "$2" >&2; exit 1; }; done <"$3"' \
      sh "$inputs/scripts" "$run/$k.err" "$inputs/orders/user-$k") &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "shell user failed" >&2; exit 1; }; done
  end=$(date +%s%N)
  rm -rf "$run"
  python3 -c "print($1 * $scripts / (($end - $start) / 1e9) * 3600)"
}
shells() { shell_round "$1" >/dev/null && shell_round "$1"; }  # a discarded round, then the timed one

echo "# $scripts scripts per user, users: $users_list; $rounds rounds"
echo "# schedlab: $schedlab run --workload sdet --repetitions 1 --settle-timeout 0 --param sdet.users=U --param sdet.scripts=$scripts --param sdet.seed=1"
echo "# shell:    U background 'sh' loops, each: while read s; do /bin/sh SCRIPTS/\$s; done < orders/user-K   (/bin/sh -> $(readlink -f /bin/sh))"
for ((r = 1; r <= rounds; r++)); do
  for u in $users_list; do
    if ((r % 2)); then
      a=$(sdet "$u"); b=$(shells "$u")
    else
      b=$(shells "$u"); a=$(sdet "$u")
    fi
    echo "$u $a $b" >>"$work/all.txt"
    printf 'round %d U=%-2d schedlab %9.0f  shell %9.0f  scripts/h\n' "$r" "$u" "$a" "$b"
  done
done
python3 - "$work/all.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    u, a, b = line.split()
    rows.setdefault(int(u), []).append((float(a), float(b)))
print(f"{'U':>3} {'schedlab median':>16} {'shell median':>13} {'ratio':>6} {'paired':>7}   "
      "(scripts/h; ratio = schedlab / shell of the medians; paired = median of the rounds' ratios)")
for u in sorted(rows):
    a = statistics.median(x for x, _ in rows[u])
    b = statistics.median(y for _, y in rows[u])
    paired = statistics.median(x / y for x, y in rows[u])
    print(f"{u:>3} {a:>16.0f} {b:>13.0f} {a / b:>6.3f} {paired:>7.3f}")
PY
