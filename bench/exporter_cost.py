#!/usr/bin/python3
"""The exporter's cost on a measurement: the yield workload's ns_per_yield under `schedlab daemon`
scraped every 15 s by a real Prometheus server, against the same campaign unscraped, in one run.

One Prometheus server (Debian's, data in a temp dir) scrapes 127.0.0.1:PORT every 15 s for the whole
run. A scraped block runs a "once" campaign whose exporter listens on PORT; an unscraped block runs the
same campaign with the exporter on PORT+1, which nothing scrapes — so Prometheus runs in both, and only
the scrapes differ. Blocks alternate in pairs, which one goes first alternating per pair. Per block the
median ns_per_yield of its repetitions; the result is median(scraped) / median(unscraped) over blocks,
and the median of the per-pair ratios. Target: <= 1.01. Then the daemon's CPU time per scrape, which
bounds the cost directly: the pairs' ratio is limited by the drift between blocks on a shared machine.

    bench/exporter_cost.py [PAIRS [REPETITIONS]]      (default 4 pairs, 15 repetitions per block)
    SCHEDLAB=path/to/schedlab (default build/schedlab)
"""
import gzip
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEDLAB = os.environ.get("SCHEDLAB", os.path.join(HERE, "build", "schedlab"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def campaign(dir_, name, port, repetitions):
    path = os.path.join(dir_, name + ".toml")
    with open(path, "w") as f:
        f.write(f"""[campaign]
name = "{name}"
schedule = "once"
store = "sqlite://{dir_}/{name}.db"
output = "{dir_}/bundles"
configurations = ["running"]
seed = 1
counters = false
settle_timeout_s = 0
[exporter]
listen = "127.0.0.1:{port}"
[[workload]]
name = "yield"
repetitions = {repetitions}
params = {{ yields = 1000000 }}
""")
    return path


def block(dir_, name, port, repetitions):
    path = campaign(dir_, name, port, repetitions)
    with open(os.path.join(dir_, name + ".log"), "w") as log:
        subprocess.run([SCHEDLAB, "daemon", "--config", path], stderr=log, check=True)
    db = sqlite3.connect(os.path.join(dir_, name + ".db"))
    values = [v for (v,) in db.execute(
        "SELECT m.value FROM metrics m JOIN repetitions r ON m.repetition_id = r.id "
        "WHERE m.name = 'ns_per_yield' AND r.status = 'ok'")]
    return statistics.median(values), len(values)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def cpu_per_scrape(dir_, name, port, scrapes=400):
    """The daemon's own CPU time per /metrics scrape: the campaign `name` (finished) served again by an
    idle daemon (schedule far in the future, so it runs nothing and republishes its latest results),
    scraped `scrapes` times as Prometheus scrapes (gzip). Divided by the 15 s interval, it bounds what
    scraping can take from the workload: the cost the ratio above cannot resolve."""
    path = os.path.join(dir_, name + ".toml")
    with open(path) as f:
        text = f.read().replace('schedule = "once"', 'schedule = "2099-01-01 00:00:00"')
    idle = os.path.join(dir_, name + "-idle.toml")
    with open(idle, "w") as f:
        f.write(text)
    with open(os.path.join(dir_, name + "-idle.log"), "w") as log:
        daemon = subprocess.Popen([SCHEDLAB, "daemon", "--config", idle], stderr=log)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
        for _ in range(100):
            try:
                answer = urllib.request.urlopen(request, timeout=1)
                body = answer.read()
                if answer.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if b"schedlab_yield" in body or b'workload="yield"' in body:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        before, start = cpu_seconds(daemon.pid), time.monotonic()
        size = 0
        for _ in range(scrapes):
            size = len(urllib.request.urlopen(request, timeout=5).read())
        cpu = cpu_seconds(daemon.pid) - before
        return cpu / scrapes, (time.monotonic() - start) / scrapes, size
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    repetitions = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    with tempfile.TemporaryDirectory(prefix="schedlab-exporter-cost.") as dir_:
        port, prom_port = free_port(), free_port()
        with open(os.path.join(dir_, "prometheus.yml"), "w") as f:
            f.write(f"""global:
  scrape_interval: 15s
scrape_configs:
  - job_name: schedlab
    static_configs:
      - targets: ["127.0.0.1:{port}"]
""")
        prom = subprocess.Popen(
            ["prometheus", "--config.file", os.path.join(dir_, "prometheus.yml"),
             "--storage.tsdb.path", os.path.join(dir_, "tsdb"), f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{prom_port}/-/ready", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            scraped, unscraped, ratios = [], [], []
            for p in range(pairs):
                order = ["scraped", "unscraped"] if p % 2 == 0 else ["unscraped", "scraped"]
                got = {}
                for kind in order:
                    got[kind] = block(dir_, f"{kind}{p}", port if kind == "scraped" else port + 1, repetitions)
                scraped.append(got["scraped"][0])
                unscraped.append(got["unscraped"][0])
                ratios.append(got["scraped"][0] / got["unscraped"][0])
                print(f"pair {p} ({order[0]} first): scraped {got['scraped'][0]:.1f} ns "
                      f"(n={got['scraped'][1]}), unscraped {got['unscraped'][0]:.1f} ns "
                      f"(n={got['unscraped'][1]}), ratio {ratios[-1]:.4f}", flush=True)
            # Successful scrapes of the daemon over the run (up = 1 only while a scraped block ran).
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{prom_port}/api/v1/query?query=sum_over_time(up%5B1h%5D)") as r:
                result = json.load(r)["data"]["result"]
                scrapes = result[0]["value"][1] if result else "0"
            per_scrape, wall, size = cpu_per_scrape(dir_, f"scraped{pairs - 1}", port)
        finally:
            prom.terminate()
            prom.wait(timeout=10)
        print(f"successful scrapes of the daemon recorded by Prometheus: {scrapes}")
        print(f"daemon CPU per scrape (gzip, {size} B): {per_scrape * 1e3:.3f} ms ({wall * 1e3:.2f} ms wall); "
              f"scraped every 15 s that is {per_scrape / 15 * 100:.4f}% of one CPU, the most it can take "
              f"from the workload (ratio bound {1 + per_scrape / 15:.5f})")
        print(f"median ns_per_yield scraped {statistics.median(scraped):.1f}, unscraped "
              f"{statistics.median(unscraped):.1f}; ratio of medians "
              f"{statistics.median(scraped) / statistics.median(unscraped):.4f}; median of pair ratios "
              f"{statistics.median(ratios):.4f} (target <= 1.01)")


if __name__ == "__main__":
    main()
