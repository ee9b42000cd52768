#!/usr/bin/env python3
"""What the 1 kHz kernel profile costs the yield workload, as a median ratio, with perf record's cost on
the bare yield loop measured in the same run as the peer.

    /usr/bin/python3 bench/profile_overhead.py [PAIRS] [--schedlab build/schedlab] [--bare build/bench/bare_yield]

Each pair is one `schedlab run --workload yield --repetitions 1 --profile` invocation: its timed repetition
(no profile) and its diagnostic repetition (profiled, right after it) are seconds apart, so the ratio
profiled/timed is paired and slow drift of the machine cancels. The peer pair is bare_yield alone and
bare_yield under `perf record -e cpu-clock -F 1000` (system-wide, as our cgroup-scoped per-CPU events are
per CPU), alternated the same way. Prints the median ratio and its interquartile range for both.
The acceptance target: our median ratio <= 1.02.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def schedlab_pair(schedlab, out_dir):
    before = set(os.listdir(out_dir))
    subprocess.run([schedlab, "run", "--workload", "yield", "--repetitions", "1", "--profile", "--no-counters",
                    "--settle-timeout", "2", "--out", out_dir], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    (path,) = set(os.listdir(out_dir)) - before
    with open(os.path.join(out_dir, path)) as f:
        inst = json.load(f)["instances"][0]
    timed = inst["repetitions"][0]["metrics"]["ns_per_yield"]["value"]
    diag = inst["diagnostics"][0]
    if diag["profile"].get("status") != "ok":
        sys.exit(f"the diagnostic repetition has no profile: {diag['profile']}")
    return timed, diag["metrics"]["ns_per_yield"]["value"], diag["profile"]["samples"]


def bare_ns(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"ns_per_yield=([\d.]+)", out).group(1))


def summary(name, ratios):
    q = statistics.quantiles(ratios, n=4)
    print(f"{name:<44} median {statistics.median(ratios):.4f}  IQR [{q[0]:.4f}, {q[2]:.4f}]  n={len(ratios)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", type=int, nargs="?", default=15)
    ap.add_argument("--schedlab", default="build/schedlab")
    ap.add_argument("--bare", default="build/bench/bare_yield")
    a = ap.parse_args()
    ours, peer, samples = [], [], []
    with tempfile.TemporaryDirectory() as out_dir, tempfile.TemporaryDirectory() as perf_dir:
        for i in range(a.pairs):
            timed, profiled, n = schedlab_pair(a.schedlab, out_dir)
            ours.append(profiled / timed)
            samples.append(n)
            alone = bare_ns([a.bare, "1000000", "1"])
            perf = bare_ns(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1000", "-a", "-o",
                            os.path.join(perf_dir, "perf.data"), "--", a.bare, "1000000", "1"])
            peer.append(perf / alone)
            print(f"pair {i + 1:2}: schedlab {timed:7.1f} -> {profiled:7.1f} ns ({n} samples); "
                  f"bare {alone:7.1f} -> {perf:7.1f} ns under perf record", flush=True)
    summary("schedlab yield, profiled / timed", ours)
    summary("bare_yield, perf record -F 1000 -a / alone", peer)
    print(f"samples per profiled repetition: median {statistics.median(samples):.0f}")
    print("target: schedlab's median ratio <= 1.02:", "met" if statistics.median(ours) <= 1.02 else "NOT met")


if __name__ == "__main__":
    main()
