#!/usr/bin/env python3
"""The harness's own overhead: the yield workload through `schedlab run` against the bare C loop
of the same yields (bench/bare_yield.c), rounds interleaved so that host drift hits both alike.

Cases (ns per yield, median over rounds of the per-round ratio schedlab / bare):
  alone          1 thread, 1,000,000 yields, unpinned: an uncontended yield never switches
  switch-heavy   2 threads on one CPU, each yield switches: counters on (per CPU on the repetition's
                 cgroup, the default), counters per task (--counter-scope task, what `perf stat` does),
                 and --no-counters; and the peer's own cost: the bare loop under `perf stat` (per task)
                 and `perf stat -a` (system wide) with the same software events

Usage: bench/harness_overhead.py [--rounds N] [--build DIR]      (target: every ratio within 3%)
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile


def bare(binary, args):
    return bare_cmd([binary] + [str(a) for a in args])


SOFTWARE_EVENTS = "context-switches,cpu-migrations,task-clock,page-faults"


def perf_stat(binary, args, system_wide=False):
    """The bare loop under `perf stat` with the software events of schedlab's default set."""
    cmd = ["perf", "stat", "-x,", "-o", "/dev/null", "-e", SOFTWARE_EVENTS] + (["-a"] if system_wide else [])
    return bare_cmd(cmd + [binary] + [str(a) for a in args])


def bare_cmd(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(dict(kv.split("=") for kv in out.split())["ns_per_yield"])


def schedlab(binary, params, extra=()):
    with tempfile.TemporaryDirectory() as out:
        cmd = [binary, "run", "--workload", "yield", "--repetitions", "1", "--settle-timeout", "0", "--seed", "1",
               "--out", out, *extra]
        for p in params:
            cmd += ["--param", "yield." + p]
        subprocess.run(cmd, check=True, capture_output=True)
        (path,) = glob.glob(os.path.join(out, "*.json"))
        with open(path) as f:
            rep = json.load(f)["instances"][0]["repetitions"][0]
        assert rep["status"] == "ok", rep
        return rep["metrics"]["ns_per_yield"]["value"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    a = ap.parse_args()
    sl, by = os.path.join(a.build, "schedlab"), os.path.join(a.build, "bench", "bare_yield")
    cpu = sorted(os.sched_getaffinity(0))[0]
    heavy = ["threads=2", "yields=200000", "placement=same-cpu"]
    cases = {
        "alone (1M yields), counters on": (lambda: schedlab(sl, []), lambda: bare(by, [1000000])),
        "switch-heavy (2 yielders, 1 CPU), counters on": (lambda: schedlab(sl, heavy), lambda: bare(by, [200000, 2, cpu])),
        "switch-heavy (2 yielders, 1 CPU), --counter-scope task": (
            lambda: schedlab(sl, heavy, ["--counter-scope", "task"]), lambda: bare(by, [200000, 2, cpu])),
        "switch-heavy (2 yielders, 1 CPU), --no-counters": (
            lambda: schedlab(sl, heavy, ["--no-counters"]), lambda: bare(by, [200000, 2, cpu])),
        # The peer's own cost: what counting the same software events costs perf itself.
        "peer: switch-heavy bare loop under perf stat": (
            lambda: perf_stat(by, [200000, 2, cpu]), lambda: bare(by, [200000, 2, cpu])),
        "peer: switch-heavy bare loop under perf stat -a": (
            lambda: perf_stat(by, [200000, 2, cpu], system_wide=True), lambda: bare(by, [200000, 2, cpu])),
    }
    ratios = {name: [] for name in cases}
    values = {name: ([], []) for name in cases}
    for r in range(a.rounds):
        for name, (ours, peer) in cases.items():
            b1, s, b2 = peer(), ours(), peer()  # the peer on both sides of ours
            b = (b1 + b2) / 2
            ratios[name].append(s / b)
            values[name][0].append(s)
            values[name][1].append(b)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"{'case':<50} {'measured ns':>12} {'bare ns':>10} {'median ratio':>13} {'q1':>7} {'q3':>7}")
    worst = 0.0
    for name in cases:
        m = statistics.median(ratios[name])
        if not name.startswith("peer") and "counter-scope task" not in name:  # the defaults and --no-counters
            worst = max(worst, abs(m - 1))
        q1, _, q3 = statistics.quantiles(ratios[name], n=4)
        print(f"{name:<50} {statistics.median(values[name][0]):>12.1f} {statistics.median(values[name][1]):>10.1f} "
              f"{m:>13.3f} {q1:>7.3f} {q3:>7.3f}")
    print(f"worst median overhead of schedlab: {worst * 100:.1f}% (target 3%); q1/q3: quartiles of the per-round ratios")


if __name__ == "__main__":
    main()
