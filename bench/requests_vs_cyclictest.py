#!/usr/bin/env python3
"""schedlab's requests workload at low load against rt-tests' cyclictest, alternating in one run:
is a worker's wakeup latency in the same league as cyclictest's timer wakeup latency?

  requests     1 message thread, 1 worker, fixed rate R/s (default 100), no work, no think sleep:
               the worker sleeps on a futex between requests and the message thread wakes it once per
               request; wakeup latency = the message thread's clock just before FUTEX_WAKE to the
               worker's clock once it runs.
  cyclictest   one SCHED_OTHER thread, interval 1e6/R us: it sleeps to an absolute deadline with
               clock_nanosleep; latency = its clock once it runs minus the deadline. Run twice:
               slack1    timer slack 1 ns, so that its lateness is the timer interrupt and the wakeup,
                         not the slack. Set in this script's process around the fork: cyclictest's
                         sched_setscheduler(SCHED_OTHER) resets its slack to the default it inherited
                         at fork, so a prctl between fork and exec would be undone;
               default   the kernel's 50 us slack for a normal task (what a plain cyclictest run shows).

  ptsematest   rt-tests' futex peer (SCHED_OTHER, same interval): a sender thread unlocks a POSIX mutex
               its receiver blocks on, i.e. a futex wake by another thread as ours. It reports only
               min/avg/max, so it is compared by min and mean (ours from the histogram, bucket middles).

The wakeup paths differ (a futex wake issued by another thread, maybe on the other CPU, against a
timer expiry): the point is the same league at low load, not equality. Neither holds
/dev/cpu_dma_latency (cyclictest --laptop; the workload holds none, as schbench) and neither
mlockalls. schbench itself is not packaged here, so its figures cannot be measured beside ours.
Prints per-round and median p50/p99/max and the ratios of the medians.

cyclictest 2.x pitfalls (see bench/wakeup_vs_cyclictest.py): -h without a policy runs FIFO, so
--policy=other is explicit; '# Total' in the histogram file excludes overflows.

Usage: bench/requests_vs_cyclictest.py [--rounds N] [--duration S] [--rate R]
"""
import argparse
import ctypes
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

from wakeup_vs_cyclictest import HIST_BUCKETS, percentile

PR_SET_TIMERSLACK = 29


def set_own_slack(ns):
    """ns = 0 restores the default."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_TIMERSLACK)")


def cyclictest(a, slack_ns):
    interval = round(1e6 / a.rate)
    with tempfile.NamedTemporaryFile(suffix=".hist") as hist:
        cmd = ["cyclictest", "-q", "--laptop", "--policy=other", "-t", "1", "-i", str(interval),
               "-D", str(a.duration), "-h", str(HIST_BUCKETS), f"--histfile={hist.name}"]
        if slack_ns:
            set_own_slack(slack_ns)
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        finally:
            if slack_ns:
                set_own_slack(0)
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {err.decode()}")
        counts, overflow, maxes = {}, 0, []
        for line in open(hist.name):
            if line.startswith("# Histogram Overflows:"):
                overflow = sum(int(x) for x in line.split(":")[1].split())
            elif line.startswith("# Max Latencies:"):
                maxes = [int(x) for x in line.split(":")[1].split()]
            elif line[:1].isdigit():
                fields = [int(x) for x in line.split()]
                if sum(fields[1:]):
                    counts[fields[0]] = counts.get(fields[0], 0) + sum(fields[1:])
        if overflow:
            counts[HIST_BUCKETS] = counts.get(HIST_BUCKETS, 0) + overflow
        return {"p50": percentile(counts, 0.5), "p99": percentile(counts, 0.99), "max": float(max(maxes)),
                "n": sum(counts.values())}


def ptsematest(a):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["ptsematest", "-q", "-i", str(round(1e6 / a.rate)), "-D", str(a.duration), f"--json={out.name}"]
        subprocess.run(cmd, check=True, capture_output=True)
        rx = json.load(open(out.name))["thread"]["0"]["receiver"]
        return {"min": float(rx["min"]), "mean": float(rx["avg"]), "max": float(rx["max"])}


def histogram_min_mean(hist):
    """From a bundle's histogram: `buckets` [[lower, upper, count]...] or its file form `bucket_runs`
    [[lower, width, count, count, ...]...] (core/bundle_encoding.hpp)."""
    buckets = hist.get("buckets") or [[run[0] + k * run[1], run[0] + (k + 1) * run[1], c]
                                      for run in hist["bucket_runs"] for k, c in enumerate(run[2:])]
    buckets = [b for b in buckets if b[2]]
    n = sum(b[2] for b in buckets)
    return float(buckets[0][0]), sum((b[0] + b[1]) / 2 * b[2] for b in buckets) / n


def requests(a):
    params = {"message_threads": 1, "workers": 1, "rate": a.rate, "duration_s": a.duration, "operations": 0,
              "sleep_us": 0, "timer_slack_ns": 1}
    with tempfile.TemporaryDirectory() as out:
        cmd = [a.schedlab, "run", "--workload", "requests", "--repetitions", "1", "--settle-timeout", "0",
               "--no-counters", "--out", out]
        for k, v in params.items():
            cmd += ["--param", f"requests.{k}={v}"]
        subprocess.run(cmd, check=True, capture_output=True)
        (path,) = glob.glob(os.path.join(out, "*.json"))
        rep = json.load(open(path))["instances"][0]["repetitions"][0]
        m, hist = rep["metrics"], rep["details"]["histogram"]
        lo, mean = histogram_min_mean(hist)
        return {"p50": m["wakeup_p50_us"]["value"], "p99": m["wakeup_p99_us"]["value"],
                "max": hist["max_us"], "n": m["wakeups"]["value"], "min": lo, "mean": mean}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--schedlab", default=os.path.join(os.path.dirname(__file__), "..", "build", "schedlab"))
    a = ap.parse_args()
    tools = {"requests": lambda: requests(a), "cyclictest-slack1": lambda: cyclictest(a, 1),
             "cyclictest-default": lambda: cyclictest(a, 0), "ptsematest": lambda: ptsematest(a)}
    results = {t: [] for t in tools}
    for r in range(a.rounds):
        # Alternate which goes first, so that a drift of the machine does not favour one.
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        for t in order:
            results[t].append(tools[t]())
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"1 waking thread at {a.rate}/s (interval {round(1e6 / a.rate)} us), SCHED_OTHER, {a.duration} s, "
          f"{a.rounds} rounds (medians over rounds; per-round p50/p99 in brackets)")
    print(f"{'tool':<19} {'p50 us':>7} {'p99 us':>7} {'max us':>8}  wakeups")
    med = {}
    for t in [t for t in tools if t != "ptsematest"]:
        rs = results[t]
        med[t] = {k: statistics.median(x[k] for x in rs) for k in ("p50", "p99", "max", "n")}
        rounds = ", ".join("%.0f/%.0f" % (x["p50"], x["p99"]) for x in rs)
        print(f"{t:<19} {med[t]['p50']:>7.0f} {med[t]['p99']:>7.0f} {med[t]['max']:>8.0f}  {med[t]['n']:.0f}"
              f"   [{rounds}]")
    for peer in ("cyclictest-slack1", "cyclictest-default"):
        ratios = ", ".join(f"{k} {med['requests'][k] / med[peer][k]:.2f}" if med[peer][k] else f"{k} n/a"
                           for k in ("p50", "p99"))
        print(f"  requests / {peer}: {ratios}")
    print(f"futex peer, min/mean/max us (means are pulled by outliers; per-round mean in brackets)")
    for t in ("requests", "ptsematest"):
        m = {k: statistics.median(x[k] for x in results[t]) for k in ("min", "mean", "max")}
        med[t] = m
        print(f"{t:<19} min {m['min']:>5.0f}  mean {m['mean']:>7.1f}  max {m['max']:>8.0f}"
              f"   [{', '.join('%.1f' % x['mean'] for x in results[t])}]")
    print(f"  requests / ptsematest: min {med['requests']['min'] / max(med['ptsematest']['min'], 1):.2f}, "
          f"mean {med['requests']['mean'] / med['ptsematest']['mean']:.2f}")


if __name__ == "__main__":
    main()
