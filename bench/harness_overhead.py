#!/usr/bin/env python3
"""The harness's own overhead: the yield workload through `schedlab run` against the bare C loop
of the same yields (bench/bare_yield.c), rounds interleaved so that host drift hits both alike; and what
the perf counters cost timed repetitions (issue #22), with counters on (the default: per CPU on the
workload's CPUs) against --no-counters in the same round.

Cases (ns per yield, median over rounds of the per-round ratio schedlab / bare):
  alone          1 thread, 1,000,000 yields, unpinned: an uncontended yield never switches
  switch-heavy   2 threads on one CPU, each yield switches: counters on (the default, --counter-scope system),
                 per cgroup (--counter-scope cgroup), per task (--counter-scope task, what `perf stat` does),
                 and --no-counters; and the peer's own cost: the bare loop under `perf stat` (per task)
                 and `perf stat -a` (system wide) with the same software events
Counters on / --no-counters, same round: alone and switch-heavy (yield), and tbench ops/s (2 s runs).
Then what the default counts (--attribution cgroup: a diagnostic repetition counted on the workload's
cgroup, compared with the timed repetitions' counts: task clock on the CPUs, context switches from the kernel's
per-task accounting of the tree, since the software context-switches event costs every switch even on CPUs): of the
switch-heavy loop and of one yielder pinned alone; and a hog on the loop's CPU, which must be flagged
`contaminated` with its share.

Usage: bench/harness_overhead.py [--rounds N] [--build DIR] [--skip-tbench] [--agreement-only]     (target: every ratio within 3%)
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
# What schedlab's default opens on the CPUs: the switches come from the kernel's accounting (#22).
SOFTWARE_EVENTS_ON_CPUS = "cpu-migrations,task-clock,page-faults"


def perf_stat(binary, args, system_wide=False, events=SOFTWARE_EVENTS):
    """The bare loop under `perf stat` with the software events of schedlab's default set."""
    cmd = ["perf", "stat", "-x,", "-o", "/dev/null", "-e", events] + (["-a"] if system_wide else [])
    return bare_cmd(cmd + [binary] + [str(a) for a in args])


def bare_cmd(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(dict(kv.split("=") for kv in out.split())["ns_per_yield"])


def run_bundle(binary, workload, params, extra=()):
    """One `schedlab run` of `workload` (KEY=VALUE params); returns its bundle."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [binary, "run", "--workload", workload, "--repetitions", "1", "--settle-timeout", "0", "--seed", "1",
               "--out", out, *extra]
        for p in params:
            cmd += ["--param", f"{workload}.{p}"]
        subprocess.run(cmd, check=True, capture_output=True)
        (path,) = glob.glob(os.path.join(out, "*.json"))
        with open(path) as f:
            return json.load(f)


def schedlab(binary, params, extra=()):
    rep = run_bundle(binary, "yield", params, extra)["instances"][0]["repetitions"][0]
    assert rep["status"] == "ok", rep
    return rep["metrics"]["ns_per_yield"]["value"]


def tbench(binary, extra=()):
    rep = run_bundle(binary, "tbench", ["duration_s=2"], extra)["instances"][0]["repetitions"][0]
    assert rep["status"] == "ok", rep
    return rep["metrics"]["ops_s"]["value"]


def counted(binary, params, repetitions=3, hog_cpu=None):
    """Timed repetitions counted on the CPUs and a diagnostic one on the cgroup; with a hog on `hog_cpu`."""
    hog = None
    if hog_cpu is not None:
        hog = subprocess.Popen(["taskset", "-c", str(hog_cpu), "sh", "-c", "while :; do :; done"])
    try:
        with tempfile.TemporaryDirectory() as out:
            cmd = [binary, "run", "--workload", "yield", "--repetitions", str(repetitions), "--settle-timeout", "0",
                   "--seed", "1", "--attribution", "cgroup", "--out", out]
            for p in params:
                cmd += ["--param", "yield." + p]
            subprocess.run(cmd, check=True, capture_output=True)
            (path,) = glob.glob(os.path.join(out, "*.json"))
            with open(path) as f:
                bundle = json.load(f)
    finally:
        if hog:
            hog.kill()
            hog.wait()
    inst = bundle["instances"][0]
    return [with_counter_defaults(bundle, r) for r in inst["repetitions"]], \
        with_counter_defaults(bundle, inst["diagnostics"][0])


def with_counter_defaults(bundle, rep):
    """A repetition with each counter's full reading: a schedlab.result/2 bundle keeps the fields every
    reading of a counter shares once, in `counter_defaults` (README, "The result bundle")."""
    defaults = bundle.get("counter_defaults", {})
    rep = dict(rep)
    rep["counters"] = {ev: {**defaults.get(ev, {}), **c} for ev, c in rep["counters"].items()}
    return rep


def accounted(rep, ev):
    """What the default reads for `ev` from the kernel's accounting, in any repetition: the tree's rusage
    switches, the cgroup's cpu.stat CPU time (ns)."""
    if ev == "perf::CONTEXT-SWITCHES":
        return rep["rusage"]["voluntary_switches"] + rep["rusage"]["involuntary_switches"]
    return rep["isolation"]["cpu_stat"]["usage_usec"] * 1000.0


def agreement(binary, name, params, rounds):
    """Two comparisons with the diagnostic repetition counted by perf on the workload's cgroup, medians over
    rounds: (1) the timed repetitions' counts against it (a different run: the diagnostic one runs slower by
    perf's per-switch cost, which a CPU time shows and a switch count does not); (2) within that same
    repetition, perf's cgroup count against the kernel's accounting the default reads (the method alone)."""
    events = {"perf::CONTEXT-SWITCHES": [], "perf::TASK-CLOCK": []}
    same = {ev: [] for ev in events}
    scopes = {}
    shares = []
    for _ in range(rounds):
        timed, diag = counted(binary, params)
        for ev in events:
            t = statistics.median(r["counters"][ev]["value"] for r in timed)
            d = diag["counters"][ev]["value"]
            assert diag["counters"][ev]["scope"] == "cgroup", diag["counters"][ev]
            scopes[ev] = sorted({r["counters"][ev]["scope"] for r in timed})
            events[ev].append(t / d)
            same[ev].append((accounted(diag, ev), d))
        shares += [r["counter_window"].get("other_share", float("nan")) for r in timed]
    for ev, ratios in events.items():
        print(f"  {name:<34} {ev:<24} timed ({'/'.join(scopes[ev])}) / diagnostic (perf on the cgroup): "
              f"median {statistics.median(ratios):.3f} over {len(ratios)} rounds ({min(ratios):.3f}..{max(ratios):.3f})")
        r = [a / p for a, p in same[ev]]
        diffs = [a - p for a, p in same[ev]]
        print(f"  {'':<34} {'':<24} same repetition, kernel accounting / perf on the cgroup: median "
              f"{statistics.median(r):.4f} ({min(r):.4f}..{max(r):.4f}); difference median {statistics.median(diffs):.0f}")
    print(f"  {name:<34} other tasks' share of the counted CPUs' busy time: median {statistics.median(shares):.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--skip-tbench", action="store_true")
    ap.add_argument("--agreement-only", action="store_true", help="only what the default counts, and the hog")
    a = ap.parse_args()
    sl, by = os.path.join(a.build, "schedlab"), os.path.join(a.build, "bench", "bare_yield")
    cpu = sorted(os.sched_getaffinity(0))[0]
    heavy = ["threads=2", "yields=200000", "placement=same-cpu"]
    cases = {
        "alone (1M yields), counters on": (lambda: schedlab(sl, []), lambda: bare(by, [1000000])),
        "alone (1M yields), --no-counters": (lambda: schedlab(sl, [], ["--no-counters"]), lambda: bare(by, [1000000])),
        "switch-heavy (2 yielders, 1 CPU), counters on": (lambda: schedlab(sl, heavy), lambda: bare(by, [200000, 2, cpu])),
        "switch-heavy (2 yielders, 1 CPU), --counter-scope cgroup": (
            lambda: schedlab(sl, heavy, ["--counter-scope", "cgroup"]), lambda: bare(by, [200000, 2, cpu])),
        "switch-heavy (2 yielders, 1 CPU), --counter-scope task": (
            lambda: schedlab(sl, heavy, ["--counter-scope", "task"]), lambda: bare(by, [200000, 2, cpu])),
        "switch-heavy (2 yielders, 1 CPU), --no-counters": (
            lambda: schedlab(sl, heavy, ["--no-counters"]), lambda: bare(by, [200000, 2, cpu])),
        # The peer's own cost: what counting the same software events costs perf itself.
        "peer: switch-heavy bare loop under perf stat": (
            lambda: perf_stat(by, [200000, 2, cpu]), lambda: bare(by, [200000, 2, cpu])),
        "peer: switch-heavy bare loop under perf stat -a": (
            lambda: perf_stat(by, [200000, 2, cpu], system_wide=True), lambda: bare(by, [200000, 2, cpu])),
        "peer: ... perf stat -a without context-switches": (
            lambda: perf_stat(by, [200000, 2, cpu], system_wide=True, events=SOFTWARE_EVENTS_ON_CPUS),
            lambda: bare(by, [200000, 2, cpu])),
    }
    ratios = {name: [] for name in cases}
    values = {name: ([], []) for name in cases}
    on_off = {"alone (yield)": [], "switch-heavy (yield)": [], "tbench ops/s": []}
    for r in range(0 if a.agreement_only else a.rounds):
        ours = {}
        for name, (run_ours, peer) in cases.items():
            b1, s, b2 = peer(), run_ours(), peer()  # the peer on both sides of ours
            b = (b1 + b2) / 2
            ratios[name].append(s / b)
            values[name][0].append(s)
            values[name][1].append(b)
            ours[name] = s
        # ns per yield: off / on is the slowdown; tbench ops/s: off / on too (higher is better there).
        on_off["alone (yield)"].append(ours["alone (1M yields), counters on"] / ours["alone (1M yields), --no-counters"])
        on_off["switch-heavy (yield)"].append(ours["switch-heavy (2 yielders, 1 CPU), counters on"] /
                                              ours["switch-heavy (2 yielders, 1 CPU), --no-counters"])
        if not a.skip_tbench:
            first_on = r % 2 == 0
            x = tbench(sl) if first_on else None
            off = tbench(sl, ["--no-counters"])
            on = x if first_on else tbench(sl)
            on_off["tbench ops/s"].append(off / on)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    print(f"{'case':<58} {'measured ns':>12} {'bare ns':>10} {'median ratio':>13} {'q1':>7} {'q3':>7}")
    for name in cases if not a.agreement_only else []:
        m = statistics.median(ratios[name])
        q1, _, q3 = statistics.quantiles(ratios[name], n=4)
        print(f"{name:<58} {statistics.median(values[name][0]):>12.1f} {statistics.median(values[name][1]):>10.1f} "
              f"{m:>13.3f} {q1:>7.3f} {q3:>7.3f}")
    print("\nwhat the default counters cost the timed result, per round in one run (slowdown: >1 is slower)")
    worst = 0.0
    for name, rs in on_off.items():
        if len(rs) < 2:
            continue
        m = statistics.median(rs)
        worst = max(worst, m)
        q1, _, q3 = statistics.quantiles(rs, n=4)
        print(f"  {name:<24} counters on vs --no-counters: median {m:.3f} (q1 {q1:.3f}, q3 {q3:.3f}) over {len(rs)} rounds")
    print(f"worst median slowdown from counters on: {(worst - 1) * 100:+.1f}% (target <= 3%)")

    print("\nwhat the default counts: timed repetitions on the CPUs against the diagnostic repetition on the cgroup")
    agreement(sl, "switch-heavy (2 yielders, 1 CPU)", heavy, 5)
    agreement(sl, "one yielder pinned alone", ["threads=1", "yields=1000000", "placement=same-cpu"], 5)
    # Behind a hog each yield waits out the hog's slice: the yields are capped at 2 s per repetition, else
    # 200,000 of them take the workload's 60 s cap four times over.
    timed, _ = counted(sl, heavy + ["duration_s=2"], hog_cpu=cpu)
    for i, rep in enumerate(timed):
        w = rep["counter_window"]
        flags = sorted({str(c.get("contaminated", False)) for c in rep["counters"].values() if c.get("scope") == "system-cpus"})
        print(f"  with a hog on CPU {cpu}: repetition {i + 1}: other_share {w.get('other_share', float('nan')):.3f}, "
              f"window contaminated {w.get('contaminated')}, counters contaminated {'/'.join(flags)}")


if __name__ == "__main__":
    main()
