#!/usr/bin/env bash
# How many scrapes of /metrics the exporter answers: wrk (2 threads, 50 connections, 10 s) against
# exporter_serve holding the daemon's health and a real bundle's headline series (yield x2 and wakeup
# with its latency histogram) under 3 configurations, the default bound. Prints the exposition size,
# requests/s, non-2xx/socket errors (must be 0) and the latency percentiles.
#   bench/exporter_scrape.sh [BUNDLE] [CONFIGURATIONS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
serve=${EXPORTER_SERVE:-$here/build/bench/exporter_serve}
bundle=${1:-$here/tests/fixtures/exporter/yield-wakeup.json}
configurations=${2:-3}
work=$(mktemp -d)
"$serve" "$bundle" 127.0.0.1:0 "$configurations" >"$work/port" 2>"$work/serve.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
[ -n "$port" ] || { cat "$work/serve.log" >&2; exit 1; }
url="http://127.0.0.1:$port/metrics"
curl -sS -o "$work/metrics.txt" "$url"
echo "exposition: $(wc -c <"$work/metrics.txt") bytes, $(grep -vc '^#' "$work/metrics.txt") samples," \
  "$(grep -c '^# TYPE' "$work/metrics.txt") families ($configurations configurations)"
curl -sS -H 'Accept-Encoding: gzip' -o "$work/metrics.gz" "$url"
echo "exposition gzip: $(wc -c <"$work/metrics.gz") bytes (when the scraper asks for it, as Prometheus does)"
scrapes() { curl -sS "$url" | awk '$1 == "exposer_scrapes_total" {print $2}'; }
before=$(scrapes)
wrk -t2 -c50 -d10s --latency "$url" | tee "$work/wrk.txt"
after=$(scrapes)
# civetweb (prometheus-cpp's server) closes the connection after each response without saying
# "Connection: close", so wrk, expecting keep-alive, counts one read error per answered request when it
# finds the socket closed. An unanswered request would show as a connect, write or timeout error, a
# non-2xx status, or a read error beyond one per request; the exposer's own scrape counter cross-checks.
python3 - "$work/wrk.txt" "$before" "$after" <<'PY'
import re, sys
text, before, after = open(sys.argv[1]).read(), float(sys.argv[2]), float(sys.argv[3])
requests = int(re.search(r"(\d+) requests in", text).group(1))
err = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
connect, read, write, timeout = map(int, err.groups()) if err else (0, 0, 0, 0)
served = after - before - 1  # the `scrapes` call that read `after` counts itself
non2xx = int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", text)) else 0
p99 = re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1)  # the distribution line, not a "93.99%" of the stdev column
rps = re.search(r"Requests/sec:\s+(\S+)", text).group(1)
print(f"requests {requests} ({rps}/s), p99 {p99}, exporter served {served:.0f} scrapes; "
      f"non-2xx {non2xx}, connect {connect}, write {write}, timeout {timeout}, read (server closes) {read}")
ok = non2xx == 0 and connect == 0 and write == 0 and timeout == 0 and read <= requests + 50 and served >= requests
print("every request answered" if ok else "exporter_scrape: some requests were not answered")
sys.exit(0 if ok else 1)
PY
