#!/usr/bin/env python3
"""Runtime configurations alternated inside one invocation against separate invocations run one after the
other (issue #20): the precision each design reaches with the same number of trials, and what a switch costs.

  1. interleaved: `schedlab run --configuration A --configuration B --trials N` (one invocation, pairs in a
     seeded coin-flip order, each trial under its configuration, applied and restored around it);
  2. blocked: N invocations `schedlab run --configuration A` (one trial each), then N of B — what a user
     without the axis does, one configuration after the other.

A and B default to an A/A (two empty configurations, the machine as found) so that what is measured is
the noise floor; `--b 'name=half,cpu.max=50000/100000'` gives B a known effect. The MDE is the fixed-n one,
(z_{1-a/2} + z_{power}) x sigma / sqrt(n), at alpha 0.05 and 80% power: sigma of the paired ln(b/a) for the
interleaved design, of the two sides' ln(trial medians) combined for the blocked one. Also printed: the
diff's verdict for each design, pairs per minute, and the switch's apply/restore time.

Usage: bench/runtime_interleaving.py [--binary build/schedlab] [--out DIR] [--trials 50] [--yields 200000]
       [--repetitions 2] [--a name=a] [--b name=b]
Run it on a quiet machine: nothing else heavy at the same time.
"""
import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

Z = 1.959964 + 0.841621  # alpha 0.05 two-sided, power 0.8


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p


def trial_median(bundle):
    reps = [r["metrics"]["ns_per_yield"]["value"] for r in bundle["instances"][0]["repetitions"] if r["status"] == "ok"]
    return statistics.median(reps)


def diff_verdict(binary, a, b):
    p = subprocess.run([binary, "diff", "--json", a, b], capture_output=True, text=True)
    j = json.loads(p.stdout[p.stdout.find("{"):])
    c = j["instances"][0]["metrics"][0]["comparisons"][0]
    return {"verdict": c["verdict"], "shift_pct": c["shift_pct"], "ci_pct": c["ci_pct"], "test": c["test"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/schedlab")
    ap.add_argument("--out", default=None)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--yields", type=int, default=200000)
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--a", default="name=a")
    ap.add_argument("--b", default="name=b")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="runtime-interleaving-")
    common = [args.binary, "run", "--workload", "yield", "--param", f"yield.yields={args.yields}",
              "--repetitions", str(args.repetitions), "--no-counters", "--settle-timeout", "0",
              "--cache-dir", os.path.join(out, "cache")]

    t0 = time.monotonic()
    run(common + ["--configuration", args.a, "--configuration", args.b, "--trials", str(args.trials),
                  "--out", os.path.join(out, "interleaved")])
    inter_s = time.monotonic() - t0
    exp_dir = glob.glob(os.path.join(out, "interleaved", "*", "experiment.json"))[0]
    rec = json.load(open(exp_dir))
    d = [p["ln_ratio"] for p in rec["pairs"] if "ln_ratio" in p]
    switch = [ms for p in rec["pairs"] for ms in p.get("switch_ms", [])]
    inter = {"pairs": len(d), "sigma_pair_pct": statistics.stdev(d) * 100,
             "mde_pct": Z * statistics.stdev(d) / math.sqrt(len(d)) * 100,
             "seconds": inter_s, "pairs_per_minute": len(d) / (inter_s / 60),
             "switch_ms_median": statistics.median(switch) if switch else None,
             "diff": diff_verdict(args.binary, os.path.dirname(exp_dir) + "/a", os.path.dirname(exp_dir) + "/b")}

    t0 = time.monotonic()
    for side, spec in (("a", args.a), ("b", args.b)):
        for i in range(args.trials):
            run(common + ["--configuration", spec, "--trials", "1", "--out", os.path.join(out, "blocked", side)])
    blocked_s = time.monotonic() - t0
    logs = {}
    for side in ("a", "b"):
        logs[side] = [math.log(trial_median(json.load(open(f))))
                      for f in sorted(glob.glob(os.path.join(out, "blocked", side, "*.json")))]
    va, vb = statistics.variance(logs["a"]), statistics.variance(logs["b"])
    n = min(len(logs["a"]), len(logs["b"]))
    half = len(logs["a"]) // 2
    blocked = {"trials_per_side": n,
               "sigma_trial_pct": math.sqrt((va + vb) / 2) * 100,
               "mde_pct": Z * math.sqrt(va / n + vb / n) * 100,
               "difference_of_means_pct": (statistics.mean(logs["b"]) - statistics.mean(logs["a"])) * 100,
               "drift_within_a_pct": (statistics.mean(logs["a"][half:]) - statistics.mean(logs["a"][:half])) * 100,
               "seconds": blocked_s,
               "diff": diff_verdict(args.binary, os.path.join(out, "blocked", "a"), os.path.join(out, "blocked", "b"))}
    print(json.dumps({"out": out, "a": args.a, "b": args.b, "yields": args.yields, "repetitions": args.repetitions,
                      "interleaved": inter, "blocked": blocked,
                      "mde_ratio_blocked_over_interleaved": blocked["mde_pct"] / inter["mde_pct"]}, indent=2))


if __name__ == "__main__":
    main()
