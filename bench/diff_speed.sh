#!/usr/bin/env bash
# How long `schedlab diff` takes on two real 30-repetition bundles of the whole suite (every workload's
# quick instances), against `schedlab show` of the same bundle as the peer (load + validate only).
#   bench/diff_speed.sh [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
work=${1:-$(mktemp -d)}
for side in a b; do
  [ -d "$work/$side" ] || "$schedlab" run --repetitions 30 --settle-timeout 1 --seed 1 --label "speed-$side" \
    --param yield.yields=50000 --param yield.duration_s=0.2 --param kernbench.files=10 --param wakeup.duration_s=0.2 --out "$work/$side" >/dev/null
done
a=$(ls "$work"/a/*.json | head -1) b=$(ls "$work"/b/*.json | head -1)
hyperfine --warmup 2 --runs 20 --export-json "$work/hyperfine.json" \
  "$schedlab show $a" "$schedlab diff $a $b" "$schedlab diff --json $a $b"
python3 - "$work/hyperfine.json" <<'PY'
import json, sys
r = {x["command"].split()[1] + (" --json" if "--json" in x["command"] else ""): x["median"] for x in json.load(open(sys.argv[1]))["results"]}
print(f"median diff {r['diff']*1000:.1f} ms, diff --json {r['diff --json']*1000:.1f} ms, show {r['show']*1000:.1f} ms; "
      f"diff/show {r['diff']/r['show']:.2f}; limit 1000 ms")
PY
