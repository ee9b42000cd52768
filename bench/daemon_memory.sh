#!/usr/bin/env bash
# The daemon's resident memory through a campaign of 100 timed repetitions (2 trials x 5 yield
# instances x 10 repetitions, exporter on, store in a temp dir): VmRSS sampled every 0.2 s and the
# peak VmHWM, of the daemon process itself (each step's `schedlab run` is a separate process).
# Target: under 50 MiB.
#
#   bench/daemon_memory.sh          SCHEDLAB=path/to/schedlab (default build/schedlab)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
schedlab=${SCHEDLAB:-$here/build/schedlab}
dir=$(mktemp -d /tmp/schedlab-daemon-memory.XXXXXX)
trap 'rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/campaign.toml" <<TOML
[campaign]
name = "memory"
schedule = "once"
store = "sqlite://$dir/store.db"
output = "$dir/bundles"
configurations = ["running"]
trials = 2
seed = 1
counters = false
settle_timeout_s = 0
[exporter]
listen = "127.0.0.1:$port"
[[workload]]
name = "yield"
repetitions = 10
params = { yields = [10000, 20000, 30000, 40000, 50000] }
TOML
"$schedlab" daemon --config "$dir/campaign.toml" 2> "$dir/daemon.log" &
pid=$!
peak_rss=0 peak_hwm=0 samples=0
while kill -0 "$pid" 2>/dev/null; do
  if status=$(cat "/proc/$pid/status" 2>/dev/null); then
    rss=$(awk '/^VmRSS:/ {print $2}' <<< "$status")
    hwm=$(awk '/^VmHWM:/ {print $2}' <<< "$status")
    [ -n "$rss" ] && [ "$rss" -gt "$peak_rss" ] && peak_rss=$rss
    [ -n "$hwm" ] && [ "$hwm" -gt "$peak_hwm" ] && peak_hwm=$hwm
    samples=$((samples + 1))
  fi
  sleep 0.2
done
wait "$pid" || { echo "daemon failed:"; tail -20 "$dir/daemon.log"; exit 1; }
reps=$(python3 -c "import sqlite3; print(sqlite3.connect('$dir/store.db').execute('select count(*) from repetitions').fetchone()[0])")
echo "repetitions recorded: $reps; samples: $samples"
echo "daemon VmRSS peak: $((peak_rss / 1024)).$(( (peak_rss % 1024) * 10 / 1024 )) MiB; VmHWM: $((peak_hwm / 1024)).$(( (peak_hwm % 1024) * 10 / 1024 )) MiB (target < 50 MiB)"
[ "$peak_hwm" -lt $((50 * 1024)) ]
