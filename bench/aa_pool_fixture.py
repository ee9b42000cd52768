#!/usr/bin/env python3
"""Reduces a real A/A experiment (`schedlab run --versus` with the same value on both sides, fixed pairs)
to the pool tests/sequential_test.cpp resamples: per pair its order and the two trials' medians, as the
experiment recorded them, plus where and how they were taken. Also prints the variance at each level
(repetition, trial) from the bundles, Kalibera and Jones's two-level random-effects estimate on log values.

Usage: bench/aa_pool_fixture.py OUT/<id> > tests/fixtures/aa-pool-yield/pairs.json
"""
import glob
import json
import math
import os
import statistics
import sys


def levels(exp_dir):
    """Per side: sigma of log repetition values within a trial, and of trial means beyond it."""
    out = {}
    for side in ("a", "b"):
        trials = []
        for f in sorted(glob.glob(os.path.join(exp_dir, side, "*.json"))):
            b = json.load(open(f))
            reps = [math.log(r["metrics"]["ns_per_yield"]["value"]) for r in b["instances"][0]["repetitions"]
                    if r["status"] == "ok"]
            if len(reps) >= 2:
                trials.append(reps)
        r = statistics.median(len(t) for t in trials)
        within = statistics.mean(statistics.variance(t) for t in trials)
        between_means = statistics.variance([statistics.mean(t) for t in trials])
        # E[var of trial means] = sigma_trial^2 + sigma_rep^2 / r
        trial_var = max(0.0, between_means - within / r)
        out[side] = {"trials": len(trials), "repetitions_per_trial": r,
                     "sigma_repetition": math.sqrt(within), "sigma_trial": math.sqrt(trial_var)}
    return out


def main():
    exp_dir = sys.argv[1]
    record = json.load(open(os.path.join(exp_dir, "experiment.json")))
    first = json.load(open(sorted(glob.glob(os.path.join(exp_dir, "a", "*.json")))[0]))
    pairs = [{"pair": p["pair"], "order": p["order"], "a": p["a"], "b": p["b"], "seconds": round(p["seconds"], 3)}
             for p in record["pairs"]]
    fixture = {
        "what": "A/A pool: both sides the same yield configuration, pairs of seeded random order",
        "command": "schedlab run --workload yield --param yield.yields=200000 --versus yield.yields=200000 "
                   "--trials 500 --seed 19",
        "experiment": record["id"],
        "started_at": record["started_at"],
        "finished_at": record.get("finished_at"),
        "metric": record["metric"],
        "repetitions_per_trial": record["repetitions_per_trial"],
        "host": {k: first["host"].get(k) for k in ("cpu_model", "fingerprint", "virtualization")},
        "kernel": first["kernel"].get("release"),
        "levels": levels(exp_dir),
        "pairs": pairs,
    }
    json.dump(fixture, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
