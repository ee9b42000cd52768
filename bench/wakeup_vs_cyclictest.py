#!/usr/bin/env python3
"""schedlab's wakeup workload against rt-tests' cyclictest, with the same period, thread count,
duration, policy and load, alternating, in the two conditions where both do the same thing:

  fifo    SCHED_FIFO 80 (timer slack does not apply to real-time tasks)
  other   SCHED_OTHER with our timer_slack_ns at cyclictest's 50 us default

Both mlockall and hold /dev/cpu_dma_latency at 0; schedlab runs --no-counters unless --counters, which
keeps its default counters on (counted on the workload's CPUs: no work at a switch; issue #22 asks that
they leave p50 and p99 within the same band).
Prints p50/p99/max of each and the ratios.
Target: our p50 and p99 within 20% or 10 us (whichever is larger) of cyclictest's.

cyclictest 2.4 pitfalls handled: -n no longer exists (it prints usage and exits 0), -h without a
policy silently runs FIFO 3 (so --policy=other is explicit), -t 2 without -d 0 gives thread 1 a
longer interval, and '# Total' in the histogram file excludes overflows.

Usage: bench/wakeup_vs_cyclictest.py [--rounds N] [--duration S] [--period US] [--threads N] [--load hogs:N]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HIST_BUCKETS = 20000  # 1 us buckets up to 20 ms, so p99 never falls in the overflow


def percentile(counts, q):
    """Bucket floor of the q-quantile, as schedlab's histogram reads it (rank = ceil(q * n))."""
    n = sum(counts.values())
    rank = max(1, -(-int(q * n * 1000000) // 1000000))
    seen = 0
    for us in sorted(counts):
        seen += counts[us]
        if seen >= rank:
            return float(us)
    return float(max(counts))


def cyclictest(a, condition, load_procs):
    policy = ["-p", "80"] if condition == "fifo" else ["--policy=other"]
    with tempfile.NamedTemporaryFile(suffix=".hist") as hist:
        cmd = ["cyclictest", "-m", "-q", "-D", str(a.duration), "-i", str(a.period), "-t", str(a.threads), "-d", "0",
               "-h", str(HIST_BUCKETS), f"--histfile={hist.name}"] + policy
        subprocess.run(cmd, check=True, capture_output=True)
        counts, overflow, maxes = {}, 0, []
        for line in open(hist.name):
            if line.startswith("# Histogram Overflows:"):
                overflow = sum(int(x) for x in line.split(":")[1].split())
            elif line.startswith("# Max Latencies:"):
                maxes = [int(x) for x in line.split(":")[1].split()]
            elif line[:1].isdigit():
                fields = [int(x) for x in line.split()]
                total = sum(fields[1:])
                if total:
                    counts[fields[0]] = counts.get(fields[0], 0) + total
        if overflow:
            counts[HIST_BUCKETS] = counts.get(HIST_BUCKETS, 0) + overflow
        return {"p50": percentile(counts, 0.5), "p99": percentile(counts, 0.99), "max": float(max(maxes)),
                "n": sum(counts.values())}


def schedlab(a, condition):
    params = {"threads": a.threads, "period_us": a.period, "duration_s": a.duration,
              "policy": "fifo:80" if condition == "fifo" else "other",
              "timer_slack_ns": 50000, "load": a.load}
    with tempfile.TemporaryDirectory() as out:
        cmd = [a.schedlab, "run", "--workload", "wakeup", "--repetitions", "1", "--settle-timeout", "0", "--out", out]
        if not a.counters:
            cmd.append("--no-counters")  # cyclictest counts nothing: measure the same thing
        for k, v in params.items():
            cmd += ["--param", f"wakeup.{k}={v}"]
        subprocess.run(cmd, check=True, capture_output=True)
        (path,) = glob.glob(os.path.join(out, "*.json"))
        rep = json.load(open(path))["instances"][0]["repetitions"][0]
        m = rep["metrics"]
        return {"p50": m["latency_p50_us"]["value"], "p99": m["latency_p99_us"]["value"],
                "max": m["latency_max_us"]["value"], "n": m["wakeups"]["value"]}


def start_load(load):
    """cyclictest has no load of its own: the same hogs, as separate spinning processes."""
    if load == "none":
        return []
    n = int(load.split(":")[1])
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--period", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--load", default="none")
    ap.add_argument("--counters", action="store_true",
                    help="keep schedlab's default perf counters on (counted on the workload's CPUs)")
    ap.add_argument("--schedlab", default=os.path.join(os.path.dirname(__file__), "..", "build", "schedlab"))
    a = ap.parse_args()
    results = {(c, tool): [] for c in ("fifo", "other") for tool in ("cyclictest", "schedlab")}
    for r in range(a.rounds):
        for condition in ("fifo", "other"):
            hogs = start_load(a.load)
            try:
                results[(condition, "cyclictest")].append(cyclictest(a, condition, hogs))
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
            # schedlab runs its own hogs (threads in the repetition's cgroup) for the same load.
            results[(condition, "schedlab")].append(schedlab(a, condition))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"{a.threads} threads, period {a.period} us, {a.duration} s, load {a.load}, {a.rounds} rounds, "
          f"schedlab counters {'on' if a.counters else 'off'} "
          "(medians over rounds; per-round values in brackets)")
    print(f"{'condition':<8} {'tool':<11} {'p50 us':>8} {'p99 us':>8} {'max us':>9}  wakeups")
    for condition in ("fifo", "other"):
        for tool in ("cyclictest", "schedlab"):
            rs = results[(condition, tool)]
            med = {k: statistics.median(x[k] for x in rs) for k in ("p50", "p99", "max", "n")}
            rounds = ", ".join("%.0f/%.0f" % (x["p50"], x["p99"]) for x in rs)
            print(f"{condition:<8} {tool:<11} {med['p50']:>8.0f} {med['p99']:>8.0f} {med['max']:>9.0f}  {med['n']:.0f}"
                  f"   [{rounds}]")
        ours = {k: statistics.median(x[k] for x in results[(condition, "schedlab")]) for k in ("p50", "p99")}
        peer = {k: statistics.median(x[k] for x in results[(condition, "cyclictest")]) for k in ("p50", "p99")}
        for k in ("p50", "p99"):
            allowed = max(0.2 * peer[k], 10)
            verdict = "within" if abs(ours[k] - peer[k]) <= allowed else "OUTSIDE"
            print(f"  {condition} {k}: schedlab/cyclictest = {ours[k] / peer[k] if peer[k] else float('nan'):.2f}, "
                  f"difference {ours[k] - peer[k]:+.0f} us ({verdict} max(20%, 10 us) = {allowed:.0f} us)")


if __name__ == "__main__":
    main()
